//! Redeeming an authorization code and recording the grant it issues, all or nothing
//! (RFC 6749 §4.1.2: a code is used once). The redemption is a conditional update, so two
//! nodes presenting one code can never both win; the grant, its first refresh token and the
//! user its tokens describe are written and read in the same commit as the redemption, so a
//! database lost on the way leaves the code unspent and the client free to retry, never
//! spent without tokens.
//!
//! SQLite redeems in a transaction opened by [`TenantStore::begin_code_exchange`] and
//! committed by [`RedeemedCode::spend`] or [`RedeemedCode::issue`]. PostgreSQL only reads the
//! code first, and redeems it in the one statement that `spend` or `issue` sends (for `issue`,
//! data-modifying CTEs, which run exactly once and commit together): two round trips instead
//! of six. Its race between two presentations is therefore decided at that statement, and the
//! loser learns it there ([`Issuance::Replayed`]) instead of at the redemption.

use crate::codes::AuthorizationCode;
use crate::db::Backend;
use crate::error::StoreError;
use crate::grants::{
    insert_refresh_token, NewGrant, NewRefreshToken, INSERT_GRANT, INSERT_REFRESH_TOKEN,
};
use crate::tenant::{TenantStore, Transaction};
use crate::users::{user_from_row, User, UserRow};
use crate::UnixTime;

/// What presenting a code found.
#[derive(Debug)]
pub enum CodeExchange<'a> {
    /// First use, as far as this presentation can tell: the code as its redemption records
    /// it (`redeemed_at` and `grant_id` set).
    Redeemed(Box<RedeemedCode<'a>>),
    /// Used before: the grant its first use created, if any, to revoke (RFC 6749 §10.5).
    Replayed {
        grant_id: Option<String>,
    },
    Unknown,
}

/// What [`RedeemedCode::issue`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Issuance {
    /// The grant and its first refresh token are stored; the user the tokens describe.
    Issued(Box<User>),
    /// Nothing is issued: the grant's user no longer exists. The code is spent, or on
    /// PostgreSQL may be gone with that user (or its client) since it was read.
    UserGone,
    /// PostgreSQL only: another presentation redeemed the code between this one's read and
    /// its issue. This one is then the replay, exactly as the loser of the same race is on
    /// SQLite: the grant the winner issued, if any, to revoke (RFC 6749 §10.5).
    Replayed { grant_id: Option<String> },
}

/// A code redeemed but not yet committed. Dropping it spends nothing (the code stays
/// usable); [`RedeemedCode::spend`] and [`RedeemedCode::issue`] commit.
#[derive(Debug)]
pub struct RedeemedCode<'a> {
    tenant: TenantStore<'a>,
    /// SQLite's open transaction, in which the code is already marked redeemed. `None` on
    /// PostgreSQL, where nothing is written until `spend` or `issue`.
    tx: Option<Transaction>,
    code_hash: Vec<u8>,
    redeemed_at: UnixTime,
    code: AuthorizationCode,
}

impl TenantStore<'_> {
    /// Presents a code for redemption under the grant id it will issue. On SQLite the code is
    /// marked redeemed, once, naming that grant (so the link costs no statement of its own),
    /// and the transaction stays open for the grant; on PostgreSQL the code is only read.
    pub async fn begin_code_exchange(
        &self,
        code_hash: &[u8],
        grant_id: &str,
        now: UnixTime,
    ) -> Result<CodeExchange<'_>, StoreError> {
        if self.backend() == Backend::Postgres {
            return self.read_code_for_exchange(code_hash, grant_id, now).await;
        }
        let mut tx = self.begin().await?;
        let redeemed: Option<AuthorizationCode> = sqlx::query_as(
            "UPDATE authorization_codes SET redeemed_at = $1, grant_id = $4 \
             WHERE tenant_id = $2 AND code_hash = $3 AND redeemed_at IS NULL \
             RETURNING client_id, redirect_uri, user_id, organization_guid, scope, nonce, \
               code_challenge, auth_time, created_at, expires_at, redeemed_at, grant_id",
        )
        .bind(now)
        .bind(self.id_str())
        .bind(code_hash.to_vec())
        .bind(grant_id)
        .fetch_optional(self.in_tx(&mut tx))
        .await?;
        if let Some(code) = redeemed {
            return Ok(CodeExchange::Redeemed(Box::new(RedeemedCode {
                tenant: *self,
                tx: Some(tx),
                code_hash: code_hash.to_vec(),
                redeemed_at: now,
                code,
            })));
        }
        tx.rollback().await?;
        Ok(match self.find_authorization_code(code_hash).await? {
            Some(code) => CodeExchange::Replayed {
                grant_id: code.grant_id,
            },
            None => CodeExchange::Unknown,
        })
    }

    /// PostgreSQL's presentation: a plain read, no lock held while the caller checks the
    /// code, since the redemption that follows is conditional and settles any race itself.
    async fn read_code_for_exchange(
        &self,
        code_hash: &[u8],
        grant_id: &str,
        now: UnixTime,
    ) -> Result<CodeExchange<'_>, StoreError> {
        let Some(mut code) = self.find_authorization_code(code_hash).await? else {
            return Ok(CodeExchange::Unknown);
        };
        if code.redeemed_at.is_some() {
            return Ok(CodeExchange::Replayed {
                grant_id: code.grant_id,
            });
        }
        // The caller sees the code as its redemption will record it, as on SQLite.
        code.redeemed_at = Some(now);
        code.grant_id = Some(grant_id.to_owned());
        Ok(CodeExchange::Redeemed(Box::new(RedeemedCode {
            tenant: *self,
            tx: None,
            code_hash: code_hash.to_vec(),
            redeemed_at: now,
            code,
        })))
    }
}

