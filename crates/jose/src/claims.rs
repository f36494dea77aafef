//! The claims of the tokens fieldauth issues, shared by the issuer and the verifiers.

use serde::{Deserialize, Serialize};

use crate::clock::UnixTime;

/// An RFC 9068 JWT access token (`typ: at+jwt`), bound to one tenant and organization.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessTokenClaims {
    pub iss: String,
    pub sub: String,
    /// `{api_url}`.
    pub aud: String,
    pub exp: UnixTime,
    pub iat: UnixTime,
    pub jti: String,
    pub client_id: String,
    /// Space-delimited granted scopes.
    pub scope: String,
    pub tenant: String,
    pub organization_guid: String,
    pub auth_time: UnixTime,
    /// The grant (token family) that issued it: revoking the grant ends the token.
    pub grant_id: String,
    /// How the user signed in (`urn:fieldauth:acr:pwd` or `…:mfa`), so the API can ask for
    /// a second factor where it matters. Absent from tokens issued before it existed.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub acr: Option<String>,
    /// RFC 9449 §6.1: the DPoP key the token is bound to. A bound token is accepted only
    /// with the `DPoP` scheme and a proof signed by that key.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cnf: Option<Confirmation>,
}

impl AccessTokenClaims {
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scope.split(' ').any(|s| s == scope)
    }

    /// The thumbprint of the DPoP key the token is bound to, if it is bound.
    pub fn dpop_jkt(&self) -> Option<&str> {
        self.cnf.as_ref().map(|cnf| cnf.jkt.as_str())
    }
}

/// RFC 7800 §3.1 `cnf`, with the RFC 9449 §6.1 `jkt` member: the SHA-256 JWK thumbprint
/// (RFC 7638) of the key a token is bound to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Confirmation {
    pub jkt: String,
}

/// An OpenID Connect ID token (Core §2), with the profile and email claims its scopes allow.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdTokenClaims {
    pub iss: String,
    pub sub: String,
    /// The client_id.
    pub aud: String,
    pub exp: UnixTime,
    pub iat: UnixTime,
    pub auth_time: UnixTime,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub nonce: Option<String>,
    pub at_hash: String,
    pub azp: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub preferred_username: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub email: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub email_verified: Option<bool>,
    /// Back-Channel Logout 1.0 §2.1: the browser session's identifier, when the grant began
    /// in one that has it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub sid: Option<String>,
    /// RFC 8176 authentication method references: `pwd`, `otp`, `hwk`, `swk`, and `mfa`
    /// when two factors were used.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub amr: Option<Vec<String>>,
    /// Core §2: `urn:fieldauth:acr:pwd` or `urn:fieldauth:acr:mfa`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub acr: Option<String>,
}

/// A Back-Channel Logout 1.0 logout token (§2.4), signed with `typ: logout+jwt`. It never
/// carries a `nonce`, so it can never pass for an ID token.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogoutTokenClaims {
    pub iss: String,
    /// The client_id.
    pub aud: String,
    pub iat: UnixTime,
    pub exp: UnixTime,
    pub jti: String,
    pub sub: String,
    /// The session that ended: the `sid` of the ID tokens issued in it.
    pub sid: String,
    pub events: LogoutEvents,
}

/// §2.4: the `events` claim, a JSON object naming the back-channel logout event with an
/// empty object.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogoutEvents {
    #[serde(rename = "http://schemas.openid.net/event/backchannel-logout")]
    pub backchannel_logout: BackchannelLogoutEvent,
}

/// The back-channel logout event's (empty) object.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackchannelLogoutEvent {}
