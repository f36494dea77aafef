//! `/admin/v1/tenants/{tenant}/grants` and `…/users/{sub}/grants`: list by user or client,
//! revoke one.

use axum::extract::{FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::Json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::{AdminError, Problem};
use crate::grants::{self, GrantFilter, GrantView};
use crate::page::{Page, PageQuery, PageRequest};

use super::{AdminState, Caller, PageParams};

pub fn routes() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(of_user))
        .routes(routes!(revoke))
}

/// `?client_id=` / `?sub=`, a malformed query answered as our problem JSON.
struct Filter(GrantFilter);

impl<S: Send + Sync> FromRequestParts<S> for Filter {
    type Rejection = AdminError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Filter, AdminError> {
        match Query::<GrantFilter>::from_request_parts(parts, state).await {
            Ok(Query(filter)) => Ok(Filter(filter)),
            Err(rejection) => Err(AdminError::Invalid(rejection.body_text())),
        }
    }
}

/// The grants of a client (`client_id`) or of a user (`sub`), newest first.
#[utoipa::path(get, path = "/tenants/{tenant}/grants", tag = "grants",
    security(("admin_token" = [])),
    params(("tenant" = String, Path), GrantFilter, PageQuery),
    responses(
        (status = 200, body = Page<GrantView>),
        (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 404, body = Problem),
    ))]
async fn list(
    State(state): State<AdminState>,
    caller: Caller,
    Path(tenant): Path<String>,
    Filter(filter): Filter,
    PageParams(query): PageParams,
) -> Result<Json<Page<GrantView>>, AdminError> {
    let request = PageRequest::parse(&query)?;
    let ctx = caller.ctx(&state);
    Ok(Json(grants::list(&ctx, &tenant, &filter, &request).await?))
}

/// A user's grants, newest first.
#[utoipa::path(get, path = "/tenants/{tenant}/users/{sub}/grants", tag = "grants",
    security(("admin_token" = [])),
    params(("tenant" = String, Path), ("sub" = String, Path), PageQuery),
    responses(
        (status = 200, body = Page<GrantView>),
        (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 404, body = Problem),
    ))]
async fn of_user(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, sub)): Path<(String, String)>,
    PageParams(query): PageParams,
) -> Result<Json<Page<GrantView>>, AdminError> {
    let request = PageRequest::parse(&query)?;
    let filter = GrantFilter {
        sub: Some(sub),
        client_id: None,
    };
    let ctx = caller.ctx(&state);
    Ok(Json(grants::list(&ctx, &tenant, &filter, &request).await?))
}

/// Revokes a grant: every token it issued stops working.
#[utoipa::path(delete, path = "/tenants/{tenant}/grants/{grant_id}", tag = "grants",
    security(("admin_token" = [])),
    params(("tenant" = String, Path), ("grant_id" = String, Path)),
    responses(
        (status = 204), (status = 401, body = Problem), (status = 404, body = Problem),
    ))]
async fn revoke(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, grant_id)): Path<(String, String)>,
) -> Result<StatusCode, AdminError> {
    grants::revoke(&caller.ctx(&state), &tenant, &grant_id).await?;
    Ok(StatusCode::NO_CONTENT)
}
