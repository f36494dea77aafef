//! The account page over HTTP (issue 23): sign-in first through the sign-in page, the user's
//! facts and apps, Remove access, Change password and Sign out everywhere, each form behind
//! its CSRF token, on both backends.

use secrecy::SecretString;
use store::testing::TestDatabase;
use store::{GrantsOf, TenantId};

use crate::flow::{self, hidden, post_form, seed, CLIENT_ID, PASSWORD, TENANT};
use crate::helpers::{on_both_backends, TestApp};

on_both_backends!(
    without_a_session_the_page_signs_in_first_then_shows_the_account_and_its_apps,
    remove_access_revokes_only_a_live_grant_of_the_signed_in_user,
    forms_without_the_right_csrf_token_are_refused_and_change_nothing,
    change_password_refuses_a_wrong_current_password_a_weak_one_and_a_mismatch,
    changing_the_password_ends_other_sessions_and_grants_and_keeps_this_session,
    sign_out_everywhere_ends_every_session_and_grant_and_clears_the_cookie,
);

/// A password the tenant's policy accepts.
pub(crate) const NEW_PASSWORD: &str = "marmalade tugboat ceiling";
const BOB_SUB: &str = "00000000-0000-4000-8000-000000000001";

pub(crate) fn account_url(app: &TestApp) -> String {
    format!("{}/account?tenant={TENANT}", app.issuer)
}

fn is_account_page(html: &str) -> bool {
    html.contains("<h1>Your account</h1>")
}

fn is_sign_in_page(html: &str) -> bool {
    html.contains("<h1>Sign in</h1>") && hidden(html, "request") == "account"
}

async fn get_text(browser: &reqwest::Client, url: &str) -> (u16, String) {
    let response = browser.get(url).send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

/// Opens the account page in `browser`, signing in as `username` first when it asks: the
/// page's HTML.
pub(crate) async fn account_page(
    app: &TestApp,
    browser: &reqwest::Client,
    username: &str,
) -> String {
    let (status, html) = get_text(browser, &account_url(app)).await;
    assert_eq!(status, 200);
    if is_account_page(&html) {
        return html;
    }
    assert!(is_sign_in_page(&html), "{html}");
    let response = flow::sign_in(app, browser, &html, username, PASSWORD).await;
    assert_eq!(response.status(), 303, "{}", response.text().await.unwrap());
    assert_eq!(
        response.headers()["location"],
        format!("/account?tenant={TENANT}")
    );
    let (status, html) = get_text(browser, &account_url(app)).await;
    assert_eq!(status, 200);
    assert!(is_account_page(&html), "{html}");
    html
}

/// A grant of alice (signed in in `browser`) for the public client, with a refresh token.
async fn alice_grant(app: &TestApp, browser: &reqwest::Client) -> String {
    let code = flow::code_for(
        app,
        browser,
        &[("scope", Some("openid profile offline_access jobs"))],
    )
    .await;
    let tokens = flow::exchange(app, &code).await;
    tokens["refresh_token"].as_str().unwrap().to_owned()
}

/// A grant of bob for the public client, through a browser of his own.
async fn bob_grant(app: &TestApp, seeded: &flow::Seeded) -> String {
    let browser = app.browser();
    let url = flow::authorize_url(app, &[("scope", Some("openid offline_access"))]);
    let page = flow::signed_in_consent_page(app, &browser, &url, "bob").await;
    let response = flow::consent(
        app,
        &browser,
        &page,
        "allow",
        Some(&seeded.alpha),
        &["openid", "offline_access"],
    )
    .await;
    assert_eq!(response.status(), 302);
    let (_, pairs) = flow::location_params(&response);
    let tokens = flow::exchange(app, flow::param(&pairs, "code").unwrap()).await;
    tokens["refresh_token"].as_str().unwrap().to_owned()
}

pub(crate) async fn refresh(app: &TestApp, refresh_token: &str) -> reqwest::Response {
    let fields = [
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh_token),
        ("client_id", CLIENT_ID),
    ];
    flow::token_request(app, &fields, None).await
}

