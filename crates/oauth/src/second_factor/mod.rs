//! The second step of a sign-in, `POST /oauth/signin/second-factor`: after the password,
//! a user who has a second factor proves it (a TOTP code, a recovery code or a passkey), and
//! a user of a tenant that requires one and has none sets up an authenticator app first.
//! A request whose `acr_values` asks for `urn:fieldauth:acr:mfa` comes here too, even from a
//! session that proved a factor before. Wrong codes are failed sign-ins of the account
//! under the same throttle as passwords. Once done, the step goes on to the consent of the
//! pending authorization request, or to the account page.

pub(crate) mod page;
mod step;

use std::net::IpAddr;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use jose::UnixTime;

use crate::client_address::ClientAddress;
use crate::error::OAuthError;
use crate::events::Event;
use crate::mfa::{self, Factor};
use crate::pages::PageError;
use crate::params::{FormParams, Params};
use crate::session;
use crate::signin::check::{second_factor_throttled, FactorChecked};
use crate::signin::{record_signed_in, throttle_message};
use crate::state::OAuthState;
use crate::throttle::Verdict;
use page::StepMode;
pub(crate) use step::{show_step, Step};

pub async fn post_second_factor(
    State(state): State<OAuthState>,
    ClientAddress(address): ClientAddress,
    headers: HeaderMap,
    form: Result<FormParams, OAuthError>,
) -> Result<Response, PageError> {
    let FormParams(params) = form?;
    if params.first_repeated().is_some() {
        return Err(OAuthError::InvalidForm("a parameter is repeated").into());
    }
    let now = state.clock.now();
    let step = Step::load(&state, &params, &headers, now).await?;
    let response = match params.single("method").ok().flatten() {
        Some("totp") => verify(&state, &step, "totp", &params, address, now).await?,
        Some("recovery_code") => {
            verify(&state, &step, "recovery_code", &params, address, now).await?
        }
        Some("passkey") => verify(&state, &step, "passkey", &params, address, now).await?,
        Some("enroll_totp") => enroll(&state, &step, &params, address, now).await?,
        Some("continue") => step.proceed(&state, now).await?,
        _ => return Err(OAuthError::InvalidFlow("The form is incomplete or was altered.").into()),
    };
    Ok(response)
}

/// Checks the factor under the throttle; on success the session has proved it.
async fn verify(
    state: &OAuthState,
    step: &Step,
    method: &'static str,
    params: &Params,
    address: IpAddr,
    now: UnixTime,
) -> Result<Response, OAuthError> {
    let field = |name| params.single(name).ok().flatten().unwrap_or_default();
    let tenant = state.store.tenant(&step.tenant);
    let user_id = step.user.user_id.as_str();
    let check = async {
        Ok(match method {
            "totp" => mfa::totp::verify(state, &step.tenant, user_id, field("code"), now)
                .await?
                .then_some(Factor::Totp),
            "recovery_code" => {
                mfa::recovery_codes::redeem(state, &step.tenant, user_id, field("code"), now)
                    .await?
                    .then_some(Factor::RecoveryCode)
            }
            _ => mfa::passkeys::finish_authentication(
                state,
                &step.tenant,
                field("ceremony"),
                field("credential"),
                Some(user_id),
                now,
            )
            .await?
            .map(|verified| verified.factor),
        })
    };
    let shown_address = address.to_string();
    let checked =
        second_factor_throttled(state, &tenant, &step.user.username, address, now, check).await?;
    let factor = match checked {
        FactorChecked::Valid(factor) => factor,
        FactorChecked::Refused { message, first } => {
            tracing::warn!(tenant = %step.tenant, "second factor refused by the throttle");
            let event = Event::SignInRefused {
                username: &step.user.username,
                client_id: step.client_id(),
                address: &shown_address,
                audited: first,
            };
            state.record(&step.tenant, event, now).await;
            return step
                .show(state, Some(&message), StatusCode::TOO_MANY_REQUESTS)
                .await;
        }
        FactorChecked::Wrong { verdict } => {
            tracing::warn!(tenant = %step.tenant, "second factor wrong");
            let locked = matches!(verdict, Verdict::Locked(_));
            let event = Event::SecondFactorFailed {
                user_id,
                client_id: step.client_id(),
                address: &shown_address,
                method,
                locked,
            };
            state.record(&step.tenant, event, now).await;
            let message = match (method, locked) {
                (_, true) => format!(
                    "That did not work. {}",
                    throttle_message(verdict).unwrap_or_default()
                ),
                ("passkey", false) => "That passkey could not be verified. Try again, or use \
                                       another way."
                    .to_owned(),
                (_, false) => "That code is not right. Check it and try again.".to_owned(),
            };
            return step.show(state, Some(&message), StatusCode::OK).await;
        }
    };
    proved(state, step, factor, address, now).await?;
    step.proceed(state, now).await
}

/// Sets up an authenticator app for a user who has no second factor yet, under a policy
/// that asks for one; then shows the recovery codes once.
async fn enroll(
    state: &OAuthState,
    step: &Step,
    params: &Params,
    address: IpAddr,
    now: UnixTime,
) -> Result<Response, OAuthError> {
    // Only a user without any factor may set one up here, with the password alone: else
    // a stolen password would let a thief add their own authenticator.
    if !step.may_enroll(state).await? {
        return Err(OAuthError::InvalidFlow(
            "Two-step verification is already set up for this account. Sign in again.",
        ));
    }
    let code = params.single("code").ok().flatten().unwrap_or_default();
    let user_id = step.user.user_id.as_str();
    match mfa::totp::confirm_enrollment(state, &step.tenant, user_id, code, now).await? {
        Some(codes) => {
            proved(state, step, Factor::Totp, address, now).await?;
            Ok(step.render(&StepMode::RecoveryCodes { codes }, None, StatusCode::OK))
        }
        None => {
            let message = "That code is not right. Check the time on your device, and enter \
                           the code your app shows now.";
            step.show(state, Some(message), StatusCode::OK).await
        }
    }
}

/// Records a proved factor on the session, and audits it (and the sign-in it completes).
async fn proved(
    state: &OAuthState,
    step: &Step,
    factor: Factor,
    address: IpAddr,
    now: UnixTime,
) -> Result<(), OAuthError> {
    let amr = mfa::amr_with(&step.session.amr, factor);
    let tenant = state.store.tenant(&step.tenant);
    if !tenant
        .prove_second_factor(
            &step.session_hash,
            &amr,
            now,
            now + session::SESSION_LIFETIME,
        )
        .await?
    {
        return Err(OAuthError::InvalidFlow(
            "Your sign-in has ended. Sign in again.",
        ));
    }
    let shown_address = address.to_string();
    let event = Event::SecondFactorProved {
        user_id: &step.user.user_id,
        client_id: step.client_id(),
        address: &shown_address,
        factor,
    };
    state.record(&step.tenant, event, now).await;
    // A session that owed the factor is only now signed in.
    if step.session.factor_due.is_some() {
        let user_id = &step.user.user_id;
        record_signed_in(state, &step.tenant, user_id, step.client_id(), address, now).await;
    }
    Ok(())
}
