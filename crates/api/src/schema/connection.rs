//! Relay connections (the Cursor Connections spec): `first`/`after`, edges with opaque
//! cursors, `nodes`, `pageInfo` and `totalCount`, over the store's keyset pages.

use async_graphql::connection::{Connection, CursorType, Edge};
use async_graphql::{Context, Object, OutputType};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use store::{
    Cursor, CustomerFilter, EmployeeFilter, InvoiceFilter, JobFilter, Page, PageRequest, SortKey,
    WorkOrderFilter,
};

use super::context::{gql, org, Result};
use crate::error::ApiError;

pub const DEFAULT_PAGE: i32 = 20;
pub const MAX_PAGE: i32 = 100;

/// A list of the API: its connection fields are `totalCount` beside the standard ones.
pub type List<T> = Connection<PageCursor, T, Total>;

/// An edge's position, encoded only when a client asks for it (`cursor`, `pageInfo`'s start
/// and end): most pages are read as `nodes`, and a page of 20 encoded 20 cursors for nothing.
pub struct PageCursor(Cursor);

impl CursorType for PageCursor {
    type Error = ApiError;

    fn decode_cursor(cursor: &str) -> std::result::Result<Self, ApiError> {
        parse_cursor(cursor).map(PageCursor)
    }

    fn encode_cursor(&self) -> String {
        encode_cursor(&self.0)
    }
}

/// Whether the client asked for the list's `totalCount`: the store then counts the list in
/// the page's own statement.
pub fn asks_total(ctx: &Context<'_>) -> bool {
    ctx.look_ahead().field("totalCount").exists()
}

/// `first` (default 20, at most 100) and `after` as the store wants them, and whether to
/// count the list with the page.
pub fn page_request(
    first: Option<i32>,
    after: Option<String>,
    with_total: bool,
) -> Result<PageRequest> {
    let first = first.unwrap_or(DEFAULT_PAGE);
    if !(0..=MAX_PAGE).contains(&first) {
        return Err(gql(ApiError::BadUserInput(format!(
            "first: must be from 0 to {MAX_PAGE}"
        ))));
    }
    let after = after.map(|c| decode_cursor(&c)).transpose()?;
    Ok(PageRequest {
        after,
        first: first.unsigned_abs(),
        with_total,
    })
}

/// A nested list (an employee's shifts, a work order's jobs, an invoice's payments, …) has no
/// pages: it answers its first items, `first` of them (default 100, at most 200), and the
/// store reads no more than that for each parent.
pub const NESTED_DEFAULT: i32 = 100;
pub const NESTED_MAX: i32 = 200;

/// `first` of a nested list, bounded as [`NESTED_MAX`] says.
pub fn nested_first(first: Option<i32>) -> Result<u32> {
    let first = first.unwrap_or(NESTED_DEFAULT);
    if !(0..=NESTED_MAX).contains(&first) {
        return Err(gql(ApiError::BadUserInput(format!(
            "first: must be from 0 to {NESTED_MAX}"
        ))));
    }
    Ok(first.unsigned_abs())
}

/// Cursors are opaque to clients: base64url of the sort key and the id.
pub fn encode_cursor(cursor: &Cursor) -> String {
    let text = match &cursor.key {
        SortKey::Int(v) => format!("i:{v}:{}", cursor.id),
        SortKey::Text(v) => format!("t:{v}:{}", cursor.id),
    };
    URL_SAFE_NO_PAD.encode(text)
}

fn decode_cursor(cursor: &str) -> Result<Cursor> {
    parse_cursor(cursor).map_err(gql)
}

