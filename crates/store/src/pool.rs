//! The store's connection pool.
//!
//! sqlx's pool pings every connection it is given back (`PoolConnection::return_to_pool`),
//! on a task of its own, and cannot be told not to: a round trip to PostgreSQL, or a hop to
//! SQLite's connection thread and back, after every statement. On a refresh that is one
//! statement, that was a third of its trips. The ping is there as a band-aid for a
//! connection left mid-statement by a future dropped at an `.await`. This pool does not
//! guess: a connection goes back to the pool only when what ran on it is known to have
//! finished (a statement that returned, a transaction committed or rolled back). Any other
//! connection is closed, which on either engine rolls back whatever it left open.
//!
//! The rest is what the store used of sqlx's pool: a bound on the connections, a bound on the
//! wait for one (then `PoolTimedOut`, a 503 to the client), a ping for a connection idle a
//! while before it is handed out, and the settings each new SQLite connection needs.
//!
//! An SQLite file's connections run their statements on the calling thread
//! (`sqlite_inline.rs`); PostgreSQL's, and an SQLite database that is not a plain file, are
//! sqlx's. PostgreSQL's are sqlx's driver itself rather than its `Any` wrapper: the store's
//! statements reach it through `Any` as before, and the field reads of the API take its rows
//! as they come ([`Pool::postgres_rows`]), without the conversion of each into an `AnyRow`;
//! on an inline SQLite file they take SQLite's rows as they come ([`Pool::sqlite_rows`]).

use std::fmt;
use std::future::Future;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use futures_util::stream::{self, BoxStream, StreamExt, TryStreamExt};
use std::borrow::Cow;

use sqlx::any::{
    AnyArguments, AnyConnectOptions, AnyQueryResult, AnyRow, AnyStatement, AnyTypeInfo,
};
use sqlx::postgres::{PgArguments, PgConnectOptions, PgConnection, PgRow};
use sqlx::{
    Any, AnyConnection, Connection, Either, Execute, Executor, Postgres, TransactionManager,
};
use sqlx_core::any::{AnyConnectionBackend, AnyValueKind};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::sqlite_group_commit::Group;
use crate::sqlite_inline::{InlineSqlite, OpenMode, Progress, Ran, Results};

/// A connection idle this long is pinged before it is handed out; one used moments ago is
/// not (as HikariCP's alive-bypass window): a connection broken while idle (a database
/// restart, a proxy's idle timeout) is found here rather than by a request's statement.
const PING_AFTER_IDLE: Duration = Duration::from_secs(1);

/// Runs on every new sqlx connection before its first use.
pub(crate) type AfterConnect =
    Arc<dyn Fn(&mut AnyConnection) -> BoxFuture<'_, Result<(), sqlx::Error>> + Send + Sync>;

/// How the pool opens a connection.
pub(crate) enum Connector {
    /// sqlx's connection, set up by `after_connect`.
    Sqlx {
        options: AnyConnectOptions,
        after_connect: AfterConnect,
    },
    /// sqlx's PostgreSQL driver.
    Postgres(PgConnectOptions),
    /// An SQLite file, its statements run on the calling thread, set up by `setup`.
    Inline {
        path: PathBuf,
        mode: OpenMode,
        setup: &'static str,
        slow: Duration,
    },
}

/// A connection of the pool.
pub(crate) enum Conn {
    Sqlx(AnyConnection),
    /// Boxed: sqlx's PostgreSQL connection is several times the size of the other kinds.
    Postgres(Box<PgConnection>),
    /// Boxed: its statement cache and splits make it several times the size of sqlx's.
    Inline(Box<InlineSqlite>),
    /// An inline connection on the blocking pool, waiting for a lock another process holds.
    /// Left here only if the statement's future was dropped meanwhile: the connection is
    /// then closed when that thread is done with it, and this one is never pooled.
    Lent,
}

impl fmt::Debug for Conn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Conn::Sqlx(_) => f.write_str("Conn::Sqlx"),
            Conn::Postgres(_) => f.write_str("Conn::Postgres"),
            Conn::Inline(_) => f.write_str("Conn::Inline"),
            Conn::Lent => f.write_str("Conn::Lent"),
        }
    }
}

