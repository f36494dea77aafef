//! `GET /oauth/authorize` (RFC 6749 §4.1.1–4.1.2.1, RFC 7636 §4.3, RFC 9207, OpenID Connect
//! Core §3.1.2): what is refused with a page, what is refused with a redirect, and sessions.

use store::testing::TestDatabase;

use crate::flow::{self, authorize_url, location_params, param, seed, REDIRECT_URI};
use crate::helpers::{on_both_backends, TestApp};

/// Parameters to replace, add or (with `None`) remove in a valid authorization request.
type Overrides<'a> = Vec<(&'a str, Option<&'a str>)>;

on_both_backends!(
    prompt_none_is_login_required_without_a_session_and_consent_required_with_one,
    a_signed_in_browser_skips_sign_in_unless_prompt_login_or_max_age_says_otherwise,
    sign_in_page_prefills_login_hint_and_sends_security_headers_and_cookie,
    anonymous_requests_past_the_address_quota_are_temporarily_unavailable_and_not_stored,
);

/// Declares, in its own module, one test per row, each on both backends:
/// `name: url-builder => expectation;`.
macro_rules! rows {
    ($module:ident, $check:path, { $($name:ident: $url:expr => $expect:expr;)* }) => {
        mod $module {
            use super::*;
            $(async fn $name(db: TestDatabase) {
                let app = TestApp::spawn(db).await;
                seed(&app).await;
                let url: String = ($url)(&app);
                $check(&app, &url, $expect).await;
                app.stop().await;
            })*
            on_both_backends!($($name),*);
        }
    };
}

fn with(overrides: Overrides<'static>) -> impl Fn(&TestApp) -> String {
    move |app| authorize_url(app, &overrides)
}

fn repeating(name: &'static str) -> impl Fn(&TestApp) -> String {
    move |app| format!("{}&{name}=x", authorize_url(app, &[]))
}

// RFC 6749 §4.1.2.1: never redirect to an unverified redirect URI. Each is a 400 page that
// says what is wrong.
rows!(untrusted, assert_untrusted, {
    missing_tenant: with(vec![("tenant", None)]) => "does not name a tenant";
    unknown_tenant: with(vec![("tenant", Some("ghost"))]) => "tenant in the request does not exist";
    malformed_tenant: with(vec![("tenant", Some("Not.Valid"))]) => "not a valid tenant id";
    missing_client_id: with(vec![("client_id", None)]) => "client_id is missing";
    unknown_client_id: with(vec![("client_id", Some("nope"))]) => "is not registered with this tenant";
    client_id_with_a_nul: with(vec![("client_id", Some("sp\u{0}a"))]) => "is not registered with this tenant";
    missing_redirect_uri: with(vec![("redirect_uri", None)]) => "has no redirect_uri";
    redirect_uri_with_an_extra_slash: with(vec![("redirect_uri", Some("http://127.0.0.1:9/callback/"))]) => "redirect_uri is not registered";
    foreign_redirect_uri: with(vec![("redirect_uri", Some("https://evil.example.com/cb"))]) => "redirect_uri is not registered";
    redirect_uri_without_its_registered_query: with(vec![("redirect_uri", Some("https://app.example.com/cb"))]) => "redirect_uri is not registered";
    repeated_tenant: repeating("tenant") => "The tenant parameter is repeated";
    repeated_client_id: repeating("client_id") => "The client_id parameter is repeated";
    repeated_redirect_uri: repeating("redirect_uri") => "The redirect_uri parameter is repeated";
});

// RFC 6749 §4.1.2.1 with RFC 9207 `iss`; `state` is echoed whenever it was sent once.
rows!(redirected, assert_redirect_error, {
    response_type_token: with(vec![("response_type", Some("token"))]) => ("unsupported_response_type", Some("state-123"));
    response_type_code_id_token: with(vec![("response_type", Some("code id_token"))]) => ("unsupported_response_type", Some("state-123"));
    missing_response_type: with(vec![("response_type", None)]) => ("invalid_request", Some("state-123"));
    missing_code_challenge: with(vec![("code_challenge", None)]) => ("invalid_request", Some("state-123"));
    plain_code_challenge_method: with(vec![("code_challenge_method", Some("plain"))]) => ("invalid_request", Some("state-123"));
    missing_code_challenge_method: with(vec![("code_challenge_method", None)]) => ("invalid_request", Some("state-123"));
    short_code_challenge: with(vec![("code_challenge", Some("too-short"))]) => ("invalid_request", Some("state-123"));
    code_challenge_not_base64url: with(vec![("code_challenge", Some("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-c="))]) => ("invalid_request", Some("state-123"));
    missing_state: with(vec![("state", None)]) => ("invalid_request", None);
    repeated_state: repeating("state") => ("invalid_request", None);
    repeated_scope: repeating("scope") => ("invalid_request", Some("state-123"));
    unknown_scope: with(vec![("scope", Some("openid admin"))]) => ("invalid_scope", Some("state-123"));
    scope_not_allowed_for_the_client: with(vec![("scope", Some("openid invoices"))]) => ("invalid_scope", Some("state-123"));
    missing_scope: with(vec![("scope", None)]) => ("invalid_request", Some("state-123"));
    prompt_none_with_login: with(vec![("prompt", Some("none login"))]) => ("invalid_request", Some("state-123"));
    max_age_not_a_number: with(vec![("max_age", Some("soon"))]) => ("invalid_request", Some("state-123"));
    request_object: with(vec![("request", Some("eyJhbGciOiJub25lIn0.e30."))]) => ("request_not_supported", Some("state-123"));
    // Issue 26: every request is stored, so what one may carry is bounded (docs/tokens.md).
    state_over_512_bytes: |app: &TestApp| authorize_url(app, &[("state", Some(LONG_STATE.as_str()))]) => ("invalid_request", Some(LONG_STATE.as_str()));
    nonce_over_512_bytes: |app: &TestApp| authorize_url(app, &[("nonce", Some(&"n".repeat(513)))]) => ("invalid_request", Some("state-123"));
    login_hint_over_256_bytes: |app: &TestApp| authorize_url(app, &[("login_hint", Some(&"h".repeat(257)))]) => ("invalid_request", Some("state-123"));
    state_with_a_nul: with(vec![("state", Some("a\u{0}b"))]) => ("invalid_request", Some("a\u{0}b"));
    nonce_with_a_nul: with(vec![("nonce", Some("n\u{0}"))]) => ("invalid_request", Some("state-123"));
    login_hint_with_a_control_character: with(vec![("login_hint", Some("bob\u{7}"))]) => ("invalid_request", Some("state-123"));
});

