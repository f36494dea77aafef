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
    /// RFC 8176 `amr` values proved in this session, space-separated (`pwd`, `pwd otp mfa`).
    pub amr: String,
    /// When a second factor was last proved in it.
    pub mfa_at: Option<UnixTime>,
    /// Set while the session still owes a second factor: it then signs nothing in.
    pub factor_due: Option<FactorDue>,
}

/// What a session that proved the password still owes before it counts as signed in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FactorDue {
    /// A second factor the user has: a TOTP code, a recovery code or a passkey.
    Verify,
    /// The tenant requires a second factor and the user has none: enroll one first.
    Enroll,
}

impl FactorDue {
    pub fn as_str(self) -> &'static str {
        match self {
            FactorDue::Verify => "verify",
            FactorDue::Enroll => "enroll",
        }
    }

    fn parse(stored: Option<&str>) -> Option<FactorDue> {
        match stored {
            Some("verify") => Some(FactorDue::Verify),
            Some("enroll") => Some(FactorDue::Enroll),
            _ => None,
        }
    }
}

/// A new browser session: who, how (`amr`), and whether a second factor is still owed.
#[derive(Clone, Copy, Debug)]
pub struct NewBrowserSession<'a> {
    pub session_hash: &'a [u8],
    pub sid: &'a str,
    pub user_id: &'a str,
    pub amr: &'a str,
    pub factor_due: Option<FactorDue>,
    /// When the second factor was proved, for a session that starts with one (a passkey).
    pub mfa_at: Option<UnixTime>,
    pub auth_time: UnixTime,
    pub expires_at: UnixTime,
}

type SessionRow = (
    Option<String>,
    String,
    i64,
    i64,
    i64,
    String,
    Option<i64>,
    Option<String>,
);

const SESSION_COLUMNS: &str =
    "s.sid, s.user_id, s.auth_time, s.created_at, s.expires_at, s.amr, s.mfa_at, s.factor_due";

fn session_of(row: SessionRow) -> BrowserSession {
    let (sid, user_id, auth_time, created_at, expires_at, amr, mfa_at, factor_due) = row;
    BrowserSession {
        sid,
        user_id,
        auth_time,
        created_at,
        expires_at,
        amr,
        mfa_at,
        factor_due: FactorDue::parse(factor_due.as_deref()),
    }
}

impl TenantStore<'_> {
    pub async fn create_browser_session(
        &self,
        new: &NewBrowserSession<'_>,
        now: UnixTime,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO browser_sessions (tenant_id, session_hash, sid, user_id, auth_time, \
             created_at, expires_at, amr, factor_due, mfa_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        )
        .bind(self.id_str())
        .bind(new.session_hash.to_vec())
        .bind(new.sid)
        .bind(new.user_id)
        .bind(new.auth_time)
        .bind(now)
        .bind(new.expires_at)
        .bind(new.amr)
        .bind(new.factor_due.map(FactorDue::as_str))
        .bind(new.mfa_at)
        .execute(self.pool())
        .await
        .map_err(|e| match StoreError::is_foreign_key_violation(&e) {
            true => StoreError::NotFound(Entity::User),
            false => StoreError::from(e),
        })?;
        Ok(())
    }

    /// The live, signed-in session behind a cookie; an expired one is as good as absent, and
    /// so is one of a disabled user (disabling deletes their sessions, but a sign-in may have
    /// finished on another node just before; this read decides), and so is one that still
    /// owes a second factor.
    pub async fn find_browser_session(
        &self,
        session_hash: &[u8],
        now: UnixTime,
    ) -> Result<Option<BrowserSession>, StoreError> {
        Ok(self
            .find_any_browser_session(session_hash, now)
            .await?
            .filter(|s| s.factor_due.is_none()))
    }

    /// Like [`Self::find_browser_session`], but also a session that still owes a second
    /// factor: only the pages that collect that factor may use one.
    pub async fn find_any_browser_session(
        &self,
        session_hash: &[u8],
        now: UnixTime,
    ) -> Result<Option<BrowserSession>, StoreError> {
        let row: Option<SessionRow> = sqlx::query_as(&format!(
            "SELECT {SESSION_COLUMNS} \
             FROM browser_sessions s JOIN users u \
               ON u.tenant_id = s.tenant_id AND u.user_id = s.user_id \
             WHERE s.tenant_id = $1 AND s.session_hash = $2 AND s.expires_at > $3 \
               AND u.disabled_at IS NULL"
        ))
        .bind(self.id_str())
        .bind(session_hash.to_vec())
        .bind(now)
        .fetch_optional(self.pool())
        .await?;
        Ok(row.map(session_of))
    }

    /// Records a second factor proved in a live session: it owes nothing more, its `amr`
    /// becomes `amr`, and `mfa_at` now. A session that owed the factor is signed in from now
    /// and lives until `expires_at`; one that was signed in keeps its end. False when the
    /// session is gone.
    pub async fn prove_second_factor(
        &self,
        session_hash: &[u8],
        amr: &str,
        now: UnixTime,
        expires_at: UnixTime,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE browser_sessions SET amr = $1, mfa_at = $2, \
               expires_at = CASE WHEN factor_due IS NULL THEN expires_at ELSE $5 END, \
               factor_due = NULL \
             WHERE tenant_id = $3 AND session_hash = $4 AND expires_at > $2",
        )
        .bind(amr)
        .bind(now)
        .bind(self.id_str())
        .bind(session_hash.to_vec())
        .bind(expires_at)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() == 1)
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
