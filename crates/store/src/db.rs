//! The connection pool, the choice of backend by URL scheme, and embedded migrations.

use std::collections::BTreeMap;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sqlx::any::AnyConnectOptions;
use sqlx::postgres::PgConnectOptions;
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{AnyConnection, ConnectOptions, Connection, Executor};

use crate::error::StoreError;
use crate::pool::{Connector, Pool};
use crate::sqlite_inline::OpenMode;
use crate::tenant::{TenantId, TenantStore};

static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");
static POSTGRES_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);
/// Every SQLite connection's settings (why each: [`Database::open`]).
const SQLITE_PRAGMAS: &str = "PRAGMA auto_vacuum = INCREMENTAL; PRAGMA journal_mode = WAL; \
     PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000; \
     PRAGMA mmap_size = 0; PRAGMA wal_autocheckpoint = 0; \
     PRAGMA journal_size_limit = 268435456;";
const SLOW_STATEMENT: Duration = Duration::from_secs(5);
/// 64 MiB of 4 KiB pages: a log this long is restarted by the next checkpoint (under full
/// load, at every checkpoint).
const RESTART_LOG_PAGES: u64 = 16_384;
/// SQLite's checkpoint modes that the store runs.
#[derive(Clone, Copy)]
enum Mode {
    /// Copies what no reader still needs; waits for nothing.
    Passive,
    /// Copies all, then waits (at most the checkpoints' busy timeout, 100 ms) until no
    /// reader uses the log, so that the next writer starts it over.
    Restart,
}

/// Which database engine a store runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    /// Picks the backend from the URL scheme; nothing else is accepted.
    pub fn from_url(url: &str) -> Result<Backend, StoreError> {
        let scheme = url.split_once(':').map(|(s, _)| s).unwrap_or_default();
        match scheme {
            "sqlite" => Ok(Backend::Sqlite),
            "postgres" | "postgresql" => Ok(Backend::Postgres),
            _ => Err(StoreError::UnsupportedUrl),
        }
    }
}

/// One database: its pool and engine. The default database holds the signing keys and every
/// tenant that the shard map does not place elsewhere.
#[derive(Clone, Debug)]
pub(crate) struct Database {
    pool: Pool,
    backend: Backend,
    /// `default`, or the shard's name from the shard map: for metrics and logs, never the URL
    /// (it may carry a password).
    name: Arc<str>,
    /// SQLite's one writer at a time, taken by each transaction ([`crate::tenant::Transaction`]).
    writer: Arc<tokio::sync::Mutex<()>>,
    /// SQLite's PASSIVE checkpoints run on a connection of their own, opened at the first and
    /// kept, never on the pool's: the pool has one connection on a small machine, and a
    /// checkpoint (which syncs the log and the database file) held it for milliseconds every
    /// second, while every request waited behind it. A checkpoint does not block writers on
    /// other connections, nor change what their page caches hold.
    checkpointer: Arc<tokio::sync::Mutex<Option<AnyConnection>>>,
    options: AnyConnectOptions,
    /// An SQLite database's file (none in memory), flushed ahead of a log's restart.
    file: Option<std::path::PathBuf>,
}

/// Where each tenant lives: shard names with their database URLs, and the tenants placed on
/// each. A tenant that is not listed lives in the default database.
#[derive(Clone, Debug, Default)]
pub struct ShardMap {
    /// Shard name → database URL.
    pub shards: BTreeMap<String, String>,
    /// Tenant → shard name.
    pub tenants: BTreeMap<TenantId, String>,
}

/// How full one database's pool is, for the metrics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolUse {
    pub database: String,
    /// Open connections, idle or in use.
    pub size: u32,
    pub idle: u32,
    pub max: u32,
}

/// The store: the default database, and the shards that some tenants live on. Tenant-owned
/// records are reached through [`Store::tenant`], which picks the tenant's database from the
/// shard map (no other database is asked) and scopes every query to that tenant.
#[derive(Clone, Debug)]
pub struct Store {
    default: Database,
    /// Tenant → its shard's database; shared by clones.
    routes: Arc<BTreeMap<TenantId, Database>>,
    /// Every shard once, in name order (several tenants share one pool).
    shards: Arc<Vec<Database>>,
    /// Statements sent to the databases, for metrics and for the tests that bound them.
    statements: Arc<AtomicU64>,
    /// From how many pages on [`Store::checkpoint`] restarts an SQLite log.
    restart_log_pages: u64,
    /// Signalled when this process queued back-channel logout tokens; shared by clones.
    backchannel_queued: Arc<tokio::sync::Notify>,
}

