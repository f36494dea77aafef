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
}

impl Tenant {
    pub(crate) fn from_row(
        (id, name, created_at): (String, String, i64),
    ) -> Result<Tenant, StoreError> {
        let tenant_id = TenantId::parse(&id).map_err(|_| StoreError::Corrupt("tenant id"))?;
        Ok(Tenant {
            tenant_id,
            name,
            created_at,
        })
    }
}

impl Store {
    /// Creates a tenant; `Conflict(Tenant)` when the id is taken.
    pub async fn create_tenant(
        &self,
        tenant_id: &TenantId,
        name: &str,
        now: UnixTime,
    ) -> Result<Tenant, StoreError> {
        sqlx::query("INSERT INTO tenants (tenant_id, name, created_at) VALUES ($1, $2, $3)")
            .bind(tenant_id.as_str())
            .bind(name)
            .bind(now)
            .execute(self.pool())
            .await
            .map_err(|e| StoreError::from_sqlx(e, Entity::Tenant))?;
        Ok(Tenant {
            tenant_id: tenant_id.clone(),
            name: name.to_owned(),
            created_at: now,
        })
    }

    /// Every tenant of this database, by id.
    pub async fn list_tenants(&self) -> Result<Vec<Tenant>, StoreError> {
        let rows: Vec<(String, String, i64)> =
            sqlx::query_as("SELECT tenant_id, name, created_at FROM tenants ORDER BY tenant_id")
                .fetch_all(self.pool())
                .await?;
        rows.into_iter().map(Tenant::from_row).collect()
    }
}
