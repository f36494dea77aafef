//! What one anonymous request may make the auth listener do before any authentication: a
//! bounded body, a bounded query, a bounded number of parameters, and a linear check of them.

use std::time::{Duration, Instant};

use store::testing::TestDatabase;

use crate::flow::{assert_oauth_error, authorize_url, seed};
use crate::helpers::TestApp;

/// `k0=&k1=&…`: distinct names, so a check that compares every name with every earlier one
/// does the most work it can.
fn distinct_names(bytes: usize) -> String {
    let mut body = String::with_capacity(bytes + 16);
    let mut i = 0;
    while body.len() < bytes {
        body.push_str(&format!("k{i}=&"));
        i += 1;
    }
    body.truncate(bytes);
    body
}

async fn post(app: &TestApp, path: &str, body: String) -> reqwest::Response {
    app.http
        .post(format!("{}{path}", app.issuer))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .unwrap()
}

/// The audit's case: many distinct parameter names on the token and revocation endpoints are
/// refused as `invalid_request` at once, and a body over the limit is not read past it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_over_the_size_or_parameter_limit_are_invalid_request() {
    let app = TestApp::spawn(TestDatabase::sqlite()).await;
    for path in ["/oauth/token", "/oauth/revoke"] {
        // Within 8 KiB, but some thousand names.
        let started = Instant::now();
        for _ in 0..20 {
            let response = post(&app, path, distinct_names(8 * 1024)).await;
            assert_oauth_error(response, 400, "invalid_request").await;
        }
        // Generous: the quadratic check took about 1 ms for each of these, and 0.9 s for
        // the 40,000 names that the old 2 MB limit let through.
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{path}: {:?}",
            started.elapsed()
        );
        let response = post(&app, path, distinct_names(16 * 1024)).await;
        assert_oauth_error(response, 400, "invalid_request").await;
        // 64 parameters are still read (and these lack a grant type or token).
        let names: Vec<String> = (0..64).map(|i| format!("k{i}=")).collect();
        let response = post(&app, path, names.join("&")).await;
        let body: serde_json::Value = response.json().await.unwrap();
        assert_ne!(body["error_description"], "too many parameters", "{body}");
        let names: Vec<String> = (0..65).map(|i| format!("k{i}=")).collect();
        let response = post(&app, path, names.join("&")).await;
        assert_oauth_error(response, 400, "invalid_request").await;
    }
    app.stop().await;
}

/// A query over 8 KiB or 64 parameters is refused before it is decoded: on the
/// authorization endpoint with the error page, never a redirect (RFC 6749 §4.1.2.1).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authorization_requests_over_the_query_limit_get_the_error_page() {
    let app = TestApp::spawn(TestDatabase::sqlite()).await;
    seed(&app).await;
    let long_state = "s".repeat(9 * 1024);
    let many: Vec<String> = (0..65).map(|i| format!("k{i}=")).collect();
    let many = many.join("&");
    for url in [
        authorize_url(&app, &[("state", Some(long_state.as_str()))]),
        format!("{}&{many}", authorize_url(&app, &[])),
    ] {
        let response = app.get(&url).await;
        assert_eq!(response.status(), 400);
        assert!(response.headers().get("location").is_none());
        assert_eq!(
            response.headers()["content-type"],
            "text/html; charset=utf-8"
        );
        let page = response.text().await.unwrap();
        assert!(
            page.contains("The query string is too long or has too many parameters."),
            "{page}"
        );
    }
    // Within the limits, the same request is shown the sign-in page.
    let response = app.get(&authorize_url(&app, &[])).await;
    assert_eq!(response.status(), 200);
    app.stop().await;
}
