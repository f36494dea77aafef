//! Pending authorization requests: created by GET /oauth/authorize, bound to the browser
//! that made them, updated at sign-in, and consumed once by the consent.

use crate::error::{Entity, StoreError};
use crate::tenant::TenantStore;
use crate::UnixTime;

#[derive(Clone, Debug)]
pub struct NewAuthorizationRequest<'a> {
    /// SHA-256 of the random handle the forms carry.
    pub request_hash: &'a [u8],
    pub client_id: &'a str,
    pub redirect_uri: &'a str,
    /// The requested scopes, space-delimited, already validated.
    pub scope: &'a str,
    pub state: &'a str,
    pub nonce: Option<&'a str>,
    pub code_challenge: &'a str,
    pub login_hint: Option<&'a str>,
    /// SHA-256 of the browser's cookie value: only that browser may continue the request.
    pub browser_hash: &'a [u8],
    pub csrf_hash: &'a [u8],
    /// The signed-in user when the browser's session may be used without signing in again.
    pub user_id: Option<&'a str>,
    pub auth_time: Option<UnixTime>,
    /// `acr_values` asked for `urn:fieldauth:acr:mfa`: a second factor proved after the
    /// request began is needed before consent.
    pub acr_mfa: bool,
    pub expires_at: UnixTime,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthorizationRequest {
    pub client_id: String,
    pub redirect_uri: String,
    pub scope: String,
    pub state: String,
    pub nonce: Option<String>,
    pub code_challenge: String,
    pub login_hint: Option<String>,
    pub browser_hash: Vec<u8>,
    pub csrf_hash: Vec<u8>,
    pub user_id: Option<String>,
    pub auth_time: Option<UnixTime>,
    pub acr_mfa: bool,
    pub created_at: UnixTime,
    pub expires_at: UnixTime,
    pub consumed_at: Option<UnixTime>,
}

const COLUMNS: &str = "client_id, redirect_uri, scope, state, nonce, code_challenge, login_hint, \
     browser_hash, csrf_hash, user_id, auth_time, acr_mfa, created_at, expires_at, consumed_at";

#[derive(sqlx::FromRow)]
struct Row {
    client_id: String,
    redirect_uri: String,
    scope: String,
    state: String,
    nonce: Option<String>,
    code_challenge: String,
    login_hint: Option<String>,
    browser_hash: Vec<u8>,
    csrf_hash: Vec<u8>,
    user_id: Option<String>,
    auth_time: Option<i64>,
    acr_mfa: i64,
    created_at: i64,
    expires_at: i64,
    consumed_at: Option<i64>,
}

impl From<Row> for AuthorizationRequest {
    fn from(r: Row) -> AuthorizationRequest {
        AuthorizationRequest {
            client_id: r.client_id,
            redirect_uri: r.redirect_uri,
            scope: r.scope,
            state: r.state,
            nonce: r.nonce,
            code_challenge: r.code_challenge,
            login_hint: r.login_hint,
            browser_hash: r.browser_hash,
            csrf_hash: r.csrf_hash,
            user_id: r.user_id,
            auth_time: r.auth_time,
            acr_mfa: r.acr_mfa != 0,
            created_at: r.created_at,
            expires_at: r.expires_at,
            consumed_at: r.consumed_at,
        }
    }
}

impl TenantStore<'_> {
    pub async fn create_authorization_request(
        &self,
        request: &NewAuthorizationRequest<'_>,
        now: UnixTime,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO authorization_requests (tenant_id, request_hash, client_id, redirect_uri, \
             scope, state, nonce, code_challenge, login_hint, browser_hash, csrf_hash, user_id, \
             auth_time, created_at, expires_at, acr_mfa) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
        )
        .bind(self.id_str())
        .bind(request.request_hash.to_vec())
        .bind(request.client_id)
        .bind(request.redirect_uri)
        .bind(request.scope)
        .bind(request.state)
        .bind(request.nonce)
        .bind(request.code_challenge)
        .bind(request.login_hint)
        .bind(request.browser_hash.to_vec())
        .bind(request.csrf_hash.to_vec())
        .bind(request.user_id)
        .bind(request.auth_time)
        .bind(now)
        .bind(request.expires_at)
        .bind(i64::from(request.acr_mfa))
        .execute(self.pool())
        .await
        .map_err(|e| match StoreError::is_foreign_key_violation(&e) {
            true => StoreError::NotFound(Entity::Client),
            false => StoreError::from(e),
        })?;
        Ok(())
    }

    /// The request, whatever its state; callers check expiry, consumption and binding.
    pub async fn find_authorization_request(
        &self,
        request_hash: &[u8],
    ) -> Result<Option<AuthorizationRequest>, StoreError> {
        let row: Option<Row> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM authorization_requests WHERE tenant_id = $1 AND request_hash = $2"
        ))
        .bind(self.id_str())
        .bind(request_hash.to_vec())
        .fetch_optional(self.pool())
        .await?;
        Ok(row.map(AuthorizationRequest::from))
    }

    /// Records a sign-in for the request and moves its binding to the new session's cookie.
    /// Only the browser bound to it may do so, only while it is pending: false otherwise.
    pub async fn record_signin(
        &self,
        request_hash: &[u8],
        old_browser_hash: &[u8],
        new_browser_hash: &[u8],
        user_id: &str,
        auth_time: UnixTime,
        now: UnixTime,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE authorization_requests SET browser_hash = $1, user_id = $2, auth_time = $3 \
             WHERE tenant_id = $4 AND request_hash = $5 AND browser_hash = $6 \
               AND consumed_at IS NULL AND expires_at > $7",
        )
        .bind(new_browser_hash.to_vec())
        .bind(user_id)
        .bind(auth_time)
        .bind(self.id_str())
        .bind(request_hash.to_vec())
        .bind(old_browser_hash.to_vec())
        .bind(now)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Marks the request used, in one conditional update so two submissions can never both
    /// succeed. Returns it only when it was pending, unexpired and bound to this browser.
    pub async fn consume_authorization_request(
        &self,
        request_hash: &[u8],
        browser_hash: &[u8],
        now: UnixTime,
    ) -> Result<Option<AuthorizationRequest>, StoreError> {
        let row: Option<Row> = sqlx::query_as(&format!(
            "UPDATE authorization_requests SET consumed_at = $1 \
             WHERE tenant_id = $2 AND request_hash = $3 AND browser_hash = $4 \
               AND consumed_at IS NULL AND expires_at > $1 \
             RETURNING {COLUMNS}"
        ))
        .bind(now)
        .bind(self.id_str())
        .bind(request_hash.to_vec())
        .bind(browser_hash.to_vec())
        .fetch_optional(self.pool())
        .await?;
        Ok(row.map(AuthorizationRequest::from))
    }
}
