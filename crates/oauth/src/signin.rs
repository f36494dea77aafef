//! `POST /oauth/signin`: check the username and password for a pending authorization
//! request, throttled per account and per client address, then start a browser session and
//! show the consent screen.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use jose::UnixTime;
use secrecy::SecretString;
use store::{FailureCount, FailureSubject, TenantStore};

use crate::authorize::pending::{load_pending, Pending};
use crate::consent;
use crate::error::OAuthError;
use crate::events::Event;
use crate::pages::{self, FormTarget, PageError, SignInPage};
use crate::params::FormParams;
use crate::password;
use crate::secret::hash_secret;
use crate::session;
use crate::state::OAuthState;
use crate::throttle::{ThrottlePolicy, Verdict};
use crate::username::Username;

/// The client's IP address, from the connection (a proxy in front must be trusted
/// separately; behind one, every client shares the proxy's address bucket).
#[derive(Clone, Copy, Debug)]
pub struct ClientAddress(pub IpAddr);

impl<S: Send + Sync> FromRequestParts<S> for ClientAddress {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        _state: &S,
    ) -> Result<ClientAddress, Self::Rejection> {
        let ip = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |info| info.0.ip());
        Ok(ClientAddress(ip))
    }
}

pub async fn post_signin(
    State(state): State<OAuthState>,
    ClientAddress(address): ClientAddress,
    headers: HeaderMap,
    form: Result<FormParams, OAuthError>,
) -> Result<Response, PageError> {
    let FormParams(params) = form?;
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
    let refuse = |status, message| retry_page(pending, typed_username, status, message);
    let (Ok(username), Some(password)) = (Username::parse(typed_username), password) else {
        return Ok(refuse(StatusCode::OK, "Enter your username and password."));
    };
    let address = address.to_string();
    let account = FailureSubject::Account(username.as_str());
    let from_address = FailureSubject::Address(&address);
    let policy = state.signin.throttle;
    let previous = tenant.signin_failures(account).await?;
    let verdict = policy
        .account_verdict(previous, now)
        .and(policy.address_verdict(tenant.signin_failures(from_address).await?, now));
    let refused = Event::SignInRefused {
        username: username.as_str(),
        client_id: &pending.client.client_id,
        address: &address,
    };
    if let Some(message) = throttle_message(verdict) {
        tracing::warn!(tenant = %pending.tenant, "sign-in refused by the throttle");
        state.record(&pending.tenant, refused, now).await;
        return Ok(refuse(StatusCode::TOO_MANY_REQUESTS, &message));
    }
    // The attempt is counted as a failure before the password is checked (and forgiven on
    // success), so parallel guesses each take a place in the count: no more than the limit
    // of them reach Argon2 before the account locks.
    let attempt = tenant
        .record_signin_failure(account, now, now - policy.window())
        .await?;
    if attempt.failures > policy.attempts_allowed_after(previous, now) {
        tracing::warn!(tenant = %pending.tenant, "sign-in refused by the throttle");
        state.record(&pending.tenant, refused, now).await;
        let locked = Verdict::Locked(policy.lock_seconds);
        return Ok(refuse(
            StatusCode::TOO_MANY_REQUESTS,
            &throttle_message(locked).unwrap_or_default(),
        ));
    }

    let user = tenant.find_user_by_username(username.as_str()).await?;
    // An unknown user is checked against a dummy hash, so both failures cost the same time.
    let hash = user.as_ref().map_or_else(
        || state.signin.dummy_hash.to_string(),
        |u| u.password_hash.clone(),
    );
    let matches = verify_bounded(state, password, hash).await?;
    let Some(user) = user.filter(|_| matches) else {
        let (response, locked) = failed(
            &tenant,
            policy,
            pending,
            typed_username,
            attempt,
            from_address,
            now,
        )
        .await?;
        let event = Event::SignInFailed {
            username: username.as_str(),
            client_id: &pending.client.client_id,
            address: &address,
            locked,
        };
        state.record(&pending.tenant, event, now).await;
        return Ok(response);
    };

    tenant.clear_signin_failures(account).await?;
    let session_value = state.random.token()?;
    let session_hash = hash_secret(&session_value);
    tenant
        .create_browser_session(
            &session_hash,
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
    tenant.delete_browser_session(&old_hash).await?;
    tracing::info!(tenant = %pending.tenant, client_id = %pending.client.client_id, sub = %user.user_id, "signed in");
    let event = Event::SignedIn {
        user_id: &user.user_id,
        client_id: &pending.client.client_id,
        address: &address,
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

async fn failed(
    tenant: &TenantStore<'_>,
    policy: ThrottlePolicy,
    pending: &Pending,
    typed_username: &str,
    by_account: FailureCount,
    from_address: FailureSubject<'_>,
    now: UnixTime,
) -> Result<(Response, bool), OAuthError> {
    let by_address = tenant
        .record_signin_failure(from_address, now, now - policy.window())
        .await?;
    tracing::warn!(tenant = %pending.tenant, client_id = %pending.client.client_id, "sign-in failed");
    let locked = policy
        .account_verdict(Some(by_account), now)
        .and(policy.address_verdict(Some(by_address), now));
    let message = match locked {
        Verdict::Locked(_) => format!(
            "Incorrect username or password. {}",
            throttle_message(locked).unwrap_or_default()
        ),
        _ => "Incorrect username or password.".to_owned(),
    };
    let page = retry_page(pending, typed_username, StatusCode::OK, &message);
    Ok((page, matches!(locked, Verdict::Locked(_))))
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
