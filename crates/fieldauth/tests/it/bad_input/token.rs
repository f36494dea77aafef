//! The token, revocation and userinfo endpoints: a body that carries what no client sends is
//! `invalid_request` (RFC 6749 §5.2, RFC 7009 §2.2.1) before anything is looked up, so the
//! code, the refresh token and the grant all still work afterwards.

use store::testing::TestDatabase;

use super::{body_defects, encode, encode_with, post_raw, Defect, LONG, OVER_LIMIT};
use crate::flow::{
    assert_oauth_error, code_for, seed, REDIRECT_URI, VERIFIER, WEB_CLIENT, WEB_SECRET,
};
use crate::helpers::{on_both_backends, TestApp};

on_both_backends!(
    every_parameter_of_the_token_and_revocation_endpoints_refuses_bad_input,
    userinfo_refuses_a_bearer_header_with_bytes_a_token_cannot_have,
);

/// Every defect that makes a body malformed, whatever the parameter.
fn malformed() -> Vec<(String, Defect)> {
    let mut defects = body_defects();
    defects.push(("over 8 KiB".into(), Defect::Long(OVER_LIMIT, 'a')));
    defects
}

/// Each parameter of `fields` with each malformed defect: 400 `invalid_request`.
async fn assert_each_refused(app: &TestApp, path: &str, fields: &[(&str, &str)]) {
    let url = format!("{}{path}", app.issuer);
    for (name, _) in fields {
        for (defect_name, defect) in malformed() {
            let response = post_raw(&app.http, &url, encode_with(fields, name, defect)).await;
            let case = format!("{path} {name} with {defect_name}");
            assert_eq!(response.status(), 400, "{case}");
            let body: serde_json::Value = response.json().await.unwrap();
            assert_eq!(body["error"], "invalid_request", "{case}: {body}");
        }
    }
}

async fn every_parameter_of_the_token_and_revocation_endpoints_refuses_bad_input(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let browser = app.browser();
    let web = [
        ("client_id", Some(WEB_CLIENT)),
        ("scope", Some("openid offline_access jobs")),
    ];
    let code = code_for(&app, &browser, &web).await;
    let exchange = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT_URI),
        ("code_verifier", VERIFIER),
        ("client_id", WEB_CLIENT),
        ("client_secret", WEB_SECRET),
    ];
    assert_each_refused(&app, "/oauth/token", &exchange).await;
    let token = format!("{}/oauth/token", app.issuer);
    let issued = post_raw(&app.http, &token, encode(&exchange)).await;
    assert_eq!(
        issued.status(),
        200,
        "the code was spent by a refused request"
    );
    let issued: serde_json::Value = issued.json().await.unwrap();
    let refresh_token = issued["refresh_token"].as_str().unwrap().to_owned();

    let refresh = [
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh_token.as_str()),
        ("scope", "jobs"),
        ("client_id", WEB_CLIENT),
        ("client_secret", WEB_SECRET),
    ];
    assert_each_refused(&app, "/oauth/token", &refresh).await;
    let rotated = post_raw(&app.http, &token, encode(&refresh)).await;
    assert_eq!(
        rotated.status(),
        200,
        "the refresh token was spent by a refused request"
    );
    let rotated: serde_json::Value = rotated.json().await.unwrap();
    let refresh_token = rotated["refresh_token"].as_str().unwrap().to_owned();

    let revoke = [
        ("token", refresh_token.as_str()),
        ("token_type_hint", "refresh_token"),
        ("client_id", WEB_CLIENT),
        ("client_secret", WEB_SECRET),
    ];
    assert_each_refused(&app, "/oauth/revoke", &revoke).await;
    let still = [
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh_token.as_str()),
        ("client_id", WEB_CLIENT),
        ("client_secret", WEB_SECRET),
    ];
    let revoke_url = format!("{}/oauth/revoke", app.issuer);
    let revoked = post_raw(&app.http, &revoke_url, encode(&revoke)).await;
    assert_eq!(revoked.status(), 200);
    let after = post_raw(&app.http, &token, encode(&still)).await;
    assert_oauth_error(after, 400, "invalid_grant").await;

    // Well-formed but longer than any value can be: each is its parameter's own error. A
    // code whose redirect URI or verifier is wrong is spent, so each case has a fresh one.
    for (name, status, error) in [
        ("grant_type", 400, "unsupported_grant_type"),
        ("code", 400, "invalid_grant"),
        ("redirect_uri", 400, "invalid_grant"),
        ("code_verifier", 400, "invalid_grant"),
        ("client_id", 401, "invalid_client"),
        ("client_secret", 401, "invalid_client"),
    ] {
        let code = code_for(&app, &browser, &web).await;
        let mut fields = exchange;
        fields[1].1 = &code;
        let body = encode_with(&fields, name, Defect::Long(LONG, 'a'));
        let response = post_raw(&app.http, &token, body).await;
        assert_oauth_error(response, status, error).await;
    }
    app.stop().await;
}

async fn userinfo_refuses_a_bearer_header_with_bytes_a_token_cannot_have(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let url = format!("{}/oauth/userinfo", app.issuer);
    for value in [
        &b"Bearer abc\xff"[..],
        b"Bearer ab\tc",
        b"Bearer \xc3\xa9",
        b"Bearer ",
    ] {
        let header = reqwest::header::HeaderValue::from_bytes(value).unwrap();
        let response = app
            .http
            .get(&url)
            .header("authorization", header)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 401, "{value:?}");
        let challenge = response.headers()["www-authenticate"].to_str().unwrap();
        assert!(challenge.starts_with("Bearer"), "{value:?}: {challenge}");
    }
    app.stop().await;
}
