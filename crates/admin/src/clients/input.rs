//! What an admin sends about a client, and its checks: the same types the authorization
//! server parses with (`ClientId`, `RedirectUri`, `Scope`, `WebOrigin`), so nothing is
//! registered that the endpoints would refuse. Each refusal names its field.

use oauth::cors::WebOrigin;
use oauth::{ClientId, RedirectUri, Scope};
use serde::{Deserialize, Serialize};
use store::ClientSettings;
use utoipa::ToSchema;

use crate::error::AdminError;
use crate::text::display_name;

/// The longest grace period a rotation gives the previous secret: a day.
pub const MAX_GRACE_SECONDS: i64 = 86_400;

/// The longest refresh retry window a client may have (issue 27): two minutes.
pub const MAX_REFRESH_RETRY_SECONDS: i64 = 120;

/// RFC 6749 §2.1 client types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ClientKind {
    /// Cannot keep a secret (a browser or native app): authenticates with PKCE only.
    Public,
    /// Can keep a secret (a server-side app): gets one, shown once.
    Confidential,
}

impl ClientKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ClientKind::Public => "public",
            ClientKind::Confidential => "confidential",
        }
    }
}

/// `POST /admin/v1/tenants/{tenant}/clients`.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewClientRequest {
    /// 1 to 128 of letters, digits and `- . _ ~`.
    pub client_id: String,
    #[serde(rename = "type")]
    pub client_type: ClientKind,
    /// Defaults to the client id; shown on the consent screen.
    pub name: Option<String>,
    /// At least one; matched exactly.
    pub redirect_uris: Vec<String>,
    /// The scopes it may request; every scope when absent.
    pub scopes: Option<Vec<String>>,
    /// Origins (`scheme://host[:port]`) whose pages may call the token, userinfo,
    /// revocation and API endpoints, besides those of the redirect URIs.
    #[serde(default)]
    pub web_origins: Vec<String>,
    /// Where the browser may be sent after signing out (RP-Initiated Logout 1.0); matched
    /// exactly, with the rules of redirect URIs. None when absent.
    #[serde(default)]
    pub post_logout_redirect_uris: Vec<String>,
    /// Where logout tokens are POSTed (Back-Channel Logout 1.0): https, or http to a
    /// loopback host; no fragment.
    pub backchannel_logout_uri: Option<String>,
    /// 0 to 120 (default 0: never): how long after a refresh token was used the client may
    /// present it again, while the refresh token that use issued is unused, and get a fresh
    /// answer instead of the grant's revocation. See docs/tokens.md.
    #[serde(default)]
    #[schema(minimum = 0, maximum = 120)]
    pub refresh_retry_seconds: i64,
    /// RFC 9449 §5.2: the client's access tokens must be DPoP-bound (default false).
    #[serde(default)]
    pub dpop_bound_access_tokens: bool,
}

/// `PATCH /admin/v1/tenants/{tenant}/clients/{client_id}`: the fields given are replaced.
#[derive(Clone, Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ClientPatch {
    pub name: Option<String>,
    pub redirect_uris: Option<Vec<String>>,
    pub scopes: Option<Vec<String>>,
    /// Replaces them all; `[]` removes them.
    pub post_logout_redirect_uris: Option<Vec<String>>,
    /// Replaces it; `null` removes it.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub backchannel_logout_uri: Option<Option<String>>,
    /// 0 to 120; 0 turns the retry window off.
    #[schema(minimum = 0, maximum = 120)]
    pub refresh_retry_seconds: Option<i64>,
    pub dpop_bound_access_tokens: Option<bool>,
}

/// A field that may be `null`: present (`Some`, with `None` for `null`) or absent (`None`,
/// by `#[serde(default)]`).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

/// `POST /admin/v1/tenants/{tenant}/clients/{client_id}/secret`.
#[derive(Clone, Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SecretRotation {
    /// 1 to 86400: how long the previous secret is still accepted. Without it, the previous
    /// secret stops at once.
    pub grace_seconds: Option<i64>,
}

