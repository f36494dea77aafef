//! The refusal path of a refresh: why a rotation did not happen, and the retry window of
//! issue 27. A consumed token presented again revokes its grant (spec §5.7), unless its
//! client has a retry window, the token was consumed within it, and the successor its
//! rotation issued was never used (the client lost the answer): then that successor is
//! ended, and a new one is issued in its place, once per consumed token.
//!
//! None of this runs on the hot path: a rotation that succeeds only also writes the
//! successor's hash on the token it consumes.

use std::sync::LazyLock;

use crate::error::StoreError;
use crate::grants::{
    grant_and_user, grant_stands, GrantAndUser, Presented, RefreshRotation, INSERT_REFRESH_TOKEN,
};
use crate::tenant::TenantStore;
use crate::UnixTime;

/// What the refusal path reads of the presented token and of its current successor.
#[derive(sqlx::FromRow)]
struct Refusal {
    grant_id: String,
    consumed_at: Option<i64>,
    retried_at: Option<i64>,
    successor_hash: Option<Vec<u8>>,
    successor_consumed_at: Option<i64>,
    successor_expires_at: Option<i64>,
    /// 1 when the grant stands for the presenting client, as a rotation requires it.
    stands: i64,
    /// The DPoP key the grant is bound to (RFC 9449 §5), if any.
    dpop_jkt: Option<String>,
}

/// What a refused presentation comes to.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    /// Unknown, or live but not rotatable (expired, another client's, a grant that ended):
    /// plain `invalid_grant`. Also a consumed token already retried whose retry's successor
    /// is unused: the answer went to its twin, which is no sign of theft.
    Refuse,
    /// Reuse: the grant is revoked (spec §5.7).
    Revoke,
    /// Within the window: end the successor with this hash and issue another.
    Retry(Vec<u8>),
}

impl Refusal {
    fn verdict(&self, presented: &Presented<'_>) -> Verdict {
        let Some(consumed_at) = self.consumed_at else {
            return Verdict::Refuse;
        };
        let window = presented.client.retry_seconds;
        // The grant's client is the presenting one and the grant stands (`stands`); another
        // client presenting it, or a grant that ended, is reuse as before.
        if window <= 0 || consumed_at + window < presented.now || self.stands != 1 {
            return Verdict::Revoke;
        }
        let successor_unused = self.successor_consumed_at.is_none();
        match (&self.successor_hash, self.retried_at) {
            (Some(_), Some(_)) if successor_unused => Verdict::Refuse,
            (Some(hash), None)
                if successor_unused
                    && self
                        .successor_expires_at
                        .is_some_and(|expires_at| expires_at > presented.now) =>
            {
                Verdict::Retry(hash.clone())
            }
            // The successor was used, or the token was consumed before successors were
            // recorded (migration 0017).
            _ => Verdict::Revoke,
        }
    }
}

