//! Password links (invitations): issued over the admin API and by the CLI, used on the auth
//! server's page to set a password, then spent; a second link ends the first; a day later a
//! link is dead; the page's headers keep the token out of referrers and caches.

use reqwest::Response;
use serde_json::json;

use super::support::AdminClient;
use crate::flow::{seed, signs_in, submit_password, PASSWORD, TENANT};
use crate::helpers::{assert_refused, json_output, on_both_backends, TestApp};
use store::testing::TestDatabase;

on_both_backends!(
    a_link_sets_the_password_once_and_the_user_signs_in_with_it,
    a_second_link_ends_the_first_and_a_day_later_a_link_is_dead,
    the_form_needs_its_security_token_and_the_same_password_twice,
    a_tenant_token_cannot_issue_links_of_another_tenant,
    the_cli_issues_a_link_that_works,
);

const NEW_PASSWORD: &str = "a brand new passphrase";
/// What the page says of every link it cannot use.
const DEAD_LINK: &str = "This link is not valid";

fn link_path(sub: &str) -> String {
    format!("/tenants/{TENANT}/users/{sub}/password-link")
}

async fn issue(admin: &AdminClient, sub: &str) -> String {
    let reply = admin.post(&link_path(sub), json!({})).await;
    assert_eq!(reply.status, 201, "{:?}", reply.body);
    reply.body["url"].as_str().unwrap().to_owned()
}

