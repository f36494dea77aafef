//! Signed-in browser sessions: the server-side record behind a tenant's session cookie.

use crate::backchannel_logouts::EndingSessions;
use crate::error::{Entity, StoreError};
use crate::tenant::TenantStore;
use crate::UnixTime;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrowserSession {
    /// The OpenID `sid` (Back-Channel Logout 1.0 §2.1): public, random, never the cookie.
    /// Sessions started before migration 0012 have none.
    pub sid: Option<String>,
    pub user_id: String,
    pub auth_time: UnixTime,
    pub created_at: UnixTime,
    pub expires_at: UnixTime,
}

impl TenantStore<'_> {
    pub async fn create_browser_session(
        &self,
        session_hash: &[u8],
        sid: &str,
        user_id: &str,
        auth_time: UnixTime,
        expires_at: UnixTime,
        now: UnixTime,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO browser_sessions (tenant_id, session_hash, sid, user_id, auth_time, \
             created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(self.id_str())
        .bind(session_hash.to_vec())
        .bind(sid)
        .bind(user_id)
        .bind(auth_time)
        .bind(now)
        .bind(expires_at)
        .execute(self.pool())
        .await
        .map_err(|e| match StoreError::is_foreign_key_violation(&e) {
            true => StoreError::NotFound(Entity::User),
            false => StoreError::from(e),
        })?;
        Ok(())
    }

    /// The live session behind a cookie; an expired one is as good as absent, and so is one
    /// of a disabled user (disabling deletes their sessions, but a sign-in may have finished
    /// on another node just before; this read decides).
    pub async fn find_browser_session(
        &self,
        session_hash: &[u8],
        now: UnixTime,
    ) -> Result<Option<BrowserSession>, StoreError> {
        let row: Option<(Option<String>, String, i64, i64, i64)> = sqlx::query_as(
            "SELECT s.sid, s.user_id, s.auth_time, s.created_at, s.expires_at \
             FROM browser_sessions s JOIN users u \
               ON u.tenant_id = s.tenant_id AND u.user_id = s.user_id \
             WHERE s.tenant_id = $1 AND s.session_hash = $2 AND s.expires_at > $3 \
               AND u.disabled_at IS NULL",
        )
        .bind(self.id_str())
        .bind(session_hash.to_vec())
        .bind(now)
        .fetch_optional(self.pool())
        .await?;
        Ok(row.map(
            |(sid, user_id, auth_time, created_at, expires_at)| BrowserSession {
                sid,
                user_id,
                auth_time,
                created_at,
                expires_at,
            },
        ))
    }

    /// Ends the session behind a cookie hash (sign-out, or a sign-in that replaces it), and
    /// in the same transaction queues the back-channel logout tokens its end owes. Returns
    /// how many were queued.
    pub async fn delete_browser_session(
        &self,
        session_hash: &[u8],
        now: UnixTime,
    ) -> Result<u64, StoreError> {
        let mut tx = self.begin().await?;
        let queued = self
            .queue_backchannel_logouts(&mut tx, EndingSessions::One(session_hash), now)
            .await?;
        sqlx::query("DELETE FROM browser_sessions WHERE tenant_id = $1 AND session_hash = $2")
            .bind(self.id_str())
            .bind(session_hash.to_vec())
            .execute(self.in_tx(&mut tx))
            .await?;
        self.commit(tx).await?;
        Ok(queued)
    }
}
