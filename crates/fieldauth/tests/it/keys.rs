//! Key rotation by the CLI reaches a running server without a restart (DESIGN.md: nodes
//! cache keys and reload them).

use std::time::Duration;

use store::testing::TestDatabase;

use crate::helpers::{eventually, json_output, on_both_backends, TestApp};

on_both_backends!(rotation_and_retirement_reach_the_running_jwks);

async fn rotation_and_retirement_reach_the_running_jwks(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let first = app.jwks_kids().await;
    assert_eq!(first.len(), 1, "the first start generates one key");
    let new_kid = json_output(&app.cli(&["keys", "rotate", "--json"]))["kid"]
        .as_str()
        .unwrap()
        .to_owned();

    // The new key signs, so it is listed first; the old one stays published.
    let expected = vec![new_kid.clone(), first[0].clone()];
    eventually(Duration::from_secs(10), || async {
        app.jwks_kids().await == expected
    })
    .await;

    json_output(&app.cli(&["keys", "retire", &first[0], "--json"]));
    eventually(Duration::from_secs(10), || async {
        app.jwks_kids().await == [new_kid.clone()]
    })
    .await;
    app.stop().await;
}
