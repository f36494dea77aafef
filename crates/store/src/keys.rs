//! Signing keys: the one global table, since the issuer is global. The private key is stored
//! as PKCS#8 DER, or sealed under a key encryption key; the store keeps the bytes it is given.
//! Sealing belongs to `oauth`, parsing and signing to `jose`.

use crate::db::{Backend, Store};
use crate::error::{Entity, StoreError};
use crate::UnixTime;

#[derive(Clone, PartialEq, Eq)]
pub struct StoredSigningKey {
    pub kid: String,
    pub algorithm: String,
    pub private_key: Vec<u8>,
    pub created_at: UnixTime,
    pub retired_at: Option<UnixTime>,
}

// Key material never reaches a log through Debug.
impl std::fmt::Debug for StoredSigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredSigningKey")
            .field("kid", &self.kid)
            .field("algorithm", &self.algorithm)
            .field("created_at", &self.created_at)
            .field("retired_at", &self.retired_at)
            .finish_non_exhaustive()
    }
}

/// The advisory lock that serialises the creation of the first key (any constant that no
/// other lock of the database uses; the bytes spell "fldauth1").
const FIRST_KEY_LOCK: i64 = 0x666c_6461_7574_6831;

type KeyRow = (String, String, Vec<u8>, i64, Option<i64>);

/// A new value for one key's stored private key, written only while the old one is still there.
#[derive(Clone, PartialEq, Eq)]
pub struct PrivateKeyChange {
    pub kid: String,
    pub from: Vec<u8>,
    pub to: Vec<u8>,
}

impl std::fmt::Debug for PrivateKeyChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrivateKeyChange")
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

fn key_from_row((kid, algorithm, private_key, created_at, retired_at): KeyRow) -> StoredSigningKey {
    StoredSigningKey {
        kid,
        algorithm,
        private_key,
        created_at,
        retired_at,
    }
}

impl Store {
    /// Stores a new key (a rotation) and its `key.created` event, in one transaction.
    pub async fn insert_signing_key(
        &self,
        kid: &str,
        private_key: &[u8],
        now: UnixTime,
    ) -> Result<(), StoreError> {
        let mut tx = self.pool().begin().await?;
        self.count_statement();
        sqlx::query(
            "INSERT INTO signing_keys (kid, algorithm, private_key, created_at) \
             VALUES ($1, 'RS256', $2, $3)",
        )
        .bind(kid)
        .bind(private_key.to_vec())
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(|e| StoreError::from_sqlx(e, Entity::SigningKey))?;
        self.key_event(&mut tx, "key.created", kid, now).await?;
        self.count_statement();
        tx.commit().await?;
        Ok(())
    }

    /// Stores the issuer's first key, unless there is an active key already: nodes that
    /// start together on an empty database each make a key, and exactly one is kept, so every
    /// node signs with and publishes the same one. Returns whether this key was kept.
    pub async fn insert_first_signing_key(
        &self,
        kid: &str,
        private_key: &[u8],
        now: UnixTime,
    ) -> Result<bool, StoreError> {
        let mut tx = self.pool().begin().await?;
        if self.backend() == Backend::Postgres {
            // Under READ COMMITTED two "insert unless one exists" would both insert; the
            // lock queues the nodes, and each sees what the one before committed. (SQLite
            // has one writer at a time.)
            self.count_statement();
            sqlx::query("SELECT pg_advisory_xact_lock($1)")
                .bind(FIRST_KEY_LOCK)
                .execute(&mut *tx)
                .await?;
        }
        self.count_statement();
        let inserted = sqlx::query(
            "INSERT INTO signing_keys (kid, algorithm, private_key, created_at) \
             SELECT $1, 'RS256', $2, $3 \
             WHERE NOT EXISTS (SELECT 1 FROM signing_keys WHERE retired_at IS NULL)",
        )
        .bind(kid)
        .bind(private_key.to_vec())
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(|e| StoreError::from_sqlx(e, Entity::SigningKey))?
        .rows_affected()
            == 1;
        if inserted {
            self.key_event(&mut tx, "key.created", kid, now).await?;
        }
        self.count_statement();
        tx.commit().await?;
        Ok(inserted)
    }

