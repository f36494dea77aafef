//! The second step's page: the factors the user has (verify), an authenticator to set up
//! (enroll), or the recovery codes that setting one up produced (shown once).

use askama::Template;
use axum::http::StatusCode;
use axum::response::Response;

use crate::pages::{self, FormTarget};
use crate::paths;

/// What the page asks for.
pub(crate) enum StepMode {
    /// A factor the user has. `recovery`: they have recovery codes left.
    Verify {
        totp: bool,
        passkey: bool,
        recovery: bool,
    },
    /// Setting up an authenticator app: its key, in text and as a QR code.
    Enroll { secret: String, qr_svg: String },
    /// The recovery codes of the authenticator just set up, shown once.
    RecoveryCodes { codes: Vec<String> },
}

#[derive(Template)]
#[template(path = "second_factor.html")]
struct SecondFactorPage<'a> {
    client_name: &'a str,
    username: &'a str,
    tenant: &'a str,
    request: &'a str,
    csrf: &'a str,
    message: Option<&'a str>,
    action: &'a str,
    passkey_start: &'a str,
    mode: &'a StepMode,
}

/// Who the step is for and where its forms go back to.
pub(crate) struct StepForm<'a> {
    /// The application ("your account" on the account page).
    pub client_name: &'a str,
    pub username: &'a str,
    pub tenant: &'a str,
    /// The pending authorization request's handle, or the account page's marker.
    pub request: &'a str,
    pub csrf: &'a str,
}

pub(crate) fn render(
    form: &StepForm<'_>,
    mode: &StepMode,
    message: Option<&str>,
    status: StatusCode,
) -> Response {
    let page = SecondFactorPage {
        client_name: form.client_name,
        username: form.username,
        tenant: form.tenant,
        request: form.request,
        csrf: form.csrf,
        message,
        action: paths::SECOND_FACTOR,
        passkey_start: paths::SECOND_FACTOR_PASSKEY_START,
        mode,
    };
    // pages::render sends `no-store`: the page may show a TOTP key or recovery codes.
    pages::render(&page, status, FormTarget::SelfOnly)
}
