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
}

impl Tenant {
    /// The columns [`Tenant::from_row`] reads, in its order.
    pub(crate) const COLUMNS: &'static str = "tenant_id, name, created_at, password_min_length";

    pub(crate) fn from_row(
        (id, name, created_at, password_min_length): (String, String, i64, i64),
    ) -> Result<Tenant, StoreError> {
        let tenant_id = TenantId::parse(&id).map_err(|_| StoreError::Corrupt("tenant id"))?;
        Ok(Tenant {
            tenant_id,
            name,
            created_at,
            password_min_length,
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
        let row: (String, String, i64, i64) = sqlx::query_as(&format!(
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
            let rows: Vec<(String, String, i64, i64)> = sqlx::query_as(&format!(
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
