//! `/admin/v1/tenants/{tenant}/users`: create, list and search, get, update, set password,
//! disable, enable, delete, sign out everywhere.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::{AdminError, Problem};
use crate::page::{Page, PageQuery, PageRequest};
use crate::users::{
    self, NewPassword, NewUserRequest, SecondFactorsResetView, SignedOutView, UserChanges, UserView,
};

use super::{AdminState, Caller, IfMatch, JsonBody, PageParams, Tagged};

pub fn routes() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new()
        .routes(routes!(create, list))
        .routes(routes!(get, update, delete))
        .routes(routes!(set_password))
        .routes(routes!(disable))
        .routes(routes!(enable))
        .routes(routes!(sign_out))
        .routes(routes!(reset_second_factors))
}

/// Creates a user, with a password or with none (the user then cannot sign in until one is
/// set).
#[utoipa::path(post, path = "/tenants/{tenant}/users", tag = "users",
    security(("admin_token" = [])), params(("tenant" = String, Path)),
    request_body = NewUserRequest,
    responses(
        (status = 201, body = UserView, headers(("ETag" = String))),
        (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 404, body = Problem), (status = 409, body = Problem),
    ))]
async fn create(
    State(state): State<AdminState>,
    caller: Caller,
    Path(tenant): Path<String>,
    JsonBody(new): JsonBody<NewUserRequest>,
) -> Result<Tagged<UserView>, AdminError> {
    let ctx = caller.ctx(&state);
    Ok(Tagged::created(users::create(&ctx, &tenant, new).await?))
}

/// Lists the tenant's users by username; `q` matches username, name or email.
#[utoipa::path(get, path = "/tenants/{tenant}/users", tag = "users",
    security(("admin_token" = [])), params(("tenant" = String, Path), PageQuery),
    responses(
        (status = 200, body = Page<UserView>),
        (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 404, body = Problem),
    ))]
async fn list(
    State(state): State<AdminState>,
    caller: Caller,
    Path(tenant): Path<String>,
    PageParams(query): PageParams,
) -> Result<Json<Page<UserView>>, AdminError> {
    let request = PageRequest::parse(&query)?;
    let ctx = caller.ctx(&state);
    Ok(Json(users::list(&ctx, &tenant, &request).await?))
}

/// A user.
#[utoipa::path(get, path = "/tenants/{tenant}/users/{sub}", tag = "users",
    security(("admin_token" = [])), params(("tenant" = String, Path), ("sub" = String, Path)),
    responses(
        (status = 200, body = UserView, headers(("ETag" = String))),
        (status = 401, body = Problem), (status = 404, body = Problem),
    ))]
async fn get(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, sub)): Path<(String, String)>,
) -> Result<Tagged<UserView>, AdminError> {
    let ctx = caller.ctx(&state);
    Ok(Tagged::ok(users::get(&ctx, &tenant, &sub).await?))
}

/// Changes a user's username, name or email.
#[utoipa::path(patch, path = "/tenants/{tenant}/users/{sub}", tag = "users",
    security(("admin_token" = [])),
    params(("tenant" = String, Path), ("sub" = String, Path),
        ("If-Match" = Option<String>, Header)),
    request_body = UserChanges,
    responses(
        (status = 200, body = UserView, headers(("ETag" = String))),
        (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 404, body = Problem), (status = 409, body = Problem),
        (status = 412, body = Problem),
    ))]
async fn update(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, sub)): Path<(String, String)>,
    IfMatch(precondition): IfMatch,
    JsonBody(changes): JsonBody<UserChanges>,
) -> Result<Tagged<UserView>, AdminError> {
    let ctx = caller.ctx(&state);
    let updated = users::update(&ctx, &tenant, &sub, &changes, precondition).await?;
    Ok(Tagged::ok(updated))
}

