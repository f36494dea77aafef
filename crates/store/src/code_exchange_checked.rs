//! A code exchange in one trip, for a client the caller authenticated from a copy it kept:
//! the statement that redeems the code also makes the token endpoint's checks of it (RFC
//! 6749 §4.1.3, RFC 7636 §4.6) and of the client's state, so nothing is read before it.
//!
//! It redeems only a code that passes every check: unused, of this client, for this
//! redirect URI, unexpired, with this PKCE challenge, the client enabled and in the state the
//! copy names. Anything else matches nothing and spends nothing, and the caller takes the
//! exchange's other path ([`TenantStore::present_code`]), which reads the code and decides the
//! refusal (a failed check spends the code there, a replay revokes). The grant, its first
//! refresh token and the user are written and read in the same commit as the redemption, as
//! [`crate::RedeemedCode::issue`] does: on PostgreSQL one statement of data-modifying CTEs,
//! on SQLite one batch that opens and commits its own transaction.

use std::sync::LazyLock;

use crate::code_exchange::member_grant_id;
use crate::codes::AuthorizationCode;
use crate::db::Backend;
use crate::error::StoreError;
use crate::field::positional::positional;
use crate::grants::{NewRefreshToken, INSERT_GRANT, INSERT_REFRESH_TOKEN};
use crate::revision::Revision;
use crate::sqlite_group_commit::Durable;
use crate::tenant::TenantStore;
use crate::users::User;
use crate::UnixTime;

/// A code as presented at the token endpoint, with what its redemption will record.
#[derive(Clone, Copy, Debug)]
pub struct PresentedCode<'a> {
    pub code_hash: &'a [u8],
    /// The authenticated client, and the state of the copy it was authenticated from.
    pub client_id: &'a str,
    pub client_state: Revision,
    pub redirect_uri: &'a str,
    /// The S256 of the request's `code_verifier` (RFC 7636 §4.6), which must be the code's
    /// challenge.
    pub code_challenge: &'a str,
    /// The id the grant gets.
    pub grant_id: &'a str,
    /// The grant's DPoP key (RFC 9449 §5), if its refresh tokens are bound to one.
    pub dpop_jkt: Option<&'a str>,
    /// The grant's first refresh token: stored only when the code's scope holds
    /// `offline_access`.
    pub refresh_token: NewRefreshToken<'a>,
}

/// What [`TenantStore::exchange_checked_code`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum CheckedExchange {
    /// The code is redeemed under the presentation's grant id and the grant stored; its
    /// first refresh token too when `refresh_token_stored`.
    Issued {
        code: Box<AuthorizationCode>,
        user: Box<User>,
        refresh_token_stored: bool,
    },
    /// The code is spent, without a grant: its user no longer exists, is disabled, or is no
    /// longer a member of the code's organization.
    UserGone,
    /// Nothing matched, nothing is spent: the code is unknown, used, fails a check, or the
    /// client is no longer as its copy says. The exchange's other path decides which.
    NotRedeemed,
}

/// The returned row: the code as redeemed, whether the refresh token was stored (its scope
/// holds `offline_access`), and the user, all `NULL` when the redemption named no grant.
#[derive(sqlx::FromRow)]
pub(crate) struct CheckedRow {
    #[sqlx(flatten)]
    pub(crate) code: AuthorizationCode,
    pub(crate) offline: i64,
    username: Option<String>,
    password_hash: Option<String>,
    name: Option<String>,
    email: Option<String>,
    user_created_at: Option<i64>,
}

positional!(CheckedRow {
    code: AuthorizationCode,
    offline,
    username,
    password_hash,
    name,
    email,
    user_created_at,
});

