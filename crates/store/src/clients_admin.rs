//! The administration of a tenant's clients: listed and read with their revision, changed
//! under a precondition, their secret rotated, disabled, enabled and deleted.
//!
//! Disabling revokes every live grant of the client, so enabling it again brings back none
//! of the tokens it had: its users go through a new authorization.

use crate::clients::{json_list, Client, ClientLogout, ClientRecord, CLIENT_COLUMNS};
use crate::error::{Entity, StoreError};
use crate::revision::{expected_values, matches_revision, Revision};
use crate::tenant::TenantStore;
use crate::UnixTime;

/// What a grant revoked by disabling its client says about why.
pub const CLIENT_DISABLED: &str = "client disabled";

/// A client as its administration reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManagedClient {
    pub client: Client,
    /// Origins (`scheme://host[:port]`), validated before they were stored.
    pub web_origins: Vec<String>,
    pub logout: ClientLogout,
    pub revision: Revision,
}

/// An update of a client's registration; `None` leaves a field as it is. Values are
/// validated before they get here.
#[derive(Clone, Debug, Default)]
pub struct ClientChanges<'a> {
    pub name: Option<&'a str>,
    pub redirect_uris: Option<&'a [String]>,
    pub scopes: Option<&'a [String]>,
    pub post_logout_redirect_uris: Option<&'a [String]>,
    /// `Some(None)` removes it.
    pub backchannel_logout_uri: Option<Option<&'a str>>,
    /// 0 to 120 (the column's check).
    pub refresh_retry_seconds: Option<i64>,
    pub dpop_bound_access_tokens: Option<bool>,
}

/// The client's columns, then what only a managed read selects ([`MANAGED_COLUMNS`]).
#[derive(sqlx::FromRow)]
struct ManagedRow {
    #[sqlx(flatten)]
    client: ClientRecord,
    web_origins: String,
    post_logout_redirect_uris: String,
    backchannel_logout_uri: Option<String>,
}

/// What a managed read selects.
const MANAGED_COLUMNS: &str = "web_origins, post_logout_redirect_uris, backchannel_logout_uri";

fn managed_from_row(row: ManagedRow) -> Result<ManagedClient, StoreError> {
    let client = row.client.into_client()?;
    Ok(ManagedClient {
        revision: client.state(),
        client,
        web_origins: json_list(&row.web_origins, "web origins")?,
        logout: ClientLogout {
            post_logout_redirect_uris: json_list(
                &row.post_logout_redirect_uris,
                "post-logout redirect URIs",
            )?,
            backchannel_logout_uri: row.backchannel_logout_uri,
        },
    })
}

/// `%part%` for `LIKE … ESCAPE '\'`, with the pattern characters of `part` taken literally.
fn contains_pattern(part: &str) -> String {
    let escaped = part
        .replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_");
    format!("%{escaped}%")
}

fn revision_of(row: Option<(i64, i64)>) -> Option<Revision> {
    row.map(|(created_at, revision)| Revision {
        created_at,
        revision,
    })
}

