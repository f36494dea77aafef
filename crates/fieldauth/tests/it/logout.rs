//! OpenID Connect RP-Initiated Logout 1.0 at `/oauth/logout`, driven as a relying party
//! (the `openidconnect` crate's discovery and logout request) and a browser would: a hint for
//! the signed-in session signs out at once, anything else asks first, and nothing redirects
//! to a URI the client did not register.

use std::str::FromStr;

use openidconnect::core::CoreIdToken;
use openidconnect::{
    CsrfToken, IssuerUrl, LogoutRequest, PostLogoutRedirectUrl, ProviderMetadataWithLogout,
};
use serde_json::json;
use store::testing::TestDatabase;

use crate::admin_api::support::AdminClient;
use crate::flow::{self, authorize_url, hidden, CLIENT_ID, TENANT};
use crate::helpers::{assert_refused, json_output, on_both_backends, TestApp};

on_both_backends!(
    a_hint_for_the_signed_in_session_signs_out_at_once_and_redirects_with_state,
    without_a_hint_a_confirmation_page_asks_and_its_form_signs_out,
    an_unregistered_or_unverifiable_post_logout_redirect_uri_gets_the_error_page,
    an_expired_id_token_is_accepted_as_the_hint,
    a_hint_signed_by_another_key_is_refused,
    without_a_session_the_browser_is_still_sent_on_or_told_it_is_signed_out,
    discovery_advertises_the_end_session_endpoint_and_back_channel_logout,
    the_cli_registers_changes_and_removes_sign_out_uris,
);

/// Registered for `spa` by [`setup`].
pub const SIGNED_OUT_URI: &str = "http://127.0.0.1:9/signed-out";

/// Seeds the tenant, registers `SIGNED_OUT_URI` for `spa` through the admin API, and signs
/// alice in with a browser: the browser and the ID token it got.
pub async fn setup(app: &TestApp) -> (reqwest::Client, String) {
    flow::seed(app).await;
    let admin = AdminClient::new(app, "logout-tests", None).await;
    admin
        .patch(
            &format!("/tenants/{TENANT}/clients/{CLIENT_ID}"),
            json!({ "post_logout_redirect_uris": [SIGNED_OUT_URI] }),
            None,
        )
        .await
        .assert_ok();
    let browser = app.browser();
    let code = flow::code_for(app, &browser, &[]).await;
    let tokens = flow::exchange(app, &code).await;
    let id_token = tokens["id_token"].as_str().expect("an ID token").to_owned();
    (browser, id_token)
}

/// The end-session URL the `openidconnect` crate builds from our discovery document, with
/// the tenant added (an ID token names none: docs/decisions.md).
async fn logout_url(
    app: &TestApp,
    id_token: Option<&str>,
    redirect: Option<&str>,
    state: Option<&str>,
) -> String {
    let issuer = IssuerUrl::new(app.issuer.clone()).unwrap();
    let metadata = ProviderMetadataWithLogout::discover_async(issuer, &app.http)
        .await
        .expect("discovery");
    let endpoint = metadata
        .additional_metadata()
        .end_session_endpoint
        .clone()
        .expect("an end_session_endpoint");
    let mut request = LogoutRequest::from(endpoint);
    if let Some(token) = id_token {
        request = request.set_id_token_hint(&CoreIdToken::from_str(token).unwrap());
    }
    if let Some(uri) = redirect {
        request = request
            .set_post_logout_redirect_uri(PostLogoutRedirectUrl::new(uri.to_owned()).unwrap());
    }
    if let Some(state) = state {
        request = request.set_state(CsrfToken::new(state.to_owned()));
    }
    let mut url = request.http_get_url();
    url.query_pairs_mut().append_pair("tenant", TENANT);
    url.into()
}

/// Whether the browser is still signed in: an authorization request shows consent, not the
/// sign-in form.
async fn signed_in(app: &TestApp, browser: &reqwest::Client) -> bool {
    let page = browser.get(authorize_url(app, &[])).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    match (
        html.contains("name=\"decision\""),
        html.contains("name=\"password\""),
    ) {
        (true, false) => true,
        (false, true) => false,
        _ => panic!("neither consent nor sign-in: {html}"),
    }
}

