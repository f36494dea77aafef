//! The database lost in the middle of a code exchange.

use super::*;
use crate::flow::{token_request, CLIENT_ID, REDIRECT_URI, VERIFIER};

/// A partition that begins as the grant is about to be written. The code is marked redeemed
/// only by the statement that writes its grant, so the 503 leaves the code unspent: the
/// client, told to try again (RFC 6749 §5.2), redeems the same code once the database is
/// back and gets its tokens. Were the redemption committed on its own, the retry would find
/// the code used and be refused with `invalid_grant`, and the user would have to sign in
/// again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_lost_in_the_middle_of_a_code_exchange_leaves_the_code_usable() {
    let Some((app, proxy)) = app_behind_proxy().await else {
        return;
    };
    let code = code_for(
        &app,
        &app.browser(),
        &[("scope", Some("openid offline_access jobs"))],
    )
    .await;
    let fields = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT_URI),
        ("code_verifier", VERIFIER),
        ("client_id", CLIENT_ID),
    ];

    // The statement that writes the grant, which is also the one that redeems the code.
    proxy.blackhole_at_statement("INSERT INTO grants");
    let (response, took) = within(
        PARTITION_LIMIT,
        "code exchange partitioned at the statement that redeems and issues",
        token_request(&app, &fields, None),
    )
    .await;
    assert!(proxy.is_blackholed(), "the exchange reached the grant");
    eprintln!("the partitioned exchange answered in {took:?}");
    assert_temporarily_unavailable(response, "code exchange partitioned mid-way").await;

    proxy.up().await;
    until_ready(&app).await;
    let response = token_request(&app, &fields, None).await;
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    assert_eq!(status, 200, "the retry of the same code: {body}");
    let (_, claims) = jwt_parts(body["access_token"].as_str().unwrap());
    let grant_id = claims["grant_id"].as_str().unwrap();
    let newest = body["refresh_token"].as_str().unwrap();
    assert_grant_intact(&app, grant_id, 0, newest).await;

    // Exactly one grant came of the code, and the code is now spent.
    let mut conn = sqlx::PgConnection::connect(&app.db.url).await.unwrap();
    let (grants,): (i64,) = sqlx::query_as("SELECT count(*) FROM grants WHERE tenant_id = $1")
        .bind(TENANT)
        .fetch_one(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    assert_eq!(grants, 1);
    let replay = token_request(&app, &fields, None).await;
    assert_eq!(replay.status(), 400, "a third use of the code");
    app.stop().await;
}
