//! `grant_type=authorization_code` (RFC 6749 §4.1.3, RFC 7636 §4.6): one redemption per code;
//! a replay fails and, presented by the code's own client soon enough, revokes what the first
//! redemption issued (§4.1.2, §10.5).

use axum::http::HeaderMap;
use jose::{Proof, UnixTime};
use store::{
    AuthorizationCode, CheckedExchange, Client, ClientType, CodeExchange, Grant, Issuance,
    NewGrant, NewRefreshToken, PresentedCode, TenantId, TenantStore, User,
};
use subtle::ConstantTimeEq;

use super::client_auth::{check_client, presented};
use super::issue::{self, Issue, TokenResponse, REFRESH_TOKEN_LIFETIME};
use super::refresh_token::{self, RefreshTokenKey};
use super::tenant_token;
use crate::dpop;
use crate::error::OAuthError;
use crate::events::{Event, RevokeReason};
use crate::params::Params;
use crate::pkce;
use crate::scope::Scope;
use crate::secret::hash_secret;
use crate::state::OAuthState;

pub async fn exchange_code(
    state: &OAuthState,
    headers: &HeaderMap,
    params: &Params,
    dpop: Option<&Proof>,
    now: UnixTime,
) -> Result<TokenResponse, OAuthError> {
    let code = required(params, "code")?;
    let redirect_uri = required(params, "redirect_uri")?;
    let verifier = required(params, "code_verifier")?;
    let (tenant_id, secret) =
        tenant_token(code).ok_or(OAuthError::InvalidGrant("the code is not valid"))?;
    let tenant = state.store.tenant(&tenant_id);
    let presented = presented(headers, params)?;
    let request = Request {
        state,
        tenant: &tenant,
        code_hash: hash_secret(secret),
        // Ordered by time: consecutive grants share their indexes' last pages.
        grant_id: state
            .random
            .uuid_v7(u64::try_from(state.clock.now_millis()).unwrap_or(0))?,
        redirect_uri,
        verifier,
        dpop,
        now,
    };
    // The copy of the client this node kept, if it authenticates the request: then one trip
    // redeems a code that passes every check, the client's state included. Anything else,
    // and every refusal, is decided below on what the database holds.
    let known = &state.known_clients;
    if let Some(kept) = known.get(&tenant_id, &presented.client_id) {
        if let Ok(client) = check_client(&tenant, &presented, Some(kept), now) {
            if let Some(response) = exchange_checked(&request, &client).await? {
                return Ok(response);
            }
        }
    }
    // The client and the code in one read; nothing about the code counts before the client
    // is authenticated.
    let (client, exchange) = match tenant
        .present_code(
            &presented.client_id,
            &request.code_hash,
            &request.grant_id,
            now,
        )
        .await?
    {
        Some((client, exchange)) => (Some(client), exchange),
        None => (None, CodeExchange::Unknown),
    };
    let client = match check_client(&tenant, &presented, client, now) {
        Ok(client) => client,
        Err(refusal) => {
            known.forget(&tenant_id, &presented.client_id);
            return Err(refusal);
        }
    };
    known.keep(&tenant_id, &client);
    // Before the code is looked at: the client may try again with a proof.
    dpop::require_proof(&client, dpop)?;
    let redeemed = match exchange {
        CodeExchange::Redeemed(redeemed) => *redeemed,
        CodeExchange::Replayed {
            grant_id,
            client_id: code_client_id,
            expires_at,
        } => {
            if let Err(refusal) =
                replay_revokes(&code_client_id, expires_at, &client.client_id, now)
            {
                tracing::warn!(tenant = %tenant_id, client_id = %client.client_id, "a used authorization code was presented again: nothing is revoked");
                return Err(refusal);
            }
            revoke_for_replay(state, &tenant_id, &code_client_id, grant_id, now).await?;
            return Err(OAuthError::InvalidGrant("the code was already used"));
        }
        CodeExchange::Unknown => return Err(OAuthError::InvalidGrant("the code is not valid")),
    };
    // A failed check still spends the code (committed alone), so it cannot be tried again.
    if let Err(refusal) = check_code(
        redeemed.code(),
        &client.client_id,
        redirect_uri,
        verifier,
        now,
    ) {
        redeemed.spend().await?;
        return Err(refusal);
    }
    let code = redeemed.code().clone();
    let offline = code
        .scope
        .split(' ')
        .any(|s| s == Scope::OfflineAccess.as_str());
    let refresh_token = match offline {
        true => Some(refresh_token::issue_random_part(state)?),
        false => None,
    };
    let new_grant = NewGrant {
        grant_id: &request.grant_id,
        client_id: &code.client_id,
        user_id: &code.user_id,
        organization_guid: &code.organization_guid,
        scope: &code.scope,
        auth_time: code.auth_time,
        dpop_jkt: grant_dpop_key(&client, dpop),
    };
    let refresh_key = refresh_token.as_deref().map(RefreshTokenKey::of);
    let first = refresh_key.as_ref().map(|key| NewRefreshToken {
        token_hash: key.as_bytes(),
        expires_at: first_refresh_expiry(state, now),
    });
    // One commit: the code is spent only together with the grant that it issues.
    let user = match redeemed.issue(&new_grant, first, now).await? {
        Issuance::Issued(user) => *user,
        Issuance::UserGone => return Err(user_gone()),
        // Another presentation redeemed the code after this one read it: this one is the
        // replay, as it would have been had it come a moment later. It passed the checks, so
        // it comes from the code's client within the code's lifetime.
        Issuance::Replayed { grant_id } => {
            revoke_for_replay(state, &tenant_id, &code.client_id, grant_id, now).await?;
            return Err(OAuthError::InvalidGrant("the code was already used"));
        }
    };
    issue_tokens(&request, code, &user, refresh_token).await
}