impl Store {
    /// Connects to one database (no shards), creating an SQLite file on first use, and
    /// applies the embedded migrations.
    pub async fn connect(url: &str) -> Result<Store, StoreError> {
        Store::connect_sharded(url, &ShardMap::default()).await
    }

    /// Connects to the default database and to every shard of the map, migrating each.
    /// A shard that names an unknown shard, or a shard URL that cannot be opened, stops here.
    pub async fn connect_sharded(url: &str, map: &ShardMap) -> Result<Store, StoreError> {
        sqlx::any::install_default_drivers();
        let default = Database::open(url, "default").await?;
        let mut by_name = BTreeMap::new();
        for (name, shard_url) in &map.shards {
            let database = Database::open(shard_url, name)
                .await
                .map_err(|e| StoreError::Shard(name.clone(), Box::new(e)))?;
            by_name.insert(name.clone(), database);
        }
        let mut routes = BTreeMap::new();
        for (tenant, shard) in &map.tenants {
            let database = by_name
                .get(shard)
                .ok_or_else(|| StoreError::UnknownShard(tenant.to_string(), shard.clone()))?;
            routes.insert(tenant.clone(), database.clone());
        }
        Ok(Store {
            default,
            routes: Arc::new(routes),
            shards: Arc::new(by_name.into_values().collect()),
            statements: Arc::new(AtomicU64::new(0)),
            restart_log_pages: RESTART_LOG_PAGES,
            backchannel_queued: Arc::new(tokio::sync::Notify::new()),
        })
    }

    /// The engine of the default database.
    pub fn backend(&self) -> Backend {
        self.default.backend
    }

    /// The default database's pool, for one statement: every statement of the store goes
    /// through here, [`TenantStore`]'s pool, or [`Store::count_statement`] inside a
    /// transaction, so the count is what the databases saw.
    pub(crate) fn pool(&self) -> &Pool {
        self.count_statement();
        &self.default.pool
    }

    /// The database a tenant's records live in.
    pub(crate) fn database_of(&self, tenant: &TenantId) -> &Database {
        self.routes.get(tenant).unwrap_or(&self.default)
    }

    /// Every database once: the default first, then the shards by name.
    pub(crate) fn databases(&self) -> impl Iterator<Item = &Database> {
        std::iter::once(&self.default).chain(self.shards.iter())
    }

    /// Whether the tenant lives in `database` by the shard map (a copy left behind after a
    /// move does not count).
    pub(crate) fn routes_to(&self, tenant: &TenantId, database: &Database) -> bool {
        Arc::ptr_eq(&self.database_of(tenant).name, &database.name)
    }

    /// Notified when a transaction of this process queued back-channel logout tokens, so the
    /// deliverer need not wait for its next poll (rows other processes write are found by
    /// polling).
    pub fn backchannel_queued(&self) -> Arc<tokio::sync::Notify> {
        Arc::clone(&self.backchannel_queued)
    }

    pub(crate) fn count_statement(&self) {
        self.statements.fetch_add(1, Ordering::Relaxed);
    }

    /// How many statements this store (and its clones) has sent since it connected.
    pub fn statements_executed(&self) -> u64 {
        self.statements.load(Ordering::Relaxed)
    }

    /// The name of the database a tenant lives in: `default` or its shard's name.
    pub fn database_name(&self, tenant: &TenantId) -> &str {
        &self.database_of(tenant).name
    }

    /// The records of one tenant. Every query through the handle is bound to that tenant.
    pub fn tenant<'a>(&'a self, tenant: &'a TenantId) -> TenantStore<'a> {
        TenantStore::new(self, tenant)
    }

    /// One round trip to every database, for readiness checks: a node that cannot reach
    /// one shard cannot serve that shard's tenants.
    pub async fn ping(&self) -> Result<(), StoreError> {
        for database in self.databases() {
            self.count_statement();
            sqlx::query("SELECT 1").execute(&database.pool).await?;
        }
        Ok(())
    }

    /// The databases whose PostgreSQL runs without autovacuum: nothing then keeps the
    /// planner's statistics up with the tables' growth, and a plan made while a table was
    /// nearly empty can come to read all of it for one row (docs/deployment.md). None on
    /// SQLite, which plans without statistics.
    pub async fn autovacuum_off(&self) -> Result<Vec<String>, StoreError> {
        let mut off = Vec::new();
        for database in self.databases() {
            if database.backend != Backend::Postgres {
                continue;
            }
            self.count_statement();
            let setting: String = sqlx::query_scalar("SELECT current_setting('autovacuum')")
                .fetch_one(&database.pool)
                .await?;
            if setting != "on" {
                off.push(database.name().to_owned());
            }
        }
        Ok(off)
    }

