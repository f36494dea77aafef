//! What disabling, enabling and a missing password mean to the protocol, with tokens from
//! the real flow: a disabled user's refresh token is `invalid_grant`, their access token is
//! refused by userinfo and the API, their browser session is not accepted, a code issued
//! before the disabling gives no tokens, and sign-in fails as for a wrong password (the
//! audit trail says why). Enabling lets them sign in again; the old tokens stay dead. The
//! same across two nodes on PostgreSQL.

use serde_json::{json, Value};
use store::testing::TestDatabase;
use store::TenantId;

use super::support::AdminClient;
use crate::flow::{
    assert_oauth_error, authorize_url, code_for, exchange, seed, sign_in, token_request, CLIENT_ID,
    PASSWORD, REDIRECT_URI, TENANT, VERIFIER,
};
use crate::helpers::{cli, json_output, on_both_backends, TestApp};
use crate::node_support::{self, graphql, prepare, userinfo, Cluster, ALICE_SUB};
use crate::refresh::refresh;

on_both_backends!(
    disabling_ends_every_token_and_sign_in_and_enabling_brings_back_only_sign_in,
    a_user_without_a_password_cannot_sign_in_until_one_is_set,
    deleting_a_user_ends_their_tokens_and_their_sign_in,
    a_code_of_a_client_disabled_meanwhile_gives_no_tokens,
    a_session_left_to_a_disabled_user_is_not_accepted,
);

const VIEWER: &str = "{ viewer { subject } }";
const WRONG: &str = "Incorrect username or password.";

/// What the sign-in form answers `username` and `password` in a new browser: the consent page
/// (`true`) or the sign-in page again with the wrong-password sentence (`false`).
async fn signs_in(app: &TestApp, username: &str, password: &str) -> bool {
    let browser = app.browser();
    let page = browser.get(authorize_url(app, &[])).send().await.unwrap();
    let page = page.text().await.unwrap();
    let answer = sign_in(app, &browser, &page, username, password).await;
    assert_eq!(answer.status(), 200, "sign-in never errors");
    let html = answer.text().await.unwrap();
    match html.contains("name=\"decision\"") {
        true => true,
        false => {
            assert!(html.contains(WRONG), "{html}");
            // Past the throttle's delay after a failure (1 s after the first, then 2 s…).
            app.clock.advance(60);
            false
        }
    }
}

async fn signin_failures(app: &TestApp) -> Vec<String> {
    let acme = TenantId::parse(TENANT).unwrap();
    let events = app.store.tenant(&acme).audit_events(100).await.unwrap();
    events
        .into_iter()
        .filter(|e| e.kind == "signin.failed")
        .map(|e| e.detail)
        .collect()
}

async fn api_status(app: &TestApp, token: &str) -> u16 {
    graphql(&app.http, &app.api_url, token, VIEWER)
        .await
        .status()
        .as_u16()
}