/// A `state` one byte over its limit: echoed unchanged in the error (RFC 6749 §4.1.2.1).
static LONG_STATE: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| "s".repeat(513));

async fn assert_untrusted(app: &TestApp, url: &str, message: &str) {
    let response = app.get(url).await;
    assert_eq!(response.status(), 400, "{url}");
    assert!(
        response.headers().get("location").is_none(),
        "{url} redirected"
    );
    assert_eq!(
        response.headers()["content-type"],
        "text/html; charset=utf-8"
    );
    let body = response.text().await.unwrap();
    assert!(
        body.contains(message),
        "{url}: page does not say {message:?}: {body}"
    );
}

async fn assert_redirect_error(app: &TestApp, url: &str, (error, state): (&str, Option<&str>)) {
    let response = app.get(url).await;
    assert_eq!(response.status(), 302, "{url}");
    assert_eq!(response.headers()["cache-control"], "no-store");
    let (base, pairs) = location_params(&response);
    assert_eq!(base, REDIRECT_URI, "{url}");
    assert_eq!(param(&pairs, "error"), Some(error), "{url}");
    assert!(
        param(&pairs, "error_description").is_some_and(|d| !d.is_empty()),
        "{url}"
    );
    assert_eq!(param(&pairs, "state"), state, "{url}");
    assert_eq!(param(&pairs, "iss"), Some(app.issuer.as_str()), "{url}");
    assert_eq!(param(&pairs, "code"), None, "{url}");
}

/// OpenID Connect Core §3.1.2.6: prompt=none never shows a page.
async fn prompt_none_is_login_required_without_a_session_and_consent_required_with_one(
    db: TestDatabase,
) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let url = authorize_url(&app, &[("prompt", Some("none"))]);
    let browser = app.browser();
    let response = browser.get(&url).send().await.unwrap();
    assert_eq!(response.status(), 302);
    let (_, pairs) = location_params(&response);
    assert_eq!(
        (param(&pairs, "error"), param(&pairs, "state")),
        (Some("login_required"), Some("state-123"))
    );

    flow::signed_in_consent_page(&app, &browser, &authorize_url(&app, &[]), "alice").await;
    let response = browser.get(&url).send().await.unwrap();
    assert_eq!(response.status(), 302);
    let (_, pairs) = location_params(&response);
    assert_eq!(param(&pairs, "error"), Some("consent_required"));
    assert_eq!(param(&pairs, "iss"), Some(app.issuer.as_str()));
    app.stop().await;
}

/// A session is reused within the tenant; prompt=login and an exceeded max_age force a
/// fresh sign-in (OpenID Connect Core §3.1.2.1).
async fn a_signed_in_browser_skips_sign_in_unless_prompt_login_or_max_age_says_otherwise(
    db: TestDatabase,
) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let browser = app.browser();
    flow::signed_in_consent_page(&app, &browser, &authorize_url(&app, &[]), "alice").await;
    let page = |url: String| {
        let browser = browser.clone();
        async move {
            browser
                .get(&url)
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap()
        }
    };
    let again = page(authorize_url(&app, &[])).await;
    assert!(
        again.contains("name=\"decision\"") && again.contains("alice Example"),
        "consent expected: {again}"
    );
    assert!(page(authorize_url(&app, &[("prompt", Some("login"))]))
        .await
        .contains(">Sign in</button>"));
    app.clock.advance(61);
    assert!(page(authorize_url(&app, &[("max_age", Some("60"))]))
        .await
        .contains(">Sign in</button>"));
    assert!(page(authorize_url(&app, &[("max_age", Some("3600"))]))
        .await
        .contains("name=\"decision\""));
    // Another browser has no session.
    let stranger = app
        .browser()
        .get(authorize_url(&app, &[]))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(stranger.contains(">Sign in</button>"));
    app.stop().await;
}

