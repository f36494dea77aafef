//! The authorization server's one error type, and the one place it meets the wire.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    #[error("invalid issuer URL: {0}")]
    InvalidIssuer(&'static str),
    #[error("invalid redirect URI: {0}")]
    InvalidRedirectUri(&'static str),
    /// The tenant, client or redirect URI cannot be trusted: shown, never redirected
    /// (RFC 6749 §4.1.2.1).
    #[error("untrusted authorization request: {0}")]
    UntrustedRequest(&'static str),
    /// An authorization error for a verified redirect URI.
    #[error("authorization error {}", .0.error.as_str())]
    Redirect(Box<crate::authorize::redirect::ErrorRedirect>),
    /// A sign-in or consent form that cannot continue: expired, replayed, altered, from
    /// another browser.
    #[error("authorization flow refused: {0}")]
    InvalidFlow(&'static str),
    #[error("malformed request: {0}")]
    InvalidForm(&'static str),
    #[error("invalid username: {0}")]
    InvalidUsername(&'static str),
    #[error("invalid client_id: {0}")]
    InvalidClientId(&'static str),
    #[error("unknown scope")]
    UnknownScope,
    #[error("password refused: {0}")]
    WeakPassword(&'static str),
    #[error("password hashing failed")]
    PasswordHash,
    #[error("the system random generator failed")]
    Randomness,
    #[error("a blocking task failed")]
    Blocking,
    #[error("no signing key is available")]
    NoSigningKey,
    #[error("signing or key handling failed")]
    Jose(#[from] jose::JoseError),
    #[error("storage failure")]
    Store(#[from] store::StoreError),
}

impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        let (status, code) = match &self {
            OAuthError::Store(store::StoreError::Unavailable(_)) => {
                (StatusCode::SERVICE_UNAVAILABLE, "temporarily_unavailable")
            }
            OAuthError::InvalidForm(_)
            | OAuthError::UntrustedRequest(_)
            | OAuthError::Redirect(_)
            | OAuthError::InvalidFlow(_) => (StatusCode::BAD_REQUEST, "invalid_request"),
            OAuthError::InvalidIssuer(_)
            | OAuthError::InvalidRedirectUri(_)
            | OAuthError::InvalidUsername(_)
            | OAuthError::InvalidClientId(_)
            | OAuthError::UnknownScope
            | OAuthError::WeakPassword(_)
            | OAuthError::PasswordHash
            | OAuthError::Randomness
            | OAuthError::Blocking
            | OAuthError::NoSigningKey
            | OAuthError::Jose(_)
            | OAuthError::Store(_) => (StatusCode::INTERNAL_SERVER_ERROR, "server_error"),
        };
        // The detail is logged once, here; the client learns only the RFC 6749 error code.
        match status.is_server_error() {
            true => tracing::error!(error = %error_chain(&self), "request failed"),
            false => tracing::debug!(error = %self, "request refused"),
        }
        let body = format!(r#"{{"error":"{code}"}}"#);
        let mut response = (status, body).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        response
    }
}

/// The error and its sources on one line, for the log.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
