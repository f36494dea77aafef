//! Grants and their refresh tokens. A grant is what one redeemed authorization code issued
//! (the token family of spec §5.7); its refresh tokens rotate within it, and revoking it ends
//! every token it issued. Redemption and rotation are conditional updates (on SQLite the
//! rotation is a transaction under the write lock, `sqlite_rotation.rs`), so two concurrent
//! attempts can never both succeed, on one node or several. What a refused rotation comes to
//! (reuse, or a retry within the client's window) is `grants_retry.rs`.

use sqlx::any::AnyRow;
use sqlx::FromRow;

use crate::db::Backend;
use crate::error::StoreError;
use crate::field::positional::positional;
use crate::revision::{expected_values, Revision};
use crate::sqlite_group_commit::Durable;
use crate::tenant::TenantStore;
use crate::users::User;
use crate::UnixTime;

#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct Grant {
    pub grant_id: String,
    pub client_id: String,
    pub user_id: String,
    pub organization_guid: String,
    pub scope: String,
    pub auth_time: i64,
    pub created_at: i64,
    pub revoked_at: Option<i64>,
    /// The `sid` of the browser session its code was issued in (its ID tokens carry it).
    pub sid: Option<String>,
    /// RFC 8176 `amr` of the sign-in its code was issued after (its ID tokens carry it, and
    /// the `acr` it amounts to). NULL on grants older than migration 0016.
    pub amr: Option<String>,
}

#[derive(Clone, Debug)]
pub struct NewGrant<'a> {
    pub grant_id: &'a str,
    pub client_id: &'a str,
    pub user_id: &'a str,
    pub organization_guid: &'a str,
    pub scope: &'a str,
    pub auth_time: UnixTime,
    /// The DPoP key (RFC 7638 thumbprint) its refresh tokens are bound to: a public client's
    /// grant issued with a DPoP proof (RFC 9449 §5). `None`: not bound.
    pub dpop_jkt: Option<&'a str>,
}

#[derive(Clone, Copy, Debug)]
pub struct NewRefreshToken<'a> {
    pub token_hash: &'a [u8],
    pub expires_at: UnixTime,
}

/// What an access token's grant says of its user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GrantUser {
    /// The grant stands and its user exists.
    Live(User),
    /// The grant was revoked (or never existed in this tenant).
    Revoked,
    /// The grant stands but its user was deleted (or is not the token's subject).
    Gone,
}

/// A grant's revocation time and its user's columns, absent when no user matched.
type GrantUserRow = (
    Option<i64>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<i64>,
);

/// A grant and the user it was issued to, read together by a rotation.
#[derive(sqlx::FromRow)]
pub(crate) struct GrantAndUser {
    #[sqlx(flatten)]
    grant: Grant,
    username: String,
    password_hash: String,
    name: String,
    email: String,
    user_created_at: i64,
}

// SQLite's rotation reads its one row by position (`sqlite_rotation.rs`).
positional!(Grant {
    grant_id,
    client_id,
    user_id,
    organization_guid,
    scope,
    auth_time,
    created_at,
    revoked_at,
    sid,
    amr,
});
positional!(GrantAndUser {
    grant: Grant,
    username,
    password_hash,
    name,
    email,
    user_created_at,
});

impl GrantAndUser {
    pub(crate) fn grant_id(&self) -> &str {
        &self.grant.grant_id
    }
}

/// A grant and its user, as a rotation (or a retry) returns them.
pub(crate) fn grant_and_user(found: GrantAndUser) -> (Grant, Box<User>) {
    let user = User {
        user_id: found.grant.user_id.clone(),
        username: found.username,
        password_hash: found.password_hash,
        name: found.name,
        email: found.email,
        created_at: found.user_created_at,
    };
    (found.grant, Box::new(user))
}

/// A stored refresh token and the grant it belongs to.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct RefreshToken {
    #[sqlx(flatten)]
    pub grant: Grant,
    pub consumed_at: Option<i64>,
    pub expires_at: i64,
}

impl RefreshToken {
    /// Unused, unexpired, and of a grant that still stands.
    pub fn is_live(&self, now: UnixTime) -> bool {
        self.consumed_at.is_none() && self.expires_at > now && self.grant.revoked_at.is_none()
    }
}

