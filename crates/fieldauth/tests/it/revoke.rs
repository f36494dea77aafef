//! `/oauth/revoke` (RFC 7009): the client is authenticated first, whatever the token; then a
//! client's refresh token ends its grant, unknown and other clients' tokens answer 200 and
//! change nothing, and access tokens are unsupported.

use store::testing::TestDatabase;

use crate::flow::{
    self, assert_oauth_error, code_for, exchange, seed, token_request, CLIENT_ID, REDIRECT_URI,
    VERIFIER, WEB_CLIENT, WEB_SECRET,
};
use crate::helpers::{on_both_backends, TestApp};
use crate::node_support::userinfo;

on_both_backends!(
    revoking_a_refresh_token_ends_its_grant,
    unknown_and_foreign_tokens_answer_200_and_change_nothing,
    access_tokens_are_unsupported_and_confidential_clients_must_authenticate,
    the_client_is_authenticated_before_any_token_is_judged,
);

async fn tokens(app: &TestApp) -> serde_json::Value {
    let code = code_for(
        app,
        &app.browser(),
        &[("scope", Some("openid offline_access jobs"))],
    )
    .await;
    exchange(app, &code).await
}

async fn revoke(
    app: &TestApp,
    fields: &[(&str, &str)],
    basic: Option<(&str, &str)>,
) -> reqwest::Response {
    flow::client_post(app, "/oauth/revoke", fields, basic).await
}

async fn can_refresh(app: &TestApp, token: &str) -> bool {
    let fields = [
        ("grant_type", "refresh_token"),
        ("refresh_token", token),
        ("client_id", CLIENT_ID),
    ];
    token_request(app, &fields, None).await.status() == 200
}

async fn revoking_a_refresh_token_ends_its_grant(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let issued = tokens(&app).await;
    let refresh = issued["refresh_token"].as_str().unwrap();
    let response = revoke(
        &app,
        &[
            ("token", refresh),
            ("token_type_hint", "refresh_token"),
            ("client_id", CLIENT_ID),
        ],
        None,
    )
    .await;
    assert_eq!(response.status(), 200);
    assert!(!can_refresh(&app, refresh).await);
    let userinfo = userinfo(
        &app.http,
        &app.issuer,
        issued["access_token"].as_str().unwrap(),
    )
    .await;
    assert_eq!(userinfo.status(), 401, "the grant's access token ends too");
    // Revoking again is still 200 (§2.2).
    assert_eq!(
        revoke(&app, &[("token", refresh), ("client_id", CLIENT_ID)], None)
            .await
            .status(),
        200
    );
    app.stop().await;
}

async fn unknown_and_foreign_tokens_answer_200_and_change_nothing(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    for unknown in [
        "acme.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "acme.garbage",
    ] {
        assert_eq!(
            revoke(&app, &[("token", unknown), ("client_id", CLIENT_ID)], None)
                .await
                .status(),
            200,
            "{unknown}"
        );
    }
    // The client is authenticated in the token's tenant; in another tenant it is unknown.
    let elsewhere = [
        ("token", "ghost.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
        ("client_id", CLIENT_ID),
    ];
    assert_oauth_error(revoke(&app, &elsewhere, None).await, 401, "invalid_client").await;
    // `web` cannot revoke a token of `spa`.
    let issued = tokens(&app).await;
    let refresh = issued["refresh_token"].as_str().unwrap();
    assert_eq!(
        revoke(&app, &[("token", refresh)], Some((WEB_CLIENT, WEB_SECRET)))
            .await
            .status(),
        200
    );
    assert!(
        can_refresh(&app, refresh).await,
        "another client's revocation changed nothing"
    );
    app.stop().await;
}

async fn access_tokens_are_unsupported_and_confidential_clients_must_authenticate(
    db: TestDatabase,
) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let issued = tokens(&app).await;
    let access = issued["access_token"].as_str().unwrap();
    assert_oauth_error(
        revoke(&app, &[("token", access), ("client_id", CLIENT_ID)], None).await,
        400,
        "unsupported_token_type",
    )
    .await;

    // A token of the confidential client: revoking it needs its credentials.
    let code = code_for(
        &app,
        &app.browser(),
        &[
            ("client_id", Some(WEB_CLIENT)),
            ("scope", Some("openid offline_access")),
        ],
    )
    .await;
    let fields = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT_URI),
        ("code_verifier", VERIFIER),
    ];
    let web: serde_json::Value = token_request(&app, &fields, Some((WEB_CLIENT, WEB_SECRET)))
        .await
        .json()
        .await
        .unwrap();
    let refresh = web["refresh_token"].as_str().unwrap();
    assert_oauth_error(
        revoke(&app, &[("token", refresh), ("client_id", WEB_CLIENT)], None).await,
        401,
        "invalid_client",
    )
    .await;
    assert_oauth_error(
        revoke(&app, &[("token", refresh)], Some((WEB_CLIENT, "wrong"))).await,
        401,
        "invalid_client",
    )
    .await;
    assert_oauth_error(
        revoke(&app, &[("client_id", CLIENT_ID)], None).await,
        400,
        "invalid_request",
    )
    .await;
    assert_eq!(
        revoke(&app, &[("token", refresh)], Some((WEB_CLIENT, WEB_SECRET)))
            .await
            .status(),
        200
    );
    let again = [("grant_type", "refresh_token"), ("refresh_token", refresh)];
    assert_oauth_error(
        token_request(&app, &again, Some((WEB_CLIENT, WEB_SECRET))).await,
        400,
        "invalid_grant",
    )
    .await;
    app.stop().await;
}

/// RFC 7009 §2.1: "The authorization server first validates the client credentials": a token
/// that is malformed, unknown or an access token says nothing to a caller that cannot
/// authenticate, and a token that names no tenant leaves no client to authenticate.
async fn the_client_is_authenticated_before_any_token_is_judged(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let access = tokens(&app).await["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    for token in [
        "acme.garbage",
        "acme.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        &access,
    ] {
        for basic in [None, Some((WEB_CLIENT, "wrong")), Some(("nobody", "x"))] {
            assert_oauth_error(
                revoke(&app, &[("token", token)], basic).await,
                401,
                "invalid_client",
            )
            .await;
        }
        let unknown_client = [("token", token), ("client_id", "nobody")];
        assert_oauth_error(
            revoke(&app, &unknown_client, None).await,
            401,
            "invalid_client",
        )
        .await;
    }
    // Authenticated, the same tokens get what §2.2 and §2.2.1 say.
    let with_web = Some((WEB_CLIENT, WEB_SECRET));
    assert_eq!(
        revoke(&app, &[("token", "acme.garbage")], with_web)
            .await
            .status(),
        200
    );
    assert_oauth_error(
        revoke(&app, &[("token", access.as_str())], with_web).await,
        400,
        "unsupported_token_type",
    )
    .await;
    // No tenant in the token: the client cannot be authenticated anywhere.
    for garbage in ["garbage", "Not.A.Tenant"] {
        assert_oauth_error(
            revoke(&app, &[("token", garbage), ("client_id", CLIENT_ID)], None).await,
            401,
            "invalid_client",
        )
        .await;
    }
    app.stop().await;
}
