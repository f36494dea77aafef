//! `GET` and `POST /account/recover?tenant=T`: "Forgot your password?". A person names their
//! username and, if that account exists, is enabled and has an email address, a password
//! link (valid one hour, single use) goes to that address. The page answers the same in
//! every case and takes the same time: the account is looked up and the mail sent after
//! the answer, off the request path. Served only when mail is configured.

use askama::Template;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use store::TenantId;

use crate::client_address::ClientAddress;
use crate::double_submit::DoubleSubmit;
use crate::error::OAuthError;
use crate::mail::Mailer;
use crate::pages::{self, ErrorPage, FormTarget, PageError};
use crate::params::{FormParams, Params};
use crate::paths;
use crate::state::OAuthState;

mod message;
mod request;

use request::RECOVERY_LINK_LIFETIME;
pub use request::RECOVERY_QUOTA_WINDOW;

#[derive(Template)]
#[template(path = "recover.html")]
struct RecoverPage<'a> {
    tenant: &'a str,
    csrf: &'a str,
    username: &'a str,
    message: Option<&'a str>,
}

#[derive(Template)]
#[template(path = "recover_sent.html")]
struct RecoverSentPage;

const CSRF: DoubleSubmit = DoubleSubmit("fieldauth-recover-csrf");

/// Where the sign-in page's "Forgot your password?" link leads, when mail is configured.
pub(crate) fn link_for(state: &OAuthState, tenant: &str) -> Option<String> {
    state
        .mailer
        .as_ref()
        .map(|_| format!("{}?tenant={tenant}", paths::ACCOUNT_RECOVER))
}

/// `GET /account/recover?tenant=T`: the form.
pub async fn get_recover_page(
    State(state): State<OAuthState>,
    RawQuery(query): RawQuery,
) -> Result<Response, PageError> {
    if state.mailer.is_none() {
        return Ok(not_found());
    }
    let params = Params::parse(query.as_deref().unwrap_or_default().as_bytes())
        .map_err(|_| OAuthError::UntrustedRequest("The query's percent-encoding is not UTF-8."))?;
    let Some(tenant) = known_tenant(&state, params.single("tenant").ok().flatten()).await? else {
        return Ok(not_found());
    };
    let csrf = state.random.token()?;
    let page = RecoverPage {
        tenant: tenant.as_str(),
        csrf: &csrf,
        username: "",
        message: None,
    };
    let mut response = pages::render(&page, StatusCode::OK, FormTarget::SelfOnly);
    response
        .headers_mut()
        .append(header::SET_COOKIE, CSRF.set_cookie(&state, &csrf)?);
    Ok(response)
}

/// `POST /account/recover`: the same answer whatever the username, once the form is genuine.
pub async fn post_recover(
    State(state): State<OAuthState>,
    ClientAddress(address): ClientAddress,
    headers: HeaderMap,
    form: Result<FormParams, OAuthError>,
) -> Result<Response, PageError> {
    let Some(mailer) = state.mailer.clone() else {
        return Ok(not_found());
    };
    let FormParams(params) = form?;
    if params.first_repeated().is_some() {
        return Err(OAuthError::InvalidForm("a parameter is repeated").into());
    }
    let field = |name| params.single(name).ok().flatten();
    let csrf = field("csrf").unwrap_or_default();
    if !CSRF.holds(&state, &headers, csrf) {
        tracing::warn!("recovery form without its security token");
        return Ok(pages::render(
            &ErrorPage {
                title: "This form cannot be used",
                message: "The form's security token is missing or wrong. Open the page again.",
            },
            StatusCode::BAD_REQUEST,
            FormTarget::SelfOnly,
        ));
    }
    let Some(tenant) = known_tenant(&state, field("tenant")).await? else {
        return Ok(not_found());
    };
    let typed = field("username").unwrap_or_default().trim();
    if typed.is_empty() {
        let page = RecoverPage {
            tenant: tenant.as_str(),
            csrf,
            username: "",
            message: Some("Enter your username."),
        };
        return Ok(pages::render(&page, StatusCode::OK, FormTarget::SelfOnly));
    }
    let now = state.clock.now();
    request::request_recovery(&state, &mailer, &tenant, typed, address, now).await?;
    Ok(sent_page())
}

/// The tenant a page names, if it exists.
async fn known_tenant(
    state: &OAuthState,
    tenant: Option<&str>,
) -> Result<Option<TenantId>, OAuthError> {
    let Some(tenant) = tenant.and_then(|t| TenantId::parse(t).ok()) else {
        return Ok(None);
    };
    Ok(state.store.tenant(&tenant).find().await?.map(|_| tenant))
}

/// The one answer to every genuine request, whether or not a mail goes out.
fn sent_page() -> Response {
    pages::render(&RecoverSentPage, StatusCode::OK, FormTarget::SelfOnly)
}

/// Without mail, or for a tenant that does not exist, there is no such page.
fn not_found() -> Response {
    pages::render(
        &ErrorPage {
            title: "Page not found",
            message: "There is no such page.",
        },
        StatusCode::NOT_FOUND,
        FormTarget::SelfOnly,
    )
}

impl OAuthState {
    /// Sends password-recovery mail through `mailer` (`--smtp-url`); without one the
    /// recovery pages answer 404 and the sign-in page offers no link.
    pub fn with_mailer(mut self, mailer: Option<Mailer>) -> OAuthState {
        // Called while the state is built, before it is shared: nothing is copied then.
        std::sync::Arc::make_mut(&mut self.0).mailer = mailer;
        self
    }
}
