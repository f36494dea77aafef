//! Passkeys at sign-in (issue 24): passwordless sign-in ("Sign in with a passkey" on the
//! sign-in page, for a pending authorization request or for the account page), and the
//! options of the second factor's ceremony for a browser whose session owes one. The start
//! endpoints answer JSON for the page's script (`assets/passkey.js`); the finish is the
//! script's form post. The assertion itself is checked in `mfa::passkeys`.

use std::net::IpAddr;

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use jose::UnixTime;
use serde_json::json;
use store::{AttemptEnd, FailureSubject, TenantId, TenantStore};

use crate::account::{self, csrf};
use crate::authorize::pending::{load_pending, Pending};
use crate::client_address::ClientAddress;
use crate::error::OAuthError;
use crate::events::Event;
use crate::mfa::amr_with;
use crate::mfa::passkeys::{finish_authentication, start_authentication, Challenge, Verified};
use crate::pages::{self, FormTarget, PageError, SignInPage};
use crate::params::{FormParams, Params};
use crate::second_factor::Step;
use crate::session;
use crate::signin::{finish_for_request, start_session, throttle_message, SessionStart};
use crate::state::OAuthState;
use crate::throttle;

/// What the page says for any passkey that did not sign the user in; the audit trail says
/// why.
const REFUSED: &str =
    "The passkey could not sign you in. Try again, or sign in with your username and password.";

/// Who a passwordless sign-in is for: an authorization request waiting for it, or the
/// account page of a tenant.
enum Front {
    Request(Box<Pending>),
    Account {
        tenant: TenantId,
        /// The browser's cookie value, which the form's token is derived from.
        cookie: Option<String>,
        csrf: String,
    },
}

impl Front {
    fn tenant(&self) -> &TenantId {
        match self {
            Front::Request(pending) => &pending.tenant,
            Front::Account { tenant, .. } => tenant,
        }
    }
}

/// The sign-in form's front end, once its CSRF token is checked as the password form's is.
async fn front(
    state: &OAuthState,
    params: &Params,
    headers: &HeaderMap,
    now: UnixTime,
) -> Result<Front, OAuthError> {
    let field = |name| params.single(name).ok().flatten();
    if field("request") != Some(account::SIGNIN_REQUEST) {
        let pending = load_pending(state, params, headers, now).await?;
        return Ok(Front::Request(Box::new(pending)));
    }
    let altered = OAuthError::InvalidFlow("The form is incomplete or was altered.");
    let tenant = field("tenant")
        .and_then(|tenant| TenantId::parse(tenant).ok())
        .ok_or(altered)?;
    let name = session::cookie_name(&tenant, state.config.issuer.is_https());
    let cookie = session::read_cookie(headers, &name);
    if !csrf::is_valid(field("csrf"), cookie) {
        tracing::warn!(tenant = %tenant, "passkey sign-in without its security token");
        return Err(OAuthError::InvalidFlow(
            "The form's security token is missing or wrong.",
        ));
    }
    if state.store.tenant(&tenant).find().await?.is_none() {
        return Err(OAuthError::InvalidFlow("This sign-in request is unknown."));
    }
    Ok(Front::Account {
        tenant,
        cookie: cookie.map(str::to_owned),
        csrf: field("csrf").unwrap_or_default().to_owned(),
    })
}

/// The form's parameters, each at most once.
fn single_params(form: Result<FormParams, OAuthError>) -> Result<Params, OAuthError> {
    let FormParams(params) = form?;
    match params.first_repeated() {
        Some(_) => Err(OAuthError::InvalidForm("a parameter is repeated")),
        None => Ok(params),
    }
}

