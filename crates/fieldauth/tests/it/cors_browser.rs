//! CORS as headless Chromium enforces it: a single-page app served on its own loopback
//! origin runs `fetch()` against the token endpoint and the API and writes what it got into
//! its page. On a registered origin it completes the code exchange and the API call and can
//! read a bearer challenge; on an unregistered one every fetch fails with a `TypeError`. Only
//! SQLite: the HTTP tests in `cors` cover both backends.

use std::time::{Duration, Instant};

use axum::response::Html;
use axum::routing::get;
use axum::Router;
use store::{NewClient, TenantId};

use crate::browser::Browser;
use crate::cors::wait_until_allowed;
use crate::flow;
use crate::helpers::TestApp;

const CLIENT_ID: &str = "cors-spa";

/// How long the page's fetches may take before the test fails.
const PAGE_DONE: Duration = Duration::from_secs(20);

/// The app's page, as a single-page app would do it: the code from its own URL, the
/// exchange, an API call with the access token, and one with a bad token to read the
/// challenge. Each outcome, or the error's name, is written into the page; `done` last.
/// The page on an unregistered origin gets a token in its query instead of a code.
const PAGE: &str = r#"<!doctype html>
<html><head><title>SPA</title></head><body>
<p id="token">token: pending</p>
<p id="api">api: pending</p>
<p id="challenge">challenge: pending</p>
<p id="done"></p>
<script>
const config = CONFIG;
const show = (id, text) => { document.getElementById(id).textContent = text; };
async function graphql(token) {
  return fetch(config.api_url + '/api', {
    method: 'POST',
    headers: { 'Authorization': 'Bearer ' + token, 'Content-Type': 'application/json' },
    body: JSON.stringify({ query: '{ viewer { organization { name } } }' }),
  });
}
async function run() {
  const params = new URLSearchParams(location.search);
  let accessToken = params.get('access_token');
  try {
    const response = await fetch(config.issuer + '/oauth/token', {
      method: 'POST',
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: params.get('code') || 'acme.not-a-code',
        redirect_uri: location.origin + location.pathname,
        code_verifier: config.code_verifier,
        client_id: config.client_id,
      }),
    });
    const body = await response.json();
    show('token', 'token: ' + response.status + ' ' + body.token_type);
    if (body.access_token) accessToken = body.access_token;
  } catch (error) {
    show('token', 'token: ' + error.name);
  }
  try {
    const response = await graphql(accessToken);
    show('api', 'api: ' + response.status + ' ' + JSON.stringify(await response.json()));
  } catch (error) {
    show('api', 'api: ' + error.name);
  }
  try {
    const response = await graphql('not-a-token');
    show('challenge', 'challenge: ' + response.status + ' ' + response.headers.get('WWW-Authenticate'));
  } catch (error) {
    show('challenge', 'challenge: ' + error.name);
  }
  show('done', 'done');
}
run();
</script>
</body></html>"#;

/// Serves the app's page at `/callback` on a new loopback port; returns the origin.
async fn serve_app(app: &TestApp) -> String {
    let config = serde_json::json!({
        "issuer": app.issuer,
        "api_url": app.api_url,
        "client_id": CLIENT_ID,
        "code_verifier": flow::VERIFIER,
    });
    let page = PAGE.replace("CONFIG", &config.to_string());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let router = Router::new().route("/callback", get(move || async move { Html(page) }));
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    origin
}

/// The server, its seeded tenant, the browser, and the app's page on a registered origin
/// (the origin of the client's redirect URI), already on the server's allow-list.
struct Spa {
    app: TestApp,
    browser: Browser,
    registered: String,
}

impl Spa {
    async fn start() -> Option<Spa> {
        let browser = Browser::launch().await?;
        let app = TestApp::spawn(store::testing::TestDatabase::sqlite()).await;
        flow::seed(&app).await;
        let registered = serve_app(&app).await;
        let acme = TenantId::parse(flow::TENANT).unwrap();
        let scopes = ["openid", "jobs"].map(str::to_owned);
        let redirect_uris = [format!("{registered}/callback")];
        let client = NewClient {
            client_id: CLIENT_ID,
            name: "Dispatch SPA",
            secret_hash: None,
            redirect_uris: &redirect_uris,
            scopes: &scopes,
        };
        app.store
            .tenant(&acme)
            .create_client(&client, 0)
            .await
            .unwrap();
        wait_until_allowed(&app, &registered).await;
        Some(Spa {
            app,
            browser,
            registered,
        })
    }

    /// What the page reported once its script finished.
    async fn outcome(&self) -> String {
        let deadline = Instant::now() + PAGE_DONE;
        loop {
            let text = self.browser.page_text().await;
            if text.ends_with("done") {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "the page did not finish within {PAGE_DONE:?}: {text}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn finish(self) {
        self.browser.close().await;
        self.app.stop().await;
    }
}

/// A page on the origin of a registered redirect URI signs in through the pages, lands on
/// its callback with a code, exchanges it with `fetch()`, calls the API with the access
/// token, and reads the API's `WWW-Authenticate` for a bad one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_app_on_a_registered_origin_exchanges_its_code_and_calls_the_api() {
    let Some(spa) = Spa::start().await else {
        return;
    };
    let callback = format!("{}/callback", spa.registered);
    let authorize = flow::authorize_url(
        &spa.app,
        &[
            ("client_id", Some(CLIENT_ID)),
            ("redirect_uri", Some(&callback)),
            ("scope", Some("openid jobs")),
        ],
    );
    spa.browser.goto(&authorize).await;
    spa.browser.fill_by_label("Username", "alice").await;
    spa.browser.fill_by_label("Password", flow::PASSWORD).await;
    spa.browser.click_button("Sign in").await;
    spa.browser.choose_radio_by_label("Alpha").await;
    spa.browser.click_button("Allow").await;
    let landed = spa.browser.current_url().await;
    assert_eq!(
        format!("{}{}", landed.origin().ascii_serialization(), landed.path()),
        callback
    );

    assert_eq!(
        spa.outcome().await,
        "token: 200 Bearer\n\
         api: 200 {\"data\":{\"viewer\":{\"organization\":{\"name\":\"Alpha\"}}}}\n\
         challenge: 401 Bearer error=\"invalid_token\", error_description=\"the access token is invalid or expired\"\n\
         done"
    );
    spa.finish().await;
}

/// The same page on another loopback port, which no client registered, holding a genuine
/// access token: the browser refuses the page every answer (the preflight of the API call
/// gets no CORS headers, the token endpoint's answer names no origin), so each `fetch()`
/// fails with a `TypeError`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_app_on_an_unregistered_origin_cannot_read_any_answer() {
    let Some(spa) = Spa::start().await else {
        return;
    };
    let unregistered = serve_app(&spa.app).await;
    assert_ne!(unregistered, spa.registered);
    let code = flow::code_for(
        &spa.app,
        &spa.app.browser(),
        &[("scope", Some("openid jobs"))],
    )
    .await;
    let tokens = flow::exchange(&spa.app, &code).await;
    let access_token = tokens["access_token"].as_str().unwrap();
    spa.browser
        .goto(&format!(
            "{unregistered}/callback?access_token={access_token}"
        ))
        .await;

    assert_eq!(
        spa.outcome().await,
        "token: TypeError\napi: TypeError\nchallenge: TypeError\ndone"
    );
    spa.finish().await;
}
