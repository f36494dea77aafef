//! The version of an organization's data: raised by triggers in the same transaction as every
//! write to the organization's records (migration 0004), so a reader that saw version `v`
//! before reading knows that any answer computed at `v` is still the answer while the version
//! is `v`. The API keeps responses under it.

use crate::error::StoreError;
use crate::tenant::TenantStore;

/// What an API request needs to know of its access token's grant before anything else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApiStanding {
    /// The grant was revoked, never existed in this tenant, or its user is no longer a
    /// member of its organization.
    Revoked,
    /// The grant stands; the version of its organization's data, when one is kept (a token
    /// whose organization is not its grant's, or an organization without a version row,
    /// has none, and nothing may be reused for it).
    Live { data_version: Option<i64> },
}

impl TenantStore<'_> {
    /// Whether the grant stands, and its organization's data version, in one read. A grant
    /// stands only while its user is a member of its organization (spec §1: the token is
    /// bound to that membership), so removing the membership ends the grant's access tokens
    /// at once, before the response cache is consulted.
    pub async fn api_standing(
        &self,
        grant_id: &str,
        organization_guid: &str,
    ) -> Result<ApiStanding, StoreError> {
        let row: Option<(Option<i64>, Option<i64>, Option<i64>)> = sqlx::query_as(
            "SELECT g.revoked_at, m.created_at, v.version \
             FROM grants g LEFT JOIN memberships m \
               ON m.tenant_id = g.tenant_id AND m.user_id = g.user_id \
              AND m.organization_guid = g.organization_guid \
             LEFT JOIN organization_data_versions v \
               ON v.tenant_id = g.tenant_id AND v.organization_guid = g.organization_guid \
              AND g.organization_guid = $3 \
             WHERE g.tenant_id = $1 AND g.grant_id = $2",
        )
        .bind(self.id_str())
        .bind(grant_id)
        .bind(organization_guid)
        .fetch_optional(self.pool())
        .await?;
        Ok(match row {
            Some((None, Some(_), data_version)) => ApiStanding::Live { data_version },
            _ => ApiStanding::Revoked,
        })
    }

    /// The organization's data version, if one is kept.
    pub async fn data_version(&self, organization_guid: &str) -> Result<Option<i64>, StoreError> {
        let row: Option<(i64,)> = sqlx::query_as(
            "SELECT version FROM organization_data_versions \
             WHERE tenant_id = $1 AND organization_guid = $2",
        )
        .bind(self.id_str())
        .bind(organization_guid)
        .fetch_optional(self.pool())
        .await?;
        Ok(row.map(|(version,)| version))
    }
}
