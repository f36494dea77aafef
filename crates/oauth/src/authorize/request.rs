//! Validating `GET /oauth/authorize` (RFC 6749 §4.1.1, RFC 7636 §4.3, OpenID Connect Core
//! §3.1.2.1) in two stages: first what decides whether the redirect URI can be trusted
//! (errors are shown to the user, never redirected: §4.1.2.1), then everything else (errors
//! go back to the client).

use store::{Client, TenantId};

use super::redirect::{AuthorizeErrorCode, ErrorRedirect};
use crate::client_id::ClientId;
use crate::error::OAuthError;
use crate::mfa;
use crate::params::{Params, Repeated};
use crate::scope::Scope;

/// The tenant, client and redirect URI of a request, once all three are verified.
#[derive(Debug)]
pub struct TrustedTarget {
    pub tenant: TenantId,
    pub client: Client,
    pub redirect_uri: String,
}

/// The OpenID Connect `prompt` values (Core §3.1.2.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Prompt {
    pub none: bool,
    pub login: bool,
}

/// An authorization request that passed every check.
#[derive(Debug)]
pub struct ValidatedRequest {
    pub target: TrustedTarget,
    pub state: String,
    /// Requested scopes, without duplicates, in the order of [`Scope::ALL`].
    pub scopes: Vec<Scope>,
    pub nonce: Option<String>,
    pub code_challenge: String,
    pub prompt: Prompt,
    pub max_age: Option<i64>,
    pub login_hint: Option<String>,
    /// `acr_values` asks for `urn:fieldauth:acr:mfa` (and does not also accept `…:pwd`).
    pub acr_mfa: bool,
}

/// `acr_values` holds at most a few URIs.
const MAX_ACR_VALUES_LEN: usize = 512;

// Each request is stored until it expires, for anyone who asks: what a caller may make the
// server keep is bounded (issue 26). Generous for the values clients send (random strings,
// a username), and documented in docs/tokens.md.
pub const MAX_STATE_LEN: usize = 512;
pub const MAX_NONCE_LEN: usize = 512;
pub const MAX_LOGIN_HINT_LEN: usize = 256;

/// Stage one: tenant, client and an exactly registered redirect URI. Each failure is an
/// `UntrustedRequest` page that says what is wrong.
pub async fn resolve_target(
    params: &Params,
    store: &store::Store,
) -> Result<TrustedTarget, OAuthError> {
    let tenant = trusted_param(params, "tenant")?.ok_or(OAuthError::UntrustedRequest(
        "The request does not name a tenant (tenant is missing).",
    ))?;
    let client_id = trusted_param(params, "client_id")?.ok_or(OAuthError::UntrustedRequest(
        "The request does not name an application (client_id is missing).",
    ))?;
    let redirect_uri = trusted_param(params, "redirect_uri")?.ok_or(
        OAuthError::UntrustedRequest("The request has no redirect_uri."),
    )?;
    let tenant = TenantId::parse(tenant).map_err(|_| {
        OAuthError::UntrustedRequest("The tenant in the request is not a valid tenant id.")
    })?;
    let tenant_store = store.tenant(&tenant);
    if tenant_store.find().await?.is_none() {
        return Err(OAuthError::UntrustedRequest(
            "The tenant in the request does not exist.",
        ));
    }
    let unregistered = || {
        OAuthError::UntrustedRequest(
            "The application (client_id) is not registered with this tenant.",
        )
    };
    // An id outside the registration rules was never registered: no lookup, so text a
    // database cannot store (a NUL) never reaches one.
    let client_id = ClientId::parse(client_id).map_err(|_| unregistered())?;
    // A disabled client is shown the same page as an unregistered one, never a redirect.
    let client = tenant_store
        .find_client(client_id.as_str())
        .await?
        .filter(|client| !client.disabled)
        .ok_or_else(unregistered)?;
    crate::events::log_context(&tenant, &client.client_id);
    // OAuth 2.1 §2.3.1 and RFC 9700 §4.1.3: exact string comparison, nothing looser.
    if !client
        .redirect_uris
        .iter()
        .any(|registered| registered == redirect_uri)
    {
        return Err(OAuthError::UntrustedRequest(
            "The redirect_uri is not registered for this application, so the result cannot be sent back to it.",
        ));
    }
    let redirect_uri = redirect_uri.to_owned();
    Ok(TrustedTarget {
        tenant,
        client,
        redirect_uri,
    })
}

fn trusted_param<'p>(
    params: &'p Params,
    name: &'static str,
) -> Result<Option<&'p str>, OAuthError> {
    params.single(name).map_err(|Repeated(_)| {
        OAuthError::UntrustedRequest(match name {
            "tenant" => "The tenant parameter is repeated.",
            "client_id" => "The client_id parameter is repeated.",
            _ => "The redirect_uri parameter is repeated.",
        })
    })
}

