//! CORS for single-page apps (the Fetch standard's CORS protocol): the endpoints apps call
//! from the browser (discovery, JWKS, token, userinfo, revocation, `POST /api`) answer the
//! origins of registered clients by name, preflights included; other origins get no CORS
//! headers, and the pages a person uses never do. The browser's side is in `cors_browser`.

use std::time::Duration;

use reqwest::header::{HeaderMap, ORIGIN};
use reqwest::{Method, Response};
use store::testing::TestDatabase;
use store::TenantId;

use crate::flow::{self, code_for, seed, CLIENT_ID, REDIRECT_URI, VERIFIER};
use crate::helpers::{assert_refused, eventually, json_output, on_both_backends, TestApp};

on_both_backends!(
    preflights_from_a_registered_origin_are_answered_on_every_endpoint_for_apps,
    responses_to_a_registered_origin_name_it_and_expose_the_bearer_challenge,
    an_unregistered_origin_gets_no_cors_headers,
    sign_in_consent_and_other_pages_never_send_cors_headers,
    a_web_origin_added_with_the_cli_is_allowed,
);

/// The origin of the seeded client's redirect URI `http://127.0.0.1:9/callback`.
pub const APP: &str = "http://127.0.0.1:9";

/// Each endpoint for apps: its URL, the method a page uses, and the methods a preflight lists.
fn endpoints(app: &TestApp) -> Vec<(String, Method, &'static str)> {
    let auth = |path: &str| format!("{}{path}", app.issuer);
    vec![
        (
            auth("/.well-known/openid-configuration"),
            Method::GET,
            "GET",
        ),
        (
            auth("/.well-known/oauth-authorization-server"),
            Method::GET,
            "GET",
        ),
        (auth("/oauth/jwks"), Method::GET, "GET"),
        (auth("/oauth/token"), Method::POST, "POST"),
        (auth("/oauth/userinfo"), Method::GET, "GET, POST"),
        (auth("/oauth/revoke"), Method::POST, "POST"),
        (format!("{}/api", app.api_url), Method::POST, "POST"),
    ]
}

/// The preflight a browser sends before a request with a bearer token or a JSON body.
pub async fn preflight(app: &TestApp, url: &str, origin: &str, method: &Method) -> Response {
    app.http
        .request(Method::OPTIONS, url)
        .header(ORIGIN, origin)
        .header("access-control-request-method", method.as_str())
        .header(
            "access-control-request-headers",
            "authorization,content-type",
        )
        .send()
        .await
        .unwrap()
}

/// Every `Access-Control-*` header of a response, sorted.
pub fn access_control(headers: &HeaderMap) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = headers
        .iter()
        .filter(|(name, _)| name.as_str().starts_with("access-control-"))
        .map(|(name, value)| (name.to_string(), value.to_str().unwrap().to_owned()))
        .collect();
    found.sort();
    found
}

fn vary(headers: &HeaderMap) -> Vec<&str> {
    headers
        .get_all("vary")
        .iter()
        .map(|value| value.to_str().unwrap())
        .collect()
}

/// The headers an allowed origin's actual request gets.
fn readable_by(origin: &str) -> Vec<(String, String)> {
    vec![
        ("access-control-allow-origin".into(), origin.into()),
        (
            "access-control-expose-headers".into(),
            "WWW-Authenticate, Retry-After, DPoP-Nonce".into(),
        ),
    ]
}

/// Waits until the server's allow-list, re-read from the store, holds `origin` (clients are
/// registered after the server started, as by the CLI).
pub async fn wait_until_allowed(app: &TestApp, origin: &str) {
    let url = format!("{}/oauth/jwks", app.issuer);
    eventually(Duration::from_secs(10), || async {
        preflight(app, &url, origin, &Method::GET).await.status() == 204
    })
    .await;
}

/// A preflight from a registered origin: 204 with that origin, the route's methods, the
/// headers a page may send, how long to keep the answer, `Vary: Origin`, and never
/// credentials.
async fn preflights_from_a_registered_origin_are_answered_on_every_endpoint_for_apps(
    db: TestDatabase,
) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    wait_until_allowed(&app, APP).await;
    for origin in [APP, "https://app.example.com"] {
        for (url, method, methods) in endpoints(&app) {
            let response = preflight(&app, &url, origin, &method).await;
            assert_eq!(response.status(), 204, "{url}");
            assert_eq!(
                access_control(response.headers()),
                [
                    (
                        "access-control-allow-headers".to_owned(),
                        "Authorization, Content-Type, DPoP".to_owned()
                    ),
                    ("access-control-allow-methods".into(), methods.into()),
                    ("access-control-allow-origin".into(), origin.into()),
                    ("access-control-max-age".into(), "7200".into()),
                ],
                "{url}"
            );
            assert_eq!(vary(response.headers()), ["Origin"], "{url}");
            assert!(response.bytes().await.unwrap().is_empty(), "{url}");
        }
    }
    app.stop().await;
}

