//! The bearer-protected field-service GraphQL API. This crate holds the API listener's
//! router; the schema, resolvers and bearer validation arrive with the API issue.

use axum::Router;
use store::Store;

/// What the API listener's handlers share.
#[derive(Clone, Debug)]
pub struct ApiState {
    pub store: Store,
    /// `{auth_url}`: the issuer whose JWKS the API trusts.
    pub issuer: String,
    /// `{api_url}`: the audience access tokens must carry.
    pub audience: String,
}

/// The routes of the API listener. Health, logging and request ids are added by the binary.
pub fn router(state: ApiState) -> Router {
    Router::new().with_state(state)
}
