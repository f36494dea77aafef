//! `/admin/v1/tenants/{tenant}/clients`: register, list, read, change, rotate the secret,
//! disable, enable, delete.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::clients::SecretRotation;
use crate::clients::{self, ClientPatch, ClientView, ClientWithSecret, NewClientRequest};
use crate::error::{AdminError, Problem};
use crate::page::{Page, PageQuery, PageRequest};

use super::{AdminState, Caller, IfMatch, JsonBody, PageParams, Tagged};

pub fn routes() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new()
        .routes(routes!(create, list))
        .routes(routes!(get, update, delete))
        .routes(routes!(rotate_secret))
        .routes(routes!(disable))
        .routes(routes!(enable))
}

/// Registers a client. A confidential client's `client_secret` is in this answer only.
#[utoipa::path(post, path = "/tenants/{tenant}/clients", tag = "clients",
    security(("admin_token" = [])), params(("tenant" = String, Path)),
    request_body = NewClientRequest,
    responses(
        (status = 201, body = ClientWithSecret, headers(("ETag" = String))),
        (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 404, body = Problem), (status = 409, body = Problem),
    ))]
async fn create(
    State(state): State<AdminState>,
    caller: Caller,
    Path(tenant): Path<String>,
    JsonBody(new): JsonBody<NewClientRequest>,
) -> Result<Tagged<ClientWithSecret>, AdminError> {
    let ctx = caller.ctx(&state);
    Ok(Tagged::created(clients::create(&ctx, &tenant, &new).await?))
}

/// Lists the tenant's clients by client id; `q` matches the id or the name.
#[utoipa::path(get, path = "/tenants/{tenant}/clients", tag = "clients",
    security(("admin_token" = [])), params(("tenant" = String, Path), PageQuery),
    responses(
        (status = 200, body = Page<ClientView>),
        (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 404, body = Problem),
    ))]
async fn list(
    State(state): State<AdminState>,
    caller: Caller,
    Path(tenant): Path<String>,
    PageParams(query): PageParams,
) -> Result<Json<Page<ClientView>>, AdminError> {
    let request = PageRequest::parse(&query)?;
    Ok(Json(
        clients::list(&caller.ctx(&state), &tenant, &request).await?,
    ))
}

/// A client.
#[utoipa::path(get, path = "/tenants/{tenant}/clients/{client_id}", tag = "clients",
    security(("admin_token" = [])),
    params(("tenant" = String, Path), ("client_id" = String, Path)),
    responses(
        (status = 200, body = ClientView, headers(("ETag" = String))),
        (status = 401, body = Problem), (status = 404, body = Problem),
    ))]
async fn get(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, client_id)): Path<(String, String)>,
) -> Result<Tagged<ClientView>, AdminError> {
    let ctx = caller.ctx(&state);
    Ok(Tagged::ok(clients::get(&ctx, &tenant, &client_id).await?))
}

/// Replaces the client's name, redirect URIs or allowed scopes (those given).
#[utoipa::path(patch, path = "/tenants/{tenant}/clients/{client_id}", tag = "clients",
    security(("admin_token" = [])),
    params(("tenant" = String, Path), ("client_id" = String, Path),
        ("If-Match" = Option<String>, Header)),
    request_body = ClientPatch,
    responses(
        (status = 200, body = ClientView, headers(("ETag" = String))),
        (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 404, body = Problem), (status = 412, body = Problem),
    ))]
async fn update(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, client_id)): Path<(String, String)>,
    IfMatch(precondition): IfMatch,
    JsonBody(patch): JsonBody<ClientPatch>,
) -> Result<Tagged<ClientView>, AdminError> {
    let ctx = caller.ctx(&state);
    let updated = clients::update(&ctx, &tenant, &client_id, &patch, precondition).await?;
    Ok(Tagged::ok(updated))
}

/// Deletes the client with its grants (and so their tokens), codes and pending requests.
#[utoipa::path(delete, path = "/tenants/{tenant}/clients/{client_id}", tag = "clients",
    security(("admin_token" = [])),
    params(("tenant" = String, Path), ("client_id" = String, Path)),
    responses(
        (status = 204), (status = 401, body = Problem), (status = 404, body = Problem),
    ))]
async fn delete(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, client_id)): Path<(String, String)>,
) -> Result<StatusCode, AdminError> {
    clients::delete(&caller.ctx(&state), &tenant, &client_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Gives a confidential client a new secret, in this answer only. With `grace_seconds` the
/// previous secret is accepted that long; without, it stops at once.
#[utoipa::path(post, path = "/tenants/{tenant}/clients/{client_id}/secret", tag = "clients",
    security(("admin_token" = [])),
    params(("tenant" = String, Path), ("client_id" = String, Path)),
    request_body(content = Option<SecretRotation>),
    responses(
        (status = 200, body = ClientWithSecret, headers(("ETag" = String))),
        (status = 400, body = Problem), (status = 401, body = Problem),
        (status = 404, body = Problem), (status = 409, body = Problem),
    ))]
async fn rotate_secret(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, client_id)): Path<(String, String)>,
    body: axum::body::Bytes,
) -> Result<Tagged<ClientWithSecret>, AdminError> {
    let rotation = optional_body(&body)?;
    let ctx = caller.ctx(&state);
    let rotated = clients::rotate_secret(&ctx, &tenant, &client_id, &rotation).await?;
    Ok(Tagged::ok(rotated))
}

/// Disables the client and revokes every live grant of it: it is refused at authorize,
/// token and revocation as an unknown client until enabled.
#[utoipa::path(post, path = "/tenants/{tenant}/clients/{client_id}/disable", tag = "clients",
    security(("admin_token" = [])),
    params(("tenant" = String, Path), ("client_id" = String, Path)),
    responses(
        (status = 200, body = ClientView, headers(("ETag" = String))),
        (status = 401, body = Problem), (status = 404, body = Problem),
    ))]
async fn disable(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, client_id)): Path<(String, String)>,
) -> Result<Tagged<ClientView>, AdminError> {
    let ctx = caller.ctx(&state);
    Ok(Tagged::ok(
        clients::disable(&ctx, &tenant, &client_id).await?,
    ))
}

/// Enables the client again; the grants disabling revoked stay revoked.
#[utoipa::path(post, path = "/tenants/{tenant}/clients/{client_id}/enable", tag = "clients",
    security(("admin_token" = [])),
    params(("tenant" = String, Path), ("client_id" = String, Path)),
    responses(
        (status = 200, body = ClientView, headers(("ETag" = String))),
        (status = 401, body = Problem), (status = 404, body = Problem),
    ))]
async fn enable(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, client_id)): Path<(String, String)>,
) -> Result<Tagged<ClientView>, AdminError> {
    let ctx = caller.ctx(&state);
    Ok(Tagged::ok(
        clients::enable(&ctx, &tenant, &client_id).await?,
    ))
}

/// The rotation's body is optional: none at all (or only whitespace) is no grace.
fn optional_body(body: &[u8]) -> Result<SecretRotation, AdminError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(SecretRotation::default());
    }
    serde_json::from_slice(body).map_err(|e| AdminError::Invalid(format!("body: {e}")))
}
