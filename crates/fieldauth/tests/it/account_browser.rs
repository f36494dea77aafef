//! The account page in headless Chromium, used as a person uses it (issue 23): fields found
//! by their labels, buttons by their text. Only SQLite: the HTTP tests of `account.rs` cover
//! both backends; here the page is the subject.

use store::testing::TestDatabase;

use crate::account::{account_page, account_url, refresh, NEW_PASSWORD};
use crate::browser::Browser;
use crate::flow::{self, PASSWORD, REDIRECT_URI, VERIFIER, WEB_CLIENT, WEB_SECRET};
use crate::helpers::TestApp;

/// A grant of alice for the confidential client `web` (alice signed in in `http`): its
/// refresh token.
async fn web_grant(app: &TestApp, http: &reqwest::Client) -> String {
    let scope = Some("openid profile offline_access");
    let code = flow::code_for(
        app,
        http,
        &[("client_id", Some(WEB_CLIENT)), ("scope", scope)],
    )
    .await;
    let fields = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT_URI),
        ("code_verifier", VERIFIER),
    ];
    let response = flow::token_request(app, &fields, Some((WEB_CLIENT, WEB_SECRET))).await;
    assert_eq!(response.status(), 200);
    let tokens: serde_json::Value = response.json().await.unwrap();
    tokens["refresh_token"].as_str().unwrap().to_owned()
}

async fn refresh_web(app: &TestApp, refresh_token: &str) -> reqwest::Response {
    let fields = [
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh_token),
    ];
    flow::token_request(app, &fields, Some((WEB_CLIENT, WEB_SECRET))).await
}

/// Issue 23: sign in on the account page, see the two apps, remove one (its refresh token
/// is then `invalid_grant`), change the password (the old one is refused at sign-in, another
/// browser's session ends, the other app's grant is revoked), sign out everywhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_account_page_removes_an_app_changes_the_password_and_signs_out_everywhere() {
    let Some(browser) = Browser::launch().await else {
        return;
    };
    let app = TestApp::spawn(TestDatabase::sqlite()).await;
    flow::seed(&app).await;
    let http = app.browser();
    let code = flow::code_for(
        &app,
        &http,
        &[("scope", Some("openid profile offline_access jobs"))],
    )
    .await;
    let spa_refresh = flow::exchange(&app, &code).await["refresh_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let web_refresh = web_grant(&app, &http).await;

    browser.goto(&account_url(&app)).await;
    let text = browser.page_text().await;
    assert!(
        text.starts_with("Sign in\nto continue to your account\n"),
        "not the sign-in page: {text}"
    );
    browser.fill_by_label("Username", "alice").await;
    browser.fill_by_label("Password", PASSWORD).await;
    browser.click_button("Sign in").await;

    let text = browser.page_text().await;
    assert!(text.starts_with("Your account\n"), "{text}");
    for shown in [
        "Name\nalice Example",
        "Email\nalice@example.com",
        "Organizations\nAlpha, Bravo",
        "Apps with access",
        "Dispatch Board",
        "Back Office",
    ] {
        assert!(text.contains(shown), "{shown:?} not in {text}");
    }

    browser
        .click_button("Remove access for Dispatch Board")
        .await;
    let text = browser.page_text().await;
    assert!(text.contains("Access removed."), "{text}");
    assert!(
        !text.contains("Dispatch Board") && text.contains("Back Office"),
        "{text}"
    );
    flow::assert_oauth_error(refresh(&app, &spa_refresh).await, 400, "invalid_grant").await;
    let response = refresh_web(&app, &web_refresh).await;
    assert_eq!(response.status(), 200, "the other app keeps its access");
    let web_refresh = response.json::<serde_json::Value>().await.unwrap()["refresh_token"]
        .as_str()
        .unwrap()
        .to_owned();

    // Another browser signed in as alice.
    let other = app.browser();
    account_page(&app, &other, "alice").await;

    browser.fill_by_label("Current password", PASSWORD).await;
    browser.fill_by_label("New password", NEW_PASSWORD).await;
    browser
        .fill_by_label("New password again", NEW_PASSWORD)
        .await;
    browser.click_button("Change password").await;
    let text = browser.page_text().await;
    assert!(text.contains("Password changed."), "{text}");
    assert!(
        text.contains("No app has access to your account."),
        "{text}"
    );
    flow::assert_oauth_error(refresh_web(&app, &web_refresh).await, 400, "invalid_grant").await;
    let other_page = other.get(account_url(&app)).send().await.unwrap();
    let other_page = other_page.text().await.unwrap();
    assert!(other_page.contains("<h1>Sign in</h1>"), "{other_page}");
    let third = app.browser();
    let sign_in = third.get(account_url(&app)).send().await.unwrap();
    let sign_in = sign_in.text().await.unwrap();
    let response = flow::sign_in(&app, &third, &sign_in, "alice", PASSWORD).await;
    let refused = response.text().await.unwrap();
    assert!(
        refused.contains("Incorrect username or password."),
        "{refused}"
    );

    browser.click_button("Sign out everywhere").await;
    let text = browser.page_text().await;
    assert!(text.starts_with("Sign in\n"), "{text}");
    assert!(text.contains("You are signed out everywhere."), "{text}");
    assert_eq!(app.rows("browser_sessions").await, 0);

    browser.close().await;
    app.stop().await;
}
