//! A tenant's password settings: the minimum length of NIST SP 800-63B §5.1.1.2 its
//! administrator chose (8 to 64; the caller checks the range).

use crate::error::{Entity, StoreError};
use crate::tenant::TenantStore;

impl TenantStore<'_> {
    /// The tenant's minimum password length; `NotFound(Tenant)` when the tenant is gone.
    pub async fn password_min_length(&self) -> Result<i64, StoreError> {
        sqlx::query_scalar("SELECT password_min_length FROM tenants WHERE tenant_id = $1")
            .bind(self.id_str())
            .fetch_optional(self.pool())
            .await?
            .ok_or(StoreError::NotFound(Entity::Tenant))
    }

    /// Sets the tenant's minimum password length; `NotFound(Tenant)` when it is gone.
    pub async fn set_password_min_length(&self, min_length: i64) -> Result<(), StoreError> {
        let changed = sqlx::query(
            "UPDATE tenants SET password_min_length = $1, revision = revision + 1 \
             WHERE tenant_id = $2",
        )
        .bind(min_length)
        .bind(self.id_str())
        .execute(self.pool())
        .await?
        .rows_affected();
        match changed {
            0 => Err(StoreError::NotFound(Entity::Tenant)),
            _ => Ok(()),
        }
    }
}