/// A code exchange, before its client is authenticated.
struct Request<'a> {
    state: &'a OAuthState,
    tenant: &'a TenantStore<'a>,
    code_hash: [u8; 32],
    /// The id the grant gets.
    grant_id: String,
    redirect_uri: &'a str,
    verifier: &'a str,
    dpop: Option<&'a Proof>,
    now: UnixTime,
}

/// The exchange for a client authenticated from a kept copy: one trip that redeems the code
/// only if it passes every check and the client is still as the copy says. `None`, having
/// spent nothing, for anything else: the caller decides it on the database's copy.
async fn exchange_checked(
    request: &Request<'_>,
    client: &Client,
) -> Result<Option<TokenResponse>, OAuthError> {
    let Request {
        state,
        tenant,
        dpop,
        now,
        ..
    } = *request;
    if dpop::require_proof(client, dpop).is_err() || !well_formed_verifier(request.verifier) {
        return Ok(None);
    }
    let code_challenge = pkce::s256_challenge(request.verifier);
    // Stored only if the code's scope holds offline_access, which the statement decides.
    let refresh_token = refresh_token::issue_random_part(state)?;
    let refresh_key = RefreshTokenKey::of(&refresh_token);
    let presented = PresentedCode {
        code_hash: &request.code_hash,
        client_id: &client.client_id,
        client_state: client.state(),
        redirect_uri: request.redirect_uri,
        code_challenge: &code_challenge,
        grant_id: &request.grant_id,
        dpop_jkt: grant_dpop_key(client, dpop),
        refresh_token: NewRefreshToken {
            token_hash: refresh_key.as_bytes(),
            expires_at: first_refresh_expiry(state, now),
        },
    };
    // On SQLite the grant may not be committed yet (its group's commit, made once the first
    // of its responses is signed): the tokens are signed first, then sent only once it is.
    let (exchange, durable) = tenant
        .exchange_checked_code_pending(&presented, now)
        .await?;
    match exchange {
        CheckedExchange::Issued {
            code,
            user,
            refresh_token_stored,
        } => {
            let refresh_token = refresh_token_stored.then_some(refresh_token);
            let issued = issue_tokens(request, *code, &user, refresh_token).await?;
            durable.wait().await?;
            Ok(Some(issued))
        }
        CheckedExchange::UserGone => Err(user_gone()),
        CheckedExchange::NotRedeemed => Ok(None),
    }
}

