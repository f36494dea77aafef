//! Counting sign-in attempts per account and per client address, for the throttle. The
//! policy (delays, lock, how many may be in flight) belongs to the caller; the store only
//! counts, atomically, so concurrent attempts on several nodes are all counted.
//!
//! An attempt is reserved before its password is checked and ended when the check is done:
//! a failure then adds to `failures`, a success frees its place. A row starts over once its
//! last attempt is older than the caller's window, which also frees a reservation whose
//! request never ended (a node stopped mid-check).

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
    /// Attempts that ended with a wrong password (0 while only reservations are held).
    pub failures: i64,
    pub first_failure_at: UnixTime,
    pub last_failure_at: UnixTime,
    /// Attempts reserved and not ended yet.
    pub in_flight: i64,
    /// When the latest attempt was reserved (or failed): the window runs from here.
    pub last_attempt_at: UnixTime,
}

/// How a reserved attempt ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttemptEnd {
    /// The password was wrong: the attempt becomes a failure.
    Failed,
    /// The password was right and the failures so far are forgiven (an account). Attempts
    /// still in flight keep their places.
    Succeeded,
    /// The attempt frees its place without forgiving anything: a success seen from a
    /// shared address, or an attempt refused before its password was checked.
    Released,
}

const RETURNED: &str =
    "RETURNING failures, first_failure_at, last_failure_at, in_flight, last_attempt_at";

type Row = (i64, i64, i64, i64, i64);

fn count(row: Row) -> FailureCount {
    let (failures, first_failure_at, last_failure_at, in_flight, last_attempt_at) = row;
    FailureCount {
        failures,
        first_failure_at,
        last_failure_at,
        in_flight,
        last_attempt_at,
    }
}

impl TenantStore<'_> {
    /// Reserves a place for one attempt, if the failures and attempts in flight together are
    /// below `allowed` (or the row is older than `window_start`, and starts over). `None`
    /// when there is no place: the attempt must not check a password. One statement, so two
    /// nodes reserving at once cannot both take the last place.
    pub async fn reserve_signin_attempt(
        &self,
        subject: FailureSubject<'_>,
        allowed: i64,
        now: UnixTime,
        window_start: UnixTime,
    ) -> Result<Option<FailureCount>, StoreError> {
        let (kind, key) = subject.parts();
        let row: Option<Row> = sqlx::query_as(&format!(
            "INSERT INTO signin_failures (tenant_id, kind, subject, failures, first_failure_at, \
             last_failure_at, in_flight, last_attempt_at, refusals) \
             VALUES ($1, $2, $3, 0, $4, $4, 1, $4, 0) \
             ON CONFLICT (tenant_id, kind, subject) DO UPDATE SET \
               failures = CASE WHEN signin_failures.last_attempt_at < $5 THEN 0 \
                               ELSE signin_failures.failures END, \
               refusals = CASE WHEN signin_failures.last_attempt_at < $5 THEN 0 \
                               ELSE signin_failures.refusals END, \
               in_flight = CASE WHEN signin_failures.last_attempt_at < $5 THEN 1 \
                                ELSE signin_failures.in_flight + 1 END, \
               last_attempt_at = $4 \
             WHERE signin_failures.last_attempt_at < $5 \
                OR signin_failures.failures + signin_failures.in_flight < $6 \
             {RETURNED}"
        ))
        .bind(self.id_str())
        .bind(kind)
        .bind(key)
        .bind(now)
        .bind(window_start)
        .bind(allowed)
        .fetch_optional(self.pool())
        .await?;
        Ok(row.map(count))
    }

    /// Ends a reserved attempt. A failure restarts a count older than `window_start`.
    pub async fn end_signin_attempt(
        &self,
        subject: FailureSubject<'_>,
        end: AttemptEnd,
        now: UnixTime,
        window_start: UnixTime,
    ) -> Result<(), StoreError> {
        let (kind, key) = subject.parts();
        let freed = "in_flight = CASE WHEN in_flight > 0 THEN in_flight - 1 ELSE 0 END";
        let sql = match end {
            AttemptEnd::Failed => {
                return self
                    .record_signin_failure(subject, now, window_start)
                    .await
                    .map(|_| ());
            }
            AttemptEnd::Succeeded => {
                format!("UPDATE signin_failures SET {freed}, failures = 0, refusals = 0")
            }
            AttemptEnd::Released => format!("UPDATE signin_failures SET {freed}"),
        };
        sqlx::query(&format!(
            "{sql} WHERE tenant_id = $1 AND kind = $2 AND subject = $3"
        ))
        .bind(self.id_str())
        .bind(kind)
        .bind(key)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Adds one failure, ending the attempt's reservation if it holds one. A count whose last
    /// attempt is older than `window_start` starts over.
    pub async fn record_signin_failure(
        &self,
        subject: FailureSubject<'_>,
        now: UnixTime,
        window_start: UnixTime,
    ) -> Result<FailureCount, StoreError> {
        let (kind, key) = subject.parts();
        let stale = "signin_failures.last_attempt_at < $5";
        let row: Row = sqlx::query_as(&format!(
            "INSERT INTO signin_failures (tenant_id, kind, subject, failures, first_failure_at, \
             last_failure_at, in_flight, last_attempt_at, refusals) \
             VALUES ($1, $2, $3, 1, $4, $4, 0, $4, 0) \
             ON CONFLICT (tenant_id, kind, subject) DO UPDATE SET \
               failures = CASE WHEN {stale} THEN 1 ELSE signin_failures.failures + 1 END, \
               first_failure_at = CASE WHEN {stale} OR signin_failures.failures = 0 THEN $4 \
                                       ELSE signin_failures.first_failure_at END, \
               in_flight = CASE WHEN {stale} OR signin_failures.in_flight = 0 THEN 0 \
                                ELSE signin_failures.in_flight - 1 END, \
               last_failure_at = $4, \
               last_attempt_at = $4, \
               refusals = 0 \
             {RETURNED}"
        ))
        .bind(self.id_str())
        .bind(kind)
        .bind(key)
        .bind(now)
        .bind(window_start)
        .fetch_one(self.pool())
        .await?;
        Ok(count(row))
    }

    /// Counts an attempt refused without checking its password; true for the first refusal
    /// since the last failure (or when nothing is counted), the one worth an audit row.
    pub async fn count_signin_refusal(
        &self,
        subject: FailureSubject<'_>,
    ) -> Result<bool, StoreError> {
        let (kind, key) = subject.parts();
        let refusals: Option<i64> = sqlx::query_scalar(
            "UPDATE signin_failures SET refusals = refusals + 1 \
             WHERE tenant_id = $1 AND kind = $2 AND subject = $3 RETURNING refusals",
        )
        .bind(self.id_str())
        .bind(kind)
        .bind(key)
        .fetch_optional(self.pool())
        .await?;
        Ok(refusals.is_none_or(|n| n == 1))
    }

    pub async fn signin_failures(
        &self,
        subject: FailureSubject<'_>,
    ) -> Result<Option<FailureCount>, StoreError> {
        let (kind, key) = subject.parts();
        let row: Option<Row> = sqlx::query_as(
            "SELECT failures, first_failure_at, last_failure_at, in_flight, last_attempt_at \
             FROM signin_failures WHERE tenant_id = $1 AND kind = $2 AND subject = $3",
        )
        .bind(self.id_str())
        .bind(kind)
        .bind(key)
        .fetch_optional(self.pool())
        .await?;
        Ok(row.map(count))
    }

    /// Forgets a subject's failures and reservations.
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
