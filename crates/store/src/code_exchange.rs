//! Redeeming an authorization code and recording the grant it issues, in one transaction
//! (RFC 6749 §4.1.2: a code is used once). The redemption is a conditional update, so two
//! nodes presenting one code can never both win; the grant, its first refresh token and the
//! user its tokens describe are written and read before the same commit, so a database lost
//! on the way leaves the code unspent and the client free to retry, never spent without tokens.

use crate::codes::AuthorizationCode;
use crate::error::StoreError;
use crate::grants::{insert_grant, NewGrant, NewRefreshToken};
use crate::tenant::{TenantStore, Transaction};
use crate::users::User;
use crate::UnixTime;

/// What presenting a code found.
#[derive(Debug)]
pub enum CodeExchange<'a> {
    /// First use: the code, marked redeemed in a transaction still open.
    Redeemed(Box<RedeemedCode<'a>>),
    /// Used before: the grant its first use created, if any, to revoke (RFC 6749 §10.5).
    Replayed {
        grant_id: Option<String>,
    },
    Unknown,
}

/// A code redeemed in an open transaction. Dropping it rolls the redemption back (the code
/// stays usable); [`RedeemedCode::spend`] and [`RedeemedCode::issue`] commit.
#[derive(Debug)]
pub struct RedeemedCode<'a> {
    tenant: TenantStore<'a>,
    tx: Transaction,
    code_hash: Vec<u8>,
    code: AuthorizationCode,
}

impl TenantStore<'_> {
    /// Marks a code redeemed, once, naming the grant it will issue (so the link costs no
    /// statement of its own), and leaves the transaction open for that grant.
    pub async fn begin_code_exchange(
        &self,
        code_hash: &[u8],
        grant_id: &str,
        now: UnixTime,
    ) -> Result<CodeExchange<'_>, StoreError> {
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
                tx,
                code_hash: code_hash.to_vec(),
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
}

impl RedeemedCode<'_> {
    pub fn code(&self) -> &AuthorizationCode {
        &self.code
    }

    /// Commits the redemption alone: a code that failed a check is used up all the same, so
    /// it cannot be tried again with other parameters. It issued no grant, so it names none.
    pub async fn spend(mut self) -> Result<AuthorizationCode, StoreError> {
        self.unlink().await?;
        self.tenant.commit(self.tx).await?;
        Ok(self.code)
    }

    /// Records the grant (under the id the redemption named) and its first refresh token,
    /// reads the grant's user, and commits. `None` when the user no longer exists: the code
    /// is then spent and no grant is written.
    pub async fn issue(
        mut self,
        grant: &NewGrant<'_>,
        refresh_token: Option<NewRefreshToken<'_>>,
        now: UnixTime,
    ) -> Result<Option<User>, StoreError> {
        let tenant = self.tenant;
        let user = tenant
            .find_user_in(tenant.in_tx(&mut self.tx), grant.user_id)
            .await?;
        match user {
            Some(_) => insert_grant(tenant, &mut self.tx, grant, refresh_token, now).await?,
            None => self.unlink().await?,
        }
        tenant.commit(self.tx).await?;
        Ok(user)
    }

    /// Clears the grant the redemption named, for a redemption that issues none.
    async fn unlink(&mut self) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE authorization_codes SET grant_id = NULL WHERE tenant_id = $1 AND code_hash = $2",
        )
        .bind(self.tenant.id_str())
        .bind(self.code_hash.clone())
        .execute(self.tenant.in_tx(&mut self.tx))
        .await?;
        self.code.grant_id = None;
        Ok(())
    }
}