/// The tokens of a grant just stored for a redeemed code, whose values the grant takes over
/// (not copied: this runs for every exchange).
async fn issue_tokens(
    request: &Request<'_>,
    code: AuthorizationCode,
    user: &User,
    refresh_token: Option<String>,
) -> Result<TokenResponse, OAuthError> {
    let tenant_id = request.tenant.id();
    let AuthorizationCode {
        client_id,
        user_id,
        organization_guid,
        scope,
        nonce,
        auth_time,
        sid,
        amr,
        ..
    } = code;
    let grant = Grant {
        grant_id: request.grant_id.clone(),
        client_id,
        user_id,
        organization_guid,
        scope,
        auth_time,
        created_at: request.now,
        revoked_at: None,
        sid,
        amr,
    };
    let issue = Issue {
        tenant: tenant_id.as_str(),
        grant: &grant,
        scope: &grant.scope,
        user,
        nonce: nonce.as_deref(),
        refresh_token: refresh_token.map(|secret| format!("{tenant_id}.{secret}")),
        dpop_jkt: request.dpop.map(|proof| proof.jkt.as_str()),
    };
    tracing::info!(tenant = %tenant_id, client_id = %grant.client_id, sub = %user.user_id, "authorization code exchanged");
    issue::mint(request.state, issue, request.now).await
}

/// RFC 9449 §5: a public client's refresh tokens are bound to its DPoP key (a confidential
/// client's are already bound to its credentials).
fn grant_dpop_key<'p>(client: &Client, dpop: Option<&'p Proof>) -> Option<&'p str> {
    dpop.filter(|_| client.client_type == ClientType::Public)
        .map(|proof| proof.jkt.as_str())
}

/// The grant's refresh tokens never outlive it (`--grant-max-days`).
fn first_refresh_expiry(state: &OAuthState, now: UnixTime) -> UnixTime {
    now + REFRESH_TOKEN_LIFETIME.min(state.config.grant_max_age)
}

fn user_gone() -> OAuthError {
    OAuthError::InvalidGrant(
        "the user no longer exists, is disabled or no longer belongs to the organization",
    )
}

/// How long after its expiry a used code presented again still revokes what it issued.
/// Codes live 60 s, so ten minutes covers any client's retry of a code it was once given;
/// later, a presentation is only an old code, refused without consequence.
pub const REPLAY_REVOCATION_WINDOW: UnixTime = 600;

/// RFC 6749 §4.1.2: a code used twice is refused, and the server SHOULD revoke the tokens it
/// issued. Only the code's own client, authenticated, may cause that, and only until
/// [`REPLAY_REVOCATION_WINDOW`] after the code's expiry: any public client of the tenant
/// authenticates with its id alone, and must not be able to end another client's grant with
/// a code it got hold of, and a used code, which stays stored, must not keep that power for
/// ever. Otherwise the refusal is the one an unused code would get.
fn replay_revokes(
    code_client_id: &str,
    expires_at: UnixTime,
    presenter: &str,
    now: UnixTime,
) -> Result<(), OAuthError> {
    if code_client_id != presenter {
        return Err(OAuthError::InvalidGrant(
            "the code was issued to another client",
        ));
    }
    if now >= expires_at.saturating_add(REPLAY_REVOCATION_WINDOW) {
        return Err(OAuthError::InvalidGrant("the code has expired"));
    }
    Ok(())
}

