//! The admin API: JSON under `/admin/v1/`, on its own listener (`--admin-listen`), never on
//! the auth or API listener. Handlers are thin: each reads its input through the extractors
//! here, calls one domain function, and answers its result; every error is RFC 9457 problem
//! JSON. Each resource's module gives its routes with their OpenAPI descriptions, so the
//! document at `/admin/v1/openapi.json` is generated from the handlers themselves.

mod extract;
mod tenants;
mod users;

use std::sync::Arc;

use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
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
        .nest(BASE_PATH, users::routes())
}

/// The admin API's OpenAPI 3.1 document, as served and as kept in `admin-openapi.json`.
pub fn openapi() -> utoipa::openapi::OpenApi {
    routes().split_for_parts().1
}

/// The admin API's routes, `/admin/v1/openapi.json` included. The caller adds the probes and
/// the layers every listener has.
pub fn router(state: AdminState) -> Router {
    let (router, document) = routes().split_for_parts();
    let document = Arc::new(document);
    router
        .route(
            OPENAPI_PATH,
            get(move || {
                let document = Arc::clone(&document);
                async move { Json(document.as_ref().clone()).into_response() }
            }),
        )
        .fallback(|| async { crate::AdminError::NotFound("resource").into_response() })
        .with_state(state)
}