pub(super) struct CheckedNew<'a> {
    pub client_id: ClientId,
    pub name: &'a str,
    pub redirect_uris: Vec<String>,
    pub scopes: Vec<String>,
    pub web_origins: Vec<String>,
    pub post_logout_redirect_uris: Vec<String>,
    pub backchannel_logout_uri: Option<String>,
    pub settings: ClientSettings,
}

pub(super) struct CheckedPatch<'a> {
    pub name: Option<&'a str>,
    pub redirect_uris: Option<Vec<String>>,
    pub scopes: Option<Vec<String>>,
    pub post_logout_redirect_uris: Option<Vec<String>>,
    pub backchannel_logout_uri: Option<Option<String>>,
    pub refresh_retry_seconds: Option<i64>,
    pub dpop_bound_access_tokens: Option<bool>,
    /// The names of the fields changed, for the audit trail.
    pub fields: Vec<&'static str>,
}

impl NewClientRequest {
    pub(super) fn check(&self) -> Result<CheckedNew<'_>, AdminError> {
        let client_id = ClientId::parse(&self.client_id)
            .map_err(|e| AdminError::Invalid(format!("client_id: {e}")))?;
        let name = display_name(self.name.as_deref().unwrap_or(&self.client_id), "name")?;
        let scopes = match &self.scopes {
            None => Scope::ALL.iter().map(|s| s.as_str().to_owned()).collect(),
            Some(given) => scopes(given)?,
        };
        Ok(CheckedNew {
            client_id,
            name,
            redirect_uris: redirect_uris(&self.redirect_uris)?,
            scopes,
            web_origins: web_origins(&self.web_origins)?,
            post_logout_redirect_uris: post_logout_redirect_uris(&self.post_logout_redirect_uris)?,
            backchannel_logout_uri: self
                .backchannel_logout_uri
                .as_deref()
                .map(backchannel_logout_uri)
                .transpose()?,
            settings: ClientSettings {
                refresh_retry_seconds: refresh_retry_seconds(self.refresh_retry_seconds)?,
                dpop_bound_access_tokens: self.dpop_bound_access_tokens,
            },
        })
    }
}

impl ClientPatch {
    pub(super) fn check(&self) -> Result<CheckedPatch<'_>, AdminError> {
        let mut fields = Vec::new();
        let name = match &self.name {
            Some(name) => {
                fields.push("name");
                Some(display_name(name, "name")?)
            }
            None => None,
        };
        let redirect_uris = match &self.redirect_uris {
            Some(uris) => {
                fields.push("redirect_uris");
                Some(redirect_uris(uris)?)
            }
            None => None,
        };
        let scopes = match &self.scopes {
            Some(given) => {
                fields.push("scopes");
                Some(scopes(given)?)
            }
            None => None,
        };
        let post_logout = match &self.post_logout_redirect_uris {
            Some(uris) => {
                fields.push("post_logout_redirect_uris");
                Some(post_logout_redirect_uris(uris)?)
            }
            None => None,
        };
        let backchannel = match &self.backchannel_logout_uri {
            Some(uri) => {
                fields.push("backchannel_logout_uri");
                Some(uri.as_deref().map(backchannel_logout_uri).transpose()?)
            }
            None => None,
        };
        let retry = match self.refresh_retry_seconds {
            Some(seconds) => {
                fields.push("refresh_retry_seconds");
                Some(refresh_retry_seconds(seconds)?)
            }
            None => None,
        };
        if self.dpop_bound_access_tokens.is_some() {
            fields.push("dpop_bound_access_tokens");
        }
        if fields.is_empty() {
            return Err(AdminError::Invalid(
                "the body changes nothing: give name, redirect_uris, scopes, \
                 post_logout_redirect_uris, backchannel_logout_uri, refresh_retry_seconds or \
                 dpop_bound_access_tokens"
                    .to_owned(),
            ));
        }
        Ok(CheckedPatch {
            name,
            redirect_uris,
            scopes,
            post_logout_redirect_uris: post_logout,
            backchannel_logout_uri: backchannel,
            refresh_retry_seconds: retry,
            dpop_bound_access_tokens: self.dpop_bound_access_tokens,
            fields,
        })
    }
}

