//! Creating and listing tenants.

use crate::db::Store;
use crate::error::{Entity, StoreError};
use crate::tenant::TenantId;
use crate::UnixTime;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tenant {
    pub tenant_id: TenantId,
    pub name: String,
    pub created_at: UnixTime,
    /// The shortest password its users may choose (NIST SP 800-63B §5.1.1.2), 8 to 64.
    pub password_min_length: i64,
    /// Whether its users are asked for a second factor.
    pub mfa_policy: MfaPolicy,
}

/// A tenant's second-factor policy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MfaPolicy {
    /// No second factor is offered or asked.
    Off,
    /// Users may enroll one; once they have, every sign-in asks for it.
    #[default]
    Optional,
    /// Every user must have one: a user without one enrolls one right after the password.
    Required,
}

impl MfaPolicy {
    pub const ALL: [MfaPolicy; 3] = [MfaPolicy::Off, MfaPolicy::Optional, MfaPolicy::Required];

    pub fn as_str(self) -> &'static str {
        match self {
            MfaPolicy::Off => "off",
            MfaPolicy::Optional => "optional",
            MfaPolicy::Required => "required",
        }
    }

    pub fn parse(text: &str) -> Option<MfaPolicy> {
        MfaPolicy::ALL.into_iter().find(|p| p.as_str() == text)
    }
}

/// The row [`Tenant::from_row`] reads.
pub(crate) type TenantRow = (String, String, i64, i64, String);

impl Tenant {
    /// The columns [`Tenant::from_row`] reads, in its order.
    pub(crate) const COLUMNS: &'static str =
        "tenant_id, name, created_at, password_min_length, mfa_policy";

    pub(crate) fn from_row(
        (id, name, created_at, password_min_length, mfa_policy): TenantRow,
    ) -> Result<Tenant, StoreError> {
        let tenant_id = TenantId::parse(&id).map_err(|_| StoreError::Corrupt("tenant id"))?;
        let mfa_policy =
            MfaPolicy::parse(&mfa_policy).ok_or(StoreError::Corrupt("tenant mfa_policy"))?;
        Ok(Tenant {
            tenant_id,
            name,
            created_at,
            password_min_length,
            mfa_policy,
        })
    }
}

impl Store {
    /// Creates a tenant in the database the shard map places it in; `Conflict(Tenant)` when
    /// the id is taken there.
    pub async fn create_tenant(
        &self,
        tenant_id: &TenantId,
        name: &str,
        now: UnixTime,
    ) -> Result<Tenant, StoreError> {
        let row: TenantRow = sqlx::query_as(&format!(
            "INSERT INTO tenants (tenant_id, name, created_at) VALUES ($1, $2, $3) \
             RETURNING {}",
            Tenant::COLUMNS
        ))
        .bind(tenant_id.as_str())
        .bind(name)
        .bind(now)
        .fetch_one(self.tenant(tenant_id).pool())
        .await
        .map_err(|e| StoreError::from_sqlx(e, Entity::Tenant))?;
        Tenant::from_row(row)
    }

    /// Every tenant, by id, from every database: each tenant from the database the shard map
    /// places it in (a copy left in another database after a move is not listed).
    pub async fn list_tenants(&self) -> Result<Vec<Tenant>, StoreError> {
        let mut tenants = Vec::new();
        for database in self.databases() {
            self.count_statement();
            let rows: Vec<TenantRow> = sqlx::query_as(&format!(
                "SELECT {} FROM tenants ORDER BY tenant_id",
                Tenant::COLUMNS
            ))
            .fetch_all(database.pool())
            .await?;
            for row in rows {
                let tenant = Tenant::from_row(row)?;
                if self.routes_to(&tenant.tenant_id, database) {
                    tenants.push(tenant);
                }
            }
        }
        tenants.sort_by(|a, b| a.tenant_id.cmp(&b.tenant_id));
        Ok(tenants)
    }
}
