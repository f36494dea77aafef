//! The API's one error type: RFC 6750 at the HTTP edge (401 `invalid_token`, 503 while the
//! issuer's keys cannot be had), stable `extensions.code` values inside GraphQL responses.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// No valid bearer token: refused before the schema runs.
    #[error("{0}")]
    Unauthenticated(&'static str),
    /// The issuer's JWKS cannot be fetched, so no token can be checked.
    #[error("the token issuer's keys are unavailable")]
    KeysUnavailable,
    /// A field needs a scope the token lacks.
    #[error("this field needs the {0} scope")]
    Forbidden(&'static str),
    #[error("not found")]
    NotFound,
    #[error("{0}")]
    BadUserInput(String),
    #[error("internal error")]
    Store(#[from] store::StoreError),
}

impl ApiError {
    /// The `extensions.code` of a GraphQL error.
    pub fn code(&self) -> &'static str {
        match self {
            ApiError::Unauthenticated(_) => "UNAUTHENTICATED",
            ApiError::KeysUnavailable => "UNAVAILABLE",
            ApiError::Forbidden(_) => "FORBIDDEN",
            ApiError::NotFound => "NOT_FOUND",
            ApiError::BadUserInput(_) => "BAD_USER_INPUT",
            ApiError::Store(_) => "INTERNAL",
        }
    }
}

impl async_graphql::ErrorExtensions for ApiError {
    fn extend(&self) -> async_graphql::Error {
        if let ApiError::Store(error) = self {
            // Logged here, once; the client sees only "internal error".
            tracing::error!(%error, "API storage failure");
        }
        async_graphql::Error::new(self.to_string()).extend_with(|_, e| e.set("code", self.code()))
    }
}

/// The HTTP form, for what is refused before the schema runs.
impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, challenge) = match &self {
            ApiError::Unauthenticated(description) => (
                StatusCode::UNAUTHORIZED,
                Some(format!(
                    r#"Bearer error="invalid_token", error_description="{description}""#
                )),
            ),
            ApiError::KeysUnavailable => (StatusCode::SERVICE_UNAVAILABLE, None),
            ApiError::Forbidden(scope) => (
                StatusCode::FORBIDDEN,
                Some(format!(
                    r#"Bearer error="insufficient_scope", scope="{scope}""#
                )),
            ),
            ApiError::NotFound => (StatusCode::NOT_FOUND, None),
            ApiError::BadUserInput(_) => (StatusCode::BAD_REQUEST, None),
            ApiError::Store(store::StoreError::Unavailable(_)) => {
                (StatusCode::SERVICE_UNAVAILABLE, None)
            }
            ApiError::Store(_) => (StatusCode::INTERNAL_SERVER_ERROR, None),
        };
        let message = match status.is_server_error() && !matches!(self, ApiError::KeysUnavailable) {
            true => {
                tracing::error!(error = %self, "API request failed");
                "internal error".to_owned()
            }
            false => self.to_string(),
        };
        let body = serde_json::json!({ "errors": [{ "message": message, "extensions": { "code": self.code() } }] });
        let mut response = (status, axum::Json(body)).into_response();
        if let Some(value) = challenge.and_then(|c| HeaderValue::from_str(&c).ok()) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }
}
