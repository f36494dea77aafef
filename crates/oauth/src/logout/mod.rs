//! `GET` and `POST /oauth/logout`: OpenID Connect RP-Initiated Logout 1.0. A request whose
//! verified `id_token_hint` names the browser's signed-in session signs out at once; any
//! other asks first, on a page whose form only this browser can submit, so a third-party page
//! cannot sign a user out. Signing out ends the tenant's browser session (and queues its
//! back-channel logout tokens in the same transaction); it leaves grants and refresh tokens
//! alone (docs/tokens.md).

pub mod backchannel;
mod registration;
mod request;

use askama::Template;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use jose::UnixTime;
use store::BrowserSession;
use subtle::ConstantTimeEq;
use url::Url;

use crate::error::OAuthError;
use crate::events::Event;
use crate::pages::{self, FormTarget, PageError};
use crate::params::{FormParams, Params};
use crate::secret::hash_secret;
use crate::session;
use crate::state::OAuthState;
pub use registration::parse_backchannel_logout_uri;
use request::LogoutRequest;

#[derive(Template)]
#[template(path = "logout.html")]
struct ConfirmPage<'a> {
    user_name: &'a str,
    username: &'a str,
    client_name: Option<&'a str>,
    tenant: &'a str,
    client_id: Option<&'a str>,
    post_logout_redirect_uri: Option<&'a str>,
    state: Option<&'a str>,
    csrf: &'a str,
}

#[derive(Template)]
#[template(path = "signed_out.html")]
struct SignedOutPage;

