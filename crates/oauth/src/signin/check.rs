//! A password checked against an account under the sign-in throttle: by sign-in, and by the
//! account page before a password change, so that form counts toward the same lock and
//! cannot be used to guess. Argon2id runs off the async workers, bounded by the server's
//! permits.

use std::future::Future;
use std::net::IpAddr;
use std::sync::Arc;

use jose::UnixTime;
use secrecy::SecretString;
use store::{FailureSubject, MfaPolicy, SecondFactorStanding, TenantStore};

use super::attempt::Attempt;
use crate::error::OAuthError;
use crate::mfa::Factor;
use crate::password;
use crate::state::OAuthState;
use crate::throttle::{self, Verdict};
use crate::username::Username;

/// What a throttled check found.
pub(crate) enum Checked {
    /// The password is this user's; `standing` says whether a second factor is owed.
    Valid {
        user: store::User,
        standing: SecondFactorStanding,
    },
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
            let standing = match tenant.second_factor_standing(&user.user_id).await {
                Ok(standing) => standing,
                Err(error) => {
                    attempt.abandon().await;
                    return Err(error.into());
                }
            };
            attempt.succeeded(!owes_verification(standing)).await?;
            Ok(Checked::Valid { user, standing })
        }
        Found::Refused(why) => {
            let verdict = attempt.failed().await?;
            Ok(Checked::Wrong { why, verdict })
        }
    }
}

/// Whether a user in this standing must prove a second factor they have.
pub(crate) fn owes_verification(standing: SecondFactorStanding) -> bool {
    standing.policy != MfaPolicy::Off && standing.factors.any()
}

/// What a throttled second-factor check found.
pub(crate) enum FactorChecked {
    Valid(Factor),
    /// Not checked: the account or the address is locked or waiting, or busy.
    Refused {
        message: String,
        first: bool,
    },
    /// Checked and refused; what the failure leads to.
    Wrong {
        verdict: Verdict,
    },
}

/// A second factor checked under the same throttle as the password: a wrong code is a
/// failed sign-in of the account (and the address), and a right one completes the sign-in
/// and forgives the account's failures.
pub(crate) async fn second_factor_throttled<F>(
    state: &OAuthState,
    tenant: &TenantStore<'_>,
    username: &str,
    address: IpAddr,
    now: UnixTime,
    check: F,
) -> Result<FactorChecked, OAuthError>
where
    F: Future<Output = Result<Option<Factor>, OAuthError>>,
{
    let address_key = throttle::address_key(address);
    let account = FailureSubject::Account(username);
    let from_address = FailureSubject::Address(&address_key);
    let policy = state.signin.throttle;
    let attempt = match Attempt::reserve(tenant, policy, account, from_address, now).await? {
        Ok(attempt) => attempt,
        Err(refused) => {
            return Ok(FactorChecked::Refused {
                message: refused.message,
                first: refused.first,
            })
        }
    };
    match check.await {
        Ok(Some(factor)) => {
            attempt.succeeded(true).await?;
            Ok(FactorChecked::Valid(factor))
        }
        Ok(None) => Ok(FactorChecked::Wrong {
            verdict: attempt.failed().await?,
        }),
        Err(error) => {
            attempt.abandon().await;
            Err(error)
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
    let memory = Arc::clone(&state.signin.password_memory);
    tokio::task::spawn_blocking(move || {
        span.in_scope(|| password::verify_password_in(&password, &hash, &memory))
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
