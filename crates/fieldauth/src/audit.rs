//! `fieldauth audit list`: a tenant's audit trail, merged with the issuer's signing-key
//! events, which belong to every tenant because the keys sign all of their tokens. The
//! tenant's events are read through the admin API's listing ([`admin::audit_trail`]).

use admin::audit_trail::{self, parse_time, AuditEventView, AuditQuery, AuditRequest};
use admin::page::MAX_LIMIT;
use admin::AdminError;
use anyhow::Context;
use chrono::{DateTime, SecondsFormat};
use serde_json::json;
use store::{AuditEvent, KeyEvent, TenantId, UnixTime};

use crate::manage::Shell;
use crate::report::Report;

/// Which events to list: the newest `limit` of those matching the filters.
#[derive(Clone, Debug, Default)]
pub struct Selection<'a> {
    pub limit: u16,
    pub kind: Option<&'a str>,
    /// Unix seconds or RFC 3339, as the admin API reads them.
    pub since: Option<&'a str>,
    pub until: Option<&'a str>,
}

/// The tenant's newest `limit` events and key events together, oldest first. The tenant's
/// events come page by page from the admin API's own listing.
pub async fn list(
    shell: &Shell<'_>,
    tenant: &str,
    selection: &Selection<'_>,
) -> anyhow::Result<Report> {
    let tenant_id = TenantId::parse(tenant).with_context(|| format!("--tenant {tenant:?}"))?;
    let limit = usize::from(selection.limit);
    let ctx = shell.ctx("");
    let mut events = Vec::new();
    let mut cursor = None;
    while events.len() < limit {
        let query = AuditQuery {
            kind: selection.kind.map(str::to_owned),
            since: selection.since.map(str::to_owned),
            until: selection.until.map(str::to_owned),
            cursor: cursor.take(),
            limit: u32::try_from(limit - events.len())
                .ok()
                .map(|n| n.min(MAX_LIMIT)),
        };
        // Each refusal names its field, which is the flag's name.
        let request = AuditRequest::parse(&query).map_err(|e| anyhow::anyhow!("--{e}"))?;
        let page =
            audit_trail::list(&ctx, tenant, &request)
                .await
                .map_err(|error| match error {
                    AdminError::NotFound(_) => anyhow::anyhow!("tenant {tenant_id}: {error}"),
                    other => anyhow::anyhow!(
                        "cannot read the audit trail of tenant {tenant_id}: {other}"
                    ),
                })?;
        events.extend(page.items.into_iter().map(from_view));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    let since = parse_time(selection.since, "since").map_err(|e| anyhow::anyhow!("--{e}"))?;
    let until = parse_time(selection.until, "until").map_err(|e| anyhow::anyhow!("--{e}"))?;
    let keys = shell
        .store
        .key_events(i64::from(selection.limit))
        .await
        .context("cannot read the signing-key events")?
        .into_iter()
        .filter(|k| selection.kind.is_none_or(|kind| k.kind == kind))
        .filter(|k| since.is_none_or(|t| k.occurred_at >= t))
        .filter(|k| until.is_none_or(|t| k.occurred_at < t))
        .collect();
    let entries = merge(events, keys, limit);
    let list: Vec<_> = entries.iter().map(Entry::to_json).collect();
    Ok(Report::new(
        json!({ "tenant": tenant_id.as_str(), "events": list }),
        text(&entries),
    ))
}

fn from_view(view: AuditEventView) -> AuditEvent {
    AuditEvent {
        seq: view.seq,
        kind: view.kind,
        occurred_at: view.occurred_at,
        subject: view.subject,
        client_id: view.client_id,
        address: view.address,
        detail: view.detail,
    }
}

/// One event of either source, as listed.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    occurred_at: UnixTime,
    source: Source,
    /// The order of writing within its source.
    seq: i64,
    kind: String,
    subject: Option<String>,
    client_id: Option<String>,
    address: Option<String>,
    detail: Option<String>,
    kid: Option<String>,
}