impl Conn {
    /// `query`'s rows as `T`s, inside whatever the connection has begun: on an inline
    /// SQLite connection read by position ([`InlineSqlite::records`], the columns' names
    /// checked once per compiled statement), on any other through sqlx's executor by name,
    /// as also when the statement needs a lock another process holds (nothing of it ran,
    /// and the executor waits for the lock).
    pub(crate) async fn records<'q, T>(
        &mut self,
        mut query: sqlx::query::QueryAs<'q, Any, T, AnyArguments<'q>>,
    ) -> Result<Vec<T>, sqlx::Error>
    where
        T: crate::field::positional::Positional
            + for<'r> sqlx::FromRow<'r, AnyRow>
            + Send
            + Unpin
            + 'static,
    {
        let sql = query.sql();
        let arguments = query
            .take_arguments()
            .map_err(sqlx::Error::Encode)?
            .unwrap_or_default();
        if let Conn::Inline(inline) = self {
            if let Some(records) = inline.records(sql, &arguments.values.0)? {
                return Ok(records);
            }
        }
        sqlx::query_as_with(sql, arguments).fetch_all(self).await
    }

    /// Whether the connection still answers. A file's connection cannot break while idle.
    async fn ping(&mut self) -> Result<(), sqlx::Error> {
        match self {
            Conn::Sqlx(conn) => conn.ping().await,
            Conn::Postgres(conn) => Connection::ping(&mut **conn).await,
            Conn::Inline(_) => Ok(()),
            Conn::Lent => Err(lent()),
        }
    }

    /// Closes the connection, which rolls back whatever it left open.
    async fn close(self) {
        match self {
            Conn::Sqlx(conn) => {
                let _ = conn.close().await;
            }
            Conn::Postgres(conn) => {
                let _ = Connection::close(*conn).await;
            }
            Conn::Inline(conn) => drop(conn),
            Conn::Lent => {}
        }
    }

    async fn begin(&mut self) -> Result<(), sqlx::Error> {
        match self {
            Conn::Sqlx(conn) => {
                <Any as sqlx::Database>::TransactionManager::begin(conn, None).await
            }
            Conn::Postgres(conn) => {
                <Postgres as sqlx::Database>::TransactionManager::begin(conn, None).await
            }
            // sqlx's SQLite driver begins deferred too; writers hold the process's turn.
            Conn::Inline(_) | Conn::Lent => self.run_inline("BEGIN", None).await.map(drop),
        }
    }

    async fn commit(&mut self) -> Result<(), sqlx::Error> {
        match self {
            Conn::Sqlx(conn) => <Any as sqlx::Database>::TransactionManager::commit(conn).await,
            Conn::Postgres(conn) => {
                <Postgres as sqlx::Database>::TransactionManager::commit(conn).await
            }
            Conn::Inline(_) | Conn::Lent => self.run_inline("COMMIT", None).await.map(drop),
        }
    }

    async fn rollback(&mut self) -> Result<(), sqlx::Error> {
        match self {
            Conn::Sqlx(conn) => <Any as sqlx::Database>::TransactionManager::rollback(conn).await,
            Conn::Postgres(conn) => {
                <Postgres as sqlx::Database>::TransactionManager::rollback(conn).await
            }
            Conn::Inline(_) | Conn::Lent => self.run_inline("ROLLBACK", None).await.map(drop),
        }
    }

    /// The sqlx connection, for what only sqlx does on it (the migrator), or `None` for a
    /// connection of the store's own.
    pub(crate) fn as_sqlx(&mut self) -> Option<&mut AnyConnection> {
        match self {
            Conn::Sqlx(conn) => Some(conn),
            Conn::Postgres(_) | Conn::Inline(_) | Conn::Lent => None,
        }
    }

    /// sqlx's PostgreSQL connection, for the migrator.
    pub(crate) fn as_postgres(&mut self) -> Option<&mut PgConnection> {
        match self {
            Conn::Postgres(conn) => Some(conn),
            Conn::Sqlx(_) | Conn::Inline(_) | Conn::Lent => None,
        }
    }

    /// Runs `sql` on an inline connection here and now, unless a statement needs a lock
    /// another process holds (a CLI command's transaction): then the rest of the run waits
    /// for it on the blocking pool, as sqlx's connection thread would, and this thread goes
    /// on with other requests.
    async fn run_inline(
        &mut self,
        sql: &str,
        arguments: Option<AnyArguments<'_>>,
    ) -> Result<Results, sqlx::Error> {
        let values = arguments.map(|a| a.values.0).unwrap_or_default();
        let progress = match self {
            Conn::Inline(inline) => match inline.run_from(sql, &values, Progress::default())? {
                Ran::Done(results) => return Ok(results),
                Ran::Busy(progress) => progress,
            },
            // Only inline connections come here (the executor sends sqlx's to sqlx).
            Conn::Sqlx(_) | Conn::Postgres(_) => {
                return Err(sqlx::Error::Protocol(
                    "not an inline SQLite connection".to_owned(),
                ))
            }
            Conn::Lent => return Err(lent()),
        };
        self.run_blocking(sql, values, progress).await
    }

    /// Runs `sql` on an inline connection on the blocking pool, from `progress` on, waiting
    /// up to the busy timeout for a lock another process holds; this thread goes on with
    /// other tasks meanwhile.
    async fn run_blocking(
        &mut self,
        sql: &str,
        values: Vec<AnyValueKind<'_>>,
        progress: Progress,
    ) -> Result<Results, sqlx::Error> {
        let mut inline = match std::mem::replace(self, Conn::Lent) {
            Conn::Inline(inline) => inline,
            other => {
                *self = other;
                return Err(lent());
            }
        };
        let sql = sql.to_owned();
        let values = values
            .into_iter()
            .map(owned)
            .collect::<Result<Vec<AnyValueKind<'static>>, _>>()?;
        let (inline, results) = tokio::task::spawn_blocking(move || {
            let results = inline.run_waiting(&sql, &values, progress);
            (inline, results)
        })
        .await
        .map_err(|_| sqlx::Error::WorkerCrashed)?;
        *self = Conn::Inline(inline);
        results
    }
}

