//! SQLite statements run on the thread that asks, not on a thread of the connection's own.
//!
//! sqlx's SQLite driver gives each connection a thread and sends it every statement over a
//! channel: a statement is two context switches, and its rows are converted twice (to
//! `SqliteRow`, then to `AnyRow`). On one core that was a quarter of an API query's CPU and a
//! tenth of a refresh's (docs/performance.md). A statement on a file database takes
//! microseconds (reads never wait for the one writer in WAL mode, and writers take the
//! process's turn before they write), so the store's pool runs them here, with rusqlite on
//! the same libsqlite3 that sqlx links, and hands the rest of the store the same `AnyRow`s
//! and errors sqlx's driver would: the decoders, the error mapping and the tests are shared
//! by both paths. sqlx still opens the migrations' and the checkpoints' connections.
//!
//! What each value becomes follows sqlx's driver (`AnyRow::map_from` on a `SqliteRow`): by
//! the value's own type (an integer is a `BigInt`, text a `Text`), and a refusal's code is
//! SQLite's extended result code, so `ErrorKind` (unique, foreign key) reads the same.

use std::any::TypeId;
use std::borrow::Cow;
use std::ffi::CString;
use std::fmt;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rusqlite::types::ValueRef;
use rusqlite::{ffi, Connection, OpenFlags, Statement, StatementStatus};
use sqlx::error::{DatabaseError, ErrorKind};
use sqlx::Either;
use sqlx_core::any::{
    AnyColumn, AnyQueryResult, AnyRow, AnyTypeInfo, AnyTypeInfoKind, AnyValue, AnyValueKind,
};
use sqlx_core::connection::LogSettings;
use sqlx_core::ext::ustr::UStr;
use sqlx_core::logger::QueryLogger;

use crate::field::positional::{self, Positional};
use crate::sqlite_statements::Prepared;

/// Prepared statements kept per connection: the store has about a hundred distinct texts on
/// its paths, and `IN` lists of each length are one more each.
const STATEMENT_CACHE: usize = 256;
/// Multi-statement texts whose split is kept; past this the split is found again.
const SPLITS_KEPT: usize = 64;

/// How long a statement waits for a lock another process holds (a CLI command's
/// transaction), on a blocking thread: the `busy_timeout` of every SQLite connection.
pub(crate) const BUSY_WAIT: Duration = Duration::from_secs(5);

/// One statement's or one batch's results, as sqlx's executor streams them: each
/// statement's rows, then its `AnyQueryResult`.
pub(crate) type Results = Vec<Either<AnyQueryResult, AnyRow>>;

/// How far a run got: the next statement, the bare parameters taken, the results so far.
#[derive(Default)]
pub(crate) struct Progress {
    next: usize,
    bare_used: usize,
    results: Results,
}

/// A run's end: all its results, or where it stopped for a lock another process holds.
pub(crate) enum Ran {
    Done(Results),
    Busy(Progress),
}

/// Why a statement stopped: a lock another process holds, or anything else.
enum Failed {
    Busy,
    Error(sqlx::Error),
}

impl From<rusqlite::Error> for Failed {
    fn from(error: rusqlite::Error) -> Failed {
        match error {
            rusqlite::Error::SqliteFailure(failure, _)
                if failure.code == rusqlite::ErrorCode::DatabaseBusy =>
            {
                Failed::Busy
            }
            other => Failed::Error(refusal(other)),
        }
    }
}

impl From<sqlx::Error> for Failed {
    fn from(error: sqlx::Error) -> Failed {
        Failed::Error(error)
    }
}

/// A connection to an SQLite file, used by one thread at a time.
pub(crate) struct InlineSqlite {
    /// The connection, its statements and what each statement's text tells once: the
    /// argument each parameter takes, and the columns as its rows carry them.
    prepared: Prepared<Kept>,
    /// Where each statement of a multi-statement text ends, found once per text.
    splits: sqlx_core::HashMap<Box<str>, Arc<[Range<usize>]>>,
    log: LogSettings,
}

