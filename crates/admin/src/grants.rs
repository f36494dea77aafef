//! Grants (what a user consented to, for one client and one organization): listed by user or
//! by client, newest first, and revoked one at a time. Revoking a grant ends every token it
//! issued: its refresh tokens are `invalid_grant`, its access tokens 401 at userinfo and the
//! API, on every node at once.

use serde::{Deserialize, Serialize};
use store::{GrantSummary, GrantsOf};
use utoipa::{IntoParams, ToSchema};

use crate::audit::{self, Change};
use crate::context::Ctx;
use crate::error::AdminError;
use crate::page::{Page, PageRequest};

/// A grant as the admin API shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct GrantView {
    pub grant_id: String,
    pub client_id: String,
    pub sub: String,
    pub organization_guid: String,
    pub scopes: Vec<String>,
    /// Unix seconds: the code exchange that made it.
    pub created_at: i64,
    /// When its newest refresh token was issued (at the code exchange, then at each
    /// refresh); absent for a grant without refresh tokens.
    pub last_refreshed_at: Option<i64>,
    pub revoked: bool,
}

impl From<GrantSummary> for GrantView {
    fn from(g: GrantSummary) -> GrantView {
        GrantView {
            grant_id: g.grant_id,
            client_id: g.client_id,
            sub: g.user_id,
            organization_guid: g.organization_guid,
            scopes: g.scope.split_whitespace().map(str::to_owned).collect(),
            created_at: g.created_at,
            last_refreshed_at: g.last_refreshed_at,
            revoked: g.revoked_at.is_some(),
        }
    }
}

/// `GET /tenants/{tenant}/grants`: exactly one of the two.
#[derive(Clone, Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct GrantFilter {
    /// The grants of this client.
    pub client_id: Option<String>,
    /// The grants of this user.
    pub sub: Option<String>,
}

/// The cursor of a grants' page: the last grant's (created_at, grant_id).
pub type GrantKey = (i64, String);

/// The grants of a user or a client (as `filter` says), newest first.
pub async fn list(
    ctx: &Ctx<'_>,
    tenant: &str,
    filter: &GrantFilter,
    request: &PageRequest<GrantKey>,
) -> Result<Page<GrantView>, AdminError> {
    let id = ctx.tenant(tenant).await?;
    let records = ctx.records(&id);
    let of = match (filter.sub.as_deref(), filter.client_id.as_deref()) {
        (Some(sub), None) => {
            if records.find_user(sub).await?.is_none() {
                return Err(AdminError::NotFound("user"));
            }
            GrantsOf::User(sub)
        }
        (None, Some(client_id)) => {
            if records.find_client(client_id).await?.is_none() {
                return Err(AdminError::NotFound("client"));
            }
            GrantsOf::Client(client_id)
        }
        _ => {
            return Err(AdminError::Invalid(
                "sub, client_id: give exactly one of the two".to_owned(),
            ))
        }
    };
    let after = request.after.as_ref().map(|(t, id)| (*t, id.as_str()));
    let rows = records.list_grants(of, after, request.fetch()).await?;
    Ok(Page::from_rows(
        rows,
        request,
        |g| (g.created_at, g.grant_id.clone()),
        GrantView::from,
    ))
}

/// Revokes one grant; a grant revoked already stays so, without a second event.
pub async fn revoke(ctx: &Ctx<'_>, tenant: &str, grant_id: &str) -> Result<(), AdminError> {
    let id = ctx.tenant(tenant).await?;
    let records = ctx.records(&id);
    let grant = records
        .find_grant(grant_id)
        .await?
        .ok_or(AdminError::NotFound("grant"))?;
    if !records
        .revoke_grant(grant_id, "revoked by admin", ctx.now)
        .await?
    {
        return Ok(());
    }
    audit::record(
        ctx,
        &records,
        Change {
            kind: "admin.grant.revoked",
            subject: Some(&grant.user_id),
            client_id: Some(&grant.client_id),
            what: format!("grant {grant_id} revoked"),
        },
    )
    .await
}
