//! The administration of a tenant's own record: read with its revision, changed under a
//! precondition.

use crate::error::{Entity, StoreError};
use crate::revision::{expected_values, matches_revision, Revision};
use crate::tenant::TenantStore;
use crate::tenants::{MfaPolicy, Tenant};

/// What a tenant update changes; `None` keeps the value.
#[derive(Clone, Copy, Debug, Default)]
pub struct TenantUpdate<'a> {
    pub name: Option<&'a str>,
    pub password_min_length: Option<i64>,
    pub mfa_policy: Option<MfaPolicy>,
}

impl TenantStore<'_> {
    /// The tenant's record and its revision.
    pub async fn find_with_revision(&self) -> Result<Option<(Tenant, Revision)>, StoreError> {
        let row: Option<(String, String, i64, i64, String, i64)> = sqlx::query_as(&format!(
            "SELECT {}, revision FROM tenants WHERE tenant_id = $1",
            Tenant::COLUMNS
        ))
        .bind(self.id_str())
        .fetch_optional(self.pool())
        .await?;
        row.map(|(id, name, created_at, min_length, mfa_policy, revision)| {
            let tenant = Tenant::from_row((id, name, created_at, min_length, mfa_policy))?;
            Ok((
                tenant,
                Revision {
                    created_at,
                    revision,
                },
            ))
        })
        .transpose()
    }

    /// Changes the tenant's name, password floor and second-factor policy (each kept when
    /// `None`) if it is at the `expected` revision (any, when `None`), and returns its new
    /// revision. `NotFound(Tenant)` or `Changed(Tenant)` otherwise.
    pub async fn update_tenant(
        &self,
        changes: &TenantUpdate<'_>,
        expected: Option<Revision>,
    ) -> Result<Revision, StoreError> {
        let (created_at, revision) = expected_values(expected);
        let row: Option<(i64, i64)> = sqlx::query_as(&format!(
            "UPDATE tenants SET name = COALESCE($1, name), \
             password_min_length = COALESCE($5, password_min_length), \
             mfa_policy = COALESCE($6, mfa_policy), revision = revision + 1 \
             WHERE tenant_id = $2 AND {} RETURNING created_at, revision",
            matches_revision(3, 4)
        ))
        .bind(changes.name)
        .bind(self.id_str())
        .bind(created_at)
        .bind(revision)
        .bind(changes.password_min_length)
        .bind(changes.mfa_policy.map(MfaPolicy::as_str))
        .fetch_optional(self.pool())
        .await?;
        match row {
            Some((created_at, revision)) => Ok(Revision {
                created_at,
                revision,
            }),
            None => Err(self.missing_or_changed(Entity::Tenant).await?),
        }
    }

    /// Why a conditional update of the tenant matched nothing.
    async fn missing_or_changed(&self, entity: Entity) -> Result<StoreError, StoreError> {
        Ok(match self.find().await? {
            Some(_) => StoreError::Changed(entity),
            None => StoreError::NotFound(entity),
        })
    }
}

/// Every table with a tenant's rows, children before parents, so each delete finds nothing
/// that still refers to what it removes (several field-service keys do not cascade). A new
/// tenant table must be added here, or deleting a tenant leaves its rows behind.
const TENANT_TABLES: [&str; 35] = [
    "payments",
    "invoice_lines",
    "invoices",
    "job_assignments",
    "jobs",
    "shifts",
    "work_orders",
    "properties",
    "customer_contacts",
    "customers",
    "employees",
    "record_numbers",
    "organization_data_versions",
    "memberships",
    "refresh_tokens",
    "grants",
    "authorization_codes",
    "authorization_requests",
    "authorization_request_quotas",
    "browser_sessions",
    "password_links",
    "webauthn_ceremonies",
    "passkeys",
    "webauthn_users",
    "recovery_codes",
    "totp_credentials",
    "backchannel_logouts",
    "dpop_proofs",
    "recovery_quotas",
    "signin_failures",
    "audit_events",
    "organizations",
    "users",
    "clients",
    "tenants",
];

impl TenantStore<'_> {
    /// Deletes every row of the tenant on its shard, in one transaction: its codes, grants
    /// and refresh tokens go with it, so none of them is accepted afterwards, and an access
    /// token's grant is no longer found. `NotFound(Tenant)` when it does not exist.
    pub async fn delete_tenant(&self) -> Result<(), StoreError> {
        let mut tx = self.begin().await?;
        let mut deleted_tenant = false;
        for table in TENANT_TABLES {
            let done = sqlx::query(&format!("DELETE FROM {table} WHERE tenant_id = $1"))
                .bind(self.id_str())
                .execute(self.in_tx(&mut tx))
                .await?;
            deleted_tenant = table == "tenants" && done.rows_affected() == 1;
        }
        if !deleted_tenant {
            self.rollback(tx).await?;
            return Err(StoreError::NotFound(Entity::Tenant));
        }
        self.commit(tx).await
    }
}

impl crate::db::Store {
    /// Revokes every unrevoked admin token limited to `tenant`; how many there were.
    pub async fn revoke_admin_tokens_of(
        &self,
        tenant: &crate::tenant::TenantId,
        now: crate::UnixTime,
    ) -> Result<u64, StoreError> {
        self.count_statement();
        let done = sqlx::query(
            "UPDATE admin_tokens SET revoked_at = $1 WHERE tenant_id = $2 AND revoked_at IS NULL",
        )
        .bind(now)
        .bind(tenant.as_str())
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected())
    }
}
