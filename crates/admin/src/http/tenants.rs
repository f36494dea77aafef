//! `/admin/v1/tenants`: create, list, get, update (name, password policy), delete.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::{AdminError, Problem};
use crate::page::{Page, PageQuery, PageRequest};
use crate::tenants::{self, NewTenant, TenantChanges, TenantView};

use super::{AdminState, Caller, IfMatch, JsonBody, PageParams, Tagged};

pub fn routes() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new()
        .routes(routes!(create, list))
        .routes(routes!(get, update, delete))
}

/// Creates a tenant (admin tokens of every tenant only).
#[utoipa::path(post, path = "/tenants", tag = "tenants", security(("admin_token" = [])),
    request_body = NewTenant,
    responses(
        (status = 201, body = TenantView, headers(("ETag" = String))),
        (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 403, body = Problem), (status = 409, body = Problem),
    ))]
async fn create(
    State(state): State<AdminState>,
    caller: Caller,
    JsonBody(new): JsonBody<NewTenant>,
) -> Result<Tagged<TenantView>, AdminError> {
    Ok(Tagged::created(
        tenants::create(&caller.ctx(&state), &new).await?,
    ))
}

/// Lists the tenants the token may see, by id.
#[utoipa::path(get, path = "/tenants", tag = "tenants", security(("admin_token" = [])),
    params(PageQuery),
    responses(
        (status = 200, body = Page<TenantView>),
        (status = 400, body = Problem), (status = 401, body = Problem),
    ))]
async fn list(
    State(state): State<AdminState>,
    caller: Caller,
    PageParams(query): PageParams,
) -> Result<Json<Page<TenantView>>, AdminError> {
    let request = PageRequest::parse(&query)?;
    Ok(Json(tenants::list(&caller.ctx(&state), &request).await?))
}

/// A tenant.
#[utoipa::path(get, path = "/tenants/{tenant}", tag = "tenants", security(("admin_token" = [])),
    params(("tenant" = String, Path)),
    responses(
        (status = 200, body = TenantView, headers(("ETag" = String))),
        (status = 401, body = Problem), (status = 404, body = Problem),
    ))]
async fn get(
    State(state): State<AdminState>,
    caller: Caller,
    Path(tenant): Path<String>,
) -> Result<Tagged<TenantView>, AdminError> {
    Ok(Tagged::ok(
        tenants::get(&caller.ctx(&state), &tenant).await?,
    ))
}

/// Renames a tenant or changes its password policy.
#[utoipa::path(patch, path = "/tenants/{tenant}", tag = "tenants", security(("admin_token" = [])),
    params(("tenant" = String, Path), ("If-Match" = Option<String>, Header)),
    request_body = TenantChanges,
    responses(
        (status = 200, body = TenantView, headers(("ETag" = String))),
        (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 404, body = Problem), (status = 412, body = Problem),
    ))]
async fn update(
    State(state): State<AdminState>,
    caller: Caller,
    Path(tenant): Path<String>,
    IfMatch(precondition): IfMatch,
    JsonBody(changes): JsonBody<TenantChanges>,
) -> Result<Tagged<TenantView>, AdminError> {
    let ctx = caller.ctx(&state);
    Ok(Tagged::ok(
        tenants::update(&ctx, &tenant, &changes, precondition).await?,
    ))
}

/// Deletes a tenant and every record it has (admin tokens of every tenant only); revokes the
/// admin tokens limited to it.
#[utoipa::path(delete, path = "/tenants/{tenant}", tag = "tenants", security(("admin_token" = [])),
    params(("tenant" = String, Path)),
    responses(
        (status = 204), (status = 401, body = Problem),
        (status = 403, body = Problem), (status = 404, body = Problem),
    ))]
async fn delete(
    State(state): State<AdminState>,
    caller: Caller,
    Path(tenant): Path<String>,
) -> Result<StatusCode, AdminError> {
    tenants::delete(&caller.ctx(&state), &tenant).await?;
    Ok(StatusCode::NO_CONTENT)
}