    /// Copies what the SQLite write-ahead logs hold into their database files. PASSIVE: it
    /// neither waits for nor blocks readers and writers, so it copies what no reader still
    /// needs and the rest next time. Nothing to do on PostgreSQL.
    ///
    /// A log is reused from its start only by a writer that begins after a checkpoint copied
    /// all of it, which writes without a pause never allow: the log would grow for as long as
    /// the load lasts. So a log past [`RESTART_LOG_PAGES`] is restarted (see
    /// [`Store::restart_log`]).
    pub async fn checkpoint(&self) -> Result<Checkpoint, StoreError> {
        let mut total = Checkpoint::default();
        for database in self.databases() {
            if database.backend != Backend::Sqlite {
                continue;
            }
            self.count_statement();
            let (_, wal_pages, copied_pages) = database.checkpoint_log(Mode::Passive).await?;
            let (mut wal_pages, mut copied_pages) = (pages(wal_pages), pages(copied_pages));
            if wal_pages >= self.restart_log_pages {
                let (restarted, held) = self.restart_log(database).await?;
                total.writers_held += held;
                if let Some((wal, copied)) = restarted {
                    (wal_pages, copied_pages) = (wal, copied);
                    total.restarts += 1;
                } else {
                    total.restarts_refused += 1;
                }
            }
            total.wal_pages += wal_pages;
            total.copied_pages += copied_pages;
        }
        Ok(total)
    }

    /// `wal_checkpoint(RESTART)`: it copies what is left of the log and waits until no reader
    /// still reads from it, so that the next writer starts the log over. It holds the
    /// process's turn to write, so the store's transactions wait in line instead of in
    /// SQLite's busy handler; other writers wait in that handler for as long as it runs. It
    /// waits at most 100 ms for a reader ([`Mode::Restart`]): a busy log is tried again at the
    /// next checkpoint, and `None` says so. Also returns how long it held the turn.
    ///
    /// Everything it can do without the turn comes first: a PASSIVE checkpoint of what was
    /// written since the one that found the log long, then a flush of the database file
    /// (`sqlite_sync.rs`), so that little is left to copy and to sync while writers wait.
    /// The checkpoints run on the checkpoints' own connection, so the pool's connection
    /// keeps its page cache and readers go on meanwhile.
    async fn restart_log(
        &self,
        database: &Database,
    ) -> Result<(Option<(u64, u64)>, Duration), StoreError> {
        self.count_statement();
        database.checkpoint_log(Mode::Passive).await?;
        database.sync_file().await?;
        let turn = database.writer.lock().await;
        let held = std::time::Instant::now();
        // Grants left open for their group's commit (`sqlite_group_commit.rs`) are committed
        // first: a writer's open transaction would keep the log from restarting.
        database.pool.commit_open_group().await;
        self.count_statement();
        let restart = database.checkpoint_log(Mode::Restart).await;
        let held = held.elapsed();
        drop(turn);
        let (busy, wal_pages, copied_pages) = restart?;
        let counted = (pages(wal_pages), pages(copied_pages));
        Ok(((!busy).then_some(counted), held))
    }

    /// Restarts a write-ahead log from this many pages on, not at the first chance: a restart
    /// holds every writer back while it runs.
    #[cfg(feature = "testing")]
    pub fn restart_log_after(&mut self, pages: u64) {
        self.restart_log_pages = pages;
    }

    /// Takes every connection of the default database's pool and holds them until the
    /// returned value is dropped: for a test of what must not wait for the pool.
    #[cfg(feature = "testing")]
    pub async fn hold_every_connection(&self) -> Result<impl Send, StoreError> {
        let pool = &self.default.pool;
        let mut held = Vec::new();
        for _ in 0..pool.max_connections() {
            held.push(pool.acquire().await?);
        }
        Ok(held)
    }

    /// How full each pool is.
    pub fn pool_use(&self) -> Vec<PoolUse> {
        self.databases()
            .map(|d| PoolUse {
                database: d.name.to_string(),
                size: d.pool.size(),
                idle: u32::try_from(d.pool.num_idle()).unwrap_or(u32::MAX),
                max: d.pool.max_connections(),
            })
            .collect()
    }

