//! The crate's one error type, and its wire form: RFC 9457 `application/problem+json` with a
//! stable `type` per kind of error, so scripts branch on it rather than on the text.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use store::StoreError;

/// The wire form of every error (RFC 9457 §3), as the OpenAPI document describes it.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct Problem {
    /// A URN per kind of error, stable across versions: `urn:fieldauth:problem:not-found`.
    #[serde(rename = "type")]
    pub problem_type: String,
    pub title: String,
    pub status: u16,
    /// For people; for invalid input it names the field.
    pub detail: String,
}

#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// No admin token, an unknown one, or a revoked one: 401 with `WWW-Authenticate: Bearer`.
    #[error("a valid admin token is required")]
    Unauthorized,
    /// Nothing of this kind that the token may see (another tenant's resource included).
    #[error("{0} not found")]
    NotFound(&'static str),
    /// What only an every-tenant token may do (create, delete or list all tenants).
    #[error("only an admin token of every tenant may {0}")]
    Forbidden(&'static str),
    /// An `If-Match` that no longer matches the resource's `ETag`: someone changed it since.
    #[error("the {0} changed since it was read (If-Match no longer matches its ETag)")]
    PreconditionFailed(&'static str),
    /// Input that breaks a rule; the message names the field.
    #[error("{0}")]
    Invalid(String),
    /// A name or id that exists already.
    #[error("{0}")]
    Conflict(String),
    /// The database cannot be reached: 503, worth retrying.
    #[error("the database is unavailable; try again shortly")]
    Unavailable,
    /// Anything else: logged where it happens, never described to the caller.
    #[error("internal error")]
    Internal,
}

impl AdminError {
    /// The problem's `type` (RFC 9457 §3.1.1): a URN per kind, stable across versions.
    pub fn problem_type(&self) -> &'static str {
        match self {
            AdminError::Unauthorized => "urn:fieldauth:problem:unauthorized",
            AdminError::NotFound(_) => "urn:fieldauth:problem:not-found",
            AdminError::Forbidden(_) => "urn:fieldauth:problem:forbidden",
            AdminError::PreconditionFailed(_) => "urn:fieldauth:problem:precondition-failed",
            AdminError::Invalid(_) => "urn:fieldauth:problem:invalid-input",
            AdminError::Conflict(_) => "urn:fieldauth:problem:conflict",
            AdminError::Unavailable => "urn:fieldauth:problem:unavailable",
            AdminError::Internal => "urn:fieldauth:problem:internal",
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            AdminError::Unauthorized => StatusCode::UNAUTHORIZED,
            AdminError::NotFound(_) => StatusCode::NOT_FOUND,
            AdminError::Forbidden(_) => StatusCode::FORBIDDEN,
            AdminError::PreconditionFailed(_) => StatusCode::PRECONDITION_FAILED,
            AdminError::Invalid(_) => StatusCode::BAD_REQUEST,
            AdminError::Conflict(_) => StatusCode::CONFLICT,
            AdminError::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            AdminError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn title(&self) -> &'static str {
        match self {
            AdminError::Unauthorized => "Unauthorized",
            AdminError::NotFound(_) => "Not found",
            AdminError::Forbidden(_) => "Forbidden",
            AdminError::PreconditionFailed(_) => "Precondition failed",
            AdminError::Invalid(_) => "Invalid input",
            AdminError::Conflict(_) => "Conflict",
            AdminError::Unavailable => "Unavailable",
            AdminError::Internal => "Internal error",
        }
    }

    /// The RFC 9457 body.
    pub fn problem(&self) -> serde_json::Value {
        json!({
            "type": self.problem_type(),
            "title": self.title(),
            "status": self.status().as_u16(),
            "detail": self.to_string(),
        })
    }
}

impl From<StoreError> for AdminError {
    fn from(error: StoreError) -> AdminError {
        match error {
            StoreError::Unavailable(_) => {
                tracing::warn!(%error, "admin request without a database");
                AdminError::Unavailable
            }
            other => {
                tracing::error!(error = %other, "admin storage failure");
                AdminError::Internal
            }
        }
    }
}

impl IntoResponse for AdminError {
    fn into_response(self) -> Response {
        let mut response = (self.status(), self.problem().to_string()).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        if matches!(self, AdminError::Unauthorized) {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problems_carry_type_title_status_and_detail() {
        let problem = AdminError::NotFound("client").problem();
        assert_eq!(
            problem,
            json!({
                "type": "urn:fieldauth:problem:not-found",
                "title": "Not found",
                "status": 404,
                "detail": "client not found",
            })
        );
        let response = AdminError::Unauthorized.into_response();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(response.headers()[header::WWW_AUTHENTICATE], "Bearer");
        assert_eq!(
            response.headers()[header::CONTENT_TYPE],
            "application/problem+json"
        );
        let internal = AdminError::Internal.problem();
        assert_eq!(internal["detail"], "internal error");
    }
}