async fn post(
    app: &TestApp,
    browser: &reqwest::Client,
    path: &str,
    fields: &[(&str, &str)],
) -> reqwest::Response {
    post_form(browser, &format!("{}{path}", app.issuer), fields).await
}

/// A page answer with the pages' security headers.
fn assert_page_headers(response: &reqwest::Response) {
    let headers = response.headers();
    assert_eq!(headers["content-type"], "text/html; charset=utf-8");
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(headers["referrer-policy"], "no-referrer");
    assert_eq!(headers["x-frame-options"], "DENY");
    let csp = headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert!(csp.contains("form-action 'self';"), "{csp}");
    // Only our own script (the passkey buttons), never inline.
    assert!(csp.contains("script-src 'self';"), "{csp}");
    assert!(!csp.contains("unsafe-inline"), "{csp}");
}

/// A 400 page saying `says`.
async fn assert_refused_page(response: reqwest::Response, says: &str) {
    assert_eq!(response.status(), 400);
    assert_page_headers(&response);
    let html = response.text().await.unwrap();
    assert!(html.contains(says), "{html}");
}

async fn audit_kinds(app: &TestApp) -> Vec<String> {
    let acme = TenantId::parse(TENANT).unwrap();
    app.store
        .tenant(&acme)
        .audit_events(100)
        .await
        .unwrap()
        .into_iter()
        .map(|event| event.kind)
        .collect()
}

async fn without_a_session_the_page_signs_in_first_then_shows_the_account_and_its_apps(
    db: TestDatabase,
) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    alice_grant(&app, &app.browser()).await;

    let browser = app.browser();
    let response = browser.get(account_url(&app)).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_page_headers(&response);
    let before = response.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(before.starts_with("fieldauth-acme="), "{before}");
    let html = response.text().await.unwrap();
    assert!(is_sign_in_page(&html), "{html}");
    assert!(html.contains("action=\"/oauth/signin\""), "{html}");
    assert!(html.contains("to continue to <strong>your account</strong>"));

    // The sign-in page's rules: one message for a wrong password, then the throttle's wait.
    let wrong = flow::sign_in(&app, &browser, &html, "alice", "not the password").await;
    assert_eq!(wrong.status(), 200);
    let wrong = wrong.text().await.unwrap();
    assert!(wrong.contains("Incorrect username or password."), "{wrong}");
    assert!(wrong.contains("value=\"alice\""), "{wrong}");
    let waiting = flow::sign_in(&app, &browser, &html, "alice", PASSWORD).await;
    assert_eq!(waiting.status(), 429);
    app.clock.advance(60);

    let response = flow::sign_in(&app, &browser, &html, "alice", PASSWORD).await;
    assert_eq!(response.status(), 303);
    assert_eq!(response.headers()["location"], "/account?tenant=acme");
    let after = response.headers()["set-cookie"].to_str().unwrap();
    assert!(after.contains("HttpOnly") && after.contains("SameSite=Lax"));
    assert_ne!(
        after.split(';').next(),
        before.split(';').next(),
        "a new session value"
    );

    let response = browser.get(account_url(&app)).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_page_headers(&response);
    let page = response.text().await.unwrap();
    assert!(is_account_page(&page), "{page}");
    for shown in [
        "<dd>alice Example</dd>",
        "<dd>alice</dd>",
        "<dd>alice@example.com</dd>",
        "<dd>Alpha, Bravo</dd>",
        "<h3>Dispatch Board</h3>",
        "Confirm who you are (sign you in)",
        "Jobs: job lists, assignments and completion reports",
        "<button type=\"submit\">Remove access for Dispatch Board</button>",
        "<label for=\"current-password\">Current password</label>",
        "Sign out everywhere</button>",
    ] {
        assert!(page.contains(shown), "{shown} missing from {page}");
    }
    assert_eq!(page.matches("name=\"grant\"").count(), 1);

    // An unknown tenant or none at all: the error page.
    let (status, _) = get_text(&browser, &format!("{}/account?tenant=nope", app.issuer)).await;
    assert_eq!(status, 400);
    let (status, _) = get_text(&browser, &format!("{}/account", app.issuer)).await;
    assert_eq!(status, 400);

    let acme = TenantId::parse(TENANT).unwrap();
    let events = app.store.tenant(&acme).audit_events(100).await.unwrap();
    let account_signin = events
        .iter()
        .find(|e| e.kind == "signin.succeeded" && e.client_id.is_none())
        .expect("the account page's sign-in is audited without a client");
    assert_eq!(
        account_signin.subject.as_deref(),
        Some("00000000-0000-4000-8000-000000000000")
    );
    assert!(events
        .iter()
        .any(|e| e.kind == "signin.failed" && e.client_id.is_none()));
    app.stop().await;
}

