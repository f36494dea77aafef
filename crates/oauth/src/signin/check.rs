//! A password checked against an account under the sign-in throttle: by sign-in, and by the
//! account page before a password change, so that form counts toward the same lock and
//! cannot be used to guess. Argon2id runs off the async workers, bounded by the server's
//! permits.

use std::net::IpAddr;

use jose::UnixTime;
use secrecy::SecretString;
use store::{FailureSubject, TenantStore};

use super::attempt::Attempt;
use crate::error::OAuthError;
use crate::password;
use crate::state::OAuthState;
use crate::throttle::{self, Verdict};
use crate::username::Username;

/// What a throttled check found.
pub(crate) enum Checked {
    /// The password is this user's.
    Valid(store::User),
    /// Not checked: the account or the address is locked or waiting, or busy.
    Refused {
        message: String,
        /// The first refusal since the count's last failure: the one the audit trail keeps.
        first: bool,
    },
    /// Checked and refused; `why` is for the audit trail only, `verdict` what the failure
    /// leads to (`Locked` when it locked the account or the address).
    Wrong { why: &'static str, verdict: Verdict },
}

/// Reserves the attempt's places in the account's and the address's counts, checks the
/// password, and ends the attempt as a success or a failure.
pub(crate) async fn check_throttled(
    state: &OAuthState,
    tenant: &TenantStore<'_>,
    username: &Username,
    password: SecretString,
    address: IpAddr,
    now: UnixTime,
) -> Result<Checked, OAuthError> {
    let address_key = throttle::address_key(address);
    let account = FailureSubject::Account(username.as_str());
    let from_address = FailureSubject::Address(&address_key);
    let policy = state.signin.throttle;
    let attempt = match Attempt::reserve(tenant, policy, account, from_address, now).await? {
        Ok(attempt) => attempt,
        Err(refused) => {
            return Ok(Checked::Refused {
                message: refused.message,
                first: refused.first,
            })
        }
    };
    let found = match check_password(state, tenant, username, password).await {
        Ok(found) => found,
        Err(error) => {
            attempt.abandon().await;
            return Err(error);
        }
    };
    match found {
        Found::Valid(user) => {
            attempt.succeeded().await?;
            Ok(Checked::Valid(user))
        }
        Found::Refused(why) => {
            let verdict = attempt.failed().await?;
            Ok(Checked::Wrong { why, verdict })
        }
    }
}

/// What checking a username and password found.
enum Found {
    Valid(store::User),
    /// Why not, for the audit trail only.
    Refused(&'static str),
}

/// The user whose password this is, or why sign-in is refused. Every refusal costs one
/// Argon2id verification, as a success does: an unknown user, a disabled one and one without
/// a usable password are checked against the dummy hash, so timing tells them apart from a
/// wrong password no more than the page does.
async fn check_password(
    state: &OAuthState,
    tenant: &TenantStore<'_>,
    username: &Username,
    password: SecretString,
) -> Result<Found, OAuthError> {
    let found = tenant
        .find_admin_user_by_username(username.as_str())
        .await?;
    let refusal = match &found {
        None => Some("wrong username or password"),
        Some(user) if user.disabled_at.is_some() => Some("account disabled"),
        Some(user) if !password::is_usable(&user.user.password_hash) => Some("no password set"),
        Some(_) => None,
    };
    let hash = match (&found, refusal) {
        (Some(user), None) => user.user.password_hash.clone(),
        _ => state.signin.dummy_hash.to_string(),
    };
    let matches = verify_bounded(state, password, hash).await?;
    Ok(match (found, refusal) {
        (_, Some(why)) => Found::Refused(why),
        (Some(user), None) if matches => Found::Valid(user.user),
        _ => Found::Refused("wrong username or password"),
    })
}

/// Argon2id on a blocking thread, with at most as many at once as the server allows, so a
/// burst of sign-ins queues instead of exhausting memory and cores.
async fn verify_bounded(
    state: &OAuthState,
    password: SecretString,
    hash: String,
) -> Result<bool, OAuthError> {
    let _permit = state
        .signin
        .password_permits
        .acquire()
        .await
        .map_err(|_| OAuthError::Blocking)?;
    let span = tracing::Span::current();
    tokio::task::spawn_blocking(move || {
        span.in_scope(|| password::verify_password(&password, &hash))
    })
    .await
    .map_err(|_| OAuthError::Blocking)?
}

/// A new password's Argon2id hash, with at most as many at once as sign-in allows (each
/// holds 19 MiB and a core).
pub(crate) async fn hash_bounded(
    state: &OAuthState,
    password: SecretString,
) -> Result<String, OAuthError> {
    let _permit = state
        .signin
        .password_permits
        .acquire()
        .await
        .map_err(|_| OAuthError::Blocking)?;
    password::hash_password(password, state.random.as_ref()).await
}
