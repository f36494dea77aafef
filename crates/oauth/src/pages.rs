//! The server-rendered pages (sign-in, consent, error) and the headers every page carries:
//! a CSP that allows only our stylesheet and our one script (the passkey buttons, which
//! fetch their options from our origin), no inline script, no framing, no caching.

use askama::Template;

use crate::authorize::redirect::found;
use crate::error::{error_chain, OAuthError};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

#[derive(Template)]
#[template(path = "signin.html")]
pub struct SignInPage<'a> {
    pub client_name: &'a str,
    pub tenant: &'a str,
    pub request: &'a str,
    pub csrf: &'a str,
    pub username: &'a str,
    pub message: Option<&'a str>,
    /// "Forgot your password?": where it leads, shown only when mail is configured.
    pub recover_url: Option<String>,
}

pub struct ScopeChoice {
    pub name: &'static str,
    pub description: &'static str,
    /// Shown checked and disabled: `openid` cannot be cleared.
    pub required: bool,
}

pub struct OrganizationChoice {
    pub guid: String,
    pub name: String,
}

#[derive(Template)]
#[template(path = "consent.html")]
pub struct ConsentPage<'a> {
    pub client_name: &'a str,
    pub user_name: &'a str,
    pub username: &'a str,
    pub tenant: &'a str,
    pub request: &'a str,
    pub csrf: &'a str,
    pub scopes: Vec<ScopeChoice>,
    pub organizations: Vec<OrganizationChoice>,
}

#[derive(Template)]
#[template(path = "error.html")]
pub struct ErrorPage<'a> {
    pub title: &'a str,
    pub message: &'a str,
}

/// An error met while serving a page: shown as an HTML page, or sent to the client as an
/// authorization error redirect. The one place the page-facing errors meet the wire.
#[derive(Debug)]
pub struct PageError(pub OAuthError);

impl From<OAuthError> for PageError {
    fn from(error: OAuthError) -> PageError {
        PageError(error)
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let (status, title, message) = match &self.0 {
            OAuthError::Redirect(redirect) => match redirect.location() {
                Some(location) => return found(&location),
                None => (
                    StatusCode::BAD_REQUEST,
                    "Request refused",
                    "The application's redirect URI is not a valid URL.",
                ),
            },
            OAuthError::UntrustedRequest(message) => {
                (StatusCode::BAD_REQUEST, "Request refused", *message)
            }
            OAuthError::InvalidFlow(message)
            | OAuthError::InvalidForm(message)
            | OAuthError::InvalidClient(message)
            | OAuthError::InvalidGrant(message)
            | OAuthError::InvalidScope(message)
            | OAuthError::InvalidToken(message) => {
                (StatusCode::BAD_REQUEST, "Sign-in cannot continue", *message)
            }
            OAuthError::UnsupportedGrantType
            | OAuthError::UnsupportedTokenType
            | OAuthError::InvalidDpopProof(_)
            | OAuthError::UseDpopNonce
            | OAuthError::DpopInvalidToken(_)
            | OAuthError::DpopInvalidProof(_)
            | OAuthError::InsufficientScope(_) => (
                StatusCode::BAD_REQUEST,
                "Sign-in cannot continue",
                "The request is not supported here.",
            ),
            OAuthError::Store(store::StoreError::Unavailable(_)) | OAuthError::TimedOut => (
                StatusCode::SERVICE_UNAVAILABLE,
                "Temporarily unavailable",
                "The service cannot be reached right now. Try again in a moment.",
            ),
            OAuthError::InvalidIssuer(_)
            | OAuthError::InvalidRedirectUri(_)
            | OAuthError::InvalidWebOrigin(_)
            | OAuthError::InvalidUsername(_)
            | OAuthError::InvalidClientId(_)
            | OAuthError::UnknownScope
            | OAuthError::PasswordHash
            | OAuthError::Randomness
            | OAuthError::Blocking
            | OAuthError::NoSigningKey
            | OAuthError::KeySealing { .. }
            | OAuthError::KeysChanging
            | OAuthError::Jose(_)
            | OAuthError::InvalidMailSetting { .. }
            | OAuthError::MailMessage(_)
            | OAuthError::MailDelivery(_)
            | OAuthError::Passkey(_)
            | OAuthError::FactorSealing(_)
            | OAuthError::Store(_) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "Something went wrong",
                "The request could not be completed because of an error on our side.",
            ),
        };
        match status.is_server_error() {
            true => tracing::error!(error = %error_chain(&self.0), "page request failed"),
            false => tracing::debug!(error = %self.0, "page request refused"),
        }
        render(&ErrorPage { title, message }, status, FormTarget::SelfOnly)
    }
}

