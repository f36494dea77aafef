//! Users of a tenant: username, Argon2id password hash and the profile claims.

use crate::error::{Entity, StoreError};
use crate::tenant::TenantStore;
use crate::UnixTime;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    /// The OpenID `sub`: stable, never reused, never the email.
    pub user_id: String,
    pub username: String,
    /// Argon2id in PHC string form.
    pub password_hash: String,
    pub name: String,
    pub email: String,
    pub created_at: UnixTime,
}

#[derive(Clone, Debug)]
pub struct NewUser<'a> {
    pub user_id: &'a str,
    pub username: &'a str,
    pub password_hash: &'a str,
    pub name: &'a str,
    pub email: &'a str,
}

pub(crate) type UserRow = (String, String, String, String, String, i64);

pub(crate) fn user_from_row(row: UserRow) -> User {
    let (user_id, username, password_hash, name, email, created_at) = row;
    User {
        user_id,
        username,
        password_hash,
        name,
        email,
        created_at,
    }
}

impl TenantStore<'_> {
    /// `Conflict(User)` when the username is taken in this tenant.
    pub async fn create_user(&self, user: &NewUser<'_>, now: UnixTime) -> Result<User, StoreError> {
        sqlx::query(
            "INSERT INTO users (tenant_id, user_id, username, password_hash, name, email, \
             created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(self.id_str())
        .bind(user.user_id)
        .bind(user.username)
        .bind(user.password_hash)
        .bind(user.name)
        .bind(user.email)
        .bind(now)
        .execute(self.pool())
        .await
        .map_err(|e| match StoreError::is_foreign_key_violation(&e) {
            true => StoreError::NotFound(Entity::Tenant),
            false => StoreError::from_sqlx(e, Entity::User),
        })?;
        Ok(User {
            user_id: user.user_id.to_owned(),
            username: user.username.to_owned(),
            password_hash: user.password_hash.to_owned(),
            name: user.name.to_owned(),
            email: user.email.to_owned(),
            created_at: now,
        })
    }

    pub async fn find_user_by_username(&self, username: &str) -> Result<Option<User>, StoreError> {
        let row: Option<UserRow> = sqlx::query_as(
            "SELECT user_id, username, password_hash, name, email, created_at FROM users \
             WHERE tenant_id = $1 AND username = $2",
        )
        .bind(self.id_str())
        .bind(username)
        .fetch_optional(self.pool())
        .await?;
        Ok(row.map(user_from_row))
    }

    pub async fn find_user(&self, user_id: &str) -> Result<Option<User>, StoreError> {
        self.find_user_in(self.pool(), user_id).await
    }

    /// [`TenantStore::find_user`] on a given connection (inside a transaction).
    pub(crate) async fn find_user_in<'e, E>(
        &self,
        executor: E,
        user_id: &str,
    ) -> Result<Option<User>, StoreError>
    where
        E: sqlx::Executor<'e, Database = sqlx::Any>,
    {
        let row: Option<UserRow> = sqlx::query_as(
            "SELECT user_id, username, password_hash, name, email, created_at FROM users \
             WHERE tenant_id = $1 AND user_id = $2",
        )
        .bind(self.id_str())
        .bind(user_id)
        .fetch_optional(executor)
        .await?;
        Ok(row.map(user_from_row))
    }

    /// Replaces a user's password hash.
    pub async fn set_password_hash(
        &self,
        user_id: &str,
        password_hash: &str,
    ) -> Result<(), StoreError> {
        let done = sqlx::query(
            "UPDATE users SET password_hash = $1 WHERE tenant_id = $2 AND user_id = $3",
        )
        .bind(password_hash)
        .bind(self.id_str())
        .bind(user_id)
        .execute(self.pool())
        .await?;
        match done.rows_affected() {
            1 => Ok(()),
            _ => Err(StoreError::NotFound(Entity::User)),
        }
    }
}