impl fmt::Debug for InlineSqlite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InlineSqlite").finish_non_exhaustive()
    }
}

/// How a connection opens the file (the URL's `mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OpenMode {
    /// `mode=ro`
    Ro,
    /// `mode=rw`
    Rw,
    /// `mode=rwc`, the default: read, write, and create the file if it is missing.
    Rwc,
}

impl InlineSqlite {
    /// Opens the file and runs `setup` (the store's pragmas) before its first statement; for
    /// a blocking thread.
    pub(crate) fn open(
        path: &Path,
        mode: OpenMode,
        setup: &str,
        slow: Duration,
    ) -> Result<InlineSqlite, sqlx::Error> {
        let access = match mode {
            OpenMode::Ro => OpenFlags::SQLITE_OPEN_READ_ONLY,
            OpenMode::Rw => OpenFlags::SQLITE_OPEN_READ_WRITE,
            OpenMode::Rwc => OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE,
        };
        // No mutex: the pool hands a connection to one user at a time.
        let flags = access | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
        // Each commit's log frames in one write (`sqlite_wal_writes.rs`).
        let conn = match crate::sqlite_wal_writes::registered() {
            Some(vfs) => Connection::open_with_flags_and_vfs(path, flags, vfs),
            None => Connection::open_with_flags(path, flags),
        }
        .map_err(refusal)?;
        let mut inline = InlineSqlite {
            prepared: Prepared::new(conn, STATEMENT_CACHE),
            splits: sqlx_core::HashMap::default(),
            log: log_settings(slow),
        };
        // sqlx's driver turns foreign keys on for every connection; the store's own
        // settings come after, as on sqlx's connections. Opened on a blocking thread, it
        // may wait for locks; after that it never does on its own (`run_from`).
        let setup = format!("PRAGMA foreign_keys = ON; {setup}");
        inline.run_waiting(&setup, &[], Progress::default())?;
        inline
            .prepared
            .conn()
            .busy_timeout(Duration::ZERO)
            .map_err(refusal)?;
        Ok(inline)
    }

