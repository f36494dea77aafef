//! Password links: single-use links where a user sets a password (an invitation, or a
//! recovery). One live link per user, replaced by the next; only the SHA-256 of the link's
//! random part is kept, so a copy of the database cannot be turned into working links.

use crate::error::{Entity, StoreError};
use crate::tenant::TenantStore;
use crate::UnixTime;

impl TenantStore<'_> {
    /// Stores the user's link, ending the previous one if any (one row per user).
    /// `NotFound(User)` when the user does not exist.
    pub async fn create_password_link(
        &self,
        user_id: &str,
        token_hash: &[u8],
        now: UnixTime,
        expires_at: UnixTime,
    ) -> Result<(), StoreError> {
        let _turn = self.write_turn().await;
        sqlx::query(
            "INSERT INTO password_links (tenant_id, user_id, token_hash, created_at, expires_at) \
             VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (tenant_id, user_id) DO UPDATE SET token_hash = $3, created_at = $4, \
             expires_at = $5",
        )
        .bind(self.id_str())
        .bind(user_id)
        .bind(token_hash)
        .bind(now)
        .bind(expires_at)
        .execute(self.pool())
        .await
        .map_err(|e| match StoreError::is_foreign_key_violation(&e) {
            true => StoreError::NotFound(Entity::User),
            false => StoreError::from_sqlx(e, Entity::User),
        })?;
        Ok(())
    }

    /// The user of the live link with this hash: `None` when it is unknown, used, replaced
    /// or expired (the caller cannot tell which, and neither may the person holding it).
    pub async fn find_password_link(
        &self,
        token_hash: &[u8],
        now: UnixTime,
    ) -> Result<Option<String>, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT user_id FROM password_links \
             WHERE tenant_id = $1 AND token_hash = $2 AND expires_at > $3",
        )
        .bind(self.id_str())
        .bind(token_hash)
        .bind(now)
        .fetch_optional(self.pool())
        .await?)
    }

    /// Spends the live link with this hash and gives its user the new password hash, in one
    /// transaction: the link is deleted first, so of two submissions at once only one finds
    /// it. The user's revision rises, since their record changed. Returns the user's `sub`,
    /// or `None` when the link is not live.
    pub async fn redeem_password_link(
        &self,
        token_hash: &[u8],
        password_hash: &str,
        now: UnixTime,
    ) -> Result<Option<String>, StoreError> {
        let mut tx = self.begin().await?;
        let user_id: Option<String> = sqlx::query_scalar(
            "DELETE FROM password_links \
             WHERE tenant_id = $1 AND token_hash = $2 AND expires_at > $3 RETURNING user_id",
        )
        .bind(self.id_str())
        .bind(token_hash)
        .bind(now)
        .fetch_optional(self.in_tx(&mut tx))
        .await?;
        let Some(user_id) = user_id else {
            return Ok(None);
        };
        let updated = sqlx::query(
            "UPDATE users SET password_hash = $1, revision = revision + 1 \
             WHERE tenant_id = $2 AND user_id = $3",
        )
        .bind(password_hash)
        .bind(self.id_str())
        .bind(&user_id)
        .execute(self.in_tx(&mut tx))
        .await?;
        if updated.rows_affected() != 1 {
            // The link goes with its user (ON DELETE CASCADE), so this cannot happen short
            // of a bug; the transaction rolls back and the link stays.
            self.rollback(tx).await?;
            return Err(StoreError::NotFound(Entity::User));
        }
        self.commit(tx).await?;
        Ok(Some(user_id))
    }
}
