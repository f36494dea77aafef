//! `POST /oauth/revoke` (RFC 7009): a client revokes one of its refresh tokens, which ends
//! the whole grant. Unknown tokens and other clients' tokens answer 200 and change nothing
//! (§2.2); access tokens are not revocable here (they expire within the hour), which is
//! `unsupported_token_type` (§2.2.1).

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::error::OAuthError;
use crate::events::{Event, RevokeReason};
use crate::params::FormParams;
use crate::secret::hash_secret;
use crate::state::OAuthState;
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
    // A JWT (three dot-separated parts) is an access token. `token_type_hint` is only a hint
    // (§2.1): the token's shape decides.
    if token.split('.').count() == 3 {
        return Err(OAuthError::UnsupportedTokenType);
    }
    // Not shaped like one of our tokens: there is nothing to revoke and no tenant to
    // authenticate the client in.
    let Some((tenant_id, secret)) = tenant_token(token) else {
        return Ok(revoked());
    };
    let tenant = state.store.tenant(&tenant_id);
    let client = authenticate_client(&tenant, &headers, &params).await?;
    if let Some(grant) = tenant
        .find_refresh_token(&hash_secret(secret))
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

fn revoked() -> Response {
    let mut response = StatusCode::OK.into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
