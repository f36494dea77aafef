//! What the API listener's handlers share, built once in `fieldauth serve`.

use std::sync::Arc;

use async_graphql::ValidationMode;
use jose::Clock;
use store::Store;

use crate::cache::ResponseCache;
use crate::error::ApiError;
use crate::keys::RemoteKeys;
use crate::known_documents::KnownDocuments;
use crate::schema::{build_schema, ApiSchema};
use crate::verified::VerifiedTokens;

#[derive(Clone, Debug)]
pub struct ApiConfig {
    /// `{auth_url}`: the issuer whose tokens are accepted, exactly as in `iss`.
    pub issuer: String,
    /// `{api_url}`: the audience tokens must carry.
    pub audience: String,
    /// The bytes of answers the response cache may keep; 0 turns it off.
    pub response_cache_bytes: usize,
}

#[derive(Clone)]
pub struct ApiState {
    pub config: Arc<ApiConfig>,
    pub store: Store,
    pub keys: RemoteKeys,
    pub clock: Arc<dyn Clock>,
    pub schema: ApiSchema,
    /// The same schema checking only limits, for requests `known` passed in full before.
    pub checked_schema: ApiSchema,
    pub known: Arc<KnownDocuments>,
    pub cache: ResponseCache,
    /// Tokens whose signature this node checked already.
    pub verified: VerifiedTokens,
}

impl std::fmt::Debug for ApiState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiState")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl ApiState {
    /// The keys come from `{issuer}/oauth/jwks` over HTTP, as for any resource server.
    pub fn new(
        config: ApiConfig,
        store: Store,
        clock: Arc<dyn Clock>,
    ) -> Result<ApiState, ApiError> {
        let jwks_url = format!("{}/oauth/jwks", config.issuer.trim_end_matches('/'));
        let keys = RemoteKeys::new(jwks_url)?;
        let schema = build_schema(store.clone(), clock.clone(), ValidationMode::Strict);
        let checked_schema = build_schema(store.clone(), clock.clone(), ValidationMode::Fast);
        let cache = ResponseCache::new(config.response_cache_bytes);
        Ok(ApiState {
            config: Arc::new(config),
            store,
            keys,
            clock,
            schema,
            checked_schema,
            known: Arc::default(),
            cache,
            verified: VerifiedTokens::default(),
        })
    }
}
