//! Redeeming an authorization code and recording the grant it issues, all or nothing
//! (RFC 6749 §4.1.2: a code is used once). The redemption is a conditional update, so two
//! nodes presenting one code can never both win; the grant, its first refresh token and the
//! user its tokens describe are written and read in the same commit as the redemption, so a
//! database lost on the way leaves the code unspent and the client free to retry, never
//! spent without tokens.
//!
//! [`TenantStore::present_code`] only reads the code (with the client presenting it),
//! holding no lock while the caller checks it, and the redemption happens in the one trip
//! that [`RedeemedCode::spend`] or [`RedeemedCode::issue`] makes: on PostgreSQL one
//! statement of data-modifying CTEs (which run exactly once and commit together), on SQLite
//! one batch that opens and commits its own transaction. A race between two presentations is
//! therefore decided at that trip, and the loser learns it there ([`Issuance::Replayed`])
//! rather than at the read.

use std::sync::LazyLock;

use crate::clients::{Client, ClientRecord};
use crate::codes::AuthorizationCode;
use crate::db::Backend;
use crate::error::StoreError;
use crate::grants::{NewGrant, NewRefreshToken, INSERT_GRANT, INSERT_REFRESH_TOKEN};
use crate::tenant::TenantStore;
use crate::users::User;
use crate::UnixTime;

/// What presenting a code found.
#[derive(Debug)]
pub enum CodeExchange<'a> {
    /// Unused when read: the code as its redemption will record it (`redeemed_at` and
    /// `grant_id` set).
    Redeemed(Box<RedeemedCode<'a>>),
    /// Used before: the grant its first use created, if any, and what the token endpoint
    /// needs to decide whether this presentation may revoke it (RFC 6749 §4.1.2): the
    /// client the code was issued to, and when the code expired.
    Replayed {
        grant_id: Option<String>,
        client_id: String,
        expires_at: UnixTime,
    },
    Unknown,
}

/// What [`RedeemedCode::issue`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Issuance {
    /// The grant and its first refresh token are stored; the user the tokens describe.
    Issued(Box<User>),
    /// Nothing is issued: the grant's user no longer exists, is disabled, or is no longer a
    /// member of the code's organization, or the client is disabled. The code is spent, or
    /// gone with that user (or its client) since it was read.
    UserGone,
    /// Another presentation redeemed the code between this one's read and its issue. This
    /// one is then the replay, exactly as if it had come a moment later: the grant the
    /// winner issued, if any, to revoke (RFC 6749 §10.5).
    Replayed { grant_id: Option<String> },
}

/// A code read unused, not yet redeemed. Dropping it spends nothing (the code stays usable);
/// [`RedeemedCode::spend`] and [`RedeemedCode::issue`] redeem and commit.
#[derive(Debug)]
pub struct RedeemedCode<'a> {
    tenant: TenantStore<'a>,
    code_hash: Vec<u8>,
    redeemed_at: UnixTime,
    code: AuthorizationCode,
}

/// A client with the code presented to it, read together: the client's columns, then the
/// code's (all `NULL` when no such code exists).
#[derive(sqlx::FromRow)]
struct ClientAndCodeRow {
    #[sqlx(flatten)]
    client: ClientRecord,
    code_client_id: Option<String>,
    code_redirect_uri: Option<String>,
    code_user_id: Option<String>,
    code_organization_guid: Option<String>,
    code_scope: Option<String>,
    code_nonce: Option<String>,
    code_challenge: Option<String>,
    code_auth_time: Option<i64>,
    code_created_at: Option<i64>,
    code_expires_at: Option<i64>,
    code_redeemed_at: Option<i64>,
    code_grant_id: Option<String>,
    code_sid: Option<String>,
    code_amr: Option<String>,
}

impl ClientAndCodeRow {
    fn code(&mut self) -> Option<AuthorizationCode> {
        Some(AuthorizationCode {
            client_id: self.code_client_id.take()?,
            redirect_uri: self.code_redirect_uri.take()?,
            user_id: self.code_user_id.take()?,
            organization_guid: self.code_organization_guid.take()?,
            scope: self.code_scope.take()?,
            nonce: self.code_nonce.take(),
            code_challenge: self.code_challenge.take()?,
            auth_time: self.code_auth_time?,
            created_at: self.code_created_at?,
            expires_at: self.code_expires_at?,
            redeemed_at: self.code_redeemed_at,
            grant_id: self.code_grant_id.take(),
            sid: self.code_sid.take(),
            amr: self.code_amr.take(),
        })
    }
}