impl TenantStore<'_> {
    /// Why a rotation did not happen; a consumed token is reuse and revokes its grant, unless
    /// it is retried within its client's window.
    pub(crate) async fn diagnose_refusal(
        &self,
        presented: &Presented<'_>,
    ) -> Result<RefreshRotation, StoreError> {
        // Before anything is decided on a copy of the client that may be stale: a reuse
        // must not be found for a client that would no longer authenticate.
        if let Some(known) = presented.client.known {
            if !self
                .client_is_in_state(presented.client.client_id, known)
                .await?
            {
                return Ok(RefreshRotation::ClientChanged);
            }
        }
        let found: Option<Refusal> = sqlx::query_as(&REFUSAL)
            .bind(self.id_str())
            .bind(presented.token_hash.to_vec())
            .bind(presented.client.client_id)
            .bind(presented.grant_max_age)
            .bind(presented.now)
            .fetch_optional(self.pool())
            .await?;
        let Some(found) = found else {
            return Ok(RefreshRotation::Refused);
        };
        // A bound token without its key proves nothing about who holds it: it neither
        // retries nor, consumed, revokes the grant (else anyone who copied it could end the
        // user's grant without the device).
        if found
            .dpop_jkt
            .as_deref()
            .is_some_and(|bound| presented.client.dpop_jkt != Some(bound))
        {
            return Ok(RefreshRotation::WrongKey);
        }
        match found.verdict(presented) {
            Verdict::Refuse => Ok(RefreshRotation::Refused),
            Verdict::Revoke => self.revoke_reused(found.grant_id, presented.now).await,
            Verdict::Retry(successor) => {
                let retried = self
                    .retry_refresh_token(presented, &found.grant_id, &successor)
                    .await?;
                match retried {
                    Some(rotation) => Ok(rotation),
                    // Since the read, the successor was used (reuse), or a twin of this
                    // presentation retried first: losing that race is not theft, and the
                    // grant stands for the twin's answer.
                    None if self.is_consumed(&successor).await? => {
                        self.revoke_reused(found.grant_id, presented.now).await
                    }
                    None => Ok(RefreshRotation::Refused),
                }
            }
        }
    }

    /// Ends the unused successor of a consumed token and stores `presented.next` in its
    /// place, in one transaction; `None` when the successor is no longer live and unused,
    /// the token was retried meanwhile, or the grant no longer stands.
    ///
    /// Concurrency: the first statement is conditional on the successor's row
    /// (`consumed_at IS NULL AND expires_at > now`), the second on the presented token's
    /// (`retried_at IS NULL`, its successor still the one read). On PostgreSQL each locks
    /// its row, and a concurrent retry or rotation waits for this transaction, then
    /// re-checks the row it waited for (READ COMMITTED) and matches nothing; on SQLite the
    /// process's turn to write serializes them. So of two retries exactly one wins, on one
    /// node or several, and a retry and a rotation of the successor never both win.
    async fn retry_refresh_token(
        &self,
        presented: &Presented<'_>,
        grant_id: &str,
        successor: &[u8],
    ) -> Result<Option<RefreshRotation>, StoreError> {
        let now = presented.now;
        let mut tx = self.begin().await?;
        // Its expiry set back to its creation: no request finds it live whatever instant it
        // read as its `now`, and presenting it is plain `invalid_grant`, not reuse.
        let ended = sqlx::query(
            "UPDATE refresh_tokens SET expires_at = created_at \
             WHERE tenant_id = $1 AND token_hash = $2 AND grant_id = $3 \
               AND consumed_at IS NULL AND expires_at > $4",
        )
        .bind(self.id_str())
        .bind(successor.to_vec())
        .bind(grant_id)
        .bind(now)
        .execute(self.in_tx(&mut tx))
        .await?
        .rows_affected();
        let retried = match ended {
            1 => sqlx::query(&RETRIED)
                .bind(now)
                .bind(presented.next.token_hash.to_vec())
                .bind(self.id_str())
                .bind(presented.token_hash.to_vec())
                .bind(successor.to_vec())
                .bind(presented.client.client_id)
                .bind(presented.grant_max_age)
                .execute(self.in_tx(&mut tx))
                .await?
                .rows_affected(),
            _ => 0,
        };
        if retried != 1 {
            self.rollback(tx).await?;
            return Ok(None);
        }
        sqlx::query(&NEW_SUCCESSOR)
            .bind(self.id_str())
            .bind(presented.next.token_hash.to_vec())
            .bind(now)
            .bind(presented.next.expires_at)
            .bind(presented.grant_max_age)
            .bind(grant_id)
            .execute(self.in_tx(&mut tx))
            .await?;
        let found: Option<GrantAndUser> = sqlx::query_as(
            "SELECT g.grant_id, g.client_id, g.user_id, g.organization_guid, g.scope, \
               g.auth_time, g.created_at, g.revoked_at, g.sid, g.amr, u.username, \
               u.password_hash, u.name, u.email, u.created_at AS user_created_at \
             FROM grants g JOIN users u ON u.tenant_id = g.tenant_id AND u.user_id = g.user_id \
             WHERE g.tenant_id = $1 AND g.grant_id = $2",
        )
        .bind(self.id_str())
        .bind(grant_id)
        .fetch_optional(self.in_tx(&mut tx))
        .await?;
        // The grant stood when the token was marked retried, so its user exists (a
        // membership's foreign key) and this is always found.
        let Some(found) = found else {
            self.rollback(tx).await?;
            return Ok(None);
        };
        self.commit(tx).await?;
        let (grant, user) = grant_and_user(found);
        Ok(Some(RefreshRotation::Retried(grant, user)))
    }

    /// Whether a refresh token was consumed by a rotation.
    async fn is_consumed(&self, token_hash: &[u8]) -> Result<bool, StoreError> {
        let found: Option<(Option<i64>,)> = sqlx::query_as(
            "SELECT consumed_at FROM refresh_tokens WHERE tenant_id = $1 AND token_hash = $2",
        )
        .bind(self.id_str())
        .bind(token_hash.to_vec())
        .fetch_optional(self.pool())
        .await?;
        Ok(matches!(found, Some((Some(_),))))
    }

    /// Spec §5.7: a consumed token presented again revokes its grant.
    async fn revoke_reused(
        &self,
        grant_id: String,
        now: UnixTime,
    ) -> Result<RefreshRotation, StoreError> {
        let _turn = self.write_turn().await;
        self.revoke_grant(&grant_id, "refresh token reused", now)
            .await?;
        Ok(RefreshRotation::Reused { grant_id })
    }
}