    /// Closes the pools, waiting for connections in use to be returned.
    pub async fn close(&self) {
        for database in self.databases() {
            database.pool.close().await;
        }
    }
}

/// A page count from `wal_checkpoint`: -1 when the database is not in WAL mode (it always is
/// here).
fn pages(count: i64) -> u64 {
    u64::try_from(count).unwrap_or(0)
}

/// What one [`Store::checkpoint`] found, summed over the SQLite databases.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Checkpoint {
    /// Pages in the write-ahead logs.
    pub wal_pages: u64,
    /// Of those, the pages now in the database files.
    pub copied_pages: u64,
    /// Logs that were restarted: the next writer reuses them from their start.
    pub restarts: u64,
    /// Logs past the restart's length that a reader kept from being restarted: they grow
    /// until a later checkpoint restarts them.
    pub restarts_refused: u64,
    /// How long the restarts, tried or done, held the process's writers back.
    pub writers_held: Duration,
}

impl Database {
    async fn open(url: &str, name: &str) -> Result<Database, StoreError> {
        let backend = Backend::from_url(url)?;
        let options = connect_options(url, backend)?;
        if backend == Backend::Sqlite {
            create_sqlite_file(url)?;
        }
        let after_connect: crate::pool::AfterConnect = Arc::new(move |conn| {
            Box::pin(async move {
                if backend == Backend::Sqlite {
                    // Every SQLite connection, sqlx's and the inline ones (`SQLITE_PRAGMAS`).
                    // WAL lets readers run beside the one writer; busy_timeout makes a
                    // writer wait for the lock instead of failing at once. No memory map:
                    // a connection that finds the database changed by another connection
                    // (on nearly every request, under load) drops its cache and unmaps the
                    // whole file, and faulting the pages back in cost more than the preads
                    // the map spared (docs/decisions.md). No commit runs a checkpoint (an
                    // fsync of the database on a request's path): the server runs them in
                    // the background (`Store::checkpoint`), and the last connection to
                    // close checkpoints what is left, so a CLI command leaves nothing
                    // behind. The size limit (256 MiB) trims a log that grew in a burst; it
                    // is above what a log reaches between two checkpoints at full load
                    // (about 80 MB), so a restarted log is written over in place instead
                    // of being truncated by a request's commit and extended again.
                    // auto_vacuum first: it only takes on a file without tables (a new
                    // one), which then gives the pages a clean-up frees back to the file
                    // system (`Store::clean_up`); an older file ignores it.
                    conn.execute(SQLITE_PRAGMAS).await?;
                }
                Ok(())
            })
        });
        // ACQUIRE_TIMEOUT bounds how long a request waits for a database that does not
        // answer: then it gets a 503 (docs/deployment.md, Faults).
        let connector = match (backend, inline_sqlite_file(url, backend)) {
            (_, Some((path, mode))) => Connector::Inline {
                path,
                mode,
                setup: SQLITE_PRAGMAS,
                slow: SLOW_STATEMENT,
            },
            // The URL as `Any` read it, its statement logging included.
            (Backend::Postgres, None) => Connector::Postgres(
                PgConnectOptions::try_from(&options).map_err(|_| StoreError::UnsupportedUrl)?,
            ),
            (Backend::Sqlite, None) => Connector::Sqlx {
                options: options.clone(),
                after_connect: Arc::clone(&after_connect),
            },
        };
        let pool = Pool::new(connector, pool_size(backend), ACQUIRE_TIMEOUT);
        let migrator = match backend {
            Backend::Sqlite => &SQLITE_MIGRATIONS,
            Backend::Postgres => &POSTGRES_MIGRATIONS,
        };
        // The first connection is opened here, so that a database that cannot be reached
        // stops the start with its error.
        let mut conn = pool.acquire().await.map_err(StoreError::Unavailable)?;
        // On PostgreSQL the migrator holds an advisory lock while it works, so nodes that
        // start together apply each migration once (tested by the store suite). The
        // migrator wants sqlx's connection: an inline pool's file is migrated on one of
        // sqlx's, opened for it and closed.
        if let Some(pg_conn) = conn.as_postgres() {
            migrator.run_direct(pg_conn).await?;
        } else if let Some(sqlx_conn) = conn.as_sqlx() {
            migrator.run_direct(sqlx_conn).await?;
        } else {
            let mut sqlx_conn = AnyConnection::connect_with(&options)
                .await
                .map_err(StoreError::Unavailable)?;
            after_connect(&mut sqlx_conn).await?;
            migrator.run_direct(&mut sqlx_conn).await?;
            sqlx_conn.close().await?;
        }
        conn.settle();
        drop(conn);
        Ok(Database {
            pool,
            backend,
            name: Arc::from(name),
            writer: Arc::default(),
            checkpointer: Arc::default(),
            options,
            file: sqlite_file(url, backend),
        })
    }