async fn disabling_ends_every_token_and_sign_in_and_enabling_brings_back_only_sign_in(
    db: TestDatabase,
) {
    let app = TestApp::spawn(db).await;
    let seeded = seed(&app).await;
    let admin = AdminClient::new(&app, "ops", None).await;
    let alice = format!("/tenants/acme/users/{}", seeded.alice_sub);
    let browser = app.browser();
    let scope = [("scope", Some("openid offline_access jobs"))];
    let tokens = exchange(&app, &code_for(&app, &browser, &scope).await).await;
    let access = tokens["access_token"].as_str().unwrap();
    let refresh_token = tokens["refresh_token"].as_str().unwrap();
    // A code issued before the disabling, redeemed after.
    let pending_code = code_for(&app, &browser, &scope).await;
    assert_eq!(userinfo(&app.http, &app.issuer, access).await.status(), 200);
    assert_eq!(api_status(&app, access).await, 200);

    let disabled = admin.post(&format!("{alice}/disable"), json!({})).await;
    assert_eq!(disabled.assert_ok()["disabled"], true);

    assert_oauth_error(
        refresh(&app, refresh_token, &[]).await,
        400,
        "invalid_grant",
    )
    .await;
    assert_eq!(userinfo(&app.http, &app.issuer, access).await.status(), 401);
    assert_eq!(api_status(&app, access).await, 401);
    let fields = [
        ("grant_type", "authorization_code"),
        ("code", pending_code.as_str()),
        ("redirect_uri", REDIRECT_URI),
        ("code_verifier", VERIFIER),
        ("client_id", CLIENT_ID),
    ];
    assert_oauth_error(
        token_request(&app, &fields, None).await,
        400,
        "invalid_grant",
    )
    .await;
    // The browser's session is gone: authorize asks for sign-in again, not for consent.
    let page = browser.get(authorize_url(&app, &[])).send().await.unwrap();
    let page = page.text().await.unwrap();
    assert!(page.contains("name=\"password\""), "{page}");
    assert!(
        !signs_in(&app, "alice", PASSWORD).await,
        "a disabled user signed in"
    );
    let failures = signin_failures(&app).await;
    assert!(
        failures.iter().any(|d| d.contains("account disabled")),
        "{failures:?}"
    );

    let enabled = admin.post(&format!("{alice}/enable"), json!({})).await;
    assert_eq!(enabled.assert_ok()["disabled"], false);
    assert!(
        signs_in(&app, "alice", PASSWORD).await,
        "enabled, alice signs in"
    );
    assert_oauth_error(
        refresh(&app, refresh_token, &[]).await,
        400,
        "invalid_grant",
    )
    .await;
    assert_eq!(userinfo(&app.http, &app.issuer, access).await.status(), 401);
    assert_eq!(api_status(&app, access).await, 401);
    // And a fresh flow gives working tokens.
    let fresh = exchange(&app, &code_for(&app, &app.browser(), &scope).await).await;
    let fresh_access = fresh["access_token"].as_str().unwrap();
    assert_eq!(
        userinfo(&app.http, &app.issuer, fresh_access)
            .await
            .status(),
        200
    );
    app.stop().await;
}

async fn a_user_without_a_password_cannot_sign_in_until_one_is_set(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let admin = AdminClient::new(&app, "ops", None).await;
    let new = json!({ "username": "henry", "name": "Henry", "email": "henry@example.com" });
    let created = admin.post("/tenants/acme/users", new).await;
    assert_eq!(created.status, 201);
    let sub = created.body["sub"].as_str().unwrap();
    for attempt in ["!no password set", PASSWORD] {
        assert!(!signs_in(&app, "henry", attempt).await, "{attempt:?}");
    }
    let failures = signin_failures(&app).await;
    assert!(
        failures.iter().any(|d| d.contains("no password set")),
        "{failures:?}"
    );
    let path = format!("/tenants/acme/users/{sub}/password");
    let set = admin
        .put(&path, Some(json!({ "password": PASSWORD })))
        .await;
    assert_eq!(set.status, 204);
    assert!(signs_in(&app, "henry", PASSWORD).await);
    app.stop().await;
}

async fn deleting_a_user_ends_their_tokens_and_their_sign_in(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let seeded = seed(&app).await;
    let admin = AdminClient::new(&app, "ops", None).await;
    let scope = [("scope", Some("openid offline_access jobs"))];
    let tokens = exchange(&app, &code_for(&app, &app.browser(), &scope).await).await;
    let access = tokens["access_token"].as_str().unwrap();
    let refresh_token = tokens["refresh_token"].as_str().unwrap();
    let alice = format!("/tenants/acme/users/{}", seeded.alice_sub);
    assert_eq!(admin.delete(&alice).await.status, 204);
    assert_oauth_error(
        refresh(&app, refresh_token, &[]).await,
        400,
        "invalid_grant",
    )
    .await;
    assert_eq!(userinfo(&app.http, &app.issuer, access).await.status(), 401);
    assert_eq!(api_status(&app, access).await, 401);
    assert!(!signs_in(&app, "alice", PASSWORD).await);
    // The trail keeps the deletion, by `sub` only.
    let acme = TenantId::parse(TENANT).unwrap();
    let events = app.store.tenant(&acme).audit_events(100).await.unwrap();
    let deleted = events
        .iter()
        .find(|e| e.kind == "admin.user.deleted")
        .unwrap();
    assert_eq!(deleted.subject.as_deref(), Some(seeded.alice_sub.as_str()));
    assert!(!deleted.detail.contains("alice"), "{}", deleted.detail);
    app.stop().await;
}