/// Where a page's forms may send the browser. The consent form is answered by a redirect to
/// the client, and browsers apply `form-action` to that redirect too, so the client's
/// redirect target joins `'self'` there.
pub enum FormTarget<'a> {
    SelfOnly,
    SelfAnd(&'a str),
}

/// Renders a page with the security headers. A template that fails to render (it cannot,
/// short of a bug) becomes a plain 500 rather than a partial page.
pub fn render(page: &impl Template, status: StatusCode, forms: FormTarget<'_>) -> Response {
    let html = match page.render() {
        Ok(html) => html,
        Err(error) => {
            tracing::error!(%error, "page template failed");
            return (StatusCode::INTERNAL_SERVER_ERROR, "server_error\n").into_response();
        }
    };
    let form_action = match forms {
        FormTarget::SelfOnly => "'self'".to_owned(),
        FormTarget::SelfAnd(source) => format!("'self' {source}"),
    };
    let csp = format!(
        "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; \
         img-src 'self'; form-action {form_action}; frame-ancestors 'none'; base-uri 'none'"
    );
    let mut response = (status, html).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    if let Ok(csp) = HeaderValue::from_str(&csp) {
        headers.insert(header::CONTENT_SECURITY_POLICY, csp);
    }
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The CSP source that lets the consent form's redirect reach `redirect_uri`: its origin for
/// http(s), its scheme for a private-use URI such as `com.example.app:/cb`.
pub fn csp_source_for(redirect_uri: &str) -> Option<String> {
    let url = url::Url::parse(redirect_uri).ok()?;
    match url.scheme() {
        "http" | "https" => Some(url.origin().ascii_serialization()),
        scheme => Some(format!("{scheme}:")),
    }
}

const STYLESHEET: &str = include_str!("../assets/fieldauth.css");

/// `GET /oauth/assets/fieldauth.css`.
pub async fn serve_stylesheet() -> Response {
    let mut response = STYLESHEET.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/css; charset=utf-8"),
    );
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=86400"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

const PASSKEY_SCRIPT: &str = include_str!("../assets/passkey.js");

/// `GET /oauth/assets/passkey.js`: the passkey buttons' script (issue 24).
pub async fn serve_passkey_script() -> Response {
    let mut response = PASSKEY_SCRIPT.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/javascript; charset=utf-8"),
    );
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=86400"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csp_source_is_the_origin_or_the_private_scheme() {
        assert_eq!(
            csp_source_for("https://app.example.com:8443/cb?x=1").unwrap(),
            "https://app.example.com:8443"
        );
        assert_eq!(
            csp_source_for("http://127.0.0.1:8400/callback").unwrap(),
            "http://127.0.0.1:8400"
        );
        assert_eq!(
            csp_source_for("com.example.app:/cb").unwrap(),
            "com.example.app:"
        );
    }

    #[test]
    fn pages_escape_what_users_and_clients_control() {
        let page = SignInPage {
            client_name: "<script>alert(1)</script>",
            tenant: "acme",
            request: "r",
            csrf: "c",
            username: "\"><img src=x>",
            message: None,
            recover_url: None,
        };
        let html = page.render().unwrap();
        assert!(
            !html.contains("<script>") && !html.contains("<img"),
            "{html}"
        );
    }
}
