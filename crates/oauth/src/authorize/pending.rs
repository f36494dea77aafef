//! The pending request behind a sign-in or consent form: found by its handle, and only for
//! the browser it is bound to, with the form's CSRF token.

use axum::http::HeaderMap;
use jose::UnixTime;
use store::{AuthorizationRequest, Client, TenantId};
use subtle::ConstantTimeEq;

use crate::error::OAuthError;
use crate::params::Params;
use crate::secret::hash_secret;
use crate::session;
use crate::state::OAuthState;

#[derive(Debug)]
pub struct Pending {
    pub tenant: TenantId,
    pub handle: String,
    pub request_hash: [u8; 32],
    pub browser_value: String,
    pub csrf: String,
    pub request: AuthorizationRequest,
    pub client: Client,
}

pub async fn load_pending(
    state: &OAuthState,
    params: &Params,
    headers: &HeaderMap,
    now: UnixTime,
) -> Result<Pending, OAuthError> {
    let field = |name| {
        params
            .single(name)
            .ok()
            .flatten()
            .ok_or(OAuthError::InvalidFlow(
                "The form is incomplete or was altered.",
            ))
    };
    let tenant = TenantId::parse(field("tenant")?)
        .map_err(|_| OAuthError::InvalidFlow("The form is incomplete or was altered."))?;
    let handle = field("request")?.to_owned();
    let csrf = field("csrf")?.to_owned();
    let request_hash = hash_secret(&handle);
    let tenant_store = state.store.tenant(&tenant);
    let request = tenant_store
        .find_authorization_request(&request_hash)
        .await?
        .ok_or(OAuthError::InvalidFlow("This sign-in request is unknown."))?;
    if request.consumed_at.is_some() {
        return Err(OAuthError::InvalidFlow(
            "This sign-in request was already completed.",
        ));
    }
    if request.expires_at <= now {
        return Err(OAuthError::InvalidFlow("This sign-in request has expired."));
    }
    let cookie_name = session::cookie_name(&tenant, state.config.issuer.is_https());
    let browser_value = session::read_cookie(headers, &cookie_name)
        .ok_or(OAuthError::InvalidFlow(
            "This sign-in request belongs to another browser session.",
        ))?
        .to_owned();
    if !bool::from(hash_secret(&browser_value).ct_eq(&request.browser_hash)) {
        return Err(OAuthError::InvalidFlow(
            "This sign-in request belongs to another browser session.",
        ));
    }
    if !bool::from(hash_secret(&csrf).ct_eq(&request.csrf_hash)) {
        return Err(OAuthError::InvalidFlow(
            "The form's security token is missing or wrong.",
        ));
    }
    // Disabling a client drops its pending requests; one read before that finished meets
    // the flag here.
    let client = tenant_store
        .find_client(&request.client_id)
        .await?
        .filter(|client| !client.disabled)
        .ok_or(OAuthError::InvalidFlow("This sign-in request is unknown."))?;
    crate::events::log_context(&tenant, &client.client_id);
    Ok(Pending {
        tenant,
        handle,
        request_hash,
        browser_value,
        csrf,
        request,
        client,
    })
}
