//! Key rotation by the CLI reaches a running server without a restart (DESIGN.md: nodes
//! cache keys and reload them).

use std::time::Duration;

use store::testing::TestDatabase;

use jose::Clock;

use crate::helpers::{eventually, json_output, on_both_backends, TestApp};

on_both_backends!(rotation_and_retirement_reach_the_running_jwks);

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
