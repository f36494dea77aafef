//! `POST /oauth/revoke` (RFC 7009): a client revokes one of its refresh tokens, which ends
//! the whole grant. The client is authenticated first, whatever the token (§2.1). Then
//! unknown tokens and other clients' tokens answer 200 and change nothing (§2.2); access
//! tokens are not revocable here (they expire within the hour), which is
//! `unsupported_token_type` (§2.2.1).

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use store::TenantId;

use crate::error::OAuthError;
use crate::events::{Event, RevokeReason};
use crate::params::FormParams;
use crate::state::OAuthState;
use crate::token::refresh_token::RefreshTokenKey;
use crate::token::{authenticate_client, tenant_token};

pub async fn revoke(
    State(state): State<OAuthState>,
    headers: HeaderMap,
    FormParams(params): FormParams,
) -> Result<Response, OAuthError> {
    let now = state.clock.now();
    if params.first_repeated().is_some() {
        return Err(OAuthError::InvalidForm("a parameter is repeated"));
    }
    let token = params
        .single("token")
        .ok()
        .flatten()
        .ok_or(OAuthError::InvalidForm("token is missing"))?;
    // §2.1: the client is authenticated before anything is said about the token. A client
    // exists only inside its tenant, which the token names; a token that names none leaves
    // nowhere to authenticate the client, so nothing more is said.
    let tenant_id = token_tenant(token).ok_or(OAuthError::InvalidClient(
        "the token names no tenant to authenticate the client in",
    ))?;
    let tenant = state.store.tenant(&tenant_id);
    let client = authenticate_client(&tenant, &headers, &params, now).await?;
    // A JWT (three dot-separated parts) is an access token. `token_type_hint` is only a hint
    // (§2.1): the token's shape decides.
    if is_jwt(token) {
        return Err(OAuthError::UnsupportedTokenType);
    }
    // Not shaped like one of our refresh tokens: nothing to revoke (§2.2).
    let Some((_, secret)) = tenant_token(token) else {
        return Ok(revoked());
    };
    if let Some(grant) = tenant
        .find_refresh_token(RefreshTokenKey::of(secret).as_bytes())
        .await?
        .map(|t| t.grant)
    {
        if grant.client_id == client.client_id
            && tenant
                .revoke_grant(&grant.grant_id, "revoked by the client", now)
                .await?
        {
            tracing::info!(tenant = %tenant_id, client_id = %client.client_id, "grant revoked by its client");
            let event = Event::GrantRevoked {
                client_id: &client.client_id,
                grant_id: &grant.grant_id,
                reason: RevokeReason::client_revocation,
            };
            state.record(&tenant_id, event, now).await;
        }
    }
    Ok(revoked())
}

fn is_jwt(token: &str) -> bool {
    token.split('.').count() == 3
}

/// The tenant a presented token names, read only to know where its client is registered:
/// the prefix of `<tenant>.<random>` (spec §1), or an access token's `tenant` claim. The
/// claim is not verified here; the client's own authentication is, and an access token is
/// refused whoever presents it.
fn token_tenant(token: &str) -> Option<TenantId> {
    if !is_jwt(token) {
        return TenantId::parse(token.split_once('.')?.0).ok();
    }
    let payload = token.split('.').nth(1)?;
    let json = URL_SAFE_NO_PAD.decode(payload).ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&json).ok()?;
    TenantId::parse(claims.get("tenant")?.as_str()?).ok()
}

fn revoked() -> Response {
    let mut response = StatusCode::OK.into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
