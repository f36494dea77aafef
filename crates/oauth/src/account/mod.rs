//! `{auth_url}/account?tenant=T`: a user's own page in a tenant, behind the tenant's browser
//! session. It shows who they are and which apps hold their grants, and offers three
//! actions, each a POST form with a CSRF token answered by a 303 back to the page
//! (post/redirect/get): remove one app's access, change the password, sign out everywhere.
//! Without a session the page is the sign-in form (`signin.rs`).

use std::net::IpAddr;

use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use jose::UnixTime;
use store::TenantId;

use crate::client_address::ClientAddress;
use crate::error::OAuthError;
use crate::events::Event;
use crate::pages::{self, ErrorPage, FormTarget, PageError};
use crate::params::{FormParams, Params};
use crate::paths;
use crate::secret::hash_secret;
use crate::session;
use crate::state::OAuthState;

// Also the passkey endpoints' token (`crate::passkey_signin`, issue 24).
mod form;
use form::AccountForm;
pub(crate) mod csrf;
mod page;
mod passkeys;
mod password;
mod signin;
// TOTP and recovery codes (issue 24).
mod factor_pages;
mod recovery_codes;
mod totp;

pub use passkeys::{post_passkey_add, post_passkey_remove, post_passkey_start};
pub use password::post_change_password;
// TOTP and recovery codes (issue 24); the set-up pages serve sign-in too.
#[allow(unused_imports)] // the enrollment form is for sign-in's use as well
pub(crate) use factor_pages::{
    render_recovery_codes, render_totp_enrollment, EnrollmentForm, Hidden,
};
pub use recovery_codes::post_recovery_codes;
pub(crate) use signin::{finish_account_signin, post_account_signin, SIGNIN_REQUEST};
pub use totp::{get_totp_setup, post_totp_confirm, post_totp_remove, post_totp_setup};

/// A confirmation after a successful action. The query names one by a fixed code, so a link
/// cannot put words of its own on the page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Notice {
    AccessRemoved,
    PasswordChanged,
    SignedOut,
    // Passkeys (issue 24).
    PasskeyAdded,
    PasskeyRemoved,
    // TOTP (issue 24).
    TotpEnabled,
    TotpRemoved,
}

impl Notice {
    const ALL: [Notice; 7] = [
        Notice::AccessRemoved,
        Notice::PasswordChanged,
        Notice::SignedOut,
        Notice::PasskeyAdded,
        Notice::PasskeyRemoved,
        Notice::TotpEnabled,
        Notice::TotpRemoved,
    ];

    fn code(self) -> &'static str {
        match self {
            Notice::AccessRemoved => "access-removed",
            Notice::PasswordChanged => "password-changed",
            Notice::SignedOut => "signed-out",
            Notice::PasskeyAdded => "passkey-added",
            Notice::PasskeyRemoved => "passkey-removed",
            Notice::TotpEnabled => "totp-enabled",
            Notice::TotpRemoved => "totp-removed",
        }
    }

    fn parse(code: Option<&str>) -> Option<Notice> {
        Notice::ALL.into_iter().find(|n| Some(n.code()) == code)
    }

    fn message(self) -> &'static str {
        match self {
            Notice::AccessRemoved => {
                "Access removed. The app can no longer use your account until you allow it again."
            }
            Notice::PasswordChanged => {
                "Password changed. You were signed out on every other device, and every app \
                 must ask for access again."
            }
            Notice::SignedOut => {
                "You are signed out everywhere. Every session has ended, and every app must ask \
                 for access again."
            }
            Notice::PasskeyAdded => {
                "Passkey added. You can sign in with it, and it serves as your second factor."
            }
            Notice::PasskeyRemoved => "Passkey removed. It can no longer sign you in.",
            Notice::TotpEnabled => {
                "Two-step verification is on. Sign-in will ask for a code from your \
                 authenticator app after your password."
            }
            Notice::TotpRemoved => {
                "The authenticator app is removed. Sign-in no longer asks for its codes."
            }
        }
    }
}

/// The signed-in user of a request, and the session it came with.
pub(crate) struct Visitor {
    tenant: TenantId,
    /// The cookie's value: the session, and the key the page's CSRF token is derived from.
    cookie_value: String,
    session_hash: [u8; 32],
    user: store::User,
}