/// An argument that no longer borrows from the query, for a blocking thread.
fn owned(value: AnyValueKind<'_>) -> Result<AnyValueKind<'static>, sqlx::Error> {
    Ok(match value {
        AnyValueKind::Text(text) => AnyValueKind::Text(Cow::Owned(text.into_owned())),
        AnyValueKind::Blob(blob) => AnyValueKind::Blob(Cow::Owned(blob.into_owned())),
        AnyValueKind::Null(kind) => AnyValueKind::Null(kind),
        AnyValueKind::Bool(b) => AnyValueKind::Bool(b),
        AnyValueKind::SmallInt(i) => AnyValueKind::SmallInt(i),
        AnyValueKind::Integer(i) => AnyValueKind::Integer(i),
        AnyValueKind::BigInt(i) => AnyValueKind::BigInt(i),
        AnyValueKind::Real(r) => AnyValueKind::Real(r),
        AnyValueKind::Double(d) => AnyValueKind::Double(d),
        // Non-exhaustive: refused, as `bind` refuses it on the calling thread.
        _ => return Err(crate::sqlite_inline::unknown_kind()),
    })
}

/// A connection left on the blocking pool by a statement whose caller went away.
fn lent() -> sqlx::Error {
    sqlx::Error::Protocol("the connection was given up mid-statement".to_owned())
}

/// A bounded pool of connections to one database. Cheap to clone; clones share it.
#[derive(Clone)]
pub(crate) struct Pool {
    shared: Arc<Shared>,
}

struct Shared {
    connector: Connector,
    max: u32,
    acquire_timeout: Duration,
    /// One permit per connection that may be open; a connection in use, or being closed,
    /// holds one.
    permits: Arc<Semaphore>,
    /// The most recently returned last (they are taken from the end: a warm page cache).
    idle: Mutex<Vec<Idle>>,
    /// Connections open, idle or in use.
    open: AtomicU32,
    closed: AtomicBool,
    /// A transaction left open with writes waiting for their commit
    /// (`sqlite_group_commit.rs`), and its connection, idle meanwhile: whoever takes a
    /// connection next takes this one.
    group: Mutex<Option<OpenGroup>>,
}

struct OpenGroup {
    group: Arc<Group>,
    conn: Conn,
}

struct Idle {
    conn: Conn,
    since: Instant,
}

impl fmt::Debug for Pool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool")
            .field("max", &self.shared.max)
            .field("open", &self.size())
            .field("idle", &self.num_idle())
            .finish_non_exhaustive()
    }
}

impl Pool {
    /// A pool that opens its connections on first use, `max` at most.
    pub(crate) fn new(connector: Connector, max: u32, acquire_timeout: Duration) -> Pool {
        Pool {
            shared: Arc::new(Shared {
                connector,
                max,
                acquire_timeout,
                permits: Arc::new(Semaphore::new(max as usize)),
                idle: Mutex::new(Vec::new()),
                open: AtomicU32::new(0),
                closed: AtomicBool::new(false),
                group: Mutex::new(None),
            }),
        }
    }

    /// A connection: an idle one (pinged first if it has been idle a while), or a new one.
    /// Waits for a connection in use at most the acquire timeout, then `PoolTimedOut`.
    /// A transaction of grants left open on it (`sqlite_group_commit.rs`) is committed
    /// first, so that nothing reads or writes beside writes not yet committed.
    pub(crate) async fn acquire(&self) -> Result<PooledConnection, sqlx::Error> {
        let (mut conn, group) = self.acquire_joining().await?;
        if let Some(group) = group {
            match conn.commit().await {
                Ok(()) => group.settle(Ok(())),
                Err(error) => {
                    // Rolled back, or gone with a connection closed since: nothing of it
                    // is stored, and its members fail. This connection is as good as any.
                    group.settle(Err(error.to_string()));
                    let _ = conn.rollback().await;
                }
            }
            conn.settle();
        }
        Ok(conn)
    }

    /// [`Pool::acquire`] without committing the open group: for a member of it, which gets
    /// the group with the connection it is open on.
    pub(crate) async fn acquire_joining(
        &self,
    ) -> Result<(PooledConnection, Option<Arc<Group>>), sqlx::Error> {
        let shared = &self.shared;
        let deadline = tokio::time::Instant::now() + shared.acquire_timeout;
        let permit = tokio::time::timeout_at(deadline, Arc::clone(&shared.permits).acquire_owned())
            .await
            .map_err(|_| sqlx::Error::PoolTimedOut)?
            .map_err(|_| sqlx::Error::PoolClosed)?;
        if shared.closed.load(Ordering::Acquire) {
            return Err(sqlx::Error::PoolClosed);
        }
        // A connection in this function's hands is not counted as open: if the acquire is
        // dropped mid-ping or mid-connect, it goes with it and the count stays right.
        let pooled = |conn| {
            shared.open.fetch_add(1, Ordering::AcqRel);
            PooledConnection {
                conn: ManuallyDrop::new(conn),
                settled: false,
                shared: Arc::clone(shared),
                permit: Some(permit),
                group: None,
            }
        };
        if let Some(OpenGroup { group, conn }) = shared.take_group() {
            return Ok((pooled(conn), Some(group)));
        }
        while let Some(idle) = shared.take_idle() {
            let mut conn = idle.conn;
            if idle.since.elapsed() < PING_AFTER_IDLE {
                return Ok((pooled(conn), None));
            }
            // Broken while idle: dropped (nothing to roll back), and the next is tried.
            if let Ok(Ok(())) = tokio::time::timeout_at(deadline, conn.ping()).await {
                return Ok((pooled(conn), None));
            }
        }
        let conn = tokio::time::timeout_at(deadline, shared.connect())
            .await
            .map_err(|_| sqlx::Error::PoolTimedOut)??;
        Ok((pooled(conn), None))
    }