fn parse_cursor(cursor: &str) -> std::result::Result<Cursor, ApiError> {
    let bad = || ApiError::BadUserInput("after: not a cursor of this list".into());
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| bad())?;
    let text = String::from_utf8(bytes).map_err(|_| bad())?;
    // A cursor is ours only if it holds what we put in one: text as `validate::text` lets
    // it in, so no control character but a newline.
    if text.contains(|c: char| c.is_control() && c != '\n') {
        return Err(bad());
    }
    let (kind, rest) = text.split_once(':').ok_or_else(bad)?;
    // Ids never contain ':', so the id is what follows the last one.
    let (key, id) = rest.rsplit_once(':').ok_or_else(bad)?;
    let key = match kind {
        "i" => SortKey::Int(key.parse().map_err(|_| bad())?),
        "t" => SortKey::Text(key.to_owned()),
        _ => return Err(bad()),
    };
    Ok(Cursor {
        key,
        id: id.to_owned(),
    })
}

/// The connection of a store page; `cursor` gives each row's position.
pub fn connection<R, T>(
    page: Page<R>,
    had_cursor: bool,
    total: Total,
    cursor: impl Fn(&R) -> Cursor,
    node: impl Fn(R) -> T,
) -> List<T>
where
    T: OutputType,
{
    let total = match page.total {
        Some(count) => Total::Counted(count),
        None => total,
    };
    let mut list = Connection::with_additional_fields(had_cursor, page.has_next_page, total);
    list.edges = page
        .items
        .into_iter()
        .map(|row| Edge::new(PageCursor(cursor(&row)), node(row)))
        .collect();
    list
}

/// The list's length, counted with its page, or the filter of the list, kept so
/// `totalCount` is counted only when asked for.
pub enum Total {
    Counted(i64),
    Jobs(JobFilter),
    WorkOrders(WorkOrderFilter),
    Customers(CustomerFilter),
    Invoices(InvoiceFilter),
    Employees(EmployeeFilter),
}

#[Object]
impl Total {
    /// How many items the list has in all, across pages.
    async fn total_count(&self, ctx: &Context<'_>) -> Result<i64> {
        let org = org(ctx)?;
        let count = match self {
            Total::Counted(count) => Ok(*count),
            Total::Jobs(f) => org.count_jobs(f).await,
            Total::WorkOrders(f) => org.count_work_orders(f).await,
            Total::Customers(f) => org.count_customers(f).await,
            Total::Invoices(f) => org.count_invoices(f).await,
            Total::Employees(f) => org.count_employees(f).await,
        };
        count.map_err(gql)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_garbage_is_refused() {
        for key in [
            SortKey::Int(-5),
            SortKey::Text("O'Neil: Plumbing".into()),
            SortKey::Text("two\nlines".into()),
        ] {
            let cursor = Cursor {
                key,
                id: "job_1".into(),
            };
            assert_eq!(decode_cursor(&encode_cursor(&cursor)).unwrap(), cursor);
        }
        for garbage in ["", "!!", "aTox", "eDoxOmE"] {
            assert!(decode_cursor(garbage).is_err(), "{garbage}");
        }
        for text in ["t:a\u{0}b:job_1", "t:a:job\u{0}", "t:\u{7}:job_1"] {
            assert!(
                decode_cursor(&URL_SAFE_NO_PAD.encode(text)).is_err(),
                "{text:?}"
            );
        }
    }

    #[test]
    fn page_sizes_are_bounded() {
        assert_eq!(page_request(None, None, false).unwrap().first, 20);
        assert_eq!(page_request(Some(100), None, false).unwrap().first, 100);
        assert_eq!(page_request(Some(0), None, false).unwrap().first, 0);
        assert!(page_request(Some(101), None, false).is_err());
        assert!(page_request(Some(-1), None, false).is_err());
    }

    #[test]
    fn nested_lists_are_bounded() {
        assert_eq!(nested_first(None).unwrap(), 100);
        assert_eq!(nested_first(Some(200)).unwrap(), 200);
        assert_eq!(nested_first(Some(0)).unwrap(), 0);
        assert!(nested_first(Some(201)).is_err());
        assert!(nested_first(Some(-1)).is_err());
    }
}
