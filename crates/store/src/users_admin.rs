//! The administration of a tenant's users: listed and searched, read with their revision,
//! changed under a precondition, disabled, enabled, deleted and signed out everywhere.
//! Disabling and signing out end the user's browser sessions and revoke every live grant in
//! the same transaction, so no node can accept one of their tokens after the commit: every
//! token names its grant, and refresh, userinfo and the API check the grant on each use.

use crate::backchannel_logouts::EndingSessions;
use crate::error::{Entity, StoreError};
use crate::revision::{expected_values, matches_revision, Revision};
use crate::session_ends::SignedOut;
use crate::tenant::TenantStore;
use crate::users::{user_from_row, User, UserRow};
use crate::UnixTime;

/// A user as administration sees it: the record, whether it is disabled, and its revision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdminUser {
    pub user: User,
    pub disabled_at: Option<UnixTime>,
    pub revision: Revision,
}

/// The profile fields an update may change; `None` leaves a field as it is.
#[derive(Clone, Copy, Debug, Default)]
pub struct UserChanges<'a> {
    pub username: Option<&'a str>,
    pub name: Option<&'a str>,
    pub email: Option<&'a str>,
}

/// Why the grants of a disabled user were revoked, as the grant records it.
pub const REVOKED_USER_DISABLED: &str = "user disabled";
/// Why the grants of a user signed out everywhere were revoked.
pub const REVOKED_SIGNED_OUT: &str = "user signed out everywhere";

const COLUMNS: &str = "user_id, username, password_hash, name, email, created_at, \
     disabled_at, revision";

type AdminUserRow = (
    String,
    String,
    String,
    String,
    String,
    i64,
    Option<i64>,
    i64,
);

fn admin_user(row: AdminUserRow) -> AdminUser {
    let (user_id, username, password_hash, name, email, created_at, disabled_at, revision) = row;
    let base: UserRow = (user_id, username, password_hash, name, email, created_at);
    AdminUser {
        user: user_from_row(base),
        disabled_at,
        revision: Revision {
            created_at,
            revision,
        },
    }
}

