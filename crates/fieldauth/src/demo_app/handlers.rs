//! The demo app's handlers: read the request, call the flow, render or redirect. Queries and
//! forms are parsed here by hand, so a malformed one gets our error page, not axum's text.

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use subtle::ConstantTimeEq;

use super::flow::{self, CallbackParams};
use super::pages::{error_page, start_page};
use super::sessions::{read_cookie, set_cookie};
use super::signed_in_page::signed_in_page;
use super::{DemoAppError, DemoAppState, START};

/// `GET /`: the signed-in page, or the start page.
pub async fn start(State(state): State<DemoAppState>, headers: HeaderMap) -> Response {
    let page = read_cookie(&headers).and_then(|cookie| {
        state.sessions.with(cookie, |session| {
            let notice = session.notice.take();
            match &session.signed_in {
                Some(signed_in) => signed_in_page(signed_in, &session.csrf, notice.as_deref()),
                None => start_page(notice.as_deref()),
            }
        })
    });
    page.unwrap_or_else(|| start_page(None)).into_response()
}

/// `GET /signin?login_hint=…`: a fresh sign-in for this browser, and off to the
/// authorization endpoint.
pub async fn sign_in(
    State(state): State<DemoAppState>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<Response, DemoAppError> {
    let login_hint = query_pairs(query.as_deref().unwrap_or_default().as_bytes())
        .find(|(name, _)| name == "login_hint")
        .map(|(_, value)| value);
    let (pending, url) = flow::start_sign_in(&state.config, &*state.random, login_hint.as_deref())?;
    let (cookie, new_cookie) = session_of(&state, &headers)?;
    state
        .sessions
        .with(&cookie, |session| session.pending = Some(pending));
    let mut response = Redirect::to(url.as_str()).into_response();
    if let Some(value) = new_cookie {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    Ok(response)
}

/// `GET /callback`: the authorization response (RFC 6749 §4.1.2). The sign-in it answers is
/// used once, whatever the outcome; a success redirects to `/`, so the code leaves the
/// address bar and a reload does not replay it.
pub async fn callback(
    State(state): State<DemoAppState>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<Response, DemoAppError> {
    let params = callback_params(query.as_deref().unwrap_or_default());
    let cookie = read_cookie(&headers).ok_or(DemoAppError::NoSignInInProgress)?;
    let pending = state
        .sessions
        .with(cookie, |session| session.pending.take())
        .flatten()
        .ok_or(DemoAppError::NoSignInInProgress)?;
    let code = flow::check_callback(&pending, &params, state.config.issuer.as_str())?;
    let now = state.clock.now();
    let signed_in =
        flow::complete_sign_in(&state.client, &state.config, &pending, code, now).await?;
    state.sessions.with(cookie, |session| {
        session.signed_in = Some(signed_in);
        session.notice = Some("Signed in: the code was exchanged for tokens.".to_owned());
    });
    Ok(Redirect::to(START).into_response())
}

/// `POST /refresh`: new tokens for the refresh token. A refusal (a revoked grant, say) shows
/// the error page and keeps the tokens as they were.
pub async fn refresh(
    State(state): State<DemoAppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, DemoAppError> {
    let cookie = checked_form(&state, &headers, &body)?;
    let current = take_signed_in(&state, &cookie)?;
    let now = state.clock.now();
    let outcome = flow::refresh(&state.client, &state.config, &current, now).await;
    state
        .sessions
        .with(&cookie, |session| match outcome {
            Ok(next) => {
                session.signed_in = Some(next);
                session.notice =
                    Some("Tokens refreshed: the claims below are the new ones.".into());
                Ok(Redirect::to(START).into_response())
            }
            Err(error) => {
                session.signed_in = Some(current);
                Err(error)
            }
        })
        .unwrap_or(Err(DemoAppError::NotSignedIn))
}

/// `POST /revoke`: ends the grant (RFC 7009).
pub async fn revoke(
    State(state): State<DemoAppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, DemoAppError> {
    let cookie = checked_form(&state, &headers, &body)?;
    let mut current = take_signed_in(&state, &cookie)?;
    let outcome = flow::revoke(&state.client, &mut current).await;
    state.sessions.with(&cookie, |session| {
        session.signed_in = Some(current);
        if outcome.is_ok() {
            session.notice = Some("Revoked.".to_owned());
        }
    });
    outcome.map(|()| Redirect::to(START).into_response())
}

pub async fn not_found() -> Response {
    let page = error_page("Not found", "The demo app has no such page.");
    (StatusCode::NOT_FOUND, page).into_response()
}

/// This browser's session, or a new one with the `Set-Cookie` that names it.
fn session_of(
    state: &DemoAppState,
    headers: &HeaderMap,
) -> Result<(String, Option<HeaderValue>), DemoAppError> {
    if let Some(cookie) = read_cookie(headers) {
        if state.sessions.with(cookie, |_| ()).is_some() {
            return Ok((cookie.to_owned(), None));
        }
    }
    let token = || state.random.token().map_err(|_| DemoAppError::Randomness);
    let cookie = token()?;
    state.sessions.create(cookie.clone(), token()?);
    let header = set_cookie(&cookie).ok_or(DemoAppError::Randomness)?;
    Ok((cookie, Some(header)))
}

/// The cookie of a form post that carries its session's CSRF token.
fn checked_form(
    state: &DemoAppState,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<String, DemoAppError> {
    let cookie = read_cookie(headers).ok_or(DemoAppError::NotSignedIn)?;
    let sent = query_pairs(body)
        .find(|(name, _)| name == "csrf")
        .map(|(_, value)| value)
        .ok_or(DemoAppError::BadCsrf)?;
    let matches = state
        .sessions
        .with(cookie, |session| {
            bool::from(session.csrf.as_bytes().ct_eq(sent.as_bytes()))
        })
        .ok_or(DemoAppError::NotSignedIn)?;
    match matches {
        true => Ok(cookie.to_owned()),
        false => Err(DemoAppError::BadCsrf),
    }
}

/// The session's tokens, taken out while a request to the server runs (the lock is not held
/// across it); the caller puts them back.
fn take_signed_in(state: &DemoAppState, cookie: &str) -> Result<flow::SignedIn, DemoAppError> {
    state
        .sessions
        .with(cookie, |session| session.signed_in.take())
        .flatten()
        .ok_or(DemoAppError::NotSignedIn)
}

fn callback_params(query: &str) -> CallbackParams {
    let pairs: Vec<(String, String)> = query_pairs(query.as_bytes()).collect();
    // RFC 6749 §3.1: a parameter sent twice is as good as absent (keeping one would let an
    // appended copy go unnoticed).
    let single = |name: &str| {
        let mut values = pairs.iter().filter(|(k, _)| k == name).map(|(_, v)| v);
        match (values.next(), values.next()) {
            (Some(value), None) => Some(value.clone()),
            _ => None,
        }
    };
    CallbackParams {
        code: single("code"),
        state: single("state"),
        iss: single("iss"),
        error: single("error"),
        error_description: single("error_description"),
    }
}

fn query_pairs(input: &[u8]) -> impl Iterator<Item = (String, String)> + '_ {
    url::form_urlencoded::parse(input).map(|(k, v)| (k.into_owned(), v.into_owned()))
}