impl SecretRotation {
    pub(super) fn grace(&self) -> Result<Option<i64>, AdminError> {
        match self.grace_seconds {
            Some(seconds) if !(1..=MAX_GRACE_SECONDS).contains(&seconds) => {
                Err(AdminError::Invalid(format!(
                    "grace_seconds: must be between 1 and {MAX_GRACE_SECONDS}"
                )))
            }
            other => Ok(other),
        }
    }
}

/// Issue 27: 0 (no retry, spec §5.7 as written) to [`MAX_REFRESH_RETRY_SECONDS`]. The one
/// check of the setting, for the admin API and the CLI (whose parser calls it too).
pub fn refresh_retry_seconds(seconds: i64) -> Result<i64, AdminError> {
    match (0..=MAX_REFRESH_RETRY_SECONDS).contains(&seconds) {
        true => Ok(seconds),
        false => Err(AdminError::Invalid(format!(
            "refresh_retry_seconds: must be between 0 and {MAX_REFRESH_RETRY_SECONDS}"
        ))),
    }
}

fn redirect_uris(given: &[String]) -> Result<Vec<String>, AdminError> {
    if given.is_empty() {
        return Err(AdminError::Invalid(
            "redirect_uris: at least one is required".to_owned(),
        ));
    }
    let mut uris: Vec<String> = Vec::with_capacity(given.len());
    for uri in given {
        let uri = RedirectUri::parse(uri)
            .map_err(|e| AdminError::Invalid(format!("redirect_uris: {uri:?}: {e}")))?
            .into_string();
        if !uris.contains(&uri) {
            uris.push(uri);
        }
    }
    Ok(uris)
}

/// RP-Initiated Logout 1.0 §3: registered like redirect URIs and matched exactly; none is
/// fine (the user then sees our signed-out page).
fn post_logout_redirect_uris(given: &[String]) -> Result<Vec<String>, AdminError> {
    let mut uris: Vec<String> = Vec::with_capacity(given.len());
    for uri in given {
        let uri = RedirectUri::parse(uri)
            .map_err(|e| AdminError::Invalid(format!("post_logout_redirect_uris: {uri:?}: {e}")))?
            .into_string();
        if !uris.contains(&uri) {
            uris.push(uri);
        }
    }
    Ok(uris)
}

fn backchannel_logout_uri(given: &str) -> Result<String, AdminError> {
    oauth::logout::parse_backchannel_logout_uri(given)
        .map_err(|e| AdminError::Invalid(format!("backchannel_logout_uri: {given:?}: {e}")))
}

fn scopes(given: &[String]) -> Result<Vec<String>, AdminError> {
    if given.is_empty() {
        return Err(AdminError::Invalid(
            "scopes: at least one is required".to_owned(),
        ));
    }
    let mut scopes: Vec<String> = Vec::with_capacity(given.len());
    for scope in given {
        let scope = Scope::parse(scope)
            .map_err(|e| AdminError::Invalid(format!("scopes: {scope:?}: {e}")))?
            .as_str()
            .to_owned();
        if !scopes.contains(&scope) {
            scopes.push(scope);
        }
    }
    Ok(scopes)
}

