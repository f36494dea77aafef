//! Back-Channel Logout 1.0: when a session ends, every client that got an ID token in it
//! and registered a `backchannel_logout_uri` receives a logout token, POSTed by the server
//! off the request's path. A receiver on loopback collects them and verifies each against
//! the JWKS, as a relying party must (§2.6).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::{Form, Router};
use jose::{LogoutTokenClaims, Validation, VerificationKeys};
use oauth::logout::backchannel::BackchannelSettings;
use serde_json::json;
use store::testing::TestDatabase;
use store::TenantId;

use crate::admin_api::support::AdminClient;
use crate::flow::{self, CLIENT_ID, TENANT};
use crate::helpers::{eventually, on_both_backends, TestApp};

on_both_backends!(
    rp_logout_posts_a_logout_token_naming_the_session_to_the_client,
    admin_sign_out_everywhere_posts_a_logout_token,
    a_session_replaced_by_a_new_sign_in_is_told_to_the_client,
    a_failing_receiver_is_retried_then_the_failure_is_audited_and_counted,
);

/// What the receiver got, and what it answers.
#[derive(Clone)]
struct Receiver {
    tokens: Arc<Mutex<Vec<String>>>,
    status: StatusCode,
}

#[derive(serde::Deserialize)]
struct LogoutForm {
    logout_token: String,
}

async fn receive(State(receiver): State<Receiver>, Form(form): Form<LogoutForm>) -> StatusCode {
    receiver.tokens.lock().unwrap().push(form.logout_token);
    receiver.status
}

/// A relying party's back-channel endpoint on 127.0.0.1:0: its URL and what it received.
async fn start_receiver(status: StatusCode) -> (String, Arc<Mutex<Vec<String>>>) {
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let receiver = Receiver {
        tokens: Arc::clone(&tokens),
        status,
    };
    let app = Router::new()
        .route("/backchannel", post(receive))
        .with_state(receiver);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/backchannel", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, tokens)
}

/// A server whose failed deliveries are retried at once (no test sleeps for a backoff).
async fn spawn(db: TestDatabase) -> TestApp {
    TestApp::spawn_configured(db, oauth::ThrottlePolicy::default(), |config| {
        config.backchannel = BackchannelSettings {
            poll_interval: Duration::from_millis(50),
            retry_after: 0,
            max_attempts: 3,
            timeout: Duration::from_secs(2),
        };
    })
    .await
}

/// Seeds, registers the receiver for `spa` through the admin API, and signs alice in: the
/// browser, her ID token, and the admin client.
async fn setup(app: &TestApp, receiver: &str) -> (reqwest::Client, String, AdminClient) {
    flow::seed(app).await;
    let admin = AdminClient::new(app, "backchannel-tests", None).await;
    let patched = admin
        .patch(
            &format!("/tenants/{TENANT}/clients/{CLIENT_ID}"),
            json!({ "backchannel_logout_uri": receiver }),
            None,
        )
        .await;
    assert_eq!(patched.assert_ok()["backchannel_logout_uri"], receiver);
    let browser = app.browser();
    let code = flow::code_for(app, &browser, &[]).await;
    let id_token = flow::exchange(app, &code).await["id_token"]
        .as_str()
        .unwrap()
        .to_owned();
    (browser, id_token, admin)
}

/// §2.6: what a relying party checks of a logout token, against our JWKS; returns the claims.
async fn verified(app: &TestApp, token: &str, id_token: &str) -> LogoutTokenClaims {
    let body: serde_json::Value = app
        .get(&format!("{}/oauth/jwks", app.issuer))
        .await
        .json()
        .await
        .unwrap();
    let jwks = jose::Jwks {
        keys: serde_json::from_value::<Vec<jose::Jwk>>(body["keys"].clone()).unwrap(),
    };
    let keys = VerificationKeys::from_jwks(&jwks).unwrap();
    let validation = Validation {
        typ: "logout+jwt",
        issuer: &app.issuer,
        audience: CLIENT_ID,
        now: app.clock_now(),
        leeway: 0,
    };
    let claims: LogoutTokenClaims = jose::verify_jwt(token, &keys, &validation).expect("valid");
    let (header, raw) = flow::jwt_parts(token);
    assert_eq!(header["typ"], "logout+jwt");
    assert_eq!(header["alg"], "RS256");
    assert!(
        raw.get("nonce").is_none(),
        "§2.4: a logout token has no nonce"
    );
    assert_eq!(
        raw["events"],
        json!({ "http://schemas.openid.net/event/backchannel-logout": {} })
    );
    let (_, id_claims) = flow::jwt_parts(id_token);
    assert_eq!(claims.sid, id_claims["sid"].as_str().unwrap());
    assert_eq!(claims.sub, id_claims["sub"].as_str().unwrap());
    assert_eq!(claims.aud, CLIENT_ID);
    assert!(claims.exp > claims.iat && claims.exp - claims.iat <= 120);
    assert_eq!(claims.jti.len(), 43);
    claims
}

async fn outbox(app: &TestApp) -> i64 {
    app.store
        .tenant(&TenantId::parse(TENANT).unwrap())
        .count_backchannel_logouts()
        .await
        .unwrap()
}

