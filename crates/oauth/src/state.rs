//! The authorization server's state, built once in `fieldauth serve` and shared by handlers.

use std::sync::Arc;

use axum::body::Bytes;
use jose::Clock;
use store::Store;

use crate::discovery;
use crate::issuer::Issuer;
use crate::keys::SigningKeys;
use crate::random::RandomSource;

/// What the deployment decides: the issuer and the API audience.
#[derive(Clone, Debug)]
pub struct OAuthConfig {
    pub issuer: Issuer,
    /// `{api_url}`: the `aud` of access tokens.
    pub api_audience: String,
}

#[derive(Clone, Debug)]
pub struct OAuthState {
    pub config: Arc<OAuthConfig>,
    pub store: Store,
    pub signing_keys: SigningKeys,
    pub clock: Arc<dyn Clock>,
    pub random: Arc<dyn RandomSource>,
    discovery_json: Bytes,
}

impl OAuthState {
    pub fn new(
        config: OAuthConfig,
        store: Store,
        signing_keys: SigningKeys,
        clock: Arc<dyn Clock>,
        random: Arc<dyn RandomSource>,
    ) -> OAuthState {
        let discovery_json = Bytes::from(discovery::metadata(&config.issuer).to_string());
        OAuthState {
            config: Arc::new(config),
            store,
            signing_keys,
            clock,
            random,
            discovery_json,
        }
    }

    pub(crate) fn discovery_json(&self) -> Bytes {
        self.discovery_json.clone()
    }
}
