//! `GET /oauth/authorize`: validate the request, remember it, and show the sign-in form or,
//! for a browser already signed in to the tenant, the consent screen.

pub mod pending;
pub mod redirect;
pub mod request;

use std::net::IpAddr;

use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use jose::UnixTime;
use store::NewAuthorizationRequest;

use crate::client_address::ClientAddress;
use crate::consent;
use crate::error::OAuthError;
use crate::pages::{self, SignInPage};
use crate::params::Params;
use crate::second_factor::{self, page::StepForm};
use crate::secret::hash_secret;
use crate::session;
use crate::state::OAuthState;
use crate::throttle;
use redirect::{AuthorizeErrorCode, ErrorRedirect};
use request::ValidatedRequest;

/// How long a user has between the authorization request and the consent.
pub const REQUEST_LIFETIME: UnixTime = 600;

pub async fn get_authorize(
    State(state): State<OAuthState>,
    ClientAddress(address): ClientAddress,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, pages::PageError> {
    let now = state.clock.now();
    // Nothing of a query that does not decode can be trusted, the redirect URI included.
    let params = Params::parse(query.as_deref().unwrap_or_default().as_bytes()).map_err(|_| {
        OAuthError::UntrustedRequest("The request's percent-encoding is not UTF-8.")
    })?;
    Ok(start_authorization(&state, &params, &headers, address, now).await?)
}

/// OpenID Connect Core §3.1.2.2–3.1.2.4: validate, then authenticate (or reuse the session),
/// then ask for consent.
pub async fn start_authorization(
    state: &OAuthState,
    params: &Params,
    headers: &HeaderMap,
    address: IpAddr,
    now: UnixTime,
) -> Result<Response, OAuthError> {
    let target = request::resolve_target(params, &state.store).await?;
    let issuer = state.config.issuer.as_str();
    let request = request::validate(params, target, issuer)?;
    let tenant = state.store.tenant(&request.target.tenant);
    let https = state.config.issuer.is_https();
    let cookie_name = session::cookie_name(&request.target.tenant, https);
    let cookie = session::read_cookie(headers, &cookie_name);
    let session = session::find_session(&tenant, cookie, now).await?;
    let anonymous = session.is_none();
    // §3.1.2.1: prompt=login and an exceeded max_age demand a fresh sign-in.
    let reusable = session.filter(|s| {
        !request.prompt.login
            && request
                .max_age
                .is_none_or(|max_age| now - s.auth_time <= max_age)
    });
    if request.prompt.none {
        // No page may be shown, and consent (the organization choice) always needs one.
        let (error, description) = match reusable {
            None => (
                AuthorizeErrorCode::LoginRequired,
                "the user is not signed in",
            ),
            Some(_) => (
                AuthorizeErrorCode::ConsentRequired,
                "the user must choose an organization",
            ),
        };
        return Err(OAuthError::Redirect(Box::new(ErrorRedirect {
            redirect_uri: request.target.redirect_uri.clone(),
            error,
            description,
            state: Some(request.state.clone()),
            issuer: issuer.to_owned(),
        })));
    }

    if anonymous {
        take_quota(state, &request, address, now).await?;
    }

    // The browser value binds the request to this browser: the session cookie when there is
    // one, else a fresh value set now.
    let (browser_value, set_cookie) = match cookie {
        Some(value) => (value.to_owned(), None),
        None => {
            let value = state.random.token()?;
            let header = session::set_cookie(&cookie_name, &value, https)?;
            (value, Some(header))
        }
    };
    let handle = state.random.token()?;
    let csrf = state.random.token()?;
    remember(
        state,
        &request,
        &handle,
        &csrf,
        &browser_value,
        reusable.as_ref(),
        now,
    )
    .await?;

    let mut response = match &reusable {
        // acr_values asked for a second factor proved during this request: the session
        // proves one again before consent.
        Some(session) if request.acr_mfa && second_factors_on(&tenant).await? => {
            let user = tenant
                .find_user(&session.user_id)
                .await?
                .ok_or(OAuthError::InvalidFlow(
                    "The signed-in account no longer exists.",
                ))?;
            let form = StepForm {
                client_name: &request.target.client.name,
                username: &user.username,
                tenant: request.target.tenant.as_str(),
                request: &handle,
                csrf: &csrf,
            };
            second_factor::show_step(state, form, &request.target.tenant, &user, None).await?
        }
        Some(session) => {
            consent::render_consent(
                &tenant,
                &request.target.client,
                &session.user_id,
                &scope_string(&request),
                &request.target.redirect_uri,
                &handle,
                &csrf,
            )
            .await?
        }
        None => pages::render(
            &SignInPage {
                client_name: &request.target.client.name,
                tenant: request.target.tenant.as_str(),
                request: &handle,
                csrf: &csrf,
                username: request.login_hint.as_deref().unwrap_or_default(),
                message: None,
                recover_url: crate::recovery::link_for(state, request.target.tenant.as_str()),
            },
            axum::http::StatusCode::OK,
            pages::FormTarget::SelfOnly,
        ),
    };
    if let Some(cookie) = set_cookie {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    Ok(response.into_response())
}

async fn second_factors_on(tenant: &store::TenantStore<'_>) -> Result<bool, OAuthError> {
    Ok(tenant.mfa_policy().await? != store::MfaPolicy::Off)
}

fn scope_string(request: &ValidatedRequest) -> String {
    request
        .scopes
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Anyone may start an authorization request, and each is stored until it expires: without
/// a session, one client address may start only so many per window (per tenant, counted in
/// the store for every node). Past that, RFC 6749 §4.1.2.1 `temporarily_unavailable`, and
/// nothing is written.
async fn take_quota(
    state: &OAuthState,
    request: &ValidatedRequest,
    address: IpAddr,
    now: UnixTime,
) -> Result<(), OAuthError> {
    let limit = state.signin.throttle.max_authorize_requests_per_address;
    let taken = state
        .store
        .tenant(&request.target.tenant)
        .take_authorization_request_quota(
            &throttle::address_key(address),
            limit,
            now,
            throttle::REQUEST_QUOTA_WINDOW,
        )
        .await?;
    if taken {
        return Ok(());
    }
    tracing::warn!(tenant = %request.target.tenant, "authorization request refused: the address's quota is used up");
    Err(OAuthError::Redirect(Box::new(ErrorRedirect {
        redirect_uri: request.target.redirect_uri.clone(),
        error: AuthorizeErrorCode::TemporarilyUnavailable,
        description: "too many sign-in requests from this address; try again later",
        state: Some(request.state.clone()),
        issuer: state.config.issuer.as_str().to_owned(),
    })))
}

async fn remember(
    state: &OAuthState,
    request: &ValidatedRequest,
    handle: &str,
    csrf: &str,
    browser_value: &str,
    session: Option<&store::BrowserSession>,
    now: UnixTime,
) -> Result<(), OAuthError> {
    let scope = scope_string(request);
    let new = NewAuthorizationRequest {
        request_hash: &hash_secret(handle),
        client_id: &request.target.client.client_id,
        redirect_uri: &request.target.redirect_uri,
        scope: &scope,
        state: &request.state,
        nonce: request.nonce.as_deref(),
        code_challenge: &request.code_challenge,
        login_hint: request.login_hint.as_deref(),
        browser_hash: &hash_secret(browser_value),
        csrf_hash: &hash_secret(csrf),
        user_id: session.map(|s| s.user_id.as_str()),
        auth_time: session.map(|s| s.auth_time),
        acr_mfa: request.acr_mfa,
        expires_at: now + REQUEST_LIFETIME,
    };
    state
        .store
        .tenant(&request.target.tenant)
        .create_authorization_request(&new, now)
        .await?;
    Ok(())
}
