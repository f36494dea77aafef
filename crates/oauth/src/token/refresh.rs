//! `grant_type=refresh_token` (RFC 6749 §6, spec §5.7): every use consumes the token and
//! issues the next of its grant; a consumed token presented again revokes the grant. A grant
//! ends `--grant-max-days` after its code exchange, and as soon as its user is no longer a
//! member of its organization: then the refresh is `invalid_grant` and the user signs in
//! again. A client with a retry window (issue 27) may present a token it consumed again
//! within it while the successor is unused, and is answered as for a fresh refresh. The
//! client is authenticated from the copy this node kept when it has one, and the rotation's
//! one statement checks that copy against the database.

use axum::http::HeaderMap;
use jose::{Proof, UnixTime};
use store::{Client, NewRefreshToken, RefreshRotation, RefreshingClient, TenantStore};

use super::client_auth::{check_client, presented};
use super::code::required;
use super::issue::{self, Issue, TokenResponse, REFRESH_TOKEN_LIFETIME};
use super::refresh_token::{self, RefreshTokenKey};
use super::tenant_token;
use crate::dpop;
use crate::error::OAuthError;
use crate::events::{Event, RevokeReason};
use crate::params::Params;
use crate::scope::Scope;
use crate::state::OAuthState;

pub async fn refresh(
    state: &OAuthState,
    headers: &HeaderMap,
    params: &Params,
    dpop: Option<&Proof>,
    now: UnixTime,
) -> Result<TokenResponse, OAuthError> {
    let token = required(params, "refresh_token")?;
    let (tenant_id, secret) =
        tenant_token(token).ok_or(OAuthError::InvalidGrant("the refresh token is not valid"))?;
    let tenant = state.store.tenant(&tenant_id);
    let presented = presented(headers, params)?;
    let request = Request {
        state,
        tenant: &tenant,
        params,
        dpop,
        secret,
        now,
    };
    // The copy of the client this node kept, if it authenticates the request: the rotation
    // checks it against the database. A copy refuses nothing by itself: whatever it would
    // refuse, and a client found changed, is decided on the database's copy.
    let known = &state.known_clients;
    if let Some(kept) = known.get(&tenant_id, &presented.client_id) {
        if let Ok(client) = check_client(&tenant, &presented, Some(kept), now) {
            if let Refreshed::Issued(response) = refresh_as(&request, &client, Source::Kept).await?
            {
                return Ok(response);
            }
        }
        known.forget(&tenant_id, &presented.client_id);
    }
    let client = tenant.find_client(&presented.client_id).await?;
    let client = check_client(&tenant, &presented, client, now)?;
    known.keep(&tenant_id, &client);
    match refresh_as(&request, &client, Source::Read).await? {
        Refreshed::Issued(response) => Ok(response),
        // Changed between the read and the rotation: what authenticated it is gone.
        Refreshed::Recheck => {
            known.forget(&tenant_id, &presented.client_id);
            Err(OAuthError::InvalidClient(
                "the client changed during the request: try again",
            ))
        }
    }
}

/// A refresh request, before its client is authenticated.
struct Request<'a> {
    state: &'a OAuthState,
    tenant: &'a TenantStore<'a>,
    params: &'a Params,
    dpop: Option<&'a Proof>,
    /// The refresh token's secret, after its tenant prefix.
    secret: &'a str,
    now: UnixTime,
}

enum Refreshed {
    Issued(TokenResponse),
    /// Nothing was spent, and the client must be read from the database: it is no longer
    /// in the state it was authenticated in, or a kept copy would have refused.
    Recheck,
}

/// Where the client's copy comes from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Source {
    /// Kept by this node ([`crate::token::KnownClients`]): perhaps no longer the client.
    Kept,
    /// Read from the database for this request.
    Read,
}