/// Opens the link in `browser`: the status and the page.
async fn open(browser: &reqwest::Client, url: &str) -> (u16, String) {
    let response = browser.get(url).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

#[track_caller]
fn assert_page_headers(response: &Response) {
    let header = |name: &str| response.headers()[name].to_str().unwrap().to_owned();
    assert!(header("content-security-policy").contains("frame-ancestors 'none'"));
    assert_eq!(header("referrer-policy"), "no-referrer");
    assert_eq!(header("cache-control"), "no-store");
    assert_eq!(header("x-frame-options"), "DENY");
}

async fn a_link_sets_the_password_once_and_the_user_signs_in_with_it(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let seeded = seed(&app).await;
    let admin = AdminClient::new(&app, "ops", None).await;
    let reply = admin.post(&link_path(&seeded.alice_sub), json!({})).await;
    assert_eq!(reply.status, 201, "{:?}", reply.body);
    let url = reply.body["url"].as_str().unwrap().to_owned();
    let prefix = format!("{}/account/password?token={TENANT}.", app.issuer);
    assert!(url.starts_with(&prefix), "{url}");
    assert_eq!(url.len(), prefix.len() + 43, "256 bits in base64url: {url}");
    assert_eq!(reply.body["expires_at"], app.clock_now() + 24 * 3600);

    let browser = app.browser();
    let response = browser.get(&url).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_page_headers(&response);
    let page = response.text().await.unwrap();
    assert!(page.contains("alice"), "{page}");
    let done = submit_password(&app, &browser, &page, NEW_PASSWORD, NEW_PASSWORD).await;
    assert_eq!(done.status(), 200);
    assert_page_headers(&done);
    assert!(done.text().await.unwrap().contains("Password set"));

    assert!(signs_in(&app, NEW_PASSWORD).await, "the new password works");
    assert!(!signs_in(&app, PASSWORD).await, "the old one does not");
    // Past the throttle's pause after that failure.
    app.clock.advance(60);

    // Spent: neither the page nor the form takes it again.
    let (status, again) = open(&browser, &url).await;
    assert_eq!(status, 400);
    assert!(again.contains(DEAD_LINK), "{again}");
    let replay = submit_password(&app, &browser, &page, "yet another one", "yet another one").await;
    assert_eq!(replay.status(), 400);
    assert!(signs_in(&app, NEW_PASSWORD).await);

    // The trail has the issue and the use, and never the token.
    let trail = admin
        .get(&format!("/tenants/{TENANT}/audit?limit=200"))
        .await;
    let events = trail.assert_ok()["items"].as_array().unwrap().clone();
    let kinds: Vec<&str> = events.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert!(kinds.contains(&"admin.user.password_link"), "{kinds:?}");
    let set = events
        .iter()
        .find(|e| e["kind"] == "account.password_set")
        .expect("account.password_set");
    assert_eq!(set["subject"], seeded.alice_sub);
    let random = url.rsplit('.').next().unwrap();
    assert!(!trail.body.to_string().contains(random));
    app.stop().await;
}

async fn a_second_link_ends_the_first_and_a_day_later_a_link_is_dead(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let seeded = seed(&app).await;
    let admin = AdminClient::new(&app, "ops", None).await;
    let first = issue(&admin, &seeded.alice_sub).await;
    let second = issue(&admin, &seeded.alice_sub).await;
    assert_ne!(first, second);
    let browser = app.browser();
    let (status, page) = open(&browser, &first).await;
    assert_eq!((status, page.contains(DEAD_LINK)), (400, true), "{page}");
    let (status, page) = open(&browser, &second).await;
    assert_eq!(status, 200, "{page}");

    // The form opened before the day ended is refused after it too.
    app.clock.advance(24 * 3600);
    let (status, expired) = open(&browser, &second).await;
    assert_eq!(status, 400);
    assert!(expired.contains(DEAD_LINK), "{expired}");
    let late = submit_password(&app, &browser, &page, NEW_PASSWORD, NEW_PASSWORD).await;
    assert_eq!(late.status(), 400);
    assert!(signs_in(&app, PASSWORD).await, "the password is unchanged");

    // Unknown and malformed tokens read the same.
    for token in ["acme.nope", "nodot", "", "Bad.x"] {
        let url = format!("{}/account/password?token={token}", app.issuer);
        let (status, page) = open(&browser, &url).await;
        assert_eq!((status, page.contains(DEAD_LINK)), (400, true), "{token}");
    }
    app.stop().await;
}

async fn the_form_needs_its_security_token_and_the_same_password_twice(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let seeded = seed(&app).await;
    let admin = AdminClient::new(&app, "ops", None).await;
    let url = issue(&admin, &seeded.alice_sub).await;
    let browser = app.browser();
    let (_, page) = open(&browser, &url).await;

    // Another browser (no cookie) with the page's values: a forged form.
    let forged = submit_password(&app, &app.browser(), &page, NEW_PASSWORD, NEW_PASSWORD).await;
    assert_eq!(forged.status(), 400);
    assert!(forged.text().await.unwrap().contains("security token"));
    let differ = submit_password(&app, &browser, &page, NEW_PASSWORD, "something else").await;
    assert_eq!(differ.status(), 200);
    assert!(differ.text().await.unwrap().contains("differ"));
    let short = submit_password(&app, &browser, &page, "short", "short").await;
    assert!(short
        .text()
        .await
        .unwrap()
        .contains("The password must have at least 10 characters."));
    let repeated = browser
        .post(format!("{}/account/password", app.issuer))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("token=a&token=b")
        .send()
        .await
        .unwrap();
    assert_eq!(repeated.status(), 400);
    assert!(signs_in(&app, PASSWORD).await, "nothing changed so far");

    // The link is still live after all that.
    let done = submit_password(&app, &browser, &page, NEW_PASSWORD, NEW_PASSWORD).await;
    assert!(done.text().await.unwrap().contains("Password set"));
    app.stop().await;
}

async fn a_tenant_token_cannot_issue_links_of_another_tenant(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let seeded = seed(&app).await;
    let ops = AdminClient::new(&app, "ops", None).await;
    ops.post("/tenants", json!({ "tenant": "globex" }))
        .await
        .assert_ok();
    let globex = AdminClient::new(&app, "globex-office", Some("globex")).await;
    globex
        .post(&link_path(&seeded.alice_sub), json!({}))
        .await
        .assert_problem(404, "not-found");
    ops.post(
        &link_path("00000000-0000-4000-8000-0000000000ff"),
        json!({}),
    )
    .await
    .assert_problem(404, "not-found");
    ops.post(
        &format!("/tenants/nowhere/users/{}/password-link", seeded.alice_sub),
        json!({}),
    )
    .await
    .assert_problem(404, "not-found");
    let acme = AdminClient::new(&app, "acme-office", Some(TENANT)).await;
    assert_eq!(
        acme.post(&link_path(&seeded.alice_sub), json!({}))
            .await
            .status,
        201
    );
    app.stop().await;
}

async fn the_cli_issues_a_link_that_works(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let seeded = seed(&app).await;
    let args = [
        "user",
        "password-link",
        "--tenant",
        TENANT,
        "--sub",
        &seeded.alice_sub,
        "--auth-url",
        &app.issuer,
    ];
    let mut with_json = args.to_vec();
    with_json.push("--json");
    let body = json_output(&app.cli(&with_json));
    let url = body["url"].as_str().unwrap().to_owned();
    assert!(url.starts_with(&format!("{}/account/password?token={TENANT}.", app.issuer)));
    assert!(body["expires_at"].as_i64().unwrap() > app.clock_now());
    let browser = app.browser();
    let (status, page) = open(&browser, &url).await;
    assert_eq!(status, 200, "{page}");
    let done = submit_password(&app, &browser, &page, NEW_PASSWORD, NEW_PASSWORD).await;
    assert!(done.text().await.unwrap().contains("Password set"));
    assert!(signs_in(&app, NEW_PASSWORD).await);

    // The text form ends the JSON one's link, and names the user.
    let text = app.cli(&args);
    let stdout = String::from_utf8(text.stdout).unwrap();
    assert!(stdout.contains(&seeded.alice_sub), "{stdout}");
    let unknown = [
        "user",
        "password-link",
        "--tenant",
        TENANT,
        "--sub",
        "nobody",
        "--auth-url",
        &app.issuer,
    ];
    assert_refused(&app.cli(&unknown), "user not found");
    app.stop().await;
}

/// The page as a person uses it, in Chromium: the fields by their labels, the button by its
/// text, the confirmation, and the spent link's error page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_sets_a_password_from_a_link() {
    let Some(browser) = crate::browser::Browser::launch().await else {
        return;
    };
    let app = TestApp::spawn(TestDatabase::sqlite()).await;
    let seeded = seed(&app).await;
    let admin = AdminClient::new(&app, "ops", None).await;
    let url = issue(&admin, &seeded.alice_sub).await;
    browser.goto(&url).await;
    let text = browser.page_text().await;
    assert!(text.contains("Set your password"), "{text}");
    browser.fill_by_label("New password", NEW_PASSWORD).await;
    browser
        .fill_by_label("New password, again", NEW_PASSWORD)
        .await;
    browser.click_button("Set password").await;
    let text = browser.page_text().await;
    assert!(text.contains("Password set"), "{text}");
    browser.goto(&url).await;
    let text = browser.page_text().await;
    assert!(text.contains(DEAD_LINK), "{text}");
    browser.close().await;
    assert!(signs_in(&app, NEW_PASSWORD).await);
    app.stop().await;
}
