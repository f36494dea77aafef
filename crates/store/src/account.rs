//! What the account page reads and writes for its signed-in user: the apps that hold their
//! live grants, the removal of one of them, and a change of their own password. Every
//! statement names the user, so another user's grant reads and acts as one that is not there.

use crate::error::StoreError;
use crate::session_ends::{SignedOut, REVOKED_PASSWORD_CHANGED};
use crate::tenant::TenantStore;
use crate::UnixTime;

/// Why a grant was revoked when its user removed the app's access on the account page.
pub const REVOKED_BY_USER: &str = "access removed by the user";

/// At most this many apps are listed: a page, not an export. Signing out everywhere still
/// ends the grants beyond it.
pub const ACCOUNT_GRANTS_LIMIT: i64 = 200;

/// A live grant as the account page shows it to its user.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct AccountGrant {
    pub grant_id: String,
    pub client_id: String,
    pub client_name: String,
    /// `None` only while an organization being deleted still has the grant (deleting an
    /// organization revokes its grants).
    pub organization_name: Option<String>,
    /// Space-delimited, as granted.
    pub scope: String,
    pub created_at: i64,
    /// When its newest refresh token was issued (at the code exchange, then at each
    /// refresh), as in the admin grants list; `None` for a grant that never had one.
    pub last_refreshed_at: Option<i64>,
}

impl TenantStore<'_> {
    /// The user's grants that still stand: not revoked, and created after `created_after`
    /// (a grant older than `--grant-max-days` can no longer be refreshed). Newest first.
    pub async fn list_account_grants(
        &self,
        user_id: &str,
        created_after: UnixTime,
    ) -> Result<Vec<AccountGrant>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT g.grant_id, g.client_id, c.name AS client_name, \
                    o.name AS organization_name, g.scope, g.created_at, \
                    (SELECT MAX(r.created_at) FROM refresh_tokens r \
                      WHERE r.tenant_id = g.tenant_id AND r.grant_id = g.grant_id) \
                      AS last_refreshed_at \
             FROM grants g \
             JOIN clients c ON c.tenant_id = g.tenant_id AND c.client_id = g.client_id \
             LEFT JOIN organizations o \
               ON o.tenant_id = g.tenant_id AND o.organization_guid = g.organization_guid \
             WHERE g.tenant_id = $1 AND g.user_id = $2 AND g.revoked_at IS NULL \
               AND g.created_at > $3 \
             ORDER BY g.created_at DESC, g.grant_id DESC LIMIT $4",
        )
        .bind(self.id_str())
        .bind(user_id)
        .bind(created_after)
        .bind(ACCOUNT_GRANTS_LIMIT)
        .fetch_all(self.pool())
        .await?)
    }

    /// Revokes one live grant of this user, and so every token it issued. Returns its
    /// client, or `None` when no live grant of this user has that id (unknown, already
    /// revoked, or another user's: the caller cannot tell which).
    pub async fn remove_account_grant(
        &self,
        user_id: &str,
        grant_id: &str,
        now: UnixTime,
    ) -> Result<Option<String>, StoreError> {
        let _turn = self.write_turn().await;
        let row: Option<(String,)> = sqlx::query_as(
            "UPDATE grants SET revoked_at = $1, revoked_reason = $2 \
             WHERE tenant_id = $3 AND grant_id = $4 AND user_id = $5 AND revoked_at IS NULL \
             RETURNING client_id",
        )
        .bind(now)
        .bind(REVOKED_BY_USER)
        .bind(self.id_str())
        .bind(grant_id)
        .bind(user_id)
        .fetch_optional(self.pool())
        .await?;
        Ok(row.map(|(client_id,)| client_id))
    }

    /// The user's own password change, in one transaction: the hash is replaced only while
    /// it is still `current_hash` (the one the current password was verified against) and
    /// the session `keep` still stands; then every other session of the user ends and every
    /// grant is revoked. `None` when either condition failed: nothing is changed.
    pub async fn change_account_password(
        &self,
        user_id: &str,
        current_hash: &str,
        new_hash: &str,
        keep: &[u8],
        now: UnixTime,
    ) -> Result<Option<SignedOut>, StoreError> {
        let mut tx = self.begin().await?;
        let session: Option<(String,)> = sqlx::query_as(
            "SELECT user_id FROM browser_sessions \
             WHERE tenant_id = $1 AND session_hash = $2 AND user_id = $3 AND expires_at > $4",
        )
        .bind(self.id_str())
        .bind(keep.to_vec())
        .bind(user_id)
        .bind(now)
        .fetch_optional(self.in_tx(&mut tx))
        .await?;
        let changed = match session {
            None => 0,
            Some(_) => sqlx::query(
                "UPDATE users SET password_hash = $1, revision = revision + 1 \
                 WHERE tenant_id = $2 AND user_id = $3 AND password_hash = $4 \
                   AND disabled_at IS NULL",
            )
            .bind(new_hash)
            .bind(self.id_str())
            .bind(user_id)
            .bind(current_hash)
            .execute(self.in_tx(&mut tx))
            .await?
            .rows_affected(),
        };
        if changed != 1 {
            self.rollback(tx).await?;
            return Ok(None);
        }
        let ended = self
            .end_sessions_and_grants(&mut tx, user_id, Some(keep), REVOKED_PASSWORD_CHANGED, now)
            .await?;
        self.commit(tx).await?;
        Ok(Some(ended))
    }
}
