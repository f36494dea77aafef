//! The admin API's extractors and its one tagged response: every rejection is problem JSON
//! (never axum's plain-text rejections), and every record read or changed carries its ETag.

use axum::extract::{FromRequest, FromRequestParts, Query, Request};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::auth::{authenticate, Admin};
use crate::context::Ctx;
use crate::error::AdminError;
use crate::etag::{etag_header, Precondition};
use crate::page::PageQuery;
use crate::versioned::Versioned;

use super::AdminState;

/// The admin behind the request's bearer token.
#[derive(Debug)]
pub struct Caller(pub Admin);

impl FromRequestParts<AdminState> for Caller {
    type Rejection = AdminError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AdminState,
    ) -> Result<Caller, AdminError> {
        let header = parts.headers.get(header::AUTHORIZATION);
        Ok(Caller(authenticate(&state.store, header).await?))
    }
}

impl Caller {
    /// The context of one operation by this caller, now.
    pub fn ctx<'a>(&'a self, state: &'a AdminState) -> Ctx<'a> {
        Ctx {
            store: &state.store,
            admin: &self.0,
            now: state.clock.now(),
            random: state.random.as_ref(),
            auth_url: &state.auth_url,
        }
    }
}

/// The request's `If-Match`, as a precondition of the update.
#[derive(Debug)]
pub struct IfMatch(pub Precondition);

impl<S: Send + Sync> FromRequestParts<S> for IfMatch {
    type Rejection = AdminError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<IfMatch, AdminError> {
        Precondition::from_if_match(parts.headers.get(header::IF_MATCH)).map(IfMatch)
    }
}

/// A JSON body; a body that is not JSON of the expected shape is `400 invalid-input`, its
/// detail naming the field serde stopped at.
#[derive(Debug)]
pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = AdminError;

    async fn from_request(request: Request, state: &S) -> Result<JsonBody<T>, AdminError> {
        match Json::<T>::from_request(request, state).await {
            Ok(Json(value)) => Ok(JsonBody(value)),
            Err(rejection) => Err(AdminError::Invalid(rejection.body_text())),
        }
    }
}

/// A list's `cursor`, `limit` and `q`.
#[derive(Debug)]
pub struct PageParams(pub PageQuery);

impl<S: Send + Sync> FromRequestParts<S> for PageParams {
    type Rejection = AdminError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<PageParams, AdminError> {
        match Query::<PageQuery>::from_request_parts(parts, state).await {
            Ok(Query(query)) => Ok(PageParams(query)),
            Err(rejection) => Err(AdminError::Invalid(rejection.body_text())),
        }
    }
}

/// A record with its `ETag`, answered `200` (or `201` when created).
#[derive(Debug)]
pub struct Tagged<T> {
    pub status: StatusCode,
    pub record: Versioned<T>,
}

impl<T> Tagged<T> {
    pub fn ok(record: Versioned<T>) -> Tagged<T> {
        Tagged {
            status: StatusCode::OK,
            record,
        }
    }

    pub fn created(record: Versioned<T>) -> Tagged<T> {
        Tagged {
            status: StatusCode::CREATED,
            record,
        }
    }
}

impl<T: Serialize> IntoResponse for Tagged<T> {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(self.record.value)).into_response();
        response
            .headers_mut()
            .insert(header::ETAG, etag_header(self.record.revision));
        response
    }
}
