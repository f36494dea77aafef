//! The admin API: JSON under `/admin/v1/`, on its own listener (`--admin-listen`), never on
//! the auth or API listener. Handlers are thin: each reads its input through the extractors
//! here, calls one domain function, and answers its result; every error is RFC 9457 problem
//! JSON. Each resource's module gives its routes with their OpenAPI descriptions, so the
//! document at `/admin/v1/openapi.json` is generated from the handlers themselves.

mod audit;
mod clients;
mod extract;
mod grants;
mod organizations;
mod password_links;
mod tenants;
mod users;

use std::sync::{Arc, OnceLock};

use axum::body::Bytes;
use axum::http::{header, HeaderValue};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use jose::Clock;
use oauth::RandomSource;
use store::Store;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;

pub use extract::{Caller, IfMatch, JsonBody, PageParams, Tagged};

/// Where the admin API lives; every path of the contract starts here.
pub const BASE_PATH: &str = "/admin/v1";
pub const OPENAPI_PATH: &str = "/admin/v1/openapi.json";

/// What the handlers share.
#[derive(Clone, Debug)]
pub struct AdminState {
    pub store: Store,
    pub clock: Arc<dyn Clock>,
    pub random: Arc<dyn RandomSource>,
    /// The auth server's base URL (the issuer), for the links handed out.
    pub auth_url: Arc<str>,
}

impl AdminState {
    pub fn new(
        store: Store,
        clock: Arc<dyn Clock>,
        random: Arc<dyn RandomSource>,
        auth_url: &str,
    ) -> AdminState {
        AdminState {
            store,
            clock,
            random,
            auth_url: Arc::from(auth_url.trim_end_matches('/')),
        }
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "fieldauth admin API",
        description = "Administration of fieldauth's tenants, clients, users, organizations and \
            grants. Every request sends `Authorization: Bearer <admin token>` (made with \
            `fieldauth admin-token create`). Errors are RFC 9457 problem JSON with a stable \
            `type`. Updates accept `If-Match` with the `ETag` of the record as it was read.",
    ),
    modifiers(&BearerToken),
    components(schemas(crate::error::Problem))
)]
struct AdminApi;

struct BearerToken;

impl Modify for BearerToken {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "admin_token",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// Every route of the admin API and their OpenAPI description, before the state is given.
fn routes() -> OpenApiRouter<AdminState> {
    OpenApiRouter::with_openapi(AdminApi::openapi())
        .nest(BASE_PATH, tenants::routes())
        .nest(BASE_PATH, password_links::routes())
        .nest(BASE_PATH, audit::routes())
        .nest(BASE_PATH, organizations::routes())
        .nest(BASE_PATH, grants::routes())
        .nest(BASE_PATH, clients::routes())
        .nest(BASE_PATH, users::routes())
}

/// The admin API's OpenAPI 3.1 document, as served and as kept in `admin-openapi.json`.
pub fn openapi() -> utoipa::openapi::OpenApi {
    problems_as_problem_json(routes().split_for_parts().1)
}

/// Every error response is documented as `application/problem+json`, which is what the API
/// sends (RFC 9457 §3): the handlers' annotations name only the `Problem` body, and this one
/// place gives all of them the right media type.
fn problems_as_problem_json(mut document: utoipa::openapi::OpenApi) -> utoipa::openapi::OpenApi {
    use utoipa::openapi::RefOr;
    for item in document.paths.paths.values_mut() {
        let operations = [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.patch,
        ];
        for operation in operations.into_iter().flatten() {
            for (status, response) in operation.responses.responses.iter_mut() {
                let RefOr::T(response) = response else {
                    continue;
                };
                if !status.starts_with('4') && !status.starts_with('5') {
                    continue;
                }
                if let Some(content) = response.content.shift_remove("application/json") {
                    response
                        .content
                        .insert("application/problem+json".to_owned(), content);
                }
            }
        }
    }
    document
}

/// The admin API's routes, `/admin/v1/openapi.json` included. The caller adds the probes and
/// the layers every listener has.
pub fn router(state: AdminState) -> Router {
    // The document built with the routes is dropped: it is built again, and kept as the
    // JSON it is served as, on its first request, so a server nobody asked for it holds
    // none of it (docs/performance.md, Memory).
    let (router, _) = routes().split_for_parts();
    router
        .route(OPENAPI_PATH, get(serve_openapi))
        .fallback(|| async { crate::AdminError::NotFound("resource").into_response() })
        .with_state(state)
}

async fn serve_openapi() -> axum::response::Response {
    static DOCUMENT: OnceLock<Result<Bytes, String>> = OnceLock::new();
    let document = DOCUMENT.get_or_init(|| {
        serde_json::to_vec(&openapi())
            .map(Bytes::from)
            .map_err(|error| error.to_string())
    });
    match document {
        Ok(json) => (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            json.clone(),
        )
            .into_response(),
        Err(error) => {
            tracing::error!(%error, "cannot serialize the admin API's OpenAPI document");
            crate::AdminError::Internal.into_response()
        }
    }
}
