//! PostgreSQL's planner statistics, kept up with tables that grow fast from empty.
//!
//! sqlx prepares each statement once per connection, and PostgreSQL plans a prepared
//! statement again only when the statistics of a table it reads change (after five custom
//! plans it keeps a generic one). On a new database the hot tables start nearly empty, so the
//! refresh rotation's plan scans `refresh_tokens` whole, and keeps scanning it while it grows
//! by a thousand rows a second, until autovacuum's next `ANALYZE`: it wakes once a minute,
//! and analyzes a table after a tenth of it changed. That was the soak's slow first minutes
//! on PostgreSQL, and every short benchmark's: 0.79 ms of PostgreSQL's CPU per refresh
//! instead of 0.20 (docs/performance.md). So the server analyzes, each second, the tables of
//! its schema that have at least doubled since their last analysis (or gained
//! [`GROWN_ROWS`] rows from empty): each analysis makes the statements reading the table be
//! planned again, for its size. A table that has doubled since is rare past the first
//! minutes, and autovacuum keeps the rest current as before.

use crate::db::Backend;
use crate::error::StoreError;
use crate::Store;

/// How many rows a table gains from empty before it is analyzed: about what a page of a
/// wide table holds, past which a scan of it costs more than a look-up by key.
pub const GROWN_ROWS: i64 = 500;

/// The store's tables with at least [`GROWN_ROWS`] rows changed since their last analysis,
/// and at least as many as they then held (`reltuples` is -1 before the first).
const GROWN_TABLES: &str = "SELECT s.relname::text FROM pg_stat_user_tables s \
     JOIN pg_class c ON c.oid = s.relid \
     WHERE s.schemaname = current_schema() \
       AND s.n_mod_since_analyze >= GREATEST(c.reltuples, 0)::bigint + $1 \
     ORDER BY s.relname";

impl Store {
    /// Analyzes the tables that have doubled since their last analysis (see the module), on
    /// each PostgreSQL database of the store, and returns their names (one that autovacuum
    /// held at that moment is among them, though skipped). Nothing on SQLite,
    /// whose planner reads no such statistics unless asked (the store never runs `ANALYZE`
    /// there, and its plans are checked in `tests/statement_plans.rs`).
    pub async fn refresh_statistics(&self) -> Result<Vec<String>, StoreError> {
        let mut analyzed = Vec::new();
        for database in self.databases() {
            if database.backend() != Backend::Postgres {
                continue;
            }
            self.count_statement();
            let grown: Vec<String> = sqlx::query_scalar(GROWN_TABLES)
                .bind(GROWN_ROWS)
                .fetch_all(database.pool())
                .await?;
            if grown.is_empty() {
                continue;
            }
            let tables: Vec<String> = grown.iter().map(|name| quoted(name)).collect();
            self.count_statement();
            // The list changes from call to call: not kept as a prepared statement. A table
            // autovacuum is working on is skipped rather than waited for, holding a pooled
            // connection: the next second tries it again, if autovacuum did not analyze it.
            sqlx::query(&format!("ANALYZE (SKIP_LOCKED) {}", tables.join(", ")))
                .persistent(false)
                .execute(database.pool())
                .await?;
            analyzed.extend(grown);
        }
        Ok(analyzed)
    }
}

/// A table's name as an SQL identifier (the catalog's names are the migrations' own, but a
/// name is quoted all the same).
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::quoted;

    #[test]
    fn a_name_is_quoted_as_one_identifier() {
        assert_eq!(quoted("refresh_tokens"), "\"refresh_tokens\"");
        assert_eq!(quoted("a\"b"), "\"a\"\"b\"");
    }
}
