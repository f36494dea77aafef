//! The account page's authenticator app: set one up (`POST /account/totp/setup` makes the
//! key, `GET` shows it until a first code confirms it at `POST /account/totp/confirm`, which
//! shows the recovery codes once), and remove it (`POST /account/totp/remove`, with the
//! current password, checked under the sign-in throttle as for a password change).

use std::net::IpAddr;

use askama::Template;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use jose::UnixTime;
use secrecy::SecretString;
use store::{MfaPolicy, TotpStatus};

use super::factor_pages::{render_recovery_codes, render_totp_enrollment, EnrollmentForm, Hidden};
use super::form::AccountForm;
use super::{
    account_location, csrf, known_tenant, refused, see_other, see_other_to, signed_in,
    tenant_cookie, Notice, Visitor,
};
use crate::client_address::ClientAddress;
use crate::error::OAuthError;
use crate::events::Event;
use crate::mfa::recovery_codes;
use crate::mfa::totp::{self, Enrollment};
use crate::pages::{self, FormTarget, PageError};
use crate::params::Params;
use crate::paths;
use crate::signin::check::{check_throttled, Checked};
use crate::signin::throttle_message;
use crate::state::OAuthState;
use crate::throttle::Verdict;
use crate::username::Username;

/// What the account page says of the user's second factor.
pub(super) struct TwoStep {
    /// A confirmed authenticator app.
    pub authenticator: bool,
    /// Any second factor (the app, or a passkey): recovery codes mean something.
    pub has_factor: bool,
    pub recovery_codes_left: i64,
    /// The tenant's policy offers second factors (not `off`).
    pub offered: bool,
}

pub(super) async fn two_step(state: &OAuthState, visitor: &Visitor) -> Result<TwoStep, OAuthError> {
    let records = state.store.tenant(&visitor.tenant);
    let user_id = &visitor.user.user_id;
    let standing = records.second_factor_standing(user_id).await?;
    Ok(TwoStep {
        authenticator: standing.factors.totp,
        has_factor: standing.factors.any(),
        recovery_codes_left: recovery_codes::remaining(state, &visitor.tenant, user_id).await?,
        offered: standing.policy != MfaPolicy::Off,
    })
}

/// `POST /account/totp/setup`: a new key, then the page that shows it (post/redirect/get).
pub async fn post_totp_setup(
    State(state): State<OAuthState>,
    AccountForm {
        params: _,
        visitor,
        now,
    }: AccountForm,
) -> Result<Response, PageError> {
    let records = state.store.tenant(&visitor.tenant);
    if records.mfa_policy().await.map_err(OAuthError::from)? == MfaPolicy::Off {
        return Ok(refused(
            "Not offered",
            "Two-step verification is turned off for your organization.",
        ));
    }
    let status = records.totp_status(&visitor.user.user_id).await;
    if let TotpStatus::Confirmed { .. } = status.map_err(OAuthError::from)? {
        return Ok(refused(
            "Already set up",
            "An authenticator app is already set up for your account. Remove it first to set \
             up another.",
        ));
    }
    totp::begin_enrollment(&state, &visitor.tenant, &visitor.user, now).await?;
    Ok(see_other_to(&setup_location(&visitor)))
}