/// Where an event comes from. The derived order is the tie-break within one second: key
/// events first, since a key exists before any token it signs (a node makes its first key
/// before it serves, often in the same second as the first sign-in).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Source {
    Key,
    Tenant,
}

impl Entry {
    fn from_audit(event: AuditEvent) -> Entry {
        Entry {
            occurred_at: event.occurred_at,
            source: Source::Tenant,
            seq: event.seq,
            kind: event.kind,
            subject: event.subject,
            client_id: event.client_id,
            address: event.address,
            detail: Some(event.detail).filter(|d| !d.is_empty()),
            kid: None,
        }
    }

    fn from_key(event: KeyEvent) -> Entry {
        Entry {
            occurred_at: event.occurred_at,
            source: Source::Key,
            seq: event.seq,
            detail: Some(format!("kid {}", event.kid)),
            kind: event.kind,
            subject: None,
            client_id: None,
            address: None,
            kid: Some(event.kid),
        }
    }

    fn to_json(&self) -> serde_json::Value {
        json!({
            "occurred_at": rfc3339(self.occurred_at),
            "kind": self.kind,
            "subject": self.subject,
            "client_id": self.client_id,
            "address": self.address,
            "detail": self.detail,
            "kid": self.kid,
        })
    }
}

/// Orders both sources by time, then key events before tenant events in the same second,
/// then by the order each source wrote them; keeps the newest `limit`, oldest first. Each
/// source holds its own newest `limit` at most, so the newest `limit` overall are among them.
fn merge(events: Vec<AuditEvent>, keys: Vec<KeyEvent>, limit: usize) -> Vec<Entry> {
    let mut entries: Vec<Entry> = events
        .into_iter()
        .map(Entry::from_audit)
        .chain(keys.into_iter().map(Entry::from_key))
        .collect();
    entries.sort_by_key(|e| (e.occurred_at, e.source, e.seq));
    let older = entries.len().saturating_sub(limit);
    entries.split_off(older)
}

/// RFC 3339 in UTC to the second; the raw number if the time is out of chrono's range.
fn rfc3339(t: UnixTime) -> String {
    DateTime::from_timestamp(t, 0).map_or_else(
        || t.to_string(),
        |t| t.to_rfc3339_opts(SecondsFormat::Secs, true),
    )
}

