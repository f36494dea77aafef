//! The account page's passkeys (issue 24): the options of a registration for the page's
//! script (JSON), the script's form that adds the passkey under the name the user typed,
//! and the removal of one passkey. Each form carries the page's CSRF token.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::json;

use super::form::AccountForm;
use super::page::{self, Messages};
use super::{
    csrf, form_params, known_tenant, refused, see_other, signed_in, tenant_cookie, Notice,
};
use crate::client_address::ClientAddress;
use crate::error::OAuthError;
use crate::events::Event;
use crate::mfa::passkeys::{finish_registration, start_registration, NewPasskeyForm, Registration};
use crate::pages::PageError;
use crate::params::FormParams;
use crate::state::OAuthState;

/// `POST /account/passkeys/start`: `{ceremony, publicKey}` for `navigator.credentials
/// .create`, for the signed-in user of the form's tenant. Fields `tenant` and `csrf`; bad
/// input is a JSON 400.
pub async fn post_passkey_start(
    State(state): State<OAuthState>,
    headers: HeaderMap,
    form: Result<FormParams, OAuthError>,
) -> Result<Response, OAuthError> {
    let params = form_params(form)?;
    let now = state.clock.now();
    let tenant = known_tenant(&state, params.single("tenant").ok().flatten()).await?;
    let cookie = tenant_cookie(&state, &tenant, &headers);
    if !csrf::is_valid(params.single("csrf").ok().flatten(), cookie) {
        return Err(OAuthError::InvalidForm(
            "The form's security token is missing or wrong. Open your account page again.",
        ));
    }
    let Some(visitor) = signed_in(&state, &tenant, cookie, now).await? else {
        return Err(OAuthError::InvalidForm(
            "You are signed out. Open your account page again.",
        ));
    };
    let challenge = start_registration(&state, &tenant, &visitor.user, now).await?;
    let mut body = challenge.options;
    if let Some(object) = body.as_object_mut() {
        object.insert("ceremony".to_owned(), json!(challenge.ceremony));
    }
    let mut response = Json(body).into_response();
    response.headers_mut().insert(
        axum::http::header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("no-store"),
    );
    Ok(response)
}

/// `POST /account/passkeys/add`: the script's form with the new credential and its name.
pub async fn post_passkey_add(
    State(state): State<OAuthState>,
    ClientAddress(address): ClientAddress,
    AccountForm {
        params,
        visitor,
        now,
    }: AccountForm,
) -> Result<Response, PageError> {
    let field = |name| params.single(name).ok().flatten().unwrap_or_default();
    let form = NewPasskeyForm {
        ceremony: field("ceremony"),
        credential_json: field("credential"),
        name: field("name"),
    };
    let user_id = &visitor.user.user_id;
    let address = address.to_string();
    let registration =
        finish_registration(&state, &visitor.tenant, user_id, form, &address, now).await?;
    match registration {
        Registration::Added(_) => Ok(see_other(&visitor.tenant, Some(Notice::PasskeyAdded))),
        Registration::Refused(message) => {
            let messages = Messages {
                passkey: Some(message),
                ..Messages::default()
            };
            let status = StatusCode::OK;
            Ok(page::render_with(&state, &visitor, messages, status, now).await?)
        }
    }
}

/// `POST /account/passkeys/remove`: removes one passkey of the signed-in user. Anything but
/// one of their own gets one and the same refusal.
pub async fn post_passkey_remove(
    State(state): State<OAuthState>,
    ClientAddress(address): ClientAddress,
    AccountForm {
        params,
        visitor,
        now,
    }: AccountForm,
) -> Result<Response, PageError> {
    let user_id = &visitor.user.user_id;
    let credential_id = params
        .single("passkey")
        .ok()
        .flatten()
        .and_then(|id| URL_SAFE_NO_PAD.decode(id).ok());
    let records = state.store.tenant(&visitor.tenant);
    let removed = match credential_id {
        Some(id) => records
            .remove_passkey(user_id, &id)
            .await
            .map_err(OAuthError::from)?,
        None => None,
    };
    let Some(name) = removed else {
        return Ok(refused(
            "Passkey not removed",
            "This passkey cannot be removed: it is not one of the passkeys listed on your \
             account page. Open the page again to see them.",
        ));
    };
    tracing::info!(tenant = %visitor.tenant, sub = %user_id, "account: passkey removed");
    let event = Event::PasskeyRemoved {
        user_id,
        name: &name,
        address: &address.to_string(),
    };
    state.record(&visitor.tenant, event, now).await;
    Ok(see_other(&visitor.tenant, Some(Notice::PasskeyRemoved)))
}
