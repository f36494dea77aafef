//! Access tokens on the API (RFC 6750 §2.1, DPoP-bound ones by RFC 9449 §7) checked as
//! RFC 9068 §4 asks: RS256 by a key of
//! the issuer's JWKS, `typ` at+jwt, `iss`, `aud`, `exp`/`nbf` with 60 s leeway, and the
//! claims the API relies on; then the grant must still stand. A token this node checked
//! before is not verified again while its check holds (`verified`); its grant, its DPoP proof
//! and its scopes are checked on every request.

use std::sync::Arc;

use axum::http::{header, HeaderMap};
use jose::{AccessTokenClaims, BindingError, Scheme, UnixTime, Validation};
use store::{ApiStanding, TenantId, TenantStore};

use crate::error::ApiError;
use crate::schema::Scopes;
use crate::state::ApiState;
use crate::verified::{TokenDigest, Verified};
use crate::GRAPHQL_PATH;

const LEEWAY: i64 = 60;

/// Who is calling: the checked claims of the access token.
#[derive(Clone, Debug)]
pub struct Caller {
    pub claims: Arc<AccessTokenClaims>,
    pub tenant: TenantId,
    /// The API's scopes among the claims' (`scope`), read once.
    pub scopes: Scopes,
}

/// A caller that passed every check, with what the response cache needs.
#[derive(Debug)]
pub struct Authenticated<'h> {
    pub caller: Caller,
    /// The access token as sent: the response cache's key (never logged or stored as is).
    pub token: &'h str,
    /// The organization's data version, read with the grant's standing, before any data.
    pub data_version: Option<i64>,
}

pub async fn authenticate<'h>(
    state: &ApiState,
    headers: &'h HeaderMap,
    now: UnixTime,
) -> Result<Authenticated<'h>, ApiError> {
    let (scheme, token) = presented_token(headers)?;
    let claims = checked_claims(state, token, now).await?;
    let tenant = TenantId::parse(&claims.tenant)
        .map_err(|_| ApiError::Unauthenticated("the access token is invalid or expired"))?;
    if claims.organization_guid.is_empty() {
        return Err(ApiError::Unauthenticated(
            "the access token names no organization",
        ));
    }
    let store = state.store.tenant(&tenant);
    check_dpop(
        state,
        headers,
        (scheme, token),
        claims.dpop_jkt(),
        &store,
        now,
    )
    .await?;
    let standing = store
        .api_standing(&claims.grant_id, &claims.organization_guid)
        .await?;
    let ApiStanding::Live { data_version } = standing else {
        return Err(ApiError::Unauthenticated(
            "the access token has been revoked",
        ));
    };
    Ok(Authenticated {
        caller: Caller {
            scopes: Scopes::of(&claims),
            claims,
            tenant,
        },
        token,
        data_version,
    })
}

/// The token's signature and claims, checked as the module says, or as this node checked
/// these exact bytes before with the keys it still holds
/// ([`VerifiedTokens`](crate::verified::VerifiedTokens)).
async fn checked_claims(
    state: &ApiState,
    token: &str,
    now: UnixTime,
) -> Result<Arc<AccessTokenClaims>, ApiError> {
    let digest = TokenDigest::of(token);
    if let Some(kept) = state.verified.get(&digest) {
        let keys = state.keys.for_kid(&kept.kid, now).await?;
        if kept.holds(&keys, now, LEEWAY) {
            return Ok(kept.claims);
        }
        state.verified.forget(&digest);
    }
    let invalid = |_| ApiError::Unauthenticated("the access token is invalid or expired");
    let header = jose::decode_header(token).map_err(invalid)?;
    // Only RS256 is ever accepted (no `none`, no HMAC), before any key is looked up.
    if header.alg != "RS256" {
        return Err(ApiError::Unauthenticated(
            "the access token is invalid or expired",
        ));
    }
    let kid = header.kid.ok_or(ApiError::Unauthenticated(
        "the access token is invalid or expired",
    ))?;
    let keys = state.keys.for_kid(&kid, now).await?;
    let validation = Validation {
        typ: "at+jwt",
        issuer: &state.config.issuer,
        audience: &state.config.audience,
        now,
        leeway: LEEWAY,
    };
    let claims: AccessTokenClaims = jose::verify_jwt(token, &keys, &validation).map_err(invalid)?;
    let claims = Arc::new(claims);
    let verified = Verified {
        claims: claims.clone(),
        kid: kid.into(),
        keys,
        checked_at: now,
    };
    state.verified.put(digest, verified);
    Ok(claims)
}

fn presented_token(headers: &HeaderMap) -> Result<(Scheme, &str), ApiError> {
    let value = headers
        .get(header::AUTHORIZATION)
        .ok_or(ApiError::Unauthenticated("no access token"))?
        .to_str()
        .map_err(|_| ApiError::Unauthenticated("malformed Authorization header"))?;
    jose::presented_token(value).ok_or(ApiError::Unauthenticated(
        "the Authorization header is not a Bearer or DPoP token",
    ))
}

/// RFC 9449 §7.1: a DPoP-bound token only with the DPoP scheme and a fresh proof of this
/// request by its key, each proof accepted once on every node; an unbound one only as a
/// Bearer token.
async fn check_dpop(
    state: &ApiState,
    headers: &HeaderMap,
    (scheme, token): (Scheme, &str),
    jkt: Option<&str>,
    store: &TenantStore<'_>,
    now: UnixTime,
) -> Result<(), ApiError> {
    let proofs: Vec<&str> = headers
        .get_all("dpop")
        .iter()
        .map(|value| value.to_str())
        .collect::<Result<_, _>>()
        .map_err(|_| ApiError::DpopInvalidProof("the DPoP header is not a JWT"))?;
    let url = format!(
        "{}{GRAPHQL_PATH}",
        state.config.audience.trim_end_matches('/')
    );
    let checked = jose::check_presentation(scheme, token, jkt, &proofs, "POST", &url, now);
    let proof = match checked {
        Ok(None) => return Ok(()),
        Ok(Some(proof)) => proof,
        Err(BindingError::InvalidToken(why)) if scheme == Scheme::Bearer => {
            return Err(ApiError::Unauthenticated(why))
        }
        Err(BindingError::InvalidToken(why)) => return Err(ApiError::DpopInvalidToken(why)),
        Err(BindingError::InvalidProof(why)) => return Err(ApiError::DpopInvalidProof(why)),
    };
    let fresh = store
        .remember_dpop_proof(&proof.replay_key(), proof.remember_until(), now)
        .await?;
    match fresh {
        true => Ok(()),
        false => Err(ApiError::DpopInvalidProof("the proof was already used")),
    }
}