/// `{ceremony, publicKey}` for the script, never cached.
fn challenge_json(challenge: Challenge) -> Response {
    let mut body = challenge.options;
    if let Some(object) = body.as_object_mut() {
        object.insert("ceremony".to_owned(), json!(challenge.ceremony));
    }
    let mut response = Json(body).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// `POST /oauth/signin/passkey/start`: the options of a discoverable ceremony for the
/// sign-in form (same fields as the password form). Bad input is a JSON 400.
pub async fn post_signin_passkey_start(
    State(state): State<OAuthState>,
    headers: HeaderMap,
    form: Result<FormParams, OAuthError>,
) -> Result<Response, OAuthError> {
    let params = single_params(form)?;
    let now = state.clock.now();
    let front = front(&state, &params, &headers, now).await?;
    let challenge = start_authentication(&state, front.tenant(), None, now).await?;
    Ok(challenge_json(challenge))
}

/// `POST /oauth/second-factor/passkey/start`: the options of a ceremony for the user of the
/// browser's session, one that still owes its second factor included, from the second
/// step's form (`tenant`, `request`, `csrf`).
pub async fn post_second_factor_passkey_start(
    State(state): State<OAuthState>,
    headers: HeaderMap,
    form: Result<FormParams, OAuthError>,
) -> Result<Response, OAuthError> {
    let params = single_params(form)?;
    let now = state.clock.now();
    // The step's own form: checked as its answer will be (request or account page, CSRF
    // token, the browser's session).
    let step = Step::load(&state, &params, &headers, now).await?;
    let (tenant, user_id) = (&step.tenant, step.user.user_id.as_str());
    let challenge = start_authentication(&state, tenant, Some(user_id), now).await?;
    Ok(challenge_json(challenge))
}

/// `POST /oauth/signin/passkey`: the script's form with the assertion. A passkey that
/// verifies starts a session that has proved two factors (the key and its user
/// verification); anything else shows the sign-in page again.
pub async fn post_signin_passkey(
    State(state): State<OAuthState>,
    ClientAddress(address): ClientAddress,
    headers: HeaderMap,
    form: Result<FormParams, OAuthError>,
) -> Result<Response, PageError> {
    let params = single_params(form)?;
    let now = state.clock.now();
    let front = front(&state, &params, &headers, now).await?;
    let field = |name| params.single(name).ok().flatten().unwrap_or_default();
    Ok(sign_in(
        &state,
        &front,
        field("ceremony"),
        field("credential"),
        address,
        now,
    )
    .await?)
}

/// Verifies the assertion under the address's sign-in throttle and signs its user in.
async fn sign_in(
    state: &OAuthState,
    front: &Front,
    ceremony: &str,
    credential: &str,
    address: IpAddr,
    now: UnixTime,
) -> Result<Response, OAuthError> {
    let tenant = front.tenant();
    let records = state.store.tenant(tenant);
    let throttle = match AddressAttempt::reserve(state, &records, address, now).await? {
        Ok(attempt) => attempt,
        Err(message) => {
            return Ok(retry_page(
                state,
                front,
                StatusCode::TOO_MANY_REQUESTS,
                &message,
            ))
        }
    };
    let verified = match finish_authentication(state, tenant, ceremony, credential, None, now).await
    {
        Ok(verified) => verified,
        Err(error) => {
            throttle.end(AttemptEnd::Released).await;
            return Err(error);
        }
    };
    let user = match &verified {
        Some(verified) => active_user(state, &records, verified, now).await,
        None => Ok(None),
    };
    let user = match user {
        Ok(user) => user,
        Err(error) => {
            throttle.end(AttemptEnd::Released).await;
            return Err(error);
        }
    };
    let (Some(verified), Some(user)) = (verified, user) else {
        throttle.failed().await;
        return Ok(retry_page(state, front, StatusCode::OK, REFUSED));
    };
    throttle.end(AttemptEnd::Released).await;
    let amr = amr_with("", verified.factor);
    let how = SessionStart {
        amr: &amr,
        factor_due: None,
        mfa_at: Some(now),
    };
    match front {
        Front::Request(pending) => {
            let client_id = Some(pending.client.client_id.as_str());
            let started = start_session(state, tenant, user, how, client_id, address, now).await?;
            finish_for_request(state, pending, started, now).await
        }
        Front::Account { cookie, .. } => {
            let started = start_session(state, tenant, user, how, None, address, now).await?;
            account::finish_account_signin(state, tenant, cookie.as_deref(), started, now).await
        }
    }
}

/// The passkey's user, unless the account was disabled meanwhile: refused like any failed
/// sign-in, and audited.
async fn active_user(
    state: &OAuthState,
    records: &TenantStore<'_>,
    verified: &Verified,
    now: UnixTime,
) -> Result<Option<store::User>, OAuthError> {
    match records.find_admin_user(&verified.user_id).await? {
        Some(user) if user.disabled_at.is_none() => Ok(Some(user.user)),
        found => {
            if found.is_some() {
                let event = Event::PasskeyFailed {
                    user_id: Some(&verified.user_id),
                    why: "account disabled",
                };
                state.record(records.id(), event, now).await;
            }
            Ok(None)
        }
    }
}

/// The sign-in page again, with why.
fn retry_page(state: &OAuthState, front: &Front, status: StatusCode, message: &str) -> Response {
    let (client_name, request, csrf) = match front {
        Front::Request(pending) => (
            pending.client.name.as_str(),
            pending.handle.as_str(),
            pending.csrf.as_str(),
        ),
        Front::Account { csrf, .. } => ("your account", account::SIGNIN_REQUEST, csrf.as_str()),
    };
    let tenant = front.tenant().as_str();
    pages::render(
        &SignInPage {
            client_name,
            tenant,
            request,
            csrf,
            username: "",
            message: Some(message),
            recover_url: crate::recovery::link_for(state, tenant),
        },
        status,
        FormTarget::SelfOnly,
    )
}

/// A passwordless attempt's place in the client address's sign-in count (the account is not
/// known before the assertion names it): a refused assertion is a failure of the address,
/// as a wrong password is, so the same lock stops a run of forged assertions.
struct AddressAttempt<'a> {
    records: &'a TenantStore<'a>,
    key: String,
    window_start: UnixTime,
    now: UnixTime,
}