impl TenantStore<'_> {
    /// Redeems a code that passes every check of the token endpoint, records its grant (and
    /// the grant's first refresh token, for `offline_access`) and reads the user, in one
    /// trip; [`CheckedExchange::NotRedeemed`], having spent nothing, for any other code.
    pub async fn exchange_checked_code(
        &self,
        presented: &PresentedCode<'_>,
        now: UnixTime,
    ) -> Result<CheckedExchange, StoreError> {
        let (exchange, durable) = self.exchange_checked_code_pending(presented, now).await?;
        durable.wait().await?;
        Ok(exchange)
    }

    /// [`TenantStore::exchange_checked_code`], returned before the grant is committed on
    /// SQLite (`sqlite_group_commit.rs`): sign the tokens, then wait for the [`Durable`]
    /// before sending them. Any other outcome than [`CheckedExchange::Issued`] is
    /// committed already.
    pub async fn exchange_checked_code_pending(
        &self,
        presented: &PresentedCode<'_>,
        now: UnixTime,
    ) -> Result<(CheckedExchange, Durable), StoreError> {
        let exchange = sqlx::query_as(match self.backend() {
            Backend::Postgres => &POSTGRES_CHECKED_EXCHANGE,
            Backend::Sqlite => &crate::sqlite_exchange::READ,
        })
        // Borrowed: an owned value is copied again into the arguments, two allocations each.
        .bind(now)
        .bind(self.id_str())
        .bind(presented.code_hash)
        .bind(presented.grant_id)
        .bind(presented.client_id)
        .bind(presented.redirect_uri)
        .bind(presented.code_challenge)
        .bind(presented.client_state.created_at)
        .bind(presented.client_state.revision)
        .bind(presented.refresh_token.token_hash)
        .bind(presented.refresh_token.expires_at)
        .bind(presented.dpop_jkt);
        let (rows, durable): (Vec<CheckedRow>, Durable) = match self.backend() {
            Backend::Postgres => (exchange.fetch_all(self.pool()).await?, Durable::done()),
            Backend::Sqlite => {
                let refresh_token = (
                    presented.refresh_token.token_hash,
                    presented.refresh_token.expires_at,
                );
                match self
                    .exchange_on_sqlite(
                        exchange,
                        refresh_token,
                        presented.dpop_jkt,
                        now,
                        presented.code_hash,
                    )
                    .await?
                {
                    Some((row, durable)) => (vec![row], durable),
                    None => (Vec::new(), Durable::done()),
                }
            }
        };
        let Some(row) = rows.into_iter().next() else {
            return Ok((CheckedExchange::NotRedeemed, durable));
        };
        let exchange = match row {
            CheckedRow {
                code,
                offline,
                username: Some(username),
                password_hash: Some(password_hash),
                name: Some(name),
                email: Some(email),
                user_created_at: Some(created_at),
            } if code.grant_id.as_deref() == Some(presented.grant_id) => CheckedExchange::Issued {
                user: Box::new(User {
                    user_id: code.user_id.clone(),
                    username,
                    password_hash,
                    name,
                    email,
                    created_at,
                }),
                code: Box::new(code),
                refresh_token_stored: offline != 0,
            },
            _ => CheckedExchange::UserGone,
        };
        if !matches!(exchange, CheckedExchange::Issued { .. }) {
            // Answered with an error at once: the code is spent before that.
            durable.wait().await?;
            return Ok((exchange, Durable::done()));
        }
        Ok((exchange, durable))
    }
}

/// The redemption's condition, on the code's row: everything the token endpoint checks of a
/// code, and the client as its copy was read, enabled.
pub(crate) const CODE_PASSES: &str = "tenant_id = $2 AND code_hash = $3 AND redeemed_at IS NULL \
     AND client_id = $5 AND redirect_uri = $6 AND code_challenge = $7 AND expires_at > $1 \
     AND EXISTS (SELECT 1 FROM clients c WHERE c.tenant_id = $2 AND c.client_id = $5 \
       AND c.created_at = $8 AND c.revision = $9 AND c.disabled_at IS NULL)";

const CODE_COLUMNS: &str = "client_id, redirect_uri, user_id, organization_guid, scope, nonce, \
     code_challenge, auth_time, created_at, expires_at, redeemed_at, grant_id, sid, amr";

/// `offline_access` among a space-delimited scope's names: written once, so that the refresh
/// token is stored exactly when the caller is told it was.
pub(crate) fn holds_offline_access(scope: &str, backend: Backend) -> String {
    match backend {
        Backend::Postgres => format!("strpos(' ' || {scope} || ' ', ' offline_access ') > 0"),
        Backend::Sqlite => format!("instr(' ' || {scope} || ' ', ' offline_access ') > 0"),
    }
}

/// The grant id the redemption records ([`member_grant_id`]), for the user and organization
/// of the code's own row.
pub(crate) fn redeemed_grant_id() -> String {
    member_grant_id(
        "$4",
        "$2",
        "authorization_codes.user_id",
        "authorization_codes.organization_guid",
        "$5",
    )
}

/// PostgreSQL's: the redemption, the grant and its first refresh token in data-modifying
/// CTEs; the one row holds the code as redeemed and the user (`NULL` when no grant was
/// named), and there is no row when the code did not pass.
static POSTGRES_CHECKED_EXCHANGE: LazyLock<String> = LazyLock::new(|| {
    let member_grant_id = redeemed_grant_id();
    let offline = |scope| holds_offline_access(scope, Backend::Postgres);
    format!(
        "WITH redeemed AS ( \
           UPDATE authorization_codes SET redeemed_at = $1, grant_id = {member_grant_id} \
           WHERE {CODE_PASSES} \
           RETURNING {CODE_COLUMNS}), \
         issued AS ( \
           {INSERT_GRANT} SELECT $2, grant_id, $5, user_id, organization_guid, scope, auth_time, \
             $1, sid, amr, $12 \
           FROM redeemed WHERE grant_id IS NOT NULL \
           RETURNING grant_id, scope), \
         first_refresh_token AS ( \
           {INSERT_REFRESH_TOKEN} SELECT $2, $10, grant_id, $1, $11 \
           FROM issued WHERE {issued_offline}) \
         SELECT r.client_id, r.redirect_uri, r.user_id, r.organization_guid, r.scope, r.nonce, \
           r.code_challenge, r.auth_time, r.created_at, r.expires_at, r.redeemed_at, \
           r.grant_id, r.sid, r.amr, \
           CAST(CASE WHEN r.grant_id IS NOT NULL AND {redeemed_offline} THEN 1 ELSE 0 END \
             AS BIGINT) AS offline, \
           u.username, u.password_hash, u.name, u.email, u.created_at AS user_created_at \
         FROM redeemed r LEFT JOIN users u \
           ON r.grant_id IS NOT NULL AND u.tenant_id = $2 AND u.user_id = r.user_id",
        issued_offline = offline("scope"),
        redeemed_offline = offline("r.scope"),
    )
});
