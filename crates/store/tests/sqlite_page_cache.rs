//! SQLite's page cache as the server installs it (`sqlite_page_cache.rs`), in a process of
//! its own with this one test: SQLite takes a page cache only before it initializes, and
//! from one thread, as the server's `main` installs it.
//!
//! Writes that split b-tree pages make SQLite's own cache believe it holds a page far past
//! the end of the database, so that each commit scans all of it; the store's cache leaves
//! those truncations out. One that has pages to drop (a rolled-back transaction that grew
//! the file) must still reach SQLite's cache, or the next transaction would find the
//! rolled-back pages there.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rusqlite::{params, Connection};
use store::install_sqlite_page_cache as install;
use store::testing::sqlite_page_cache::truncations;

/// A key that lands anywhere in the index, as a token's hash does.
fn key(i: u64) -> Vec<u8> {
    let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5851_F42D_4C95_7F2D;
    (0..4)
        .flat_map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()
        })
        .collect()
}

/// Rows `first..first + n` of random keys, each with `fill` 200 times: a few pages' growth.
fn insert_large_rows(conn: &Connection, first: u64, n: u64, fill: &str) {
    for i in first..first + n {
        conn.execute(
            "INSERT INTO t (k, v) VALUES (?1, ?2)",
            params![key(i), fill.repeat(200)],
        )
        .unwrap();
    }
}

fn row_count(conn: &Connection) -> i64 {
    conn.query_row("SELECT count(*) FROM t", [], |r| r.get(0))
        .unwrap()
}

fn integrity(conn: &Connection) -> String {
    conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn commits_after_page_splits_skip_the_scan_and_a_rollback_still_drops_its_pages() {
    assert!(
        install(),
        "the first SQLite use of this process installs the cache"
    );
    let dir = tempfile::tempdir().unwrap();
    let conn = Connection::open(dir.path().join("cache.db")).unwrap();
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
         CREATE TABLE t (k BLOB PRIMARY KEY, v TEXT NOT NULL);",
    )
    .unwrap();

    // Small transactions of random keys, as token endpoints write: their splits renumber
    // pages through the lock-byte page's number.
    let (handed_on_before, left_out_before) = truncations();
    let mut written = 0;
    for _ in 0..200 {
        let tx = conn.unchecked_transaction().unwrap();
        for _ in 0..20 {
            tx.execute(
                "INSERT INTO t (k, v) VALUES (?1, ?2)",
                params![key(written), "x".repeat(60)],
            )
            .unwrap();
            written += 1;
        }
        tx.commit().unwrap();
    }
    let (handed_on, left_out) = truncations();
    assert!(
        left_out - left_out_before >= 100,
        "most of 200 commits after splits leave the truncation out: {} of them did",
        left_out - left_out_before
    );
    assert!(
        handed_on - handed_on_before < 20,
        "no commit had pages past the end to drop: {} were handed on",
        handed_on - handed_on_before
    );

    // A transaction that grows the file by many pages, rolled back: the cache must drop
    // them, and the file read back must be what was committed.
    let pages =
        |c: &Connection| -> i64 { c.query_row("PRAGMA page_count", [], |r| r.get(0)).unwrap() };
    let pages_before = pages(&conn);
    let (handed_on_before, _) = truncations();
    let tx = conn.unchecked_transaction().unwrap();
    insert_large_rows(&tx, 1_000_000, 2_000, "y");
    assert!(pages(&tx) > pages_before + 50);
    tx.rollback().unwrap();
    let (handed_on, _) = truncations();
    assert!(
        handed_on > handed_on_before,
        "the rollback's pages past the end were handed on to SQLite's cache to drop"
    );
    assert_eq!(pages(&conn), pages_before);
    assert_eq!(row_count(&conn), i64::try_from(written).unwrap());
    assert_eq!(integrity(&conn), "ok");

    // The file grows again into the page numbers the rollback gave back: fresh pages, and
    // another connection reads exactly what was committed.
    let tx = conn.unchecked_transaction().unwrap();
    insert_large_rows(&tx, 2_000_000, 2_000, "z");
    tx.commit().unwrap();
    assert_eq!(integrity(&conn), "ok");
    let other = Connection::open(dir.path().join("cache.db")).unwrap();
    assert_eq!(row_count(&other), i64::try_from(written).unwrap() + 2_000);
    let ys: i64 = other
        .query_row("SELECT count(*) FROM t WHERE v LIKE 'y%'", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ys, 0, "no row of the rolled-back transaction came back");
    assert_eq!(integrity(&other), "ok");
}
