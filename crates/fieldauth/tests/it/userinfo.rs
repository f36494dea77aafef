//! `/oauth/userinfo` (OpenID Connect Core §5.3) behind RFC 6750 bearer checks.

use store::testing::TestDatabase;

use crate::flow::{code_for, exchange, jwt_parts, seed};
use crate::helpers::{on_both_backends, TestApp};

on_both_backends!(
    userinfo_answers_the_claims_the_scopes_allow_on_get_and_post,
    missing_forged_or_expired_tokens_get_401_invalid_token,
    a_token_without_openid_gets_403_insufficient_scope,
);

async fn access_token(app: &TestApp, scope: &str) -> String {
    let code = code_for(app, &app.browser(), &[("scope", Some(scope))]).await;
    exchange(app, &code).await["access_token"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn userinfo_with(app: &TestApp, authorization: Option<&str>) -> reqwest::Response {
    let request = app.http.get(format!("{}/oauth/userinfo", app.issuer));
    let request = match authorization {
        Some(value) => request.header("authorization", value),
        None => request,
    };
    request.send().await.unwrap()
}

fn assert_bearer_challenge(response: &reqwest::Response, status: u16, error: &str) {
    assert_eq!(response.status().as_u16(), status);
    let challenge = response.headers()["www-authenticate"].to_str().unwrap();
    assert!(
        challenge.starts_with(&format!("Bearer error=\"{error}\"")),
        "{challenge}"
    );
}

async fn userinfo_answers_the_claims_the_scopes_allow_on_get_and_post(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let token = access_token(&app, "openid profile email").await;
    let response = userinfo_with(&app, Some(&format!("Bearer {token}"))).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["cache-control"], "no-store");
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(
        body,
        serde_json::json!({
            "sub": "00000000-0000-4000-8000-000000000000",
            "name": "alice Example",
            "preferred_username": "alice",
            "email": "alice@example.com",
            "email_verified": false,
        })
    );
    let token = access_token(&app, "openid").await;
    let post = app
        .http
        .post(format!("{}/oauth/userinfo", app.issuer))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(post.status(), 200);
    let body: serde_json::Value = post.json().await.unwrap();
    assert_eq!(
        body,
        serde_json::json!({ "sub": "00000000-0000-4000-8000-000000000000" }),
        "openid alone: only sub"
    );
    app.stop().await;
}

/// RFC 6750 §3.1 and RFC 9068 §4: signature, typ, iss, aud and exp are all checked.
async fn missing_forged_or_expired_tokens_get_401_invalid_token(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let token = access_token(&app, "openid profile").await;
    let (_, claims) = jwt_parts(&token);

    assert_bearer_challenge(&userinfo_with(&app, None).await, 401, "invalid_token");
    assert_bearer_challenge(
        &userinfo_with(&app, Some("Bearer not-a-jwt")).await,
        401,
        "invalid_token",
    );
    assert_bearer_challenge(
        &userinfo_with(&app, Some(&format!("Basic {token}"))).await,
        401,
        "invalid_token",
    );

    // Signed by a key that is not ours.
    let stranger = jose::generate_signing_key().unwrap();
    let stranger = jose::SigningKey::from_pkcs8(&stranger.kid, &stranger.pkcs8_der).unwrap();
    let forged = stranger.sign_jwt("at+jwt", &claims).unwrap();
    assert_bearer_challenge(
        &userinfo_with(&app, Some(&format!("Bearer {forged}"))).await,
        401,
        "invalid_token",
    );
    // Our key, but an ID token's type, or another audience.
    let signing = app.store.active_signing_keys().await.unwrap().remove(0);
    let ours = jose::SigningKey::from_pkcs8(&signing.kid, &signing.private_key).unwrap();
    let wrong_typ = ours.sign_jwt("JWT", &claims).unwrap();
    assert_bearer_challenge(
        &userinfo_with(&app, Some(&format!("Bearer {wrong_typ}"))).await,
        401,
        "invalid_token",
    );
    let mut other_audience = claims.clone();
    other_audience["aud"] = "https://elsewhere.example.com".into();
    let wrong_aud = ours.sign_jwt("at+jwt", &other_audience).unwrap();
    assert_bearer_challenge(
        &userinfo_with(&app, Some(&format!("Bearer {wrong_aud}"))).await,
        401,
        "invalid_token",
    );
    let unsigned = format!(
        "{}.{}.",
        "eyJhbGciOiJub25lIiwidHlwIjoiYXQrand0In0",
        token.split('.').nth(1).unwrap()
    );
    assert_bearer_challenge(
        &userinfo_with(&app, Some(&format!("Bearer {unsigned}"))).await,
        401,
        "invalid_token",
    );

    // The genuine token works until it expires (3600 s).
    assert_eq!(
        userinfo_with(&app, Some(&format!("Bearer {token}")))
            .await
            .status(),
        200
    );
    app.clock.advance(3600);
    assert_bearer_challenge(
        &userinfo_with(&app, Some(&format!("Bearer {token}"))).await,
        401,
        "invalid_token",
    );
    app.stop().await;
}

async fn a_token_without_openid_gets_403_insufficient_scope(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let token = access_token(&app, "jobs").await;
    let response = userinfo_with(&app, Some(&format!("Bearer {token}"))).await;
    assert_bearer_challenge(&response, 403, "insufficient_scope");
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["error"], "insufficient_scope");
    app.stop().await;
}
