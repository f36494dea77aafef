//! The one way every account-page form is read: a form body, each parameter at most once,
//! the CSRF token matching the browser's cookie, and the signed-in user it comes from.
//! A handler that takes an [`AccountForm`] only runs for such a form; anything else is
//! answered before it (an error page, or the page again when the session has ended).

use axum::extract::{FromRequest, Request};
use axum::response::{IntoResponse, Response};
use jose::UnixTime;

use super::{form_params, form_visitor, Visitor};
use crate::pages::PageError;
use crate::params::{FormParams, Params};
use crate::state::OAuthState;

pub struct AccountForm {
    pub(crate) params: Params,
    pub(crate) visitor: Visitor,
    pub(crate) now: UnixTime,
}

impl FromRequest<OAuthState> for AccountForm {
    type Rejection = Response;

    async fn from_request(request: Request, state: &OAuthState) -> Result<AccountForm, Response> {
        let headers = request.headers().clone();
        let form = FormParams::from_request(request, state).await;
        let params = form_params(form).map_err(|e| PageError::from(e).into_response())?;
        let now = state.clock.now();
        match form_visitor(state, &params, &headers, now).await {
            Ok(Ok(visitor)) => Ok(AccountForm {
                params,
                visitor,
                now,
            }),
            Ok(Err(response)) => Err(response),
            Err(error) => Err(PageError::from(error).into_response()),
        }
    }
}