    /// A connection in a transaction (`BEGIN`).
    pub(crate) async fn begin(&self) -> Result<PoolTransaction, sqlx::Error> {
        let mut conn = self.acquire().await?;
        conn.begin().await?;
        Ok(PoolTransaction { conn })
    }

    /// Runs one statement with the caller's worker thread free: an inline SQLite
    /// connection runs it on the blocking pool (sqlx's connections always run theirs on a
    /// thread of their own). For statements that take long enough to hold up every request
    /// on the worker, as the clean-up's batches of deletes do; the rows it changed.
    pub(crate) async fn execute_off_worker<'q>(
        &self,
        mut query: sqlx::query::Query<'q, Any, AnyArguments<'q>>,
    ) -> Result<u64, sqlx::Error> {
        let mut conn = self.acquire().await?;
        let results = if matches!(*conn, Conn::Inline(_)) {
            let arguments = query.take_arguments().map_err(sqlx::Error::Encode)?;
            let values = arguments.map(|a| a.values.0).unwrap_or_default();
            conn.run_blocking(query.sql(), values, Progress::default())
                .await
        } else {
            conn.fetch_many(query).try_collect::<Vec<_>>().await
        };
        conn.settle_after(&results);
        Ok(results?
            .iter()
            .filter_map(|result| result.as_ref().left())
            .map(AnyQueryResult::rows_affected)
            .sum())
    }

    /// Whether the pool's connections are PostgreSQL's, whose rows
    /// [`Pool::postgres_rows`] gives as they come.
    pub(crate) fn is_postgres(&self) -> bool {
        matches!(self.shared.connector, Connector::Postgres(_))
    }

    /// A PostgreSQL statement's rows as sqlx's driver reads them, for readers that decode
    /// them straight into their records: converting each row into an `AnyRow` first (a copy
    /// of every value and of the row's column list) was 7% of an uncached API query's CPU
    /// (docs/performance.md). A prepared statement of the connection, as through `Any`.
    pub(crate) async fn postgres_rows(
        &self,
        sql: &str,
        arguments: PgArguments,
    ) -> Result<Vec<PgRow>, sqlx::Error> {
        let mut conn = self.acquire().await?;
        let rows = match &mut *conn {
            Conn::Postgres(pg) => {
                sqlx::query_with::<Postgres, _>(sql, arguments)
                    .fetch_all(&mut **pg)
                    .await
            }
            _ => Err(sqlx::Error::Protocol(
                "not a PostgreSQL connection".to_owned(),
            )),
        };
        conn.settle_after(&rows);
        rows
    }

    /// A statement's rows on an inline SQLite connection, each decoded by `decode` straight
    /// from SQLite's values ([`InlineSqlite::read_rows`]): converting each row into an
    /// `AnyRow` and decoding that by name was a sixth of an uncached API query's CPU
    /// (docs/performance.md). `Ok(None)` when the pool's connections are not inline, or when
    /// the statement needs a lock another process holds: the caller then runs it through
    /// sqlx's executor, which waits for it.
    pub(crate) async fn sqlite_rows<T>(
        &self,
        sql: &str,
        values: &[AnyValueKind<'_>],
        decode: impl FnMut(&rusqlite::Row<'_>) -> Result<T, sqlx::Error>,
    ) -> Result<Option<Vec<T>>, sqlx::Error> {
        if !matches!(self.shared.connector, Connector::Inline { .. }) {
            return Ok(None);
        }
        let mut conn = self.acquire().await?;
        let read = match &mut *conn {
            Conn::Inline(inline) => inline.read_rows(sql, values, decode),
            _ => Ok(None),
        };
        // Whatever it returned, the statement was reset as it returned (its rows dropped)
        // and nothing else was open on the connection: it goes back to the pool, its page
        // cache with it, even after a row that did not decode.
        conn.settle();
        read
    }

    /// Connections open, idle or in use.
    pub(crate) fn size(&self) -> u32 {
        self.shared.open.load(Ordering::Acquire)
    }

    pub(crate) fn num_idle(&self) -> usize {
        self.shared.lock_idle().len()
    }

    pub(crate) fn max_connections(&self) -> u32 {
        self.shared.max
    }

    /// Whether SQLite's grants share transactions (`sqlite_group_commit.rs`): on the
    /// store's own connections to an SQLite file.
    pub(crate) fn groups(&self) -> bool {
        matches!(self.shared.connector, Connector::Inline { .. })
    }

    /// Commits the transaction a group left open, if one is (`sqlite_group_commit.rs`): taking
    /// its connection does. A failure is its members' to report.
    pub(crate) async fn commit_open_group(&self) {
        let open = self
            .shared
            .group
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .is_some();
        if open {
            if let Ok(mut conn) = self.acquire().await {
                conn.settle();
            }
        }
    }

    /// Refuses new acquires, waits until every connection in use is given back (or closed),
    /// then closes the idle ones. On SQLite the last connection to close checkpoints the log.
    pub(crate) async fn close(&self) {
        let shared = &self.shared;
        // What an open group holds is committed, not rolled back with its connection.
        self.commit_open_group().await;
        shared.closed.store(true, Ordering::Release);
        // Every permit: no connection is in use or closing any more.
        let all = shared.permits.acquire_many(shared.max).await;
        let idle: Vec<Idle> = std::mem::take(&mut *shared.lock_idle());
        for Idle { conn, .. } in idle {
            conn.close().await;
            shared.open.fetch_sub(1, Ordering::AcqRel);
        }
        drop(all);
        shared.permits.close();
    }
}

impl Shared {
    /// The open group and its connection, no longer counted as open.
    fn take_group(&self) -> Option<OpenGroup> {
        let open = self
            .group
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if open.is_some() {
            self.open.fetch_sub(1, Ordering::AcqRel);
        }
        open
    }

    fn lock_idle(&self) -> std::sync::MutexGuard<'_, Vec<Idle>> {
        // A panic while the lock was held leaves a list that is still a list.
        self.idle
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The most recently returned idle connection, no longer counted as open.
    fn take_idle(&self) -> Option<Idle> {
        let idle = self.lock_idle().pop();
        if idle.is_some() {
            self.open.fetch_sub(1, Ordering::AcqRel);
        }
        idle
    }

    async fn connect(&self) -> Result<Conn, sqlx::Error> {
        match &self.connector {
            Connector::Sqlx {
                options,
                after_connect,
            } => {
                let mut conn = AnyConnection::connect_with(options).await?;
                after_connect(&mut conn).await?;
                Ok(Conn::Sqlx(conn))
            }
            Connector::Postgres(options) => Ok(Conn::Postgres(Box::new(
                PgConnection::connect_with(options).await?,
            ))),
            Connector::Inline {
                path,
                mode,
                setup,
                slow,
            } => {
                let (path, mode, setup, slow) = (path.clone(), *mode, *setup, *slow);
                tokio::task::spawn_blocking(move || InlineSqlite::open(&path, mode, setup, slow))
                    .await
                    .map_err(|_| sqlx::Error::WorkerCrashed)?
                    .map(|inline| Conn::Inline(Box::new(inline)))
            }
        }
    }
}

/// A connection taken from the [`Pool`]. It goes back to the pool when dropped only if it
/// was [settled](PooledConnection::settle) after its last use; otherwise it is closed, which
/// rolls back whatever it left open, and its place in the pool is free once it has closed.
pub(crate) struct PooledConnection {
    /// Taken out only by `drop`.
    conn: ManuallyDrop<Conn>,
    settled: bool,
    shared: Arc<Shared>,
    permit: Option<OwnedSemaphorePermit>,
    /// The group whose transaction is left open on it, for the next user to commit.
    group: Option<Arc<Group>>,
}

impl PooledConnection {
    /// What ran on the connection has finished and left nothing open: it may be reused.
    pub(crate) fn settle(&mut self) {
        self.settled = true;
    }

    /// What ran on the connection has finished, and `group`'s transaction is left open on
    /// it: the next user of the pool's connections takes it and commits that first.
    pub(crate) fn leave_group_open(&mut self, group: Arc<Group>) {
        self.group = Some(group);
        self.settled = true;
    }

    /// Settles the connection after a statement that returned: it ran to its end, or the
    /// database refused it (which ends it too), unless the refusal says the connection is
    /// going away (a shutdown, a connection exception). A transport error, or one that
    /// stopped reading the results part-way, leaves it to be closed.
    fn settle_after<T>(&mut self, result: &Result<T, sqlx::Error>) {
        let finished = match result {
            Ok(_) => true,
            Err(sqlx::Error::Database(refused)) => {
                !crate::error::is_unavailable_state(refused.code().as_deref())
            }
            Err(_) => false,
        };
        if finished {
            self.settle();
        }
    }
}

impl Deref for PooledConnection {
    type Target = Conn;

    fn deref(&self) -> &Conn {
        &self.conn
    }
}

impl DerefMut for PooledConnection {
    fn deref_mut(&mut self) -> &mut Conn {
        // Whoever writes to it may leave it mid-statement, until they settle it again.
        self.settled = false;
        &mut self.conn
    }
}

impl Drop for PooledConnection {
    fn drop(&mut self) {
        // SAFETY: `drop` runs once, and nothing uses `self.conn` after this.
        #[allow(unsafe_code)]
        let conn = unsafe { ManuallyDrop::take(&mut self.conn) };
        let shared = Arc::clone(&self.shared);
        if self.settled && !shared.closed.load(Ordering::Acquire) {
            match self.group.take() {
                Some(group) => {
                    let open = OpenGroup { group, conn };
                    *shared
                        .group
                        .lock()
                        .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(open);
                }
                None => shared.lock_idle().push(Idle {
                    conn,
                    since: Instant::now(),
                }),
            }
            // The permit is released after this, with the connection already idle.
            return;
        }
        // Closed while holding the permit, so that no connection is opened in its place
        // before this one has let go of its locks (SQLite's write lock, PostgreSQL's rows).
        let permit = self.permit.take();
        if let Conn::Inline(_) | Conn::Lent = conn {
            // Closed here and now: nothing to wait for.
            drop(conn);
            shared.open.fetch_sub(1, Ordering::AcqRel);
            drop(permit);
            return;
        }
        let close = async move {
            conn.close().await;
            shared.open.fetch_sub(1, Ordering::AcqRel);
            drop(permit);
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(close);
            }
            // No runtime (the process is ending): dropping the connection closes it.
            Err(_) => {
                self.shared.open.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }
}

/// A connection inside a transaction. Dropped without [`PoolTransaction::commit`] or
/// [`PoolTransaction::rollback`], its connection is closed, which rolls the transaction back.
pub(crate) struct PoolTransaction {
    conn: PooledConnection,
}

impl fmt::Debug for PoolTransaction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolTransaction").finish_non_exhaustive()
    }
}

