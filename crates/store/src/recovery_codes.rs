//! Single-use recovery codes: a user's set is replaced whole, each code is spent by one
//! conditional update, and only the SHA-256 of a code is kept, so a copy of the database
//! holds none that works.

use crate::error::StoreError;
use crate::tenant::{TenantStore, Transaction};
use crate::UnixTime;

impl TenantStore<'_> {
    /// Gives the user these codes (their hashes) in place of every earlier one, used or not,
    /// in one transaction.
    pub async fn replace_recovery_codes(
        &self,
        user_id: &str,
        code_hashes: &[[u8; 32]],
        now: UnixTime,
    ) -> Result<(), StoreError> {
        let mut tx = self.begin().await?;
        self.replace_recovery_codes_in(&mut tx, user_id, code_hashes, now)
            .await?;
        self.commit(tx).await
    }

    /// [`TenantStore::replace_recovery_codes`] inside a transaction of the caller's. A user
    /// that does not exist is `NotFound(User)`.
    pub(crate) async fn replace_recovery_codes_in(
        &self,
        tx: &mut Transaction,
        user_id: &str,
        code_hashes: &[[u8; 32]],
        now: UnixTime,
    ) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM recovery_codes WHERE tenant_id = $1 AND user_id = $2")
            .bind(self.id_str())
            .bind(user_id)
            .execute(self.in_tx(tx))
            .await?;
        if code_hashes.is_empty() {
            return Ok(());
        }
        // One statement for the whole set: `($1, $2, $4, $3), ($1, $2, $5, $3), …`.
        let rows: Vec<String> = (0..code_hashes.len())
            .map(|i| format!("($1, $2, ${}, $3)", i + 4))
            .collect();
        let statement = format!(
            "INSERT INTO recovery_codes (tenant_id, user_id, code_hash, created_at) VALUES {}",
            rows.join(", ")
        );
        let mut insert = sqlx::query(&statement)
            .bind(self.id_str())
            .bind(user_id)
            .bind(now);
        for hash in code_hashes {
            insert = insert.bind(hash.to_vec());
        }
        insert.execute(self.in_tx(tx)).await.map_err(
            |e| match StoreError::is_foreign_key_violation(&e) {
                true => StoreError::NotFound(crate::error::Entity::User),
                false => StoreError::from(e),
            },
        )?;
        Ok(())
    }

    /// Spends the user's unused code with this hash: true once, false for a code that is
    /// unknown, another user's, or already used. One conditional update, so two uses at
    /// the same moment cannot both succeed.
    pub async fn redeem_recovery_code(
        &self,
        user_id: &str,
        code_hash: &[u8],
        now: UnixTime,
    ) -> Result<bool, StoreError> {
        let _turn = self.write_turn().await;
        let done = sqlx::query(
            "UPDATE recovery_codes SET used_at = $1 \
             WHERE tenant_id = $2 AND user_id = $3 AND code_hash = $4 AND used_at IS NULL",
        )
        .bind(now)
        .bind(self.id_str())
        .bind(user_id)
        .bind(code_hash.to_vec())
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Whether the user has a second factor: a confirmed authenticator app or a passkey.
    pub async fn has_second_factor(&self, user_id: &str) -> Result<bool, StoreError> {
        let count: i64 = sqlx::query_scalar(
            "SELECT (SELECT COUNT(*) FROM totp_credentials \
                     WHERE tenant_id = $1 AND user_id = $2 AND confirmed_at IS NOT NULL) \
                  + (SELECT COUNT(*) FROM passkeys WHERE tenant_id = $1 AND user_id = $2)",
        )
        .bind(self.id_str())
        .bind(user_id)
        .fetch_one(self.pool())
        .await?;
        Ok(count > 0)
    }

    /// How many of the user's codes are still unused.
    pub async fn remaining_recovery_codes(&self, user_id: &str) -> Result<i64, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT COUNT(*) FROM recovery_codes \
             WHERE tenant_id = $1 AND user_id = $2 AND used_at IS NULL",
        )
        .bind(self.id_str())
        .bind(user_id)
        .fetch_one(self.pool())
        .await?)
    }
}
