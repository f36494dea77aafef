//! Password links: single-use links where a user sets a password (an invitation, or a
//! recovery). One live link per user, replaced by the next; only the SHA-256 of the link's
//! random part is kept, so a copy of the database cannot be turned into working links.

use crate::error::{Entity, StoreError};
use crate::session_ends::{SignedOut, REVOKED_PASSWORD_CHANGED};
use crate::tenant::TenantStore;
use crate::UnixTime;

/// Why a link was issued: it decides what its use is called in the audit trail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkPurpose {
    /// An admin's link (an invitation, or a password set on a user's behalf).
    Invitation,
    /// A link the user asked for from the sign-in page ("Forgot your password?").
    Recovery,
}

impl LinkPurpose {
    fn as_str(self) -> &'static str {
        match self {
            LinkPurpose::Invitation => "invitation",
            LinkPurpose::Recovery => "recovery",
        }
    }

    fn parse(value: &str) -> LinkPurpose {
        match value {
            "recovery" => LinkPurpose::Recovery,
            // The column's CHECK allows only the two; older rows default to invitations.
            _ => LinkPurpose::Invitation,
        }
    }
}

/// A link just spent: whose password it set, why it was issued, and what the change ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedeemedLink {
    pub user_id: String,
    pub purpose: LinkPurpose,
    pub signed_out: SignedOut,
}

impl TenantStore<'_> {
    /// Stores the user's invitation link, ending the previous link if any (one row per
    /// user). `NotFound(User)` when the user does not exist.
    pub async fn create_password_link(
        &self,
        user_id: &str,
        token_hash: &[u8],
        now: UnixTime,
        expires_at: UnixTime,
    ) -> Result<(), StoreError> {
        self.store_link(
            user_id,
            token_hash,
            LinkPurpose::Invitation,
            now,
            expires_at,
        )
        .await
    }

    /// Stores the user's recovery link, ending the previous link if any, whatever its
    /// purpose. `NotFound(User)` when the user does not exist.
    pub async fn create_recovery_link(
        &self,
        user_id: &str,
        token_hash: &[u8],
        now: UnixTime,
        expires_at: UnixTime,
    ) -> Result<(), StoreError> {
        self.store_link(user_id, token_hash, LinkPurpose::Recovery, now, expires_at)
            .await
    }

    async fn store_link(
        &self,
        user_id: &str,
        token_hash: &[u8],
        purpose: LinkPurpose,
        now: UnixTime,
        expires_at: UnixTime,
    ) -> Result<(), StoreError> {
        let _turn = self.write_turn().await;
        sqlx::query(
            "INSERT INTO password_links (tenant_id, user_id, token_hash, created_at, expires_at, \
             purpose) VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (tenant_id, user_id) DO UPDATE SET token_hash = $3, created_at = $4, \
             expires_at = $5, purpose = $6",
        )
        .bind(self.id_str())
        .bind(user_id)
        .bind(token_hash)
        .bind(now)
        .bind(expires_at)
        .bind(purpose.as_str())
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
    /// it. The user's revision rises, since their record changed. Whoever held the old
    /// password may hold the user's sessions and tokens too, so the same transaction ends
    /// every browser session of the user and revokes every grant. `None` when the link is
    /// not live.
    pub async fn redeem_password_link(
        &self,
        token_hash: &[u8],
        password_hash: &str,
        now: UnixTime,
    ) -> Result<Option<RedeemedLink>, StoreError> {
        let mut tx = self.begin().await?;
        let link: Option<(String, String)> = sqlx::query_as(
            "DELETE FROM password_links \
             WHERE tenant_id = $1 AND token_hash = $2 AND expires_at > $3 \
             RETURNING user_id, purpose",
        )
        .bind(self.id_str())
        .bind(token_hash)
        .bind(now)
        .fetch_optional(self.in_tx(&mut tx))
        .await?;
        let Some((user_id, purpose)) = link else {
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
        let signed_out = self
            .end_sessions_and_grants(&mut tx, &user_id, None, REVOKED_PASSWORD_CHANGED, now)
            .await?;
        self.commit(tx).await?;
        Ok(Some(RedeemedLink {
            user_id,
            purpose: LinkPurpose::parse(&purpose),
            signed_out,
        }))
    }
}
