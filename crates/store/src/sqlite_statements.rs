//! An SQLite connection and the statements prepared on it, kept by their text.
//!
//! rusqlite's own cache (`prepare_cached`) takes a statement out of an LRU map and puts it
//! back after each run: its text hashed twice with SipHash, copied into a new `Arc<str>` as
//! the key each time, and the bindings cleared. That was 8,800 instructions of a refresh on
//! SQLite (five statements), 3% of what it spends beside its signatures
//! (docs/performance.md). Here a run borrows the statement where it is kept.
//!
//! A statement borrows its connection, so the two live in one owner: the connection boxed
//! (its address fixed while the owner moves) and the statements under `'static`, dropped
//! first. Nothing hands out the connection mutably or lets a statement leave the map.

use std::fmt;

use rusqlite::{Connection, Statement};
use sqlx_core::hash_map::EntryRef;

/// A connection and its prepared statements, each with a `T` its owner keeps beside it.
pub(crate) struct Prepared<T> {
    // Declared before `conn`, so dropped (each statement finalized) before it closes.
    statements: sqlx_core::HashMap<Box<str>, (Statement<'static>, T)>,
    conn: Box<Connection>,
    capacity: usize,
}

// SAFETY: rusqlite's `Statement` is not `Send` because it refers to its connection, which
// is not `Sync`: two threads could then use one connection at once. Every statement here
// refers to `conn` alone and moves with it, and both are reached only through this owner,
// so they are on one thread at a time, which SQLite's multi-thread mode (the connection is
// opened with `SQLITE_OPEN_NO_MUTEX`) allows.
#[allow(unsafe_code)]
unsafe impl<T: Send> Send for Prepared<T> {}

impl<T> fmt::Debug for Prepared<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prepared")
            .field("statements", &self.statements.len())
            .finish_non_exhaustive()
    }
}

impl<T> Prepared<T> {
    /// Keeps up to `capacity` statements on `conn`; past that all are finalized and
    /// prepared again as they are run.
    pub(crate) fn new(conn: Connection, capacity: usize) -> Prepared<T> {
        Prepared {
            statements: sqlx_core::HashMap::default(),
            conn: Box::new(conn),
            capacity,
        }
    }

    pub(crate) fn conn(&self) -> &Connection {
        &self.conn
    }

    /// The statement for `text` (one statement) and what is kept beside it, both made the
    /// first time (`keep` reads the new statement). The caller binds every parameter and
    /// resets the statement after its run (rusqlite's `Rows` does when dropped).
    pub(crate) fn statement<E: From<rusqlite::Error>>(
        &mut self,
        text: &str,
        keep: impl FnOnce(&Statement<'_>) -> Result<T, E>,
    ) -> Result<(&mut Statement<'static>, &mut T), E> {
        if self.statements.len() >= self.capacity && !self.statements.contains_key(text) {
            self.statements.clear();
        }
        let (statement, kept) = match self.statements.entry_ref(text) {
            EntryRef::Occupied(kept) => kept.into_mut(),
            EntryRef::Vacant(vacant) => {
                let prepared = self.conn.prepare(text)?;
                // SAFETY: the statement borrows `*self.conn`, which is boxed, so stays
                // where it is while `self` moves, and outlives it: the map is dropped
                // first and nothing else takes the connection away. A caller gets it by a
                // borrow of `self` and must not swap it with another owner's.
                #[allow(unsafe_code)]
                let prepared =
                    unsafe { std::mem::transmute::<Statement<'_>, Statement<'static>>(prepared) };
                let kept = keep(&prepared)?;
                vacant.insert((prepared, kept))
            }
        };
        Ok((statement, kept))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one value `text` returns, from the kept statement.
    fn value(prepared: &mut Prepared<usize>, text: &str) -> i64 {
        let (statement, _) = prepared
            .statement(text, |_| Ok::<_, rusqlite::Error>(0))
            .unwrap();
        statement.query_row([], |row| row.get(0)).unwrap()
    }

    #[test]
    fn past_its_capacity_it_prepares_again_and_keeps_no_more() {
        let mut prepared = Prepared::new(Connection::open_in_memory().unwrap(), 2);
        for round in 0..3 {
            for n in 1..=3 {
                assert_eq!(
                    value(&mut prepared, &format!("SELECT {n}")),
                    n,
                    "round {round}"
                );
                assert!(prepared.statements.len() <= 2);
            }
        }
    }

    #[test]
    fn what_is_kept_beside_a_statement_is_made_once() {
        let mut prepared = Prepared::new(Connection::open_in_memory().unwrap(), 8);
        let mut made = 0;
        for _ in 0..3 {
            let (_, kept) = prepared
                .statement("SELECT ?1, ?2", |statement| {
                    made += 1;
                    Ok::<_, rusqlite::Error>(statement.parameter_count())
                })
                .unwrap();
            assert_eq!(*kept, 2);
        }
        assert_eq!(made, 1);
        // A statement SQLite refuses is an error, and nothing is kept for it.
        assert!(prepared
            .statement("SELEC 1", |_| Ok::<_, rusqlite::Error>(0))
            .is_err());
        assert_eq!(prepared.statements.len(), 1);
    }

    #[test]
    fn the_connection_and_its_statements_move_to_another_thread_together() {
        let mut prepared = Prepared::new(Connection::open_in_memory().unwrap(), 8);
        assert_eq!(value(&mut prepared, "SELECT 7"), 7);
        let mut prepared = std::thread::spawn(move || {
            assert_eq!(value(&mut prepared, "SELECT 7"), 7);
            prepared
        })
        .join()
        .unwrap();
        assert_eq!(value(&mut prepared, "SELECT 7"), 7);
    }
}
