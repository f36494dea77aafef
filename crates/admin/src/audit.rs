//! Every administrative change is one audit event in the tenant's trail, naming the admin
//! token that made it (its name, never its value), the resource and what changed. Never a
//! password or a secret: callers pass the names of changed fields, not their values, for
//! anything secret.

use store::{NewAuditEvent, TenantStore};

use crate::context::Ctx;
use crate::error::AdminError;

/// One change, as the trail records it: `kind` is `admin.<resource>.<verb>`
/// (`admin.user.disabled`), `subject` the user it concerns, `client_id` the client.
#[derive(Debug, Default)]
pub struct Change<'a> {
    pub kind: &'a str,
    pub subject: Option<&'a str>,
    pub client_id: Option<&'a str>,
    /// The resource and what changed, for people: `organization 1b4e… renamed to "Acme"`.
    pub what: String,
}

/// Records `change` in `tenant`'s trail, by `ctx`'s admin.
pub async fn record(
    ctx: &Ctx<'_>,
    tenant: &TenantStore<'_>,
    change: Change<'_>,
) -> Result<(), AdminError> {
    let detail = format!("by admin token {:?}: {}", ctx.admin.name, change.what);
    tenant
        .record_audit_event(&NewAuditEvent {
            kind: change.kind,
            occurred_at: ctx.now,
            subject: change.subject,
            client_id: change.client_id,
            address: None,
            detail: &detail,
        })
        .await?;
    Ok(())
}
