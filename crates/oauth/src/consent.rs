//! The consent screen and `POST /oauth/authorize`, which takes the user's decision: approved
//! scopes and one organization, or a denial. Either way the request is used up.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use jose::UnixTime;
use store::{Client, MfaPolicy, NewAuthorizationCode, TenantStore};

use crate::authorize::pending::{load_pending, Pending};
use crate::authorize::redirect::{self, AuthorizeErrorCode, ErrorRedirect};
use crate::error::OAuthError;
use crate::events::Event;
use crate::pages::{self, ConsentPage, FormTarget, OrganizationChoice, PageError, ScopeChoice};
use crate::params::{FormParams, Params};
use crate::scope::Scope;
use crate::secret::hash_secret;
use crate::session;
use crate::state::OAuthState;

/// Authorization codes live 60 seconds (DESIGN.md; RFC 6749 §4.1.2 recommends at most 10
/// minutes).
pub const CODE_LIFETIME: UnixTime = 60;

/// Renders the consent screen for a signed-in user.
pub async fn render_consent(
    tenant: &TenantStore<'_>,
    client: &Client,
    user_id: &str,
    scope: &str,
    redirect_uri: &str,
    handle: &str,
    csrf: &str,
) -> Result<Response, OAuthError> {
    let user = tenant
        .find_user(user_id)
        .await?
        .ok_or(OAuthError::InvalidFlow(
            "The signed-in account no longer exists.",
        ))?;
    let organizations = tenant
        .organizations_of(user_id)
        .await?
        .into_iter()
        .map(|o| OrganizationChoice {
            guid: o.organization_guid,
            name: o.name,
        })
        .collect();
    let scopes = scope
        .split(' ')
        .filter_map(|name| Scope::parse(name).ok())
        .map(|scope| ScopeChoice {
            name: scope.as_str(),
            description: scope.description(),
            required: scope == Scope::OpenId,
        })
        .collect();
    let page = ConsentPage {
        client_name: &client.name,
        user_name: &user.name,
        username: &user.username,
        tenant: tenant.id().as_str(),
        request: handle,
        csrf,
        scopes,
        organizations,
    };
    let csp_source = pages::csp_source_for(redirect_uri);
    let forms = match &csp_source {
        Some(source) => FormTarget::SelfAnd(source),
        None => FormTarget::SelfOnly,
    };
    Ok(pages::render(&page, StatusCode::OK, forms))
}

pub async fn post_consent(
    State(state): State<OAuthState>,
    headers: HeaderMap,
    form: Result<FormParams, OAuthError>,
) -> Result<Response, PageError> {
    // A body that is not a form is refused with a page, like every other error here.
    let FormParams(params) = form?;
    let now = state.clock.now();
    let pending = load_pending(&state, &params, &headers, now).await?;
    Ok(decide(&state, &pending, &params, now).await?)
}