/// `GET /oauth/logout` (RP-Initiated Logout §2: the parameters in the query).
pub async fn get_logout(
    State(state): State<OAuthState>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, PageError> {
    let params = Params::parse(query.as_deref().unwrap_or_default().as_bytes()).map_err(|_| {
        OAuthError::UntrustedRequest("The request's percent-encoding is not UTF-8.")
    })?;
    let now = state.clock.now();
    Ok(log_out(&state, &params, &headers, now).await?)
}

/// `POST /oauth/logout`: an RP's form post (§2), or the confirmation form (with `csrf`).
pub async fn post_logout(
    State(state): State<OAuthState>,
    headers: HeaderMap,
    form: Result<FormParams, OAuthError>,
) -> Result<Response, PageError> {
    let FormParams(params) = form?;
    let now = state.clock.now();
    Ok(log_out(&state, &params, &headers, now).await?)
}

/// Verifies the request, then signs out, asks first, or (with no session) only sends the
/// browser on.
pub async fn log_out(
    state: &OAuthState,
    params: &Params,
    headers: &HeaderMap,
    now: UnixTime,
) -> Result<Response, OAuthError> {
    let request = request::verify(state, params, now).await?;
    let records = state.store.tenant(&request.tenant);
    let https = state.config.issuer.is_https();
    let cookie_name = session::cookie_name(&request.tenant, https);
    let cookie = session::read_cookie(headers, &cookie_name);
    let session = session::find_session(&records, cookie, now).await?;
    let (Some(cookie), Some(session)) = (cookie, session) else {
        // No session: nothing to end (§3 still sends the browser on).
        return finished(&request, None);
    };
    let csrf = confirmation_token(cookie);
    let confirmed = match params.single("csrf") {
        Ok(Some(sent)) if bool::from(sent.as_bytes().ct_eq(csrf.as_bytes())) => true,
        Ok(Some(_)) | Err(_) => {
            tracing::warn!(tenant = %request.tenant, "logout confirmation without this browser's token");
            return Err(OAuthError::UntrustedRequest(
                "The sign-out form was not sent from this browser's page, or the sign-in it was for has ended. Nothing was changed.",
            ));
        }
        Ok(None) => hint_names_session(&request, &session),
    };
    if !confirmed {
        return confirmation_page(state, &request, &session, &csrf).await;
    }
    end_session(state, &request, cookie, &session, now).await?;
    finished(&request, Some(clear_cookie(&cookie_name, https)?))
}

/// §2: the hint names the signed-in End-User and this very session: its `sub` and its `sid`.
/// A hint without `sid` (issued before sessions had one) is not enough to skip the question.
fn hint_names_session(request: &LogoutRequest, session: &BrowserSession) -> bool {
    request.hint.as_ref().is_some_and(|hint| {
        hint.sub == session.user_id && hint.sid.is_some() && hint.sid == session.sid
    })
}

/// Ends the session behind `cookie`, queueing the back-channel logout tokens it owes in the
/// same transaction; the commit wakes this node's deliverer.
async fn end_session(
    state: &OAuthState,
    request: &LogoutRequest,
    cookie: &str,
    session: &BrowserSession,
    now: UnixTime,
) -> Result<(), OAuthError> {
    let records = state.store.tenant(&request.tenant);
    let queued = records
        .delete_browser_session(&hash_secret(cookie), now)
        .await?;
    tracing::info!(tenant = %request.tenant, sub = %session.user_id, queued, "signed out");
    let event = Event::SignedOut {
        user_id: &session.user_id,
        client_id: request.client_id.as_deref(),
    };
    state.record(&request.tenant, event, now).await;
    Ok(())
}

/// The confirmation form's token: derived from the session cookie's secret value, so only a
/// page this browser was shown can carry it, and it ends with the session. The cookie's
/// stored hash is SHA-256 of the value alone; this one hashes a prefixed value, so showing it
/// reveals neither.
fn confirmation_token(cookie: &str) -> String {
    URL_SAFE_NO_PAD.encode(hash_secret(&format!(
        "fieldauth logout confirmation:{cookie}"
    )))
}

async fn confirmation_page(
    state: &OAuthState,
    request: &LogoutRequest,
    session: &BrowserSession,
    csrf: &str,
) -> Result<Response, OAuthError> {
    let records = state.store.tenant(&request.tenant);
    let user = records
        .find_user(&session.user_id)
        .await?
        .ok_or(OAuthError::InvalidFlow(
            "The signed-in account no longer exists.",
        ))?;
    let client = match request.client_id.as_deref() {
        Some(client_id) => records.find_client(client_id).await?,
        None => None,
    };
    let redirect = request.redirect.as_ref();
    let page = ConfirmPage {
        user_name: &user.name,
        username: &user.username,
        client_name: client.as_ref().map(|c| c.name.as_str()),
        tenant: request.tenant.as_str(),
        client_id: request.client_id.as_deref(),
        post_logout_redirect_uri: redirect.map(|r| r.uri.as_str()),
        state: redirect.and_then(|r| r.state.as_deref()),
        csrf,
    };
    // Browsers apply `form-action` to the redirect that answers the form too.
    let source = redirect.and_then(|r| pages::csp_source_for(&r.uri));
    let forms = match &source {
        Some(source) => FormTarget::SelfAnd(source),
        None => FormTarget::SelfOnly,
    };
    Ok(pages::render(&page, StatusCode::OK, forms))
}

/// §3: to the verified post-logout redirect URI with `state`, or our signed-out page.
fn finished(request: &LogoutRequest, clear: Option<HeaderValue>) -> Result<Response, OAuthError> {
    let mut response = match &request.redirect {
        Some(redirect) => {
            let mut location = Url::parse(&redirect.uri).map_err(|_| {
                OAuthError::UntrustedRequest("The post_logout_redirect_uri is not a valid URL.")
            })?;
            if let Some(state) = &redirect.state {
                location.query_pairs_mut().append_pair("state", state);
            }
            see_other(&location)
        }
        None => pages::render(&SignedOutPage, StatusCode::OK, FormTarget::SelfOnly),
    };
    if let Some(clear) = clear {
        response.headers_mut().append(header::SET_COOKIE, clear);
    }
    Ok(response)
}

fn see_other(location: &Url) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(location.as_str()) {
        headers.insert(header::LOCATION, value);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

/// Expires the tenant's session cookie in the browser (the record is already gone).
fn clear_cookie(name: &str, https: bool) -> Result<HeaderValue, OAuthError> {
    let secure = if https { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{name}=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax{secure}"
    ))
    .map_err(|_| OAuthError::InvalidForm("cookie"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use request::Hint;
    use store::TenantId;

    fn session(sid: Option<&str>) -> BrowserSession {
        BrowserSession {
            sid: sid.map(str::to_owned),
            user_id: "u1".to_owned(),
            auth_time: 0,
            created_at: 0,
            expires_at: 100,
            amr: "pwd".to_owned(),
            mfa_at: None,
            factor_due: None,
        }
    }

    fn request(hint: Option<(&str, Option<&str>)>) -> LogoutRequest {
        LogoutRequest {
            tenant: TenantId::parse("acme").unwrap(),
            client_id: Some("spa".to_owned()),
            hint: hint.map(|(sub, sid)| Hint {
                sub: sub.to_owned(),
                sid: sid.map(str::to_owned),
            }),
            redirect: None,
        }
    }

    #[test]
    fn only_a_hint_naming_this_user_and_this_session_skips_the_question() {
        let live = session(Some("sid-1"));
        assert!(hint_names_session(
            &request(Some(("u1", Some("sid-1")))),
            &live
        ));
        assert!(!hint_names_session(
            &request(Some(("u1", Some("sid-2")))),
            &live
        ));
        assert!(!hint_names_session(
            &request(Some(("u2", Some("sid-1")))),
            &live
        ));
        assert!(!hint_names_session(&request(Some(("u1", None))), &live));
        assert!(!hint_names_session(&request(None), &live));
        assert!(!hint_names_session(
            &request(Some(("u1", None))),
            &session(None)
        ));
    }

    #[test]
    fn the_confirmation_token_is_bound_to_the_cookie_and_is_not_its_stored_hash() {
        let a = confirmation_token("cookie-a");
        assert_eq!(a, confirmation_token("cookie-a"));
        assert_ne!(a, confirmation_token("cookie-b"));
        assert_ne!(a, URL_SAFE_NO_PAD.encode(hash_secret("cookie-a")));
    }
}
