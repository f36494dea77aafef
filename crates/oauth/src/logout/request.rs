//! What a logout request asks, once verified (OpenID Connect RP-Initiated Logout 1.0 §2,
//! §3): the tenant, the client, the ID token hint, and a post-logout redirect URI that is
//! registered for that client. Any failure is the error page, never a redirect: a redirect
//! to an unverified URI would make the endpoint an open redirector (§3 and RFC 9700 §4.11).

use jose::{UnixTime, Validation};
use serde::Deserialize;
use store::{TenantId, TenantStore};

use crate::client_id::ClientId;
use crate::error::OAuthError;
use crate::params::{Params, Repeated};
use crate::state::OAuthState;

/// A verified logout request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LogoutRequest {
    pub tenant: TenantId,
    /// From `client_id`, or the hint's `aud`; verified registered and enabled.
    pub client_id: Option<String>,
    pub hint: Option<Hint>,
    /// Where to send the browser afterwards: exactly a registered URI of `client_id`.
    pub redirect: Option<PostLogoutRedirect>,
}

/// What a verified `id_token_hint` says of the session it was issued in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Hint {
    pub sub: String,
    pub sid: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PostLogoutRedirect {
    pub uri: String,
    /// RP-Initiated Logout §3: passed back unchanged on the redirect.
    pub state: Option<String>,
}

/// The ID token claims a hint is read for.
#[derive(Deserialize)]
struct HintClaims {
    sub: String,
    aud: String,
    #[serde(default)]
    sid: Option<String>,
}

/// The `aud` of a token, read before its signature is checked only to choose the audience
/// the verification then requires.
#[derive(Deserialize)]
struct UnverifiedAudience {
    aud: String,
}

fn refused(message: &'static str) -> OAuthError {
    OAuthError::UntrustedRequest(message)
}

fn param<'p>(params: &'p Params, name: &'static str) -> Result<Option<&'p str>, OAuthError> {
    params.single(name).map_err(|Repeated(_)| {
        refused(match name {
            "tenant" => "The tenant parameter is repeated.",
            "client_id" => "The client_id parameter is repeated.",
            "id_token_hint" => "The id_token_hint parameter is repeated.",
            "post_logout_redirect_uri" => "The post_logout_redirect_uri parameter is repeated.",
            _ => "A parameter is repeated.",
        })
    })
}

/// Verifies a logout request's parameters. `ui_locales` and anything unknown are ignored
/// (§2: the OP may ignore them); `logout_hint` too, since the ID token hint says more.
pub(crate) async fn verify(
    state: &OAuthState,
    params: &Params,
    now: UnixTime,
) -> Result<LogoutRequest, OAuthError> {
    if params.first_with_control().is_some() {
        return Err(refused("The request carries a control character."));
    }
    // The end-session endpoint serves every tenant, as the authorization endpoint does, and
    // an ID token names no tenant: the request says which (docs/decisions.md).
    let tenant = param(params, "tenant")?.ok_or(refused(
        "The request does not name a tenant (tenant is missing).",
    ))?;
    let tenant = TenantId::parse(tenant)
        .map_err(|_| refused("The tenant in the request is not a valid tenant id."))?;
    let records = state.store.tenant(&tenant);
    if records.find().await?.is_none() {
        return Err(refused("The tenant in the request does not exist."));
    }
    let hint = match param(params, "id_token_hint")? {
        Some(token) => Some(verify_hint(state, token, param(params, "client_id")?, now)?),
        None => None,
    };
    // §2: when both are given, the client_id must be the hint's audience.
    let client_id = match (param(params, "client_id")?, &hint) {
        (Some(given), Some((_, aud))) if given != aud.as_str() => {
            return Err(refused(
                "The client_id does not match the application the id_token_hint was issued to.",
            ))
        }
        (Some(given), _) => Some(given.to_owned()),
        (None, Some((_, aud))) => Some(aud.clone()),
        (None, None) => None,
    };
    let redirect = match param(params, "post_logout_redirect_uri")? {
        Some(uri) => Some(PostLogoutRedirect {
            uri: registered_redirect(&records, client_id.as_deref(), uri).await?,
            state: param(params, "state")?.map(str::to_owned),
        }),
        None => {
            if let Some(client_id) = client_id.as_deref() {
                known_client(&records, client_id).await?;
            }
            None
        }
    };
    if let Some(client_id) = client_id.as_deref() {
        crate::events::log_context(&tenant, client_id);
    }
    Ok(LogoutRequest {
        tenant,
        client_id,
        hint: hint.map(|(hint, _)| hint),
        redirect,
    })
}