/// Applies the decision. Every check passes before the request is consumed, and the request
/// is consumed before a code exists, so one consent yields at most one code.
pub async fn decide(
    state: &OAuthState,
    pending: &Pending,
    params: &Params,
    now: UnixTime,
) -> Result<Response, OAuthError> {
    let tenant = state.store.tenant(&pending.tenant);
    let user_id = pending
        .request
        .user_id
        .as_deref()
        .ok_or(OAuthError::InvalidFlow("Sign in before giving consent."))?;
    let session = session::find_session(&tenant, Some(&pending.browser_value), now).await?;
    let Some(session) = session.filter(|s| s.user_id == user_id) else {
        return Err(OAuthError::InvalidFlow(
            "Your sign-in has ended. Sign in again.",
        ));
    };
    // acr_values asked for a second factor proved during this request. The pages lead there
    // before consent; a form posted around them finds it missing here.
    if pending.request.acr_mfa
        && session
            .mfa_at
            .is_none_or(|at| at < pending.request.created_at)
        && tenant.mfa_policy().await? != MfaPolicy::Off
    {
        return Err(OAuthError::InvalidFlow(
            "This app asked for a second factor: sign in again.",
        ));
    }
    let issuer = state.config.issuer.as_str();
    let request = &pending.request;
    let decision = params.single("decision").ok().flatten();
    let approved = match decision {
        Some("deny") => None,
        Some("allow") => Some(approved_grant(&tenant, user_id, &request.scope, params).await?),
        _ => {
            return Err(OAuthError::InvalidFlow(
                "The form is incomplete or was altered.",
            ))
        }
    };
    let consumed = tenant
        .consume_authorization_request(
            &pending.request_hash,
            &hash_secret(&pending.browser_value),
            now,
        )
        .await?
        .ok_or(OAuthError::InvalidFlow(
            "This sign-in request was already completed.",
        ))?;
    let Some((organization_guid, scope)) = approved else {
        tracing::info!(tenant = %pending.tenant, client_id = %request.client_id, "consent denied");
        let event = Event::ConsentDenied {
            user_id,
            client_id: &request.client_id,
        };
        state.record(&pending.tenant, event, now).await;
        let denied = ErrorRedirect {
            redirect_uri: consumed.redirect_uri,
            error: AuthorizeErrorCode::AccessDenied,
            description: "the user denied access",
            state: Some(consumed.state),
            issuer: issuer.to_owned(),
        };
        return Err(OAuthError::Redirect(Box::new(denied)));
    };

    // `<tenant>.<random>`: the prefix routes the code to its tenant's data (spec §1).
    let secret = state.random.token()?;
    let code = format!("{}.{secret}", pending.tenant);
    let new_code = NewAuthorizationCode {
        code_hash: &hash_secret(&secret),
        client_id: &consumed.client_id,
        redirect_uri: &consumed.redirect_uri,
        user_id,
        organization_guid: &organization_guid,
        scope: &scope,
        nonce: consumed.nonce.as_deref(),
        code_challenge: &consumed.code_challenge,
        auth_time: consumed.auth_time.unwrap_or(now),
        expires_at: now + CODE_LIFETIME,
        // Back-Channel Logout §2.1: the session the code, its grant and ID tokens belong to.
        sid: session.sid.as_deref(),
        // How the session was signed in: the grant's ID tokens say it (`amr`, `acr`).
        amr: Some(&session.amr),
    };
    tenant.create_authorization_code(&new_code, now).await?;
    tracing::info!(tenant = %pending.tenant, client_id = %consumed.client_id, sub = %user_id, "consent given, code issued");
    let event = Event::ConsentGiven {
        user_id,
        client_id: &consumed.client_id,
        organization: &organization_guid,
        scope: &scope,
    };
    state.record(&pending.tenant, event, now).await;
    let location = redirect::code_location(&consumed.redirect_uri, &code, &consumed.state, issuer)
        .ok_or(OAuthError::InvalidFlow(
            "The application's redirect URI is not a valid URL.",
        ))?;
    Ok(redirect::found(&location))
}

/// The organization and scopes the user approved, checked against what is allowed: an
/// organization of theirs, a subset of the requested scopes, and `openid` kept if requested.
async fn approved_grant(
    tenant: &TenantStore<'_>,
    user_id: &str,
    requested: &str,
    params: &Params,
) -> Result<(String, String), OAuthError> {
    let organization = params
        .single("organization")
        .ok()
        .flatten()
        .ok_or(OAuthError::InvalidFlow("Choose an organization."))?;
    let memberships = tenant.organizations_of(user_id).await?;
    if !memberships
        .iter()
        .any(|o| o.organization_guid == organization)
    {
        tracing::warn!(tenant = %tenant.id(), "consent named an organization the user is not a member of");
        return Err(OAuthError::InvalidFlow(
            "You are not a member of the chosen organization.",
        ));
    }
    let requested: Vec<&str> = requested.split(' ').collect();
    let mut approved: Vec<Scope> = Vec::new();
    for name in params.all("scope") {
        if !requested.contains(&name) {
            tracing::warn!(tenant = %tenant.id(), "consent carried a scope that was not requested");
            return Err(OAuthError::InvalidFlow(
                "The form is incomplete or was altered.",
            ));
        }
        approved.extend(Scope::parse(name).ok());
    }
    if requested.contains(&Scope::OpenId.as_str()) {
        approved.push(Scope::OpenId);
    }
    approved.sort_unstable();
    approved.dedup();
    if approved.is_empty() {
        return Err(OAuthError::InvalidFlow(
            "Approve at least one permission, or deny.",
        ));
    }
    let scope = approved
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    Ok((organization.to_owned(), scope))
}