#[track_caller]
fn assert_error_page(response: &reqwest::Response) {
    assert_eq!(response.status(), 400);
    assert!(response.headers().get("location").is_none(), "redirected");
    assert_eq!(
        response.headers()["content-type"],
        "text/html; charset=utf-8"
    );
    assert_eq!(response.headers()["cache-control"], "no-store");
}

#[track_caller]
fn assert_cookie_cleared(response: &reqwest::Response) {
    let cleared = response.headers().get_all("set-cookie").iter().any(|v| {
        let v = v.to_str().unwrap();
        v.starts_with(&format!("fieldauth-{TENANT}=;")) && v.contains("Max-Age=0")
    });
    assert!(cleared, "the session cookie was not cleared");
}

/// RP-Initiated Logout §2, §3: a valid hint naming the session signs out without asking,
/// then the browser goes to the registered URI with `state`; the ID token carried `sid`.
async fn a_hint_for_the_signed_in_session_signs_out_at_once_and_redirects_with_state(
    db: TestDatabase,
) {
    let app = TestApp::spawn(db).await;
    let (browser, id_token) = setup(&app).await;
    let (_, claims) = flow::jwt_parts(&id_token);
    assert!(
        claims["sid"].as_str().is_some_and(|s| s.len() == 43),
        "{claims}"
    );
    assert!(signed_in(&app, &browser).await);

    let url = logout_url(&app, Some(&id_token), Some(SIGNED_OUT_URI), Some("st-1")).await;
    let response = browser.get(&url).send().await.unwrap();
    assert_eq!(response.status(), 303);
    assert_eq!(
        response.headers()["location"],
        format!("{SIGNED_OUT_URI}?state=st-1")
    );
    assert_cookie_cleared(&response);
    assert!(!signed_in(&app, &browser).await, "still signed in");
    let audit = app
        .store
        .tenant(&store::TenantId::parse(TENANT).unwrap())
        .audit_events(50)
        .await
        .unwrap();
    let logout = audit
        .iter()
        .find(|e| e.kind == "logout.succeeded")
        .expect("the sign-out is audited");
    assert_eq!(logout.client_id.as_deref(), Some(CLIENT_ID));
    assert_eq!(logout.subject.as_deref(), claims["sub"].as_str());
    app.stop().await;
}

/// §2: without a hint the OP asks; the form carries a token only this browser's page has,
/// and submitting it signs out and redirects. A forged form is refused.
async fn without_a_hint_a_confirmation_page_asks_and_its_form_signs_out(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let (browser, _) = setup(&app).await;
    let mut url = url::Url::parse(&format!("{}/oauth/logout", app.issuer)).unwrap();
    url.query_pairs_mut()
        .append_pair("tenant", TENANT)
        .append_pair("client_id", CLIENT_ID)
        .append_pair("post_logout_redirect_uri", SIGNED_OUT_URI)
        .append_pair("state", "st-2")
        .append_pair("ui_locales", "fr-CA en");
    let page = browser.get(url.as_str()).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert!(
        csp.contains("form-action 'self' http://127.0.0.1:9"),
        "{csp}"
    );
    let html = page.text().await.unwrap();
    assert!(html.contains("action=\"/oauth/logout\""), "{html}");
    let csrf = hidden(&html, "csrf");
    assert!(signed_in(&app, &browser).await, "asking must not sign out");

    // Another browser (a third-party page's forged form) cannot submit it.
    let logout_endpoint = format!("{}/oauth/logout", app.issuer);
    let fields = [
        ("tenant", TENANT),
        ("client_id", CLIENT_ID),
        ("post_logout_redirect_uri", SIGNED_OUT_URI),
        ("state", "st-2"),
        ("csrf", csrf.as_str()),
    ];
    let forged = [
        ("tenant", TENANT),
        ("client_id", CLIENT_ID),
        ("post_logout_redirect_uri", SIGNED_OUT_URI),
        ("csrf", "forged"),
    ];
    assert_error_page(&flow::post_form(&browser, &logout_endpoint, &forged).await);
    assert!(signed_in(&app, &browser).await);

    let confirmed = flow::post_form(&browser, &logout_endpoint, &fields).await;
    assert_eq!(confirmed.status(), 303);
    assert_eq!(
        confirmed.headers()["location"],
        format!("{SIGNED_OUT_URI}?state=st-2")
    );
    assert_cookie_cleared(&confirmed);
    assert!(!signed_in(&app, &browser).await, "still signed in");
    app.stop().await;
}