    /// Runs `sql` (one statement or several, separated by `;`) from `progress` on, with
    /// `values` bound by their numbers (`$1`, `?1`; a bare `?` takes the next one), every row
    /// read. A statement that needs a lock another process holds stops the run there,
    /// undone ([`Ran::Busy`]): the connection does not wait for it (its busy timeout is 0)
    /// unless [`InlineSqlite::run_waiting`] runs it.
    pub(crate) fn run_from(
        &mut self,
        sql: &str,
        values: &[AnyValueKind<'_>],
        mut progress: Progress,
    ) -> Result<Ran, sqlx::Error> {
        let statements = self.split(sql);
        while let Some(range) = statements.get(progress.next) {
            let text = &sql[range.clone()];
            let before = progress.results.len();
            // An empty statement (`;;`) is nothing to SQLite, and no statement to prepare.
            if !text.trim().trim_end_matches(';').trim().is_empty() {
                match self.run_one(text, values, &mut progress) {
                    Ok(()) => {}
                    Err(Failed::Busy) => {
                        // Nothing of a statement that found the lock taken has run; rows
                        // it read before (none, in WAL mode) are read again.
                        progress.results.truncate(before);
                        return Ok(Ran::Busy(progress));
                    }
                    Err(Failed::Error(error)) => return Err(error),
                }
            }
            progress.next += 1;
        }
        Ok(Ran::Done(progress.results))
    }

    /// [`InlineSqlite::run_from`], waiting up to [`BUSY_WAIT`] for each lock another process
    /// holds (SQLite's busy handler, as on sqlx's connections): for a blocking thread.
    pub(crate) fn run_waiting(
        &mut self,
        sql: &str,
        values: &[AnyValueKind<'_>],
        progress: Progress,
    ) -> Result<Results, sqlx::Error> {
        self.prepared
            .conn()
            .busy_timeout(BUSY_WAIT)
            .map_err(refusal)?;
        let ran = self.run_from(sql, values, progress);
        self.prepared
            .conn()
            .busy_timeout(Duration::ZERO)
            .map_err(refusal)?;
        match ran? {
            Ran::Done(results) => Ok(results),
            Ran::Busy(_) => Err(sqlx::Error::Database(Box::new(SqliteRefusal {
                code: ffi::SQLITE_BUSY,
                message: "database is locked".to_owned(),
            }))),
        }
    }

    /// Runs one statement and decodes each of its rows with `decode`, straight from SQLite's
    /// values: for readers that know their columns' positions (the field records,
    /// `field/positional.rs`), without an `AnyRow` per row. `Ok(None)` when the statement
    /// needs a lock another process holds: nothing is kept of it, and the caller runs it the
    /// general way, which waits for the lock.
    pub(crate) fn read_rows<T>(
        &mut self,
        sql: &str,
        values: &[AnyValueKind<'_>],
        mut decode: impl FnMut(&rusqlite::Row<'_>) -> Result<T, sqlx::Error>,
    ) -> Result<Option<Vec<T>>, sqlx::Error> {
        self.read_each(sql, values, |row, _| decode(row))
    }

    /// Runs one statement and reads each row as a `T` by position, its columns' names
    /// checked against `T`'s at the first row the first time and again only once SQLite has
    /// compiled the statement anew (a schema change): for the token grants' reads, whose
    /// records are read from every run's one row. `Ok(None)` when the statement needs a
    /// lock another process holds: nothing of it ran, and the caller runs it the general
    /// way, which waits for the lock.
    pub(crate) fn records<T: Positional + 'static>(
        &mut self,
        sql: &str,
        values: &[AnyValueKind<'_>],
    ) -> Result<Option<Vec<T>>, sqlx::Error> {
        let mut first = true;
        self.read_each(sql, values, |row, kept| {
            if std::mem::take(&mut first) {
                let this = (
                    TypeId::of::<T>(),
                    row.as_ref().get_status(StatementStatus::RePrepare),
                );
                if kept.checked != Some(this) {
                    if !positional::names_match::<T>(row, 0) {
                        return Err(positional::not_its_columns::<T>());
                    }
                    kept.checked = Some(this);
                }
            }
            T::read(row, 0)
        })
    }

    /// Runs one statement, each row decoded by `decode` (with what is kept beside the
    /// statement); `Ok(None)` when it needs a lock another process holds.
    fn read_each<T>(
        &mut self,
        sql: &str,
        values: &[AnyValueKind<'_>],
        mut decode: impl FnMut(&rusqlite::Row<'_>, &mut Kept) -> Result<T, sqlx::Error>,
    ) -> Result<Option<Vec<T>>, sqlx::Error> {
        if self.split(sql).len() != 1 {
            return Err(sqlx::Error::Protocol(
                "a read by position takes one statement".to_owned(),
            ));
        }
        let mut logger = QueryLogger::new(sql, self.log.clone());
        let mut read = || -> Result<Vec<T>, Failed> {
            let (statement, kept) = self.prepared.statement(sql, Kept::new)?;
            bind(statement, &kept.arguments, values, 0)?;
            let mut rows = statement.raw_query();
            // Bounded: a statement that once returned many rows does not keep that much
            // memory busy for each later run.
            let mut found = Vec::with_capacity(kept.rows.min(256));
            while let Some(row) = rows.next()? {
                logger.increment_rows_returned();
                found.push(decode(row, kept)?);
            }
            kept.rows = found.len();
            Ok(found)
        };
        match read() {
            Ok(found) => Ok(Some(found)),
            Err(Failed::Busy) => Ok(None),
            Err(Failed::Error(error)) => Err(error),
        }
    }

    /// One statement: its rows and its result go to `progress`, and the bare parameters it
    /// took are counted there, only once it has run to its end.
    fn run_one(
        &mut self,
        text: &str,
        values: &[AnyValueKind<'_>],
        progress: &mut Progress,
    ) -> Result<(), Failed> {
        let mut logger = QueryLogger::new(text, self.log.clone());
        let (statement, kept) = self.prepared.statement(text, Kept::new)?;
        let bare_taken = bind(statement, &kept.arguments, values, progress.bare_used)?;
        let mut rows = statement.raw_query();
        // Described at the first row, not before: a kept statement whose table has changed
        // since is prepared again by its first step, and only then has its new columns.
        let mut columns: Option<Arc<Columns>> = None;
        while let Some(row) = rows.next().map_err(Failed::from)? {
            logger.increment_rows_returned();
            let columns = columns.get_or_insert_with(|| kept.columns(row.as_ref()));
            progress.results.push(Either::Right(columns.row(row)?));
        }
        drop(rows);
        // As sqlx's driver: the connection's count of the last write (so a read reports
        // the write before it), and the last rowid.
        let conn = self.prepared.conn();
        let changes = conn.changes();
        logger.increase_rows_affected(changes);
        progress.results.push(Either::Left(AnyQueryResult {
            rows_affected: changes,
            last_insert_id: Some(conn.last_insert_rowid()),
        }));
        progress.bare_used += bare_taken;
        Ok(())
    }

    /// The ranges of `sql`'s statements. A text without a `;` before its end is one.
    fn split(&mut self, sql: &str) -> Arc<[Range<usize>]> {
        let body = sql.trim_end().trim_end_matches(';');
        if !body.contains(';') {
            return std::iter::once(0..sql.len()).collect();
        }
        if let Some(split) = self.splits.get(sql) {
            return Arc::clone(split);
        }
        let split: Arc<[Range<usize>]> = Arc::from(statement_ranges(sql));
        if self.splits.len() >= SPLITS_KEPT {
            self.splits.clear();
        }
        self.splits.insert(Box::from(sql), Arc::clone(&split));
        split
    }
}

/// sqlx's defaults (every statement at debug level), with `slow` statements a warning.
fn log_settings(slow: Duration) -> LogSettings {
    let mut settings = LogSettings::default();
    settings.slow_statements_level = log::LevelFilter::Warn;
    settings.slow_statements_duration = slow;
    settings
}

/// Where each statement of `sql` ends: at a `;` that completes a statement by SQLite's own
/// reading (`sqlite3_complete`: not inside a string, a comment or a trigger's body). Text
/// after the last one that holds more than blanks is a statement of its own.
fn statement_ranges(sql: &str) -> Vec<Range<usize>> {
    let mut ranges = Vec::new();
    let mut start = 0;
    for (end, _) in sql.match_indices(';') {
        if end >= start && is_complete(&sql[start..=end]) {
            ranges.push(start..end + 1);
            start = end + 1;
        }
    }
    if !sql[start..].trim().is_empty() {
        ranges.push(start..sql.len());
    }
    ranges
}

fn is_complete(text: &str) -> bool {
    let Ok(text) = CString::new(text) else {
        return false;
    };
    // SAFETY: `sqlite3_complete` reads the NUL-terminated string it is given and nothing
    // else; `text` outlives the call.
    #[allow(unsafe_code)]
    let complete = unsafe { ffi::sqlite3_complete(text.as_ptr()) };
    complete != 0
}

/// Binds each of the statement's parameters to its argument, as sqlx's driver does: `$N`
/// and `?N` to the Nth, a bare `?` to the next after those the batch's earlier bare ones
/// took. A parameter without an argument stays NULL. Returns how many bare ones it took.
fn bind(
    statement: &mut Statement<'_>,
    arguments: &[Option<usize>],
    values: &[AnyValueKind<'_>],
    bare_used: usize,
) -> Result<usize, sqlx::Error> {
    let mut bare = bare_used;
    for (index, argument) in arguments.iter().enumerate() {
        let parameter = index + 1;
        let n = match argument {
            Some(n) => *n,
            None => {
                bare += 1;
                bare
            }
        };
        let Some(value) = n.checked_sub(1).and_then(|i| values.get(i)) else {
            // This one and those after stay NULL, as on a statement just prepared: a kept
            // one still holds its last run's values.
            for rest in parameter..=arguments.len() {
                statement
                    .raw_bind_parameter(rest, rusqlite::types::Null)
                    .map_err(refusal)?;
            }
            break;
        };
        let bound = match value {
            AnyValueKind::Null(_) => statement.raw_bind_parameter(parameter, rusqlite::types::Null),
            AnyValueKind::Bool(b) => statement.raw_bind_parameter(parameter, i64::from(*b)),
            AnyValueKind::SmallInt(i) => statement.raw_bind_parameter(parameter, i64::from(*i)),
            AnyValueKind::Integer(i) => statement.raw_bind_parameter(parameter, i64::from(*i)),
            AnyValueKind::BigInt(i) => statement.raw_bind_parameter(parameter, *i),
            AnyValueKind::Real(r) => statement.raw_bind_parameter(parameter, f64::from(*r)),
            AnyValueKind::Double(d) => statement.raw_bind_parameter(parameter, *d),
            AnyValueKind::Text(t) => statement.raw_bind_parameter(parameter, t.as_ref()),
            AnyValueKind::Blob(b) => statement.raw_bind_parameter(parameter, b.as_ref()),
            // `AnyValueKind` is non-exhaustive; the store binds none other.
            _ => return Err(unknown_kind()),
        };
        bound.map_err(refusal)?;
    }
    Ok(bare - bare_used)
}

/// An argument of a kind added to sqlx after this code: refused. The message names no
/// value, as arguments are token hashes and other secrets.
pub(crate) fn unknown_kind() -> sqlx::Error {
    sqlx::Error::Protocol("an argument of a kind SQLite has no type for".to_owned())
}

/// A statement's columns, shared by the rows it returns.
struct Columns {
    names: Arc<sqlx_core::HashMap<UStr, usize>>,
    columns: Vec<AnyColumn>,
}

/// What a statement's text tells once, kept for its later runs.
struct Kept {
    /// The argument each parameter takes, by the parameter's name: `Some(n)` for `$n` and
    /// `?n`, `None` for a bare `?` (the next one). A text's parameters are its own, so this
    /// never changes.
    arguments: Box<[Option<usize>]>,
    /// The columns as its rows carry them, once a run has returned a row, and how many
    /// times SQLite had compiled the statement again then.
    columns: Option<(Arc<Columns>, i32)>,
    /// The record its columns were last found to be, by name ([`InlineSqlite::records`]),
    /// and how many times SQLite had compiled the statement again then.
    checked: Option<(TypeId, i32)>,
    /// How many rows its last read by position returned: room for as many is made before
    /// the next is read, so that its records (a page's, some hundreds of bytes each) are
    /// not moved as their vector doubles.
    rows: usize,
}

impl Kept {
    /// What is kept for a newly prepared `statement`: its parameters' arguments; its
    /// columns come with its first row.
    fn new(statement: &Statement<'_>) -> Result<Kept, Failed> {
        Ok(Kept {
            arguments: arguments(statement)?,
            columns: None,
            checked: None,
            rows: 0,
        })
    }

    /// `statement`'s columns, as described before unless SQLite has compiled it again
    /// since: a schema change (a table altered, by any connection) makes its next step
    /// compile it anew, with the columns the tables have then, and only that changes a
    /// statement's columns. Kept beside the statement itself, so a text prepared again
    /// is described again.
    fn columns(&mut self, statement: &Statement<'_>) -> Arc<Columns> {
        let compiled = statement.get_status(StatementStatus::RePrepare);
        match &self.columns {
            Some((columns, described)) if *described == compiled => Arc::clone(columns),
            _ => {
                let columns = Arc::new(Columns::of(statement));
                self.columns = Some((Arc::clone(&columns), compiled));
                columns
            }
        }
    }
}

/// The argument each of `statement`'s parameters takes, by its name (`$N`, `?N`, or a
/// bare `?`).
fn arguments(statement: &Statement<'_>) -> Result<Box<[Option<usize>]>, sqlx::Error> {
    (1..=statement.parameter_count())
        .map(|parameter| match statement.parameter_name(parameter) {
            Some(name) => name
                .strip_prefix('$')
                .or_else(|| name.strip_prefix('?'))
                .and_then(|number| number.parse::<usize>().ok())
                .map(Some)
                .ok_or_else(|| {
                    sqlx::Error::Protocol(format!("unsupported SQL parameter name: {name}"))
                }),
            None => Ok(None),
        })
        .collect()
}

impl Columns {
    fn of(statement: &Statement<'_>) -> Columns {
        let mut names = sqlx_core::HashMap::default();
        let columns = statement
            .columns()
            .iter()
            .enumerate()
            .map(|(ordinal, column)| {
                let name = UStr::Shared(Arc::from(column.name()));
                names.insert(name.clone(), ordinal);
                AnyColumn {
                    ordinal,
                    name,
                    type_info: AnyTypeInfo {
                        kind: declared_kind(column.decl_type()),
                    },
                }
            })
            .collect();
        Columns {
            names: Arc::new(names),
            columns,
        }
    }

    fn row(&self, row: &rusqlite::Row<'_>) -> Result<AnyRow, sqlx::Error> {
        let mut values = Vec::with_capacity(self.columns.len());
        for (index, column) in self.columns.iter().enumerate() {
            let value = row.get_ref(index).map_err(refusal)?;
            let kind = match value {
                ValueRef::Null => AnyValueKind::Null(column.type_info.kind),
                ValueRef::Integer(i) => AnyValueKind::BigInt(i),
                ValueRef::Real(r) => AnyValueKind::Double(r),
                ValueRef::Text(bytes) => match std::str::from_utf8(bytes) {
                    Ok(text) => AnyValueKind::Text(Cow::Owned(text.to_owned())),
                    Err(error) => {
                        return Err(sqlx::Error::ColumnDecode {
                            index: index.to_string(),
                            source: Box::new(error),
                        })
                    }
                },
                ValueRef::Blob(bytes) => AnyValueKind::Blob(Cow::Owned(bytes.to_vec())),
            };
            values.push(AnyValue { kind });
        }
        Ok(AnyRow {
            column_names: Arc::clone(&self.names),
            columns: self.columns.clone(),
            values,
        })
    }
}

/// A column's type by its declaration, as SQLite's affinity rules read it; an expression
/// has none. Only a NULL value carries it: every other value is typed by itself.
fn declared_kind(declared: Option<&str>) -> AnyTypeInfoKind {
    let Some(declared) = declared.map(str::to_ascii_uppercase) else {
        return AnyTypeInfoKind::Null;
    };
    if declared.contains("BOOL") {
        AnyTypeInfoKind::Bool
    } else if declared.contains("INT") {
        AnyTypeInfoKind::BigInt
    } else if declared.contains("CHAR") || declared.contains("CLOB") || declared.contains("TEXT") {
        AnyTypeInfoKind::Text
    } else if declared.contains("BLOB") {
        AnyTypeInfoKind::Blob
    } else if declared.contains("REAL") || declared.contains("FLOA") || declared.contains("DOUB") {
        AnyTypeInfoKind::Double
    } else {
        AnyTypeInfoKind::Null
    }
}

/// rusqlite's error as sqlx's: SQLite's refusals as a database error with the extended
/// result code (sqlx's driver reports the same), a column that does not decode as such.
fn refusal(error: rusqlite::Error) -> sqlx::Error {
    match error {
        rusqlite::Error::SqliteFailure(failure, message) => {
            sqlx::Error::Database(Box::new(SqliteRefusal {
                code: failure.extended_code,
                message: message.unwrap_or_else(|| failure.to_string()),
            }))
        }
        rusqlite::Error::Utf8Error(error) => sqlx::Error::Decode(Box::new(error)),
        other => sqlx::Error::Protocol(other.to_string()),
    }
}

/// A statement SQLite refused: its extended result code and message.
#[derive(Debug)]
pub(crate) struct SqliteRefusal {
    code: i32,
    message: String,
}

impl fmt::Display for SqliteRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(code: {}) {}", self.code, self.message)
    }
}

impl std::error::Error for SqliteRefusal {}

impl DatabaseError for SqliteRefusal {
    fn message(&self) -> &str {
        &self.message
    }

    fn code(&self) -> Option<Cow<'_, str>> {
        Some(Cow::Owned(self.code.to_string()))
    }

    fn as_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        self
    }

    fn as_error_mut(&mut self) -> &mut (dyn std::error::Error + Send + Sync + 'static) {
        self
    }

    fn into_error(self: Box<Self>) -> Box<dyn std::error::Error + Send + Sync + 'static> {
        self
    }

    fn kind(&self) -> ErrorKind {
        match self.code {
            ffi::SQLITE_CONSTRAINT_UNIQUE | ffi::SQLITE_CONSTRAINT_PRIMARYKEY => {
                ErrorKind::UniqueViolation
            }
            ffi::SQLITE_CONSTRAINT_FOREIGNKEY => ErrorKind::ForeignKeyViolation,
            ffi::SQLITE_CONSTRAINT_NOTNULL => ErrorKind::NotNullViolation,
            ffi::SQLITE_CONSTRAINT_CHECK => ErrorKind::CheckViolation,
            _ => ErrorKind::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::positional::positional;

    #[test]
    fn splits_at_the_semicolons_that_end_a_statement() {
        let sql = "BEGIN IMMEDIATE; INSERT INTO t VALUES ('a;b'); -- c;d\n\
                   CREATE TRIGGER x AFTER INSERT ON t BEGIN DELETE FROM t; END; COMMIT";
        let parts: Vec<&str> = statement_ranges(sql)
            .into_iter()
            .map(|r| sql[r].trim())
            .collect();
        assert_eq!(
            parts,
            [
                "BEGIN IMMEDIATE;",
                "INSERT INTO t VALUES ('a;b');",
                "-- c;d\nCREATE TRIGGER x AFTER INSERT ON t BEGIN DELETE FROM t; END;",
                "COMMIT",
            ]
        );
        assert_eq!(statement_ranges("SELECT 1;  \n").len(), 1);
    }

    /// Each row of `sql`, as its columns' names and values.
    fn rows(inline: &mut InlineSqlite, sql: &str) -> Vec<Vec<(String, i64)>> {
        rows_with(inline, sql, &[])
    }

    /// Each row of `sql` run with `values`, as its columns' names and values.
    fn rows_with(inline: &mut InlineSqlite, sql: &str, values: &[i64]) -> Vec<Vec<(String, i64)>> {
        use sqlx::{Column, Row};
        let values: Vec<AnyValueKind<'_>> =
            values.iter().map(|v| AnyValueKind::BigInt(*v)).collect();
        let Ran::Done(results) = inline.run_from(sql, &values, Progress::default()).unwrap() else {
            panic!("no other process holds a lock");
        };
        results
            .into_iter()
            .filter_map(|result| result.right())
            .map(|row| {
                row.columns()
                    .iter()
                    .map(|column| {
                        let value: i64 = row.try_get(column.ordinal()).unwrap();
                        (column.name().to_owned(), value)
                    })
                    .collect()
            })
            .collect()
    }

    /// A new file's inline connection, without settings of the store's.
    fn opened(path: &Path) -> InlineSqlite {
        InlineSqlite::open(path, OpenMode::Rwc, "", Duration::from_secs(5)).unwrap()
    }

    fn pair(a: &str, x: i64, b: &str, y: i64) -> Vec<(String, i64)> {
        vec![(a.to_owned(), x), (b.to_owned(), y)]
    }

    #[test]
    fn a_kept_statement_run_with_fewer_arguments_has_the_rest_null() {
        let dir = tempfile::tempdir().unwrap();
        let mut inline = opened(&dir.path().join("t.db"));
        let sql = "SELECT ?1 IS NULL AS a, ?2 IS NULL AS b";
        assert_eq!(rows_with(&mut inline, sql, &[1, 2]), [pair("a", 0, "b", 0)]);
        assert_eq!(rows_with(&mut inline, sql, &[1]), [pair("a", 0, "b", 1)]);
        assert_eq!(rows_with(&mut inline, sql, &[]), [pair("a", 1, "b", 1)]);
    }

    #[test]
    fn a_kept_text_binds_each_run_by_its_parameters_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let mut inline = opened(&dir.path().join("t.db"));
        // A bare `?` takes the argument after those the batch's earlier bare ones took;
        // a numbered one takes its own, whatever its place.
        let batch = "SELECT ? AS a, ? AS b; SELECT $1 AS c, ? AS d; SELECT ?2 AS e, ?1 AS f";
        for values in [[10, 20, 30], [1, 2, 3]] {
            assert_eq!(
                rows_with(&mut inline, batch, &values),
                [
                    pair("a", values[0], "b", values[1]),
                    pair("c", values[0], "d", values[2]),
                    pair("e", values[1], "f", values[0]),
                ]
            );
        }
        // The same statement alone: its bare one is the batch's first, so takes the first.
        assert_eq!(
            rows_with(&mut inline, "SELECT $1 AS c, ? AS d", &[7, 8]),
            [pair("c", 7, "d", 7)]
        );
    }

    #[derive(Debug, PartialEq)]
    struct Pair {
        a: i64,
        b: i64,
    }

    positional!(Pair { a, b });

    #[test]
    fn records_are_read_by_position_and_checked_by_name_again_once_recompiled() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let mut inline = opened(&path);
        rows(
            &mut inline,
            "CREATE TABLE t (a INTEGER, b INTEGER); INSERT INTO t VALUES (1, 2)",
        );
        let read = "SELECT * FROM t WHERE a = ?1";
        for _ in 0..2 {
            let found = inline.records::<Pair>(read, &[AnyValueKind::BigInt(1)]);
            assert_eq!(found.unwrap(), Some(vec![Pair { a: 1, b: 2 }]));
        }
        // Columns of other names are refused, from the first run or once the table changes.
        let other = inline.records::<Pair>("SELECT a, b AS c FROM t", &[]);
        assert!(matches!(other, Err(sqlx::Error::Protocol(_))), "{other:?}");
        Connection::open(&path)
            .unwrap()
            .execute_batch("ALTER TABLE t RENAME COLUMN b TO c")
            .unwrap();
        let renamed = inline.records::<Pair>(read, &[AnyValueKind::BigInt(1)]);
        assert!(
            matches!(renamed, Err(sqlx::Error::Protocol(_))),
            "{renamed:?}"
        );
    }

    #[test]
    fn a_kept_statement_reads_the_columns_its_table_has_now() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let mut inline = opened(&path);
        let read = "SELECT * FROM t";
        rows(
            &mut inline,
            "CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1)",
        );
        assert_eq!(rows(&mut inline, read), [[("a".to_owned(), 1)]]);
        // Another connection alters the table under the kept statement and its columns.
        let other = Connection::open(&path).unwrap();
        other
            .execute_batch("ALTER TABLE t RENAME COLUMN a TO b")
            .unwrap();
        assert_eq!(rows(&mut inline, read), [[("b".to_owned(), 1)]]);
        other
            .execute_batch("ALTER TABLE t ADD COLUMN c INTEGER NOT NULL DEFAULT 2")
            .unwrap();
        assert_eq!(
            rows(&mut inline, read),
            [[("b".to_owned(), 1), ("c".to_owned(), 2)]]
        );
    }
}
