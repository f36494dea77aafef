//! `POST /oauth/signin`: check the username and password, throttled per account and per
//! client address, and start a browser session. One domain function, [`authenticate`], does
//! that for two front ends: a pending authorization request (then the consent screen) and
//! the account page (then the account page).

use std::net::IpAddr;

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use jose::UnixTime;
use secrecy::SecretString;
use store::TenantId;

use crate::account;
use crate::authorize::pending::{load_pending, Pending};
use crate::client_address::ClientAddress;
use crate::consent;
use crate::error::OAuthError;
use crate::events::Event;
use crate::pages::{self, FormTarget, PageError, SignInPage};
use crate::params::{FormParams, Params};
use crate::second_factor::{self, page::StepForm};
use crate::secret::hash_secret;
use crate::session;
use crate::state::OAuthState;
use crate::throttle::Verdict;
use crate::username::Username;
use check::{check_throttled, owes_verification, Checked};
use store::{FactorDue, MfaPolicy, SecondFactorStanding};

mod attempt;
pub(crate) mod check;

pub async fn post_signin(
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
    // The account page's form names no pending request: the same page, another front end.
    if params.single("request").ok().flatten() == Some(account::SIGNIN_REQUEST) {
        return Ok(account::post_account_signin(&state, &params, &headers, address, now).await?);
    }
    let pending = load_pending(&state, &params, &headers, now).await?;
    let (username, password) = credentials(&params);
    Ok(sign_in(&state, &pending, &username, password, address, now).await?)
}

/// The typed username (kept in the form when it is shown again) and the password.
pub(crate) fn credentials(params: &Params) -> (String, Option<SecretString>) {
    let username = params
        .single("username")
        .ok()
        .flatten()
        .unwrap_or_default()
        .to_owned();
    let password = params
        .single("password")
        .ok()
        .flatten()
        .map(|p| SecretString::from(p.to_owned()));
    (username, password)
}

/// Either the consent screen for a new session, or the sign-in form again with why not.
pub async fn sign_in(
    state: &OAuthState,
    pending: &Pending,
    typed_username: &str,
    password: Option<SecretString>,
    address: IpAddr,
    now: UnixTime,
) -> Result<Response, OAuthError> {
    let client_id = Some(pending.client.client_id.as_str());
    let started = match authenticate(
        state,
        &pending.tenant,
        client_id,
        pending.request.acr_mfa,
        typed_username,
        password,
        address,
        now,
    )
    .await?
    {
        SignIn::Started(started) => started,
        SignIn::Refused { status, message } => {
            return Ok(retry_page(state, pending, typed_username, status, &message))
        }
    };
    finish_for_request(state, pending, started, now).await
}

/// The rest of a sign-in for a pending authorization request, whatever proved who the user
/// is (a password, a passkey): the request now belongs to the new session, the browser's
/// old session ends, and the consent screen is shown with the new session's cookie.
pub(crate) async fn finish_for_request(
    state: &OAuthState,
    pending: &Pending,
    started: StartedSession,
    now: UnixTime,
) -> Result<Response, OAuthError> {
    let tenant = state.store.tenant(&pending.tenant);
    let old_hash = hash_secret(&pending.browser_value);
    if !tenant
        .record_signin(
            &pending.request_hash,
            &old_hash,
            &started.hash,
            &started.user.user_id,
            now,
            now,
        )
        .await?
    {
        return Err(OAuthError::InvalidFlow(
            "This sign-in request was already completed.",
        ));
    }
    // A session that was there before (prompt=login) is replaced, never resumed.
    tenant.delete_browser_session(&old_hash, now).await?;
    let cookie = started.cookie(state, &pending.tenant)?;
    if started.factor_due.is_some() {
        let form = StepForm {
            client_name: &pending.client.name,
            username: &started.user.username,
            tenant: pending.tenant.as_str(),
            request: &pending.handle,
            csrf: &pending.csrf,
        };
        return second_factor::show_step(state, form, &pending.tenant, &started.user, Some(cookie))
            .await;
    }
    let mut response = consent::render_consent(
        &tenant,
        &pending.client,
        &started.user.user_id,
        &pending.request.scope,
        &pending.request.redirect_uri,
        &pending.handle,
        &pending.csrf,
    )
    .await?;
    response.headers_mut().append(header::SET_COOKIE, cookie);
    Ok(response)
}