/// §3: only a URI registered for the client is ever a redirect target; everything that
/// cannot be verified is our error page (400), with no `Location`.
async fn an_unregistered_or_unverifiable_post_logout_redirect_uri_gets_the_error_page(
    db: TestDatabase,
) {
    let app = TestApp::spawn(db).await;
    let (browser, id_token) = setup(&app).await;
    let endpoint = format!("{}/oauth/logout", app.issuer);
    let cases: [&[(&str, &str)]; 7] = [
        // Not registered (a redirect URI is not a post-logout redirect URI).
        &[
            ("tenant", TENANT),
            ("id_token_hint", &id_token),
            ("post_logout_redirect_uri", flow::REDIRECT_URI),
        ],
        // No client to check it against.
        &[
            ("tenant", TENANT),
            ("post_logout_redirect_uri", SIGNED_OUT_URI),
        ],
        // The client_id is not the hint's audience.
        &[
            ("tenant", TENANT),
            ("id_token_hint", &id_token),
            ("client_id", flow::WEB_CLIENT),
            ("post_logout_redirect_uri", SIGNED_OUT_URI),
        ],
        // Not a token of ours.
        &[
            ("tenant", TENANT),
            ("id_token_hint", "not.a.token"),
            ("post_logout_redirect_uri", SIGNED_OUT_URI),
        ],
        // No tenant, an unknown tenant.
        &[
            ("id_token_hint", &id_token),
            ("post_logout_redirect_uri", SIGNED_OUT_URI),
        ],
        &[
            ("tenant", "nope"),
            ("id_token_hint", &id_token),
            ("post_logout_redirect_uri", SIGNED_OUT_URI),
        ],
        // An unknown client.
        &[
            ("tenant", TENANT),
            ("client_id", "nope"),
            ("post_logout_redirect_uri", SIGNED_OUT_URI),
        ],
    ];
    for fields in cases {
        let mut url = url::Url::parse(&endpoint).unwrap();
        url.query_pairs_mut().extend_pairs(fields.iter());
        let response = browser.get(url.as_str()).send().await.unwrap();
        assert_error_page(&response);
        // The same by POST.
        assert_error_page(&flow::post_form(&browser, &endpoint, fields).await);
    }
    assert!(
        signed_in(&app, &browser).await,
        "a refused request signed out"
    );
    app.stop().await;
}

/// §2: the hint may have expired (ID tokens live ten minutes; sessions twelve hours).
async fn an_expired_id_token_is_accepted_as_the_hint(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let (browser, id_token) = setup(&app).await;
    app.clock.advance(3600);
    let url = logout_url(&app, Some(&id_token), Some(SIGNED_OUT_URI), None).await;
    let response = browser.get(&url).send().await.unwrap();
    assert_eq!(response.status(), 303);
    assert_eq!(response.headers()["location"], SIGNED_OUT_URI);
    assert!(!signed_in(&app, &browser).await);
    app.stop().await;
}

/// §2: a hint is only a hint if we signed it: the same claims under another key are refused.
async fn a_hint_signed_by_another_key_is_refused(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let (browser, id_token) = setup(&app).await;
    let (header, claims) = flow::jwt_parts(&id_token);
    let other = jose::generate_signing_key().unwrap();
    // Even under our key's kid.
    let kid = header["kid"].as_str().unwrap();
    let forged = jose::SigningKey::from_pkcs8(kid, &other.pkcs8_der)
        .unwrap()
        .sign_jwt("JWT", &claims)
        .unwrap();
    let url = logout_url(&app, Some(&forged), Some(SIGNED_OUT_URI), Some("s")).await;
    assert_error_page(&browser.get(&url).send().await.unwrap());
    assert!(signed_in(&app, &browser).await);
    app.stop().await;
}