    /// Flushes an SQLite database's file: what the PASSIVE checkpoints copied into it, which
    /// SQLite syncs only at a checkpoint that reaches the log's end (`sqlite_sync.rs`).
    async fn sync_file(&self) -> Result<(), StoreError> {
        let Some(file) = self.file.clone() else {
            return Ok(());
        };
        tokio::task::spawn_blocking(move || crate::sqlite_sync::sync_database_file(&file))
            .await
            .map_err(|_| sqlx::Error::WorkerCrashed)??;
        Ok(())
    }

    /// A checkpoint (`PASSIVE` or `RESTART`) on the checkpoints' own connection: whether it
    /// was kept from finishing by a reader or writer, the log's pages, and how many of them
    /// are now in the database file. A connection that fails is closed and opened again at
    /// the next checkpoint.
    async fn checkpoint_log(&self, mode: Mode) -> Result<(bool, i64, i64), StoreError> {
        let mut slot = self.checkpointer.lock().await;
        let conn = match slot.take() {
            Some(conn) => conn,
            None => {
                let mut conn = AnyConnection::connect_with(&self.options)
                    .await
                    .map_err(StoreError::Unavailable)?;
                // A PASSIVE checkpoint never waits; a RESTART waits this long at most for
                // the log's last readers, and is tried again at the next checkpoint.
                conn.execute(SQLITE_PRAGMAS).await?;
                conn.execute("PRAGMA busy_timeout = 100").await?;
                conn
            }
        };
        let conn = slot.insert(conn);
        let statement = match mode {
            Mode::Passive => "PRAGMA wal_checkpoint(PASSIVE)",
            Mode::Restart => "PRAGMA wal_checkpoint(RESTART)",
        };
        let checkpoint = sqlx::query_as(statement).fetch_one(&mut *conn).await;
        if checkpoint.is_err() {
            *slot = None;
        }
        let (busy, wal_pages, copied_pages): (i64, i64, i64) = checkpoint?;
        Ok((busy != 0, wal_pages, copied_pages))
    }

    pub(crate) fn pool(&self) -> &Pool {
        &self.pool
    }

    pub(crate) fn backend(&self) -> Backend {
        self.backend
    }

    /// `default` or the shard's name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The turn to write, on SQLite; PostgreSQL locks rows, not the database.
    pub(crate) fn writer(&self) -> Option<Arc<tokio::sync::Mutex<()>>> {
        match self.backend {
            Backend::Sqlite => Some(Arc::clone(&self.writer)),
            Backend::Postgres => None,
        }
    }
}

fn connect_options(url: &str, backend: Backend) -> Result<AnyConnectOptions, StoreError> {
    let url = match backend {
        // `mode=rwc` creates the file on first start, as the default URL promises.
        Backend::Sqlite if !url.contains("mode=") => {
            let sep = if url.contains('?') { '&' } else { '?' };
            format!("{url}{sep}mode=rwc")
        }
        _ => url.to_owned(),
    };
    // sqlx logs statements at debug level; their text never carries a secret, since every
    // value is bound. A statement is "slow" (a warning) from 5 s, the request deadline's
    // scale, not sqlx's 1 s: waiting up to a second or two for the migrator's advisory lock
    // while other nodes or commands migrate is expected, not a fault.
    AnyConnectOptions::from_str(&url)
        .map(|options| options.log_slow_statements(log::LevelFilter::Warn, SLOW_STATEMENT))
        .map_err(|_| StoreError::UnsupportedUrl)
}

/// The file and mode of an SQLite URL whose statements the pool runs inline: a file (not
/// in memory) with no setting in its URL but `mode` (ro, rw, rwc). Any other URL is left to
/// sqlx's driver, which reads every setting.
fn inline_sqlite_file(url: &str, backend: Backend) -> Option<(std::path::PathBuf, OpenMode)> {
    let path = sqlite_file(url, backend)?;
    let (_, query) = sqlite_url_parts(url);
    let mut mode = OpenMode::Rwc;
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        mode = match pair {
            "mode=ro" => OpenMode::Ro,
            "mode=rw" => OpenMode::Rw,
            "mode=rwc" => OpenMode::Rwc,
            _ => return None,
        };
    }
    Some((path, mode))
}