impl RedeemedCode<'_> {
    pub fn code(&self) -> &AuthorizationCode {
        &self.code
    }

    /// Commits the redemption alone: a code that failed a check is used up all the same, so
    /// it cannot be tried again with other parameters. It issued no grant, so it names none.
    /// On PostgreSQL a presentation that redeemed the code meanwhile leaves it just as spent.
    pub async fn spend(self) -> Result<AuthorizationCode, StoreError> {
        let RedeemedCode {
            tenant,
            tx,
            code_hash,
            redeemed_at,
            mut code,
        } = self;
        match tx {
            Some(mut tx) => {
                unlink(tenant, &mut tx, &code_hash).await?;
                tenant.commit(tx).await?;
            }
            None => {
                sqlx::query(
                    "UPDATE authorization_codes SET redeemed_at = $1 \
                     WHERE tenant_id = $2 AND code_hash = $3 AND redeemed_at IS NULL",
                )
                .bind(redeemed_at)
                .bind(tenant.id_str())
                .bind(code_hash)
                .execute(tenant.pool())
                .await?;
            }
        }
        code.grant_id = None;
        Ok(code)
    }

    /// Records the grant (under the id the redemption names) and its first refresh token,
    /// reads the grant's user, and commits. When the user no longer exists the code is
    /// spent and no grant is written.
    pub async fn issue(
        self,
        grant: &NewGrant<'_>,
        refresh_token: Option<NewRefreshToken<'_>>,
        now: UnixTime,
    ) -> Result<Issuance, StoreError> {
        let RedeemedCode {
            tenant,
            tx,
            code_hash,
            redeemed_at,
            ..
        } = self;
        let Some(mut tx) = tx else {
            return issue_in_one_statement(
                tenant,
                &code_hash,
                redeemed_at,
                grant,
                refresh_token,
                now,
            )
            .await;
        };
        let user = insert_grant_of_user(tenant, &mut tx, grant, now).await?;
        match (&user, refresh_token) {
            (Some(_), Some(token)) => {
                insert_refresh_token(
                    tenant.in_tx(&mut tx),
                    tenant.id_str(),
                    grant.grant_id,
                    token,
                    now,
                )
                .await?
            }
            (Some(_), None) => {}
            (None, _) => unlink(tenant, &mut tx, &code_hash).await?,
        }
        tenant.commit(tx).await?;
        Ok(match user {
            Some(user) => Issuance::Issued(Box::new(user)),
            None => Issuance::UserGone,
        })
    }
}

