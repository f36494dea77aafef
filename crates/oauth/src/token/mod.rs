//! `POST /oauth/token` (RFC 6749 §3.2): the grant types this server allows, and nothing else.

mod client_auth;
mod code;
mod issue;
mod known_clients;
mod refresh;
pub mod refresh_token;
mod response_json;

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use store::TenantId;

pub use client_auth::authenticate_client;
pub use code::REPLAY_REVOCATION_WINDOW;
pub use issue::{ACCESS_TOKEN_LIFETIME, ID_TOKEN_LIFETIME, REFRESH_TOKEN_LIFETIME};
pub use known_clients::KnownClients;

use crate::dpop;
use crate::error::OAuthError;
use crate::params::FormParams;
use crate::state::OAuthState;

pub async fn post_token(
    State(state): State<OAuthState>,
    headers: HeaderMap,
    FormParams(params): FormParams,
) -> Result<Response, OAuthError> {
    let now = state.clock.now();
    let grant_type = params.single("grant_type").ok().flatten();
    let outcome = grant(&state, &headers, &params, grant_type, now).await;
    state
        .metrics()
        .token_request(grant_type, outcome.as_ref().map(|_| ()));
    // RFC 9449 §8.2: a client using DPoP gets a fresh nonce with every answer, refusals
    // included, so its next proof can carry it.
    let nonce = match headers.contains_key(dpop::DPOP) {
        true => Some(state.dpop_nonces.current(&state, now).await?),
        false => None,
    };
    let mut response = match outcome {
        Ok(tokens) => tokens.into_response(),
        Err(error) => error.into_response(),
    };
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    if let Some(value) = nonce.and_then(|n| HeaderValue::from_str(&n).ok()) {
        headers.insert(dpop::DPOP_NONCE, value);
    }
    Ok(response)
}

async fn grant(
    state: &OAuthState,
    headers: &HeaderMap,
    params: &crate::params::Params,
    grant_type: Option<&str>,
    now: store::UnixTime,
) -> Result<issue::TokenResponse, OAuthError> {
    if params.first_repeated().is_some() {
        return Err(OAuthError::InvalidForm("a parameter is repeated")); // §3.2
    }
    // The tenant whose replay cache holds the proof: the one the code or token names.
    let presented = match grant_type {
        Some("authorization_code") => params.single("code"),
        Some("refresh_token") => params.single("refresh_token"),
        _ => return Err(OAuthError::UnsupportedGrantType),
    };
    let tenant_id = presented
        .ok()
        .flatten()
        .and_then(tenant_token)
        .map(|(tenant, _)| tenant);
    let tenant = tenant_id.as_ref().map(|id| state.store.tenant(id));
    let proof = dpop::token_request_proof(state, headers, tenant, now).await?;
    match grant_type {
        Some("authorization_code") => {
            code::exchange_code(state, headers, params, proof.as_ref(), now).await
        }
        Some("refresh_token") => {
            refresh::refresh(state, headers, params, proof.as_ref(), now).await
        }
        // Implicit, password and client_credentials are not offered (spec §1).
        _ => Err(OAuthError::UnsupportedGrantType),
    }
}

/// Splits `<tenant>.<random>` (spec §1): the tenant routes the lookup, the random part is
/// what is hashed. The random part is 43 base64url characters (codes, and refresh tokens
/// issued before their selector) or 64 (refresh tokens, `refresh_token.rs`). Anything else
/// is not one of our codes or tokens.
pub fn tenant_token(value: &str) -> Option<(TenantId, &str)> {
    let (tenant, secret) = value.split_once('.')?;
    let well_formed = matches!(secret.len(), 43 | refresh_token::RANDOM_PART_LENGTH)
        && secret
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    match well_formed {
        true => Some((TenantId::parse(tenant).ok()?, secret)),
        false => None,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn tenant_tokens_split_at_the_dot_and_need_a_43_or_64_character_secret() {
        for length in [43, 64] {
            let secret = "A".repeat(length);
            let token = format!("acme.{secret}");
            let (tenant, random) = super::tenant_token(&token).unwrap();
            assert_eq!((tenant.as_str(), random), ("acme", secret.as_str()));
        }
        let secret = "A".repeat(43);
        assert!(super::tenant_token(&format!("acme.{}", "A".repeat(44))).is_none());
        assert!(super::tenant_token(&format!("acme.{}", "A".repeat(65))).is_none());
        assert!(super::tenant_token(&format!("Acme.{secret}")).is_none());
        assert!(super::tenant_token("acme.short").is_none());
        assert!(super::tenant_token(&secret).is_none());
        assert!(super::tenant_token(&format!("a.b.{secret}")).is_none());
    }
}
