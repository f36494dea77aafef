//! The audit trail: one row per event that an operator may have to account for later (who
//! signed in or failed to, who consented, which grant was revoked and why), kept by tenant,
//! and the signing keys' own events beside the keys.

use crate::db::Store;
use crate::error::StoreError;
use crate::tenant::TenantStore;
use crate::UnixTime;

/// An event as written. `kind` is a stable dotted name (`signin.failed`); `detail` is a short
/// text for people and never holds a secret.
#[derive(Clone, Debug)]
pub struct NewAuditEvent<'a> {
    pub kind: &'a str,
    pub occurred_at: UnixTime,
    pub subject: Option<&'a str>,
    pub client_id: Option<&'a str>,
    pub address: Option<&'a str>,
    pub detail: &'a str,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditEvent {
    pub seq: i64,
    pub kind: String,
    pub occurred_at: UnixTime,
    pub subject: Option<String>,
    pub client_id: Option<String>,
    pub address: Option<String>,
    pub detail: String,
}

/// A signing-key event: `key.created` or `key.retired`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyEvent {
    pub seq: i64,
    pub kind: String,
    pub occurred_at: UnixTime,
    pub kid: String,
}

pub(crate) type AuditRow = (
    i64,
    String,
    i64,
    Option<String>,
    Option<String>,
    Option<String>,
    String,
);

impl TenantStore<'_> {
    pub async fn record_audit_event(&self, event: &NewAuditEvent<'_>) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO audit_events \
             (tenant_id, occurred_at, kind, subject, client_id, address, detail) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(self.id_str())
        .bind(event.occurred_at)
        .bind(event.kind)
        .bind(event.subject)
        .bind(event.client_id)
        .bind(event.address)
        .bind(event.detail)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// The newest `limit` events, oldest first.
    pub async fn audit_events(&self, limit: i64) -> Result<Vec<AuditEvent>, StoreError> {
        let mut rows: Vec<AuditRow> = sqlx::query_as(
            "SELECT seq, kind, occurred_at, subject, client_id, address, detail \
             FROM audit_events WHERE tenant_id = $1 ORDER BY seq DESC LIMIT $2",
        )
        .bind(self.id_str())
        .bind(limit)
        .fetch_all(self.pool())
        .await?;
        rows.reverse();
        Ok(rows.into_iter().map(audit_event_from_row).collect())
    }
}

pub(crate) fn audit_event_from_row(row: AuditRow) -> AuditEvent {
    let (seq, kind, occurred_at, subject, client_id, address, detail) = row;
    AuditEvent {
        seq,
        kind,
        occurred_at,
        subject,
        client_id,
        address,
        detail,
    }
}

impl Store {
    /// The newest `limit` signing-key events, oldest first.
    pub async fn key_events(&self, limit: i64) -> Result<Vec<KeyEvent>, StoreError> {
        let mut rows: Vec<(i64, String, i64, String)> = sqlx::query_as(
            "SELECT seq, kind, occurred_at, kid FROM key_events ORDER BY seq DESC LIMIT $1",
        )
        .bind(limit)
        .fetch_all(self.pool())
        .await?;
        rows.reverse();
        Ok(rows
            .into_iter()
            .map(|(seq, kind, occurred_at, kid)| KeyEvent {
                seq,
                kind,
                occurred_at,
                kid,
            })
            .collect())
    }
}
