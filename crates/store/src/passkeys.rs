//! Passkeys (WebAuthn credentials) of users, and the random WebAuthn user handle each user's
//! passkeys carry. A passkey row holds the public credential only (public key, signature
//! counter, flags), serialized by the caller: nothing in it is secret.

use crate::error::{Entity, StoreError};
use crate::tenant::TenantStore;
use crate::UnixTime;

/// A registered passkey.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredPasskey {
    pub credential_id: Vec<u8>,
    pub user_id: String,
    /// The name the user gave it ("Work laptop").
    pub name: String,
    /// The serialized public credential, as the WebAuthn library reads it back.
    pub credential: String,
    pub created_at: UnixTime,
    pub last_used_at: Option<UnixTime>,
}

/// A passkey just registered.
#[derive(Clone, Copy, Debug)]
pub struct NewPasskey<'a> {
    pub credential_id: &'a [u8],
    pub user_id: &'a str,
    pub name: &'a str,
    pub credential: &'a str,
    pub created_at: UnixTime,
}

type PasskeyRow = (Vec<u8>, String, String, String, i64, Option<i64>);

const PASSKEY_COLUMNS: &str = "credential_id, user_id, name, credential, created_at, last_used_at";

fn passkey_of(row: PasskeyRow) -> StoredPasskey {
    let (credential_id, user_id, name, credential, created_at, last_used_at) = row;
    StoredPasskey {
        credential_id,
        user_id,
        name,
        credential,
        created_at,
        last_used_at,
    }
}

impl TenantStore<'_> {
    /// The user's WebAuthn user handle, stored now as `new_handle` when the user has none yet
    /// (their first registration). Of two first registrations at once, both get the handle
    /// that was stored first. `NotFound(User)` when the user does not exist.
    pub async fn webauthn_user_handle(
        &self,
        user_id: &str,
        new_handle: &str,
    ) -> Result<String, StoreError> {
        {
            let _turn = self.write_turn().await;
            sqlx::query(
                "INSERT INTO webauthn_users (tenant_id, user_id, user_handle) VALUES ($1, $2, $3) \
                 ON CONFLICT (tenant_id, user_id) DO NOTHING",
            )
            .bind(self.id_str())
            .bind(user_id)
            .bind(new_handle)
            .execute(self.pool())
            .await
            .map_err(|e| match StoreError::is_foreign_key_violation(&e) {
                true => StoreError::NotFound(Entity::User),
                false => StoreError::from_sqlx(e, Entity::User),
            })?;
        }
        self.find_webauthn_user_handle(user_id)
            .await?
            .ok_or(StoreError::NotFound(Entity::User))
    }

    /// The user's WebAuthn user handle, if they ever registered a passkey.
    pub async fn find_webauthn_user_handle(
        &self,
        user_id: &str,
    ) -> Result<Option<String>, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT user_handle FROM webauthn_users WHERE tenant_id = $1 AND user_id = $2",
        )
        .bind(self.id_str())
        .bind(user_id)
        .fetch_optional(self.pool())
        .await?)
    }

    /// Stores a registered passkey. `Conflict(Passkey)` when its credential id is registered
    /// already (to this user or another: WebAuthn §7.1 step 22 refuses both), `NotFound(User)`
    /// when the user does not exist.
    pub async fn add_passkey(&self, new: &NewPasskey<'_>) -> Result<(), StoreError> {
        let _turn = self.write_turn().await;
        sqlx::query(
            "INSERT INTO passkeys (tenant_id, credential_id, user_id, name, credential, \
             created_at) VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(self.id_str())
        .bind(new.credential_id)
        .bind(new.user_id)
        .bind(new.name)
        .bind(new.credential)
        .bind(new.created_at)
        .execute(self.pool())
        .await
        .map_err(|e| match StoreError::is_foreign_key_violation(&e) {
            true => StoreError::NotFound(Entity::User),
            false => StoreError::from_sqlx(e, Entity::Passkey),
        })?;
        Ok(())
    }

    /// The user's passkeys, oldest first.
    pub async fn list_passkeys(&self, user_id: &str) -> Result<Vec<StoredPasskey>, StoreError> {
        let rows: Vec<PasskeyRow> = sqlx::query_as(&format!(
            "SELECT {PASSKEY_COLUMNS} FROM passkeys WHERE tenant_id = $1 AND user_id = $2 \
             ORDER BY created_at, credential_id"
        ))
        .bind(self.id_str())
        .bind(user_id)
        .fetch_all(self.pool())
        .await?;
        Ok(rows.into_iter().map(passkey_of).collect())
    }

    /// The passkey with this credential id, whoever's it is.
    pub async fn find_passkey(
        &self,
        credential_id: &[u8],
    ) -> Result<Option<StoredPasskey>, StoreError> {
        let row: Option<PasskeyRow> = sqlx::query_as(&format!(
            "SELECT {PASSKEY_COLUMNS} FROM passkeys WHERE tenant_id = $1 AND credential_id = $2"
        ))
        .bind(self.id_str())
        .bind(credential_id)
        .fetch_optional(self.pool())
        .await?;
        Ok(row.map(passkey_of))
    }

    /// The passkey was just used: its credential becomes `updated` (the new signature
    /// counter) and its last use `now`, only while it is still `previous`. Of two assertions
    /// verified against the same stored counter at once, one wins and the other gets
    /// `false`, so a cloned authenticator cannot slip a reused counter in between.
    pub async fn record_passkey_use(
        &self,
        credential_id: &[u8],
        previous: &str,
        updated: &str,
        now: UnixTime,
    ) -> Result<bool, StoreError> {
        let _turn = self.write_turn().await;
        let done = sqlx::query(
            "UPDATE passkeys SET credential = $1, last_used_at = $2 \
             WHERE tenant_id = $3 AND credential_id = $4 AND credential = $5",
        )
        .bind(updated)
        .bind(now)
        .bind(self.id_str())
        .bind(credential_id)
        .bind(previous)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Removes one passkey of the user; its name, or `None` when the user has no such
    /// passkey (another user's is never removed).
    pub async fn remove_passkey(
        &self,
        user_id: &str,
        credential_id: &[u8],
    ) -> Result<Option<String>, StoreError> {
        let _turn = self.write_turn().await;
        Ok(sqlx::query_scalar(
            "DELETE FROM passkeys WHERE tenant_id = $1 AND user_id = $2 AND credential_id = $3 \
             RETURNING name",
        )
        .bind(self.id_str())
        .bind(user_id)
        .bind(credential_id)
        .fetch_optional(self.pool())
        .await?)
    }

    /// How many passkeys the user has (the second-factor policy asks whether any).
    pub async fn count_passkeys(&self, user_id: &str) -> Result<i64, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT COUNT(*) FROM passkeys WHERE tenant_id = $1 AND user_id = $2",
        )
        .bind(self.id_str())
        .bind(user_id)
        .fetch_one(self.pool())
        .await?)
    }
}