/// Deletes a user: their grants, sessions and memberships go with them.
#[utoipa::path(delete, path = "/tenants/{tenant}/users/{sub}", tag = "users",
    security(("admin_token" = [])), params(("tenant" = String, Path), ("sub" = String, Path)),
    responses(
        (status = 204), (status = 401, body = Problem), (status = 404, body = Problem),
    ))]
async fn delete(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, sub)): Path<(String, String)>,
) -> Result<StatusCode, AdminError> {
    users::delete(&caller.ctx(&state), &tenant, &sub).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Sets a user's password (8 to 256 characters). Their sessions and tokens stay.
#[utoipa::path(put, path = "/tenants/{tenant}/users/{sub}/password", tag = "users",
    security(("admin_token" = [])), params(("tenant" = String, Path), ("sub" = String, Path)),
    request_body = NewPassword,
    responses(
        (status = 204), (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 404, body = Problem),
    ))]
async fn set_password(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, sub)): Path<(String, String)>,
    JsonBody(body): JsonBody<NewPassword>,
) -> Result<StatusCode, AdminError> {
    users::set_password(&caller.ctx(&state), &tenant, &sub, body.password.0).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Disables a user: no sign-in, and every session and token they hold ends at once.
#[utoipa::path(post, path = "/tenants/{tenant}/users/{sub}/disable", tag = "users",
    security(("admin_token" = [])), params(("tenant" = String, Path), ("sub" = String, Path)),
    responses(
        (status = 200, body = UserView, headers(("ETag" = String))),
        (status = 401, body = Problem), (status = 404, body = Problem),
    ))]
async fn disable(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, sub)): Path<(String, String)>,
) -> Result<Tagged<UserView>, AdminError> {
    let ctx = caller.ctx(&state);
    Ok(Tagged::ok(users::disable(&ctx, &tenant, &sub).await?))
}

/// Enables a user again; the tokens ended by the disabling stay ended.
#[utoipa::path(post, path = "/tenants/{tenant}/users/{sub}/enable", tag = "users",
    security(("admin_token" = [])), params(("tenant" = String, Path), ("sub" = String, Path)),
    responses(
        (status = 200, body = UserView, headers(("ETag" = String))),
        (status = 401, body = Problem), (status = 404, body = Problem),
    ))]
async fn enable(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, sub)): Path<(String, String)>,
) -> Result<Tagged<UserView>, AdminError> {
    let ctx = caller.ctx(&state);
    Ok(Tagged::ok(users::enable(&ctx, &tenant, &sub).await?))
}

/// Signs a user out everywhere: every browser session ends and every grant is revoked.
#[utoipa::path(post, path = "/tenants/{tenant}/users/{sub}/sign-out", tag = "users",
    security(("admin_token" = [])), params(("tenant" = String, Path), ("sub" = String, Path)),
    responses(
        (status = 200, body = SignedOutView),
        (status = 401, body = Problem), (status = 404, body = Problem),
    ))]
async fn sign_out(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, sub)): Path<(String, String)>,
) -> Result<Json<SignedOutView>, AdminError> {
    let ctx = caller.ctx(&state);
    Ok(Json(users::sign_out(&ctx, &tenant, &sub).await?))
}

/// Removes every second factor of a user (authenticator app, recovery codes, passkeys), for
/// a lost device; they enroll again at their next sign-in if the tenant requires one.
#[utoipa::path(post, path = "/tenants/{tenant}/users/{sub}/reset-second-factors", tag = "users",
    security(("admin_token" = [])), params(("tenant" = String, Path), ("sub" = String, Path)),
    responses(
        (status = 200, body = SecondFactorsResetView),
        (status = 401, body = Problem), (status = 404, body = Problem),
    ))]
async fn reset_second_factors(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, sub)): Path<(String, String)>,
) -> Result<Json<SecondFactorsResetView>, AdminError> {
    let ctx = caller.ctx(&state);
    Ok(Json(
        users::reset_second_factors(&ctx, &tenant, &sub).await?,
    ))
}