impl TenantStore<'_> {
    /// Reads the client a code is presented by and the code, in one statement (the token
    /// endpoint authenticates the client, then checks the code), for redemption under the
    /// grant id it will issue: `None` when no such client exists. The code is only read,
    /// since the redemption that follows is conditional and settles any race itself; it is
    /// found whoever presents it, and the caller refuses a code of another client.
    pub async fn present_code(
        &self,
        client_id: &str,
        code_hash: &[u8],
        grant_id: &str,
        now: UnixTime,
    ) -> Result<Option<(Client, CodeExchange<'_>)>, StoreError> {
        let row: Option<ClientAndCodeRow> = sqlx::query_as(
            "SELECT c.client_id, c.name, c.client_type, c.secret_hash, c.redirect_uris, \
               c.scopes, c.created_at, c.refresh_retry_seconds, c.dpop_bound_access_tokens, \
               c.revision, c.disabled_at, c.previous_secret_hash, \
               c.previous_secret_expires_at, a.client_id AS code_client_id, \
               a.redirect_uri AS code_redirect_uri, a.user_id AS code_user_id, \
               a.organization_guid AS code_organization_guid, a.scope AS code_scope, \
               a.nonce AS code_nonce, a.code_challenge, a.auth_time AS code_auth_time, \
               a.created_at AS code_created_at, a.expires_at AS code_expires_at, \
               a.redeemed_at AS code_redeemed_at, a.grant_id AS code_grant_id, \
               a.sid AS code_sid, a.amr AS code_amr \
             FROM clients c LEFT JOIN authorization_codes a \
               ON a.tenant_id = c.tenant_id AND a.code_hash = $3 \
             WHERE c.tenant_id = $1 AND c.client_id = $2",
        )
        .bind(self.id_str())
        .bind(client_id)
        .bind(code_hash.to_vec())
        .fetch_optional(self.pool())
        .await?;
        let Some(mut row) = row else {
            return Ok(None);
        };
        let code = row.code();
        let client = row.client.into_client()?;
        let exchange = match code {
            None => CodeExchange::Unknown,
            Some(code) if code.redeemed_at.is_some() => CodeExchange::Replayed {
                grant_id: code.grant_id,
                client_id: code.client_id,
                expires_at: code.expires_at,
            },
            // The caller sees the code as its redemption will record it.
            Some(mut code) => {
                code.redeemed_at = Some(now);
                code.grant_id = Some(grant_id.to_owned());
                CodeExchange::Redeemed(Box::new(RedeemedCode {
                    tenant: *self,
                    code_hash: code_hash.to_vec(),
                    redeemed_at: now,
                    code,
                }))
            }
        };
        Ok(Some((client, exchange)))
    }
}

impl RedeemedCode<'_> {
    pub fn code(&self) -> &AuthorizationCode {
        &self.code
    }

    /// Redeems the code alone: a code that failed a check is used up all the same, so it
    /// cannot be tried again with other parameters. It issued no grant, so it names none. A
    /// presentation that redeemed the code meanwhile leaves it just as spent.
    pub async fn spend(self) -> Result<AuthorizationCode, StoreError> {
        let RedeemedCode {
            tenant,
            code_hash,
            redeemed_at,
            mut code,
        } = self;
        let _turn = tenant.write_turn().await;
        sqlx::query(
            "UPDATE authorization_codes SET redeemed_at = $1 \
             WHERE tenant_id = $2 AND code_hash = $3 AND redeemed_at IS NULL",
        )
        .bind(redeemed_at)
        .bind(tenant.id_str())
        .bind(code_hash)
        .execute(tenant.pool())
        .await?;
        code.grant_id = None;
        Ok(code)
    }

    /// Redeems the code under the grant id it was presented with, records that grant and
    /// its first refresh token, reads the grant's user, and commits, in one trip. The
    /// redemption names the grant only if the user is still a member of the code's
    /// organization (so still exists), and the grant and its refresh token are inserted only
    /// where the redemption named it, so a lost race writes nothing and a deleted user or
    /// membership leaves the code spent without a grant. Two issues of one code
    /// serialize on its row (PostgreSQL) or the write lock (SQLite): the loser re-checks
    /// `redeemed_at` and matches nothing.
    pub async fn issue(
        self,
        grant: &NewGrant<'_>,
        refresh_token: Option<NewRefreshToken<'_>>,
        now: UnixTime,
    ) -> Result<Issuance, StoreError> {
        let RedeemedCode {
            tenant,
            code_hash,
            redeemed_at,
            ..
        } = self;
        let issue = match tenant.backend() {
            Backend::Postgres => sqlx::query_as(&POSTGRES_ISSUE),
            Backend::Sqlite => sqlx::query_as(&SQLITE_ISSUE),
        }
        .bind(redeemed_at)
        .bind(tenant.id_str().to_owned())
        .bind(code_hash.clone())
        .bind(grant.grant_id.to_owned())
        .bind(grant.user_id.to_owned())
        .bind(grant.client_id.to_owned())
        .bind(grant.organization_guid.to_owned())
        .bind(grant.scope.to_owned())
        .bind(grant.auth_time)
        .bind(now)
        .bind(refresh_token.map(|token| token.token_hash.to_vec()))
        .bind(refresh_token.map(|token| token.expires_at))
        .bind(grant.dpop_jkt.map(str::to_owned));
        let rows: Vec<IssuedUserRow> = match tenant.backend() {
            Backend::Postgres => issue.fetch_all(tenant.pool()).await?,
            Backend::Sqlite => tenant.sqlite_batch(issue).await?,
        };
        Ok(match rows.into_iter().next() {
            Some((
                Some(username),
                Some(password_hash),
                Some(name),
                Some(email),
                Some(created_at),
            )) => Issuance::Issued(Box::new(User {
                user_id: grant.user_id.to_owned(),
                username,
                password_hash,
                name,
                email,
                created_at,
            })),
            Some(_) => Issuance::UserGone,
            // Redeemed since it was read: a new statement sees what the winner committed.
            None => match tenant.find_authorization_code(&code_hash).await? {
                Some(code) => Issuance::Replayed {
                    grant_id: code.grant_id,
                },
                None => Issuance::UserGone,
            },
        })
    }
}

