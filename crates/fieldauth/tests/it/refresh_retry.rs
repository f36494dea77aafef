//! Issue 27's refresh retry window, end to end: a client with `refresh_retry_seconds` that
//! lost a refresh's answer presents the token it used again and is answered as for a fresh
//! refresh (the lost successor refused, the grant standing, the retry audited); outside the
//! window, after the successor was used, or from another client, it is reuse and revokes
//! the grant (spec §5.7); concurrent retries across two nodes have exactly one winner.

use serde_json::Value;
use store::testing::TestDatabase;

use crate::flow::{
    assert_oauth_error, jwt_parts, seed, token_request, CLIENT_ID, TENANT, WEB_CLIENT, WEB_SECRET,
};
use crate::helpers::{assert_ok, on_both_backends, TestApp};
use crate::node_support::{self, userinfo, Cluster};
use crate::refresh::{first_refresh_token, refresh};

on_both_backends!(
    a_lost_answer_is_retried_and_its_successor_refused_while_the_grant_stands,
    a_retry_after_the_window_revokes_the_grant,
    a_retry_after_the_successor_was_used_revokes_the_grant,
    another_client_presenting_the_used_token_revokes_the_grant,
);

const WINDOW: &str = "60";

/// Gives `client_id` of tenant `acme` a retry window, as an operator does.
pub(crate) fn set_window(app: &TestApp, client_id: &str, seconds: &str) {
    assert_ok(&app.cli(&[
        "client",
        "update",
        "--tenant",
        TENANT,
        "--client-id",
        client_id,
        "--refresh-retry-seconds",
        seconds,
    ]));
}

async fn ok(response: reqwest::Response) -> Value {
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

fn refresh_token(body: &Value) -> String {
    body["refresh_token"].as_str().unwrap().to_owned()
}

/// The grant of a refresh token, from its access token.
fn grant_id(body: &Value) -> String {
    let (_, claims) = jwt_parts(body["access_token"].as_str().unwrap());
    claims["grant_id"].as_str().unwrap().to_owned()
}

/// The lost response: the first refresh's answer never arrives; the same token
/// again within the window gets new tokens, the lost successor is refused without revoking
/// anything, and the retried answer's tokens work.
async fn a_lost_answer_is_retried_and_its_successor_refused_while_the_grant_stands(
    db: TestDatabase,
) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    set_window(&app, CLIENT_ID, WINDOW);
    let first = first_refresh_token(&app).await;
    let lost = ok(refresh(&app, &first, &[]).await).await;
    app.clock.advance(60);

    // RFC 6749 §6: a retry may only narrow too, and a refused one does not spend the retry.
    assert_oauth_error(
        refresh(&app, &first, &[("scope", "jobs customers")]).await,
        400,
        "invalid_scope",
    )
    .await;
    let retried = ok(refresh(&app, &first, &[]).await).await;
    let successor = refresh_token(&retried);
    assert_ne!(successor, refresh_token(&lost));
    assert_eq!(retried["scope"], "openid offline_access jobs");
    assert!(retried["id_token"].is_string(), "a new ID token");
    assert_ne!(retried["access_token"], lost["access_token"]);
    assert_eq!(grant_id(&retried), grant_id(&lost), "the same grant");

    // The lost successor: refused, and nothing is revoked.
    assert_oauth_error(
        refresh(&app, &refresh_token(&lost), &[]).await,
        400,
        "invalid_grant",
    )
    .await;
    let access = retried["access_token"].as_str().unwrap();
    assert_eq!(userinfo(&app.http, &app.issuer, access).await.status(), 200);
    let next = ok(refresh(&app, &successor, &[]).await).await;
    let access = next["access_token"].as_str().unwrap();
    assert_eq!(userinfo(&app.http, &app.issuer, access).await.status(), 200);

    let events = app
        .store
        .tenant(&store::TenantId::parse(TENANT).unwrap())
        .audit_events(20)
        .await
        .unwrap();
    let retry = events
        .iter()
        .find(|e| e.kind == "refresh.retried")
        .expect("the retry is audited");
    assert_eq!(retry.client_id.as_deref(), Some(CLIENT_ID));
    assert!(
        retry.detail.contains(&grant_id(&retried)),
        "{}",
        retry.detail
    );
    assert!(!retry.detail.contains(&first), "never the token");
    assert!(!events.iter().any(|e| e.kind == "grant.revoked"));
    app.stop().await;
}