/// The refresh for `client`, authenticated from a copy in the state its `revision` names.
async fn refresh_as(
    request: &Request<'_>,
    client: &Client,
    source: Source,
) -> Result<Refreshed, OAuthError> {
    let Request {
        state,
        tenant,
        params,
        dpop,
        secret,
        now,
    } = *request;
    let tenant_id = tenant.id();
    // A refusal that rests on the client's settings, before anything is spent.
    let refuse = |refusal: OAuthError| match source {
        Source::Kept => Ok(Refreshed::Recheck),
        Source::Read => Err(refusal),
    };
    if let Err(refusal) = dpop::require_proof(client, dpop) {
        return refuse(refusal);
    }
    let token_key = RefreshTokenKey::of(secret);
    let token_hash = token_key.as_bytes();
    let requested = params
        .single("scope")
        .map_err(|_| OAuthError::InvalidForm("a parameter is repeated"))?;

    // §6: a requested scope may only narrow. Checked before the token is spent, and only
    // for a live token of this client, or one it consumed within its retry window (a
    // retry must not be spent on a refusal): anything else goes on to the rotation, which
    // detects reuse and refuses the rest. Only requests that ask for a scope pay for the
    // read.
    if let Some(requested) = requested {
        if let Some(found) = tenant.find_refresh_token(token_hash).await? {
            let window = client.refresh_retry_seconds;
            let retryable = found
                .consumed_at
                .is_some_and(|at| window > 0 && at + window >= now);
            if (found.is_live(now) || retryable) && found.grant.client_id == client.client_id {
                if let Err(refusal) = narrowed_scope(requested, &found.grant.scope) {
                    return refuse(refusal);
                }
            }
        }
    }

    let next_secret = refresh_token::issue_random_part(state)?;
    let next_key = RefreshTokenKey::of(&next_secret);
    let next = NewRefreshToken {
        token_hash: next_key.as_bytes(),
        expires_at: now + REFRESH_TOKEN_LIFETIME,
    };
    // On SQLite the rotation may not be committed yet (its group's commit, made once the
    // first of its responses is signed): the tokens are signed first, then sent only once
    // it is (`durable`).
    let (rotation, durable) = tenant
        .rotate_refresh_token_pending(
            token_hash,
            RefreshingClient {
                client_id: &client.client_id,
                retry_seconds: client.refresh_retry_seconds,
                dpop_jkt: dpop.map(|proof| proof.jkt.as_str()),
                known: Some(client.state()),
            },
            next,
            state.config.grant_max_age,
            now,
        )
        .await?;
    let (grant, user) = match rotation {
        RefreshRotation::Rotated(grant, user) => (grant, user),
        RefreshRotation::Retried(grant, user) => {
            tracing::info!(tenant = %tenant_id, client_id = %client.client_id, "refresh token retried within the client's window: its unused successor is ended");
            let event = Event::RefreshRetried {
                client_id: &client.client_id,
                grant_id: &grant.grant_id,
                user_id: &grant.user_id,
            };
            state.record(tenant_id, event, now).await;
            (grant, user)
        }
        RefreshRotation::Reused { grant_id } => {
            tracing::warn!(tenant = %tenant_id, client_id = %client.client_id, "refresh token reused: its grant is revoked");
            let event = Event::GrantRevoked {
                client_id: &client.client_id,
                grant_id: &grant_id,
                reason: RevokeReason::refresh_reuse,
            };
            state.record(tenant_id, event, now).await;
            return Err(OAuthError::InvalidGrant(
                "the refresh token was already used; its grant is revoked",
            ));
        }
        // Also a grant past its maximum age or whose user left the organization (RFC 6749
        // §5.2: the grant is expired or revoked).
        RefreshRotation::Refused => {
            return Err(OAuthError::InvalidGrant("the refresh token is not valid"))
        }
        RefreshRotation::WrongKey => {
            return Err(OAuthError::InvalidDpopProof(
                "the refresh token is bound to a DPoP key: send a proof signed by that key",
            ))
        }
        RefreshRotation::ClientChanged => return Ok(Refreshed::Recheck),
    };
    let scope = match requested {
        Some(requested) => narrowed_scope(requested, &grant.scope)?,
        None => grant.scope.clone(),
    };
    let issue = Issue {
        tenant: tenant_id.as_str(),
        grant: &grant,
        scope: &scope,
        user: &user,
        nonce: None,
        refresh_token: Some(format!("{tenant_id}.{next_secret}")),
        dpop_jkt: dpop.map(|proof| proof.jkt.as_str()),
    };
    let issued = issue::mint(state, issue, now).await?;
    durable.wait().await?;
    Ok(Refreshed::Issued(issued))
}

/// The requested scopes, each of which the grant holds, in canonical order.
fn narrowed_scope(requested: &str, granted: &str) -> Result<String, OAuthError> {
    let mut scopes = Vec::new();
    for name in requested.split(' ').filter(|s| !s.is_empty()) {
        if !granted.split(' ').any(|g| g == name) {
            return Err(OAuthError::InvalidScope(
                "a requested scope was not granted",
            ));
        }
        scopes.extend(Scope::parse(name).ok());
    }
    scopes.sort_unstable();
    scopes.dedup();
    if scopes.is_empty() {
        return Err(OAuthError::InvalidScope("scope is empty"));
    }
    Ok(scopes
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_may_only_narrow() {
        assert_eq!(
            narrowed_scope("jobs openid", "openid offline_access jobs").unwrap(),
            "openid jobs"
        );
        assert!(matches!(
            narrowed_scope("invoices", "openid jobs"),
            Err(OAuthError::InvalidScope(_))
        ));
        assert!(matches!(
            narrowed_scope(" ", "openid"),
            Err(OAuthError::InvalidScope(_))
        ));
    }
}
