//! SQLite's code exchange for a kept client, as SQLite's refresh rotation
//! (`sqlite_rotation.rs`): in the transaction a group left open or one begun with the write
//! lock (`sqlite_group_commit.rs`), a read of the code that passes every check, as its
//! redemption will leave it, with its user (by position); only when that row comes back, the
//! redemption and the grant (and its first refresh token for `offline_access`) inserted from
//! the values read, committed with the group's other writes before the response goes out.
//! Under the write lock nothing can change between the read and the writes.
//!
//! Why not one batch of conditional statements, as before: its redemption's `RETURNING` is a
//! temporary table with a lookup of the user per column, and its grant was inserted from a
//! select, which SQLite journals per statement in a transaction; single-row inserts of values
//! need neither (docs/performance.md).

use std::sync::LazyLock;

use crate::code_exchange_checked::{CheckedRow, CODE_PASSES};
use crate::error::StoreError;
use crate::grants::{INSERT_GRANT, INSERT_REFRESH_TOKEN};
use crate::sqlite_group_commit::{Durable, GroupWrite};
use crate::tenant::TenantStore;
use crate::UnixTime;

impl TenantStore<'_> {
    /// Redeems the code that `read` ([`READ`], its placeholders bound by the caller) finds,
    /// records its grant, and returns its row; `None`, having spent nothing, if it finds none.
    pub(crate) async fn exchange_on_sqlite<'q>(
        &self,
        read: sqlx::query::QueryAs<'q, sqlx::Any, CheckedRow, sqlx::any::AnyArguments<'q>>,
        refresh_token: (&[u8], i64),
        dpop_jkt: Option<&str>,
        now: UnixTime,
        code_hash: &[u8],
    ) -> Result<Option<(CheckedRow, Durable)>, StoreError> {
        let _turn = self.write_turn().await;
        // In the transaction open on the connection, or one begun with the write lock
        // (`sqlite_group_commit.rs`). Dropped before it is settled (an error, or the request
        // gone between the calls), the connection is closed, which rolls it back.
        let mut write = GroupWrite::join(self.pool()).await?;
        // Read by position (its columns' names checked once per compiled statement), not
        // from an `AnyRow` by name.
        let rows = write.conn.records(read).await?;
        let Some(row) = rows.into_iter().next() else {
            write.read_nothing().await?;
            return Ok(None);
        };
        let code = &row.code;
        let statement = match (&code.grant_id, row.offline != 0) {
            (None, _) => REDEEM,
            (Some(_), false) => &*ISSUE,
            (Some(_), true) => &*ISSUE_WITH_REFRESH_TOKEN,
        };
        // The transaction has held the write lock since the read, so the code is as read.
        sqlx::query(statement)
            .bind(now)
            .bind(self.id_str())
            .bind(code_hash)
            .bind(code.grant_id.as_deref())
            .bind(code.client_id.as_str())
            .bind(code.user_id.as_str())
            .bind(code.organization_guid.as_str())
            .bind(code.scope.as_str())
            .bind(code.auth_time)
            .bind(code.sid.as_deref())
            .bind(code.amr.as_deref())
            .bind(dpop_jkt)
            .bind(refresh_token.0)
            .bind(refresh_token.1)
            .execute(&mut *write.conn)
            .await?;
        let durable = write.wrote().await?;
        Ok(Some((row, durable)))
    }
}

/// Reads, in the transaction begun with the write lock, the code that passes every check
/// ([`CODE_PASSES`]) as its redemption at `$1` leaves it: `grant_id` this presentation's
/// (`$4`) where the redemption names a grant, else `NULL`; whether its scope holds
/// `offline_access`; and the user's columns. The placeholders are those
/// [`TenantStore::exchange_checked_code`] binds for both backends; `$10` to `$12` (the
/// refresh token and the DPoP key) are PostgreSQL's statement's only, and the writes below
/// bind their own.
pub(crate) static READ: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT c.*, u.username, u.password_hash, u.name, u.email, \
           u.created_at AS user_created_at \
         FROM (SELECT client_id, redirect_uri, user_id, organization_guid, scope, nonce, \
             code_challenge, auth_time, created_at, expires_at, $1 AS redeemed_at, \
             {member_grant_id} AS grant_id, sid, amr, \
             CASE WHEN {offline} THEN 1 ELSE 0 END AS offline \
           FROM authorization_codes WHERE {CODE_PASSES}) c \
         LEFT JOIN users u ON u.tenant_id = $2 AND u.user_id = c.user_id",
        member_grant_id = crate::code_exchange_checked::redeemed_grant_id(),
        offline =
            crate::code_exchange_checked::holds_offline_access("scope", crate::db::Backend::Sqlite),
    )
});

/// The redemption of code `$3` of tenant `$2` at `$1`, naming grant `$4` (or none).
const REDEEM: &str = "UPDATE authorization_codes SET redeemed_at = $1, grant_id = $4 \
     WHERE tenant_id = $2 AND code_hash = $3 AND redeemed_at IS NULL";

/// The grant `$4` of client `$5` for the code's user `$6`, organization `$7`, scope `$8`,
/// sign-in at `$9` in session `$10` with methods `$11`, bound to DPoP key `$12`. Without a
/// grant (`$4` `NULL`: the code's user is gone, disabled or no longer a member, or its
/// client is disabled) the code is spent with [`REDEEM`] alone.
static ISSUE: LazyLock<String> = LazyLock::new(|| {
    format!("{REDEEM}; {INSERT_GRANT} VALUES ($2, $4, $5, $6, $7, $8, $9, $1, $10, $11, $12)")
});

/// [`ISSUE`], and the grant's first refresh token `$13`, expiring at `$14`.
static ISSUE_WITH_REFRESH_TOKEN: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{REDEEM}; {INSERT_GRANT} VALUES ($2, $4, $5, $6, $7, $8, $9, $1, $10, $11, $12); \
         {INSERT_REFRESH_TOKEN} VALUES ($2, $13, $4, $1, $14)"
    )
});