/// The user columns of an issue: all `None` when the redemption named no grant.
type IssuedUserRow = (
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<i64>,
);

/// The grant id a redemption records: this presentation's (`grant_id`), when the code's user
/// is still a member of the code's organization (spec §1: tokens are bound to the
/// organization membership chosen at consent, and last no longer than it) and neither the
/// user nor the client is disabled, else `NULL`. A membership's user exists (its foreign
/// key), so the one lookup, by the membership's key, stands for both. Disabling revokes the
/// grants that exist; this refuses the one a code issued before the disabling would
/// otherwise create. Each argument is an expression of the statement it is part of.
pub(crate) fn member_grant_id(
    grant_id: &str,
    tenant: &str,
    user: &str,
    organization: &str,
    client: &str,
) -> String {
    format!(
        "(SELECT {grant_id} FROM memberships m \
           WHERE m.tenant_id = {tenant} AND m.user_id = {user} AND m.organization_guid = {organization} \
             AND EXISTS (SELECT 1 FROM users du \
               WHERE du.tenant_id = {tenant} AND du.user_id = {user} AND du.disabled_at IS NULL) \
             AND EXISTS (SELECT 1 FROM clients dc \
               WHERE dc.tenant_id = {tenant} AND dc.client_id = {client} AND dc.disabled_at IS NULL))"
    )
}

/// PostgreSQL's redemption and issue as one statement; its row holds the user's columns, all
/// `NULL` when the redemption named no grant, and there is no row when the code was
/// redeemed meanwhile.
static POSTGRES_ISSUE: LazyLock<String> = LazyLock::new(|| {
    let member_grant_id = member_grant_id("$4", "$2", "$5", "$7", "$6");
    format!(
        "WITH redeemed AS ( \
           UPDATE authorization_codes SET redeemed_at = $1, \
             grant_id = {member_grant_id} \
           WHERE tenant_id = $2 AND code_hash = $3 AND redeemed_at IS NULL \
           RETURNING grant_id, sid, amr), \
         issued AS ( \
           {INSERT_GRANT} SELECT $2, grant_id, $6, $5, $7, $8, $9, $10, sid, amr, $13 \
           FROM redeemed WHERE grant_id IS NOT NULL \
           RETURNING grant_id), \
         first_refresh_token AS ( \
           {INSERT_REFRESH_TOKEN} SELECT $2, $11, grant_id, $10, $12 \
           FROM issued WHERE $11 IS NOT NULL) \
         SELECT u.username, u.password_hash, u.name, u.email, u.created_at \
         FROM redeemed r LEFT JOIN users u \
           ON r.grant_id IS NOT NULL AND u.tenant_id = $2 AND u.user_id = $5"
    )
});

/// SQLite's redemption and issue as one batch (SQLite has no data-modifying CTEs), with the
/// same parameters and the same row as PostgreSQL's: the redemption returns the user's
/// columns, read under the write lock the batch holds, and the grant and its refresh token
/// are inserted only where the redemption named this presentation's grant id.
static SQLITE_ISSUE: LazyLock<String> = LazyLock::new(|| {
    // Read only where the redemption named the grant, as PostgreSQL's join does: the user
    // may exist while the membership does not.
    let user = |column: &str| {
        format!(
            "(SELECT u.{column} FROM users u \
              WHERE u.tenant_id = $2 AND u.user_id = $5 AND authorization_codes.grant_id = $4)"
        )
    };
    let member_grant_id = member_grant_id("$4", "$2", "$5", "$7", "$6");
    format!(
        "BEGIN IMMEDIATE; \
         UPDATE authorization_codes SET redeemed_at = $1, grant_id = {member_grant_id} \
         WHERE tenant_id = $2 AND code_hash = $3 AND redeemed_at IS NULL \
         RETURNING {}, {}, {}, {}, {}; \
         {INSERT_GRANT} SELECT $2, $4, $6, $5, $7, $8, $9, $10, sid, amr, $13 FROM authorization_codes \
         WHERE tenant_id = $2 AND code_hash = $3 AND grant_id = $4; \
         {INSERT_REFRESH_TOKEN} SELECT $2, $11, $4, $10, $12 FROM grants \
         WHERE tenant_id = $2 AND grant_id = $4 AND $11 IS NOT NULL; \
         COMMIT",
        user("username"),
        user("password_hash"),
        user("name"),
        user("email"),
        user("created_at"),
    )
});