impl PoolTransaction {
    pub(crate) async fn commit(mut self) -> Result<(), sqlx::Error> {
        self.conn.commit().await?;
        self.conn.settle();
        Ok(())
    }

    pub(crate) async fn rollback(mut self) -> Result<(), sqlx::Error> {
        self.conn.rollback().await?;
        self.conn.settle();
        Ok(())
    }
}

impl Deref for PoolTransaction {
    type Target = Conn;

    fn deref(&self) -> &Conn {
        &self.conn
    }
}

impl DerefMut for PoolTransaction {
    fn deref_mut(&mut self) -> &mut Conn {
        &mut self.conn
    }
}

/// A query's text and arguments, run on an inline connection: every row read.
async fn run_query<'q, E>(conn: &mut Conn, mut query: E) -> Result<Results, sqlx::Error>
where
    E: 'q + Execute<'q, Any>,
{
    let arguments = query.take_arguments().map_err(sqlx::Error::Encode)?;
    conn.run_inline(query.sql(), arguments).await
}

/// The rows and results `all` reads in full, as the stream `fetch_many` returns.
fn streamed<'e>(
    all: impl Future<Output = Result<Results, sqlx::Error>> + Send + 'e,
) -> BoxStream<'e, Result<Either<AnyQueryResult, AnyRow>, sqlx::Error>> {
    stream::once(all)
        .map_ok(|results| stream::iter(results.into_iter().map(Ok)))
        .try_flatten()
        .boxed()
}