/// What presenting a refresh token found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RefreshRotation {
    /// The token was live and is now consumed; the new one is stored. The grant's user is
    /// read in the same transaction: after the commit the client must get its new token
    /// from what is in hand, since nothing read later may fail between the two.
    Rotated(Grant, Box<User>),
    /// The token was consumed within its client's retry window (issue 27) and the successor
    /// its rotation issued was never used: that successor is ended and the new token stored
    /// in its place, as for [`RefreshRotation::Rotated`].
    Retried(Grant, Box<User>),
    /// The token was already consumed: its grant is now revoked (spec §5.7).
    Reused { grant_id: String },
    /// The token's grant is bound to a DPoP key (RFC 9449 §5) and the presentation was not
    /// made with that key: nothing was spent or revoked, whatever the token's state.
    WrongKey,
    /// Unknown, expired, another client's, or of a revoked grant; or consumed and retried
    /// already (by this presentation's twin), with the retry's successor unused.
    Refused,
    /// The client is no longer as [`RefreshingClient::known`] says (changed, disabled or
    /// deleted since that copy was read): nothing was spent or revoked. Authenticate the
    /// client again from the database and present the token again.
    ClientChanged,
}

/// Who presents a refresh token: the authenticated client, its retry window (issue 27),
/// and the DPoP key of the request's proof, if it has one.
#[derive(Clone, Copy, Debug)]
pub struct RefreshingClient<'a> {
    pub client_id: &'a str,
    /// Seconds within which a consumed token may be presented again (0: never).
    pub retry_seconds: i64,
    /// RFC 7638 thumbprint of the request's DPoP proof key.
    pub dpop_jkt: Option<&'a str>,
    /// The state of the client the caller authenticated ([`crate::Client::state`]): the
    /// rotation stands only while the client is still in that state and enabled, checked in
    /// its one statement, so a caller may authenticate with a copy kept in memory. `None`:
    /// not checked.
    pub known: Option<Revision>,
}

impl<'a> RefreshingClient<'a> {
    /// A client presenting no DPoP proof, its state not checked.
    pub fn new(client_id: &'a str, retry_seconds: i64) -> RefreshingClient<'a> {
        RefreshingClient {
            client_id,
            retry_seconds,
            dpop_jkt: None,
            known: None,
        }
    }
}

/// A refresh token as presented, with what its rotation was given; for the refusal path.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Presented<'a> {
    pub token_hash: &'a [u8],
    pub client: RefreshingClient<'a>,
    pub next: NewRefreshToken<'a>,
    pub grant_max_age: UnixTime,
    pub now: UnixTime,
}

const GRANT_COLUMNS: &str =
    "grant_id, client_id, user_id, organization_guid, scope, auth_time, created_at, revoked_at, sid, \
     amr";

/// The heads of the two inserts a grant's issue makes, shared by the transaction and by
/// PostgreSQL's single statements so their columns cannot drift apart.
pub(crate) const INSERT_GRANT: &str = "INSERT INTO grants (tenant_id, grant_id, client_id, \
     user_id, organization_guid, scope, auth_time, created_at, sid, amr, dpop_jkt)";
pub(crate) const INSERT_REFRESH_TOKEN: &str =
    "INSERT INTO refresh_tokens (tenant_id, token_hash, grant_id, created_at, expires_at)";

