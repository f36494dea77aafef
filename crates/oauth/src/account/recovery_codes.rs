//! `POST /account/recovery-codes`: a new set of recovery codes for a user with a second
//! factor, shown once; every earlier code stops working.

use axum::extract::State;
use axum::response::Response;

use super::factor_pages::render_recovery_codes;
use super::form::AccountForm;
use super::{account_location, refused};
use crate::error::OAuthError;
use crate::mfa::recovery_codes;
use crate::pages::PageError;
use crate::state::OAuthState;

pub async fn post_recovery_codes(
    State(state): State<OAuthState>,
    AccountForm {
        params: _,
        visitor,
        now,
    }: AccountForm,
) -> Result<Response, PageError> {
    let user_id = &visitor.user.user_id;
    let records = state.store.tenant(&visitor.tenant);
    // Without a second factor a recovery code would recover nothing.
    if !records
        .has_second_factor(user_id)
        .await
        .map_err(OAuthError::from)?
    {
        return Ok(refused(
            "No recovery codes",
            "Recovery codes come with two-step verification. Set up an authenticator app \
             first: its recovery codes are shown then.",
        ));
    }
    let codes = recovery_codes::regenerate(&state, &visitor.tenant, user_id, now).await?;
    let onwards = account_location(&visitor.tenant, None);
    Ok(render_recovery_codes(&codes, &onwards, false))
}
