//! Minting the token response (RFC 6749 §5.1, spec §2.4): an RFC 9068 access token, an ID
//! token when `openid` was granted (OpenID Connect Core §3.1.3.3), and a refresh token when
//! `offline_access` was. The two RS256 signatures run on a blocking thread, one request per
//! core at a time.

use std::sync::Arc;

use jose::{AccessTokenClaims, Confirmation, IdTokenClaims, SigningKey, UnixTime};
use serde::Serialize;
use store::{Grant, User};

use crate::error::OAuthError;
use crate::mfa;
use crate::scope::Scope;
use crate::state::OAuthState;

pub const ACCESS_TOKEN_LIFETIME: UnixTime = 3600;
pub const ID_TOKEN_LIFETIME: UnixTime = 600;
pub const REFRESH_TOKEN_LIFETIME: UnixTime = 30 * 86_400;

/// RFC 6749 §5.1, with `id_token` (OpenID Connect Core §3.1.3.3).
#[derive(Debug, Serialize)]
pub struct TokenResponse {
    pub access_token: String,
    pub token_type: &'static str,
    pub expires_in: UnixTime,
    pub scope: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id_token: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
}

/// What a grant issues this time.
#[derive(Debug)]
pub struct Issue<'a> {
    pub tenant: &'a str,
    pub grant: &'a Grant,
    /// The scopes of these tokens: the grant's, or fewer on a narrowing refresh.
    pub scope: &'a str,
    pub user: &'a User,
    /// Only in the ID token of a code exchange (OpenID Connect Core §12.2: not on refresh).
    pub nonce: Option<&'a str>,
    pub refresh_token: Option<String>,
    /// The DPoP key the access token is bound to (RFC 9449 §6): then its type is `DPoP`.
    pub dpop_jkt: Option<&'a str>,
}

pub async fn mint(
    state: &OAuthState,
    issue: Issue<'_>,
    now: UnixTime,
) -> Result<TokenResponse, OAuthError> {
    let issuer = state.config.issuer.as_str().to_owned();
    let has = |scope: Scope| issue.scope.split(' ').any(|s| s == scope.as_str());
    // Grants older than the second factor were signed in by password alone.
    let amr = issue.grant.amr.as_deref().unwrap_or("pwd");
    let acr = mfa::acr_of(amr);
    let access = AccessTokenClaims {
        iss: issuer.clone(),
        sub: issue.user.user_id.clone(),
        aud: state.config.api_audience.clone(),
        exp: now + ACCESS_TOKEN_LIFETIME,
        iat: now,
        jti: state.random.token()?,
        client_id: issue.grant.client_id.clone(),
        scope: issue.scope.to_owned(),
        tenant: issue.tenant.to_owned(),
        organization_guid: issue.grant.organization_guid.clone(),
        auth_time: issue.grant.auth_time,
        grant_id: issue.grant.grant_id.clone(),
        acr: Some(acr.to_owned()),
        cnf: issue.dpop_jkt.map(|jkt| Confirmation {
            jkt: jkt.to_owned(),
        }),
    };
    let id = has(Scope::OpenId).then(|| IdTokenClaims {
        iss: issuer,
        sub: issue.user.user_id.clone(),
        aud: issue.grant.client_id.clone(),
        exp: now + ID_TOKEN_LIFETIME,
        iat: now,
        auth_time: issue.grant.auth_time,
        nonce: issue.nonce.map(str::to_owned),
        at_hash: String::new(),
        azp: issue.grant.client_id.clone(),
        name: has(Scope::Profile).then(|| issue.user.name.clone()),
        preferred_username: has(Scope::Profile).then(|| issue.user.username.clone()),
        email: has(Scope::Email).then(|| issue.user.email.clone()),
        // Addresses are entered by operators and never verified by us: say so.
        email_verified: has(Scope::Email).then_some(false),
        // Back-Channel Logout §2.1: the session it was issued in, on refresh too.
        sid: issue.grant.sid.clone(),
        // Core §2: both describe the sign-in the grant began with, on refresh too.
        amr: Some(amr.split(' ').map(str::to_owned).collect()),
        acr: Some(acr.to_owned()),
    });
    let key = Arc::clone(state.signing_keys.current().ring.signing_key());
    let (access_token, id_token) = sign(state, key, access, id).await?;
    Ok(TokenResponse {
        access_token,
        // RFC 9449 §5: a bound token says so, and is refused as a Bearer token.
        token_type: match issue.dpop_jkt {
            Some(_) => "DPoP",
            None => "Bearer",
        },
        expires_in: ACCESS_TOKEN_LIFETIME,
        scope: issue.scope.to_owned(),
        id_token,
        refresh_token: issue.refresh_token,
    })
}

/// Both signatures in one trip to a signing thread; `at_hash` binds the ID token to the
/// access token it came with (Core §3.1.3.6).
async fn sign(
    state: &OAuthState,
    key: Arc<SigningKey>,
    access: AccessTokenClaims,
    id: Option<IdTokenClaims>,
) -> Result<(String, Option<String>), OAuthError> {
    state
        .signer
        .run(move || {
            let access_token = key.sign_jwt("at+jwt", &access)?;
            let id_token = match id {
                Some(mut claims) => {
                    claims.at_hash = jose::at_hash(&access_token);
                    Some(key.sign_jwt("JWT", &claims)?)
                }
                None => None,
            };
            Ok((access_token, id_token))
        })
        .await?
}