impl TenantStore<'_> {
    pub async fn find_grant(&self, grant_id: &str) -> Result<Option<Grant>, StoreError> {
        Ok(sqlx::query_as(&format!(
            "SELECT {GRANT_COLUMNS} FROM grants WHERE tenant_id = $1 AND grant_id = $2"
        ))
        .bind(self.id_str())
        .bind(grant_id)
        .fetch_optional(self.pool())
        .await?)
    }

    /// The user an access token names, if the token's grant still stands: what userinfo
    /// needs, in one read.
    pub async fn user_of_grant(
        &self,
        grant_id: &str,
        user_id: &str,
    ) -> Result<GrantUser, StoreError> {
        let row: Option<GrantUserRow> = sqlx::query_as(
            "SELECT g.revoked_at, u.username, u.password_hash, u.name, u.email, u.created_at \
             FROM grants g LEFT JOIN users u \
               ON u.tenant_id = g.tenant_id AND u.user_id = g.user_id AND u.user_id = $3 \
             WHERE g.tenant_id = $1 AND g.grant_id = $2",
        )
        .bind(self.id_str())
        .bind(grant_id)
        .bind(user_id)
        .fetch_optional(self.pool())
        .await?;
        Ok(match row {
            None | Some((Some(_), ..)) => GrantUser::Revoked,
            Some((
                None,
                Some(username),
                Some(password_hash),
                Some(name),
                Some(email),
                Some(created_at),
            )) => GrantUser::Live(User {
                user_id: user_id.to_owned(),
                username,
                password_hash,
                name,
                email,
                created_at,
            }),
            Some((None, ..)) => GrantUser::Gone,
        })
    }

    /// Revokes a grant and so every token it issued. False when it was already revoked or
    /// does not exist.
    pub async fn revoke_grant(
        &self,
        grant_id: &str,
        reason: &str,
        now: UnixTime,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE grants SET revoked_at = $1, revoked_reason = $2 \
             WHERE tenant_id = $3 AND grant_id = $4 AND revoked_at IS NULL",
        )
        .bind(now)
        .bind(reason)
        .bind(self.id_str())
        .bind(grant_id)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Consumes a live refresh token of this client and stores its successor, atomically.
    /// A token presented after it was consumed revokes its grant, unless it is retried
    /// within the client's `retry_seconds` (0: never; see `grants_retry.rs`).
    /// The token must also be of a grant younger than `grant_max_age` seconds whose user is
    /// still a member of its organization; the successor expires at `next.expires_at` or at
    /// the grant's end, whichever comes first, so rotation never extends a grant. A grant
    /// bound to a DPoP key is rotated only for a presentation with that key
    /// ([`RefreshRotation::WrongKey`] otherwise).
    pub async fn rotate_refresh_token(
        &self,
        token_hash: &[u8],
        client: RefreshingClient<'_>,
        next: NewRefreshToken<'_>,
        grant_max_age: UnixTime,
        now: UnixTime,
    ) -> Result<RefreshRotation, StoreError> {
        let (rotation, durable) = self
            .rotate_refresh_token_pending(token_hash, client, next, grant_max_age, now)
            .await?;
        durable.wait().await?;
        Ok(rotation)
    }

    /// [`TenantStore::rotate_refresh_token`], returned before the rotation is committed
    /// on SQLite (`sqlite_group_commit.rs`): sign the tokens, then wait for the [`Durable`]
    /// before sending them. Any other outcome than [`RefreshRotation::Rotated`] is
    /// committed already.
    pub async fn rotate_refresh_token_pending(
        &self,
        token_hash: &[u8],
        client: RefreshingClient<'_>,
        next: NewRefreshToken<'_>,
        grant_max_age: UnixTime,
        now: UnixTime,
    ) -> Result<(RefreshRotation, Durable), StoreError> {
        let presented = Presented {
            token_hash,
            client,
            next,
            grant_max_age,
            now,
        };
        let found = match self.backend() {
            Backend::Postgres => self
                .rotation_statement::<GrantAndUser>(&POSTGRES_ROTATION, &presented)
                .fetch_optional(self.pool())
                .await?
                .map(|found| (found, Durable::done())),
            Backend::Sqlite => self.rotate_on_sqlite(&presented).await?,
        };
        // SQLite's turn to write is given back by now: a retry takes it again for its
        // transaction, and the turn is not reentrant.
        match found {
            Some((found, durable)) => {
                let (grant, user) = grant_and_user(found);
                Ok((RefreshRotation::Rotated(grant, user), durable))
            }
            None => Ok((self.diagnose_refusal(&presented).await?, Durable::done())),
        }
    }

    /// A rotation's statement with its ten placeholders bound: `$1` now, `$2` the tenant,
    /// `$3` the presented token's hash, `$4` the client, `$5` and `$6` the successor's hash
    /// and expiry, `$7` the grant's maximum age, `$8` the request's DPoP key, `$9` and `$10`
    /// the state of the client's copy ([`RefreshingClient::known`]).
    pub(crate) fn rotation_statement<'q, R>(
        &'q self,
        statement: &'q str,
        presented: &Presented<'q>,
    ) -> sqlx::query::QueryAs<'q, sqlx::Any, R, sqlx::any::AnyArguments<'q>>
    where
        R: for<'r> FromRow<'r, AnyRow>,
    {
        let (known_created_at, known_revision) = expected_values(presented.client.known);
        sqlx::query_as(statement)
            .bind(presented.now)
            .bind(self.id_str())
            .bind(presented.token_hash)
            .bind(presented.client.client_id)
            .bind(presented.next.token_hash)
            .bind(presented.next.expires_at)
            .bind(presented.grant_max_age)
            .bind(presented.client.dpop_jkt)
            .bind(known_created_at)
            .bind(known_revision)
    }

    /// A refresh token's grant and state, whatever that state is.
    pub async fn find_refresh_token(
        &self,
        token_hash: &[u8],
    ) -> Result<Option<RefreshToken>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT g.grant_id, g.client_id, g.user_id, g.organization_guid, g.scope, g.auth_time, \
               g.created_at, g.revoked_at, g.sid, g.amr, t.consumed_at, t.expires_at \
             FROM refresh_tokens t JOIN grants g \
               ON g.tenant_id = t.tenant_id AND g.grant_id = t.grant_id \
             WHERE t.tenant_id = $1 AND t.token_hash = $2",
        )
        .bind(self.id_str())
        .bind(token_hash.to_vec())
        .fetch_optional(self.pool())
        .await?)
    }
}

