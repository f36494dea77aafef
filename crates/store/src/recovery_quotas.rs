//! How many password-recovery mails were asked for, per account and per client address, in
//! fixed windows, so that nobody can make the server send mail without bound. The limits
//! belong to the caller; the store counts atomically, for every node.

use crate::error::StoreError;
use crate::tenant::TenantStore;
use crate::UnixTime;

/// What a recovery request is counted against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecoverySubject<'a> {
    /// An account, by its `sub`.
    Account(&'a str),
    /// A client address (its throttle key: an IPv6 address by its /64).
    Address(&'a str),
}

impl RecoverySubject<'_> {
    fn parts(&self) -> (&'static str, &str) {
        match self {
            RecoverySubject::Account(sub) => ("account", sub),
            RecoverySubject::Address(key) => ("address", key),
        }
    }
}

/// Whether a request fits its quota.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecoveryQuota {
    Taken,
    /// Over the limit. `first` is the first refusal of the window: the one worth auditing.
    Refused {
        first: bool,
    },
}

impl TenantStore<'_> {
    /// Counts one recovery request against `subject`: taken while at most `limit` were
    /// counted in the window that began within the last `window` seconds (a window that has
    /// ended starts a new one now). Refusals are counted too, in the same statement, so the
    /// first one can be told from the rest on every node; the count cannot pass the limit by
    /// more than the refusals themselves, and it ends with the window.
    pub async fn take_recovery_quota(
        &self,
        subject: RecoverySubject<'_>,
        limit: i64,
        now: UnixTime,
        window: UnixTime,
    ) -> Result<RecoveryQuota, StoreError> {
        let (kind, key) = subject.parts();
        let ended = "recovery_quotas.window_started_at <= $4 - $5";
        let _turn = self.write_turn().await;
        let requests: i64 = sqlx::query_scalar(&format!(
            "INSERT INTO recovery_quotas (tenant_id, kind, subject, requests, window_started_at) \
             VALUES ($1, $2, $3, 1, $4) \
             ON CONFLICT (tenant_id, kind, subject) DO UPDATE SET \
               requests = CASE WHEN {ended} THEN 1 ELSE recovery_quotas.requests + 1 END, \
               window_started_at = CASE WHEN {ended} THEN $4 \
                                        ELSE recovery_quotas.window_started_at END \
             RETURNING requests"
        ))
        .bind(self.id_str())
        .bind(kind)
        .bind(key)
        .bind(now)
        .bind(window)
        .fetch_one(self.pool())
        .await?;
        Ok(match requests {
            n if n <= limit => RecoveryQuota::Taken,
            n => RecoveryQuota::Refused {
                first: n == limit + 1,
            },
        })
    }
}
