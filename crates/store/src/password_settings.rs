//! A tenant's password settings: the minimum length of NIST SP 800-63B §5.1.1.2 its
//! administrator chose (8 to 64; the admin crate checks the range), read alone because every
//! password change needs it and nothing else of the tenant.

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
}