async fn remove_access_revokes_only_a_live_grant_of_the_signed_in_user(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let seeded = seed(&app).await;
    let browser = app.browser();
    let alice_refresh = alice_grant(&app, &browser).await;
    let bob_refresh = bob_grant(&app, &seeded).await;
    let acme = TenantId::parse(TENANT).unwrap();
    let bob_grants = app
        .store
        .tenant(&acme)
        .list_grants(GrantsOf::User(BOB_SUB), None, 10)
        .await
        .unwrap();
    let bob_grant_id = bob_grants[0].grant_id.clone();

    let page = account_page(&app, &browser, "alice").await;
    let csrf = hidden(&page, "csrf");
    let alice_grant_id = hidden(&page, "grant");

    // Another user's grant and an unknown one get the same refusal, and nothing changes.
    const REFUSED: &str = "it is not one of the apps listed on your account page";
    for grant in [bob_grant_id.as_str(), "no-such-grant", ""] {
        let fields = [("tenant", TENANT), ("csrf", &csrf), ("grant", grant)];
        let response = post(&app, &browser, "/account/remove-access", &fields).await;
        assert_refused_page(response, REFUSED).await;
    }
    let response = refresh(&app, &bob_refresh).await;
    assert_eq!(response.status(), 200, "bob's grant stands");

    let fields = [
        ("tenant", TENANT),
        ("csrf", &csrf),
        ("grant", &alice_grant_id),
    ];
    let response = post(&app, &browser, "/account/remove-access", &fields).await;
    assert_eq!(response.status(), 303);
    assert_eq!(
        response.headers()["location"],
        "/account?tenant=acme&done=access-removed"
    );
    let (status, page) = get_text(
        &browser,
        &format!("{}/account?tenant=acme&done=access-removed", app.issuer),
    )
    .await;
    assert_eq!(status, 200);
    assert!(page.contains("role=\"alert\">Access removed."), "{page}");
    assert!(
        page.contains("No app has access to your account."),
        "{page}"
    );
    // RFC 6749 §6: the revoked grant's refresh token is refused.
    flow::assert_oauth_error(refresh(&app, &alice_refresh).await, 400, "invalid_grant").await;
    // Removed once: a second removal is refused like any other.
    let response = post(&app, &browser, "/account/remove-access", &fields).await;
    assert_refused_page(response, REFUSED).await;
    assert!(audit_kinds(&app)
        .await
        .contains(&"account.access_removed".to_owned()));
    app.stop().await;
}

