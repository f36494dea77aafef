//! Organizations of a tenant and the users' memberships in them.

use crate::error::{Entity, StoreError};
use crate::tenant::TenantStore;
use crate::UnixTime;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Organization {
    /// A UUID; the `organization_guid` claim of access tokens.
    pub organization_guid: String,
    pub name: String,
    pub created_at: UnixTime,
}

type OrganizationRow = (String, String, i64);

fn organization_from_row((organization_guid, name, created_at): OrganizationRow) -> Organization {
    Organization {
        organization_guid,
        name,
        created_at,
    }
}

impl TenantStore<'_> {
    pub async fn create_organization(
        &self,
        organization_guid: &str,
        name: &str,
        now: UnixTime,
    ) -> Result<Organization, StoreError> {
        sqlx::query(
            "INSERT INTO organizations (tenant_id, organization_guid, name, created_at) \
             VALUES ($1, $2, $3, $4)",
        )
        .bind(self.id_str())
        .bind(organization_guid)
        .bind(name)
        .bind(now)
        .execute(self.pool())
        .await
        .map_err(|e| match StoreError::is_foreign_key_violation(&e) {
            true => StoreError::NotFound(Entity::Tenant),
            false => StoreError::from_sqlx(e, Entity::Organization),
        })?;
        Ok(Organization {
            organization_guid: organization_guid.to_owned(),
            name: name.to_owned(),
            created_at: now,
        })
    }

    pub async fn find_organization(
        &self,
        organization_guid: &str,
    ) -> Result<Option<Organization>, StoreError> {
        let row: Option<OrganizationRow> = sqlx::query_as(
            "SELECT organization_guid, name, created_at FROM organizations \
             WHERE tenant_id = $1 AND organization_guid = $2",
        )
        .bind(self.id_str())
        .bind(organization_guid)
        .fetch_optional(self.pool())
        .await?;
        Ok(row.map(organization_from_row))
    }

    /// Makes the user a member of the organization. Adding an existing membership again is
    /// `Conflict(Membership)`; an unknown user or organization is `NotFound`.
    pub async fn add_membership(
        &self,
        user_id: &str,
        organization_guid: &str,
        now: UnixTime,
    ) -> Result<(), StoreError> {
        // Checked first so the error can say which of the two is unknown; the foreign keys
        // still guard against a concurrent delete.
        if self.find_user(user_id).await?.is_none() {
            return Err(StoreError::NotFound(Entity::User));
        }
        if self.find_organization(organization_guid).await?.is_none() {
            return Err(StoreError::NotFound(Entity::Organization));
        }
        sqlx::query(
            "INSERT INTO memberships (tenant_id, user_id, organization_guid, created_at) \
             VALUES ($1, $2, $3, $4)",
        )
        .bind(self.id_str())
        .bind(user_id)
        .bind(organization_guid)
        .bind(now)
        .execute(self.pool())
        .await
        .map_err(|e| match StoreError::is_foreign_key_violation(&e) {
            true => StoreError::NotFound(Entity::Organization),
            false => StoreError::from_sqlx(e, Entity::Membership),
        })?;
        Ok(())
    }

    /// Deletes the membership row alone; false when there was none. The refresh rotation, the
    /// code exchange and the API's check each require the membership, so those end with it;
    /// userinfo checks only the grant. Administration removes a member with
    /// [`TenantStore::remove_member`], which also revokes the grants bound to the
    /// organization, so every endpoint refuses them and adding the member back revives none.
    pub async fn remove_membership(
        &self,
        user_id: &str,
        organization_guid: &str,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "DELETE FROM memberships \
             WHERE tenant_id = $1 AND user_id = $2 AND organization_guid = $3",
        )
        .bind(self.id_str())
        .bind(user_id)
        .bind(organization_guid)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// The organizations the user belongs to, by name: what the consent screen offers.
    pub async fn organizations_of(&self, user_id: &str) -> Result<Vec<Organization>, StoreError> {
        let rows: Vec<OrganizationRow> = sqlx::query_as(
            "SELECT o.organization_guid, o.name, o.created_at \
             FROM memberships m JOIN organizations o \
               ON o.tenant_id = m.tenant_id AND o.organization_guid = m.organization_guid \
             WHERE m.tenant_id = $1 AND m.user_id = $2 \
             ORDER BY o.name, o.organization_guid",
        )
        .bind(self.id_str())
        .bind(user_id)
        .fetch_all(self.pool())
        .await?;
        Ok(rows.into_iter().map(organization_from_row).collect())
    }

    pub async fn list_organizations(&self) -> Result<Vec<Organization>, StoreError> {
        let rows: Vec<OrganizationRow> = sqlx::query_as(
            "SELECT organization_guid, name, created_at FROM organizations \
             WHERE tenant_id = $1 ORDER BY name, organization_guid",
        )
        .bind(self.id_str())
        .fetch_all(self.pool())
        .await?;
        Ok(rows.into_iter().map(organization_from_row).collect())
    }
}