/// `GET /account?tenant=T`: the page for a signed-in browser, else the sign-in form.
pub async fn get_account(
    State(state): State<OAuthState>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, PageError> {
    let params = Params::parse(query.as_deref().unwrap_or_default().as_bytes()).map_err(|_| {
        OAuthError::UntrustedRequest("The address's percent-encoding is not UTF-8.")
    })?;
    if params.first_repeated().is_some() {
        return Err(OAuthError::UntrustedRequest("A parameter of the address is repeated.").into());
    }
    let tenant = known_tenant(&state, params.single("tenant").ok().flatten()).await?;
    let notice = Notice::parse(params.single("done").ok().flatten()).map(Notice::message);
    let now = state.clock.now();
    let cookie = tenant_cookie(&state, &tenant, &headers);
    match signed_in(&state, &tenant, cookie, now).await? {
        Some(visitor) => {
            Ok(page::render(&state, &visitor, notice, None, StatusCode::OK, now).await?)
        }
        None => Ok(signin::render_signin(&state, &tenant, cookie, notice)?),
    }
}

/// `POST /account/remove-access`: revokes one grant of the signed-in user.
pub async fn post_remove_access(
    State(state): State<OAuthState>,
    ClientAddress(address): ClientAddress,
    AccountForm {
        params,
        visitor,
        now,
    }: AccountForm,
) -> Result<Response, PageError> {
    let grant_id = params.single("grant").ok().flatten().unwrap_or_default();
    Ok(remove_access(&state, &visitor, grant_id, address, now).await?)
}

/// Revokes the grant when it is a live grant of this user in this tenant. Anything else gets
/// one and the same refusal, which does not say whether such a grant exists.
async fn remove_access(
    state: &OAuthState,
    visitor: &Visitor,
    grant_id: &str,
    address: IpAddr,
    now: UnixTime,
) -> Result<Response, OAuthError> {
    let records = state.store.tenant(&visitor.tenant);
    let user_id = &visitor.user.user_id;
    let Some(client_id) = records.remove_account_grant(user_id, grant_id, now).await? else {
        tracing::warn!(tenant = %visitor.tenant, sub = %user_id, "account: removal of a grant that is not a live grant of the user");
        return Ok(refused(
            "Access not removed",
            "This access cannot be removed: it is not one of the apps listed on your account \
             page. Open the page again to see them.",
        ));
    };
    tracing::info!(tenant = %visitor.tenant, sub = %user_id, client_id = %client_id, "account: access removed");
    let event = Event::AccessRemoved {
        user_id,
        client_id: &client_id,
        grant_id,
        address: &address.to_string(),
    };
    state.record(&visitor.tenant, event, now).await;
    Ok(see_other(&visitor.tenant, Some(Notice::AccessRemoved)))
}

/// `POST /account/sign-out-everywhere`: ends every session and grant of the user, this
/// browser's session included, and clears the cookie.
pub async fn post_sign_out_everywhere(
    State(state): State<OAuthState>,
    ClientAddress(address): ClientAddress,
    AccountForm {
        params: _,
        visitor,
        now,
    }: AccountForm,
) -> Result<Response, PageError> {
    Ok(sign_out_everywhere(&state, &visitor, address, now).await?)
}

/// The store's sign-out of the user, the one the administrators' sign-out uses, so whatever
/// must follow the end of a session (back-channel logout) follows here too.
async fn sign_out_everywhere(
    state: &OAuthState,
    visitor: &Visitor,
    address: IpAddr,
    now: UnixTime,
) -> Result<Response, OAuthError> {
    let user_id = &visitor.user.user_id;
    let ended = state
        .store
        .tenant(&visitor.tenant)
        .sign_out_user(user_id, now)
        .await?;
    tracing::info!(tenant = %visitor.tenant, sub = %user_id, sessions = ended.sessions, grants = ended.grants, "account: signed out everywhere");
    let event = Event::SignedOutEverywhere {
        user_id,
        address: &address.to_string(),
        sessions: ended.sessions,
        grants: ended.grants,
    };
    state.record(&visitor.tenant, event, now).await;
    let mut response = see_other(&visitor.tenant, Some(Notice::SignedOut));
    response
        .headers_mut()
        .append(header::SET_COOKIE, expired_cookie(state, &visitor.tenant)?);
    Ok(response)
}

/// The form's parameters, each at most once.
fn form_params(form: Result<FormParams, OAuthError>) -> Result<Params, OAuthError> {
    let FormParams(params) = form?;
    match params.first_repeated() {
        Some(_) => Err(OAuthError::InvalidForm("a parameter is repeated")),
        None => Ok(params),
    }
}

/// The signed-in user a form of the page comes from, once its CSRF token matches the
/// browser's cookie. A form whose session has ended meanwhile is sent back to the page,
/// which then asks to sign in; a form without the right token is refused, and nothing is
/// done for either.
async fn form_visitor(
    state: &OAuthState,
    params: &Params,
    headers: &HeaderMap,
    now: UnixTime,
) -> Result<Result<Visitor, Response>, OAuthError> {
    let tenant = known_tenant(state, params.single("tenant").ok().flatten()).await?;
    let cookie = tenant_cookie(state, &tenant, headers);
    if !csrf::is_valid(params.single("csrf").ok().flatten(), cookie) {
        tracing::warn!(tenant = %tenant, "account form without its security token");
        return Ok(Err(refused(
            "Request refused",
            "The form's security token is missing or wrong. Open your account page again and \
             retry.",
        )));
    }
    match signed_in(state, &tenant, cookie, now).await? {
        Some(visitor) => Ok(Ok(visitor)),
        None => Ok(Err(see_other(&tenant, None))),
    }
}

/// The tenant of the page, which must exist.
async fn known_tenant(state: &OAuthState, value: Option<&str>) -> Result<TenantId, OAuthError> {
    const UNKNOWN: &str = "This account page is unknown. Check the address you were given.";
    let tenant = value
        .and_then(|value| TenantId::parse(value).ok())
        .ok_or(OAuthError::UntrustedRequest(UNKNOWN))?;
    match state.store.tenant(&tenant).find().await? {
        Some(_) => Ok(tenant),
        None => Err(OAuthError::UntrustedRequest(UNKNOWN)),
    }
}

/// The tenant's browser cookie, when it has our shape.
fn tenant_cookie<'h>(
    state: &OAuthState,
    tenant: &TenantId,
    headers: &'h HeaderMap,
) -> Option<&'h str> {
    let name = session::cookie_name(tenant, state.config.issuer.is_https());
    session::read_cookie(headers, &name)
}

