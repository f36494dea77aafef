//! Counting failed sign-ins per account and per client address, for the throttle. The
//! policy (delays, lock) belongs to the caller; the store only counts, atomically, so
//! concurrent failures on several nodes are all counted.

use crate::error::StoreError;
use crate::tenant::TenantStore;
use crate::UnixTime;

/// What a failure count is kept for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureSubject<'a> {
    /// A username, as typed (normalized), whether or not the account exists.
    Account(&'a str),
    /// The client's IP address.
    Address(&'a str),
}

impl FailureSubject<'_> {
    fn parts(&self) -> (&'static str, &str) {
        match self {
            FailureSubject::Account(username) => ("account", username),
            FailureSubject::Address(address) => ("address", address),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FailureCount {
    pub failures: i64,
    pub first_failure_at: UnixTime,
    pub last_failure_at: UnixTime,
}

impl TenantStore<'_> {
    /// Adds one failure. A count whose last failure is older than `window_start` starts over.
    pub async fn record_signin_failure(
        &self,
        subject: FailureSubject<'_>,
        now: UnixTime,
        window_start: UnixTime,
    ) -> Result<FailureCount, StoreError> {
        let (kind, key) = subject.parts();
        let (failures, first_failure_at, last_failure_at): (i64, i64, i64) = sqlx::query_as(
            "INSERT INTO signin_failures (tenant_id, kind, subject, failures, first_failure_at, \
             last_failure_at) VALUES ($1, $2, $3, 1, $4, $4) \
             ON CONFLICT (tenant_id, kind, subject) DO UPDATE SET \
               failures = CASE WHEN signin_failures.last_failure_at < $5 THEN 1 \
                               ELSE signin_failures.failures + 1 END, \
               first_failure_at = CASE WHEN signin_failures.last_failure_at < $5 THEN $4 \
                                       ELSE signin_failures.first_failure_at END, \
               last_failure_at = $4 \
             RETURNING failures, first_failure_at, last_failure_at",
        )
        .bind(self.id_str())
        .bind(kind)
        .bind(key)
        .bind(now)
        .bind(window_start)
        .fetch_one(self.pool())
        .await?;
        Ok(FailureCount {
            failures,
            first_failure_at,
            last_failure_at,
        })
    }

    pub async fn signin_failures(
        &self,
        subject: FailureSubject<'_>,
    ) -> Result<Option<FailureCount>, StoreError> {
        let (kind, key) = subject.parts();
        let row: Option<(i64, i64, i64)> = sqlx::query_as(
            "SELECT failures, first_failure_at, last_failure_at FROM signin_failures \
             WHERE tenant_id = $1 AND kind = $2 AND subject = $3",
        )
        .bind(self.id_str())
        .bind(kind)
        .bind(key)
        .fetch_optional(self.pool())
        .await?;
        Ok(row.map(
            |(failures, first_failure_at, last_failure_at)| FailureCount {
                failures,
                first_failure_at,
                last_failure_at,
            },
        ))
    }

    /// Forgets an account's failures after a successful sign-in.
    pub async fn clear_signin_failures(
        &self,
        subject: FailureSubject<'_>,
    ) -> Result<(), StoreError> {
        let (kind, key) = subject.parts();
        sqlx::query(
            "DELETE FROM signin_failures WHERE tenant_id = $1 AND kind = $2 AND subject = $3",
        )
        .bind(self.id_str())
        .bind(kind)
        .bind(key)
        .execute(self.pool())
        .await?;
        Ok(())
    }
}
