//! Flushes an SQLite database file to disk ahead of the log's restart, outside the time it
//! holds writers back.
//!
//! Under steady writes a PASSIVE checkpoint copies the log's pages into the database file
//! but never reaches the log's end, and SQLite syncs the database file only at a checkpoint
//! that does. So the restart (`Store::checkpoint`), which holds the turn to write, used to
//! begin by flushing every page a second of checkpoints had copied: 5 to 40 ms of writers
//! held, most of it that `fsync`, once a second under a code exchange's load
//! (docs/performance.md). Flushed here first, the restart's own sync finds little left.
//!
//! The flush goes through SQLite's VFS (`xSync` on the connection's own file), not through
//! a file of ours: closing a descriptor of ours would drop every POSIX lock the process
//! holds on the file, and SQLite's unix VFS is what keeps a connection's close from doing
//! that while other connections of the process hold them.

use std::ffi::c_void;
use std::path::Path;

use rusqlite::{ffi, Connection, OpenFlags};

/// Flushes the database file at `path` (its pages already written, not its log) to disk,
/// as SQLite's own checkpoint does (`SQLITE_SYNC_NORMAL`); for a blocking thread.
pub(crate) fn sync_database_file(path: &Path) -> Result<(), sqlx::Error> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(failed)?;
    let mut file: *mut ffi::sqlite3_file = std::ptr::null_mut();
    // SAFETY: `SQLITE_FCNTL_FILE_POINTER` writes the main database's `sqlite3_file` pointer
    // into `file`, a pointer-sized slot that outlives the call; the handle is open.
    #[allow(unsafe_code)]
    let rc = unsafe {
        ffi::sqlite3_file_control(
            conn.handle(),
            c"main".as_ptr(),
            ffi::SQLITE_FCNTL_FILE_POINTER,
            (&raw mut file).cast::<c_void>(),
        )
    };
    if rc != ffi::SQLITE_OK || file.is_null() {
        return Err(unavailable("no file behind the database"));
    }
    // SAFETY: `file` is the open connection's file, valid while `conn` is; its methods are
    // SQLite's unix VFS's, whose `xSync` takes the file and the sync flags.
    #[allow(unsafe_code)]
    let rc = unsafe {
        match (*file).pMethods.as_ref().and_then(|methods| methods.xSync) {
            Some(sync) => sync(file, ffi::SQLITE_SYNC_NORMAL),
            None => return Err(unavailable("the database file cannot be synced")),
        }
    };
    drop(conn);
    if rc == ffi::SQLITE_OK {
        Ok(())
    } else {
        Err(unavailable("the database file could not be synced"))
    }
}

fn failed(error: rusqlite::Error) -> sqlx::Error {
    sqlx::Error::Io(std::io::Error::other(error.to_string()))
}

fn unavailable(what: &'static str) -> sqlx::Error {
    sqlx::Error::Io(std::io::Error::other(what))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_file_is_synced_and_a_missing_one_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("synced.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; CREATE TABLE t (x); INSERT INTO t VALUES (1);",
        )
        .unwrap();
        sync_database_file(&path).unwrap();
        // The first connection reads on after the syncing one closed.
        let n: i64 = conn
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 1);
        assert!(sync_database_file(&dir.path().join("missing.db")).is_err());
    }
}
