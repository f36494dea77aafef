//! Access tokens presented to this server (RFC 6750 §2.1, RFC 9449 §7.1), checked as RFC 9068 §4
//! asks: signature by one of our keys, `typ`, `iss`, `aud`, `exp`. Whether the grant still
//! stands is read by the endpoint, together with what it needs (one round trip).

use axum::http::{header, HeaderMap};
use jose::{AccessTokenClaims, Scheme, UnixTime, Validation};
use store::TenantId;

use crate::error::OAuthError;
use crate::state::OAuthState;

/// The token from `Authorization: Bearer …` or `Authorization: DPoP …` (RFC 9449 §7.1),
/// with its scheme, or `invalid_token`.
pub fn presented_token(headers: &HeaderMap) -> Result<(Scheme, &str), OAuthError> {
    let value = headers
        .get(header::AUTHORIZATION)
        .ok_or(OAuthError::InvalidToken("no access token"))?
        .to_str()
        .map_err(|_| OAuthError::InvalidToken("malformed Authorization header"))?;
    jose::presented_token(value).ok_or(OAuthError::InvalidToken(
        "the Authorization header is not a Bearer or DPoP token",
    ))
}

/// The claims of an access token issued by this server and not expired, and its tenant.
pub fn verify_access_token(
    state: &OAuthState,
    token: &str,
    now: UnixTime,
) -> Result<(AccessTokenClaims, TenantId), OAuthError> {
    let keys = state.signing_keys.current();
    let validation = Validation {
        typ: "at+jwt",
        issuer: state.config.issuer.as_str(),
        audience: &state.config.api_audience,
        now,
        leeway: 0,
    };
    let claims: AccessTokenClaims = jose::verify_jwt(token, &keys.verification, &validation)
        .map_err(|_| OAuthError::InvalidToken("the access token is invalid or expired"))?;
    let tenant = TenantId::parse(&claims.tenant)
        .map_err(|_| OAuthError::InvalidToken("the access token is invalid or expired"))?;
    Ok((claims, tenant))
}
