//! `POST /account/change-password`: a signed-in user changes their own password. The current
//! password is required and checked as at sign-in, under the same throttle (a session must
//! not become a way to guess it); the new one twice, against the tenant's policy (NIST SP
//! 800-63B §5.1.1.2). Then, in one transaction, the hash is replaced, every other session of
//! the user ends and every grant is revoked; this browser's session stays.

use std::net::IpAddr;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use jose::UnixTime;
use secrecy::SecretString;
use store::SignedOut;
use subtle::ConstantTimeEq;

use super::form::AccountForm;
use super::{page, see_other, Notice, Visitor};
use crate::client_address::ClientAddress;
use crate::error::OAuthError;
use crate::events::Event;
use crate::pages::PageError;
use crate::password_policy;
use crate::signin::check::{check_throttled, hash_bounded, Checked};
use crate::signin::throttle_message;
use crate::state::OAuthState;
use crate::throttle::Verdict;
use crate::username::Username;

/// The three fields of the form.
struct Change<'a> {
    current: Option<&'a str>,
    new: Option<&'a str>,
    again: Option<&'a str>,
}

/// Why the password was not changed: the page again with this status and message.
struct Refusal(StatusCode, String);

impl Refusal {
    fn retry(message: &str) -> Refusal {
        Refusal(StatusCode::OK, message.to_owned())
    }
}

pub async fn post_change_password(
    State(state): State<OAuthState>,
    ClientAddress(address): ClientAddress,
    AccountForm {
        params,
        visitor,
        now,
    }: AccountForm,
) -> Result<Response, PageError> {
    let field = |name| params.single(name).ok().flatten();
    let change = Change {
        current: field("current_password"),
        new: field("new_password"),
        again: field("confirmation"),
    };
    match change_password(&state, &visitor, change, address, now).await? {
        Ok(_) => Ok(see_other(&visitor.tenant, Some(Notice::PasswordChanged))),
        Err(Refusal(status, message)) => {
            Ok(page::render(&state, &visitor, None, Some(&message), status, now).await?)
        }
    }
}

/// Changes the password, or says why not. What the change ended is in the audit trail.
async fn change_password(
    state: &OAuthState,
    visitor: &Visitor,
    change: Change<'_>,
    address: IpAddr,
    now: UnixTime,
) -> Result<Result<SignedOut, Refusal>, OAuthError> {
    let (Some(current), Some(new), Some(again)) = (change.current, change.new, change.again) else {
        return Ok(Err(Refusal::retry(
            "Enter your current password, and your new password twice.",
        )));
    };
    if !bool::from(new.as_bytes().ct_eq(again.as_bytes())) {
        return Ok(Err(Refusal::retry(
            "The two new passwords differ. Enter the same new password twice.",
        )));
    }
    let user = &visitor.user;
    let records = state.store.tenant(&visitor.tenant);
    let new = SecretString::from(new.to_owned());
    if let Err(refusal) =
        password_policy::check_for_tenant(&records, &new, &user.username, &user.email).await?
    {
        return Ok(Err(Refusal::retry(refusal.message())));
    }
    let current = SecretString::from(current.to_owned());
    let username = Username::parse(&user.username)?;
    let shown_address = address.to_string();
    let address_text = shown_address.as_str();
    let verified = match check_throttled(state, &records, &username, current, address, now).await? {
        // The store replaces the hash only while it is still the one verified here, and
        // only for this user.
        Checked::Valid { user, .. } => user,
        Checked::Wrong { why, verdict } => {
            let refusal = wrong_password(state, visitor, address_text, why, verdict, now).await;
            return Ok(Err(refusal));
        }
        Checked::Refused { message, first } => {
            tracing::warn!(tenant = %visitor.tenant, sub = %user.user_id, "account: password check refused by the throttle");
            let event = Event::PasswordCheckRefused {
                user_id: &user.user_id,
                address: address_text,
                audited: first,
            };
            state.record(&visitor.tenant, event, now).await;
            return Ok(Err(Refusal(StatusCode::TOO_MANY_REQUESTS, message)));
        }
    };
    let new_hash = hash_bounded(state, new).await?;
    let Some(ended) = records
        .change_account_password(
            &user.user_id,
            &verified.password_hash,
            &new_hash,
            &visitor.session_hash,
            now,
        )
        .await?
    else {
        return Ok(Err(Refusal(
            StatusCode::CONFLICT,
            "Your password or your sign-in changed in the meantime, so nothing was changed. \
             Open your account page again."
                .to_owned(),
        )));
    };
    tracing::info!(tenant = %visitor.tenant, sub = %user.user_id, sessions = ended.sessions, grants = ended.grants, "account: password changed");
    let event = Event::PasswordChanged {
        user_id: &user.user_id,
        address: address_text,
        sessions: ended.sessions,
        grants: ended.grants,
    };
    state.record(&visitor.tenant, event, now).await;
    Ok(Ok(ended))
}

/// The current password was wrong: audited, and counted toward the sign-in lock.
async fn wrong_password(
    state: &OAuthState,
    visitor: &Visitor,
    address: &str,
    why: &str,
    verdict: Verdict,
    now: UnixTime,
) -> Refusal {
    let user_id = &visitor.user.user_id;
    tracing::warn!(tenant = %visitor.tenant, sub = %user_id, "account: wrong current password");
    let locked = matches!(verdict, Verdict::Locked(_));
    let event = Event::PasswordCheckFailed {
        user_id,
        address,
        why,
        locked,
    };
    state.record(&visitor.tenant, event, now).await;
    let mut message = "Your current password is incorrect.".to_owned();
    if let (true, Some(lock)) = (locked, throttle_message(verdict)) {
        message.push(' ');
        message.push_str(&lock);
    }
    Refusal::retry(&message)
}