/// `GET /account/totp/setup?tenant=T`: the key being set up; the account page when none is.
pub async fn get_totp_setup(
    State(state): State<OAuthState>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, PageError> {
    let params = Params::parse(query.as_deref().unwrap_or_default().as_bytes()).map_err(|_| {
        OAuthError::UntrustedRequest("The address's percent-encoding is not UTF-8.")
    })?;
    let tenant = known_tenant(&state, params.single("tenant").ok().flatten()).await?;
    let cookie = tenant_cookie(&state, &tenant, &headers);
    let Some(visitor) = signed_in(&state, &tenant, cookie, state.clock.now()).await? else {
        return Ok(see_other(&tenant, None));
    };
    match totp::pending_enrollment(&state, &visitor.tenant, &visitor.user).await? {
        Some(enrollment) => Ok(enrollment_page(&visitor, &enrollment, None)),
        None => Ok(see_other(&visitor.tenant, None)),
    }
}

/// `POST /account/totp/confirm`: the first code. Right: the recovery codes, shown once.
/// Wrong: the set-up page again, saying so.
pub async fn post_totp_confirm(
    State(state): State<OAuthState>,
    AccountForm {
        params,
        visitor,
        now,
    }: AccountForm,
) -> Result<Response, PageError> {
    let code = params.single("code").ok().flatten().unwrap_or_default();
    let user_id = &visitor.user.user_id;
    if let Some(codes) =
        totp::confirm_enrollment(&state, &visitor.tenant, user_id, code, now).await?
    {
        let onwards = account_location(&visitor.tenant, Some(Notice::TotpEnabled));
        return Ok(render_recovery_codes(&codes, &onwards, true));
    }
    match totp::pending_enrollment(&state, &visitor.tenant, &visitor.user).await? {
        Some(enrollment) => Ok(enrollment_page(
            &visitor,
            &enrollment,
            Some(
                "That code is not right. Type the code the app shows now; if it is refused \
                 again, check that your phone's clock is set automatically.",
            ),
        )),
        // Confirmed or removed meanwhile (another tab): the account page tells which.
        None => Ok(see_other(&visitor.tenant, None)),
    }
}

/// `POST /account/totp/remove`: removes the authenticator once the current password is
/// given; otherwise a page that asks for it again and says why.
pub async fn post_totp_remove(
    State(state): State<OAuthState>,
    ClientAddress(address): ClientAddress,
    AccountForm {
        params,
        visitor,
        now,
    }: AccountForm,
) -> Result<Response, PageError> {
    let password = params.single("current_password").ok().flatten();
    match remove_with_password(&state, &visitor, password, address, now).await? {
        Ok(true) => Ok(see_other(&visitor.tenant, Some(Notice::TotpRemoved))),
        Ok(false) => Ok(see_other(&visitor.tenant, None)),
        Err((status, message)) => Ok(remove_page(&visitor, &message, status)),
    }
}

/// Removes the authenticator when `password` is the user's: whether there was one, or the
/// status and message of the page that asks again.
async fn remove_with_password(
    state: &OAuthState,
    visitor: &Visitor,
    password: Option<&str>,
    address: IpAddr,
    now: UnixTime,
) -> Result<Result<bool, (StatusCode, String)>, OAuthError> {
    let Some(password) = password.filter(|p| !p.is_empty()) else {
        return Ok(Err((
            StatusCode::OK,
            "Enter your current password.".to_owned(),
        )));
    };
    let user = &visitor.user;
    let records = state.store.tenant(&visitor.tenant);
    let username = Username::parse(&user.username)?;
    let password = SecretString::from(password.to_owned());
    let address_text = address.to_string();
    match check_throttled(state, &records, &username, password, address, now).await? {
        // The username could have passed to another account since the page was opened.
        Checked::Valid { user: found, .. } if found.user_id == user.user_id => {}
        Checked::Valid { .. } => {
            return Ok(Err((
                StatusCode::CONFLICT,
                "Your account changed in the meantime. Open your account page again.".to_owned(),
            )))
        }
        Checked::Wrong { why, verdict } => {
            tracing::warn!(tenant = %visitor.tenant, sub = %user.user_id, "account: wrong current password to remove the authenticator");
            let locked = matches!(verdict, Verdict::Locked(_));
            let event = Event::PasswordCheckFailed {
                user_id: &user.user_id,
                address: &address_text,
                why,
                locked,
            };
            state.record(&visitor.tenant, event, now).await;
            let mut message = "Your current password is incorrect.".to_owned();
            if let (true, Some(lock)) = (locked, throttle_message(verdict)) {
                message.push(' ');
                message.push_str(&lock);
            }
            return Ok(Err((StatusCode::OK, message)));
        }
        Checked::Refused { message, first } => {
            let event = Event::PasswordCheckRefused {
                user_id: &user.user_id,
                address: &address_text,
                audited: first,
            };
            state.record(&visitor.tenant, event, now).await;
            return Ok(Err((StatusCode::TOO_MANY_REQUESTS, message)));
        }
    }
    totp::remove(state, &visitor.tenant, &user.user_id, now)
        .await
        .map(Ok)
}

#[derive(Template)]
#[template(path = "totp_remove.html")]
struct RemovePage<'a> {
    action: &'a str,
    tenant: &'a str,
    csrf: &'a str,
    back: &'a str,
    message: Option<&'a str>,
}

fn remove_page(visitor: &Visitor, message: &str, status: StatusCode) -> Response {
    let csrf = csrf::token_for(&visitor.cookie_value);
    let back = account_location(&visitor.tenant, None);
    let page = RemovePage {
        action: paths::ACCOUNT_TOTP_REMOVE,
        tenant: visitor.tenant.as_str(),
        csrf: &csrf,
        back: &back,
        message: Some(message),
    };
    pages::render(&page, status, FormTarget::SelfOnly)
}

/// The set-up page of the account: its form goes to the confirmation, and it may be left.
fn enrollment_page(visitor: &Visitor, enrollment: &Enrollment, message: Option<&str>) -> Response {
    let csrf = csrf::token_for(&visitor.cookie_value);
    let cancel = account_location(&visitor.tenant, None);
    let form = EnrollmentForm {
        action: paths::ACCOUNT_TOTP_CONFIRM,
        hidden: vec![
            Hidden {
                name: "tenant",
                value: visitor.tenant.as_str(),
            },
            Hidden {
                name: "csrf",
                value: &csrf,
            },
        ],
        cancel: Some(&cancel),
    };
    render_totp_enrollment(enrollment, &form, message)
}

fn setup_location(visitor: &Visitor) -> String {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    query.append_pair("tenant", visitor.tenant.as_str());
    format!("{}?{}", paths::ACCOUNT_TOTP_SETUP, query.finish())
}