/// What a sign-in came to.
pub(crate) enum SignIn {
    /// A new session; the caller sets its cookie and ends the one the browser had.
    Started(StartedSession),
    /// No session: the form again, with this status and message.
    Refused { status: StatusCode, message: String },
}

/// A browser session just started: its cookie value (only ever in the cookie) and hash.
pub(crate) struct StartedSession {
    pub user: store::User,
    value: String,
    pub hash: [u8; 32],
    /// Set when the password is proved but a second factor is still owed.
    pub factor_due: Option<FactorDue>,
}

impl StartedSession {
    /// The cookie's value, which only the browser holds: the key the step's CSRF token is
    /// derived from.
    pub(crate) fn value(&self) -> &str {
        &self.value
    }

    /// The `Set-Cookie` that hands the session to the browser.
    pub(crate) fn cookie(
        &self,
        state: &OAuthState,
        tenant: &TenantId,
    ) -> Result<HeaderValue, OAuthError> {
        let https = state.config.issuer.is_https();
        session::set_cookie(&session::cookie_name(tenant, https), &self.value, https)
    }
}

/// Checks the username and password under the throttle and, when they are right, starts a
/// browser session of that user in `tenant`, which still owes a second factor when the
/// user has one or the tenant's policy (or `acr_mfa`, the request's `acr_values`) demands
/// one. `client_id` names the application the sign-in is for in the audit trail (none for
/// the account page). Every refusal says the same as a wrong password; the audit trail says
/// why.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn authenticate(
    state: &OAuthState,
    tenant_id: &TenantId,
    client_id: Option<&str>,
    acr_mfa: bool,
    typed_username: &str,
    password: Option<SecretString>,
    address: IpAddr,
    now: UnixTime,
) -> Result<SignIn, OAuthError> {
    let refuse = |status, message: &str| {
        Ok(SignIn::Refused {
            status,
            message: message.to_owned(),
        })
    };
    let (Ok(username), Some(password)) = (Username::parse(typed_username), password) else {
        return refuse(StatusCode::OK, "Enter your username and password.");
    };
    let tenant = state.store.tenant(tenant_id);
    let shown_address = address.to_string();
    let address_text = shown_address.as_str();
    let (user, standing) = match check_throttled(state, &tenant, &username, password, address, now)
        .await?
    {
        Checked::Valid { user, standing } => (user, standing),
        Checked::Refused { message, first } => {
            tracing::warn!(tenant = %tenant_id, "sign-in refused by the throttle");
            let event = Event::SignInRefused {
                username: username.as_str(),
                client_id,
                address: address_text,
                audited: first,
            };
            state.record(tenant_id, event, now).await;
            return refuse(StatusCode::TOO_MANY_REQUESTS, &message);
        }
        // Whatever the reason, the page says the same as for a wrong password: it must not
        // tell a guesser which accounts exist or are disabled. The audit trail says why.
        Checked::Wrong { why, verdict } => {
            tracing::warn!(tenant = %tenant_id, client_id = client_id.unwrap_or_default(), "sign-in failed");
            let locked = matches!(verdict, Verdict::Locked(_));
            let message = match locked {
                true => format!(
                    "Incorrect username or password. {}",
                    throttle_message(verdict).unwrap_or_default()
                ),
                false => "Incorrect username or password.".to_owned(),
            };
            let event = Event::SignInFailed {
                username: username.as_str(),
                client_id,
                address: address_text,
                why,
                locked,
            };
            state.record(tenant_id, event, now).await;
            return refuse(StatusCode::OK, &message);
        }
    };

    let how = SessionStart {
        amr: "pwd",
        factor_due: factor_due(standing, acr_mfa),
        mfa_at: None,
    };
    let started = start_session(state, tenant_id, user, how, client_id, address, now).await?;
    Ok(SignIn::Started(started))
}

