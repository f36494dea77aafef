//! `/admin/v1/tenants/{tenant}/organizations`: create, list, get, rename, delete; members
//! list, add, remove.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::{AdminError, Problem};
use crate::organizations::{self, Added, MemberView, OrganizationName, OrganizationView};
use crate::page::{Page, PageQuery, PageRequest};

use super::{AdminState, Caller, IfMatch, JsonBody, PageParams, Tagged};

pub fn routes() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new()
        .routes(routes!(create, list))
        .routes(routes!(get, rename, delete))
        .routes(routes!(members))
        .routes(routes!(add_member, remove_member))
}

/// Creates an organization; its `organization_guid` is generated.
#[utoipa::path(post, path = "/tenants/{tenant}/organizations", tag = "organizations",
    security(("admin_token" = [])),
    params(("tenant" = String, Path)),
    request_body = OrganizationName,
    responses(
        (status = 201, body = OrganizationView, headers(("ETag" = String))),
        (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 404, body = Problem),
    ))]
async fn create(
    State(state): State<AdminState>,
    caller: Caller,
    Path(tenant): Path<String>,
    JsonBody(new): JsonBody<OrganizationName>,
) -> Result<Tagged<OrganizationView>, AdminError> {
    let ctx = caller.ctx(&state);
    Ok(Tagged::created(
        organizations::create(&ctx, &tenant, &new).await?,
    ))
}

/// Lists the tenant's organizations by name; `q` searches the name.
#[utoipa::path(get, path = "/tenants/{tenant}/organizations", tag = "organizations",
    security(("admin_token" = [])),
    params(("tenant" = String, Path), PageQuery),
    responses(
        (status = 200, body = Page<OrganizationView>),
        (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 404, body = Problem),
    ))]
async fn list(
    State(state): State<AdminState>,
    caller: Caller,
    Path(tenant): Path<String>,
    PageParams(query): PageParams,
) -> Result<Json<Page<OrganizationView>>, AdminError> {
    let request = PageRequest::parse(&query)?;
    let ctx = caller.ctx(&state);
    Ok(Json(organizations::list(&ctx, &tenant, &request).await?))
}

/// An organization.
#[utoipa::path(get, path = "/tenants/{tenant}/organizations/{guid}", tag = "organizations",
    security(("admin_token" = [])),
    params(("tenant" = String, Path), ("guid" = String, Path)),
    responses(
        (status = 200, body = OrganizationView, headers(("ETag" = String))),
        (status = 401, body = Problem), (status = 404, body = Problem),
    ))]
async fn get(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, guid)): Path<(String, String)>,
) -> Result<Tagged<OrganizationView>, AdminError> {
    let ctx = caller.ctx(&state);
    Ok(Tagged::ok(organizations::get(&ctx, &tenant, &guid).await?))
}

/// Renames an organization.
#[utoipa::path(patch, path = "/tenants/{tenant}/organizations/{guid}", tag = "organizations",
    security(("admin_token" = [])),
    params(("tenant" = String, Path), ("guid" = String, Path),
        ("If-Match" = Option<String>, Header)),
    request_body = OrganizationName,
    responses(
        (status = 200, body = OrganizationView, headers(("ETag" = String))),
        (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 404, body = Problem), (status = 412, body = Problem),
    ))]
async fn rename(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, guid)): Path<(String, String)>,
    IfMatch(precondition): IfMatch,
    JsonBody(changes): JsonBody<OrganizationName>,
) -> Result<Tagged<OrganizationView>, AdminError> {
    let ctx = caller.ctx(&state);
    Ok(Tagged::ok(
        organizations::rename(&ctx, &tenant, &guid, &changes, precondition).await?,
    ))
}

/// Deletes an organization, its memberships and field-service records; revokes its grants.
#[utoipa::path(delete, path = "/tenants/{tenant}/organizations/{guid}", tag = "organizations",
    security(("admin_token" = [])),
    params(("tenant" = String, Path), ("guid" = String, Path)),
    responses(
        (status = 204), (status = 401, body = Problem), (status = 404, body = Problem),
    ))]
async fn delete(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, guid)): Path<(String, String)>,
) -> Result<StatusCode, AdminError> {
    organizations::delete(&caller.ctx(&state), &tenant, &guid).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The organization's members, by username.
#[utoipa::path(get, path = "/tenants/{tenant}/organizations/{guid}/members",
    tag = "organizations", security(("admin_token" = [])),
    params(("tenant" = String, Path), ("guid" = String, Path), PageQuery),
    responses(
        (status = 200, body = Page<MemberView>),
        (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 404, body = Problem),
    ))]
async fn members(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, guid)): Path<(String, String)>,
    PageParams(query): PageParams,
) -> Result<Json<Page<MemberView>>, AdminError> {
    let request = PageRequest::parse(&query)?;
    let ctx = caller.ctx(&state);
    Ok(Json(
        organizations::members(&ctx, &tenant, &guid, &request).await?,
    ))
}

/// Makes a user a member: 204 when added, 200 when they were a member already.
#[utoipa::path(put, path = "/tenants/{tenant}/organizations/{guid}/members/{sub}",
    tag = "organizations", security(("admin_token" = [])),
    params(("tenant" = String, Path), ("guid" = String, Path), ("sub" = String, Path)),
    responses(
        (status = 204), (status = 200),
        (status = 401, body = Problem), (status = 404, body = Problem),
    ))]
async fn add_member(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, guid, sub)): Path<(String, String, String)>,
) -> Result<StatusCode, AdminError> {
    let ctx = caller.ctx(&state);
    Ok(
        match organizations::add_member(&ctx, &tenant, &guid, &sub).await? {
            Added::Added => StatusCode::NO_CONTENT,
            Added::AlreadyMember => StatusCode::OK,
        },
    )
}

/// Ends a membership and revokes the user's grants bound to the organization.
#[utoipa::path(delete, path = "/tenants/{tenant}/organizations/{guid}/members/{sub}",
    tag = "organizations", security(("admin_token" = [])),
    params(("tenant" = String, Path), ("guid" = String, Path), ("sub" = String, Path)),
    responses(
        (status = 204), (status = 401, body = Problem), (status = 404, body = Problem),
    ))]
async fn remove_member(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, guid, sub)): Path<(String, String, String)>,
) -> Result<StatusCode, AdminError> {
    let ctx = caller.ctx(&state);
    organizations::remove_member(&ctx, &tenant, &guid, &sub).await?;
    Ok(StatusCode::NO_CONTENT)
}