async fn received(tokens: &Arc<Mutex<Vec<String>>>, count: usize) {
    eventually(Duration::from_secs(10), || {
        let n = tokens.lock().unwrap().len();
        async move { n >= count }
    })
    .await;
}

/// §2.5, §2.6: RP-initiated sign-out tells the client, with the session's `sid`.
async fn rp_logout_posts_a_logout_token_naming_the_session_to_the_client(db: TestDatabase) {
    let app = spawn(db).await;
    let (url, tokens) = start_receiver(StatusCode::OK).await;
    let (browser, id_token, _) = setup(&app, &url).await;
    let mut logout = url::Url::parse(&format!("{}/oauth/logout", app.issuer)).unwrap();
    logout
        .query_pairs_mut()
        .append_pair("tenant", TENANT)
        .append_pair("id_token_hint", &id_token);
    let response = browser.get(logout.as_str()).send().await.unwrap();
    assert_eq!(response.status(), 200, "signed out, no redirect asked");
    received(&tokens, 1).await;
    let token = tokens.lock().unwrap()[0].clone();
    verified(&app, &token, &id_token).await;
    eventually(Duration::from_secs(5), || async { outbox(&app).await == 0 }).await;
    let audit = app
        .store
        .tenant(&TenantId::parse(TENANT).unwrap())
        .audit_events(50)
        .await
        .unwrap();
    assert!(audit
        .iter()
        .any(|e| e.kind == "logout.backchannel_delivered"
            && e.client_id.as_deref() == Some(CLIENT_ID)));
    // Exactly one token for one session and one client.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(tokens.lock().unwrap().len(), 1);
    app.stop().await;
}

/// Signing a user out everywhere through the admin API ends the session, so the client hears.
async fn admin_sign_out_everywhere_posts_a_logout_token(db: TestDatabase) {
    let app = spawn(db).await;
    let (url, tokens) = start_receiver(StatusCode::NO_CONTENT).await;
    let (_, id_token, admin) = setup(&app, &url).await;
    let (_, id_claims) = flow::jwt_parts(&id_token);
    let sub = id_claims["sub"].as_str().unwrap();
    admin
        .post(
            &format!("/tenants/{TENANT}/users/{sub}/sign-out"),
            json!({}),
        )
        .await
        .assert_ok();
    received(&tokens, 1).await;
    let token = tokens.lock().unwrap()[0].clone();
    verified(&app, &token, &id_token).await;
    eventually(Duration::from_secs(5), || async { outbox(&app).await == 0 }).await;
    app.stop().await;
}

/// A receiver that fails is tried `max_attempts` times, then the token is given up, the
/// failure written to the tenant's audit trail and counted.
async fn a_failing_receiver_is_retried_then_the_failure_is_audited_and_counted(db: TestDatabase) {
    let app = spawn(db).await;
    let (url, tokens) = start_receiver(StatusCode::INTERNAL_SERVER_ERROR).await;
    let (_, id_token, admin) = setup(&app, &url).await;
    let (_, id_claims) = flow::jwt_parts(&id_token);
    let sub = id_claims["sub"].as_str().unwrap();
    admin
        .post(
            &format!("/tenants/{TENANT}/users/{sub}/sign-out"),
            json!({}),
        )
        .await
        .assert_ok();
    received(&tokens, 3).await;
    eventually(Duration::from_secs(5), || async { outbox(&app).await == 0 }).await;
    assert_eq!(
        tokens.lock().unwrap().len(),
        3,
        "retried exactly up to the bound"
    );
    let audit = app
        .store
        .tenant(&TenantId::parse(TENANT).unwrap())
        .audit_events(50)
        .await
        .unwrap();
    let failed = audit
        .iter()
        .find(|e| e.kind == "logout.backchannel_failed")
        .expect("the failure is audited");
    assert_eq!(failed.client_id.as_deref(), Some(CLIENT_ID));
    assert_eq!(failed.subject.as_deref(), Some(sub));
    assert!(failed.detail.contains("HTTP 500"), "{}", failed.detail);
    let metrics = app
        .get(&format!("{}/metrics", app.metrics_url))
        .await
        .text()
        .await
        .unwrap();
    for line in [
        "fieldauth_backchannel_logouts_total{result=\"failed\"} 1",
        "fieldauth_backchannel_logouts_total{result=\"retried\"} 2",
    ] {
        assert!(metrics.contains(line), "{line} not in metrics");
    }
    app.stop().await;
}

/// `prompt=login` in a signed-in browser replaces its session: the old one has ended, and
/// the client that got an ID token in it hears of it, with the old `sid`.
async fn a_session_replaced_by_a_new_sign_in_is_told_to_the_client(db: TestDatabase) {
    let app = spawn(db).await;
    let (url, tokens) = start_receiver(StatusCode::OK).await;
    let (browser, id_token, _) = setup(&app, &url).await;
    let code = flow::code_for(&app, &browser, &[("prompt", Some("login"))]).await;
    let second = flow::exchange(&app, &code).await["id_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, old) = flow::jwt_parts(&id_token);
    let (_, new) = flow::jwt_parts(&second);
    assert_ne!(old["sid"], new["sid"], "a new sign-in is a new session");
    received(&tokens, 1).await;
    let token = tokens.lock().unwrap()[0].clone();
    verified(&app, &token, &id_token).await;
    app.stop().await;
}
