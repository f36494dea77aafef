//! `POST {api_url}/api` behind RFC 6750 / RFC 9068 bearer validation, with tokens from the
//! real flow: the keys come from the issuer's JWKS over HTTP, as for any resource server.

use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use store::testing::TestDatabase;

use crate::flow::{code_for, exchange, jwt_parts, seed, CLIENT_ID};
use crate::helpers::{on_both_backends, TestApp};

on_both_backends!(
    viewer_answers_the_tokens_subject_organization_and_scopes,
    missing_or_forged_tokens_are_401_with_no_data,
    a_revoked_grant_ends_its_access_tokens_on_the_api,
    a_token_the_api_has_accepted_is_refused_once_it_expires,
);

const VIEWER: &str = "{ viewer { subject organization { guid name } scopes } }";

async fn token(app: &TestApp, scope: &str) -> String {
    let code = code_for(app, &app.browser(), &[("scope", Some(scope))]).await;
    exchange(app, &code).await["access_token"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn graphql(app: &TestApp, authorization: Option<&str>, query: &str) -> reqwest::Response {
    let request = app
        .http
        .post(format!("{}/api", app.api_url))
        .json(&serde_json::json!({ "query": query }));
    let request = match authorization {
        Some(value) => request.header("authorization", value),
        None => request,
    };
    request.send().await.unwrap()
}

async fn viewer_answers_the_tokens_subject_organization_and_scopes(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let token = token(&app, "openid jobs").await;
    let response = graphql(&app, Some(&format!("Bearer {token}")), VIEWER).await;
    assert_eq!(response.status(), 200);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(
        body,
        serde_json::json!({ "data": { "viewer": {
            "subject": "00000000-0000-4000-8000-000000000000",
            "organization": { "guid": "10000000-0000-4000-8000-000000000000", "name": "Alpha" },
            "scopes": ["openid", "jobs"],
        }}})
    );
    app.stop().await;
}

fn assert_unauthorized(response: &reqwest::Response) {
    assert_eq!(response.status(), 401);
    let challenge = response.headers()["www-authenticate"].to_str().unwrap();
    assert!(
        challenge.starts_with("Bearer error=\"invalid_token\""),
        "{challenge}"
    );
}

/// RFC 9068 §4: each of these is refused before the schema runs, and says nothing else.
async fn missing_or_forged_tokens_are_401_with_no_data(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let genuine = token(&app, "openid jobs").await;
    let (header, claims) = jwt_parts(&genuine);
    let signing = app.store.active_signing_keys().await.unwrap().remove(0);
    let ours = jose::SigningKey::from_pkcs8(&signing.kid, &signing.private_key).unwrap();
    let stranger = jose::generate_signing_key().unwrap();
    let stranger = jose::SigningKey::from_pkcs8(&stranger.kid, &stranger.pkcs8_der).unwrap();
    let with = |change: &dyn Fn(&mut serde_json::Value)| {
        let mut claims = claims.clone();
        change(&mut claims);
        ours.sign_jwt("at+jwt", &claims).unwrap()
    };
    let now = app.clock_now();
    let encode = |value: &serde_json::Value| URL_SAFE_NO_PAD.encode(value.to_string());
    // HS256 keyed with the public key the JWKS publishes: the classic confusion attack.
    let hs256 = {
        let header = serde_json::json!({ "alg": "HS256", "typ": "at+jwt", "kid": header["kid"] });
        let input = format!("{}.{}", encode(&header), encode(&claims));
        let jwks: serde_json::Value = app
            .get(&format!("{}/oauth/jwks", app.issuer))
            .await
            .json()
            .await
            .unwrap();
        let key = aws_lc_rs::hmac::Key::new(
            aws_lc_rs::hmac::HMAC_SHA256,
            jwks["keys"][0]["n"].as_str().unwrap().as_bytes(),
        );
        let tag = aws_lc_rs::hmac::sign(&key, input.as_bytes());
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(tag.as_ref()))
    };
    let none = {
        let header = serde_json::json!({ "alg": "none", "typ": "at+jwt", "kid": header["kid"] });
        format!("{}.{}.", encode(&header), encode(&claims))
    };
    let forged: Vec<(&str, String)> = vec![
        ("another key", stranger.sign_jwt("at+jwt", &claims).unwrap()),
        ("alg none", none),
        ("HS256 with the public key", hs256),
        (
            "expired",
            with(&|c| {
                c["iat"] = (now - 7200).into();
                c["exp"] = (now - 61).into();
            }),
        ),
        (
            "wrong aud",
            with(&|c| c["aud"] = "https://elsewhere.example.com".into()),
        ),
        (
            "wrong iss",
            with(&|c| c["iss"] = "https://evil.example.com".into()),
        ),
        ("wrong typ", ours.sign_jwt("JWT", &claims).unwrap()),
        (
            "missing organization",
            with(&|c| {
                c.as_object_mut().unwrap().remove("organization_guid");
            }),
        ),
        (
            "missing tenant",
            with(&|c| {
                c.as_object_mut().unwrap().remove("tenant");
            }),
        ),
        ("not yet valid", with(&|c| c["nbf"] = (now + 3600).into())),
    ];
    for (why, token) in &forged {
        let response = graphql(&app, Some(&format!("Bearer {token}")), VIEWER).await;
        assert_unauthorized(&response);
        let body: serde_json::Value = response.json().await.unwrap();
        assert!(body.get("data").is_none(), "{why}: {body}");
        assert_eq!(
            body["errors"][0]["extensions"]["code"], "UNAUTHENTICATED",
            "{why}"
        );
    }
    assert_unauthorized(&graphql(&app, None, VIEWER).await);
    assert_unauthorized(&graphql(&app, Some(&format!("Basic {genuine}")), VIEWER).await);
    // Within the 60 s leeway an expired token still passes; the genuine one works.
    let lenient = with(&|c| c["exp"] = (now - 30).into());
    assert_eq!(
        graphql(&app, Some(&format!("Bearer {lenient}")), VIEWER)
            .await
            .status(),
        200
    );
    assert_eq!(
        graphql(&app, Some(&format!("Bearer {genuine}")), VIEWER)
            .await
            .status(),
        200
    );
    app.stop().await;
}

async fn a_revoked_grant_ends_its_access_tokens_on_the_api(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let code = code_for(
        &app,
        &app.browser(),
        &[("scope", Some("openid offline_access jobs"))],
    )
    .await;
    let issued = exchange(&app, &code).await;
    let bearer = format!("Bearer {}", issued["access_token"].as_str().unwrap());
    assert_eq!(graphql(&app, Some(&bearer), VIEWER).await.status(), 200);
    let revoke = [
        ("token", issued["refresh_token"].as_str().unwrap()),
        ("client_id", CLIENT_ID),
    ];
    assert_eq!(
        crate::flow::client_post(&app, "/oauth/revoke", &revoke, None)
            .await
            .status(),
        200
    );
    assert_unauthorized(&graphql(&app, Some(&bearer), VIEWER).await);
    app.stop().await;
}

/// RFC 7519 §4.1.4 with the API's 60 s leeway: a token the API accepted, and so verified
/// once and kept as verified, is refused from `exp` + 60 on, while the key set that verified
/// it is still the API's (fetched at the first request below, fresh for 60 s).
async fn a_token_the_api_has_accepted_is_refused_once_it_expires(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let token = token(&app, "openid jobs").await;
    let exp = jwt_parts(&token).1["exp"].as_i64().unwrap();
    let bearer = format!("Bearer {token}");
    app.clock.set(exp + 30);
    assert_eq!(graphql(&app, Some(&bearer), VIEWER).await.status(), 200);
    app.clock.set(exp + 59);
    assert_eq!(graphql(&app, Some(&bearer), VIEWER).await.status(), 200);
    app.clock.set(exp + 60);
    assert_unauthorized(&graphql(&app, Some(&bearer), VIEWER).await);
    app.stop().await;
}

/// The API starts without the issuer's keys, answers 503 while they cannot be fetched, and
/// recovers by itself once the issuer answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_issuers_jwks_the_api_answers_503_then_recovers() {
    let app = TestApp::spawn(TestDatabase::sqlite()).await;
    seed(&app).await;
    let genuine = token(&app, "openid jobs").await;
    // A second API listener whose issuer URL points at a port where nothing answers yet.
    let issuer_port = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let issuer_addr = issuer_port.local_addr().unwrap();
    drop(issuer_port);
    let config = api::ApiConfig {
        issuer: app.issuer.clone(),
        audience: app.api_url.clone(),
        response_cache_bytes: 1 << 20,
    };
    let mut state =
        api::ApiState::new(config, app.store.clone(), Arc::new(jose::SystemClock)).unwrap();
    state.keys = api::RemoteKeys::new(format!("http://{issuer_addr}/oauth/jwks")).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let api_addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, api::router(state)).await });
    let call = || {
        let http = app.http.clone();
        let bearer = format!("Bearer {genuine}");
        async move {
            http.post(format!("http://{api_addr}/api"))
                .header("authorization", bearer)
                .json(&serde_json::json!({ "query": VIEWER }))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    assert_eq!(call().await, 503);
    // The issuer comes up on that address: a relay to the real JWKS.
    let jwks = app
        .get(&format!("{}/oauth/jwks", app.issuer))
        .await
        .text()
        .await
        .unwrap();
    let relay = tokio::net::TcpListener::bind(issuer_addr).await.unwrap();
    let jwks_router = axum::Router::new().route(
        "/oauth/jwks",
        axum::routing::get(move || {
            let jwks = jwks.clone();
            async move { ([("content-type", "application/json")], jwks) }
        }),
    );
    tokio::spawn(async move { axum::serve(relay, jwks_router).await });
    crate::helpers::eventually(std::time::Duration::from_secs(10), || async {
        call().await == 200
    })
    .await;
    app.stop().await;
}