/// The pages: labelled fields, login_hint pre-filled, strict headers, a tenant cookie.
async fn sign_in_page_prefills_login_hint_and_sends_security_headers_and_cookie(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let response = app
        .browser()
        .get(authorize_url(&app, &[("login_hint", Some("alice"))]))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let headers = response.headers().clone();
    let csp = headers["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("frame-ancestors 'none'") && csp.contains("default-src 'none'"),
        "{csp}"
    );
    // Only our own script file (the passkey buttons): no inline or evaluated code.
    assert!(csp.contains("script-src 'self';"), "{csp}");
    assert!(
        !csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"),
        "{csp}"
    );
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(headers["referrer-policy"], "no-referrer");
    assert_eq!(headers["cache-control"], "no-store");
    let cookie = headers["set-cookie"].to_str().unwrap();
    assert!(cookie.starts_with("fieldauth-acme="), "{cookie}");
    assert!(
        cookie.contains("HttpOnly")
            && cookie.contains("SameSite=Lax")
            && !cookie.contains("Secure"),
        "{cookie}"
    );
    let html = response.text().await.unwrap();
    assert!(html.contains("<label for=\"username\">Username</label>"));
    assert!(html.contains("<label for=\"password\">Password</label>"));
    assert!(
        html.contains("value=\"alice\""),
        "login_hint pre-fills the username"
    );
    assert!(html.contains("Dispatch Board"));
    // One external first-party script, for the passkey button; never inline code.
    let scripts: Vec<&str> = html
        .match_indices("<script")
        .map(|(i, _)| &html[i..])
        .collect();
    assert_eq!(scripts.len(), 1, "{html}");
    assert!(
        scripts[0].starts_with("<script src=\"/oauth/assets/passkey.js\" defer></script>"),
        "{html}"
    );
    let css = app
        .get(&format!("{}/oauth/assets/fieldauth.css", app.issuer))
        .await;
    assert_eq!(css.status(), 200);
    assert_eq!(css.headers()["content-type"], "text/css; charset=utf-8");
    app.stop().await;
}

/// Issue 26: anyone may start an authorization request, and each is stored until it expires.
/// Without a session, one address may start only the quota's worth in ten minutes (per tenant,
/// counted in the database); past it the request is answered `temporarily_unavailable` and
/// nothing is stored. Another address, a signed-in browser and the next window are not held.
async fn anonymous_requests_past_the_address_quota_are_temporarily_unavailable_and_not_stored(
    db: TestDatabase,
) {
    let policy = oauth::ThrottlePolicy {
        max_authorize_requests_per_address: 3,
        ..oauth::ThrottlePolicy::default()
    };
    let app = TestApp::spawn_with_throttle(db, policy).await;
    seed(&app).await;
    let signed_in = app.browser();
    // Values at their limits are accepted (and take one request of the quota).
    let at_limits = authorize_url(
        &app,
        &[
            ("state", Some(&"s".repeat(512))),
            ("nonce", Some(&"n".repeat(512))),
            ("login_hint", Some(&"h".repeat(256))),
        ],
    );
    assert_eq!(
        app.browser().get(&at_limits).send().await.unwrap().status(),
        200
    );
    flow::signed_in_consent_page(&app, &signed_in, &authorize_url(&app, &[]), "alice").await;
    let url = authorize_url(&app, &[]);
    assert_eq!(app.browser().get(&url).send().await.unwrap().status(), 200);
    let requests_before = app.rows("authorization_requests").await;

    let refused = app.browser().get(&url).send().await.unwrap();
    assert_eq!(refused.status(), 302);
    assert_eq!(refused.headers()["cache-control"], "no-store");
    let (base, pairs) = location_params(&refused);
    assert_eq!(base, REDIRECT_URI);
    assert_eq!(param(&pairs, "error"), Some("temporarily_unavailable"));
    assert_eq!(param(&pairs, "state"), Some("state-123"));
    assert_eq!(param(&pairs, "iss"), Some(app.issuer.as_str()));
    assert!(
        refused.headers().get("set-cookie").is_none(),
        "nothing started"
    );
    assert_eq!(
        app.rows("authorization_requests").await,
        requests_before,
        "nothing stored"
    );

    // Another address has its own quota.
    let elsewhere = app.browser_from("127.0.0.2".parse().unwrap());
    assert_eq!(elsewhere.get(&url).send().await.unwrap().status(), 200);
    // A browser with a session is not anonymous: it goes on to consent.
    let again = signed_in.get(&url).send().await.unwrap();
    assert_eq!(again.status(), 200);
    assert!(again.text().await.unwrap().contains("name=\"decision\""));
    // Ten minutes later the address starts a new window.
    app.clock.advance(600);
    assert_eq!(app.browser().get(&url).send().await.unwrap().status(), 200);
    app.stop().await;
}