/// The live session behind the cookie and its user.
async fn signed_in(
    state: &OAuthState,
    tenant: &TenantId,
    cookie: Option<&str>,
    now: UnixTime,
) -> Result<Option<Visitor>, OAuthError> {
    let records = state.store.tenant(tenant);
    let Some(value) = cookie else {
        return Ok(None);
    };
    let Some(session) = session::find_session(&records, Some(value), now).await? else {
        return Ok(None);
    };
    let Some(user) = records.find_user(&session.user_id).await? else {
        return Ok(None);
    };
    Ok(Some(Visitor {
        tenant: tenant.clone(),
        cookie_value: value.to_owned(),
        session_hash: hash_secret(value),
        user,
    }))
}

/// The page's address, with a confirmation to show.
fn account_location(tenant: &TenantId, notice: Option<Notice>) -> String {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    query.append_pair("tenant", tenant.as_str());
    if let Some(notice) = notice {
        query.append_pair("done", notice.code());
    }
    format!("{}?{}", paths::ACCOUNT, query.finish())
}

/// 303 See Other to the page: a reload then repeats the GET, never the POST.
/// The 303 to the account page that ends a sign-in for it.
pub(crate) fn home(tenant: &TenantId) -> Response {
    see_other(tenant, None)
}

fn see_other(tenant: &TenantId, notice: Option<Notice>) -> Response {
    see_other_to(&account_location(tenant, notice))
}

/// 303 See Other to one of the account pages.
fn see_other_to(location: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    if let Ok(location) = HeaderValue::from_str(location) {
        headers.insert(header::LOCATION, location);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// Removes the tenant's cookie from the browser.
fn expired_cookie(state: &OAuthState, tenant: &TenantId) -> Result<HeaderValue, OAuthError> {
    let https = state.config.issuer.is_https();
    let secure = if https { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{}=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax{secure}",
        session::cookie_name(tenant, https)
    ))
    .map_err(|_| OAuthError::InvalidForm("cookie"))
}

/// A 400 page for a form that cannot be acted on.
fn refused(title: &str, message: &str) -> Response {
    pages::render(
        &ErrorPage { title, message },
        StatusCode::BAD_REQUEST,
        FormTarget::SelfOnly,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_are_fixed_texts_chosen_by_code() {
        for notice in Notice::ALL {
            assert_eq!(Notice::parse(Some(notice.code())), Some(notice));
        }
        assert_eq!(Notice::parse(Some("<b>hello</b>")), None);
        assert_eq!(Notice::parse(None), None);
    }

    #[test]
    fn the_location_is_the_page_of_the_tenant() {
        let tenant = TenantId::parse("acme").unwrap();
        assert_eq!(account_location(&tenant, None), "/account?tenant=acme");
        assert_eq!(
            account_location(&tenant, Some(Notice::SignedOut)),
            "/account?tenant=acme&done=signed-out"
        );
    }
}
