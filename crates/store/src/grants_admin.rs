//! The administration of grants: listed by user or by client, newest first, with the time of
//! their newest refresh token; revoked one at a time.

use crate::error::StoreError;
use crate::tenant::TenantStore;

/// A grant as the admin API lists it.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct GrantSummary {
    pub grant_id: String,
    pub client_id: String,
    pub user_id: String,
    pub organization_guid: String,
    /// Space-delimited, as granted.
    pub scope: String,
    pub created_at: i64,
    /// When its newest refresh token was issued (at the code exchange, then at each
    /// refresh); `None` for a grant that never had one.
    pub last_refreshed_at: Option<i64>,
    pub revoked_at: Option<i64>,
}

/// Whose grants to list.
#[derive(Clone, Copy, Debug)]
pub enum GrantsOf<'a> {
    User(&'a str),
    Client(&'a str),
}

impl TenantStore<'_> {
    /// At most `limit` grants of a user or a client, newest first by (created_at, grant_id),
    /// after `after`.
    pub async fn list_grants(
        &self,
        of: GrantsOf<'_>,
        after: Option<(i64, &str)>,
        limit: i64,
    ) -> Result<Vec<GrantSummary>, StoreError> {
        let (column, value) = match of {
            GrantsOf::User(sub) => ("user_id", sub),
            GrantsOf::Client(client_id) => ("client_id", client_id),
        };
        let (after_time, after_id) = after.unzip();
        Ok(sqlx::query_as(&format!(
            "SELECT g.grant_id, g.client_id, g.user_id, g.organization_guid, g.scope, \
                    g.created_at, g.revoked_at, \
                    (SELECT MAX(r.created_at) FROM refresh_tokens r \
                      WHERE r.tenant_id = g.tenant_id AND r.grant_id = g.grant_id) \
                      AS last_refreshed_at \
             FROM grants g \
             WHERE g.tenant_id = $1 AND g.{column} = $2 \
               AND ($3 IS NULL OR g.created_at < $3 \
                    OR (g.created_at = $3 AND g.grant_id < $4)) \
             ORDER BY g.created_at DESC, g.grant_id DESC LIMIT $5"
        ))
        .bind(self.id_str())
        .bind(value)
        .bind(after_time)
        .bind(after_id)
        .bind(limit)
        .fetch_all(self.pool())
        .await?)
    }
}