/// Actual requests from a registered origin, successes and bearer errors alike, name the
/// origin and let the page read `WWW-Authenticate` (RFC 6750 §3).
async fn responses_to_a_registered_origin_name_it_and_expose_the_bearer_challenge(
    db: TestDatabase,
) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    wait_until_allowed(&app, APP).await;
    let assert_readable = |response: &Response, status: u16, what: &str| {
        assert_eq!(response.status(), status, "{what}");
        assert_eq!(
            access_control(response.headers()),
            readable_by(APP),
            "{what}"
        );
        assert!(vary(response.headers()).contains(&"Origin"), "{what}");
    };
    for path in [
        "/.well-known/openid-configuration",
        "/.well-known/oauth-authorization-server",
        "/oauth/jwks",
    ] {
        let response = app
            .http
            .get(format!("{}{path}", app.issuer))
            .header(ORIGIN, APP)
            .send()
            .await
            .unwrap();
        assert_readable(&response, 200, path);
    }

    let code = code_for(
        &app,
        &app.browser(),
        &[("scope", Some("openid jobs offline_access"))],
    )
    .await;
    let fields = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT_URI),
        ("code_verifier", VERIFIER),
        ("client_id", CLIENT_ID),
    ];
    let post = |url: String| app.http.post(url).header(ORIGIN, APP);
    let response = post(format!("{}/oauth/token", app.issuer))
        .form(&fields)
        .send()
        .await
        .unwrap();
    assert_readable(&response, 200, "token");
    let tokens: serde_json::Value = response.json().await.unwrap();
    let access_token = tokens["access_token"].as_str().unwrap();

    let userinfo = format!("{}/oauth/userinfo", app.issuer);
    let response = app
        .http
        .get(&userinfo)
        .header(ORIGIN, APP)
        .bearer_auth(access_token)
        .send()
        .await
        .unwrap();
    assert_readable(&response, 200, "userinfo");
    let response = app
        .http
        .get(&userinfo)
        .header(ORIGIN, APP)
        .send()
        .await
        .unwrap();
    assert_readable(&response, 401, "userinfo without a token");
    assert_eq!(
        response.headers()["www-authenticate"],
        "Bearer error=\"invalid_token\", error_description=\"no access token\""
    );

    let query = serde_json::json!({ "query": "{ viewer { organization { name } } }" });
    let api = format!("{}/api", app.api_url);
    let response = post(api.clone())
        .bearer_auth(access_token)
        .json(&query)
        .send()
        .await
        .unwrap();
    assert_readable(&response, 200, "api");
    let response = post(api)
        .bearer_auth("not-a-token")
        .json(&query)
        .send()
        .await
        .unwrap();
    assert_readable(&response, 401, "api with a bad token");
    assert!(response.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .starts_with("Bearer error=\"invalid_token\""));

    let refresh_token = tokens["refresh_token"].as_str().unwrap();
    let response = post(format!("{}/oauth/revoke", app.issuer))
        .form(&[("token", refresh_token), ("client_id", CLIENT_ID)])
        .send()
        .await
        .unwrap();
    assert_readable(&response, 200, "revoke");
    app.stop().await;
}

/// Origins no client registered, near misses included, get no CORS headers: the preflight
/// is answered as if there were no CORS (405 on these routes) and the browser keeps every
/// response from the page.
async fn an_unregistered_origin_gets_no_cors_headers(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    wait_until_allowed(&app, APP).await;
    for origin in [
        "http://127.0.0.1:10",
        "http://127.0.0.1:90",
        "http://localhost:9",
        "https://app.example.com.evil.example",
        "http://app.example.com",
        "https://app.example.com:8443",
        "null",
    ] {
        for (url, method, _) in endpoints(&app) {
            let response = preflight(&app, &url, origin, &method).await;
            assert_eq!(response.status(), 405, "{origin} {url}");
            assert_eq!(access_control(response.headers()), [], "{origin} {url}");
            assert_eq!(vary(response.headers()), ["Origin"], "{origin} {url}");
        }
        let response = app
            .http
            .get(format!("{}/oauth/jwks", app.issuer))
            .header(ORIGIN, origin)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(access_control(response.headers()), [], "{origin}");
        let response = app
            .http
            .post(format!("{}/oauth/token", app.issuer))
            .header(ORIGIN, origin)
            .form(&[("grant_type", "refresh_token"), ("client_id", CLIENT_ID)])
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400);
        assert_eq!(access_control(response.headers()), [], "{origin}");
        assert_eq!(vary(response.headers()), ["Origin"], "{origin}");
    }
    app.stop().await;
}

