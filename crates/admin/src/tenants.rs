//! Tenants: created and deleted only by an admin token of every tenant; read and changed
//! (name, password policy, second-factor policy) by their own tenant's tokens too.

use serde::{Deserialize, Serialize};
use store::{MfaPolicy, Revision, Tenant, TenantId, TenantUpdate};
use utoipa::ToSchema;

use crate::audit::{self, Change};
use crate::context::{about, Ctx};
use crate::error::AdminError;
use crate::etag::Precondition;
use crate::page::{Page, PageRequest};
use crate::text::display_name;
use crate::versioned::Versioned;

/// A tenant as the admin API shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TenantView {
    /// The tenant id: 1 to 63 of `[a-z0-9-]`.
    pub tenant: String,
    pub name: String,
    /// Unix seconds.
    pub created_at: i64,
    /// The fewest characters a new password of its users may have (NIST SP 800-63B
    /// §5.1.1.2): 8 to 64, 10 unless changed.
    #[schema(minimum = 8, maximum = 64)]
    pub password_min_length: i64,
    pub mfa_policy: MfaPolicyView,
}

/// The tenant's second-factor policy: `off` (none offered or asked), `optional` (users may
/// enroll one, and are then always asked for it; the default), `required` (a user without
/// one enrolls one right after the password, before any consent).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum MfaPolicyView {
    Off,
    Optional,
    Required,
}

impl From<MfaPolicy> for MfaPolicyView {
    fn from(policy: MfaPolicy) -> MfaPolicyView {
        match policy {
            MfaPolicy::Off => MfaPolicyView::Off,
            MfaPolicy::Optional => MfaPolicyView::Optional,
            MfaPolicy::Required => MfaPolicyView::Required,
        }
    }
}

impl From<MfaPolicyView> for MfaPolicy {
    fn from(policy: MfaPolicyView) -> MfaPolicy {
        match policy {
            MfaPolicyView::Off => MfaPolicy::Off,
            MfaPolicyView::Optional => MfaPolicy::Optional,
            MfaPolicyView::Required => MfaPolicy::Required,
        }
    }
}

impl From<&Tenant> for TenantView {
    fn from(tenant: &Tenant) -> TenantView {
        TenantView {
            tenant: tenant.tenant_id.as_str().to_owned(),
            name: tenant.name.clone(),
            created_at: tenant.created_at,
            password_min_length: tenant.password_min_length,
            mfa_policy: tenant.mfa_policy.into(),
        }
    }
}

/// `POST /admin/v1/tenants`.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewTenant {
    pub tenant: String,
    /// Defaults to the id.
    pub name: Option<String>,
}

/// `PATCH /admin/v1/tenants/{tenant}`: what is given changes, the rest stays.
#[derive(Clone, Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TenantChanges {
    pub name: Option<String>,
    /// 8 to 64. Applies to passwords set from now on; existing ones stay valid.
    #[schema(minimum = 8, maximum = 64)]
    pub password_min_length: Option<i64>,
    /// Applies from the next sign-in; sessions already signed in stay.
    pub mfa_policy: Option<MfaPolicyView>,
}

pub async fn create(ctx: &Ctx<'_>, new: &NewTenant) -> Result<Versioned<TenantView>, AdminError> {
    ctx.require_every_tenant("create tenants")?;
    let id =
        TenantId::parse(&new.tenant).map_err(|e| AdminError::Invalid(format!("tenant: {e}")))?;
    let name = display_name(new.name.as_deref().unwrap_or(&new.tenant), "name")?;
    let tenant = ctx
        .store
        .create_tenant(&id, name, ctx.now)
        .await
        .map_err(about("tenant"))?;
    let records = ctx.records(&id);
    audit::record(
        ctx,
        &records,
        Change {
            kind: "admin.tenant.created",
            what: format!("tenant {id} created, named {name:?}"),
            ..Change::default()
        },
    )
    .await?;
    Ok(Versioned {
        value: TenantView::from(&tenant),
        revision: Revision {
            created_at: tenant.created_at,
            revision: 1,
        },
    })
}

