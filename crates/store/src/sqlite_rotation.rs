//! SQLite's refresh rotation, on the store's inline connection (its calls run on the calling
//! thread, so none is a trip), in the transaction a group left open or one it begins with the
//! write lock (`sqlite_group_commit.rs`). It reads the presented token with every condition
//! of a rotation and, in the same row, its grant, its user and the successor's expiry (by
//! position, [`crate::pool::Conn::records`]); only when that row comes back does it consume
//! the token and insert the successor, committed with the group's other writes before the
//! response goes out. Under the write lock nothing can change between the read and the
//! writes, so two rotations of one token cannot both succeed, as with PostgreSQL's single
//! statement.
//!
//! Why not one statement, as before: SQLite has no data-modifying CTEs, so it was an upsert
//! of two rows selected from the table it inserts into, which SQLite first copies into a
//! temporary table, with a `RETURNING` (another temporary table) whose grant and user came
//! from fourteen lookups, one per column. The read here is one join. Counted with callgrind
//! (`fieldauth-bench --callgrind`), SQLite's work per refresh (`sqlite3_step`, all
//! statements) went from 230,000 instructions to 94,000 (docs/performance.md).

use std::sync::LazyLock;

use crate::error::StoreError;
use crate::field::positional::positional;
use crate::grants::{grant_stands_for_key, GrantAndUser, Presented, INSERT_REFRESH_TOKEN};
use crate::sqlite_group_commit::{Durable, GroupWrite};
use crate::tenant::TenantStore;

/// The read's row: the grant and its user, and when the successor expires.
#[derive(sqlx::FromRow)]
struct Rotatable {
    #[sqlx(flatten)]
    found: GrantAndUser,
    successor_expires_at: i64,
}

positional!(Rotatable {
    found: GrantAndUser,
    successor_expires_at,
});

impl TenantStore<'_> {
    /// Consumes the presented token and stores its successor if it passes every condition
    /// of a rotation, and returns its grant and user; `None`, having spent nothing, if not.
    pub(crate) async fn rotate_on_sqlite(
        &self,
        presented: &Presented<'_>,
    ) -> Result<Option<(GrantAndUser, Durable)>, StoreError> {
        let _turn = self.write_turn().await;
        // In the transaction open on the connection, or one begun with the write lock
        // (`sqlite_group_commit.rs`). Dropped before it is settled (an error, or the request
        // gone between the calls), the connection is closed, which rolls it back.
        let mut write = GroupWrite::join(self.pool()).await?;
        // Read by position (its columns' names checked once per compiled statement), not
        // from an `AnyRow` by name: a refresh's one row.
        let read = write
            .conn
            .records(self.rotation_statement::<Rotatable>(&READ, presented))
            .await?;
        let Some(Rotatable {
            found,
            successor_expires_at,
        }) = read.into_iter().next()
        else {
            write.read_nothing().await?;
            return Ok(None);
        };
        // The transaction has held the write lock since the read, so the token is as read.
        sqlx::query(&WRITE)
            .bind(presented.now)
            .bind(self.id_str())
            .bind(presented.token_hash)
            .bind(presented.next.token_hash)
            .bind(found.grant_id())
            .bind(successor_expires_at)
            .execute(&mut *write.conn)
            .await?;
        let durable = write.wrote().await?;
        Ok(Some((found, durable)))
    }
}

/// Reads, in the transaction begun with the write lock, the presented token `$3` of
/// tenant `$2`: live and unexpired at `$1`, of client `$4`'s standing grant (younger than
/// `$7` seconds, its user still a member, bound to no DPoP key or to `$8`, the client still in
/// the state `$9`, `$10`). The successor expires at `$6` or at the grant's end, whichever
/// comes first, so rotation never extends a grant. The placeholders are PostgreSQL's
/// statement's ([`TenantStore::rotation_statement`]); the successor's hash `$5` is the
/// write's.
static READ: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT gr.grant_id, gr.client_id, gr.user_id, gr.organization_guid, gr.scope, \
           gr.auth_time, gr.created_at, gr.revoked_at, gr.sid, gr.amr, u.username, \
           u.password_hash, u.name, u.email, u.created_at AS user_created_at, \
           MIN($6, gr.created_at + $7) AS successor_expires_at \
         FROM refresh_tokens t \
         JOIN grants gr ON gr.tenant_id = t.tenant_id AND gr.grant_id = t.grant_id \
         JOIN users u ON u.tenant_id = gr.tenant_id AND u.user_id = gr.user_id \
         WHERE t.tenant_id = $2 AND t.token_hash = $3 AND t.consumed_at IS NULL \
           AND t.expires_at > $1 AND {stands}",
        stands = grant_stands_for_key("t"),
    )
});

/// Consumes the token `$3` at `$1`, recording its successor `$4` (for a retry within the
/// client's window), and inserts the successor into grant `$5`, expiring at `$6`.
static WRITE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "UPDATE refresh_tokens SET consumed_at = $1, successor_hash = $4 \
         WHERE tenant_id = $2 AND token_hash = $3 AND consumed_at IS NULL; \
         {INSERT_REFRESH_TOKEN} VALUES ($2, $4, $5, $1, $6)"
    )
});
