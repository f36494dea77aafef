//! Authorization codes: stored as the hash of their random part, bound to everything the
//! token endpoint must check.

use crate::error::{Entity, StoreError};
use crate::field::positional::positional;
use crate::tenant::TenantStore;
use crate::UnixTime;

#[derive(Clone, Debug)]
pub struct NewAuthorizationCode<'a> {
    pub code_hash: &'a [u8],
    pub client_id: &'a str,
    pub redirect_uri: &'a str,
    pub user_id: &'a str,
    pub organization_guid: &'a str,
    /// The approved scopes, space-delimited.
    pub scope: &'a str,
    pub nonce: Option<&'a str>,
    pub code_challenge: &'a str,
    pub auth_time: UnixTime,
    pub expires_at: UnixTime,
    /// The browser session's `sid`, carried to the grant and its ID tokens.
    pub sid: Option<&'a str>,
    /// The session's RFC 8176 `amr` when the code was issued.
    pub amr: Option<&'a str>,
}

/// A stored code, as the token endpoint reads it.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct AuthorizationCode {
    pub client_id: String,
    pub redirect_uri: String,
    pub user_id: String,
    pub organization_guid: String,
    pub scope: String,
    pub nonce: Option<String>,
    pub code_challenge: String,
    pub auth_time: i64,
    pub created_at: i64,
    pub expires_at: i64,
    pub redeemed_at: Option<i64>,
    pub grant_id: Option<String>,
    pub sid: Option<String>,
    pub amr: Option<String>,
}

// SQLite's code exchange reads its one row by position (`sqlite_exchange.rs`).
positional!(AuthorizationCode {
    client_id,
    redirect_uri,
    user_id,
    organization_guid,
    scope,
    nonce,
    code_challenge,
    auth_time,
    created_at,
    expires_at,
    redeemed_at,
    grant_id,
    sid,
    amr,
});

impl TenantStore<'_> {
    pub async fn find_authorization_code(
        &self,
        code_hash: &[u8],
    ) -> Result<Option<AuthorizationCode>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT client_id, redirect_uri, user_id, organization_guid, scope, nonce, \
             code_challenge, auth_time, created_at, expires_at, redeemed_at, grant_id, sid, amr \
             FROM authorization_codes WHERE tenant_id = $1 AND code_hash = $2",
        )
        .bind(self.id_str())
        .bind(code_hash.to_vec())
        .fetch_optional(self.pool())
        .await?)
    }

    pub async fn create_authorization_code(
        &self,
        code: &NewAuthorizationCode<'_>,
        now: UnixTime,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO authorization_codes (tenant_id, code_hash, client_id, redirect_uri, \
             user_id, organization_guid, scope, nonce, code_challenge, auth_time, created_at, \
             expires_at, sid, amr) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
        )
        .bind(self.id_str())
        .bind(code.code_hash.to_vec())
        .bind(code.client_id)
        .bind(code.redirect_uri)
        .bind(code.user_id)
        .bind(code.organization_guid)
        .bind(code.scope)
        .bind(code.nonce)
        .bind(code.code_challenge)
        .bind(code.auth_time)
        .bind(now)
        .bind(code.expires_at)
        .bind(code.sid)
        .bind(code.amr)
        .execute(self.pool())
        .await
        .map_err(|e| StoreError::from_sqlx(e, Entity::AuthorizationCode))?;
        Ok(())
    }
}