/// The file of an SQLite URL, unless the database is in memory.
fn sqlite_file(url: &str, backend: Backend) -> Option<std::path::PathBuf> {
    if backend != Backend::Sqlite {
        return None;
    }
    // sqlx names an in-memory database `file:sqlx-in-memory-N`: the URL tells.
    if url.contains(":memory:") || url.contains("mode=memory") {
        return None;
    }
    let options = SqliteConnectOptions::from_str(url).ok()?;
    let path = options.get_filename();
    let in_memory = path.as_os_str().is_empty() || path.as_os_str() == ":memory:";
    (!in_memory).then(|| path.to_path_buf())
}

/// An SQLite URL's database and query, as sqlx reads them (`sqlite://PATH?QUERY` or
/// `sqlite:PATH?QUERY`).
fn sqlite_url_parts(url: &str) -> (&str, &str) {
    let rest = url
        .trim_start_matches("sqlite://")
        .trim_start_matches("sqlite:");
    rest.split_once('?').unwrap_or((rest, ""))
}

/// Creates an SQLite database file that does not exist yet, readable and writable by its
/// owner alone: it holds every password and secret hash, and SQLite would create it 0644
/// (less the umask). SQLite gives the `-wal` and `-shm` files it creates beside it the
/// database file's mode. A file that exists keeps the mode its operator gave it; a URL that
/// does not create (`mode=ro`, `mode=rw`, in memory) is left to SQLite.
fn create_sqlite_file(url: &str) -> Result<(), StoreError> {
    let (database, query) = sqlite_url_parts(url);
    let mode = query.split('&').find_map(|pair| pair.strip_prefix("mode="));
    if database.is_empty() || database == ":memory:" || mode.is_some_and(|mode| mode != "rwc") {
        return Ok(());
    }
    let options = SqliteConnectOptions::from_str(url).map_err(|_| StoreError::UnsupportedUrl)?;
    let mut file = std::fs::OpenOptions::new();
    file.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut file, 0o600);
    match file.open(options.get_filename()) {
        Ok(_) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(error) => Err(StoreError::Unavailable(sqlx::Error::Io(error))),
    }
}

fn pool_size(backend: Backend) -> u32 {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get()) as u32;
    match backend {
        // One writer at a time on SQLite, and a connection that finds the file changed by
        // another drops its whole page cache and reads the pages again: with two connections
        // taking turns, nearly every statement did, and a refresh cost 7% more CPU than with
        // one (docs/performance.md). A statement takes tens of microseconds, so one connection
        // serves a few cores; more only from 8 cores on, when reads of several cores overlap.
        Backend::Sqlite => (cores / 4).clamp(1, 4),
        Backend::Postgres => (cores * 4).clamp(4, 32),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_inline_connection_opens_a_file_whose_url_sets_nothing_but_its_mode() {
        let read_only = inline_sqlite_file("sqlite:///srv/auth.db?mode=ro", Backend::Sqlite);
        assert_eq!(
            read_only,
            Some((std::path::PathBuf::from("/srv/auth.db"), OpenMode::Ro))
        );
        let default = inline_sqlite_file("sqlite:///srv/auth.db", Backend::Sqlite);
        assert_eq!(default.map(|(_, mode)| mode), Some(OpenMode::Rwc));
        for url in [
            "sqlite:///srv/auth.db?cache=shared",
            "sqlite::memory:",
            "sqlite://shared?mode=memory&cache=shared",
        ] {
            assert_eq!(inline_sqlite_file(url, Backend::Sqlite), None, "{url}");
        }
    }

    #[test]
    fn only_a_database_on_disk_has_a_file_to_flush() {
        let file = sqlite_file(
            "sqlite:///var/lib/fieldauth/auth.db?mode=rwc",
            Backend::Sqlite,
        );
        assert_eq!(
            file.as_deref(),
            Some(std::path::Path::new("/var/lib/fieldauth/auth.db"))
        );
        let relative = sqlite_file("sqlite://fieldauth.db", Backend::Sqlite);
        assert_eq!(
            relative.as_deref(),
            Some(std::path::Path::new("fieldauth.db"))
        );
        assert_eq!(sqlite_file("sqlite::memory:", Backend::Sqlite), None);
        assert_eq!(
            sqlite_file("sqlite://shared?mode=memory&cache=shared", Backend::Sqlite),
            None
        );
        assert_eq!(
            sqlite_file("postgres://localhost/auth", Backend::Postgres),
            None
        );
    }
}