/// A rotation's condition on the presented token `t`'s grant: client `client`'s, standing,
/// younger than its maximum age (`max_age` seconds) at `now`, and of a user who is still a
/// member of its organization (a membership's user exists: its foreign key). A correlated
/// `EXISTS` on the grant's key and the membership's, so no statement lists the tenant's
/// grants. The last three are placeholders (`$4`) of the statement it is part of.
pub(crate) fn grant_stands(t: &str, client: &str, max_age: &str, now: &str) -> String {
    grant_stands_and(t, client, max_age, now, "")
}

/// A rotation's [`grant_stands`], where the grant must also not be bound to a DPoP key other
/// than `$8` (RFC 9449 §5; NULL for a request without a proof): checked on the grant's row
/// the condition reads anyway, so a rotation pays nothing for it. And its client must still be
/// enabled and in the state `$9`, `$10` ([`RefreshingClient::known`]; both NULL: any): one
/// lookup by the client's key, which spares the caller a read of the client before it.
pub(crate) fn grant_stands_for_key(t: &str) -> String {
    grant_stands_and(
        t,
        "$4",
        "$7",
        "$1",
        "AND (g.dpop_jkt IS NULL OR g.dpop_jkt = $8) \
         AND ($9 IS NULL OR EXISTS (SELECT 1 FROM clients c \
           WHERE c.tenant_id = g.tenant_id AND c.client_id = g.client_id \
             AND c.created_at = $9 AND c.revision = $10 AND c.disabled_at IS NULL))",
    )
}

fn grant_stands_and(t: &str, client: &str, max_age: &str, now: &str, also: &str) -> String {
    format!(
        "EXISTS (SELECT 1 FROM grants g JOIN memberships m \
                   ON m.tenant_id = g.tenant_id AND m.user_id = g.user_id \
                  AND m.organization_guid = g.organization_guid \
                 WHERE g.tenant_id = {t}.tenant_id AND g.grant_id = {t}.grant_id \
                   AND g.client_id = {client} AND g.revoked_at IS NULL \
                   AND g.created_at + {max_age} > {now} {also})"
    )
}

/// PostgreSQL's rotation: the consume, the successor and the read in one statement
/// (data-modifying CTEs run exactly once and atomically). The consume requires the
/// membership as well as the live grant, so a token of a deleted user or a former member
/// stays unspent. The successor expires with the grant at the latest, and the consumed row
/// records its hash (`successor_hash`, for a retry within the client's window). Concurrent
/// rotations of one token serialize on its row: the loser re-checks `consumed_at` and
/// matches nothing.
static POSTGRES_ROTATION: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "WITH consumed AS ( \
           UPDATE refresh_tokens SET consumed_at = $1, successor_hash = $5 \
           WHERE tenant_id = $2 AND token_hash = $3 AND consumed_at IS NULL AND expires_at > $1 \
             AND {stands} \
           RETURNING grant_id), \
         successor AS ( \
           {INSERT_REFRESH_TOKEN} SELECT $2, $5, c.grant_id, $1, LEAST($6, g.created_at + $7) \
           FROM consumed c JOIN grants g ON g.tenant_id = $2 AND g.grant_id = c.grant_id) \
         SELECT g.grant_id, g.client_id, g.user_id, g.organization_guid, g.scope, \
           g.auth_time, g.created_at, g.revoked_at, g.sid, g.amr, u.username, u.password_hash, \
           u.name, u.email, u.created_at AS user_created_at \
         FROM consumed c \
         JOIN grants g ON g.tenant_id = $2 AND g.grant_id = c.grant_id \
         JOIN users u ON u.tenant_id = g.tenant_id AND u.user_id = g.user_id",
        stands = grant_stands_for_key("refresh_tokens"),
    )
});