/// Every tenant for an admin of every tenant; its own for a tenant's admin. By id.
pub async fn list(
    ctx: &Ctx<'_>,
    request: &PageRequest<String>,
) -> Result<Page<TenantView>, AdminError> {
    let tenants = ctx.store.list_tenants().await?;
    let rows: Vec<Tenant> = tenants
        .into_iter()
        .filter(|t| ctx.admin.may_administer(&t.tenant_id))
        .filter(|t| {
            request
                .after
                .as_deref()
                .is_none_or(|after| t.tenant_id.as_str() > after)
        })
        .filter(|t| {
            request.search.as_deref().is_none_or(|q| {
                t.tenant_id.as_str().contains(q) || t.name.to_lowercase().contains(q)
            })
        })
        .take(request.limit as usize + 1)
        .collect();
    Ok(Page::from_rows(
        rows,
        request,
        |t| t.tenant_id.as_str().to_owned(),
        |t| TenantView::from(&t),
    ))
}

pub async fn get(ctx: &Ctx<'_>, tenant: &str) -> Result<Versioned<TenantView>, AdminError> {
    let id = ctx.tenant(tenant).await?;
    let (tenant, revision) = ctx
        .records(&id)
        .find_with_revision()
        .await?
        .ok_or(AdminError::NotFound("tenant"))?;
    Ok(Versioned {
        value: TenantView::from(&tenant),
        revision,
    })
}

/// Renames the tenant and sets its password policy, each when given, in one update.
pub async fn update(
    ctx: &Ctx<'_>,
    tenant: &str,
    changes: &TenantChanges,
    precondition: Precondition,
) -> Result<Versioned<TenantView>, AdminError> {
    let id = ctx.tenant(tenant).await?;
    let name = changes
        .name
        .as_deref()
        .map(|name| display_name(name, "name"))
        .transpose()?;
    let min_length = changes.password_min_length;
    if let Some(length) = min_length {
        let range = oauth::password_policy::MIN_LENGTH_RANGE;
        if !u16::try_from(length).is_ok_and(|l| range.contains(&l)) {
            return Err(AdminError::Invalid(format!(
                "password_min_length: must be from {} to {}",
                range.start(),
                range.end()
            )));
        }
    }
    let mfa_policy = changes.mfa_policy.map(MfaPolicy::from);
    if name.is_none() && min_length.is_none() && mfa_policy.is_none() {
        return Err(AdminError::Invalid(
            "name, password_min_length, mfa_policy: give at least one".to_owned(),
        ));
    }
    let records = ctx.records(&id);
    let update = TenantUpdate {
        name,
        password_min_length: min_length,
        mfa_policy,
    };
    records
        .update_tenant(&update, precondition.expected())
        .await
        .map_err(about("tenant"))?;
    if let Some(name) = name {
        let what = format!("tenant {id} renamed to {name:?}");
        record(ctx, &records, "admin.tenant.renamed", what).await?;
    }
    if let Some(length) = min_length {
        let what = format!("tenant {id}: passwords need at least {length} characters");
        record(ctx, &records, "admin.tenant.password_policy_changed", what).await?;
    }
    if let Some(policy) = mfa_policy {
        let what = format!("tenant {id}: second factor {}", policy.as_str());
        record(ctx, &records, "admin.tenant.mfa_policy_changed", what).await?;
    }
    get(ctx, tenant).await
}

async fn record(
    ctx: &Ctx<'_>,
    records: &store::TenantStore<'_>,
    kind: &str,
    what: String,
) -> Result<(), AdminError> {
    let change = Change {
        kind,
        what,
        ..Change::default()
    };
    audit::record(ctx, records, change).await
}

/// Deletes the tenant and every row it has on its shard (admin tokens of every tenant only):
/// its codes, grants and refresh tokens go with it, so none of its tokens works afterwards.
/// The admin tokens limited to it are revoked first, so a tenant later created under the
/// same id is not open to them. Its audit trail keeps only the event of its deletion.
pub async fn delete(ctx: &Ctx<'_>, tenant: &str) -> Result<(), AdminError> {
    ctx.require_every_tenant("delete tenants")?;
    let id = ctx.tenant(tenant).await?;
    let tokens = ctx.store.revoke_admin_tokens_of(&id, ctx.now).await?;
    let records = ctx.records(&id);
    records.delete_tenant().await.map_err(about("tenant"))?;
    audit::record(
        ctx,
        &records,
        Change {
            kind: "admin.tenant.deleted",
            what: format!(
                "tenant {id} deleted with all its records; {tokens} admin token(s) of it revoked"
            ),
            ..Change::default()
        },
    )
    .await
}
