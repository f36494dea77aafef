//! Sign-in for the account page: the same page and the same rules as every sign-in
//! (`crate::signin::authenticate`: the throttle, the audit trail, the dummy hash, disabled
//! users refused), without a pending authorization request. The form posts to
//! `/oauth/signin` with `request=account`, and its CSRF token is derived from the tenant's
//! browser cookie (`csrf.rs`), which binds it to this browser.

use std::net::IpAddr;

use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use jose::UnixTime;
use store::TenantId;

use super::{csrf, see_other, tenant_cookie};
use crate::error::OAuthError;
use crate::pages::{self, FormTarget, SignInPage};
use crate::params::Params;
use crate::second_factor::{self, page::StepForm};
use crate::secret::hash_secret;
use crate::session;
use crate::signin::{authenticate, credentials, SignIn, StartedSession};
use crate::state::OAuthState;

/// The sign-in form's `request` for the account page. An authorization request's handle is
/// 43 base64url characters, so the two never meet.
pub(crate) const SIGNIN_REQUEST: &str = "account";

/// What the sign-in page says the sign-in is for ("to continue to …").
const SIGNIN_FOR: &str = "your account";

/// The sign-in form, with `message` above it. The token is bound to the browser's cookie: the
/// one it has (a session that ended, or the value its pending authorization requests are
/// bound to, which must keep working), else a fresh value set now.
pub(super) fn render_signin(
    state: &OAuthState,
    tenant: &TenantId,
    cookie: Option<&str>,
    message: Option<&str>,
) -> Result<Response, OAuthError> {
    let https = state.config.issuer.is_https();
    let (value, set_cookie) = match cookie {
        Some(value) => (value.to_owned(), None),
        None => {
            let value = state.random.token()?;
            let name = session::cookie_name(tenant, https);
            let header = session::set_cookie(&name, &value, https)?;
            (value, Some(header))
        }
    };
    let csrf = csrf::token_for(&value);
    let mut response = sign_in_form(state, tenant, &csrf, "", message, StatusCode::OK);
    if let Some(cookie) = set_cookie {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    Ok(response)
}

fn sign_in_form(
    state: &OAuthState,
    tenant: &TenantId,
    csrf: &str,
    username: &str,
    message: Option<&str>,
    status: StatusCode,
) -> Response {
    pages::render(
        &SignInPage {
            client_name: SIGNIN_FOR,
            tenant: tenant.as_str(),
            request: SIGNIN_REQUEST,
            csrf,
            username,
            message,
            recover_url: crate::recovery::link_for(state, tenant.as_str()),
        },
        status,
        FormTarget::SelfOnly,
    )
}

/// `POST /oauth/signin` with `request=account`: a new session and a 303 to the account page,
/// or the form again with why not.
pub(crate) async fn post_account_signin(
    state: &OAuthState,
    params: &Params,
    headers: &HeaderMap,
    address: IpAddr,
    now: UnixTime,
) -> Result<Response, OAuthError> {
    let altered = OAuthError::InvalidFlow("The form is incomplete or was altered.");
    let tenant = params
        .single("tenant")
        .ok()
        .flatten()
        .and_then(|tenant| TenantId::parse(tenant).ok())
        .ok_or(altered)?;
    let cookie = tenant_cookie(state, &tenant, headers);
    let csrf = params.single("csrf").ok().flatten();
    if !csrf::is_valid(csrf, cookie) {
        tracing::warn!(tenant = %tenant, "account sign-in form without its security token");
        return Err(OAuthError::InvalidFlow(
            "The form's security token is missing or wrong.",
        ));
    }
    let records = state.store.tenant(&tenant);
    if records.find().await?.is_none() {
        return Err(OAuthError::InvalidFlow("This sign-in request is unknown."));
    }
    let (username, password) = credentials(params);
    let started = match authenticate(
        state, &tenant, None, false, &username, password, address, now,
    )
    .await?
    {
        SignIn::Started(started) => started,
        SignIn::Refused { status, message } => {
            let csrf = csrf.unwrap_or_default();
            return Ok(sign_in_form(
                state,
                &tenant,
                csrf,
                &username,
                Some(&message),
                status,
            ));
        }
    };
    finish_account_signin(state, &tenant, cookie, started, now).await
}

/// The rest of an account sign-in, whatever proved who the user is (a password, a passkey):
/// the new session's cookie and a 303 to the account page.
pub(crate) async fn finish_account_signin(
    state: &OAuthState,
    tenant: &TenantId,
    cookie: Option<&str>,
    started: StartedSession,
    now: UnixTime,
) -> Result<Response, OAuthError> {
    // Session fixation: the value the browser had never becomes the session, and whatever
    // session it named ends.
    if let Some(old) = cookie {
        state
            .store
            .tenant(tenant)
            .delete_browser_session(&hash_secret(old), now)
            .await?;
    }
    let cookie = started.cookie(state, tenant)?;
    if started.factor_due.is_some() {
        // The step's forms carry the token of the new session's cookie.
        let csrf = csrf::token_for(started.value());
        let form = StepForm {
            client_name: SIGNIN_FOR,
            username: &started.user.username,
            tenant: tenant.as_str(),
            request: SIGNIN_REQUEST,
            csrf: &csrf,
        };
        return second_factor::show_step(state, form, tenant, &started.user, Some(cookie)).await;
    }
    let mut response = see_other(tenant, None);
    response.headers_mut().append(header::SET_COOKIE, cookie);
    Ok(response)
}