/// Stage two: everything else, in the order the errors are reported. Failures redirect to
/// the (now trusted) redirect URI.
pub fn validate(
    params: &Params,
    target: TrustedTarget,
    issuer: &str,
) -> Result<ValidatedRequest, OAuthError> {
    // `state` is echoed in every error from here on, exactly as received (§4.1.2.1), unless
    // it is the repeated parameter.
    let state = params.single("state").ok().flatten().map(str::to_owned);
    let fail = |error: AuthorizeErrorCode, description: &'static str| {
        OAuthError::Redirect(Box::new(ErrorRedirect {
            redirect_uri: target.redirect_uri.clone(),
            error,
            description,
            state: state.clone(),
            issuer: issuer.to_owned(),
        }))
    };
    let invalid = |description| fail(AuthorizeErrorCode::InvalidRequest, description);
    if params.first_repeated().is_some() {
        return Err(invalid("a parameter is repeated"));
    }
    if params.first_with_control().is_some() {
        return Err(invalid("a parameter contains a control character"));
    }
    let get = |name: &'static str| params.single(name).ok().flatten();

    match get("response_type") {
        None => return Err(invalid("response_type is missing")),
        Some("code") => {}
        Some(_) => {
            return Err(fail(
                AuthorizeErrorCode::UnsupportedResponseType,
                "only response_type=code is supported",
            ))
        }
    }
    if get("request").is_some() {
        return Err(fail(
            AuthorizeErrorCode::RequestNotSupported,
            "request objects are not supported",
        ));
    }
    if get("request_uri").is_some() {
        return Err(fail(
            AuthorizeErrorCode::RequestUriNotSupported,
            "request_uri is not supported",
        ));
    }
    if get("response_mode").is_some_and(|mode| mode != "query") {
        return Err(invalid("only response_mode=query is supported"));
    }
    // RFC 7636 §4.3, and PKCE is mandatory here (OAuth 2.1 §4.1.1).
    let code_challenge = get("code_challenge")
        .ok_or_else(|| invalid("code_challenge is missing (PKCE is required)"))?;
    match get("code_challenge_method") {
        Some("S256") => {}
        Some(_) => return Err(invalid("code_challenge_method must be S256")),
        None => {
            return Err(invalid(
                "code_challenge_method is missing (S256 is required)",
            ))
        }
    }
    // An S256 challenge is a base64url SHA-256: exactly 43 characters.
    if code_challenge.len() != 43 || !code_challenge.bytes().all(is_base64url) {
        return Err(invalid(
            "code_challenge must be the 43-character base64url SHA-256 of the verifier",
        ));
    }
    let state = match get("state") {
        Some(state) if state.len() > MAX_STATE_LEN => return Err(invalid("state is too long")),
        Some(state) => state.to_owned(),
        None => return Err(invalid("state is missing")),
    };
    let scopes = parse_scopes(get("scope"), &target.client)
        .map_err(|(code, description)| fail(code, description))?;
    let prompt = parse_prompt(get("prompt")).map_err(invalid)?;
    let max_age = match get("max_age") {
        None => None,
        Some(value) => Some(
            value
                .parse::<u32>()
                .map_err(|_| invalid("max_age must be a non-negative number of seconds"))?,
        ),
    };
    let nonce = match get("nonce") {
        Some(nonce) if nonce.len() > MAX_NONCE_LEN => return Err(invalid("nonce is too long")),
        nonce => nonce.map(str::to_owned),
    };
    let login_hint = match get("login_hint") {
        Some(hint) if hint.len() > MAX_LOGIN_HINT_LEN => {
            return Err(invalid("login_hint is too long"))
        }
        hint => hint.map(str::to_owned),
    };
    let acr_mfa = match get("acr_values") {
        Some(values) if values.len() > MAX_ACR_VALUES_LEN => {
            return Err(invalid("acr_values is too long"))
        }
        values => demands_mfa(values),
    };
    Ok(ValidatedRequest {
        target,
        state,
        scopes,
        nonce,
        code_challenge: code_challenge.to_owned(),
        prompt,
        max_age: max_age.map(i64::from),
        login_hint,
        acr_mfa,
    })
}

/// OpenID Connect Core §3.1.2.1: `acr_values` lists acceptable values in order of
/// preference, as a voluntary claim. Values we do not issue are ignored; the request asks
/// for a second factor when it names `…:mfa` and does not accept `…:pwd` as well.
fn demands_mfa(values: Option<&str>) -> bool {
    let listed: Vec<&str> = values.unwrap_or_default().split(' ').collect();
    listed.contains(&mfa::ACR_MFA) && !listed.contains(&mfa::ACR_PASSWORD)
}

fn is_base64url(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_'
}

/// RFC 6749 §3.3: each scope must be known and allowed for the client.
fn parse_scopes(
    value: Option<&str>,
    client: &Client,
) -> Result<Vec<Scope>, (AuthorizeErrorCode, &'static str)> {
    let value = value.ok_or((AuthorizeErrorCode::InvalidRequest, "scope is missing"))?;
    let mut scopes = Vec::new();
    for name in value.split(' ').filter(|s| !s.is_empty()) {
        let scope = Scope::parse(name).map_err(|_| {
            (
                AuthorizeErrorCode::InvalidScope,
                "a requested scope is unknown",
            )
        })?;
        if !client
            .scopes
            .iter()
            .any(|allowed| allowed == scope.as_str())
        {
            return Err((
                AuthorizeErrorCode::InvalidScope,
                "a requested scope is not allowed for this client",
            ));
        }
        scopes.push(scope);
    }
    if scopes.is_empty() {
        return Err((AuthorizeErrorCode::InvalidRequest, "scope is missing"));
    }
    scopes.sort_unstable();
    scopes.dedup();
    Ok(scopes)
}

/// OpenID Connect Core §3.1.2.1: `none` stands alone; `consent` and `select_account` are
/// always honoured (consent with an organization choice is always shown).
fn parse_prompt(value: Option<&str>) -> Result<Prompt, &'static str> {
    let mut prompt = Prompt::default();
    let Some(value) = value else {
        return Ok(prompt);
    };
    let values: Vec<&str> = value.split(' ').filter(|v| !v.is_empty()).collect();
    for v in &values {
        match *v {
            "none" => prompt.none = true,
            "login" => prompt.login = true,
            "consent" | "select_account" => {}
            _ => return Err("prompt has an unsupported value"),
        }
    }
    if prompt.none && values.len() > 1 {
        return Err("prompt=none cannot be combined with other values");
    }
    Ok(prompt)
}

#[cfg(test)]
mod tests;