/// §3: with no session there is nothing to end, and a verified URI still gets the browser.
async fn without_a_session_the_browser_is_still_sent_on_or_told_it_is_signed_out(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let (_, id_token) = setup(&app).await;
    let stranger = app.browser();
    let url = logout_url(&app, Some(&id_token), Some(SIGNED_OUT_URI), Some("st-3")).await;
    let response = stranger.get(&url).send().await.unwrap();
    assert_eq!(response.status(), 303);
    assert_eq!(
        response.headers()["location"],
        format!("{SIGNED_OUT_URI}?state=st-3")
    );
    let page = stranger
        .get(format!("{}/oauth/logout?tenant={TENANT}", app.issuer))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains("You are signed out"));
    app.stop().await;
}

/// RP-Initiated Logout §2.1 and Back-Channel Logout §2.1: the metadata.
async fn discovery_advertises_the_end_session_endpoint_and_back_channel_logout(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let metadata: serde_json::Value = app
        .get(&format!("{}/.well-known/openid-configuration", app.issuer))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        metadata["end_session_endpoint"],
        format!("{}/oauth/logout", app.issuer)
    );
    assert_eq!(metadata["backchannel_logout_supported"], true);
    assert_eq!(metadata["backchannel_logout_session_supported"], true);
    assert!(metadata["claims_supported"]
        .as_array()
        .unwrap()
        .contains(&"sid".into()));
    app.stop().await;
}

/// `fieldauth client create|update` take the sign-out URIs, checked like the admin API's.
async fn the_cli_registers_changes_and_removes_sign_out_uris(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    flow::seed(&app).await;
    let made = json_output(&app.cli(&[
        "client",
        "create",
        "--tenant",
        TENANT,
        "--client-id",
        "portal",
        "--redirect-uri",
        "https://portal.example.com/cb",
        "--post-logout-redirect-uri",
        "https://portal.example.com/bye",
        "--backchannel-logout-uri",
        "https://portal.example.com/bc",
        "--json",
    ]));
    assert_eq!(
        made["post_logout_redirect_uris"],
        json!(["https://portal.example.com/bye"])
    );
    assert_eq!(
        made["backchannel_logout_uri"],
        "https://portal.example.com/bc"
    );
    let changed = json_output(&app.cli(&[
        "client",
        "update",
        "--tenant",
        TENANT,
        "--client-id",
        "portal",
        "--post-logout-redirect-uri",
        "https://portal.example.com/a",
        "--post-logout-redirect-uri",
        "https://portal.example.com/b",
        "--clear-backchannel-logout-uri",
        "--json",
    ]));
    assert_eq!(
        changed["post_logout_redirect_uris"],
        json!([
            "https://portal.example.com/a",
            "https://portal.example.com/b"
        ])
    );
    assert_eq!(changed["backchannel_logout_uri"], serde_json::Value::Null);
    let cleared = json_output(&app.cli(&[
        "client",
        "update",
        "--tenant",
        TENANT,
        "--client-id",
        "portal",
        "--clear-post-logout-redirect-uris",
        "--json",
    ]));
    assert_eq!(cleared["post_logout_redirect_uris"], json!([]));
    let refused = app.cli(&[
        "client",
        "update",
        "--tenant",
        TENANT,
        "--client-id",
        "portal",
        "--backchannel-logout-uri",
        "http://portal.example.com/bc",
    ]);
    assert_refused(&refused, "backchannel_logout_uri");
    let refused = app.cli(&[
        "client",
        "update",
        "--tenant",
        TENANT,
        "--client-id",
        "portal",
        "--post-logout-redirect-uri",
        "https://portal.example.com/bye#x",
    ]);
    assert_refused(&refused, "post_logout_redirect_uris");
    app.stop().await;
}