/// One line per event, columns aligned: time, kind, subject, client_id, address, detail.
fn text(entries: &[Entry]) -> String {
    let rows: Vec<[String; 6]> = entries
        .iter()
        .map(|e| {
            [
                rfc3339(e.occurred_at),
                cell(Some(&e.kind)),
                cell(e.subject.as_deref()),
                cell(e.client_id.as_deref()),
                cell(e.address.as_deref()),
                cell(e.detail.as_deref()),
            ]
        })
        .collect();
    let mut widths = [0; 6];
    for row in &rows {
        for (width, value) in widths.iter_mut().zip(row) {
            *width = (*width).max(value.chars().count());
        }
    }
    rows.iter()
        .map(|row| {
            let padded: Vec<String> = row
                .iter()
                .zip(widths)
                .enumerate()
                .map(|(i, (value, width))| match i {
                    5 => value.clone(),
                    _ => format!("{value:<width$}"),
                })
                .collect();
            padded.join("  ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `-` for an absent value; control characters escaped, since a subject can be what someone
/// typed at the sign-in form and must not start a line of its own.
fn cell(value: Option<&str>) -> String {
    match value {
        None | Some("") => "-".to_owned(),
        Some(value) => value
            .chars()
            .flat_map(|c| match c.is_control() {
                true => c.escape_default().collect::<Vec<_>>(),
                false => vec![c],
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn audit(seq: i64, at: UnixTime, kind: &str) -> AuditEvent {
        AuditEvent {
            seq,
            kind: kind.to_owned(),
            occurred_at: at,
            subject: Some("00000000-0000-4000-8000-000000000000".to_owned()),
            client_id: Some("spa".to_owned()),
            address: None,
            detail: String::new(),
        }
    }

    fn key(seq: i64, at: UnixTime, kid: &str) -> KeyEvent {
        KeyEvent {
            seq,
            kind: "key.created".to_owned(),
            occurred_at: at,
            kid: kid.to_owned(),
        }
    }

    fn kinds(entries: &[Entry]) -> Vec<(UnixTime, &str)> {
        entries
            .iter()
            .map(|e| (e.occurred_at, e.kind.as_str()))
            .collect()
    }

    #[test]
    fn merges_by_time_with_key_events_first_within_a_second() {
        let events = vec![
            audit(1, 100, "signin.succeeded"),
            audit(2, 200, "consent.given"),
            audit(3, 200, "grant.revoked"),
        ];
        let keys = vec![key(7, 50, "k1"), key(8, 200, "k2"), key(9, 300, "k3")];
        let merged = merge(events, keys, 10);
        assert_eq!(
            kinds(&merged),
            [
                (50, "key.created"),
                (100, "signin.succeeded"),
                (200, "key.created"),
                (200, "consent.given"),
                (200, "grant.revoked"),
                (300, "key.created"),
            ]
        );
        assert_eq!(merged[2].kid.as_deref(), Some("k2"));
        assert_eq!(merged[2].detail.as_deref(), Some("kid k2"));
        assert_eq!(merged[2].subject, None);
    }

    #[test]
    fn within_a_source_and_second_the_writing_order_holds() {
        // Given in reverse: the sequence, not the input order, decides.
        let events = vec![
            audit(5, 100, "signin.failed"),
            audit(4, 100, "signin.refused"),
        ];
        let merged = merge(events, vec![], 10);
        assert_eq!(
            kinds(&merged),
            [(100, "signin.refused"), (100, "signin.failed")]
        );
    }

    #[test]
    fn the_limit_keeps_the_newest_in_total_oldest_first() {
        let events = vec![audit(1, 10, "a"), audit(2, 30, "b"), audit(3, 50, "c")];
        let keys = vec![key(1, 20, "k1"), key(2, 40, "k2"), key(3, 60, "k3")];
        let merged = merge(events, keys, 3);
        assert_eq!(
            kinds(&merged),
            [(40, "key.created"), (50, "c"), (60, "key.created")]
        );
        assert!(merge(vec![audit(1, 1, "a")], vec![], 1).len() == 1);
        assert!(merge(vec![], vec![], 5).is_empty());
    }

    #[test]
    fn an_empty_detail_is_absent() {
        let merged = merge(vec![audit(1, 1, "consent.denied")], vec![], 1);
        assert_eq!(merged[0].detail, None);
        assert_eq!(merged[0].to_json()["detail"], serde_json::Value::Null);
        assert_eq!(merged[0].to_json()["kid"], serde_json::Value::Null);
    }

    #[test]
    fn times_are_rfc3339_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000), "2023-11-14T22:13:20Z");
    }

    #[test]
    fn text_has_aligned_columns_dashes_and_no_injected_lines() {
        let mut failed = audit(2, 1_700_000_060, "signin.failed");
        failed.subject = Some("mallory\n2023-11-14T22:14:20Z  signin.succeeded".to_owned());
        failed.address = Some("127.0.0.1".to_owned());
        failed.detail = "wrong username or password".to_owned();
        let merged = merge(
            vec![audit(1, 1_700_000_000, "consent.denied"), failed],
            vec![],
            10,
        );
        let text = text(&merged);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert_eq!(
            lines[0],
            "2023-11-14T22:13:20Z  consent.denied  00000000-0000-4000-8000-000000000000             spa  -          -"
        );
        assert_eq!(
            lines[1],
            "2023-11-14T22:14:20Z  signin.failed   mallory\\n2023-11-14T22:14:20Z  signin.succeeded  spa  127.0.0.1  wrong username or password"
        );
    }
}
