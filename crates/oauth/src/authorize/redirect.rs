//! The redirect back to the client (RFC 6749 §4.1.2): `code` or `error`, always with `state`
//! when there was one and `iss` (RFC 9207). Parameters are added by the `url` crate, after
//! any query the registered URI already has (§3.1.2).

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use url::Url;

/// RFC 6749 §4.1.2.1 and OpenID Connect Core §3.1.2.6 error codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthorizeErrorCode {
    InvalidRequest,
    UnsupportedResponseType,
    InvalidScope,
    AccessDenied,
    LoginRequired,
    ConsentRequired,
    RequestNotSupported,
    RequestUriNotSupported,
    TemporarilyUnavailable,
}

impl AuthorizeErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            AuthorizeErrorCode::InvalidRequest => "invalid_request",
            AuthorizeErrorCode::UnsupportedResponseType => "unsupported_response_type",
            AuthorizeErrorCode::InvalidScope => "invalid_scope",
            AuthorizeErrorCode::AccessDenied => "access_denied",
            AuthorizeErrorCode::LoginRequired => "login_required",
            AuthorizeErrorCode::ConsentRequired => "consent_required",
            AuthorizeErrorCode::RequestNotSupported => "request_not_supported",
            AuthorizeErrorCode::RequestUriNotSupported => "request_uri_not_supported",
            AuthorizeErrorCode::TemporarilyUnavailable => "temporarily_unavailable",
        }
    }
}

/// An authorization error to send back to a verified redirect URI.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorRedirect {
    pub redirect_uri: String,
    pub error: AuthorizeErrorCode,
    pub description: &'static str,
    pub state: Option<String>,
    pub issuer: String,
}

impl ErrorRedirect {
    pub fn location(&self) -> Option<Url> {
        let mut url = Url::parse(&self.redirect_uri).ok()?;
        {
            let mut query = url.query_pairs_mut();
            query.append_pair("error", self.error.as_str());
            query.append_pair("error_description", self.description);
            if let Some(state) = &self.state {
                query.append_pair("state", state);
            }
            query.append_pair("iss", &self.issuer);
        }
        Some(url)
    }
}

/// The success redirect: `code`, `state`, `iss`.
pub fn code_location(redirect_uri: &str, code: &str, state: &str, issuer: &str) -> Option<Url> {
    let mut url = Url::parse(redirect_uri).ok()?;
    url.query_pairs_mut()
        .append_pair("code", code)
        .append_pair("state", state)
        .append_pair("iss", issuer);
    Some(url)
}

/// 302 Found to `location`, never cached.
pub fn found(location: &Url) -> Response {
    let mut response = StatusCode::FOUND.into_response();
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(location.as_str()) {
        headers.insert(header::LOCATION, value);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_redirect_keeps_the_registered_query_and_adds_state_and_iss() {
        let redirect = ErrorRedirect {
            redirect_uri: "https://app.example.com/cb?tab=1".into(),
            error: AuthorizeErrorCode::AccessDenied,
            description: "the user denied access",
            state: Some("s t&x".into()),
            issuer: "https://id.example.com".into(),
        };
        assert_eq!(
            redirect.location().unwrap().as_str(),
            "https://app.example.com/cb?tab=1&error=access_denied&error_description=the+user+denied+access&state=s+t%26x&iss=https%3A%2F%2Fid.example.com"
        );
    }

    #[test]
    fn code_redirect_works_for_private_use_schemes() {
        let url = code_location(
            "com.example.app:/cb",
            "acme.abc",
            "xyz",
            "https://id.example.com",
        )
        .unwrap();
        assert_eq!(
            url.as_str(),
            "com.example.app:/cb?code=acme.abc&state=xyz&iss=https%3A%2F%2Fid.example.com"
        );
    }
}