impl<'a> AddressAttempt<'a> {
    async fn reserve(
        state: &OAuthState,
        records: &'a TenantStore<'a>,
        address: IpAddr,
        now: UnixTime,
    ) -> Result<Result<AddressAttempt<'a>, String>, OAuthError> {
        let policy = state.signin.throttle;
        let key = throttle::address_key(address);
        let subject = FailureSubject::Address(&key);
        let count = records.signin_failures(subject).await?;
        let verdict = policy.address_verdict(count, now);
        if let Some(message) = throttle_message(verdict) {
            records.count_signin_refusal(subject).await?;
            return Ok(Err(message));
        }
        let window_start = now - policy.window();
        let places = policy.address_places(count, now);
        if records
            .reserve_signin_attempt(subject, places, now, window_start)
            .await?
            .is_none()
        {
            return Ok(Err(
                "Too many sign-in attempts at once: try again in a moment.".to_owned(),
            ));
        }
        Ok(Ok(AddressAttempt {
            records,
            key,
            window_start,
            now,
        }))
    }

    /// The assertion was refused: the place becomes a failure.
    async fn failed(self) {
        let subject = FailureSubject::Address(&self.key);
        if let Err(error) = self
            .records
            .record_signin_failure(subject, self.now, self.window_start)
            .await
        {
            tracing::warn!(error = %crate::error_chain(&error), "passkey sign-in failure not counted");
        }
    }

    /// The place is given back (the address may be shared by many users).
    async fn end(self, end: AttemptEnd) {
        let subject = FailureSubject::Address(&self.key);
        if let Err(error) = self
            .records
            .end_signin_attempt(subject, end, self.now, self.window_start)
            .await
        {
            tracing::warn!(error = %crate::error_chain(&error), "passkey sign-in place not given back");
        }
    }
}