/// What a user who just proved the password still owes: the second factor they have
/// (always asked once enrolled, unless the tenant turned second factors off), else
/// enrollment when the tenant requires a factor or the request asked for one.
pub(crate) fn factor_due(standing: SecondFactorStanding, acr_mfa: bool) -> Option<FactorDue> {
    if owes_verification(standing) {
        return Some(FactorDue::Verify);
    }
    match standing.policy {
        MfaPolicy::Off => None,
        MfaPolicy::Required => Some(FactorDue::Enroll),
        MfaPolicy::Optional => acr_mfa.then_some(FactorDue::Enroll),
    }
}

/// How a session begins: the `amr` proved so far, whether a second factor is still owed,
/// and when one was proved (a passkey sign-in proves it at once).
#[derive(Clone, Copy, Debug)]
pub(crate) struct SessionStart<'a> {
    pub amr: &'a str,
    pub factor_due: Option<store::FactorDue>,
    pub mfa_at: Option<UnixTime>,
}

/// Starts a browser session of `user`, who has just proved who they are, and audits it.
/// The caller hands its cookie to the browser and ends the session the browser had.
pub(crate) async fn start_session(
    state: &OAuthState,
    tenant_id: &TenantId,
    user: store::User,
    how: SessionStart<'_>,
    client_id: Option<&str>,
    address: IpAddr,
    now: UnixTime,
) -> Result<StartedSession, OAuthError> {
    let value = state.random.token()?;
    let hash = hash_secret(&value);
    // The session's public name in ID and logout tokens, unrelated to the cookie's value.
    let sid = state.random.token()?;
    let new = store::NewBrowserSession {
        session_hash: &hash,
        sid: &sid,
        user_id: &user.user_id,
        amr: how.amr,
        factor_due: how.factor_due,
        mfa_at: how.mfa_at,
        auth_time: now,
        expires_at: now
            + match how.factor_due {
                Some(_) => session::STEP_LIFETIME,
                None => session::SESSION_LIFETIME,
            },
    };
    state
        .store
        .tenant(tenant_id)
        .create_browser_session(&new, now)
        .await?;
    // A sign-in that still owes a second factor is audited when it is proved.
    if how.factor_due.is_none() {
        record_signed_in(state, tenant_id, &user.user_id, client_id, address, now).await;
    }
    Ok(StartedSession {
        user,
        value,
        hash,
        factor_due: how.factor_due,
    })
}

/// A completed sign-in, in the log and the audit trail.
pub(crate) async fn record_signed_in(
    state: &OAuthState,
    tenant_id: &TenantId,
    user_id: &str,
    client_id: Option<&str>,
    address: IpAddr,
    now: UnixTime,
) {
    tracing::info!(tenant = %tenant_id, client_id = client_id.unwrap_or_default(), sub = %user_id, "signed in");
    let address_text = address.to_string();
    let event = Event::SignedIn {
        user_id,
        client_id,
        address: &address_text,
    };
    state.record(tenant_id, event, now).await;
}

pub(crate) fn throttle_message(verdict: Verdict) -> Option<String> {
    match verdict {
        Verdict::Allowed => None,
        Verdict::Wait(seconds) => Some(format!(
            "Too many failed sign-ins: wait {seconds} second(s) before trying again."
        )),
        Verdict::Locked(seconds) => Some(format!(
            "Too many failed sign-ins: signing in is locked for {} more minute(s).",
            (seconds + 59) / 60
        )),
    }
}

fn retry_page(
    state: &OAuthState,
    pending: &Pending,
    typed_username: &str,
    status: StatusCode,
    message: &str,
) -> Response {
    pages::render(
        &SignInPage {
            client_name: &pending.client.name,
            tenant: pending.tenant.as_str(),
            request: &pending.handle,
            csrf: &pending.csrf,
            username: typed_username,
            message: Some(message),
            recover_url: crate::recovery::link_for(state, pending.tenant.as_str()),
        },
        status,
        FormTarget::SelfOnly,
    )
}