fn web_origins(given: &[String]) -> Result<Vec<String>, AdminError> {
    let mut origins: Vec<String> = Vec::with_capacity(given.len());
    for origin in given {
        let origin = WebOrigin::parse(origin)
            .map_err(|e| AdminError::Invalid(format!("web_origins: {origin:?}: {e}")))?
            .into_string();
        if !origins.contains(&origin) {
            origins.push(origin);
        }
    }
    Ok(origins)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invalid<T>(result: Result<T, AdminError>) -> String {
        match result {
            Err(AdminError::Invalid(why)) => why,
            Err(other) => panic!("not invalid input: {other:?}"),
            Ok(_) => panic!("accepted"),
        }
    }

    #[test]
    fn each_refusal_names_its_field() {
        let new = |id: &str, uri: &str| NewClientRequest {
            client_id: id.to_owned(),
            client_type: ClientKind::Public,
            name: None,
            redirect_uris: vec![uri.to_owned()],
            scopes: None,
            web_origins: Vec::new(),
            post_logout_redirect_uris: Vec::new(),
            backchannel_logout_uri: None,
            refresh_retry_seconds: 0,
            dpop_bound_access_tokens: false,
        };
        assert!(new("spa", "https://app.example.com/cb").check().is_ok());
        let why = invalid(
            new("bad id", "https://app.example.com/cb")
                .check()
                .map(|_| ()),
        );
        assert!(why.starts_with("client_id"), "{why}");
        let why = invalid(new("spa", "/cb").check().map(|_| ()));
        assert!(why.starts_with("redirect_uris"), "{why}");
        let mut scoped = new("spa", "https://app.example.com/cb");
        scoped.scopes = Some(vec!["admin".to_owned()]);
        assert!(invalid(scoped.check().map(|_| ())).starts_with("scopes"));
        scoped.scopes = Some(Vec::new());
        assert!(invalid(scoped.check().map(|_| ())).starts_with("scopes"));
        let mut origin = new("spa", "https://app.example.com/cb");
        origin.web_origins = vec!["https://app.example.com/path".to_owned()];
        assert!(invalid(origin.check().map(|_| ())).starts_with("web_origins"));
        let mut logout = new("spa", "https://app.example.com/cb");
        logout.post_logout_redirect_uris = vec!["https://app.example.com/out#x".to_owned()];
        assert!(invalid(logout.check().map(|_| ())).starts_with("post_logout_redirect_uris"));
        logout.post_logout_redirect_uris = vec!["https://app.example.com/out".to_owned()];
        logout.backchannel_logout_uri = Some("http://app.example.com/bc".to_owned());
        assert!(invalid(logout.check().map(|_| ())).starts_with("backchannel_logout_uri"));
        logout.backchannel_logout_uri = Some("https://app.example.com/bc".to_owned());
        assert!(logout.check().is_ok());
        let clear: ClientPatch =
            serde_json::from_str(r#"{"backchannel_logout_uri":null}"#).unwrap();
        assert_eq!(clear.check().unwrap().backchannel_logout_uri, Some(None));
        assert!(invalid(ClientPatch::default().check().map(|_| ())).contains("changes nothing"));
    }

    #[test]
    fn the_refresh_retry_window_is_zero_to_two_minutes() {
        let mut new: NewClientRequest = serde_json::from_str(
            r#"{"client_id":"app","type":"public","redirect_uris":["com.example.app:/cb"]}"#,
        )
        .unwrap();
        let defaults = new.check().unwrap().settings;
        assert_eq!(defaults, ClientSettings::default());
        for good in [0, 1, 120] {
            new.refresh_retry_seconds = good;
            assert_eq!(new.check().unwrap().settings.refresh_retry_seconds, good);
        }
        for bad in [-1, 121, i64::MIN, i64::MAX] {
            new.refresh_retry_seconds = bad;
            let why = invalid(new.check().map(|_| ()));
            assert!(why.starts_with("refresh_retry_seconds"), "{why}");
            let patch = ClientPatch {
                refresh_retry_seconds: Some(bad),
                ..ClientPatch::default()
            };
            assert!(invalid(patch.check().map(|_| ())).starts_with("refresh_retry_seconds"));
        }
        let patch: ClientPatch =
            serde_json::from_str(r#"{"refresh_retry_seconds":30,"dpop_bound_access_tokens":true}"#)
                .unwrap();
        let checked = patch.check().unwrap();
        assert_eq!(
            (
                checked.refresh_retry_seconds,
                checked.dpop_bound_access_tokens
            ),
            (Some(30), Some(true))
        );
        assert_eq!(
            checked.fields,
            ["refresh_retry_seconds", "dpop_bound_access_tokens"]
        );
    }

    #[test]
    fn grace_is_one_second_to_a_day() {
        let grace = |s| SecretRotation { grace_seconds: s }.grace();
        assert_eq!(grace(None).unwrap(), None);
        assert_eq!(grace(Some(1)).unwrap(), Some(1));
        assert_eq!(grace(Some(86_400)).unwrap(), Some(86_400));
        for bad in [0, -1, 86_401] {
            assert!(invalid(grace(Some(bad))).starts_with("grace_seconds"));
        }
    }
}