    async fn key_event(
        &self,
        tx: &mut crate::pool::PoolTransaction,
        kind: &str,
        kid: &str,
        now: UnixTime,
    ) -> Result<(), StoreError> {
        self.count_statement();
        sqlx::query("INSERT INTO key_events (occurred_at, kind, kid) VALUES ($1, $2, $3)")
            .bind(now)
            .bind(kind)
            .bind(kid)
            .execute(&mut **tx)
            .await?;
        Ok(())
    }

    /// Keys that are not retired, newest first by creation order (a sequence, not a clock,
    /// so two rotations in one second still have an order): the first signs, all are
    /// published.
    pub async fn active_signing_keys(&self) -> Result<Vec<StoredSigningKey>, StoreError> {
        let rows: Vec<KeyRow> = sqlx::query_as(
            "SELECT kid, algorithm, private_key, created_at, retired_at FROM signing_keys \
             WHERE retired_at IS NULL ORDER BY seq DESC",
        )
        .fetch_all(self.pool())
        .await?;
        Ok(rows.into_iter().map(key_from_row).collect())
    }

    /// Every key, retired ones included, newest first.
    pub async fn list_signing_keys(&self) -> Result<Vec<StoredSigningKey>, StoreError> {
        let rows: Vec<KeyRow> = sqlx::query_as(
            "SELECT kid, algorithm, private_key, created_at, retired_at FROM signing_keys \
             ORDER BY seq DESC",
        )
        .fetch_all(self.pool())
        .await?;
        Ok(rows.into_iter().map(key_from_row).collect())
    }

    /// Replaces the stored private keys (sealing them, or sealing them anew) in one
    /// transaction, each only if it still holds `from`. Returns false, having changed
    /// nothing, when one of them changed meanwhile (another node or command sealed it): the
    /// caller reads the keys again.
    pub async fn replace_private_keys(
        &self,
        changes: &[PrivateKeyChange],
    ) -> Result<bool, StoreError> {
        let mut tx = self.pool().begin().await?;
        for change in changes {
            self.count_statement();
            let done = sqlx::query(
                "UPDATE signing_keys SET private_key = $1 WHERE kid = $2 AND private_key = $3",
            )
            .bind(change.to.clone())
            .bind(&change.kid)
            .bind(change.from.clone())
            .execute(&mut *tx)
            .await?;
            if done.rows_affected() != 1 {
                // Rolled back now: a dropped transaction's rollback waits for the connection's
                // next use, and until then its row locks stay held in the pool.
                tx.rollback().await?;
                return Ok(false);
            }
        }
        self.count_statement();
        tx.commit().await?;
        Ok(true)
    }

    /// Takes a key out of the JWKS. `NotFound` for an unknown or already retired key;
    /// `LastActiveKey` for the only active key, which would leave nothing to sign with.
    /// Which key signs at a given time is the key lifecycle's rule (`jose`), checked by the
    /// caller.
    pub async fn retire_signing_key(&self, kid: &str, now: UnixTime) -> Result<(), StoreError> {
        let active = self.active_signing_keys().await?;
        if !active.iter().any(|k| k.kid == kid) {
            return Err(StoreError::NotFound(Entity::SigningKey));
        }
        if active.len() == 1 {
            return Err(StoreError::LastActiveKey);
        }
        let mut tx = self.pool().begin().await?;
        self.count_statement();
        let done = sqlx::query(
            "UPDATE signing_keys SET retired_at = $1 WHERE kid = $2 AND retired_at IS NULL",
        )
        .bind(now)
        .bind(kid)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() != 1 {
            tx.rollback().await?;
            return Err(StoreError::NotFound(Entity::SigningKey));
        }
        self.key_event(&mut tx, "key.retired", kid, now).await?;
        self.count_statement();
        tx.commit().await?;
        Ok(())
    }
}
