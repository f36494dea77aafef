//! The connection pool, the choice of backend by URL scheme, and embedded migrations.

use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{AnyPool, Executor};

use crate::error::StoreError;
use crate::tenant::{TenantId, TenantStore};

static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");
static POSTGRES_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

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

/// The store: one pool to the default database. Tenant-owned records are reached through
/// [`Store::tenant`], which scopes every query to that tenant.
#[derive(Clone, Debug)]
pub struct Store {
    pool: AnyPool,
    backend: Backend,
    /// Statements sent to the database, for metrics and for the tests that bound them.
    statements: Arc<AtomicU64>,
}

impl Store {
    /// Connects, creating an SQLite file on first use, and applies the embedded migrations.
    pub async fn connect(url: &str) -> Result<Store, StoreError> {
        sqlx::any::install_default_drivers();
        let backend = Backend::from_url(url)?;
        let options = connect_options(url, backend)?;
        let pool = AnyPoolOptions::new()
            .max_connections(pool_size(backend))
            .acquire_timeout(Duration::from_secs(5))
            .after_connect(move |conn, _meta| {
                Box::pin(async move {
                    if backend == Backend::Sqlite {
                        // WAL lets readers run beside the one writer; busy_timeout makes a
                        // writer wait for the lock instead of failing at once.
                        conn.execute(
                            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
                             PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000;",
                        )
                        .await?;
                    }
                    Ok(())
                })
            })
            .connect_with(options)
            .await
            .map_err(StoreError::Unavailable)?;
        let migrator = match backend {
            Backend::Sqlite => &SQLITE_MIGRATIONS,
            Backend::Postgres => &POSTGRES_MIGRATIONS,
        };
        // The migrator takes a database lock on PostgreSQL, so nodes may start together.
        migrator.run(&pool).await?;
        Ok(Store {
            pool,
            backend,
            statements: Arc::new(AtomicU64::new(0)),
        })
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The pool, for one statement: every statement of the store goes through here (or
    /// [`Store::count_statement`] inside a transaction), so the count is what the database saw.
    pub(crate) fn pool(&self) -> &AnyPool {
        self.count_statement();
        &self.pool
    }

    pub(crate) fn count_statement(&self) {
        self.statements.fetch_add(1, Ordering::Relaxed);
    }

    /// How many statements this store (and its clones) has sent since it connected.
    pub fn statements_executed(&self) -> u64 {
        self.statements.load(Ordering::Relaxed)
    }

    /// The records of one tenant. Every query through the handle is bound to that tenant.
    pub fn tenant<'a>(&'a self, tenant: &'a TenantId) -> TenantStore<'a> {
        TenantStore::new(self, tenant)
    }

    /// One round trip, for readiness checks.
    pub async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1").execute(self.pool()).await?;
        Ok(())
    }

    /// Closes the pool, waiting for connections in use to be returned.
    pub async fn close(&self) {
        self.pool.close().await;
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
    // value is bound.
    AnyConnectOptions::from_str(&url).map_err(|_| StoreError::UnsupportedUrl)
}

fn pool_size(backend: Backend) -> u32 {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get()) as u32;
    match backend {
        // One writer at a time on SQLite; a few connections serve concurrent readers.
        Backend::Sqlite => (cores * 2).clamp(2, 8),
        Backend::Postgres => (cores * 4).clamp(4, 32),
    }
}
