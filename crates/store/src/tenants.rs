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
    /// Creates a tenant in the database the shard map places it in; `Conflict(Tenant)` when
    /// the id is taken there.
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
            .execute(self.tenant(tenant_id).pool())
            .await
            .map_err(|e| StoreError::from_sqlx(e, Entity::Tenant))?;
        Ok(Tenant {
            tenant_id: tenant_id.clone(),
            name: name.to_owned(),
            created_at: now,
        })
    }

    /// Every tenant, by id, from every database: each tenant from the database the shard map
    /// places it in (a copy left in another database after a move is not listed).
    pub async fn list_tenants(&self) -> Result<Vec<Tenant>, StoreError> {
        let mut tenants = Vec::new();
        for database in self.databases() {
            self.count_statement();
            let rows: Vec<(String, String, i64)> = sqlx::query_as(
                "SELECT tenant_id, name, created_at FROM tenants ORDER BY tenant_id",
            )
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