impl TenantStore<'_> {
    /// Up to `limit` clients after the client id `after`, by client id; with `search`
    /// (lowercase), only those whose id or name contains it, case-insensitively.
    pub async fn list_clients_page(
        &self,
        after: Option<&str>,
        search: Option<&str>,
        limit: i64,
    ) -> Result<Vec<ManagedClient>, StoreError> {
        let rows: Vec<ManagedRow> = sqlx::query_as(&format!(
            "SELECT {CLIENT_COLUMNS}, {MANAGED_COLUMNS} FROM clients \
             WHERE tenant_id = $1 AND ($2 IS NULL OR client_id > $2) \
               AND ($3 IS NULL OR LOWER(client_id) LIKE $3 ESCAPE '\\' \
                    OR LOWER(name) LIKE $3 ESCAPE '\\') \
             ORDER BY client_id LIMIT $4"
        ))
        .bind(self.id_str())
        .bind(after)
        .bind(search.map(contains_pattern))
        .bind(limit)
        .fetch_all(self.pool())
        .await?;
        rows.into_iter().map(managed_from_row).collect()
    }

    /// A client, its web origins and its revision.
    pub async fn find_managed_client(
        &self,
        client_id: &str,
    ) -> Result<Option<ManagedClient>, StoreError> {
        let row: Option<ManagedRow> = sqlx::query_as(&format!(
            "SELECT {CLIENT_COLUMNS}, {MANAGED_COLUMNS} FROM clients \
             WHERE tenant_id = $1 AND client_id = $2"
        ))
        .bind(self.id_str())
        .bind(client_id)
        .fetch_optional(self.pool())
        .await?;
        row.map(managed_from_row).transpose()
    }

    /// Changes a client's name, redirect URIs, allowed scopes, sign-out registration or
    /// settings if it is at the `expected` revision (any, when `None`). `NotFound(Client)` or
    /// `Changed(Client)` otherwise.
    pub async fn update_client(
        &self,
        client_id: &str,
        changes: &ClientChanges<'_>,
        expected: Option<Revision>,
    ) -> Result<Revision, StoreError> {
        let redirect_uris = changes
            .redirect_uris
            .map(serde_json::to_string)
            .transpose()
            .map_err(|_| StoreError::Corrupt("redirect URIs"))?;
        let scopes = changes.scopes.map(|s| s.join(" "));
        let post_logout_redirect_uris = changes
            .post_logout_redirect_uris
            .map(serde_json::to_string)
            .transpose()
            .map_err(|_| StoreError::Corrupt("post-logout redirect URIs"))?;
        // `$9`: NULL leaves the back-channel URI, '' removes it, a URI replaces it.
        let backchannel = changes
            .backchannel_logout_uri
            .map(|uri| uri.unwrap_or_default());
        let (created_at, revision) = expected_values(expected);
        let dpop = changes.dpop_bound_access_tokens.map(i64::from);
        let row: Option<(i64, i64)> = sqlx::query_as(&format!(
            "UPDATE clients SET name = COALESCE($1, name), \
               redirect_uris = COALESCE($2, redirect_uris), scopes = COALESCE($3, scopes), \
               post_logout_redirect_uris = COALESCE($8, post_logout_redirect_uris), \
               backchannel_logout_uri = CASE WHEN $9 IS NULL THEN backchannel_logout_uri \
                 WHEN $9 = '' THEN NULL ELSE $9 END, \
               refresh_retry_seconds = COALESCE($10, refresh_retry_seconds), \
               dpop_bound_access_tokens = COALESCE($11, dpop_bound_access_tokens), \
               revision = revision + 1 \
             WHERE tenant_id = $4 AND client_id = $5 AND {} RETURNING created_at, revision",
            matches_revision(6, 7)
        ))
        .bind(changes.name)
        .bind(redirect_uris)
        .bind(scopes)
        .bind(self.id_str())
        .bind(client_id)
        .bind(created_at)
        .bind(revision)
        .bind(post_logout_redirect_uris)
        .bind(backchannel)
        .bind(changes.refresh_retry_seconds)
        .bind(dpop)
        .fetch_optional(self.pool())
        .await?;
        match revision_of(row) {
            Some(revision) => Ok(revision),
            None => Err(self.client_missing_or_changed(client_id).await?),
        }
    }

    /// Gives a confidential client a new secret hash. With `previous_until`, the old hash
    /// stays accepted until then; without, it is forgotten at once. `NotFound(Client)` for
    /// an unknown or public client.
    pub async fn rotate_client_secret(
        &self,
        client_id: &str,
        secret_hash: &[u8],
        previous_until: Option<UnixTime>,
    ) -> Result<Revision, StoreError> {
        let row: Option<(i64, i64)> = sqlx::query_as(
            "UPDATE clients SET \
               previous_secret_hash = CASE WHEN $1 IS NULL THEN NULL ELSE secret_hash END, \
               previous_secret_expires_at = $1, secret_hash = $2, revision = revision + 1 \
             WHERE tenant_id = $3 AND client_id = $4 AND client_type = 'confidential' \
             RETURNING created_at, revision",
        )
        .bind(previous_until)
        .bind(secret_hash.to_vec())
        .bind(self.id_str())
        .bind(client_id)
        .fetch_optional(self.pool())
        .await?;
        revision_of(row).ok_or(StoreError::NotFound(Entity::Client))
    }

    /// Disables a client and, in the same transaction, revokes every live grant of it
    /// (reason [`CLIENT_DISABLED`]) and drops its pending authorization requests and unspent
    /// codes, so nothing started before comes back if it is enabled again. Returns the new
    /// revision and how many grants were revoked.
    pub async fn disable_client(
        &self,
        client_id: &str,
        now: UnixTime,
    ) -> Result<(Revision, u64), StoreError> {
        let mut tx = self.begin().await?;
        let row: Option<(i64, i64)> = sqlx::query_as(
            "UPDATE clients SET disabled_at = COALESCE(disabled_at, $1), \
               revision = revision + 1 \
             WHERE tenant_id = $2 AND client_id = $3 RETURNING created_at, revision",
        )
        .bind(now)
        .bind(self.id_str())
        .bind(client_id)
        .fetch_optional(self.in_tx(&mut tx))
        .await?;
        let revision = revision_of(row).ok_or(StoreError::NotFound(Entity::Client))?;
        let revoked = sqlx::query(
            "UPDATE grants SET revoked_at = $1, revoked_reason = $2 \
             WHERE tenant_id = $3 AND client_id = $4 AND revoked_at IS NULL",
        )
        .bind(now)
        .bind(CLIENT_DISABLED)
        .bind(self.id_str())
        .bind(client_id)
        .execute(self.in_tx(&mut tx))
        .await?
        .rows_affected();
        // A spent code stays: presented again, it still revokes what it issued.
        sqlx::query(
            "DELETE FROM authorization_codes \
             WHERE tenant_id = $1 AND client_id = $2 AND redeemed_at IS NULL",
        )
        .bind(self.id_str())
        .bind(client_id)
        .execute(self.in_tx(&mut tx))
        .await?;
        sqlx::query("DELETE FROM authorization_requests WHERE tenant_id = $1 AND client_id = $2")
            .bind(self.id_str())
            .bind(client_id)
            .execute(self.in_tx(&mut tx))
            .await?;
        self.commit(tx).await?;
        Ok((revision, revoked))
    }

    /// Enables a client again; its revoked grants stay revoked.
    pub async fn enable_client(&self, client_id: &str) -> Result<Revision, StoreError> {
        let row: Option<(i64, i64)> = sqlx::query_as(
            "UPDATE clients SET disabled_at = NULL, revision = revision + 1 \
             WHERE tenant_id = $1 AND client_id = $2 RETURNING created_at, revision",
        )
        .bind(self.id_str())
        .bind(client_id)
        .fetch_optional(self.pool())
        .await?;
        revision_of(row).ok_or(StoreError::NotFound(Entity::Client))
    }

    /// Deletes a client; its grants (and so their tokens), codes and pending requests go
    /// with it through the foreign keys. `NotFound(Client)` for an unknown client.
    pub async fn delete_client(&self, client_id: &str) -> Result<(), StoreError> {
        let done = sqlx::query("DELETE FROM clients WHERE tenant_id = $1 AND client_id = $2")
            .bind(self.id_str())
            .bind(client_id)
            .execute(self.pool())
            .await?;
        match done.rows_affected() {
            0 => Err(StoreError::NotFound(Entity::Client)),
            _ => Ok(()),
        }
    }

    /// Why a conditional update of a client matched nothing.
    async fn client_missing_or_changed(&self, client_id: &str) -> Result<StoreError, StoreError> {
        let exists: Option<(i64,)> =
            sqlx::query_as("SELECT revision FROM clients WHERE tenant_id = $1 AND client_id = $2")
                .bind(self.id_str())
                .bind(client_id)
                .fetch_optional(self.pool())
                .await?;
        Ok(match exists {
            Some(_) => StoreError::Changed(Entity::Client),
            None => StoreError::NotFound(Entity::Client),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_patterns_take_wildcards_literally() {
        assert_eq!(contains_pattern("web"), "%web%");
        assert_eq!(contains_pattern("a_b%c\\"), "%a\\_b\\%c\\\\%");
    }
}