/// SQLite's grant, inserted only if its user exists, which it returns (in the statement
/// that inserts, not one of its own: each statement is a trip to SQLite's thread).
async fn insert_grant_of_user(
    tenant: TenantStore<'_>,
    tx: &mut Transaction,
    grant: &NewGrant<'_>,
    now: UnixTime,
) -> Result<Option<User>, StoreError> {
    let user = |column: &str| {
        format!(
            "(SELECT u.{column} FROM users u \
              WHERE u.tenant_id = grants.tenant_id AND u.user_id = grants.user_id)"
        )
    };
    let row: Option<UserRow> = sqlx::query_as(&format!(
        "{INSERT_GRANT} SELECT $1, $2, $3, user_id, $5, $6, $7, $8 FROM users \
         WHERE tenant_id = $1 AND user_id = $4 \
         RETURNING user_id, {}, {}, {}, {}, {}",
        user("username"),
        user("password_hash"),
        user("name"),
        user("email"),
        user("created_at"),
    ))
    .bind(tenant.id_str())
    .bind(grant.grant_id)
    .bind(grant.client_id)
    .bind(grant.user_id)
    .bind(grant.organization_guid)
    .bind(grant.scope)
    .bind(grant.auth_time)
    .bind(now)
    .fetch_optional(tenant.in_tx(tx))
    .await?;
    Ok(row.map(user_from_row))
}

/// Clears the grant the redemption named, for a redemption that issues none.
async fn unlink(
    tenant: TenantStore<'_>,
    tx: &mut Transaction,
    code_hash: &[u8],
) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE authorization_codes SET grant_id = NULL WHERE tenant_id = $1 AND code_hash = $2",
    )
    .bind(tenant.id_str())
    .bind(code_hash.to_vec())
    .execute(tenant.in_tx(tx))
    .await?;
    Ok(())
}

/// The user columns of PostgreSQL's issue: all `None` when the redemption named no grant.
type IssuedUserRow = (
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<i64>,
);

/// PostgreSQL's redemption and issue as one statement. The redemption names the grant only
/// if the user exists, and the grant and its refresh token are inserted only from what the
/// redemption returned, so a lost race writes nothing and a deleted user leaves the code
/// spent without a grant, as the transaction of the SQLite path does. Two issues of one
/// code serialize on its row: the loser re-checks `redeemed_at` and matches nothing.
async fn issue_in_one_statement(
    tenant: TenantStore<'_>,
    code_hash: &[u8],
    redeemed_at: UnixTime,
    grant: &NewGrant<'_>,
    refresh_token: Option<NewRefreshToken<'_>>,
    now: UnixTime,
) -> Result<Issuance, StoreError> {
    let row: Option<IssuedUserRow> = sqlx::query_as(&format!(
        "WITH redeemed AS ( \
           UPDATE authorization_codes SET redeemed_at = $1, \
             grant_id = (SELECT $4 FROM users WHERE tenant_id = $2 AND user_id = $5) \
           WHERE tenant_id = $2 AND code_hash = $3 AND redeemed_at IS NULL \
           RETURNING grant_id), \
         issued AS ( \
           {INSERT_GRANT} SELECT $2, grant_id, $6, $5, $7, $8, $9, $10 \
           FROM redeemed WHERE grant_id IS NOT NULL \
           RETURNING grant_id), \
         first_refresh_token AS ( \
           {INSERT_REFRESH_TOKEN} SELECT $2, $11, grant_id, $10, $12 \
           FROM issued WHERE $11 IS NOT NULL) \
         SELECT u.username, u.password_hash, u.name, u.email, u.created_at \
         FROM redeemed r LEFT JOIN users u \
           ON r.grant_id IS NOT NULL AND u.tenant_id = $2 AND u.user_id = $5"
    ))
    .bind(redeemed_at)
    .bind(tenant.id_str())
    .bind(code_hash.to_vec())
    .bind(grant.grant_id)
    .bind(grant.user_id)
    .bind(grant.client_id)
    .bind(grant.organization_guid)
    .bind(grant.scope)
    .bind(grant.auth_time)
    .bind(now)
    .bind(refresh_token.map(|token| token.token_hash.to_vec()))
    .bind(refresh_token.map(|token| token.expires_at))
    .fetch_optional(tenant.pool())
    .await?;
    Ok(match row {
        Some((Some(username), Some(password_hash), Some(name), Some(email), Some(created_at))) => {
            Issuance::Issued(Box::new(User {
                user_id: grant.user_id.to_owned(),
                username,
                password_hash,
                name,
                email,
                created_at,
            }))
        }
        Some(_) => Issuance::UserGone,
        // Redeemed since it was read: a new statement sees what the winner committed.
        None => match tenant.find_authorization_code(code_hash).await? {
            Some(code) => Issuance::Replayed {
                grant_id: code.grant_id,
            },
            None => Issuance::UserGone,
        },
    })
}
