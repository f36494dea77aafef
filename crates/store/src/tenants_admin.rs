//! The administration of a tenant's own record: read with its revision, renamed under a
//! precondition.

use crate::error::{Entity, StoreError};
use crate::revision::{expected_values, matches_revision, Revision};
use crate::tenant::TenantStore;
use crate::tenants::Tenant;

impl TenantStore<'_> {
    /// The tenant's record and its revision.
    pub async fn find_with_revision(&self) -> Result<Option<(Tenant, Revision)>, StoreError> {
        let row: Option<(String, String, i64, i64)> = sqlx::query_as(
            "SELECT tenant_id, name, created_at, revision FROM tenants WHERE tenant_id = $1",
        )
        .bind(self.id_str())
        .fetch_optional(self.pool())
        .await?;
        row.map(|(id, name, created_at, revision)| {
            let tenant = Tenant::from_row((id, name, created_at))?;
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

    /// Renames the tenant if it is at the `expected` revision (any, when `None`), and
    /// returns its new revision. `NotFound(Tenant)` or `Changed(Tenant)` otherwise.
    pub async fn rename(
        &self,
        name: &str,
        expected: Option<Revision>,
    ) -> Result<Revision, StoreError> {
        let (created_at, revision) = expected_values(expected);
        let row: Option<(i64, i64)> = sqlx::query_as(&format!(
            "UPDATE tenants SET name = $1, revision = revision + 1 \
             WHERE tenant_id = $2 AND {} RETURNING created_at, revision",
            matches_revision(3, 4)
        ))
        .bind(name)
        .bind(self.id_str())
        .bind(created_at)
        .bind(revision)
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
