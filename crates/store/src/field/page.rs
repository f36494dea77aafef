//! Keyset pages: every list is ordered by a sort key and the id, and a page starts after a
//! cursor, so pages stay stable and cheap however deep a client reads.

use super::sql::Sql;
use crate::error::StoreError;

/// The value a list is ordered by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SortKey {
    Int(i64),
    Text(String),
}

/// The position of a row in its list: its sort key and id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cursor {
    pub key: SortKey,
    pub id: String,
}

#[derive(Clone, Debug)]
pub struct PageRequest {
    pub after: Option<Cursor>,
    /// The number of rows wanted; the caller enforces its maximum.
    pub first: u32,
    /// Also count the whole list (every page of it), in the same statement.
    pub with_total: bool,
}

#[derive(Clone, Debug)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub has_next_page: bool,
    /// The rows of every page, when [`PageRequest::with_total`] asked for it.
    pub total: Option<i64>,
}

impl<T> Page<T> {
    /// `rows` was fetched with one row more than asked, to learn whether a next page exists.
    pub(crate) fn from_rows(mut rows: Vec<T>, first: u32, total: Option<i64>) -> Page<T> {
        let has_next_page = rows.len() > first as usize;
        rows.truncate(first as usize);
        Page {
            items: rows,
            has_next_page,
            total,
        }
    }
}

/// How a list is ordered: its sort column (numbers or text) and its id column.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Order {
    pub(crate) key_column: &'static str,
    pub(crate) numeric: bool,
    pub(crate) id_column: &'static str,
}

impl Order {
    pub(crate) fn cursor(&self, key: SortKey, id: &str) -> Cursor {
        Cursor {
            key,
            id: id.to_owned(),
        }
    }
}

/// Appends the cursor condition, the order and the limit. A cursor of another list (its key
/// of the other kind) is refused rather than compared.
pub(crate) fn page_clause(
    sql: &mut Sql,
    order: Order,
    page: &PageRequest,
) -> Result<(), StoreError> {
    let Order {
        key_column,
        id_column,
        ..
    } = order;
    if let Some(cursor) = &page.after {
        let key: super::sql::Value = match (&cursor.key, order.numeric) {
            (SortKey::Int(v), true) => (*v).into(),
            (SortKey::Text(v), false) => v.as_str().into(),
            _ => {
                return Err(StoreError::Refused(
                    "the cursor is not one of this list".into(),
                ))
            }
        };
        sql.push(&format!(" AND ({key_column} > "))
            .bind(key.clone())
            .push(&format!(" OR ({key_column} = "))
            .bind(key)
            .push(&format!(" AND {id_column} > "))
            .bind(cursor.id.as_str())
            .push("))");
    }
    sql.push(&format!(" ORDER BY {key_column}, {id_column} LIMIT "))
        .bind(i64::from(page.first) + 1);
    Ok(())
}
