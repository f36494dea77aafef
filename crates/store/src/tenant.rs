//! Tenant ids and the tenant-scoped view of the store. A query that takes a tenant goes
//! through [`TenantStore`], so no caller can forget the `tenant_id` predicate.

use std::fmt;

use crate::db::Store;
use crate::error::{Entity, StoreError};
use crate::tenants::Tenant;

/// A tenant id: 1 to 63 characters of `[a-z0-9-]`, so the `.` of `<tenant>.<random>` in codes
/// and refresh tokens is unambiguous (DESIGN.md, Tenancy).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TenantId(String);

impl TenantId {
    pub fn parse(value: &str) -> Result<TenantId, StoreError> {
        if value.is_empty() {
            return Err(StoreError::InvalidTenantId("it is empty"));
        }
        if value.len() > 63 {
            return Err(StoreError::InvalidTenantId(
                "it is longer than 63 characters",
            ));
        }
        if !value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            return Err(StoreError::InvalidTenantId(
                "only lowercase letters, digits and '-' are allowed",
            ));
        }
        Ok(TenantId(value.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TenantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A transaction of a tenant's database. On SQLite it also holds the process's turn to write:
/// SQLite has one writer at a time, and a connection that finds the lock taken sleeps in its
/// busy handler (1 ms, then longer, up to 100 ms a time) however soon the lock is free, which
/// put hundreds of milliseconds into the tail of refreshes. Waiting in-process for the turn
/// instead wakes the next writer the moment the last one is done. Other processes (the CLI)
/// still meet the busy handler.
#[derive(Debug)]
pub(crate) struct Transaction {
    // Declared first so it is dropped (rolled back) before the turn passes on.
    tx: crate::pool::PoolTransaction,
    _writer: Option<tokio::sync::OwnedMutexGuard<()>>,
    /// Back-channel logout tokens were queued: the commit wakes this process's deliverer.
    pub(crate) wake_backchannel: bool,
}

/// The records of one tenant.
#[derive(Clone, Copy, Debug)]
pub struct TenantStore<'a> {
    pub(crate) store: &'a Store,
    pub(crate) tenant: &'a TenantId,
}

impl<'a> TenantStore<'a> {
    pub(crate) fn new(store: &'a Store, tenant: &'a TenantId) -> TenantStore<'a> {
        TenantStore { store, tenant }
    }

    pub fn id(&self) -> &TenantId {
        self.tenant
    }

    pub(crate) fn id_str(&self) -> &str {
        self.tenant.as_str()
    }

    /// The pool of the database this tenant lives in (the shard map decides; no other
    /// database is asked).
    pub(crate) fn pool(&self) -> &crate::pool::Pool {
        self.store.count_statement();
        self.store.database_of(self.tenant).pool()
    }

    /// The engine of the database this tenant lives in, for the few statements written
    /// once per engine.
    pub(crate) fn backend(&self) -> crate::db::Backend {
        self.store.database_of(self.tenant).backend()
    }

    /// A transaction; its statements go through [`TenantStore::in_tx`] so they are counted.
    ///
    /// On SQLite it first takes the process's turn to write, which is not reentrant: a task
    /// that begins a second transaction while it holds one waits for itself until the
    /// request's deadline. End one before beginning the next.
    pub(crate) async fn begin(&self) -> Result<Transaction, StoreError> {
        // The turn before the connection: a writer waiting for its turn holds no connection.
        let writer = self.write_turn().await;
        Ok(Transaction {
            tx: self.pool().begin().await?,
            _writer: writer,
            wake_backchannel: false,
        })
    }

    /// On SQLite, the process's turn to write, for a write of one statement that would
    /// otherwise wait in SQLite's busy handler (which sleeps) behind a transaction; nothing
    /// on PostgreSQL. Not reentrant, as [`TenantStore::begin`].
    pub(crate) async fn write_turn(&self) -> Option<tokio::sync::OwnedMutexGuard<()>> {
        match self.store.database_of(self.tenant).writer() {
            Some(turn) => Some(turn.lock_owned().await),
            None => None,
        }
    }

    /// SQLite: runs a batch that opens and commits its own transaction (`BEGIN IMMEDIATE; …;
    /// COMMIT`) in one trip to the connection's thread, not one per statement, holding the
    /// process's turn to write. Every row the batch returns is read, which runs it to its end.
    ///
    /// It runs on a task of its own: a request dropped mid-way would otherwise stop the batch
    /// between BEGIN and COMMIT and hand the pool a connection inside a transaction, and
    /// whatever the next user of that connection wrote would never be committed. A batch
    /// that fails closes its connection, which rolls back whatever it left open.
    pub(crate) async fn sqlite_batch<R>(
        &self,
        batch: sqlx::query::QueryAs<'static, sqlx::Any, R, sqlx::any::AnyArguments<'static>>,
    ) -> Result<Vec<R>, StoreError>
    where
        R: for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow> + Send + Unpin + 'static,
    {
        let pool = self.pool().clone();
        let turn = self.write_turn().await;
        let run = tokio::spawn(async move {
            let _turn = turn;
            let mut conn = pool.acquire().await?;
            // A batch that fails is not settled: its connection is closed, not pooled.
            let rows = batch.fetch_all(&mut *conn).await?;
            conn.settle();
            Ok(rows)
        });
        // The task ends only by finishing, unless the runtime is shutting down.
        run.await
            .map_err(|_| StoreError::Unavailable(sqlx::Error::WorkerCrashed))?
    }

    pub(crate) fn in_tx<'t>(&self, tx: &'t mut Transaction) -> &'t mut crate::pool::Conn {
        self.store.count_statement();
        &mut tx.tx
    }

    pub(crate) async fn commit(&self, tx: Transaction) -> Result<(), StoreError> {
        self.store.count_statement();
        let wake = tx.wake_backchannel;
        tx.tx.commit().await?;
        // After the commit, so the woken deliverer can see the rows.
        if wake {
            self.store.backchannel_queued().notify_one();
        }
        Ok(())
    }

    /// Rolls back now. A dropped transaction's rollback waits until its connection is next
    /// used, and meanwhile keeps whatever row locks it took (PostgreSQL) and the write lock
    /// (SQLite), so a transaction that refuses part-way ends here instead.
    pub(crate) async fn rollback(&self, tx: Transaction) -> Result<(), StoreError> {
        self.store.count_statement();
        Ok(tx.tx.rollback().await?)
    }

    /// The tenant's own record, or `NotFound(Tenant)`.
    pub async fn require(&self) -> Result<Tenant, StoreError> {
        self.find()
            .await?
            .ok_or(StoreError::NotFound(Entity::Tenant))
    }

    pub async fn find(&self) -> Result<Option<Tenant>, StoreError> {
        let row: Option<crate::tenants::TenantRow> = sqlx::query_as(&format!(
            "SELECT {} FROM tenants WHERE tenant_id = $1",
            Tenant::COLUMNS
        ))
        .bind(self.id_str())
        .fetch_optional(self.pool())
        .await?;
        row.map(Tenant::from_row).transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_lowercase_digits_and_dash_up_to_63() {
        assert_eq!(TenantId::parse("acme-2").unwrap().as_str(), "acme-2");
        assert!(TenantId::parse(&"a".repeat(63)).is_ok());
    }

    #[test]
    fn refuses_empty_long_dotted_upper_and_unicode() {
        for bad in ["", &"a".repeat(64), "acme.co", "Acme", "acmé", "a b", "a_b"] {
            assert!(
                matches!(TenantId::parse(bad), Err(StoreError::InvalidTenantId(_))),
                "{bad:?} was accepted"
            );
        }
    }
}
