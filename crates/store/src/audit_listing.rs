//! The audit trail as the admin API lists it: newest first, a page at a time by `seq` (the
//! order of writing), filtered by kind and time.

use crate::audit::{audit_event_from_row, AuditEvent, AuditRow};
use crate::error::StoreError;
use crate::tenant::TenantStore;
use crate::UnixTime;

/// Which events, and where the previous page ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuditFilter<'a> {
    /// Only events of this exact kind (`signin.failed`).
    pub kind: Option<&'a str>,
    /// Only events that occurred at or after this time.
    pub since: Option<UnixTime>,
    /// Only events that occurred before this time.
    pub until: Option<UnixTime>,
    /// Only events written before this one: the last `seq` of the previous page.
    pub before_seq: Option<i64>,
}

impl TenantStore<'_> {
    /// Up to `limit` events matching `filter`, newest first. The key `(tenant_id, seq)`
    /// orders them, so a page starts where the last one ended, however many events were
    /// written meanwhile.
    pub async fn list_audit_events(
        &self,
        filter: &AuditFilter<'_>,
        limit: i64,
    ) -> Result<Vec<AuditEvent>, StoreError> {
        // Each optional filter is `$n IS NULL OR …`, so one statement serves every mix.
        let rows: Vec<AuditRow> = sqlx::query_as(
            "SELECT seq, kind, occurred_at, subject, client_id, address, detail \
             FROM audit_events WHERE tenant_id = $1 \
             AND ($2 IS NULL OR seq < $2) \
             AND ($3 IS NULL OR kind = $3) \
             AND ($4 IS NULL OR occurred_at >= $4) \
             AND ($5 IS NULL OR occurred_at < $5) \
             ORDER BY seq DESC LIMIT $6",
        )
        .bind(self.id_str())
        .bind(filter.before_seq)
        .bind(filter.kind)
        .bind(filter.since)
        .bind(filter.until)
        .bind(limit)
        .fetch_all(self.pool())
        .await?;
        Ok(rows.into_iter().map(audit_event_from_row).collect())
    }
}