/// The presented token (`$1` tenant, `$2` hash), its current successor, whether its grant
/// stands for client `$3` (maximum age `$4` at `$5`), and the DPoP key the grant is bound to.
static REFUSAL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT t.grant_id, t.consumed_at, t.retried_at, t.successor_hash, \
           s.consumed_at AS successor_consumed_at, s.expires_at AS successor_expires_at, \
           CASE WHEN {stands} THEN CAST(1 AS BIGINT) ELSE CAST(0 AS BIGINT) END AS stands, \
           (SELECT g.dpop_jkt FROM grants g \
             WHERE g.tenant_id = t.tenant_id AND g.grant_id = t.grant_id) AS dpop_jkt \
         FROM refresh_tokens t LEFT JOIN refresh_tokens s \
           ON s.tenant_id = t.tenant_id AND s.token_hash = t.successor_hash \
         WHERE t.tenant_id = $1 AND t.token_hash = $2",
        stands = grant_stands("t", "$3", "$4", "$5"),
    )
});

/// Marks the presented token (`$3` tenant, `$4` hash) retried at `$1`, its successor now
/// `$2`, if it still names the successor `$5` it was read with, was not retried yet, and its
/// grant stands for client `$6` (maximum age `$7`).
static RETRIED: LazyLock<String> = LazyLock::new(|| {
    format!(
        "UPDATE refresh_tokens SET retried_at = $1, successor_hash = $2 \
         WHERE tenant_id = $3 AND token_hash = $4 AND successor_hash = $5 \
           AND consumed_at IS NOT NULL AND retried_at IS NULL AND {stands}",
        stands = grant_stands("refresh_tokens", "$6", "$7", "$1"),
    )
});

/// The retry's successor (`$2`, created at `$3`), expiring at `$4` or at the end of grant
/// `$6` (maximum age `$5`), whichever comes first, as a rotation's.
static NEW_SUCCESSOR: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{INSERT_REFRESH_TOKEN} SELECT g.tenant_id, $2, g.grant_id, $3, \
           CASE WHEN $4 < g.created_at + $5 THEN $4 ELSE g.created_at + $5 END \
         FROM grants g WHERE g.tenant_id = $1 AND g.grant_id = $6",
    )
});

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grants::{NewRefreshToken, RefreshingClient};

    const NOW: i64 = 1_000;

    fn presented(retry_seconds: i64) -> Presented<'static> {
        Presented {
            token_hash: b"p",
            client: RefreshingClient::new("spa", retry_seconds),
            next: NewRefreshToken {
                token_hash: b"n",
                expires_at: NOW + 100,
            },
            grant_max_age: 1_000_000,
            now: NOW,
        }
    }

    /// Consumed at `NOW - 10`, its successor unused and live, its grant standing.
    fn consumed() -> Refusal {
        Refusal {
            grant_id: "g".to_owned(),
            consumed_at: Some(NOW - 10),
            retried_at: None,
            successor_hash: Some(b"s".to_vec()),
            successor_consumed_at: None,
            successor_expires_at: Some(NOW + 100),
            stands: 1,
            dpop_jkt: None,
        }
    }

    #[test]
    fn a_retry_needs_the_window_the_client_and_an_unused_live_successor() {
        let retry = Verdict::Retry(b"s".to_vec());
        assert_eq!(
            consumed().verdict(&presented(10)),
            retry,
            "at the window's end"
        );
        assert_eq!(consumed().verdict(&presented(9)), Verdict::Revoke);
        assert_eq!(consumed().verdict(&presented(0)), Verdict::Revoke);
        let other_client = Refusal {
            stands: 0,
            ..consumed()
        };
        assert_eq!(other_client.verdict(&presented(60)), Verdict::Revoke);
        let used = Refusal {
            successor_consumed_at: Some(NOW - 5),
            ..consumed()
        };
        assert_eq!(used.verdict(&presented(60)), Verdict::Revoke);
        let ended = Refusal {
            successor_expires_at: Some(NOW),
            ..consumed()
        };
        assert_eq!(ended.verdict(&presented(60)), Verdict::Revoke);
        let before_0017 = Refusal {
            successor_hash: None,
            successor_expires_at: None,
            ..consumed()
        };
        assert_eq!(before_0017.verdict(&presented(60)), Verdict::Revoke);
    }

    #[test]
    fn a_token_is_retried_once_and_its_twin_is_refused_without_revoking() {
        let retried = Refusal {
            retried_at: Some(NOW - 1),
            ..consumed()
        };
        assert_eq!(retried.verdict(&presented(60)), Verdict::Refuse);
        let retry_used = Refusal {
            successor_consumed_at: Some(NOW),
            ..retried
        };
        assert_eq!(retry_used.verdict(&presented(60)), Verdict::Revoke);
        let live = Refusal {
            consumed_at: None,
            ..consumed()
        };
        assert_eq!(live.verdict(&presented(60)), Verdict::Refuse);
    }
}