/// RFC 6749 §10.5: a replayed code revokes what its first redemption issued, if anything.
/// The audit names the code's client, whose grant it was.
async fn revoke_for_replay(
    state: &OAuthState,
    tenant_id: &TenantId,
    client_id: &str,
    grant_id: Option<String>,
    now: UnixTime,
) -> Result<(), OAuthError> {
    let Some(grant_id) = grant_id.as_deref() else {
        return Ok(());
    };
    let revoked = state
        .store
        .tenant(tenant_id)
        .revoke_grant(grant_id, "authorization code replayed", now)
        .await?;
    if revoked {
        tracing::warn!(tenant = %tenant_id, client_id, "authorization code replayed: its grant is revoked");
        let event = Event::GrantRevoked {
            client_id,
            grant_id,
            reason: RevokeReason::code_replay,
        };
        state.record(tenant_id, event, now).await;
    }
    Ok(())
}

/// RFC 6749 §4.1.3 and RFC 7636 §4.6: the code is this client's, for this redirect URI,
/// unexpired, and the verifier matches its challenge.
fn check_code(
    code: &AuthorizationCode,
    client_id: &str,
    redirect_uri: &str,
    verifier: &str,
    now: UnixTime,
) -> Result<(), OAuthError> {
    if code.client_id != client_id {
        return Err(OAuthError::InvalidGrant(
            "the code was issued to another client",
        ));
    }
    if code.redirect_uri != redirect_uri {
        return Err(OAuthError::InvalidGrant(
            "redirect_uri differs from the authorization request",
        ));
    }
    if code.expires_at <= now {
        return Err(OAuthError::InvalidGrant("the code has expired"));
    }
    check_verifier(verifier, &code.code_challenge)
}

/// RFC 7636 §4.1 and §4.6: 43 to 128 unreserved characters whose S256 is the challenge.
fn check_verifier(verifier: &str, challenge: &str) -> Result<(), OAuthError> {
    if !well_formed_verifier(verifier) {
        return Err(OAuthError::InvalidGrant(
            "code_verifier must be 43 to 128 unreserved characters",
        ));
    }
    let computed = pkce::s256_challenge(verifier);
    match bool::from(computed.as_bytes().ct_eq(challenge.as_bytes())) {
        true => Ok(()),
        false => Err(OAuthError::InvalidGrant(
            "code_verifier does not match the code_challenge",
        )),
    }
}

/// RFC 7636 §4.1: 43 to 128 unreserved characters.
fn well_formed_verifier(verifier: &str) -> bool {
    (43..=128).contains(&verifier.len())
        && verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

pub(super) fn required<'p>(params: &'p Params, name: &'static str) -> Result<&'p str, OAuthError> {
    params
        .single(name)
        .map_err(|_| OAuthError::InvalidForm("a parameter is repeated"))?
        .ok_or(match name {
            "code" => OAuthError::InvalidForm("code is missing"),
            "redirect_uri" => OAuthError::InvalidForm("redirect_uri is missing"),
            "code_verifier" => OAuthError::InvalidForm("code_verifier is missing"),
            "refresh_token" => OAuthError::InvalidForm("refresh_token is missing"),
            _ => OAuthError::InvalidForm("token is missing"),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_codes_client_revokes_and_only_within_the_window() {
        let expired = 1_000;
        assert!(replay_revokes("web", expired, "web", expired - 30).is_ok());
        assert!(replay_revokes("web", expired, "web", expired + 599).is_ok());
        assert!(matches!(
            replay_revokes("web", expired, "web", expired + REPLAY_REVOCATION_WINDOW),
            Err(OAuthError::InvalidGrant("the code has expired"))
        ));
        assert!(matches!(
            replay_revokes("web", expired, "spa", expired - 30),
            Err(OAuthError::InvalidGrant(
                "the code was issued to another client"
            ))
        ));
    }

    #[test]
    fn the_verifier_must_be_well_formed_and_match() {
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert!(check_verifier("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk", challenge).is_ok());
        assert!(check_verifier("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXK", challenge).is_err());
        assert!(check_verifier("short", challenge).is_err());
        assert!(check_verifier(&"a".repeat(129), challenge).is_err());
        assert!(check_verifier(&format!("{}+", "a".repeat(43)), challenge).is_err());
    }
}
