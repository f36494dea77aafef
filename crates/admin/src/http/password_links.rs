//! `/admin/v1/tenants/{tenant}/users/{sub}/password-link`: issue a password link.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::{AdminError, Problem};
use crate::password_links::{self, PasswordLinkView};

use super::{AdminState, Caller};

pub fn routes() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new().routes(routes!(issue))
}

/// Issues a single-use link where the user sets a password (24 hours); the user's previous
/// link stops working. The URL is shown once: deliver it to the user by your own channel.
#[utoipa::path(post, path = "/tenants/{tenant}/users/{sub}/password-link", tag = "users",
    security(("admin_token" = [])),
    params(("tenant" = String, Path), ("sub" = String, Path)),
    responses(
        (status = 201, body = PasswordLinkView),
        (status = 401, body = Problem), (status = 404, body = Problem),
    ))]
async fn issue(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, sub)): Path<(String, String)>,
) -> Result<(StatusCode, Json<PasswordLinkView>), AdminError> {
    let link = password_links::issue(&caller.ctx(&state), &tenant, &sub).await?;
    Ok((StatusCode::CREATED, Json(link)))
}
