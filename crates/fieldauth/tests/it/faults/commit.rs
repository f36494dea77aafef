//! The database lost right after it made a rotation durable.

use super::*;

/// The database goes away right after it commits a rotation, before the server has answered
/// (on PostgreSQL the rotation is one statement that commits alone).
/// A client told 503 keeps its old token (RFC 6749 §5.2: try again later), so the server may
/// only say 503 if that token still works; otherwise the retry looks like reuse and the
/// whole grant is revoked (RFC 6749 §10.4) for a fault that was the server's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_lost_right_after_a_rotation_commits_does_not_cost_the_client_its_grant() {
    let Some((app, proxy)) = app_behind_proxy().await else {
        return;
    };
    let issued = issue(&app).await;

    // The rotation's consume: the statement that spends the token, in whatever transaction.
    proxy.down_after_commit_of("UPDATE refresh_tokens SET consumed_at");
    let (response, _) = within(
        STOPPED_LIMIT,
        "refresh as the database goes",
        refresh(&app, &issued.refresh_token, &[]),
    )
    .await;
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    assert!(
        proxy.is_down(),
        "the rotation committed through the proxy ({status} {body})"
    );
    proxy.up().await;
    until_ready(&app).await;

    let newest = match status {
        // The answer was complete before the database went: the new token is the client's.
        200 => body["refresh_token"].as_str().unwrap().to_owned(),
        503 => {
            assert_eq!(body["error"], "temporarily_unavailable", "{body}");
            // The client retries with the token it holds.
            rotate(
                &app,
                &issued.refresh_token,
                "the retry of a refresh answered 503 after its rotation committed",
            )
            .await
        }
        other => panic!("refresh as the database goes: {other} {body}"),
    };
    match status {
        200 => assert_grant_intact(&app, &issued.grant_id, 1, &newest).await,
        // How many tokens the committed rotation left is the server's business; that the
        // grant stands and the retry's token is live is the client's.
        _ => assert_grant_live(&app, &issued.grant_id, &newest).await,
    }
    app.stop().await;
}