/// A `LIKE` pattern matching `text` anywhere, with `%`, `_` and `\` taken literally (the
/// statement says `ESCAPE '\'`): a search for `a_b` must not match `axb`.
pub(crate) fn contains_pattern(text: &str) -> String {
    let mut pattern = String::with_capacity(text.len() + 2);
    pattern.push('%');
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

impl TenantStore<'_> {
    /// Up to `limit` users by username, after `after`, whose username, name or email
    /// contains `search` (already lowercased), case-insensitively.
    pub async fn list_admin_users(
        &self,
        after: Option<&str>,
        search: Option<&str>,
        limit: i64,
    ) -> Result<Vec<AdminUser>, StoreError> {
        let pattern = search.map(contains_pattern);
        let rows: Vec<AdminUserRow> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM users WHERE tenant_id = $1 \
               AND ($2 IS NULL OR username > $2) \
               AND ($3 IS NULL OR LOWER(username) LIKE $3 ESCAPE '\\' \
                 OR LOWER(name) LIKE $3 ESCAPE '\\' OR LOWER(email) LIKE $3 ESCAPE '\\') \
             ORDER BY username LIMIT $4"
        ))
        .bind(self.id_str())
        .bind(after)
        .bind(pattern)
        .bind(limit)
        .fetch_all(self.pool())
        .await?;
        Ok(rows.into_iter().map(admin_user).collect())
    }

    pub async fn find_admin_user(&self, user_id: &str) -> Result<Option<AdminUser>, StoreError> {
        let row: Option<AdminUserRow> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM users WHERE tenant_id = $1 AND user_id = $2"
        ))
        .bind(self.id_str())
        .bind(user_id)
        .fetch_optional(self.pool())
        .await?;
        Ok(row.map(admin_user))
    }

    /// By username: what sign-in reads, since it must know whether the account is disabled.
    pub async fn find_admin_user_by_username(
        &self,
        username: &str,
    ) -> Result<Option<AdminUser>, StoreError> {
        let row: Option<AdminUserRow> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM users WHERE tenant_id = $1 AND username = $2"
        ))
        .bind(self.id_str())
        .bind(username)
        .fetch_optional(self.pool())
        .await?;
        Ok(row.map(admin_user))
    }

    /// Changes a user's profile if it is at the `expected` revision (any, when `None`).
    /// `Conflict(User)` when the new username is taken, `NotFound(User)` or `Changed(User)`.
    pub async fn update_user(
        &self,
        user_id: &str,
        changes: UserChanges<'_>,
        expected: Option<Revision>,
    ) -> Result<Revision, StoreError> {
        let (created_at, revision) = expected_values(expected);
        let row: Option<(i64, i64)> = sqlx::query_as(&format!(
            "UPDATE users SET username = COALESCE($1, username), name = COALESCE($2, name), \
               email = COALESCE($3, email), revision = revision + 1 \
             WHERE tenant_id = $4 AND user_id = $5 AND {} RETURNING created_at, revision",
            matches_revision(6, 7)
        ))
        .bind(changes.username)
        .bind(changes.name)
        .bind(changes.email)
        .bind(self.id_str())
        .bind(user_id)
        .bind(created_at)
        .bind(revision)
        .fetch_optional(self.pool())
        .await
        .map_err(|e| StoreError::from_sqlx(e, Entity::User))?;
        match row {
            Some((created_at, revision)) => Ok(Revision {
                created_at,
                revision,
            }),
            None => Err(self.user_missing_or_changed(user_id).await?),
        }
    }

    /// Replaces a user's password hash and raises its revision. Sessions and grants stay:
    /// ending them is a separate decision (sign out everywhere).
    pub async fn set_admin_password_hash(
        &self,
        user_id: &str,
        password_hash: &str,
    ) -> Result<(), StoreError> {
        let done = sqlx::query(
            "UPDATE users SET password_hash = $1, revision = revision + 1 \
             WHERE tenant_id = $2 AND user_id = $3",
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

    /// Disables a user (keeping the first `disabled_at` if it already was), ends their
    /// browser sessions and revokes every live grant, in one transaction.
    pub async fn disable_user(
        &self,
        user_id: &str,
        now: UnixTime,
    ) -> Result<SignedOut, StoreError> {
        let mut tx = self.begin().await?;
        let done = sqlx::query(
            "UPDATE users SET disabled_at = COALESCE(disabled_at, $1), revision = revision + 1 \
             WHERE tenant_id = $2 AND user_id = $3",
        )
        .bind(now)
        .bind(self.id_str())
        .bind(user_id)
        .execute(self.in_tx(&mut tx))
        .await?;
        if done.rows_affected() != 1 {
            self.rollback(tx).await?;
            return Err(StoreError::NotFound(Entity::User));
        }
        let ended = self
            .end_sessions_and_grants(&mut tx, user_id, None, REVOKED_USER_DISABLED, now)
            .await?;
        self.commit(tx).await?;
        Ok(ended)
    }

    /// Enables a user again. The grants revoked when they were disabled stay revoked.
    pub async fn enable_user(&self, user_id: &str) -> Result<(), StoreError> {
        let done = sqlx::query(
            "UPDATE users SET disabled_at = NULL, revision = revision + 1 \
             WHERE tenant_id = $1 AND user_id = $2",
        )
        .bind(self.id_str())
        .bind(user_id)
        .execute(self.pool())
        .await?;
        match done.rows_affected() {
            1 => Ok(()),
            _ => Err(StoreError::NotFound(Entity::User)),
        }
    }

    /// Deletes a user. Their grants (with their refresh tokens), codes, browser sessions,
    /// memberships and password links go with the row, by the foreign keys; the audit trail
    /// keeps only the `sub`.
    /// Their sessions' clients are told (Back-Channel Logout), queued in the same transaction.
    pub async fn delete_user(&self, user_id: &str, now: UnixTime) -> Result<(), StoreError> {
        let mut tx = self.begin().await?;
        let ending = EndingSessions::OfUser {
            user_id,
            keep: None,
        };
        self.queue_backchannel_logouts(&mut tx, ending, now).await?;
        let done = sqlx::query("DELETE FROM users WHERE tenant_id = $1 AND user_id = $2")
            .bind(self.id_str())
            .bind(user_id)
            .execute(self.in_tx(&mut tx))
            .await?;
        if done.rows_affected() != 1 {
            self.rollback(tx).await?;
            return Err(StoreError::NotFound(Entity::User));
        }
        self.commit(tx).await
    }

    /// Ends every browser session of the user and revokes every live grant, in one
    /// transaction: each device must sign in again.
    pub async fn sign_out_user(
        &self,
        user_id: &str,
        now: UnixTime,
    ) -> Result<SignedOut, StoreError> {
        let mut tx = self.begin().await?;
        let exists: Option<(String,)> =
            sqlx::query_as("SELECT user_id FROM users WHERE tenant_id = $1 AND user_id = $2")
                .bind(self.id_str())
                .bind(user_id)
                .fetch_optional(self.in_tx(&mut tx))
                .await?;
        if exists.is_none() {
            self.rollback(tx).await?;
            return Err(StoreError::NotFound(Entity::User));
        }
        let ended = self
            .end_sessions_and_grants(&mut tx, user_id, None, REVOKED_SIGNED_OUT, now)
            .await?;
        self.commit(tx).await?;
        Ok(ended)
    }

    /// Why a conditional update of a user matched nothing.
    async fn user_missing_or_changed(&self, user_id: &str) -> Result<StoreError, StoreError> {
        Ok(match self.find_user(user_id).await? {
            Some(_) => StoreError::Changed(Entity::User),
            None => StoreError::NotFound(Entity::User),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::contains_pattern;

    #[test]
    fn like_wildcards_and_the_escape_are_taken_literally() {
        assert_eq!(contains_pattern("bob"), "%bob%");
        assert_eq!(contains_pattern("a_b%c\\d"), "%a\\_b\\%c\\\\d%");
    }
}
