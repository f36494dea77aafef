//! The Back-Channel Logout 1.0 outbox: one row per logout token still to deliver. Rows are
//! written in the transaction that ends a session, by whichever node or CLI command ends it,
//! so a delivery survives the process that asked for it. Running nodes claim due rows; a
//! claim moves the row's next attempt past a lease in the same statement, so two nodes never
//! send one row at once, and a node that dies mid-delivery leaves the row to be retried.

use crate::db::Store;
use crate::error::StoreError;
use crate::tenant::{TenantId, TenantStore, Transaction};
use crate::UnixTime;

/// A logout token to send, as a node claimed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackchannelLogout {
    pub tenant_id: TenantId,
    pub delivery_id: String,
    pub client_id: String,
    /// The `sub` of the session's user.
    pub user_id: String,
    pub sid: String,
    /// Attempts made so far, this one included.
    pub attempts: i64,
}

/// Which browser sessions of a tenant are ending.
#[derive(Clone, Copy, Debug)]
pub(crate) enum EndingSessions<'a> {
    /// The session behind one cookie hash.
    One(&'a [u8]),
    /// Every session of a user, but the one with this cookie hash when given.
    OfUser {
        user_id: &'a str,
        keep: Option<&'a [u8]>,
    },
}

/// The clients to tell of a session's end (Back-Channel Logout 1.0 §2.5): each that was
/// issued an ID token in it, i.e. holds a grant of that `sid` with `openid` in its scope
/// (revoked or not: the ID token is out there either way), registered a
/// `backchannel_logout_uri`, and is not disabled. One row per (client, session): the delivery
/// id is both, so a session ended twice is told once. `$1` tenant, `$2` now; the caller adds
/// which sessions (from `$3`). The grants are found among the session's user's
/// (`grants_by_user`): a grant's session is always one of its user's. A session without a
/// `sid` (older than them) matches no grant; saying `s.sid IS NOT NULL` as well made
/// PostgreSQL search the sessions by the tenant and that, through their `sid` index.
const QUEUE: &str = "INSERT INTO backchannel_logouts (tenant_id, delivery_id, client_id, \
       user_id, sid, attempts, next_attempt_at, created_at) \
     SELECT DISTINCT s.tenant_id, g.client_id || ' ' || s.sid, g.client_id, s.user_id, s.sid, \
       0, $2, $2 \
     FROM browser_sessions s \
     JOIN grants g ON g.tenant_id = s.tenant_id AND g.user_id = s.user_id AND g.sid = s.sid \
     JOIN clients c ON c.tenant_id = g.tenant_id AND c.client_id = g.client_id \
     WHERE s.tenant_id = $1 \
       AND c.backchannel_logout_uri IS NOT NULL AND c.disabled_at IS NULL \
       AND ' ' || g.scope || ' ' LIKE '% openid %'";

const NO_DUPLICATE: &str = "ON CONFLICT (tenant_id, delivery_id) DO NOTHING";

impl TenantStore<'_> {
    /// Queues, inside `tx` and before the sessions are deleted, the logout tokens their end
    /// owes, and marks the transaction so its commit wakes this process's deliverer.
    /// Returns how many were queued.
    pub(crate) async fn queue_backchannel_logouts(
        &self,
        tx: &mut Transaction,
        sessions: EndingSessions<'_>,
        now: UnixTime,
    ) -> Result<u64, StoreError> {
        let queued = match sessions {
            EndingSessions::One(session_hash) => {
                sqlx::query(&format!("{QUEUE} AND s.session_hash = $3 {NO_DUPLICATE}"))
                    .bind(self.id_str())
                    .bind(now)
                    .bind(session_hash.to_vec())
                    .execute(self.in_tx(tx))
                    .await?
            }
            EndingSessions::OfUser {
                user_id,
                keep: None,
            } => {
                sqlx::query(&format!("{QUEUE} AND s.user_id = $3 {NO_DUPLICATE}"))
                    .bind(self.id_str())
                    .bind(now)
                    .bind(user_id)
                    .execute(self.in_tx(tx))
                    .await?
            }
            EndingSessions::OfUser {
                user_id,
                keep: Some(keep),
            } => {
                sqlx::query(&format!(
                    "{QUEUE} AND s.user_id = $3 AND s.session_hash <> $4 {NO_DUPLICATE}"
                ))
                .bind(self.id_str())
                .bind(now)
                .bind(user_id)
                .bind(keep.to_vec())
                .execute(self.in_tx(tx))
                .await?
            }
        }
        .rows_affected();
        if queued > 0 {
            tx.wake_backchannel = true;
        }
        Ok(queued)
    }

    /// A delivered (or abandoned) logout token: its row goes.
    pub async fn delete_backchannel_logout(&self, delivery_id: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM backchannel_logouts WHERE tenant_id = $1 AND delivery_id = $2")
            .bind(self.id_str())
            .bind(delivery_id)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// A failed attempt: the row is due again at `next_attempt_at`.
    pub async fn retry_backchannel_logout(
        &self,
        delivery_id: &str,
        next_attempt_at: UnixTime,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE backchannel_logouts SET next_attempt_at = $1 \
             WHERE tenant_id = $2 AND delivery_id = $3",
        )
        .bind(next_attempt_at)
        .bind(self.id_str())
        .bind(delivery_id)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// The logout tokens waiting for delivery in this tenant (for tests and operators).
    pub async fn count_backchannel_logouts(&self) -> Result<i64, StoreError> {
        Ok(
            sqlx::query_scalar("SELECT COUNT(*) FROM backchannel_logouts WHERE tenant_id = $1")
                .bind(self.id_str())
                .fetch_one(self.pool())
                .await?,
        )
    }
}

/// A claimed row as the statement returns it.
type ClaimedRow = (String, String, String, String, String, i64);

impl Store {
    /// Claims up to `limit` due rows of every database (each tenant's from the database the
    /// shard map places it in) and counts the attempt: one statement per database moves
    /// their next attempt to `lease_until`, so another node's claim, even at the same
    /// moment, finds them not due (PostgreSQL re-checks the condition on a row another
    /// claim updated first; SQLite runs one write at a time).
    pub async fn claim_backchannel_logouts(
        &self,
        now: UnixTime,
        lease_until: UnixTime,
        limit: i64,
    ) -> Result<Vec<BackchannelLogout>, StoreError> {
        let mut claimed = Vec::new();
        for database in self.databases() {
            self.count_statement();
            let rows: Vec<ClaimedRow> = sqlx::query_as(
                "UPDATE backchannel_logouts SET next_attempt_at = $1, attempts = attempts + 1 \
                 WHERE next_attempt_at <= $2 AND (tenant_id, delivery_id) IN ( \
                   SELECT tenant_id, delivery_id FROM backchannel_logouts \
                   WHERE next_attempt_at <= $2 ORDER BY next_attempt_at LIMIT $3) \
                 RETURNING tenant_id, delivery_id, client_id, user_id, sid, attempts",
            )
            .bind(lease_until)
            .bind(now)
            .bind(limit)
            .fetch_all(database.pool())
            .await?;
            for (tenant_id, delivery_id, client_id, user_id, sid, attempts) in rows {
                let tenant_id =
                    TenantId::parse(&tenant_id).map_err(|_| StoreError::Corrupt("tenant id"))?;
                // A copy left behind by a tenant's move is not this database's to send.
                if !self.routes_to(&tenant_id, database) {
                    continue;
                }
                claimed.push(BackchannelLogout {
                    tenant_id,
                    delivery_id,
                    client_id,
                    user_id,
                    sid,
                    attempts,
                });
            }
        }
        Ok(claimed)
    }
}
