//! The app against an issuer that does not answer: the sign-in starts, and the callback that
//! cannot exchange its code shows a page that says so, not a panic or a 500.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use jose::ManualClock;
use oauth::{Issuer, OsRandom};
use tower::ServiceExt;

use super::*;

/// Port 1 on loopback: nothing listens there, so a connection is refused at once.
const DEAD: &str = "http://127.0.0.1:1";

fn app() -> Router {
    let config = DemoAppConfig {
        issuer: Issuer::parse(DEAD).unwrap(),
        api_url: "http://127.0.0.1:1".into(),
        tenant: "demo".into(),
        client_id: "demo-spa".into(),
        redirect_uri: "http://127.0.0.1:8400/callback".into(),
        scope: "openid".into(),
    };
    let state = DemoAppState::new(
        config,
        Arc::new(ManualClock::new(1_800_000_000)),
        Arc::new(OsRandom::new()),
    )
    .unwrap();
    router(state)
}

async fn body(response: axum::response::Response) -> String {
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    String::from_utf8(bytes.to_vec()).unwrap()
}

#[tokio::test]
async fn an_unreachable_server_shows_a_page_that_says_so() {
    let app = app();
    let started = app
        .clone()
        .oneshot(Request::get("/signin").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(started.status(), StatusCode::SEE_OTHER);
    let cookie = started.headers()[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let location = url::Url::parse(started.headers()[header::LOCATION].to_str().unwrap()).unwrap();
    let state = location
        .query_pairs()
        .find(|(k, _)| k == "state")
        .unwrap()
        .1
        .into_owned();

    let callback = format!("/callback?code=demo.x&state={state}&iss={DEAD}");
    let response = app
        .oneshot(
            Request::get(callback)
                .header(header::COOKIE, cookie)
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_GATEWAY);
    assert_eq!(
        response.headers()[header::CONTENT_SECURITY_POLICY],
        "default-src 'self'; frame-ancestors 'none'"
    );
    let page = body(response).await;
    assert!(page.contains("<h1>Server unreachable</h1>"), "{page}");
    assert!(
        page.contains("The authorization server did not answer. Is fieldauth demo still running?"),
        "{page}"
    );
}
