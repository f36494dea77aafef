//! The API's one error type: RFC 6750 at the HTTP edge (401 `invalid_token`, 503 while the
//! issuer's keys or the database cannot be reached), stable `extensions.code` values inside
//! GraphQL responses. Internal detail is logged, never sent.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// No valid bearer token: refused before the schema runs.
    #[error("{0}")]
    Unauthenticated(&'static str),
    /// RFC 9449 §7.1 `invalid_token` for a token presented with the DPoP scheme.
    #[error("{0}")]
    DpopInvalidToken(&'static str),
    /// RFC 9449 §7.1 `invalid_dpop_proof`: the proof is missing, invalid, replayed or by
    /// another key than the token's.
    #[error("{0}")]
    DpopInvalidProof(&'static str),
    /// The issuer's JWKS cannot be fetched, so no token can be checked.
    #[error("the token issuer's keys are unavailable")]
    KeysUnavailable,
    /// A field needs a scope the token lacks.
    #[error("this field needs the `{0}` scope, which the access token was not granted")]
    Forbidden(&'static str),
    /// Nothing with this id in the caller's organization (whether or not it exists elsewhere).
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    BadUserInput(String),
    /// A body over the listener's limit, or one that could not be read.
    #[error("the request body is larger than 64 KiB or could not be read")]
    TooLarge,
    #[error("the database is unavailable; try again shortly")]
    Unavailable,
    #[error("internal error")]
    Internal,
}

impl ApiError {
    /// The `extensions.code` of a GraphQL error.
    pub fn code(&self) -> &'static str {
        match self {
            ApiError::Unauthenticated(_)
            | ApiError::DpopInvalidToken(_)
            | ApiError::DpopInvalidProof(_) => "UNAUTHENTICATED",
            ApiError::KeysUnavailable | ApiError::Unavailable => "UNAVAILABLE",
            ApiError::Forbidden(_) => "FORBIDDEN",
            ApiError::NotFound(_) => "NOT_FOUND",
            ApiError::BadUserInput(_) | ApiError::TooLarge => "BAD_USER_INPUT",
            ApiError::Internal => "INTERNAL",
        }
    }

    /// What a store error means to a client. Errors a loader shares between keys arrive by
    /// reference.
    pub fn from_shared(error: &StoreError) -> ApiError {
        match error {
            StoreError::NotFound(entity) => ApiError::NotFound(format!("{entity} not found")),
            StoreError::Refused(message) => ApiError::BadUserInput(message.clone()),
            StoreError::Conflict(entity) => {
                ApiError::BadUserInput(format!("this {entity} already exists"))
            }
            StoreError::Unavailable(_) => {
                tracing::warn!(%error, "API request without a database");
                ApiError::Unavailable
            }
            other => {
                // Logged here, once; the client sees only "internal error".
                tracing::error!(error = %other, "API storage failure");
                ApiError::Internal
            }
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> ApiError {
        ApiError::from_shared(&error)
    }
}

impl async_graphql::ErrorExtensions for ApiError {
    fn extend(&self) -> async_graphql::Error {
        let error = async_graphql::Error::new(self.to_string())
            .extend_with(|_, e| e.set("code", self.code()));
        match self {
            ApiError::Forbidden(scope) => error.extend_with(|_, e| e.set("scope", *scope)),
            _ => error,
        }
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
            ApiError::DpopInvalidToken(description) => (
                StatusCode::UNAUTHORIZED,
                Some(jose::dpop_challenge("invalid_token", description)),
            ),
            ApiError::DpopInvalidProof(description) => (
                StatusCode::UNAUTHORIZED,
                Some(jose::dpop_challenge("invalid_dpop_proof", description)),
            ),
            ApiError::KeysUnavailable | ApiError::Unavailable => {
                (StatusCode::SERVICE_UNAVAILABLE, None)
            }
            ApiError::Forbidden(scope) => (
                StatusCode::FORBIDDEN,
                Some(format!(
                    r#"Bearer error="insufficient_scope", scope="{scope}""#
                )),
            ),
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, None),
            ApiError::BadUserInput(_) => (StatusCode::BAD_REQUEST, None),
            ApiError::TooLarge => (StatusCode::PAYLOAD_TOO_LARGE, None),
            ApiError::Internal => (StatusCode::INTERNAL_SERVER_ERROR, None),
        };
        let body = serde_json::json!({
            "errors": [{ "message": self.to_string(), "extensions": { "code": self.code() } }]
        });
        let mut response = (status, axum::Json(body)).into_response();
        if let Some(value) = challenge.and_then(|c| HeaderValue::from_str(&c).ok()) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }
}
