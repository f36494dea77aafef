//! `/admin/v1/tenants/{tenant}/audit`: the tenant's audit trail, newest first.

use axum::extract::{FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::Json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::audit_trail::{self, AuditEventView, AuditQuery, AuditRequest};
use crate::error::{AdminError, Problem};
use crate::page::Page;

use super::{AdminState, Caller};

pub fn routes() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new().routes(routes!(list))
}

/// The audit list's query; a malformed one is `400 invalid-input` naming the field.
#[derive(Debug)]
struct AuditParams(AuditQuery);

impl<S: Send + Sync> FromRequestParts<S> for AuditParams {
    type Rejection = AdminError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<AuditParams, AdminError> {
        match Query::<AuditQuery>::from_request_parts(parts, state).await {
            Ok(Query(query)) => Ok(AuditParams(query)),
            Err(rejection) => Err(AdminError::Invalid(rejection.body_text())),
        }
    }
}

/// The tenant's audit trail, newest first: sign-ins, consents, revoked grants and every
/// admin change, filtered by `kind` and by time (`since` inclusive, `until` exclusive).
#[utoipa::path(get, path = "/tenants/{tenant}/audit", tag = "audit",
    security(("admin_token" = [])),
    params(("tenant" = String, Path), AuditQuery),
    responses(
        (status = 200, body = Page<AuditEventView>),
        (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 404, body = Problem),
    ))]
async fn list(
    State(state): State<AdminState>,
    caller: Caller,
    Path(tenant): Path<String>,
    AuditParams(query): AuditParams,
) -> Result<Json<Page<AuditEventView>>, AdminError> {
    let request = AuditRequest::parse(&query)?;
    Ok(Json(
        audit_trail::list(&caller.ctx(&state), &tenant, &request).await?,
    ))
}