/// RP-Initiated Logout §2: the hint must be an ID token we issued (our RS256 signature with a
/// key we publish, our `iss`, and the client as `aud`), expired or not: a user often signs
/// out long after the token's ten minutes. Returns the hint and its audience.
fn verify_hint(
    state: &OAuthState,
    token: &str,
    client_id: Option<&str>,
    now: UnixTime,
) -> Result<(Hint, String), OAuthError> {
    const BAD_HINT: &str = "The id_token_hint is not an ID token issued by this server.";
    let audience = match client_id {
        Some(client_id) => client_id.to_owned(),
        None => unverified_audience(token).ok_or(refused(BAD_HINT))?,
    };
    let keys = state.signing_keys.current();
    let validation = Validation {
        typ: "JWT",
        issuer: state.config.issuer.as_str(),
        audience: &audience,
        now,
        // RP-Initiated Logout §2 accepts an expired ID token as the hint.
        leeway: i64::MAX,
    };
    let claims: HintClaims =
        jose::verify_jwt(token, &keys.verification, &validation).map_err(|error| {
            tracing::warn!(%error, "logout refused an id_token_hint");
            match client_id {
                Some(_) if matches!(error, jose::JoseError::InvalidAudience) => refused(
                    "The client_id does not match the application the id_token_hint was issued to.",
                ),
                _ => refused(BAD_HINT),
            }
        })?;
    Ok((
        Hint {
            sub: claims.sub,
            sid: claims.sid,
        },
        claims.aud,
    ))
}

/// The `aud` of an unverified token, when it is a single string (ours always is).
fn unverified_audience(token: &str) -> Option<String> {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine as _;
    let payload = token.split('.').nth(1)?;
    let json = URL_SAFE_NO_PAD.decode(payload).ok()?;
    serde_json::from_slice::<UnverifiedAudience>(&json)
        .ok()
        .map(|claims| claims.aud)
}

/// §3: the URI must exactly match one registered for the client, and without a client there
/// is nothing to match it against.
async fn registered_redirect(
    records: &TenantStore<'_>,
    client_id: Option<&str>,
    uri: &str,
) -> Result<String, OAuthError> {
    let client_id = client_id.ok_or(refused(
        "A post_logout_redirect_uri needs the application it belongs to: send client_id or id_token_hint.",
    ))?;
    let registered = known_client(records, client_id).await?;
    // Exact string comparison, as for redirect_uri (OAuth 2.1 §2.3.1).
    match registered.iter().any(|r| r == uri) {
        true => Ok(uri.to_owned()),
        false => Err(refused(
            "The post_logout_redirect_uri is not registered for this application.",
        )),
    }
}

/// A registered, enabled client's post-logout redirect URIs; a disabled client is as
/// unknown as an unregistered one.
async fn known_client(
    records: &TenantStore<'_>,
    client_id: &str,
) -> Result<Vec<String>, OAuthError> {
    let unknown = || refused("The application (client_id) is not registered with this tenant.");
    // An id outside the registration rules was never registered: no lookup.
    ClientId::parse(client_id).map_err(|_| unknown())?;
    let logout = records
        .find_client_logout(client_id)
        .await?
        .ok_or_else(unknown)?;
    Ok(logout.post_logout_redirect_uris)
}
