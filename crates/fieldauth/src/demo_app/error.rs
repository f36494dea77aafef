//! What can go wrong in the demo app, and the one place each case becomes a page.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::pages;

#[derive(Debug, thiserror::Error)]
pub enum DemoAppError {
    /// The callback came to a browser that started no sign-in here (or already finished it).
    #[error("no sign-in in progress in this browser")]
    NoSignInInProgress,
    /// RFC 6749 §10.12: the callback's `state` is not the one this browser was sent with.
    #[error("the callback's state does not match")]
    StateMismatch,
    /// RFC 9207 §2.4: the response does not come from the issuer the request went to.
    #[error("the callback's iss is not the issuer")]
    IssuerMismatch,
    /// RFC 6749 §4.1.2.1: the authorization server answered with an error (the user denied,
    /// for example). Only shown once `state` matched.
    #[error("the authorization server answered {error}")]
    AuthorizationError {
        error: String,
        description: Option<String>,
    },
    #[error("the callback carries no code")]
    MissingCode,
    #[error("this browser is not signed in to the demo app")]
    NotSignedIn,
    /// The form's CSRF token is not this session's.
    #[error("the form's CSRF token does not match")]
    BadCsrf,
    /// An endpoint answered with an OAuth error (RFC 6749 §5.2).
    #[error("{endpoint} refused: {error}")]
    Refused {
        endpoint: &'static str,
        error: String,
        description: Option<String>,
    },
    #[error("{0} did not answer")]
    Unreachable(&'static str),
    #[error("{0} answered something unexpected")]
    UnexpectedAnswer(&'static str),
    /// The ID token failed verification (signature, claims, nonce, at_hash, sub).
    #[error("the ID token was rejected: {0}")]
    IdTokenRejected(&'static str),
    #[error("the {0} was rejected: {1}")]
    TokenRejected(&'static str, #[source] jose::JoseError),
    #[error("no randomness")]
    Randomness,
}

impl DemoAppError {
    /// The status, heading and explanation of the error page. Exhaustive, so a new case
    /// must decide how it is shown.
    fn page(&self) -> (StatusCode, &'static str, String) {
        match self {
            DemoAppError::NoSignInInProgress => (
                StatusCode::BAD_REQUEST,
                "No sign-in in progress",
                "This browser did not start a sign-in here, or already finished it. If you \
                 opened the authorization URL printed for the curl walkthrough, the code is in \
                 the address bar: use it with the printed curl command."
                    .to_owned(),
            ),
            DemoAppError::StateMismatch => (
                StatusCode::BAD_REQUEST,
                "Sign-in refused",
                "The callback's state does not match the sign-in this browser started, so the \
                 code was not used (RFC 6749 §10.12)."
                    .to_owned(),
            ),
            DemoAppError::IssuerMismatch => (
                StatusCode::BAD_REQUEST,
                "Sign-in refused",
                "The callback's iss does not name the issuer the sign-in was sent to, so the \
                 code was not used (RFC 9207)."
                    .to_owned(),
            ),
            DemoAppError::AuthorizationError { error, description } => (
                StatusCode::BAD_REQUEST,
                "No access given",
                with_description(
                    &format!("The authorization server answered {error}"),
                    description,
                ),
            ),
            DemoAppError::MissingCode => (
                StatusCode::BAD_REQUEST,
                "Sign-in refused",
                "The callback carries no code.".to_owned(),
            ),
            DemoAppError::NotSignedIn => (
                StatusCode::BAD_REQUEST,
                "Not signed in",
                "This browser has no tokens in the demo app: sign in first.".to_owned(),
            ),
            DemoAppError::BadCsrf => (
                StatusCode::FORBIDDEN,
                "Form refused",
                "The form does not carry this browser's token; reload the page and try again."
                    .to_owned(),
            ),
            DemoAppError::Refused {
                endpoint,
                error,
                description,
            } => (
                StatusCode::BAD_REQUEST,
                "Refused by the authorization server",
                with_description(&format!("{endpoint} answered {error}"), description),
            ),
            DemoAppError::Unreachable(what) => (
                StatusCode::BAD_GATEWAY,
                "Server unreachable",
                format!("{what} did not answer. Is fieldauth demo still running?"),
            ),
            DemoAppError::UnexpectedAnswer(what) => (
                StatusCode::BAD_GATEWAY,
                "Unexpected answer",
                format!("{what} answered something the demo app does not understand."),
            ),
            DemoAppError::IdTokenRejected(why) => (
                StatusCode::BAD_GATEWAY,
                "ID token rejected",
                format!("The ID token was not accepted: {why}."),
            ),
            DemoAppError::TokenRejected(which, error) => (
                StatusCode::BAD_GATEWAY,
                "Token rejected",
                format!("The {which} was not accepted: {error}."),
            ),
            DemoAppError::Randomness => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "Server error",
                "The demo app could not make a random value.".to_owned(),
            ),
        }
    }
}

fn with_description(text: &str, description: &Option<String>) -> String {
    match description {
        Some(description) => format!("{text}: {description}."),
        None => format!("{text}."),
    }
}

impl IntoResponse for DemoAppError {
    fn into_response(self) -> Response {
        let (status, title, message) = self.page();
        // Each message is a fixed sentence or an OAuth error code: nothing secret.
        match status.is_server_error() {
            true => tracing::error!(error = %self, "demo app request failed"),
            false => tracing::warn!(error = %self, "demo app request refused"),
        }
        (status, pages::error_page(title, &message)).into_response()
    }
}
