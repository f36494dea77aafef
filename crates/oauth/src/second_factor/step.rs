//! One second step: the browser's session (signed in, or owing its second factor), its
//! user, and what the step leads to: a pending authorization request's consent, or the
//! account page.

use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use jose::UnixTime;
use store::{BrowserSession, MfaPolicy, TenantId};

use super::page::{self, StepForm, StepMode};
use crate::account;
use crate::authorize::pending::{load_pending, Pending};
use crate::consent;
use crate::error::OAuthError;
use crate::mfa;
use crate::params::Params;
use crate::secret::hash_secret;
use crate::session;
use crate::state::OAuthState;

/// What the step leads to once done.
pub(crate) enum Target {
    /// The consent screen of this pending authorization request.
    Request(Box<Pending>),
    /// The account page.
    Account,
}

pub(crate) struct Step {
    pub tenant: TenantId,
    pub target: Target,
    pub session_hash: [u8; 32],
    pub session: BrowserSession,
    pub user: store::User,
    /// The forms' CSRF token: the request's, or the account pages' token of the cookie.
    pub csrf: String,
}

const ALTERED: OAuthError = OAuthError::InvalidFlow("The form is incomplete or was altered.");
const ENDED: OAuthError = OAuthError::InvalidFlow("Your sign-in has ended. Sign in again.");

impl Step {
    /// The step a form of the page belongs to: its tenant, its request (checked like every
    /// sign-in form: bound to this browser, with its CSRF token) or the account page (the
    /// cookie-derived token), and the browser's session, owing a factor or not.
    pub(crate) async fn load(
        state: &OAuthState,
        params: &Params,
        headers: &HeaderMap,
        now: UnixTime,
    ) -> Result<Step, OAuthError> {
        let field = |name| params.single(name).ok().flatten();
        let tenant = field("tenant")
            .and_then(|t| TenantId::parse(t).ok())
            .ok_or(ALTERED)?;
        let cookie_name = session::cookie_name(&tenant, state.config.issuer.is_https());
        let cookie = session::read_cookie(headers, &cookie_name).ok_or(ENDED)?;
        let (target, csrf) = match field("request") {
            Some(account::SIGNIN_REQUEST) => {
                if !account::csrf::is_valid(field("csrf"), Some(cookie)) {
                    tracing::warn!(tenant = %tenant, "second-factor form without its security token");
                    return Err(OAuthError::InvalidFlow(
                        "The form's security token is missing or wrong.",
                    ));
                }
                (Target::Account, account::csrf::token_for(cookie))
            }
            Some(_) => {
                let pending = load_pending(state, params, headers, now).await?;
                let csrf = pending.csrf.clone();
                (Target::Request(Box::new(pending)), csrf)
            }
            None => return Err(ALTERED),
        };
        let records = state.store.tenant(&tenant);
        let session_hash = hash_secret(cookie);
        let session = records
            .find_any_browser_session(&session_hash, now)
            .await?
            .ok_or(ENDED)?;
        if let Target::Request(pending) = &target {
            if pending.request.user_id.as_deref() != Some(session.user_id.as_str()) {
                return Err(ENDED);
            }
        }
        let user = records.find_user(&session.user_id).await?.ok_or(ENDED)?;
        Ok(Step {
            tenant,
            target,
            session_hash,
            session,
            user,
            csrf,
        })
    }

    /// The application the sign-in is for, for the audit trail (none for the account page).
    pub(crate) fn client_id(&self) -> Option<&str> {
        match &self.target {
            Target::Request(pending) => Some(pending.client.client_id.as_str()),
            Target::Account => None,
        }
    }

