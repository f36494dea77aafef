//! `POST /oauth/signin`: check the username and password for a pending authorization
//! request, throttled per account and per client address, then start a browser session and
//! show the consent screen.

use std::net::IpAddr;

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use jose::UnixTime;
use secrecy::SecretString;
use store::{FailureSubject, TenantStore};

use crate::authorize::pending::{load_pending, Pending};
use crate::client_address::ClientAddress;
use crate::consent;
use crate::error::OAuthError;
use crate::events::Event;
use crate::pages::{self, FormTarget, PageError, SignInPage};
use crate::params::FormParams;
use crate::password;
use crate::secret::hash_secret;
use crate::session;
use crate::state::OAuthState;
use crate::throttle::{self, Verdict};
use crate::username::Username;
use attempt::Attempt;

mod attempt;

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
    let pending = load_pending(&state, &params, &headers, now).await?;
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
    Ok(sign_in(&state, &pending, &username, password, address, now).await?)
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
    let tenant = state.store.tenant(&pending.tenant);
    let refuse = |status, message| retry_page(state, pending, typed_username, status, message);
    let (Ok(username), Some(password)) = (Username::parse(typed_username), password) else {
        return Ok(refuse(StatusCode::OK, "Enter your username and password."));
    };
    let shown_address = address.to_string();
    let address_key = throttle::address_key(address);
    let address = shown_address.as_str();
    let account = FailureSubject::Account(username.as_str());
    let from_address = FailureSubject::Address(&address_key);
    let policy = state.signin.throttle;
    let attempt = match Attempt::reserve(&tenant, policy, account, from_address, now).await? {
        Ok(attempt) => attempt,
        Err(refused) => {
            tracing::warn!(tenant = %pending.tenant, "sign-in refused by the throttle");
            let event = Event::SignInRefused {
                username: username.as_str(),
                client_id: &pending.client.client_id,
                address,
                audited: refused.first,
            };
            state.record(&pending.tenant, event, now).await;
            return Ok(refuse(StatusCode::TOO_MANY_REQUESTS, &refused.message));
        }
    };

    let user = match check_password(state, &tenant, &username, password).await {
        Ok(user) => user,
        Err(error) => {
            attempt.abandon().await;
            return Err(error);
        }
    };
    // Whatever the reason, the page says the same as for a wrong password: it must not tell
    // a guesser which accounts exist or are disabled. The audit trail says why.
    let user = match user {
        Checked::Valid(user) => user,
        Checked::Refused(why) => {
            let locked = attempt.failed().await?;
            tracing::warn!(tenant = %pending.tenant, client_id = %pending.client.client_id, "sign-in failed");
            let message = match locked {
                Verdict::Locked(_) => format!(
                    "Incorrect username or password. {}",
                    throttle_message(locked).unwrap_or_default()
                ),
                _ => "Incorrect username or password.".to_owned(),
            };
            let event = Event::SignInFailed {
                username: username.as_str(),
                client_id: &pending.client.client_id,
                address,
                why,
                locked: matches!(locked, Verdict::Locked(_)),
            };
            state.record(&pending.tenant, event, now).await;
            return Ok(refuse(StatusCode::OK, &message));
        }
    };
    attempt.succeeded().await?;

    let session_value = state.random.token()?;
    let session_hash = hash_secret(&session_value);
    // The session's public name in ID and logout tokens, unrelated to the cookie's value.
    let sid = state.random.token()?;
    tenant
        .create_browser_session(
            &session_hash,
            &sid,
            &user.user_id,
            now,
            now + session::SESSION_LIFETIME,
            now,
        )
        .await?;
    let old_hash = hash_secret(&pending.browser_value);
    if !tenant
        .record_signin(
            &pending.request_hash,
            &old_hash,
            &session_hash,
            &user.user_id,
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
    tracing::info!(tenant = %pending.tenant, client_id = %pending.client.client_id, sub = %user.user_id, "signed in");
    let event = Event::SignedIn {
        user_id: &user.user_id,
        client_id: &pending.client.client_id,
        address,
    };
    state.record(&pending.tenant, event, now).await;

    let https = state.config.issuer.is_https();
    let cookie = session::set_cookie(
        &session::cookie_name(&pending.tenant, https),
        &session_value,
        https,
    )?;
    let mut response = consent::render_consent(
        &tenant,
        &pending.client,
        &user.user_id,
        &pending.request.scope,
        &pending.request.redirect_uri,
        &pending.handle,
        &pending.csrf,
    )
    .await?;
    response.headers_mut().append(header::SET_COOKIE, cookie);
    Ok(response)
}

/// What checking a username and password found.
enum Checked {
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
) -> Result<Checked, OAuthError> {
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
        (_, Some(why)) => Checked::Refused(why),
        (Some(user), None) if matches => Checked::Valid(user.user),
        _ => Checked::Refused("wrong username or password"),
    })
}

fn throttle_message(verdict: Verdict) -> Option<String> {
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
