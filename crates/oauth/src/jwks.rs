//! `GET /oauth/jwks`: the public keys of every active signing key (RFC 7517 §5).

use axum::extract::State;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};

use crate::state::OAuthState;

/// Relying parties may cache the set this long; a verifier that meets an unknown `kid`
/// fetches it again, and nodes pick up a rotation within their reload interval.
const CACHE_CONTROL: &str = "public, max-age=60";

pub async fn serve_jwks(State(state): State<OAuthState>) -> Response {
    let keys = state.signing_keys.current();
    let mut response = keys.jwks_json.clone().into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(CACHE_CONTROL),
    );
    response
}