/// The code exchange itself refuses a disabled client's code (whatever client
/// authentication decides before it): the client is disabled in the database directly.
async fn a_code_of_a_client_disabled_meanwhile_gives_no_tokens(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let code = code_for(&app, &app.browser(), &[]).await;
    let pool = sqlx::AnyPool::connect(&app.db.url).await.unwrap();
    sqlx::query("UPDATE clients SET disabled_at = 1 WHERE tenant_id = 'acme' AND client_id = $1")
        .bind(CLIENT_ID)
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    let fields = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT_URI),
        ("code_verifier", VERIFIER),
        ("client_id", CLIENT_ID),
    ];
    let response = token_request(&app, &fields, None).await;
    assert!(
        [400, 401].contains(&response.status().as_u16()),
        "{}",
        response.status()
    );
    let body: Value = response.json().await.unwrap();
    assert!(body.get("access_token").is_none(), "{body}");
    assert_eq!(app.rows("grants").await, 0, "no grant was issued");
    app.stop().await;
}

/// Disabling deletes the user's sessions; a session that outlived it anyway (a sign-in
/// finishing on another node at that moment) is refused when read. Here the user is disabled
/// in the database directly, so the session stays.
async fn a_session_left_to_a_disabled_user_is_not_accepted(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let seeded = seed(&app).await;
    let browser = app.browser();
    code_for(&app, &browser, &[]).await;
    let pool = sqlx::AnyPool::connect(&app.db.url).await.unwrap();
    sqlx::query("UPDATE users SET disabled_at = 1 WHERE tenant_id = 'acme' AND user_id = $1")
        .bind(&seeded.alice_sub)
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    assert_eq!(app.rows("browser_sessions").await, 1);
    let page = browser.get(authorize_url(&app, &[])).send().await.unwrap();
    let page = page.text().await.unwrap();
    assert!(
        page.contains("name=\"password\""),
        "not the sign-in page: {page}"
    );
    app.stop().await;
}

/// Tokens from node A; the user disabled by the operator (the CLI, a process of its own, as
/// an admin on any node would be); node B refuses every token and the sign-in at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_disabled_is_refused_at_once_by_another_node() {
    let Some(db) = TestDatabase::postgres().await else {
        return;
    };
    prepare(&db).await;
    // Two admin listeners cannot share the default address; the change is made by the CLI.
    let cluster = Cluster::start(db, 2, &["--admin-listen", ""]).await;
    let (a, b) = (cluster.node(0), cluster.node(1));
    let http = &cluster.http;
    let code = node_support::code_at(&a.auth, "openid offline_access jobs").await;
    let tokens: Value = node_support::exchange(http, &a.auth, &code).await;
    let access = tokens["access_token"].as_str().unwrap();
    let refresh_token = tokens["refresh_token"].as_str().unwrap();
    assert_eq!(userinfo(http, &b.auth, access).await.status(), 200);

    let user = ["--tenant", TENANT, "--sub", ALICE_SUB, "--json"];
    let disabled = json_output(&cli(
        &cluster.db,
        &[&["user", "disable"], &user[..]].concat(),
        None,
    ));
    assert_eq!(disabled["disabled"], true);
    assert_oauth_error(
        node_support::refresh(http, &b.auth, refresh_token).await,
        400,
        "invalid_grant",
    )
    .await;
    assert_eq!(userinfo(http, &b.auth, access).await.status(), 401);
    let api = graphql(http, &b.api, access, VIEWER).await;
    assert_eq!(api.status(), 401);
    assert!(
        !node_signs_in(&cluster, &b.auth).await,
        "node B let a disabled user in"
    );

    json_output(&cli(
        &cluster.db,
        &[&["user", "enable"], &user[..]].concat(),
        None,
    ));
    // Past the throttle's delay after the refused sign-in (1 s after a first failure).
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    assert!(
        node_signs_in(&cluster, &b.auth).await,
        "enabled, alice signs in on B"
    );
    assert_oauth_error(
        node_support::refresh(http, &b.auth, refresh_token).await,
        400,
        "invalid_grant",
    )
    .await;
    assert_eq!(userinfo(http, &a.auth, access).await.status(), 401);
}

/// Whether alice's right password reaches the consent page on `base`.
async fn node_signs_in(cluster: &Cluster, base: &str) -> bool {
    let browser = cluster.browser();
    let url = node_support::authorize_url_of(base, TENANT, "openid");
    let page = browser.get(url).send().await.unwrap().text().await.unwrap();
    let answer = node_support::sign_in(&browser, base, &page, "alice", PASSWORD).await;
    assert_eq!(answer.status(), 200);
    let html = answer.text().await.unwrap();
    html.contains("name=\"decision\"")
}
