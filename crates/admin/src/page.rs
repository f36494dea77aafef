//! Pagination of every list: an opaque `cursor` (where the last page ended, in the list's own
//! order) and a `limit` of at most [`MAX_LIMIT`], and `q`, a case-insensitive substring
//! filter. Keyset pagination, not offsets: a page never repeats or skips a row because rows
//! were added or removed before it.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::error::AdminError;

pub const MAX_LIMIT: u32 = 200;
pub const DEFAULT_LIMIT: u32 = 50;
/// The longest `q` that is searched for; longer is refused, not cut.
pub const MAX_QUERY_CHARS: usize = 200;

/// A list request's query string, as sent.
#[derive(Clone, Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Where the previous page ended: its `next_cursor`.
    pub cursor: Option<String>,
    /// How many items at most, 1 to 200 (50 when absent).
    pub limit: Option<u32>,
    /// A case-insensitive substring to filter by.
    pub q: Option<String>,
}

/// A list request, checked.
#[derive(Clone, Debug)]
pub struct PageRequest<K> {
    /// The key of the last item of the previous page.
    pub after: Option<K>,
    pub limit: u32,
    /// The filter, lowercased; `None` when absent or empty.
    pub search: Option<String>,
}

impl<K: DeserializeOwned> PageRequest<K> {
    pub fn parse(query: &PageQuery) -> Result<PageRequest<K>, AdminError> {
        let limit = query.limit.unwrap_or(DEFAULT_LIMIT);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(AdminError::Invalid(format!(
                "limit: must be between 1 and {MAX_LIMIT}"
            )));
        }
        let after = match query.cursor.as_deref() {
            None | Some("") => None,
            Some(cursor) => Some(decode_cursor(cursor)?),
        };
        let search = match query.q.as_deref() {
            None | Some("") => None,
            Some(q) if q.chars().count() > MAX_QUERY_CHARS => {
                return Err(AdminError::Invalid(format!(
                    "q: at most {MAX_QUERY_CHARS} characters"
                )))
            }
            Some(q) if q.chars().any(char::is_control) => {
                return Err(AdminError::Invalid(
                    "q: control characters are not allowed".to_owned(),
                ))
            }
            Some(q) => Some(q.to_lowercase()),
        };
        Ok(PageRequest {
            after,
            limit,
            search,
        })
    }

    /// What to ask the store for: one more than the page, to know whether another follows.
    pub fn fetch(&self) -> i64 {
        i64::from(self.limit) + 1
    }
}

/// One page of a list.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct Page<T> {
    pub items: Vec<T>,
    /// The `cursor` of the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

impl<T> Page<T> {
    /// The page from up to `limit + 1` rows in the list's order; `key` gives the cursor of
    /// the last row shown.
    pub fn from_rows<R, K: Serialize>(
        mut rows: Vec<R>,
        request: &PageRequest<impl Sized>,
        key: impl Fn(&R) -> K,
        view: impl Fn(R) -> T,
    ) -> Page<T> {
        let limit = request.limit as usize;
        let next_cursor = match rows.len() > limit {
            true => {
                rows.truncate(limit);
                rows.last().map(|last| encode_cursor(&key(last)))
            }
            false => None,
        };
        Page {
            items: rows.into_iter().map(view).collect(),
            next_cursor,
        }
    }

    pub fn map<U>(self, f: impl Fn(T) -> U) -> Page<U> {
        Page {
            items: self.items.into_iter().map(f).collect(),
            next_cursor: self.next_cursor,
        }
    }
}

fn encode_cursor(key: &impl Serialize) -> String {
    // A key is plain data (ids, names, times); serializing it cannot fail.
    let json = serde_json::to_vec(key).unwrap_or_default();
    URL_SAFE_NO_PAD.encode(json)
}

fn decode_cursor<K: DeserializeOwned>(cursor: &str) -> Result<K, AdminError> {
    let invalid = || AdminError::Invalid("cursor: not a cursor this list gave".to_owned());
    let json = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| invalid())?;
    serde_json::from_slice(&json).map_err(|_| invalid())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(
        limit: Option<u32>,
        cursor: Option<&str>,
    ) -> Result<PageRequest<String>, AdminError> {
        PageRequest::parse(&PageQuery {
            cursor: cursor.map(str::to_owned),
            limit,
            q: None,
        })
    }

    #[test]
    fn limit_is_one_to_two_hundred() {
        assert_eq!(request(None, None).unwrap().limit, DEFAULT_LIMIT);
        assert_eq!(request(Some(200), None).unwrap().limit, 200);
        assert!(matches!(
            request(Some(0), None),
            Err(AdminError::Invalid(_))
        ));
        assert!(matches!(
            request(Some(201), None),
            Err(AdminError::Invalid(_))
        ));
    }

    #[test]
    fn a_page_gives_the_cursor_of_its_last_row_only_when_more_follow() {
        let all: Vec<String> = ["a", "b", "c"].map(str::to_owned).to_vec();
        let first = request(Some(2), None).unwrap();
        let page = Page::from_rows(all.clone(), &first, |r| r.clone(), |r| r);
        assert_eq!(page.items, ["a", "b"]);
        let cursor = page.next_cursor.unwrap();
        let second = request(Some(2), Some(&cursor)).unwrap();
        assert_eq!(second.after.as_deref(), Some("b"));
        let rest: Vec<String> = all.into_iter().filter(|r| r.as_str() > "b").collect();
        let page = Page::from_rows(rest, &second, |r| r.clone(), |r| r);
        assert_eq!((page.items, page.next_cursor), (vec!["c".to_owned()], None));
    }

    #[test]
    fn a_cursor_not_ours_and_a_bad_q_are_invalid_input() {
        assert!(matches!(
            request(None, Some("%%%")),
            Err(AdminError::Invalid(_))
        ));
        assert!(matches!(
            request(None, Some("bm90IGpzb24")),
            Err(AdminError::Invalid(_))
        ));
        let bad_q = PageRequest::<String>::parse(&PageQuery {
            q: Some("a\u{0}".to_owned()),
            ..PageQuery::default()
        });
        assert!(matches!(bad_q, Err(AdminError::Invalid(_))));
    }
}
