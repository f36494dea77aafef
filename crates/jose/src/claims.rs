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
}

impl AccessTokenClaims {
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scope.split(' ').any(|s| s == scope)
    }
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
}
