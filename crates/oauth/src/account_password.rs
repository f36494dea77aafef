//! `GET` and `POST /account/password`: where a user sets a password from a password link (an
//! invitation an admin issued, or a recovery link the user asked for). The link is `?token=<tenant>.<random>`; the server keeps only
//! the SHA-256 of the random part. The page follows the sign-in page's rules (no script, CSP,
//! no framing, no caching, `Referrer-Policy: no-referrer`, which matters doubly here: the
//! token is in the URL), and a link that is unknown, expired, used or replaced gets one and
//! the same answer, so the page tells nothing about which.

use askama::Template;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use jose::UnixTime;
use secrecy::SecretString;
use store::{LinkPurpose, TenantId, TenantStore};
use subtle::ConstantTimeEq;

use crate::client_address::ClientAddress;
use crate::double_submit::DoubleSubmit;
use crate::error::OAuthError;
use crate::events::Event;
use crate::pages::{self, ErrorPage, FormTarget, PageError};
use crate::params::{FormParams, Params};
use crate::password_policy;
use crate::secret::hash_secret;
use crate::state::OAuthState;

#[derive(Template)]
#[template(path = "password.html")]
struct PasswordPage<'a> {
    username: &'a str,
    token: &'a str,
    csrf: &'a str,
    message: Option<&'a str>,
}

#[derive(Template)]
#[template(path = "password_set.html")]
struct PasswordSetPage<'a> {
    username: &'a str,
}

/// The form's double-submit cookie.
const CSRF: DoubleSubmit = DoubleSubmit("fieldauth-password-csrf");

/// A password link, parsed: its tenant and the random part, whose hash is stored.
struct Link<'a> {
    tenant: TenantId,
    token: &'a str,
    random: &'a str,
}

impl<'a> Link<'a> {
    fn parse(token: Option<&'a str>) -> Option<Link<'a>> {
        let token = token?;
        let (tenant, random) = token.split_once('.')?;
        let tenant = TenantId::parse(tenant).ok()?;
        Some(Link {
            tenant,
            token,
            random,
        })
    }

    /// The live link's user: its `sub` and username.
    async fn user(
        &self,
        records: &TenantStore<'_>,
        now: UnixTime,
    ) -> Result<Option<store::User>, OAuthError> {
        let Some(user_id) = records
            .find_password_link(&hash_secret(self.random), now)
            .await?
        else {
            return Ok(None);
        };
        Ok(records.find_user(&user_id).await?)
    }
}

/// `GET /account/password?token=…`: the form while the link is live.
pub async fn get_password_page(
    State(state): State<OAuthState>,
    RawQuery(query): RawQuery,
) -> Result<Response, PageError> {
    let params = Params::parse(query.as_deref().unwrap_or_default().as_bytes())
        .map_err(|_| OAuthError::UntrustedRequest("The link's percent-encoding is not UTF-8."))?;
    let token = params.single("token").ok().flatten();
    let now = state.clock.now();
    let Some(link) = Link::parse(token) else {
        return Ok(link_refused());
    };
    let records = state.store.tenant(&link.tenant);
    let Some(user) = link.user(&records, now).await? else {
        return Ok(link_refused());
    };
    let csrf = state.random.token()?;
    let page = PasswordPage {
        username: &user.username,
        token: link.token,
        csrf: &csrf,
        message: None,
    };
    let mut response = pages::render(&page, StatusCode::OK, FormTarget::SelfOnly);
    response
        .headers_mut()
        .append(header::SET_COOKIE, CSRF.set_cookie(&state, &csrf)?);
    Ok(response)
}

/// `POST /account/password`: sets the password and spends the link.
pub async fn post_password(
    State(state): State<OAuthState>,
    ClientAddress(address): ClientAddress,
    headers: HeaderMap,
    form: Result<FormParams, OAuthError>,
) -> Result<Response, PageError> {
    let FormParams(params) = form?;
    if params.first_repeated().is_some() {
        return Err(OAuthError::InvalidForm("a parameter is repeated").into());
    }
    let field = |name| params.single(name).ok().flatten();
    let csrf = field("csrf").unwrap_or_default();
    if !CSRF.holds(&state, &headers, csrf) {
        tracing::warn!("password form without its security token");
        return Ok(refused(
            StatusCode::BAD_REQUEST,
            "The form's security token is missing or wrong. Open the link again.",
        ));
    }
    let now = state.clock.now();
    let Some(link) = Link::parse(field("token")) else {
        return Ok(link_refused());
    };
    let records = state.store.tenant(&link.tenant);
    let Some(user) = link.user(&records, now).await? else {
        return Ok(link_refused());
    };
    let retry = |message: &str| {
        pages::render(
            &PasswordPage {
                username: &user.username,
                token: link.token,
                csrf,
                message: Some(message),
            },
            StatusCode::OK,
            FormTarget::SelfOnly,
        )
    };
    let (Some(new), Some(again)) = (field("password"), field("confirmation")) else {
        return Ok(retry("Enter the new password twice."));
    };
    if !bool::from(new.as_bytes().ct_eq(again.as_bytes())) {
        return Ok(retry(
            "The two passwords differ. Enter the same password twice.",
        ));
    }
    let new = SecretString::from(new.to_owned());
    if let Err(refusal) =
        password_policy::check_for_tenant(&records, &new, &user.username, &user.email).await?
    {
        return Ok(retry(refusal.message()));
    }
    match set_password(&state, &link, new, &address.to_string(), now).await? {
        true => Ok(pages::render(
            &PasswordSetPage {
                username: &user.username,
            },
            StatusCode::OK,
            FormTarget::SelfOnly,
        )),
        // Spent or replaced while the hash was computed.
        false => Ok(link_refused()),
    }
}

/// Hashes the new password, then spends the link and sets it in one transaction, which also
/// ends every session and grant of the user: false when the link is no longer live.
async fn set_password(
    state: &OAuthState,
    link: &Link<'_>,
    new: SecretString,
    address: &str,
    now: UnixTime,
) -> Result<bool, OAuthError> {
    let hash = crate::signin::check::hash_bounded(state, new).await?;
    let Some(redeemed) = state
        .store
        .tenant(&link.tenant)
        .redeem_password_link(&hash_secret(link.random), &hash, now)
        .await?
    else {
        return Ok(false);
    };
    let user_id = redeemed.user_id.as_str();
    let signed_out = redeemed.signed_out;
    tracing::info!(
        tenant = %link.tenant,
        sub = %user_id,
        sessions = signed_out.sessions,
        grants = signed_out.grants,
        "password set from a password link"
    );
    let event = match redeemed.purpose {
        LinkPurpose::Invitation => Event::PasswordSet {
            user_id,
            address,
            signed_out,
        },
        LinkPurpose::Recovery => Event::PasswordReset {
            user_id,
            address,
            signed_out,
        },
    };
    state.record(&link.tenant, event, now).await;
    Ok(true)
}

/// One answer for every link that cannot be used, whatever the reason.
fn link_refused() -> Response {
    refused(
        StatusCode::BAD_REQUEST,
        "This link is not valid: it is unknown, has expired, or was already used or replaced \
         by a newer one. Ask for a new link.",
    )
}

fn refused(status: StatusCode, message: &str) -> Response {
    pages::render(
        &ErrorPage {
            title: "This link cannot be used",
            message,
        },
        status,
        FormTarget::SelfOnly,
    )
}
