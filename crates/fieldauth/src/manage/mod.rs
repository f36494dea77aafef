//! The operator's commands for tenants, clients, users, organizations and grants: each
//! group's clap commands and their front end over the `admin` crate's operations, the same
//! ones the admin API's handlers call (one implementation, two front ends). The CLI acts as
//! an admin of every tenant named `cli` in the audit trail.

pub mod clients;
pub mod grants;
pub mod orgs;
pub mod password_links;
pub mod tenants;
pub mod users;

use admin::{Admin, Ctx};
use jose::UnixTime;
use oauth::RandomSource;
use store::Store;

use crate::report::Report;

/// What every command is run with.
pub struct Shell<'a> {
    pub store: &'a Store,
    pub random: &'a dyn RandomSource,
    pub now: UnixTime,
    pub admin: Admin,
}

impl<'a> Shell<'a> {
    pub fn new(store: &'a Store, random: &'a dyn RandomSource, now: UnixTime) -> Shell<'a> {
        Shell {
            store,
            random,
            now,
            admin: admin::cli_admin(),
        }
    }

    /// The context of an operation; `auth_url` is needed only by the ones that make links.
    pub fn ctx(&'a self, auth_url: &'a str) -> Ctx<'a> {
        Ctx {
            store: self.store,
            admin: &self.admin,
            now: self.now,
            random: self.random,
            auth_url,
        }
    }
}

/// A command's outcome and whether to print it as JSON.
pub type Outcome = (Report, bool);

/// An admin operation's error, as the CLI reports it (exit 1, the problem's detail).
pub fn failed(doing: &str) -> impl Fn(admin::AdminError) -> anyhow::Error + '_ {
    move |error| anyhow::anyhow!("cannot {doing}: {error}")
}

/// Every item of a paginated list, page after page (the CLI prints whole lists).
pub async fn all_pages<T, F, Fut>(mut page: F) -> Result<Vec<T>, admin::AdminError>
where
    F: FnMut(Option<String>) -> Fut,
    Fut: std::future::Future<Output = Result<admin::page::Page<T>, admin::AdminError>>,
{
    let mut items = Vec::new();
    let mut cursor = None;
    loop {
        let next = page(cursor).await?;
        items.extend(next.items);
        match next.next_cursor {
            Some(more) => cursor = Some(more),
            None => return Ok(items),
        }
    }
}

/// `--if-match`, as the admin API's `If-Match` header reads it.
pub fn if_match(tag: Option<&str>) -> anyhow::Result<admin::etag::Precondition> {
    let header = match tag {
        Some(tag) => Some(
            axum::http::HeaderValue::from_str(tag)
                .map_err(|_| anyhow::anyhow!("--if-match: not an entity tag"))?,
        ),
        None => None,
    };
    admin::etag::Precondition::from_if_match(header.as_ref())
        .map_err(|e| anyhow::anyhow!("--if-match: {e}"))
}