/// Statements on one connection: sqlx's, or an inline one's (`Conn::run_inline`). Prepared
/// statements are not handed out by inline connections: the store never asks for one, and
/// each connection keeps its own.
impl<'c> Executor<'c> for &'c mut Conn {
    type Database = Any;

    fn fetch_many<'e, 'q: 'e, E>(
        self,
        mut query: E,
    ) -> BoxStream<'e, Result<Either<AnyQueryResult, AnyRow>, sqlx::Error>>
    where
        'c: 'e,
        E: 'q + Execute<'q, Any>,
    {
        match self {
            Conn::Sqlx(conn) => conn.fetch_many(query),
            // As `AnyConnection` runs it, on the driver it wraps.
            Conn::Postgres(conn) => {
                let arguments = match query.take_arguments().map_err(sqlx::Error::Encode) {
                    Ok(arguments) => arguments,
                    Err(error) => return stream::once(std::future::ready(Err(error))).boxed(),
                };
                AnyConnectionBackend::fetch_many(
                    &mut **conn,
                    query.sql(),
                    query.persistent(),
                    arguments,
                )
            }
            Conn::Inline(_) | Conn::Lent => streamed(run_query(self, query)),
        }
    }

    fn fetch_optional<'e, 'q: 'e, E>(
        self,
        mut query: E,
    ) -> BoxFuture<'e, Result<Option<AnyRow>, sqlx::Error>>
    where
        'c: 'e,
        E: 'q + Execute<'q, Any>,
    {
        match self {
            Conn::Sqlx(conn) => conn.fetch_optional(query),
            Conn::Postgres(conn) => {
                let arguments = match query.take_arguments().map_err(sqlx::Error::Encode) {
                    Ok(arguments) => arguments,
                    Err(error) => return Box::pin(std::future::ready(Err(error))),
                };
                AnyConnectionBackend::fetch_optional(
                    &mut **conn,
                    query.sql(),
                    query.persistent(),
                    arguments,
                )
            }
            Conn::Inline(_) | Conn::Lent => Box::pin(async move {
                let results = run_query(self, query).await?;
                Ok(results.into_iter().find_map(Either::right))
            }),
        }
    }

    fn prepare_with<'e, 'q: 'e>(
        self,
        sql: &'q str,
        parameters: &'e [AnyTypeInfo],
    ) -> BoxFuture<'e, Result<AnyStatement<'q>, sqlx::Error>>
    where
        'c: 'e,
    {
        match self {
            Conn::Sqlx(conn) => conn.prepare_with(sql, parameters),
            Conn::Postgres(conn) => {
                AnyConnectionBackend::prepare_with(&mut **conn, sql, parameters)
            }
            Conn::Inline(_) | Conn::Lent => {
                Box::pin(std::future::ready(Err(not_inline("prepare"))))
            }
        }
    }

    fn describe<'e, 'q: 'e>(
        self,
        sql: &'q str,
    ) -> BoxFuture<'e, Result<sqlx::Describe<Any>, sqlx::Error>>
    where
        'c: 'e,
    {
        match self {
            Conn::Sqlx(conn) => conn.describe(sql),
            Conn::Postgres(conn) => AnyConnectionBackend::describe(&mut **conn, sql),
            Conn::Inline(_) | Conn::Lent => {
                Box::pin(std::future::ready(Err(not_inline("describe"))))
            }
        }
    }
}

fn not_inline(what: &str) -> sqlx::Error {
    sqlx::Error::Protocol(format!(
        "an inline SQLite connection does not {what} statements"
    ))
}