    fn form(&self) -> StepForm<'_> {
        let (client_name, request) = match &self.target {
            Target::Request(pending) => (pending.client.name.as_str(), pending.handle.as_str()),
            Target::Account => ("your account", account::SIGNIN_REQUEST),
        };
        StepForm {
            client_name,
            username: &self.user.username,
            tenant: self.tenant.as_str(),
            request,
            csrf: &self.csrf,
        }
    }

    pub(crate) fn render(
        &self,
        mode: &StepMode,
        message: Option<&str>,
        status: StatusCode,
    ) -> Response {
        page::render(&self.form(), mode, message, status)
    }

    /// The page for what the user can do now: prove a factor they have, or set one up.
    pub(crate) async fn show(
        &self,
        state: &OAuthState,
        message: Option<&str>,
        status: StatusCode,
    ) -> Result<Response, OAuthError> {
        let mode = mode_for(state, &self.tenant, &self.user).await?;
        Ok(self.render(&mode, message, status))
    }

    /// Whether the user may set up a factor here: they have none, and the tenant allows one.
    pub(crate) async fn may_enroll(&self, state: &OAuthState) -> Result<bool, OAuthError> {
        let standing = state
            .store
            .tenant(&self.tenant)
            .second_factor_standing(&self.user.user_id)
            .await?;
        Ok(!standing.factors.any() && standing.policy != MfaPolicy::Off)
    }

    /// Goes on once the session owes nothing: the consent screen, or the account page.
    pub(crate) async fn proceed(
        &self,
        state: &OAuthState,
        now: UnixTime,
    ) -> Result<Response, OAuthError> {
        let records = state.store.tenant(&self.tenant);
        let session = records
            .find_browser_session(&self.session_hash, now)
            .await?
            .ok_or(ENDED)?;
        match &self.target {
            Target::Account => Ok(account::home(&self.tenant)),
            Target::Request(pending) => {
                if needs_step_up(state, pending, &session).await? {
                    return self.show(state, None, StatusCode::OK).await;
                }
                consent::render_consent(
                    &records,
                    &pending.client,
                    &session.user_id,
                    &pending.request.scope,
                    &pending.request.redirect_uri,
                    &pending.handle,
                    &pending.csrf,
                )
                .await
            }
        }
    }
}

/// Whether a signed-in session must prove a factor again for this request: its
/// `acr_values` asked for one proved since it began, and the tenant has second factors on.
pub(crate) async fn needs_step_up(
    state: &OAuthState,
    pending: &Pending,
    session: &BrowserSession,
) -> Result<bool, OAuthError> {
    if !pending.request.acr_mfa
        || session
            .mfa_at
            .is_some_and(|at| at >= pending.request.created_at)
    {
        return Ok(false);
    }
    let policy = state.store.tenant(&pending.tenant).mfa_policy().await?;
    Ok(policy != MfaPolicy::Off)
}

/// The user's factors to choose from, or, with none, an authenticator to set up.
async fn mode_for(
    state: &OAuthState,
    tenant: &TenantId,
    user: &store::User,
) -> Result<StepMode, OAuthError> {
    let records = state.store.tenant(tenant);
    let standing = records.second_factor_standing(&user.user_id).await?;
    if standing.factors.any() {
        let recovery = mfa::recovery_codes::remaining(state, tenant, &user.user_id).await? > 0;
        return Ok(StepMode::Verify {
            totp: standing.factors.totp,
            passkey: standing.factors.passkeys > 0,
            recovery,
        });
    }
    // The key being set up stays the same across a wrong first code.
    let enrollment = match mfa::totp::pending_enrollment(state, tenant, user).await? {
        Some(enrollment) => enrollment,
        None => mfa::totp::begin_enrollment(state, tenant, user, state.clock.now()).await?,
    };
    Ok(StepMode::Enroll {
        secret: enrollment.secret_base32,
        qr_svg: enrollment.qr_svg,
    })
}

/// The second step's first page, right after the password (or a request's `acr_values`):
/// the session's cookie is set on it when the session just started.
pub(crate) async fn show_step(
    state: &OAuthState,
    form: StepForm<'_>,
    tenant: &TenantId,
    user: &store::User,
    cookie: Option<header::HeaderValue>,
) -> Result<Response, OAuthError> {
    let mode = mode_for(state, tenant, user).await?;
    let mut response = page::render(&form, &mode, None, StatusCode::OK);
    if let Some(cookie) = cookie {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    Ok(response)
}
