//! `/metrics` on the metrics listener alone: the OpenMetrics text Prometheus scrapes, whose
//! counters move with what the server did on both public listeners and whose labels name no
//! tenant, client, user or path sent.

use std::collections::BTreeMap;

use serde_json::json;
use store::testing::TestDatabase;

use crate::flow::{authorize_url, code_for, exchange, seed, sign_in, CLIENT_ID, PASSWORD, TENANT};
use crate::helpers::{on_both_backends, TestApp};
use crate::refresh::refresh;

on_both_backends!(counters_follow_the_flow_on_both_listeners_and_name_nobody);

/// One scrape: `name{labels}` → value, with the labels as sent (sorted by the encoder's
/// order, which is the label struct's field order).
struct Scrape {
    text: String,
    samples: BTreeMap<String, f64>,
}

impl Scrape {
    fn value(&self, sample: &str) -> f64 {
        *self
            .samples
            .get(sample)
            .unwrap_or_else(|| panic!("no sample {sample} in:\n{}", self.text))
    }

    fn absent(&self, sample: &str) -> bool {
        !self.samples.contains_key(sample)
    }
}

async fn scrape(app: &TestApp, base: &str) -> Scrape {
    let response = app.get(&format!("{base}/metrics")).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    let text = response.text().await.unwrap();
    assert!(text.ends_with("# EOF\n"), "OpenMetrics ends with # EOF");
    let samples = text
        .lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| {
            let (sample, value) = line.rsplit_once(' ').unwrap();
            (sample.to_owned(), value.parse::<f64>().unwrap())
        })
        .collect();
    Scrape { text, samples }
}