/// The authorization endpoint, the sign-in and consent forms, the stylesheet and GraphiQL
/// are pages: no CORS headers even for a registered origin, on GET, POST or a preflight.
async fn sign_in_consent_and_other_pages_never_send_cors_headers(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let seeded = seed(&app).await;
    wait_until_allowed(&app, APP).await;
    let mut from_app = HeaderMap::new();
    from_app.insert(ORIGIN, APP.parse().unwrap());
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .cookie_store(true)
        .default_headers(from_app)
        .build()
        .unwrap();
    let assert_no_cors = |response: &Response, status: u16, what: &str| {
        assert_eq!(response.status(), status, "{what}");
        assert_eq!(access_control(response.headers()), [], "{what}");
        assert!(!vary(response.headers()).contains(&"Origin"), "{what}");
    };

    let sign_in_page = browser
        .get(flow::authorize_url(&app, &[]))
        .send()
        .await
        .unwrap();
    assert_no_cors(&sign_in_page, 200, "sign-in page");
    let sign_in_page = sign_in_page.text().await.unwrap();
    let consent_page = flow::sign_in(&app, &browser, &sign_in_page, "alice", flow::PASSWORD).await;
    assert_no_cors(&consent_page, 200, "sign-in form");
    let consent_page = consent_page.text().await.unwrap();
    assert!(consent_page.contains("name=\"decision\""), "{consent_page}");
    let consent = flow::consent(
        &app,
        &browser,
        &consent_page,
        "allow",
        Some(&seeded.alpha),
        &["openid", "profile", "jobs"],
    )
    .await;
    assert_no_cors(&consent, 302, "consent form");

    for (url, method, status) in [
        (format!("{}/oauth/authorize", app.issuer), Method::GET, 405),
        (format!("{}/oauth/authorize", app.issuer), Method::POST, 405),
        (format!("{}/oauth/signin", app.issuer), Method::POST, 405),
        (format!("{}/api", app.api_url), Method::GET, 405),
    ] {
        let response = preflight(&app, &url, APP, &method).await;
        assert_no_cors(&response, status, &format!("preflight {method} {url}"));
    }
    for url in [
        format!("{}/oauth/assets/fieldauth.css", app.issuer),
        format!("{}/api", app.api_url),
        format!("{}/api/graphiql.js", app.api_url),
    ] {
        let response = browser.get(&url).send().await.unwrap();
        assert_no_cors(&response, 200, &url);
    }
    app.stop().await;
}

/// `client create --web-origin` stores the origin as browsers send it, shows it in the JSON
/// output, and the running server allows it once it re-reads its list; a malformed origin
/// is refused and writes nothing.
async fn a_web_origin_added_with_the_cli_is_allowed(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    wait_until_allowed(&app, APP).await;
    const DISPATCH: &str = "https://dispatch.example.com";
    let api = format!("{}/api", app.api_url);
    let before = preflight(&app, &api, DISPATCH, &Method::POST).await;
    assert_eq!(before.status(), 405);
    assert_eq!(access_control(before.headers()), []);

    let create = |client_id: &'static str, origins: &[&'static str]| {
        let mut args = vec![
            "client",
            "create",
            "--tenant",
            "acme",
            "--client-id",
            client_id,
            "--redirect-uri",
            "com.example.dispatch:/cb",
            "--json",
        ];
        for origin in origins {
            args.extend(["--web-origin", origin]);
        }
        app.cli(&args)
    };
    let created = json_output(&create(
        "dispatch",
        &[
            "https://Dispatch.example.com",
            "https://dispatch.example.com:443",
        ],
    ));
    assert_eq!(created["client_id"], "dispatch");
    assert_eq!(created["web_origins"], serde_json::json!([DISPATCH]));
    let acme = TenantId::parse(flow::TENANT).unwrap();
    assert_eq!(
        app.store
            .tenant(&acme)
            .find_client_web_origins("dispatch")
            .await
            .unwrap(),
        Some(vec![DISPATCH.to_owned()])
    );

    wait_until_allowed(&app, DISPATCH).await;
    let response = preflight(&app, &api, DISPATCH, &Method::POST).await;
    assert_eq!(response.status(), 204);
    assert_eq!(response.headers()["access-control-allow-origin"], DISPATCH);

    assert_refused(
        &create("plain", &["http://dispatch.example.com"]),
        "web_origins: \"http://dispatch.example.com\": invalid web origin: plain http is allowed only to a loopback host",
    );
    assert_refused(
        &create("pathed", &["https://dispatch.example.com/app"]),
        "nothing after it",
    );
    for refused in ["plain", "pathed"] {
        assert_eq!(
            app.store.tenant(&acme).find_client(refused).await.unwrap(),
            None
        );
    }
    app.stop().await;
}

/// `fieldauth demo` registers `demo-spa` with its demo app's callback (by default
/// `http://127.0.0.1:8400/callback`), so a page served there may call the endpoints.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_spa_origin_is_allowed() {
    let app = TestApp::spawn(TestDatabase::sqlite()).await;
    let demo_spa = "http://127.0.0.1:8400";
    let token = format!("{}/oauth/token", app.issuer);
    let before = preflight(&app, &token, demo_spa, &Method::POST).await;
    assert_eq!(before.status(), 405);
    let callback = format!("{demo_spa}/callback");
    fieldauth::demo::seed(
        &app.store,
        &oauth::OsRandom::new(),
        app.clock_now(),
        &callback,
    )
    .await
    .unwrap();
    wait_until_allowed(&app, demo_spa).await;
    let response = preflight(&app, &token, demo_spa, &Method::POST).await;
    assert_eq!(response.status(), 204);
    assert_eq!(response.headers()["access-control-allow-origin"], demo_spa);
    app.stop().await;
}