/// Statements on the pool, as on sqlx's: each takes a connection for itself. The rows are
/// read to the end before the connection is given back, so a caller that stops reading
/// early never leaves a statement open on a pooled connection (the store's statements
/// return a bounded number of rows).
impl<'p> Executor<'p> for &'_ Pool {
    type Database = Any;

    fn fetch_many<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxStream<'e, Result<Either<AnyQueryResult, AnyRow>, sqlx::Error>>
    where
        'p: 'e,
        E: 'q + Execute<'q, Any>,
    {
        let pool = self.clone();
        streamed(async move {
            let mut conn = pool.acquire().await?;
            let results = conn.fetch_many(query).try_collect::<Vec<_>>().await;
            conn.settle_after(&results);
            results
        })
    }

    fn fetch_optional<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxFuture<'e, Result<Option<AnyRow>, sqlx::Error>>
    where
        'p: 'e,
        E: 'q + Execute<'q, Any>,
    {
        let pool = self.clone();
        Box::pin(async move {
            let mut conn = pool.acquire().await?;
            let row = conn.fetch_optional(query).await;
            conn.settle_after(&row);
            row
        })
    }

    fn prepare_with<'e, 'q: 'e>(
        self,
        sql: &'q str,
        parameters: &'e [AnyTypeInfo],
    ) -> BoxFuture<'e, Result<AnyStatement<'q>, sqlx::Error>>
    where
        'p: 'e,
    {
        let pool = self.clone();
        Box::pin(async move {
            let mut conn = pool.acquire().await?;
            let statement = conn.prepare_with(sql, parameters).await;
            conn.settle_after(&statement);
            statement
        })
    }

    fn describe<'e, 'q: 'e>(
        self,
        sql: &'q str,
    ) -> BoxFuture<'e, Result<sqlx::Describe<Any>, sqlx::Error>>
    where
        'p: 'e,
    {
        let pool = self.clone();
        Box::pin(async move {
            let mut conn = pool.acquire().await?;
            let described = conn.describe(sql).await;
            conn.settle_after(&described);
            described
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;

    use crate::testing::TestDatabase;
    use crate::Store;
    use sqlx::Row;

    /// Temporary tables belong to the connection (session) that made them, on both engines:
    /// whether one is visible tells which connection ran a statement.
    const MARK: &str = "CREATE TEMP TABLE pool_marker (x INTEGER)";
    const MARKED: &str = "SELECT COUNT(*) FROM pool_marker";

    async fn pool_of(db: &TestDatabase) -> Pool {
        Store::connect(&db.url).await.unwrap().pool().clone()
    }

    async fn marked(pool: &Pool) -> bool {
        sqlx::query(MARKED).execute(pool).await.is_ok()
    }

    async fn comes_back_after_a_statement_and_after_a_refused_one(db: TestDatabase) {
        let pool = pool_of(&db).await;
        sqlx::query(MARK).execute(&pool).await.unwrap();
        assert!(marked(&pool).await, "the connection was not given back");
        let refused = sqlx::query("SELECT * FROM no_such_table")
            .execute(&pool)
            .await;
        assert!(
            matches!(refused, Err(sqlx::Error::Database(_))),
            "{refused:?}"
        );
        assert!(
            marked(&pool).await,
            "a refused statement closed its connection"
        );
        assert_eq!(pool.size(), 1);
        assert_eq!(pool.num_idle(), 1);
    }

    async fn a_transaction_dropped_before_its_end_is_closed_and_rolled_back(db: TestDatabase) {
        let pool = pool_of(&db).await;
        sqlx::query("CREATE TABLE pool_rows (x INTEGER)")
            .execute(&pool)
            .await
            .unwrap();
        {
            let mut tx = pool.begin().await.unwrap();
            sqlx::query(MARK).execute(&mut *tx).await.unwrap();
            sqlx::query("INSERT INTO pool_rows VALUES (1)")
                .execute(&mut *tx)
                .await
                .unwrap();
        }
        // The next connection is not the one the transaction was left open on.
        assert!(
            !marked(&pool).await,
            "a connection inside a transaction was pooled"
        );
        let rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM pool_rows")
            .fetch_one(&pool)
            .await
            .unwrap();
        assert_eq!(rows, 0, "the dropped transaction's insert was kept");
        assert_eq!(pool.size(), 1, "the dropped connection is still counted");

        // One that commits gives its connection back.
        let mut tx = pool.begin().await.unwrap();
        sqlx::query(MARK).execute(&mut *tx).await.unwrap();
        tx.commit().await.unwrap();
        assert!(
            marked(&pool).await,
            "a committed transaction's connection was closed"
        );
    }

    #[tokio::test]
    async fn sqlite_comes_back_after_a_statement_and_after_a_refused_one() {
        comes_back_after_a_statement_and_after_a_refused_one(TestDatabase::sqlite()).await;
    }

    #[tokio::test]
    async fn postgres_comes_back_after_a_statement_and_after_a_refused_one() {
        if let Some(db) = TestDatabase::postgres().await {
            comes_back_after_a_statement_and_after_a_refused_one(db).await;
        }
    }

    #[tokio::test]
    async fn sqlite_a_transaction_dropped_before_its_end_is_closed_and_rolled_back() {
        a_transaction_dropped_before_its_end_is_closed_and_rolled_back(TestDatabase::sqlite())
            .await;
    }

    #[tokio::test]
    async fn postgres_a_transaction_dropped_before_its_end_is_closed_and_rolled_back() {
        if let Some(db) = TestDatabase::postgres().await {
            a_transaction_dropped_before_its_end_is_closed_and_rolled_back(db).await;
        }
    }

    /// SQLite: a statement that needs the write lock while another process holds it waits
    /// for it off the calling thread (which goes on with other tasks meanwhile), then runs.
    #[tokio::test]
    async fn sqlite_a_statement_waiting_for_another_process_leaves_the_thread_free() {
        let db = TestDatabase::sqlite();
        let pool = pool_of(&db).await;
        sqlx::query("CREATE TABLE pool_rows (x INTEGER)")
            .execute(&pool)
            .await
            .unwrap();
        let mut holder = sqlx::SqliteConnection::connect(&db.url).await.unwrap();
        sqlx::query("BEGIN IMMEDIATE")
            .execute(&mut holder)
            .await
            .unwrap();
        let writer = pool.clone();
        let write = tokio::spawn(async move {
            sqlx::query("INSERT INTO pool_rows VALUES (1)")
                .execute(&writer)
                .await
        });
        // On this test's one thread: a write that waited here would hold the thread for
        // its busy timeout, and this sleep would end only after that.
        let asleep = Instant::now();
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(
            asleep.elapsed() < crate::sqlite_inline::BUSY_WAIT,
            "the thread was held while the write waited for the lock"
        );
        assert!(!write.is_finished(), "the write did not wait for the lock");
        sqlx::query("COMMIT").execute(&mut holder).await.unwrap();
        let written = write.await.unwrap().unwrap();
        assert_eq!(written.rows_affected(), 1);
        let rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM pool_rows")
            .fetch_one(&pool)
            .await
            .unwrap();
        assert_eq!(rows, 1);
        assert_eq!((pool.size(), pool.num_idle()), (1, 1));
    }

    /// SQLite: a kept prepared statement (`*` over a table that has grown a column since it
    /// was prepared) returns the table's columns as they are now.
    #[tokio::test]
    async fn sqlite_a_kept_statement_reads_the_columns_its_table_has_now() {
        let db = TestDatabase::sqlite();
        let pool = pool_of(&db).await;
        for statement in [
            "CREATE TABLE grown (a INTEGER)",
            "INSERT INTO grown VALUES (1)",
        ] {
            sqlx::query(statement).execute(&pool).await.unwrap();
        }
        let before = sqlx::query("SELECT * FROM grown")
            .fetch_one(&pool)
            .await
            .unwrap();
        assert_eq!(before.columns().len(), 1);
        sqlx::query("ALTER TABLE grown ADD COLUMN b TEXT DEFAULT 'x'")
            .execute(&pool)
            .await
            .unwrap();
        let after = sqlx::query("SELECT * FROM grown")
            .fetch_one(&pool)
            .await
            .unwrap();
        assert_eq!(after.columns().len(), 2);
        assert_eq!(after.try_get::<String, _>("b").unwrap(), "x");
        assert_eq!((pool.size(), pool.num_idle()), (1, 1));
    }

    /// An acquire dropped while it pings a connection idle for a while (a request that went
    /// away): the connection goes with it, and the pool no longer counts it.
    #[tokio::test]
    async fn postgres_an_acquire_dropped_mid_ping_leaves_the_count_right() {
        let Some(db) = TestDatabase::postgres().await else {
            return;
        };
        let pool = pool_of(&db).await;
        assert_eq!((pool.size(), pool.num_idle()), (1, 1));
        // Polled once: the ping is on its way to the server. Then dropped. On a loaded host
        // the server may answer before that first poll reads, and the acquire is done: not
        // the case under test, so the connection goes back and idles again.
        let mut dropped_mid_ping = false;
        for _ in 0..10 {
            tokio::time::sleep(PING_AFTER_IDLE + Duration::from_millis(100)).await;
            let mut acquire = Box::pin(pool.acquire());
            let first =
                std::future::poll_fn(|cx| std::task::Poll::Ready(acquire.as_mut().poll(cx))).await;
            match first {
                std::task::Poll::Pending => {
                    drop(acquire);
                    dropped_mid_ping = true;
                    break;
                }
                std::task::Poll::Ready(conn) => conn.unwrap().settle(),
            }
        }
        assert!(
            dropped_mid_ping,
            "every ping answered within its first poll"
        );
        assert_eq!((pool.size(), pool.num_idle()), (0, 0));
        sqlx::query("SELECT 1").execute(&pool).await.unwrap();
        assert_eq!((pool.size(), pool.num_idle()), (1, 1));
    }

    /// A statement whose request went away mid-way: its connection is never handed out
    /// again, even after the statement has ended on the server.
    #[tokio::test]
    async fn postgres_a_statement_cut_off_mid_way_is_not_pooled() {
        let Some(db) = TestDatabase::postgres().await else {
            return;
        };
        let pool = pool_of(&db).await;
        sqlx::query(MARK).execute(&pool).await.unwrap();
        // On the one pooled connection, the marked one.
        let cut = tokio::time::timeout(
            Duration::from_millis(200),
            sqlx::query("SELECT pg_sleep(1)").execute(&pool),
        )
        .await;
        assert!(cut.is_err(), "the statement was not cut off");
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert!(!marked(&pool).await, "the cut-off connection was pooled");
        assert!(!marked(&pool).await, "the cut-off connection was pooled");
        assert_eq!(pool.size(), 1);
    }
}
