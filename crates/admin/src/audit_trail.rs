//! The tenant's audit trail, as an admin reads it: newest first, a page at a time (keyset on
//! the order of writing), filtered by event kind and by time.

use chrono::DateTime;
use serde::{Deserialize, Serialize};
use store::{AuditEvent, AuditFilter};
use utoipa::{IntoParams, ToSchema};

use crate::context::Ctx;
use crate::error::AdminError;
use crate::page::{Page, PageQuery, PageRequest};

/// The longest event kind that is searched for.
const MAX_KIND_CHARS: usize = 100;

/// `GET /admin/v1/tenants/{tenant}/audit`'s query, as sent.
#[derive(Clone, Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// Only events of this kind, exactly (`signin.failed`, `admin.user.disabled`).
    pub kind: Option<String>,
    /// Only events at or after this time: Unix seconds or RFC 3339.
    pub since: Option<String>,
    /// Only events before this time: Unix seconds or RFC 3339.
    pub until: Option<String>,
    /// Where the previous page ended: its `next_cursor`.
    pub cursor: Option<String>,
    /// How many events at most, 1 to 200 (50 when absent).
    pub limit: Option<u32>,
}

/// The query, checked.
#[derive(Clone, Debug)]
pub struct AuditRequest {
    /// The page; its key is the `seq` of the last event shown.
    pub page: PageRequest<i64>,
    pub kind: Option<String>,
    pub since: Option<i64>,
    pub until: Option<i64>,
}

impl AuditRequest {
    pub fn parse(query: &AuditQuery) -> Result<AuditRequest, AdminError> {
        let page = PageRequest::parse(&PageQuery {
            cursor: query.cursor.clone(),
            limit: query.limit,
            q: None,
        })?;
        let kind = match query.kind.as_deref() {
            None | Some("") => None,
            Some(kind) if kind.chars().count() > MAX_KIND_CHARS => {
                return Err(AdminError::Invalid(format!(
                    "kind: at most {MAX_KIND_CHARS} characters"
                )))
            }
            Some(kind) if !kind.chars().all(is_kind_char) => {
                return Err(AdminError::Invalid(
                    "kind: only lowercase letters, digits and . _ - are allowed".to_owned(),
                ))
            }
            Some(kind) => Some(kind.to_owned()),
        };
        Ok(AuditRequest {
            page,
            kind,
            since: parse_time(query.since.as_deref(), "since")?,
            until: parse_time(query.until.as_deref(), "until")?,
        })
    }
}

/// An audit event as the admin API shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AuditEventView {
    /// The order of writing in the tenant's trail.
    pub seq: i64,
    /// A stable dotted name: `signin.failed`, `admin.user.disabled`.
    pub kind: String,
    /// Unix seconds.
    pub occurred_at: i64,
    /// The user concerned (`sub`), or the username typed at a failed sign-in.
    pub subject: Option<String>,
    pub client_id: Option<String>,
    /// The client address of a browser step.
    pub address: Option<String>,
    /// For people; never a secret. Empty when the kind says it all.
    pub detail: String,
}

impl From<AuditEvent> for AuditEventView {
    fn from(event: AuditEvent) -> AuditEventView {
        AuditEventView {
            seq: event.seq,
            kind: event.kind,
            occurred_at: event.occurred_at,
            subject: event.subject,
            client_id: event.client_id,
            address: event.address,
            detail: event.detail,
        }
    }
}

/// One page of `tenant`'s trail, newest first.
pub async fn list(
    ctx: &Ctx<'_>,
    tenant: &str,
    request: &AuditRequest,
) -> Result<Page<AuditEventView>, AdminError> {
    let id = ctx.tenant(tenant).await?;
    let filter = AuditFilter {
        kind: request.kind.as_deref(),
        since: request.since,
        until: request.until,
        before_seq: request.page.after,
    };
    let rows = ctx
        .records(&id)
        .list_audit_events(&filter, request.page.fetch())
        .await?;
    Ok(Page::from_rows(
        rows,
        &request.page,
        |e| e.seq,
        AuditEventView::from,
    ))
}

fn is_kind_char(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-')
}

/// Unix seconds, or an RFC 3339 time (`2026-11-25T08:00:00Z`).
pub fn parse_time(value: Option<&str>, field: &str) -> Result<Option<i64>, AdminError> {
    let Some(value) = value.filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    if let Ok(seconds) = value.parse::<i64>() {
        return Ok(Some(seconds));
    }
    DateTime::parse_from_rfc3339(value)
        .map(|t| Some(t.timestamp()))
        .map_err(|_| {
            AdminError::Invalid(format!(
                "{field}: not Unix seconds or an RFC 3339 time (2026-11-25T08:00:00Z)"
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(query: AuditQuery) -> Result<AuditRequest, AdminError> {
        AuditRequest::parse(&query)
    }

    #[test]
    fn times_are_unix_seconds_or_rfc3339() {
        assert_eq!(
            parse_time(Some("1700000000"), "since").unwrap(),
            Some(1_700_000_000)
        );
        assert_eq!(
            parse_time(Some("2023-11-14T22:13:20Z"), "since").unwrap(),
            Some(1_700_000_000)
        );
        assert_eq!(parse_time(Some(""), "since").unwrap(), None);
        let Err(AdminError::Invalid(detail)) = parse_time(Some("yesterday"), "until") else {
            panic!("yesterday is not a time");
        };
        assert!(detail.starts_with("until"), "{detail}");
    }

    #[test]
    fn kinds_are_dotted_names_and_bad_ones_name_the_field() {
        let request = parse(AuditQuery {
            kind: Some("admin.user.password_link".to_owned()),
            ..AuditQuery::default()
        })
        .unwrap();
        assert_eq!(request.kind.as_deref(), Some("admin.user.password_link"));
        for bad in ["Signin", "a b", "x\u{0}", &"a".repeat(101)] {
            let Err(AdminError::Invalid(detail)) = parse(AuditQuery {
                kind: Some(bad.to_owned()),
                ..AuditQuery::default()
            }) else {
                panic!("{bad:?} was accepted");
            };
            assert!(detail.starts_with("kind"), "{detail}");
        }
    }
}
