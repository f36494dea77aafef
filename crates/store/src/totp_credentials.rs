//! RFC 6238 TOTP authenticators: one per user, its secret sealed by the caller (the store
//! never sees it in clear). A secret is unconfirmed until a first code proves the user holds
//! it; only a confirmed one is a second factor. Each accepted code moves `last_step` forward
//! in one conditional update, so a code is accepted once, whichever node sees it first.

use crate::error::{Entity, StoreError};
use crate::tenant::TenantStore;
use crate::UnixTime;

/// A user's confirmed authenticator, as the check of a code needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TotpSecret {
    /// As stored: sealed under the KEK, or in clear without one.
    pub secret: Vec<u8>,
    /// The last time step a code was accepted for.
    pub last_step: Option<i64>,
}

/// Where a user stands with an authenticator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TotpStatus {
    None,
    /// Set up but not yet proved by a first code: not a second factor.
    Unconfirmed,
    /// Proved at this time: a second factor.
    Confirmed {
        at: UnixTime,
    },
}

impl TenantStore<'_> {
    /// Stores a new unconfirmed secret for the user, replacing an unconfirmed one. A
    /// confirmed one is replaced only when `replace_confirmed` (an explicit re-enrollment);
    /// otherwise it stays and the answer is false. `NotFound(User)` for an unknown user.
    pub async fn save_totp_secret(
        &self,
        user_id: &str,
        secret: &[u8],
        now: UnixTime,
        replace_confirmed: bool,
    ) -> Result<bool, StoreError> {
        // The two statements differ only in the guard of the update.
        let statement = match replace_confirmed {
            true => {
                "INSERT INTO totp_credentials (tenant_id, user_id, secret, created_at) \
                 VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (tenant_id, user_id) DO UPDATE SET secret = $3, \
                 confirmed_at = NULL, last_step = NULL, created_at = $4"
            }
            false => {
                "INSERT INTO totp_credentials (tenant_id, user_id, secret, created_at) \
                 VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (tenant_id, user_id) DO UPDATE SET secret = $3, \
                 confirmed_at = NULL, last_step = NULL, created_at = $4 \
                 WHERE totp_credentials.confirmed_at IS NULL"
            }
        };
        let _turn = self.write_turn().await;
        let done = sqlx::query(statement)
            .bind(self.id_str())
            .bind(user_id)
            .bind(secret.to_vec())
            .bind(now)
            .execute(self.pool())
            .await
            .map_err(|e| match StoreError::is_foreign_key_violation(&e) {
                true => StoreError::NotFound(Entity::User),
                false => StoreError::from_sqlx(e, Entity::User),
            })?;
        Ok(done.rows_affected() == 1)
    }

    /// The stored secret of the user's unconfirmed authenticator, if one is being set up.
    pub async fn unconfirmed_totp_secret(
        &self,
        user_id: &str,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT secret FROM totp_credentials \
             WHERE tenant_id = $1 AND user_id = $2 AND confirmed_at IS NULL",
        )
        .bind(self.id_str())
        .bind(user_id)
        .fetch_optional(self.pool())
        .await?)
    }

    /// The user's confirmed authenticator, if any.
    pub async fn confirmed_totp_secret(
        &self,
        user_id: &str,
    ) -> Result<Option<TotpSecret>, StoreError> {
        let row: Option<(Vec<u8>, Option<i64>)> = sqlx::query_as(
            "SELECT secret, last_step FROM totp_credentials \
             WHERE tenant_id = $1 AND user_id = $2 AND confirmed_at IS NOT NULL",
        )
        .bind(self.id_str())
        .bind(user_id)
        .fetch_optional(self.pool())
        .await?;
        Ok(row.map(|(secret, last_step)| TotpSecret { secret, last_step }))
    }

    /// Where the user stands with an authenticator.
    pub async fn totp_status(&self, user_id: &str) -> Result<TotpStatus, StoreError> {
        let row: Option<(Option<i64>,)> = sqlx::query_as(
            "SELECT confirmed_at FROM totp_credentials WHERE tenant_id = $1 AND user_id = $2",
        )
        .bind(self.id_str())
        .bind(user_id)
        .fetch_optional(self.pool())
        .await?;
        Ok(match row {
            None => TotpStatus::None,
            Some((None,)) => TotpStatus::Unconfirmed,
            Some((Some(at),)) => TotpStatus::Confirmed { at },
        })
    }

    /// Confirms the unconfirmed authenticator whose stored secret is still `secret` (the one
    /// the first code was checked against: a set-up started again meanwhile in another tab
    /// is not confirmed by a code of the old secret), records `step` as used, and gives the
    /// user the new recovery codes in place of any earlier ones, in one transaction. False
    /// when there was no such authenticator: nothing is changed.
    pub async fn confirm_totp(
        &self,
        user_id: &str,
        secret: &[u8],
        step: i64,
        recovery_code_hashes: &[[u8; 32]],
        now: UnixTime,
    ) -> Result<bool, StoreError> {
        let mut tx = self.begin().await?;
        let confirmed = sqlx::query(
            "UPDATE totp_credentials SET confirmed_at = $1, last_step = $2 \
             WHERE tenant_id = $3 AND user_id = $4 AND secret = $5 AND confirmed_at IS NULL",
        )
        .bind(now)
        .bind(step)
        .bind(self.id_str())
        .bind(user_id)
        .bind(secret.to_vec())
        .execute(self.in_tx(&mut tx))
        .await?;
        if confirmed.rows_affected() != 1 {
            self.rollback(tx).await?;
            return Ok(false);
        }
        self.replace_recovery_codes_in(&mut tx, user_id, recovery_code_hashes, now)
            .await?;
        self.commit(tx).await?;
        Ok(true)
    }

    /// Accepts a code of time step `step` for the user's confirmed authenticator: true only
    /// when no code of this step or a later one was accepted before (RFC 6238 §5.2: a code
    /// is accepted once). One conditional update, so of two nodes given the same code at the
    /// same moment, one wins.
    pub async fn accept_totp_step(&self, user_id: &str, step: i64) -> Result<bool, StoreError> {
        let _turn = self.write_turn().await;
        let done = sqlx::query(
            "UPDATE totp_credentials SET last_step = $1 \
             WHERE tenant_id = $2 AND user_id = $3 AND confirmed_at IS NOT NULL \
               AND (last_step IS NULL OR last_step < $1)",
        )
        .bind(step)
        .bind(self.id_str())
        .bind(user_id)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Removes the user's authenticator, confirmed or not. When the user has no passkey
    /// left either, their recovery codes go too: they stand in for a second factor, and
    /// without one there is nothing for them to stand in for. True when there was one.
    pub async fn remove_totp(&self, user_id: &str) -> Result<bool, StoreError> {
        let mut tx = self.begin().await?;
        let removed =
            sqlx::query("DELETE FROM totp_credentials WHERE tenant_id = $1 AND user_id = $2")
                .bind(self.id_str())
                .bind(user_id)
                .execute(self.in_tx(&mut tx))
                .await?;
        sqlx::query(
            "DELETE FROM recovery_codes WHERE tenant_id = $1 AND user_id = $2 \
             AND NOT EXISTS (SELECT 1 FROM passkeys p \
                             WHERE p.tenant_id = $1 AND p.user_id = $2)",
        )
        .bind(self.id_str())
        .bind(user_id)
        .execute(self.in_tx(&mut tx))
        .await?;
        self.commit(tx).await?;
        Ok(removed.rows_affected() == 1)
    }

    /// Every stored authenticator secret of the tenant, sealed or not, by user: what a
    /// change of key encryption key reseals.
    pub async fn totp_secrets(&self) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT user_id, secret FROM totp_credentials WHERE tenant_id = $1 ORDER BY user_id",
        )
        .bind(self.id_str())
        .fetch_all(self.pool())
        .await?)
    }

    /// Replaces a user's stored secret while it is still `from` (a secret set up anew
    /// meanwhile is left alone). True when it was replaced.
    pub async fn replace_totp_secret(
        &self,
        user_id: &str,
        from: &[u8],
        to: &[u8],
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE totp_credentials SET secret = $1 \
             WHERE tenant_id = $2 AND user_id = $3 AND secret = $4",
        )
        .bind(to.to_vec())
        .bind(self.id_str())
        .bind(user_id)
        .bind(from.to_vec())
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }
}
