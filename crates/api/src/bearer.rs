//! Bearer tokens on the API (RFC 6750 §2.1) checked as RFC 9068 §4 asks: RS256 by a key of
//! the issuer's JWKS, `typ` at+jwt, `iss`, `aud`, `exp`/`nbf` with 60 s leeway, and the
//! claims the API relies on; then the grant must still stand.

use axum::http::{header, HeaderMap};
use jose::{AccessTokenClaims, UnixTime, Validation};
use store::{ApiStanding, TenantId};

use crate::error::ApiError;
use crate::state::ApiState;

const LEEWAY: i64 = 60;

/// Who is calling: the checked claims of the access token.
#[derive(Clone, Debug)]
pub struct Caller {
    pub claims: AccessTokenClaims,
    pub tenant: TenantId,
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
    let token = bearer_token(headers)?;
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
    let tenant = TenantId::parse(&claims.tenant)
        .map_err(|_| ApiError::Unauthenticated("the access token is invalid or expired"))?;
    if claims.organization_guid.is_empty() {
        return Err(ApiError::Unauthenticated(
            "the access token names no organization",
        ));
    }
    let standing = state
        .store
        .tenant(&tenant)
        .api_standing(&claims.grant_id, &claims.organization_guid)
        .await?;
    let ApiStanding::Live { data_version } = standing else {
        return Err(ApiError::Unauthenticated(
            "the access token has been revoked",
        ));
    };
    Ok(Authenticated {
        caller: Caller { claims, tenant },
        token,
        data_version,
    })
}

fn bearer_token(headers: &HeaderMap) -> Result<&str, ApiError> {
    let value = headers
        .get(header::AUTHORIZATION)
        .ok_or(ApiError::Unauthenticated("no access token"))?
        .to_str()
        .map_err(|_| ApiError::Unauthenticated("malformed Authorization header"))?;
    jose::bearer_token(value).ok_or(ApiError::Unauthenticated(
        "the Authorization header is not a Bearer token",
    ))
}