async fn forms_without_the_right_csrf_token_are_refused_and_change_nothing(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let browser = app.browser();
    let alice_refresh = alice_grant(&app, &browser).await;
    let page = account_page(&app, &browser, "alice").await;
    let grant = hidden(&page, "grant");
    // A token of another browser's page (a sign-in page of the account page).
    let other = app.browser();
    let (_, other_page) = get_text(&other, &account_url(&app)).await;
    let other_csrf = hidden(&other_page, "csrf");
    let sessions = app.rows("browser_sessions").await;

    let forms: [(&str, Vec<(&str, &str)>); 3] = [
        ("/account/remove-access", vec![("grant", grant.as_str())]),
        (
            "/account/change-password",
            vec![
                ("current_password", PASSWORD),
                ("new_password", NEW_PASSWORD),
                ("confirmation", NEW_PASSWORD),
            ],
        ),
        ("/account/sign-out-everywhere", vec![]),
    ];
    for (path, fields) in &forms {
        for csrf in [None, Some(""), Some(other_csrf.as_str())] {
            let mut sent = vec![("tenant", TENANT)];
            sent.extend(csrf.map(|csrf| ("csrf", csrf)));
            sent.extend(fields.iter().copied());
            let response = post(&app, &browser, path, &sent).await;
            assert_refused_page(response, "security token is missing or wrong").await;
        }
    }
    // The account sign-in form is refused the same way.
    let fields = [
        ("tenant", TENANT),
        ("request", "account"),
        ("csrf", "forged"),
        ("username", "alice"),
        ("password", PASSWORD),
    ];
    let response = post(&app, &other, "/oauth/signin", &fields).await;
    assert_refused_page(response, "security token is missing or wrong").await;

    // Nothing changed: the grant, the sessions, the password.
    assert_eq!(refresh(&app, &alice_refresh).await.status(), 200);
    assert_eq!(app.rows("browser_sessions").await, sessions);
    assert!(is_account_page(
        &get_text(&browser, &account_url(&app)).await.1
    ));
    account_page(&app, &app.browser(), "alice").await;
    app.stop().await;
}

async fn change_password_refuses_a_wrong_current_password_a_weak_one_and_a_mismatch(
    db: TestDatabase,
) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let browser = app.browser();
    let page = account_page(&app, &browser, "alice").await;
    let csrf = hidden(&page, "csrf");
    let change = |current: &'static str, new: &'static str, again: &'static str| {
        let csrf = csrf.clone();
        let browser = browser.clone();
        let app = &app;
        async move {
            let fields = [
                ("tenant", TENANT),
                ("csrf", csrf.as_str()),
                ("current_password", current),
                ("new_password", new),
                ("confirmation", again),
            ];
            let response = post(app, &browser, "/account/change-password", &fields).await;
            let status = response.status().as_u16();
            (status, response.text().await.unwrap())
        }
    };

    let (status, html) = change("not the password", NEW_PASSWORD, NEW_PASSWORD).await;
    assert_eq!(status, 200);
    assert!(
        html.contains("role=\"alert\">Your current password is incorrect.</p>"),
        "{html}"
    );
    assert!(is_account_page(&html));
    // The failure counts toward the sign-in throttle: the next check must wait.
    let (status, html) = change(PASSWORD, NEW_PASSWORD, NEW_PASSWORD).await;
    assert_eq!(status, 429);
    assert!(html.contains("wait 1 second(s)"), "{html}");
    app.clock.advance(60);

    // NIST SP 800-63B §5.1.1.2: the tenant's policy, with its own words.
    let weak = "password1234";
    let expected = oauth::password_policy::PasswordPolicy::default()
        .check(
            &SecretString::from(weak.to_owned()),
            "alice",
            "alice@example.com",
        )
        .unwrap_err();
    let (status, html) = change(PASSWORD, weak, weak).await;
    assert_eq!(status, 200);
    let shown = expected.message().replace('\'', "&#39;");
    assert!(html.contains(&shown), "{shown} not in {html}");
    let (status, html) = change(PASSWORD, NEW_PASSWORD, "marmalade tugboat").await;
    assert_eq!(status, 200);
    assert!(html.contains("The two new passwords differ."), "{html}");
    let (status, html) = change(PASSWORD, "", "").await;
    assert_eq!(status, 200);
    assert!(
        html.contains("Enter your current password, and your new password twice."),
        "{html}"
    );
    let (status, html) = change(PASSWORD, "short", "short").await;
    assert_eq!(status, 200);
    assert!(
        html.contains("The password must have at least 10 characters."),
        "{html}"
    );

    // The password is what it was.
    account_page(&app, &app.browser(), "alice").await;
    assert!(audit_kinds(&app)
        .await
        .contains(&"account.password_check_failed".to_owned()));
    app.stop().await;
}