async fn counters_follow_the_flow_on_both_listeners_and_name_nobody(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let seeded = seed(&app).await;

    // A failed sign-in, then a code flow, one API call, one refresh and a reuse of the first
    // refresh token (which revokes the grant).
    let browser = app.browser();
    let page = browser
        .get(authorize_url(&app, &[]))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let wrong = "wrong-password-do-not-log";
    assert_eq!(
        sign_in(&app, &browser, &page, "bob", wrong).await.status(),
        200
    );
    // Past the throttle's wait after a failure.
    app.clock.advance(2);
    let code = code_for(
        &app,
        &app.browser(),
        &[("scope", Some("openid offline_access jobs"))],
    )
    .await;
    let tokens = exchange(&app, &code).await;
    let first = tokens["refresh_token"].as_str().unwrap();
    let api = app
        .http
        .post(format!("{}/api", app.api_url))
        .bearer_auth(tokens["access_token"].as_str().unwrap())
        .json(&json!({ "query": "{ viewer { subject } }" }))
        .send()
        .await
        .unwrap();
    assert_eq!(api.status(), 200);
    assert_eq!(refresh(&app, first, &[]).await.status(), 200);
    assert_eq!(refresh(&app, first, &[]).await.status(), 400, "reuse");
    let secret_path = "/no-such-page/secret-value-in-path?code=secret-value-in-query";
    assert_eq!(
        app.get(&format!("{}{secret_path}", app.issuer))
            .await
            .status(),
        404
    );

    let auth = scrape(&app, &app.metrics_url).await;
    let grants = |labels: &str| auth.value(&format!("fieldauth_token_grants_total{{{labels}}}"));
    assert_eq!(
        grants(r#"grant_type="authorization_code",result="issued",error="""#),
        1.0
    );
    assert_eq!(
        grants(r#"grant_type="refresh_token",result="issued",error="""#),
        1.0
    );
    assert_eq!(
        grants(r#"grant_type="refresh_token",result="refused",error="invalid_grant""#),
        1.0
    );
    assert_eq!(
        auth.value(r#"fieldauth_grants_revoked_total{reason="refresh_reuse"}"#),
        1.0
    );
    assert!(auth.absent(r#"fieldauth_grants_revoked_total{reason="code_replay"}"#));
    assert_eq!(
        auth.value(r#"fieldauth_signins_total{result="failed"}"#),
        1.0
    );
    assert_eq!(
        auth.value(r#"fieldauth_signins_total{result="succeeded"}"#),
        1.0
    );
    assert_eq!(auth.value("fieldauth_signin_locks_total"), 0.0);
    assert_eq!(
        auth.value(r#"fieldauth_consents_total{decision="given"}"#),
        1.0
    );

    // HTTP: by listener, method, route pattern and status; the latency histogram counts the
    // same requests.
    let http = |labels: &str| auth.value(&format!("fieldauth_http_requests_total{{{labels}}}"));
    assert_eq!(
        http(r#"listener="auth",method="POST",route="/oauth/token",status="200""#),
        2.0
    );
    assert_eq!(
        http(r#"listener="auth",method="POST",route="/oauth/token",status="400""#),
        1.0
    );
    assert_eq!(
        http(r#"listener="api",method="POST",route="/api",status="200""#),
        1.0
    );
    assert_eq!(
        http(r#"listener="auth",method="GET",route="unmatched",status="404""#),
        1.0
    );
    assert_eq!(
        auth.value(
            r#"fieldauth_http_request_duration_seconds_count{listener="auth",route="/oauth/token"}"#
        ),
        3.0
    );
    assert_eq!(
        auth.value(
            r#"fieldauth_http_request_duration_seconds_bucket{le="+Inf",listener="auth",route="/oauth/token"}"#
        ),
        3.0
    );

    // The pools, read at scrape time.
    assert!(auth.value(r#"fieldauth_db_connections_max{database="default"}"#) >= 1.0);
    let open = auth.value(r#"fieldauth_db_connections{database="default",state="idle"}"#)
        + auth.value(r#"fieldauth_db_connections{database="default",state="in_use"}"#);
    assert!(open >= 1.0, "a connection is open after the flow");
    assert!(auth.value("fieldauth_db_statements_total") >= 10.0);

    // Nobody is named: no tenant, client, user, organization, token or path that was sent.
    let code_secret = code.split_once('.').unwrap().1;
    let refresh_secret = first.split_once('.').unwrap().1;
    for private in [
        TENANT,
        CLIENT_ID,
        "alice",
        "bob",
        &seeded.alice_sub,
        &seeded.alpha,
        PASSWORD,
        wrong,
        code_secret,
        refresh_secret,
        "secret-value-in",
        "no-such-page",
    ] {
        assert!(!auth.text.contains(private), "the scrape shows {private:?}");
    }

    // A second scrape counts the first, under the metrics listener.
    let again = scrape(&app, &app.metrics_url).await;
    assert_eq!(
        again.value(r#"fieldauth_grants_revoked_total{reason="refresh_reuse"}"#),
        1.0
    );
    assert_eq!(
        again.value(r#"fieldauth_http_requests_total{listener="metrics",method="GET",route="/metrics",status="200"}"#),
        1.0
    );
    app.stop().await;
}

/// Issue 26: the public listeners answer `/metrics` with 404; the metrics listener serves it
/// and the probes, and nothing of the public listeners' routes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_served_on_their_own_listener_only() {
    let app = TestApp::spawn(TestDatabase::sqlite()).await;
    for public in [&app.issuer, &app.api_url] {
        let response = app.get(&format!("{public}/metrics")).await;
        assert_eq!(response.status(), 404, "{public}/metrics");
        assert_eq!(response.text().await.unwrap(), "not found\n");
    }
    for (path, body) in [("/healthz", "ok\n"), ("/readyz", "ready\n")] {
        let response = app.get(&format!("{}{path}", app.metrics_url)).await;
        assert_eq!(response.status(), 200, "{path}");
        assert_eq!(response.text().await.unwrap(), body);
    }
    let jwks = app.get(&format!("{}/oauth/jwks", app.metrics_url)).await;
    assert_eq!(jwks.status(), 404);

    let scraped = scrape(&app, &app.metrics_url).await;
    let http = |labels: &str| scraped.value(&format!("fieldauth_http_requests_total{{{labels}}}"));
    for listener in ["auth", "api"] {
        assert_eq!(
            http(&format!(
                r#"listener="{listener}",method="GET",route="unmatched",status="404""#
            )),
            1.0
        );
    }
    assert_eq!(
        http(r#"listener="metrics",method="GET",route="/healthz",status="200""#),
        1.0
    );
    assert_eq!(
        http(r#"listener="metrics",method="GET",route="unmatched",status="404""#),
        1.0
    );
    app.stop().await;
}