/// Past the window the second presentation is reuse, as without one.
async fn a_retry_after_the_window_revokes_the_grant(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    set_window(&app, CLIENT_ID, WINDOW);
    let first = first_refresh_token(&app).await;
    let lost = ok(refresh(&app, &first, &[]).await).await;
    app.clock.advance(61);
    assert_oauth_error(refresh(&app, &first, &[]).await, 400, "invalid_grant").await;
    assert_revoked(&app, &lost).await;
    app.stop().await;
}

/// The successor was used, so the answer was not lost: the token again is reuse.
async fn a_retry_after_the_successor_was_used_revokes_the_grant(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    set_window(&app, CLIENT_ID, WINDOW);
    let first = first_refresh_token(&app).await;
    let second = ok(refresh(&app, &first, &[]).await).await;
    let third = ok(refresh(&app, &refresh_token(&second), &[]).await).await;
    assert_oauth_error(refresh(&app, &first, &[]).await, 400, "invalid_grant").await;
    assert_revoked(&app, &third).await;
    app.stop().await;
}

/// A used token in another client's hands is reuse, whatever that client's own window.
async fn another_client_presenting_the_used_token_revokes_the_grant(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    set_window(&app, CLIENT_ID, WINDOW);
    set_window(&app, WEB_CLIENT, "120");
    let first = first_refresh_token(&app).await;
    let lost = ok(refresh(&app, &first, &[]).await).await;
    let stolen = [
        ("grant_type", "refresh_token"),
        ("refresh_token", first.as_str()),
    ];
    assert_oauth_error(
        token_request(&app, &stolen, Some((WEB_CLIENT, WEB_SECRET))).await,
        400,
        "invalid_grant",
    )
    .await;
    assert_revoked(&app, &lost).await;
    app.stop().await;
}

/// The grant of `answer` is revoked: its refresh token and its access token are refused.
async fn assert_revoked(app: &TestApp, answer: &Value) {
    assert_oauth_error(
        refresh(app, &refresh_token(answer), &[]).await,
        400,
        "invalid_grant",
    )
    .await;
    let access = answer["access_token"].as_str().unwrap();
    assert_eq!(userinfo(&app.http, &app.issuer, access).await.status(), 401);
}

/// Twenty retries of one used token at once, alternating between two nodes on one
/// PostgreSQL database: exactly one is answered, the others are `invalid_grant` without
/// revoking anything, and the winner's tokens work on both nodes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_retries_on_two_nodes_have_exactly_one_winner() {
    let Some(db) = TestDatabase::postgres().await else {
        return;
    };
    node_support::prepare(&db).await;
    assert_ok(&crate::helpers::cli(
        &db,
        &[
            "client",
            "update",
            "--tenant",
            TENANT,
            "--client-id",
            CLIENT_ID,
            "--refresh-retry-seconds",
            "120",
        ],
        None,
    ));
    let cluster = Cluster::start(db, 2, &[]).await;
    let (a, b, http) = (cluster.node(0), cluster.node(1), &cluster.http);
    let code = node_support::code_at(&a.auth, "openid offline_access jobs").await;
    let first = node_support::exchange(http, &a.auth, &code).await["refresh_token"]
        .as_str()
        .unwrap()
        .to_owned();
    // The answer that is lost.
    let lost = node_support::refresh(http, &b.auth, &first).await;
    assert_eq!(lost.status(), 200);

    let attempts: Vec<_> = (0..20)
        .map(|i| {
            let base = [&a.auth, &b.auth][i % 2].clone();
            let (http, first) = (http.clone(), first.clone());
            tokio::spawn(async move {
                let response = node_support::refresh(&http, &base, &first).await;
                let status = response.status().as_u16();
                (status, response.json::<Value>().await.unwrap())
            })
        })
        .collect();
    let mut answers = Vec::new();
    for attempt in attempts {
        answers.push(attempt.await.unwrap());
    }
    let statuses: Vec<u16> = answers.iter().map(|(s, _)| *s).collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}"
    );
    for (status, body) in &answers {
        assert!(
            *status == 200 || (*status == 400 && body["error"] == "invalid_grant"),
            "{status} {body}"
        );
    }
    let (_, winner) = answers.iter().find(|(s, _)| *s == 200).unwrap();
    let access = winner["access_token"].as_str().unwrap();
    for node in [a, b] {
        assert_eq!(userinfo(http, &node.auth, access).await.status(), 200);
    }
    let next = node_support::refresh(http, &b.auth, winner["refresh_token"].as_str().unwrap());
    assert_eq!(next.await.status(), 200, "the grant stands");
}