async fn changing_the_password_ends_other_sessions_and_grants_and_keeps_this_session(
    db: TestDatabase,
) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let browser = app.browser();
    let alice_refresh = alice_grant(&app, &browser).await;
    let page = account_page(&app, &browser, "alice").await;
    let other = app.browser();
    account_page(&app, &other, "alice").await;

    let fields = [
        ("tenant", TENANT),
        ("csrf", &hidden(&page, "csrf")),
        ("current_password", PASSWORD),
        ("new_password", NEW_PASSWORD),
        ("confirmation", NEW_PASSWORD),
    ];
    let response = post(&app, &browser, "/account/change-password", &fields).await;
    assert_eq!(response.status(), 303);
    assert_eq!(
        response.headers()["location"],
        "/account?tenant=acme&done=password-changed"
    );
    assert!(response.headers().get("set-cookie").is_none());

    // This session stays; the other browser's is gone; the grant is revoked.
    let (_, page) = get_text(
        &browser,
        &format!("{}/account?tenant=acme&done=password-changed", app.issuer),
    )
    .await;
    assert!(is_account_page(&page), "{page}");
    assert!(page.contains("Password changed."), "{page}");
    let (_, other_page) = get_text(&other, &account_url(&app)).await;
    assert!(is_sign_in_page(&other_page), "{other_page}");
    flow::assert_oauth_error(refresh(&app, &alice_refresh).await, 400, "invalid_grant").await;
    assert_eq!(app.rows("browser_sessions").await, 1);

    // The old password is refused at sign-in, the new one signs in.
    let third = app.browser();
    let (_, sign_in) = get_text(&third, &account_url(&app)).await;
    let response = flow::sign_in(&app, &third, &sign_in, "alice", PASSWORD).await;
    assert_eq!(response.status(), 200);
    assert!(response
        .text()
        .await
        .unwrap()
        .contains("Incorrect username or password."));
    app.clock.advance(60);
    let response = flow::sign_in(&app, &third, &sign_in, "alice", NEW_PASSWORD).await;
    assert_eq!(response.status(), 303);
    let acme = TenantId::parse(TENANT).unwrap();
    let events = app.store.tenant(&acme).audit_events(100).await.unwrap();
    let changed = events
        .iter()
        .find(|e| e.kind == "account.password_changed")
        .expect("the change is audited");
    assert_eq!(
        changed.detail,
        "1 other session(s) ended, 1 grant(s) revoked"
    );
    app.stop().await;
}

async fn sign_out_everywhere_ends_every_session_and_grant_and_clears_the_cookie(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let browser = app.browser();
    let alice_refresh = alice_grant(&app, &browser).await;
    let page = account_page(&app, &browser, "alice").await;
    let other = app.browser();
    account_page(&app, &other, "alice").await;
    assert_eq!(app.rows("browser_sessions").await, 2);

    let fields = [("tenant", TENANT), ("csrf", &hidden(&page, "csrf"))];
    let response = post(&app, &browser, "/account/sign-out-everywhere", &fields).await;
    assert_eq!(response.status(), 303);
    assert_eq!(
        response.headers()["location"],
        "/account?tenant=acme&done=signed-out"
    );
    let cleared = response.headers()["set-cookie"].to_str().unwrap();
    assert!(
        cleared.starts_with("fieldauth-acme=;") && cleared.contains("Max-Age=0"),
        "{cleared}"
    );

    let (status, html) = get_text(
        &browser,
        &format!("{}/account?tenant=acme&done=signed-out", app.issuer),
    )
    .await;
    assert_eq!(status, 200);
    assert!(is_sign_in_page(&html), "{html}");
    assert!(html.contains("You are signed out everywhere."), "{html}");
    let (_, other_page) = get_text(&other, &account_url(&app)).await;
    assert!(is_sign_in_page(&other_page), "{other_page}");
    assert_eq!(app.rows("browser_sessions").await, 0);
    flow::assert_oauth_error(refresh(&app, &alice_refresh).await, 400, "invalid_grant").await;
    let acme = TenantId::parse(TENANT).unwrap();
    let events = app.store.tenant(&acme).audit_events(100).await.unwrap();
    let signed_out = events
        .iter()
        .find(|e| e.kind == "account.signed_out_everywhere")
        .expect("the sign-out is audited");
    assert_eq!(signed_out.detail, "2 session(s) ended, 1 grant(s) revoked");
    app.stop().await;
}
