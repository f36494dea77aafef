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

use std::fmt;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use futures_util::stream::{self, BoxStream, StreamExt, TryStreamExt};
use sqlx::any::{AnyConnectOptions, AnyQueryResult, AnyRow, AnyStatement, AnyTypeInfo};
use sqlx::{Any, AnyConnection, Connection, Either, Execute, Executor, TransactionManager};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// A connection idle this long is pinged before it is handed out; one used moments ago is
/// not (as HikariCP's alive-bypass window): a connection broken while idle (a database
/// restart, a proxy's idle timeout) is found here rather than by a request's statement.
const PING_AFTER_IDLE: Duration = Duration::from_secs(1);

/// Runs on every new connection before its first use (SQLite's pragmas).
pub(crate) type AfterConnect =
    Arc<dyn Fn(&mut AnyConnection) -> BoxFuture<'_, Result<(), sqlx::Error>> + Send + Sync>;

/// A bounded pool of connections to one database. Cheap to clone; clones share it.
#[derive(Clone)]
pub(crate) struct Pool {
    shared: Arc<Shared>,
}

struct Shared {
    options: AnyConnectOptions,
    after_connect: AfterConnect,
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
}

struct Idle {
    conn: AnyConnection,
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
    pub(crate) fn new(
        options: AnyConnectOptions,
        max: u32,
        acquire_timeout: Duration,
        after_connect: AfterConnect,
    ) -> Pool {
        Pool {
            shared: Arc::new(Shared {
                options,
                after_connect,
                max,
                acquire_timeout,
                permits: Arc::new(Semaphore::new(max as usize)),
                idle: Mutex::new(Vec::new()),
                open: AtomicU32::new(0),
                closed: AtomicBool::new(false),
            }),
        }
    }

    /// A connection: an idle one (pinged first if it has been idle a while), or a new one.
    /// Waits for a connection in use at most the acquire timeout, then `PoolTimedOut`.
    pub(crate) async fn acquire(&self) -> Result<PooledConnection, sqlx::Error> {
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
            }
        };
        while let Some(idle) = shared.take_idle() {
            let mut conn = idle.conn;
            if idle.since.elapsed() < PING_AFTER_IDLE {
                return Ok(pooled(conn));
            }
            // Broken while idle: dropped (nothing to roll back), and the next is tried.
            if let Ok(Ok(())) = tokio::time::timeout_at(deadline, conn.ping()).await {
                return Ok(pooled(conn));
            }
        }
        let conn = tokio::time::timeout_at(deadline, shared.connect())
            .await
            .map_err(|_| sqlx::Error::PoolTimedOut)??;
        Ok(pooled(conn))
    }

    /// A connection in a transaction (`BEGIN`).
    pub(crate) async fn begin(&self) -> Result<PoolTransaction, sqlx::Error> {
        let mut conn = self.acquire().await?;
        <Any as sqlx::Database>::TransactionManager::begin(&mut conn, None).await?;
        Ok(PoolTransaction { conn })
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

    /// Refuses new acquires, waits until every connection in use is given back (or closed),
    /// then closes the idle ones. On SQLite the last connection to close checkpoints the log.
    pub(crate) async fn close(&self) {
        let shared = &self.shared;
        shared.closed.store(true, Ordering::Release);
        // Every permit: no connection is in use or closing any more.
        let all = shared.permits.acquire_many(shared.max).await;
        let idle: Vec<Idle> = std::mem::take(&mut *shared.lock_idle());
        for Idle { conn, .. } in idle {
            let _ = conn.close().await;
            shared.open.fetch_sub(1, Ordering::AcqRel);
        }
        drop(all);
        shared.permits.close();
    }
}

impl Shared {
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

    async fn connect(&self) -> Result<AnyConnection, sqlx::Error> {
        let mut conn = AnyConnection::connect_with(&self.options).await?;
        (self.after_connect)(&mut conn).await?;
        Ok(conn)
    }
}

/// A connection taken from the [`Pool`]. It goes back to the pool when dropped only if it
/// was [settled](PooledConnection::settle) after its last use; otherwise it is closed, which
/// rolls back whatever it left open, and its place in the pool is free once it has closed.
pub(crate) struct PooledConnection {
    /// Taken out only by `drop`.
    conn: ManuallyDrop<AnyConnection>,
    settled: bool,
    shared: Arc<Shared>,
    permit: Option<OwnedSemaphorePermit>,
}

impl PooledConnection {
    /// What ran on the connection has finished and left nothing open: it may be reused.
    pub(crate) fn settle(&mut self) {
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
    type Target = AnyConnection;

    fn deref(&self) -> &AnyConnection {
        &self.conn
    }
}

impl DerefMut for PooledConnection {
    fn deref_mut(&mut self) -> &mut AnyConnection {
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
            shared.lock_idle().push(Idle {
                conn,
                since: Instant::now(),
            });
            // The permit is released after this, with the connection already idle.
            return;
        }
        // Closed while holding the permit, so that no connection is opened in its place
        // before this one has let go of its locks (SQLite's write lock, PostgreSQL's rows).
        let permit = self.permit.take();
        let close = async move {
            let _ = conn.close().await;
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
        <Any as sqlx::Database>::TransactionManager::commit(&mut self.conn).await?;
        self.conn.settle();
        Ok(())
    }

    pub(crate) async fn rollback(mut self) -> Result<(), sqlx::Error> {
        <Any as sqlx::Database>::TransactionManager::rollback(&mut self.conn).await?;
        self.conn.settle();
        Ok(())
    }
}

impl Deref for PoolTransaction {
    type Target = AnyConnection;

    fn deref(&self) -> &AnyConnection {
        &self.conn
    }
}

impl DerefMut for PoolTransaction {
    fn deref_mut(&mut self) -> &mut AnyConnection {
        &mut self.conn
    }
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
        let all = async move {
            let mut conn = pool.acquire().await?;
            let results = conn.fetch_many(query).try_collect::<Vec<_>>().await;
            conn.settle_after(&results);
            results
        };
        stream::once(all)
            .map_ok(|results| stream::iter(results.into_iter().map(Ok)))
            .try_flatten()
            .boxed()
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

    /// An acquire dropped while it pings a connection idle for a while (a request that went
    /// away): the connection goes with it, and the pool no longer counts it.
    #[tokio::test]
    async fn postgres_an_acquire_dropped_mid_ping_leaves_the_count_right() {
        let Some(db) = TestDatabase::postgres().await else {
            return;
        };
        let pool = pool_of(&db).await;
        assert_eq!((pool.size(), pool.num_idle()), (1, 1));
        tokio::time::sleep(PING_AFTER_IDLE + Duration::from_millis(100)).await;
        // Polled once: the ping is on its way to the server. Then dropped.
        let mut acquire = Box::pin(pool.acquire());
        let first =
            std::future::poll_fn(|cx| std::task::Poll::Ready(acquire.as_mut().poll(cx))).await;
        assert!(first.is_pending(), "the ping answered at once");
        drop(acquire);
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
