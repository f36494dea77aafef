//! The sign-in form: one message for every wrong credential, a new session cookie on
//! success, and the throttle: a growing delay, then a lock that even the right password
//! cannot pass until it ends.

use oauth::ThrottlePolicy;
use store::testing::TestDatabase;

use crate::flow::{authorize_url, seed, sign_in, PASSWORD};
use crate::helpers::{on_both_backends, TestApp};

on_both_backends!(
    wrong_password_and_unknown_user_get_the_same_answer,
    success_replaces_the_cookie_with_a_new_session,
    failures_delay_then_lock_the_account_even_for_the_right_password,
    failures_from_one_address_lock_it_across_usernames,
);

async fn sign_in_page(app: &TestApp, browser: &reqwest::Client) -> String {
    browser
        .get(authorize_url(app, &[]))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

pub(crate) async fn attempt(
    app: &TestApp,
    browser: &reqwest::Client,
    username: &str,
    password: &str,
) -> (u16, String) {
    let page = sign_in_page(app, browser).await;
    let response = sign_in(app, browser, &page, username, password).await;
    (response.status().as_u16(), response.text().await.unwrap())
}

fn is_consent(html: &str) -> bool {
    html.contains("name=\"decision\"")
}

async fn wrong_password_and_unknown_user_get_the_same_answer(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let browser = app.browser();
    let (status, wrong) = attempt(&app, &browser, "alice", "not the password").await;
    assert_eq!(status, 200);
    assert!(wrong.contains("Incorrect username or password."), "{wrong}");
    assert!(!is_consent(&wrong));
    app.clock.advance(60);
    let (status, unknown) = attempt(&app, &browser, "mallory", PASSWORD).await;
    assert_eq!(status, 200);
    assert!(
        unknown.contains("Incorrect username or password."),
        "{unknown}"
    );
    // The typed username is kept in the form, the password is not.
    assert!(unknown.contains("value=\"mallory\"") && !unknown.contains(PASSWORD));
    app.clock.advance(60);
    // Usernames are case-insensitive.
    let (status, html) = attempt(&app, &browser, "ALICE", PASSWORD).await;
    assert_eq!(status, 200);
    assert!(is_consent(&html));
    app.stop().await;
}

/// Session fixation: the cookie value the browser had before signing in is not the session.
async fn success_replaces_the_cookie_with_a_new_session(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let browser = app.browser();
    let first = browser.get(authorize_url(&app, &[])).send().await.unwrap();
    let before = first.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let page = first.text().await.unwrap();
    let response = sign_in(&app, &browser, &page, "alice", PASSWORD).await;
    let after = response.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        after.starts_with("fieldauth-acme=") && after.contains("HttpOnly"),
        "{after}"
    );
    assert_ne!(
        after.split(';').next().unwrap(),
        before,
        "the session cookie is new"
    );
    assert!(is_consent(&response.text().await.unwrap()));
    app.stop().await;
}

async fn failures_delay_then_lock_the_account_even_for_the_right_password(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let browser = app.browser();
    attempt(&app, &browser, "alice", "wrong-1").await;
    // Right after a failure the next attempt must wait, right password or not.
    let (status, html) = attempt(&app, &browser, "alice", PASSWORD).await;
    assert_eq!(status, 429);
    assert!(html.contains("wait 1 second(s)"), "{html}");
    for i in 2..=5 {
        app.clock.advance(60);
        let (status, html) = attempt(&app, &browser, "alice", &format!("wrong-{i}")).await;
        assert_eq!(status, 200);
        assert_eq!(html.contains("locked"), i == 5, "attempt {i}: {html}");
    }
    app.clock.advance(60);
    let (status, html) = attempt(&app, &browser, "alice", PASSWORD).await;
    assert_eq!(status, 429, "locked: the right password is refused");
    assert!(html.contains("locked for 4 more minute(s)"), "{html}");
    assert!(!is_consent(&html));
    // Another account is not locked by alice's failures.
    let (status, html) = attempt(&app, &app.browser(), "bob", PASSWORD).await;
    assert_eq!(status, 200);
    assert!(is_consent(&html));
    // When the lock ends (300 s after the last failure) the right password works again.
    app.clock.advance(240);
    let (status, html) = attempt(&app, &browser, "alice", PASSWORD).await;
    assert_eq!(status, 200);
    assert!(is_consent(&html));
    app.stop().await;
}

async fn failures_from_one_address_lock_it_across_usernames(db: TestDatabase) {
    let policy = ThrottlePolicy {
        max_account_failures: 5,
        max_address_failures: 3,
        lock_seconds: 300,
    };
    let app = TestApp::spawn_with_throttle(db, policy).await;
    seed(&app).await;
    let browser = app.browser();
    for username in ["bob", "carol", "nobody"] {
        let (status, _) = attempt(&app, &browser, username, "wrong").await;
        assert_eq!(status, 200);
        app.clock.advance(60);
    }
    let (status, html) = attempt(&app, &browser, "alice", PASSWORD).await;
    assert_eq!(status, 429, "the address is locked");
    assert!(html.contains("locked"), "{html}");
    app.clock.advance(300);
    let (status, html) = attempt(&app, &browser, "alice", PASSWORD).await;
    assert_eq!(status, 200);
    assert!(is_consent(&html));
    app.stop().await;
}
