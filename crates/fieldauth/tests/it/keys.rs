//! Key rotation by the CLI reaches a running server without a restart (DESIGN.md: nodes
//! cache keys and reload them).

use std::time::Duration;

use store::testing::TestDatabase;

use jose::Clock;

use crate::flow::{code_for, exchange, jwt_parts, seed};
use crate::helpers::{eventually, json_output, on_both_backends, TestApp};

on_both_backends!(
    rotation_and_retirement_reach_the_running_jwks,
    a_key_retired_with_the_cli_stops_verifying_at_the_apis_next_jwks_fetch,
);

/// RFC 7517 key rollover: a rotated key is in the JWKS at the next reload, signs once it has
/// been published for `PUBLISH_BEFORE_SIGNING` (the server's clock moved, no waiting), and a
/// retired key leaves the JWKS.
async fn rotation_and_retirement_reach_the_running_jwks(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let first = app.jwks_kids().await;
    assert_eq!(first.len(), 1, "one key to start with");
    let new_kid = json_output(&app.cli(&["keys", "rotate", "--json"]))["kid"]
        .as_str()
        .unwrap()
        .to_owned();

    // Published at the next reload, after the key that still signs.
    let published = vec![first[0].clone(), new_kid.clone()];
    eventually(Duration::from_secs(10), || async {
        app.jwks_kids().await == published
    })
    .await;

    // Once published long enough, the new key signs and is listed first. The CLI stamped the
    // key with the real time; the server's clock moves to exactly the moment it may sign.
    let created_at = app.store.active_signing_keys().await.unwrap()[0].created_at;
    app.clock.set(created_at + jose::PUBLISH_BEFORE_SIGNING);
    let signing = vec![new_kid.clone(), first[0].clone()];
    eventually(Duration::from_secs(10), || async {
        app.jwks_kids().await == signing
    })
    .await;

    // The CLI reads the real clock, on which the old key still signs: retire it through the
    // store at the server's time instead, as an operator would after waiting.
    app.store
        .retire_signing_key(&first[0], app.clock.now())
        .await
        .unwrap();
    eventually(Duration::from_secs(10), || async {
        app.jwks_kids().await == [new_kid.clone()]
    })
    .await;
    app.stop().await;
}

/// `POST /api` with this access token: the status and the `WWW-Authenticate` challenge.
async fn api_status(app: &TestApp, token: &str) -> (u16, Option<String>) {
    let response = app
        .http
        .post(format!("{}/api", app.api_url))
        .bearer_auth(token)
        .json(&serde_json::json!({ "query": "{ viewer { subject } }" }))
        .send()
        .await
        .unwrap();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned());
    (response.status().as_u16(), challenge)
}

/// RFC 6750 §3.1 and docs/key-rotation.md: the API keeps the issuer's JWKS no longer than its
/// `max-age` (60 s), and each fetch replaces its copy, so once a key retired with
/// `fieldauth keys retire` has left the JWKS, the API's next fetch drops it and a token it
/// signed is `invalid_token` from then on.
async fn a_key_retired_with_the_cli_stops_verifying_at_the_apis_next_jwks_fetch(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let first = app.jwks_kids().await;
    let new_kid = json_output(&app.cli(&["keys", "rotate", "--json"]))["kid"]
        .as_str()
        .unwrap()
        .to_owned();
    // The new key signs on the server's clock; on the real clock, which the CLI reads, it is
    // still pending, and a pending key may be retired.
    let created_at = app.store.active_signing_keys().await.unwrap()[0].created_at;
    app.clock.set(created_at + jose::PUBLISH_BEFORE_SIGNING);
    let signing = vec![new_kid.clone(), first[0].clone()];
    eventually(Duration::from_secs(10), || async {
        app.jwks_kids().await == signing
    })
    .await;
    let code = code_for(&app, &app.browser(), &[("scope", Some("openid jobs"))]).await;
    let token = exchange(&app, &code).await["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(jwt_parts(&token).0["kid"], new_kid.as_str());
    // The API fetches the JWKS for this new kid, and keeps it.
    assert_eq!(api_status(&app, &token).await, (200, None));

    let retired = app.cli(&["keys", "retire", &new_kid, "--json"]);
    assert_eq!(json_output(&retired)["kid"], new_kid.as_str());
    eventually(Duration::from_secs(10), || async {
        app.jwks_kids().await == first
    })
    .await;
    // The API's copy, fetched just now, still lists the key until it expires.
    app.clock.advance(59);
    assert_eq!(api_status(&app, &token).await, (200, None));

    // Expired: the next request fetches the JWKS, which lacks the key.
    app.clock.advance(1);
    let refused = (
        401,
        Some("Bearer error=\"invalid_token\", error_description=\"the access token is invalid or expired\"".to_owned()),
    );
    assert_eq!(api_status(&app, &token).await, refused);
    assert_eq!(api_status(&app, &token).await, refused);
    app.stop().await;
}
