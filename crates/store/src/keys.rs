//! Signing keys: the one global table, since the issuer is global. The private key is stored
//! as PKCS#8 DER; parsing and signing belong to the `jose` crate.

use crate::db::Store;
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

type KeyRow = (String, String, Vec<u8>, i64, Option<i64>);

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
    pub async fn insert_signing_key(
        &self,
        kid: &str,
        private_key_pkcs8: &[u8],
        now: UnixTime,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO signing_keys (kid, algorithm, private_key, created_at) \
             VALUES ($1, 'RS256', $2, $3)",
        )
        .bind(kid)
        .bind(private_key_pkcs8.to_vec())
        .bind(now)
        .execute(self.pool())
        .await
        .map_err(|e| StoreError::from_sqlx(e, Entity::SigningKey))?;
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
        let done = sqlx::query(
            "UPDATE signing_keys SET retired_at = $1 WHERE kid = $2 AND retired_at IS NULL",
        )
        .bind(now)
        .bind(kid)
        .execute(self.pool())
        .await?;
        match done.rows_affected() {
            1 => Ok(()),
            _ => Err(StoreError::NotFound(Entity::SigningKey)),
        }
    }
}
