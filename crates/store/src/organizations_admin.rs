//! The administration of organizations and their members: listed by name, read with their
//! revision, renamed under a precondition, deleted; members listed, removed with the grants
//! they hold in the organization.

use crate::error::{Entity, StoreError};
use crate::organizations::Organization;
use crate::revision::{expected_values, matches_revision, Revision};
use crate::tenant::TenantStore;
use crate::UnixTime;

/// A member of an organization, as the admin API lists them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub user_id: String,
    pub username: String,
    pub name: String,
    pub email: String,
}

/// The field-service records of one organization, children before parents: several of their
/// foreign keys do not cascade (a work order keeps its customer), so deleting the
/// organization alone would be refused once it has any.
const ORGANIZATION_DATA: [&str; 12] = [
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
];

/// `LIKE` pattern matching `search` anywhere, its own `%`, `_` and `\` taken literally
/// (the queries say `ESCAPE '\'`).
pub(crate) fn contains_pattern(search: &str) -> String {
    let mut pattern = String::with_capacity(search.len() + 2);
    pattern.push('%');
    for c in search.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

impl TenantStore<'_> {
    /// At most `limit` organizations by (name, guid) after `after`, their names containing
    /// `search` (lowercase) when given.
    pub async fn list_organizations_page(
        &self,
        after: Option<(&str, &str)>,
        search: Option<&str>,
        limit: i64,
    ) -> Result<Vec<Organization>, StoreError> {
        let (after_name, after_guid) = after.unzip();
        let rows: Vec<(String, String, i64)> = sqlx::query_as(
            "SELECT organization_guid, name, created_at FROM organizations \
             WHERE tenant_id = $1 \
               AND ($2 IS NULL OR name > $2 OR (name = $2 AND organization_guid > $3)) \
               AND ($4 IS NULL OR LOWER(name) LIKE $4 ESCAPE '\\') \
             ORDER BY name, organization_guid LIMIT $5",
        )
        .bind(self.id_str())
        .bind(after_name)
        .bind(after_guid)
        .bind(search.map(contains_pattern))
        .bind(limit)
        .fetch_all(self.pool())
        .await?;
        Ok(rows
            .into_iter()
            .map(|(organization_guid, name, created_at)| Organization {
                organization_guid,
                name,
                created_at,
            })
            .collect())
    }

    /// The organization and its revision.
    pub async fn find_organization_with_revision(
        &self,
        organization_guid: &str,
    ) -> Result<Option<(Organization, Revision)>, StoreError> {
        let row: Option<(String, String, i64, i64)> = sqlx::query_as(
            "SELECT organization_guid, name, created_at, revision FROM organizations \
             WHERE tenant_id = $1 AND organization_guid = $2",
        )
        .bind(self.id_str())
        .bind(organization_guid)
        .fetch_optional(self.pool())
        .await?;
        Ok(row.map(|(organization_guid, name, created_at, revision)| {
            (
                Organization {
                    organization_guid,
                    name,
                    created_at,
                },
                Revision {
                    created_at,
                    revision,
                },
            )
        }))
    }

    /// Renames the organization if it is at the `expected` revision (any, when `None`).
    /// `NotFound(Organization)` or `Changed(Organization)` otherwise.
    pub async fn rename_organization(
        &self,
        organization_guid: &str,
        name: &str,
        expected: Option<Revision>,
    ) -> Result<Revision, StoreError> {
        let (created_at, revision) = expected_values(expected);
        let row: Option<(i64, i64)> = sqlx::query_as(&format!(
            "UPDATE organizations SET name = $1, revision = revision + 1 \
             WHERE tenant_id = $2 AND organization_guid = $3 AND {} \
             RETURNING created_at, revision",
            matches_revision(4, 5)
        ))
        .bind(name)
        .bind(self.id_str())
        .bind(organization_guid)
        .bind(created_at)
        .bind(revision)
        .fetch_optional(self.pool())
        .await?;
        match row {
            Some((created_at, revision)) => Ok(Revision {
                created_at,
                revision,
            }),
            None => Err(match self.find_organization(organization_guid).await? {
                Some(_) => StoreError::Changed(Entity::Organization),
                None => StoreError::NotFound(Entity::Organization),
            }),
        }
    }

    /// Deletes the organization, its field-service records and its memberships, and revokes
    /// the grants bound to it, in one transaction. `NotFound(Organization)` when absent.
    pub async fn delete_organization(
        &self,
        organization_guid: &str,
        now: UnixTime,
    ) -> Result<(), StoreError> {
        let mut tx = self.begin().await?;
        // Grants name their organization without a foreign key (an access token's claim
        // outlives nothing it names), so they are revoked here, not cascaded.
        sqlx::query(
            "UPDATE grants SET revoked_at = $1, revoked_reason = 'organization deleted' \
             WHERE tenant_id = $2 AND organization_guid = $3 AND revoked_at IS NULL",
        )
        .bind(now)
        .bind(self.id_str())
        .bind(organization_guid)
        .execute(self.in_tx(&mut tx))
        .await?;
        for table in ORGANIZATION_DATA {
            sqlx::query(&format!(
                "DELETE FROM {table} WHERE tenant_id = $1 AND organization_guid = $2"
            ))
            .bind(self.id_str())
            .bind(organization_guid)
            .execute(self.in_tx(&mut tx))
            .await?;
        }
        let done = sqlx::query(
            "DELETE FROM organizations WHERE tenant_id = $1 AND organization_guid = $2",
        )
        .bind(self.id_str())
        .bind(organization_guid)
        .execute(self.in_tx(&mut tx))
        .await?;
        if done.rows_affected() != 1 {
            // The grants' revocation is undone with the rest.
            self.rollback(tx).await?;
            return Err(StoreError::NotFound(Entity::Organization));
        }
        self.commit(tx).await
    }

    /// At most `limit` members of the organization by (username) after `after`.
    pub async fn list_members(
        &self,
        organization_guid: &str,
        after: Option<&str>,
        limit: i64,
    ) -> Result<Vec<Member>, StoreError> {
        let rows: Vec<(String, String, String, String)> = sqlx::query_as(
            "SELECT u.user_id, u.username, u.name, u.email \
             FROM memberships m JOIN users u \
               ON u.tenant_id = m.tenant_id AND u.user_id = m.user_id \
             WHERE m.tenant_id = $1 AND m.organization_guid = $2 \
               AND ($3 IS NULL OR u.username > $3) \
             ORDER BY u.username LIMIT $4",
        )
        .bind(self.id_str())
        .bind(organization_guid)
        .bind(after)
        .bind(limit)
        .fetch_all(self.pool())
        .await?;
        Ok(rows
            .into_iter()
            .map(|(user_id, username, name, email)| Member {
                user_id,
                username,
                name,
                email,
            })
            .collect())
    }

    /// Ends the membership and revokes the user's grants bound to the organization, in one
    /// transaction: the refresh rotation and the API would refuse them anyway once the
    /// membership is gone, but a revoked grant stays dead if the user is added back.
    /// `NotFound(Membership)` when there was none.
    pub async fn remove_member(
        &self,
        user_id: &str,
        organization_guid: &str,
        now: UnixTime,
    ) -> Result<(), StoreError> {
        let mut tx = self.begin().await?;
        let done = sqlx::query(
            "DELETE FROM memberships \
             WHERE tenant_id = $1 AND user_id = $2 AND organization_guid = $3",
        )
        .bind(self.id_str())
        .bind(user_id)
        .bind(organization_guid)
        .execute(self.in_tx(&mut tx))
        .await?;
        if done.rows_affected() != 1 {
            self.rollback(tx).await?;
            return Err(StoreError::NotFound(Entity::Membership));
        }
        sqlx::query(
            "UPDATE grants SET revoked_at = $1, revoked_reason = 'membership removed' \
             WHERE tenant_id = $2 AND user_id = $3 AND organization_guid = $4 \
               AND revoked_at IS NULL",
        )
        .bind(now)
        .bind(self.id_str())
        .bind(user_id)
        .bind(organization_guid)
        .execute(self.in_tx(&mut tx))
        .await?;
        self.commit(tx).await
    }
}

#[cfg(test)]
mod tests {
    use super::contains_pattern;

    #[test]
    fn like_wildcards_in_a_search_are_literal() {
        assert_eq!(contains_pattern("acme"), "%acme%");
        assert_eq!(contains_pattern("50%_a\\b"), "%50\\%\\_a\\\\b%");
    }
}
