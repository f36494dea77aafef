//! The account page itself: who the user is, their organizations, the apps that hold their
//! live grants, and the three forms. Server-rendered with no script, under the pages' CSP.

use askama::Template;
use axum::http::StatusCode;
use axum::response::Response;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jose::UnixTime;

use super::totp::{two_step, TwoStep};
use super::{csrf, Visitor};
use crate::error::OAuthError;
use crate::pages::{self, FormTarget};
use crate::scope::Scope;
use crate::state::OAuthState;

#[derive(Template)]
#[template(path = "account.html")]
struct AccountPage<'a> {
    tenant: &'a str,
    csrf: &'a str,
    name: &'a str,
    username: &'a str,
    email: &'a str,
    organizations: Vec<String>,
    apps: Vec<App>,
    /// A confirmation of what was just done.
    notice: Option<&'a str>,
    /// Why the password was not changed, shown by the password form.
    password_message: Option<&'a str>,
    /// The authenticator app and recovery codes (issue 24).
    two_step: TwoStep,
    // Passkeys (issue 24).
    passkeys: Vec<PasskeyItem>,
    /// Why a passkey was not added, shown by the passkeys section.
    passkey_message: Option<&'a str>,
}

/// One of the user's passkeys, as the page lists it.
struct PasskeyItem {
    /// The credential id in base64url: what the remove form names.
    id: String,
    name: String,
    created: Moment,
    last_used: Option<Moment>,
}

/// One app with a live grant, as the page lists it.
struct App {
    grant_id: String,
    client_name: String,
    organization: String,
    /// What the grant allows, in the consent screen's words.
    access: Vec<String>,
    since: Moment,
    last_used: Moment,
}

/// A time, for people and (in `<time datetime>`) for machines.
struct Moment {
    machine: String,
    shown: String,
}

impl Moment {
    fn at(time: UnixTime) -> Moment {
        match chrono::DateTime::from_timestamp(time, 0) {
            Some(at) => Moment {
                machine: at.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
                shown: at.format("%Y-%m-%d %H:%M UTC").to_string(),
            },
            None => Moment {
                machine: String::new(),
                shown: "unknown".to_owned(),
            },
        }
    }
}

/// What the page says above its sections and beside a form.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Messages<'a> {
    pub notice: Option<&'a str>,
    pub password: Option<&'a str>,
    pub passkey: Option<&'a str>,
}

/// Renders the page of the signed-in `visitor`.
pub(super) async fn render(
    state: &OAuthState,
    visitor: &Visitor,
    notice: Option<&str>,
    password_message: Option<&str>,
    status: StatusCode,
    now: UnixTime,
) -> Result<Response, OAuthError> {
    let messages = Messages {
        notice,
        password: password_message,
        passkey: None,
    };
    render_with(state, visitor, messages, status, now).await
}

/// Renders the page of the signed-in `visitor` with these messages.
pub(super) async fn render_with(
    state: &OAuthState,
    visitor: &Visitor,
    messages: Messages<'_>,
    status: StatusCode,
    now: UnixTime,
) -> Result<Response, OAuthError> {
    let records = state.store.tenant(&visitor.tenant);
    let user = &visitor.user;
    let organizations = records
        .organizations_of(&user.user_id)
        .await?
        .into_iter()
        .map(|organization| organization.name)
        .collect();
    // A grant older than the maximum age can no longer be refreshed: it is not listed.
    let created_after = now - state.config.grant_max_age;
    let apps = records
        .list_account_grants(&user.user_id, created_after)
        .await?
        .into_iter()
        .map(|grant| App {
            access: access_of(&grant.scope),
            since: Moment::at(grant.created_at),
            // Without a refresh token, the code exchange was the last use.
            last_used: Moment::at(grant.last_refreshed_at.unwrap_or(grant.created_at)),
            organization: grant
                .organization_name
                .unwrap_or_else(|| "(removed)".to_owned()),
            grant_id: grant.grant_id,
            client_name: grant.client_name,
        })
        .collect();
    let passkeys = records
        .list_passkeys(&user.user_id)
        .await?
        .into_iter()
        .map(|passkey| PasskeyItem {
            id: URL_SAFE_NO_PAD.encode(&passkey.credential_id),
            created: Moment::at(passkey.created_at),
            last_used: passkey.last_used_at.map(Moment::at),
            name: passkey.name,
        })
        .collect();
    let two_step = two_step(state, visitor).await?;
    let csrf = csrf::token_for(&visitor.cookie_value);
    let page = AccountPage {
        tenant: visitor.tenant.as_str(),
        csrf: &csrf,
        name: &user.name,
        username: &user.username,
        email: &user.email,
        organizations,
        apps,
        notice: messages.notice,
        password_message: messages.password,
        passkeys,
        passkey_message: messages.passkey,
        two_step,
    };
    Ok(pages::render(&page, status, FormTarget::SelfOnly))
}

/// The granted scopes in the consent screen's words; a scope this server no longer knows is
/// shown by its name.
fn access_of(scope: &str) -> Vec<String> {
    scope
        .split(' ')
        .filter(|name| !name.is_empty())
        .map(|name| match Scope::parse(name) {
            Ok(scope) => scope.description().to_owned(),
            Err(_) => name.to_owned(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_shown_in_utc_and_given_to_machines_in_rfc_3339() {
        let moment = Moment::at(1_700_000_000);
        assert_eq!(moment.machine, "2023-11-14T22:13:20Z");
        assert_eq!(moment.shown, "2023-11-14 22:13 UTC");
    }

    #[test]
    fn scopes_are_described_in_plain_words() {
        let access = access_of("openid jobs retired-scope");
        assert_eq!(access.len(), 3);
        assert_eq!(access[0], Scope::OpenId.description());
        assert_eq!(access[2], "retired-scope");
    }

    #[test]
    fn the_page_escapes_what_users_and_clients_control() {
        let page = AccountPage {
            tenant: "acme",
            csrf: "c",
            name: "<script>alert(1)</script>",
            username: "alice",
            email: "a@example.com",
            organizations: vec!["<img src=x>".to_owned()],
            apps: vec![App {
                grant_id: "g\"><b>".to_owned(),
                client_name: "<i>App</i>".to_owned(),
                organization: "Alpha".to_owned(),
                access: vec![],
                since: Moment::at(0),
                last_used: Moment::at(0),
            }],
            notice: None,
            password_message: None,
            passkeys: vec![PasskeyItem {
                id: "id\"><u>".to_owned(),
                name: "<s>Key</s>".to_owned(),
                created: Moment::at(0),
                last_used: None,
            }],
            passkey_message: None,
            two_step: TwoStep {
                authenticator: true,
                has_factor: true,
                recovery_codes_left: 3,
                offered: true,
            },
        };
        let html = page.render().unwrap();
        for raw in ["<script>", "<img", "<b>", "<i>", "<u>", "<s>"] {
            assert!(!html.contains(raw), "{raw} in {html}");
        }
    }
}
