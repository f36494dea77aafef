//! Passkeys (issue 24). Over HTTP with a software authenticator, on both backends: a passkey
//! registered on the account page signs in without a password once per ceremony, and forged
//! or replayed assertions (a used ceremony, another origin, another challenge, a signature
//! counter that goes back, a removed passkey) sign nobody in. In headless Chromium with a
//! virtual authenticator: register, sign in passwordless through an `openidconnect` relying
//! party's authorization request whose ID token verifies, remove, and be refused.

use axum::response::Html;
use axum::routing::get;
use axum::Router;
use openidconnect::core::{CoreClient, CoreProviderMetadata, CoreResponseType};
use openidconnect::{
    AuthenticationFlow, AuthorizationCode, ClientId, CsrfToken, EndpointMaybeSet, EndpointNotSet,
    EndpointSet, IssuerUrl, Nonce, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl,
};
use serde_json::Value;
use store::testing::TestDatabase;
use store::{NewClient, TenantId};

use crate::account::account_page;
use crate::browser::Browser;
use crate::flow::{self, hidden, PASSWORD, TENANT};
use crate::helpers::{on_both_backends, TestApp};
use crate::passkey_support::{b64, origin_of, spawn_on_localhost, Forgery, SoftPasskey};

on_both_backends!(
    a_passkey_signs_in_without_a_password_and_a_used_ceremony_is_refused,
    assertions_from_another_origin_or_for_another_challenge_are_refused,
    a_signature_counter_that_goes_back_is_refused,
    a_removed_passkey_no_longer_signs_in,
    a_disabled_users_passkey_signs_nobody_in,
    the_second_factor_ceremony_is_for_the_session_user_and_needs_the_token,
);

/// What the sign-in page says when a passkey signed nobody in.
const REFUSED: &str = "The passkey could not sign you in.";

/// Alice's passkey, registered from her account page in `http`: 303 back to the page.
pub(crate) async fn register(app: &TestApp, http: &reqwest::Client, passkey: &mut SoftPasskey) {
    let page = account_page(app, http, "alice").await;
    let csrf = hidden(&page, "csrf");
    let fields = [("tenant", TENANT), ("csrf", &csrf)];
    let start = flow::post_form(
        http,
        &format!("{}/account/passkeys/start", app.issuer),
        &fields,
    )
    .await;
    assert_eq!(start.status(), 200);
    let options: Value = start.json().await.unwrap();
    let credential = passkey.register(&options);
    let ceremony = options["ceremony"].as_str().unwrap();
    let fields = [
        ("tenant", TENANT),
        ("csrf", &csrf),
        ("name", "Laptop"),
        ("ceremony", ceremony),
        ("credential", &credential),
    ];
    let added = flow::post_form(
        http,
        &format!("{}/account/passkeys/add", app.issuer),
        &fields,
    )
    .await;
    assert_eq!(added.status(), 303, "{}", added.text().await.unwrap());
    assert_eq!(
        added.headers()["location"],
        "/account?tenant=acme&done=passkey-added"
    );
}

/// A fresh authorization request's sign-in page in `http`, and a discoverable ceremony
/// started from it.
async fn passwordless_start(app: &TestApp, http: &reqwest::Client) -> (String, Value) {
    let page = http
        .get(flow::authorize_url(app, &[]))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let page = page.text().await.unwrap();
    let (tenant, request, csrf) = flow::form_handles(&page);
    let fields = [
        ("tenant", tenant.as_str()),
        ("request", &request),
        ("csrf", &csrf),
    ];
    let url = format!("{}/oauth/signin/passkey/start", app.issuer);
    let start = flow::post_form(http, &url, &fields).await;
    assert_eq!(start.status(), 200);
    assert_eq!(start.headers()["cache-control"], "no-store");
    (page, start.json().await.unwrap())
}

/// Posts the sign-in page's passkey form with `ceremony` and `credential`.
async fn passwordless_finish(
    app: &TestApp,
    http: &reqwest::Client,
    page: &str,
    ceremony: &str,
    credential: &str,
) -> reqwest::Response {
    let (tenant, request, csrf) = flow::form_handles(page);
    let fields = [
        ("tenant", tenant.as_str()),
        ("request", &request),
        ("csrf", &csrf),
        ("ceremony", ceremony),
        ("credential", credential),
    ];
    flow::post_form(
        http,
        &format!("{}/oauth/signin/passkey", app.issuer),
        &fields,
    )
    .await
}

/// The response is the consent page: the passkey signed alice in.
async fn assert_signed_in(response: reqwest::Response) {
    assert_eq!(response.status(), 200);
    let html = response.text().await.unwrap();
    assert!(
        html.contains("name=\"decision\""),
        "not the consent page: {html}"
    );
    assert!(
        html.contains("Signed in as <strong>alice Example</strong>"),
        "{html}"
    );
}

/// The response is the sign-in page again, with the one message for every refusal.
async fn assert_refused(response: reqwest::Response) {
    assert_eq!(response.status(), 200);
    let html = response.text().await.unwrap();
    assert!(html.contains("<h1>Sign in</h1>"), "{html}");
    assert!(html.contains(REFUSED), "{html}");
}

/// The newest `mfa.passkey.*` audit event: its kind and detail.
async fn last_passkey_event(app: &TestApp) -> (String, String) {
    let tenant = TenantId::parse(TENANT).unwrap();
    let events = app.store.tenant(&tenant).audit_events(50).await.unwrap();
    let event = events
        .into_iter()
        .rev()
        .find(|e| e.kind.starts_with("mfa.passkey."))
        .expect("a passkey event");
    (event.kind, event.detail)
}

/// A new passkey of alice and the origin it belongs to.
async fn alice_with_passkey(app: &TestApp) -> SoftPasskey {
    flow::seed(app).await;
    let mut passkey = SoftPasskey::new(&origin_of(app));
    register(app, &app.browser(), &mut passkey).await;
    passkey
}

/// WebAuthn §7.2: an assertion of a registered, discoverable passkey signs its user in
/// without a password; its ceremony is then spent, so the same answer sent again (to
/// another authorization request) signs nobody in.
async fn a_passkey_signs_in_without_a_password_and_a_used_ceremony_is_refused(db: TestDatabase) {
    let app = spawn_on_localhost(db).await;
    let mut passkey = alice_with_passkey(&app).await;
    let (kind, detail) = last_passkey_event(&app).await;
    assert_eq!(
        (kind.as_str(), detail.as_str()),
        ("mfa.passkey.registered", "passkey \"Laptop\"")
    );

    let http = app.browser();
    let (page, options) = passwordless_start(&app, &http).await;
    let ceremony = options["ceremony"].as_str().unwrap();
    assert!(options["publicKey"]["allowCredentials"]
        .as_array()
        .is_none_or(|a| a.is_empty()));
    assert_eq!(options["publicKey"]["userVerification"], "required");
    let credential = passkey.assert(&options, Forgery::default());
    assert_signed_in(passwordless_finish(&app, &http, &page, ceremony, &credential).await).await;
    assert_eq!(
        last_passkey_event(&app).await,
        (
            "mfa.passkey.used".to_owned(),
            "passkey \"Laptop\"; passwordless sign-in".to_owned()
        )
    );

    let replay = app.browser();
    let (page, _) = passwordless_start(&app, &replay).await;
    assert_refused(passwordless_finish(&app, &replay, &page, ceremony, &credential).await).await;
    let (kind, detail) = last_passkey_event(&app).await;
    assert_eq!(kind, "mfa.passkey.failed");
    assert_eq!(detail, "ceremony unknown, already used or expired");
    app.stop().await;
}

/// WebAuthn §7.2 steps 12 and 13: the client data's challenge must be the ceremony's, and
/// its origin the relying party's. Neither signs anybody in, and neither spends a session.
async fn assertions_from_another_origin_or_for_another_challenge_are_refused(db: TestDatabase) {
    let app = spawn_on_localhost(db).await;
    let mut passkey = alice_with_passkey(&app).await;
    let sessions = app.rows("browser_sessions").await;
    let other_challenge = b64(b"a challenge of another ceremony!!");
    let forgeries = [
        (
            Forgery {
                origin: Some("http://localhost.evil.example:8080"),
                ..Forgery::default()
            },
            "wrong origin",
        ),
        (
            Forgery {
                challenge: Some(&other_challenge),
                ..Forgery::default()
            },
            "wrong challenge",
        ),
    ];
    for (forgery, why) in forgeries {
        let http = app.browser();
        let (page, options) = passwordless_start(&app, &http).await;
        let credential = passkey.assert(&options, forgery);
        let ceremony = options["ceremony"].as_str().unwrap();
        assert_refused(passwordless_finish(&app, &http, &page, ceremony, &credential).await).await;
        let (kind, detail) = last_passkey_event(&app).await;
        assert_eq!(
            (kind.as_str(), detail.as_str()),
            ("mfa.passkey.failed", why)
        );
    }
    assert_eq!(app.rows("browser_sessions").await, sessions);
    app.stop().await;
}

/// WebAuthn §7.2 step 21: a signature counter not above the stored one may be a cloned
/// authenticator; the sign-in is refused and audited.
async fn a_signature_counter_that_goes_back_is_refused(db: TestDatabase) {
    let app = spawn_on_localhost(db).await;
    let mut passkey = alice_with_passkey(&app).await;
    for _ in 0..2 {
        let http = app.browser();
        let (page, options) = passwordless_start(&app, &http).await;
        let credential = passkey.assert(&options, Forgery::default());
        let ceremony = options["ceremony"].as_str().unwrap();
        assert_signed_in(passwordless_finish(&app, &http, &page, ceremony, &credential).await)
            .await;
    }
    let http = app.browser();
    let (page, options) = passwordless_start(&app, &http).await;
    let cloned = Forgery {
        counter: Some(1),
        ..Forgery::default()
    };
    let credential = passkey.assert(&options, cloned);
    let ceremony = options["ceremony"].as_str().unwrap();
    assert_refused(passwordless_finish(&app, &http, &page, ceremony, &credential).await).await;
    let (kind, detail) = last_passkey_event(&app).await;
    assert_eq!(kind, "mfa.passkey.failed");
    assert_eq!(
        detail,
        "signature counter went back: a cloned authenticator?"
    );
    app.stop().await;
}

/// A passkey removed on the account page is unknown from then on.
async fn a_removed_passkey_no_longer_signs_in(db: TestDatabase) {
    let app = spawn_on_localhost(db).await;
    flow::seed(&app).await;
    let mut passkey = SoftPasskey::new(&origin_of(&app));
    let http = app.browser();
    register(&app, &http, &mut passkey).await;
    let page = account_page(&app, &http, "alice").await;
    assert!(page.contains("<h3>Laptop</h3>"), "{page}");
    let csrf = hidden(&page, "csrf");
    let id = b64(&passkey.credential_id);
    let fields = [
        ("tenant", TENANT),
        ("csrf", csrf.as_str()),
        ("passkey", &id),
    ];
    let url = format!("{}/account/passkeys/remove", app.issuer);
    let removed = flow::post_form(&http, &url, &fields).await;
    assert_eq!(removed.status(), 303);
    assert_eq!(
        removed.headers()["location"],
        "/account?tenant=acme&done=passkey-removed"
    );
    let again = flow::post_form(&http, &url, &fields).await;
    assert_eq!(again.status(), 400, "a passkey is removed once");

    let browser = app.browser();
    let (page, options) = passwordless_start(&app, &browser).await;
    let credential = passkey.assert(&options, Forgery::default());
    let ceremony = options["ceremony"].as_str().unwrap();
    assert_refused(passwordless_finish(&app, &browser, &page, ceremony, &credential).await).await;
    let (kind, detail) = last_passkey_event(&app).await;
    assert_eq!(
        (kind.as_str(), detail.as_str()),
        ("mfa.passkey.failed", "unknown credential")
    );
    app.stop().await;
}

/// A disabled account is refused like any failed sign-in, however good its passkey.
async fn a_disabled_users_passkey_signs_nobody_in(db: TestDatabase) {
    let app = spawn_on_localhost(db).await;
    let mut passkey = alice_with_passkey(&app).await;
    let tenant = TenantId::parse(TENANT).unwrap();
    let seeded_alice = "00000000-0000-4000-8000-000000000000";
    app.store
        .tenant(&tenant)
        .disable_user(seeded_alice, app.clock_now())
        .await
        .unwrap();
    let http = app.browser();
    let (page, options) = passwordless_start(&app, &http).await;
    let credential = passkey.assert(&options, Forgery::default());
    let ceremony = options["ceremony"].as_str().unwrap();
    assert_refused(passwordless_finish(&app, &http, &page, ceremony, &credential).await).await;
    assert_eq!(
        last_passkey_event(&app).await,
        (
            "mfa.passkey.failed".to_owned(),
            "account disabled".to_owned()
        )
    );
    assert_eq!(app.rows("browser_sessions").await, 0);
    app.stop().await;
}

/// The second factor's ceremony lists the session user's passkeys, and needs the token
/// derived from the session cookie (a JSON 400 without it).
async fn the_second_factor_ceremony_is_for_the_session_user_and_needs_the_token(db: TestDatabase) {
    let app = spawn_on_localhost(db).await;
    flow::seed(&app).await;
    let mut passkey = SoftPasskey::new(&origin_of(&app));
    let http = app.browser();
    register(&app, &http, &mut passkey).await;
    let csrf = hidden(&account_page(&app, &http, "alice").await, "csrf");
    let url = format!("{}/oauth/second-factor/passkey/start", app.issuer);
    let fields = [
        ("tenant", TENANT),
        ("request", "account"),
        ("csrf", csrf.as_str()),
    ];
    let start = flow::post_form(&http, &url, &fields).await;
    assert_eq!(start.status(), 200);
    let options: Value = start.json().await.unwrap();
    let allowed = options["publicKey"]["allowCredentials"].as_array().unwrap();
    assert_eq!(allowed.len(), 1);
    assert_eq!(allowed[0]["id"], b64(&passkey.credential_id));
    assert!(options["ceremony"].as_str().unwrap().len() >= 43);

    let forged = [
        ("tenant", TENANT),
        ("request", "account"),
        ("csrf", "forged"),
    ];
    flow::assert_oauth_error(
        flow::post_form(&http, &url, &forged).await,
        400,
        "invalid_request",
    )
    .await;
    // Bob has a session but no passkey.
    let bob = app.browser();
    let bob_csrf = hidden(&account_page(&app, &bob, "bob").await, "csrf");
    let fields = [
        ("tenant", TENANT),
        ("request", "account"),
        ("csrf", bob_csrf.as_str()),
    ];
    flow::assert_oauth_error(
        flow::post_form(&bob, &url, &fields).await,
        400,
        "invalid_request",
    )
    .await;
    app.stop().await;
}

/// The relying party as discovery makes it: an authorization endpoint, and the token and
/// userinfo endpoints the metadata may name.
type PasskeyRp = CoreClient<
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

/// An authorization request of the relying party: where to send the browser, and what
/// the code exchange and the ID token's check need.
struct Authorization {
    url: url::Url,
    verifier: PkceCodeVerifier,
    nonce: Nonce,
}

fn authorization(rp: &PasskeyRp) -> Authorization {
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let (url, _state, nonce) = rp
        .authorize_url(
            AuthenticationFlow::<CoreResponseType>::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        )
        .add_extra_param("tenant", TENANT)
        .set_pkce_challenge(challenge)
        .url();
    Authorization {
        url,
        verifier,
        nonce,
    }
}

/// Allows the consent page the browser shows for Alpha, exchanges the code as the relying
/// party and verifies the ID token: its `sub`, `amr` and `acr`.
async fn allow_and_verify(
    browser: &Browser,
    rp: &PasskeyRp,
    app: &TestApp,
    authorization: Authorization,
) -> (String, Vec<String>, Option<String>) {
    browser.choose_radio_by_label("Alpha").await;
    browser.click_button("Allow").await;
    let landed = browser.current_url().await;
    let code = landed
        .query_pairs()
        .find(|(name, _)| name == "code")
        .map(|(_, code)| code.into_owned())
        .unwrap_or_else(|| panic!("no code in {landed}"));
    let tokens = rp
        .exchange_code(AuthorizationCode::new(code))
        .unwrap()
        .set_pkce_verifier(authorization.verifier)
        .request_async(&app.http)
        .await
        .expect("code exchange");
    let id_token = openidconnect::TokenResponse::id_token(&tokens).expect("an ID token");
    let claims = id_token
        .claims(&rp.id_token_verifier(), &authorization.nonce)
        .expect("an ID token that verifies");
    let amr = claims
        .auth_method_refs()
        .expect("amr")
        .iter()
        .map(|method| method.as_str().to_owned())
        .collect();
    let acr = claims.auth_context_ref().map(|acr| acr.as_str().to_owned());
    (claims.subject().as_str().to_owned(), amr, acr)
}

/// A callback page a browser can land on; its URL.
async fn serve_callback() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let app = Router::new().route(
        "/callback",
        get(|| async { Html("<h1>Back at the app</h1>") }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://127.0.0.1:{}/callback", address.port())
}

/// Issue 24 in a browser: register a passkey on the account page (Chromium's virtual
/// authenticator: CTAP2, internal, resident keys, user verification), sign out, sign in with
/// it alone through an `openidconnect` relying party's authorization request (the ID token
/// verifies and says `amr` hwk mfa), then as the second factor after the password (`amr` pwd
/// hwk mfa), remove it, and see the same passkey refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_registers_a_passkey_signs_in_with_it_alone_and_removes_it() {
    let Some(browser) = Browser::launch().await else {
        return;
    };
    browser.add_virtual_authenticator().await;
    let app = spawn_on_localhost(TestDatabase::sqlite()).await;
    let seeded = flow::seed(&app).await;
    let origin = origin_of(&app);
    let callback = serve_callback().await;
    let scopes = ["openid", "profile"].map(str::to_owned);
    let client = NewClient {
        client_id: "passkey-app",
        name: "Passkey App",
        secret_hash: None,
        redirect_uris: std::slice::from_ref(&callback),
        scopes: &scopes,
    };
    let acme = TenantId::parse(TENANT).unwrap();
    app.store
        .tenant(&acme)
        .create_client(&client, 0)
        .await
        .unwrap();

    browser
        .goto(&format!("{origin}/account?tenant={TENANT}"))
        .await;
    browser.fill_by_label("Username", "alice").await;
    browser.fill_by_label("Password", PASSWORD).await;
    browser.click_button("Sign in").await;
    browser
        .fill_by_label("Name of the new passkey", "Test key")
        .await;
    browser.click_button("Add a passkey").await;
    let text = browser.page_text().await;
    assert!(text.contains("Passkey added."), "{text}");
    assert!(text.contains("Test key\nAdded\n"), "{text}");
    browser.click_button("Sign out everywhere").await;

    let metadata =
        CoreProviderMetadata::discover_async(IssuerUrl::new(origin.clone()).unwrap(), &app.http)
            .await
            .unwrap();
    let rp =
        CoreClient::from_provider_metadata(metadata, ClientId::new("passkey-app".into()), None)
            .set_redirect_uri(RedirectUrl::new(callback.clone()).unwrap());
    let first = authorization(&rp);
    browser.goto(first.url.as_str()).await;
    let text = browser.page_text().await;
    assert!(text.ends_with("Sign in\nSign in with a passkey"), "{text}");
    browser.click_button("Sign in with a passkey").await;
    let text = browser.page_text().await;
    assert!(
        text.starts_with("Allow Passkey App to access your account?\nSigned in as alice Example"),
        "{text}"
    );
    let (sub, amr, _) = allow_and_verify(&browser, &rp, &app, first).await;
    assert_eq!(sub, seeded.alice_sub);
    // RFC 8176: a passkey bound to its authenticator, which verified the user: two factors.
    assert_eq!(amr, ["hwk", "mfa"]);

    // The passkey as the second factor: the password, then "Use a passkey" on the step.
    browser
        .goto(&format!("{origin}/account?tenant={TENANT}"))
        .await;
    browser.click_button("Sign out everywhere").await;
    let second = authorization(&rp);
    browser.goto(second.url.as_str()).await;
    browser.fill_by_label("Username", "alice").await;
    browser.fill_by_label("Password", PASSWORD).await;
    browser.click_button("Sign in").await;
    let text = browser.page_text().await;
    assert!(text.starts_with("Two-step verification\n"), "{text}");
    browser.click_button("Use a passkey").await;
    let text = browser.page_text().await;
    assert!(text.starts_with("Allow Passkey App"), "{text}");
    let (_, amr, acr) = allow_and_verify(&browser, &rp, &app, second).await;
    assert_eq!(amr, ["pwd", "hwk", "mfa"]);
    assert_eq!(acr.as_deref(), Some("urn:fieldauth:acr:mfa"));

    browser
        .goto(&format!("{origin}/account?tenant={TENANT}"))
        .await;
    let text = browser.page_text().await;
    assert!(text.contains("Test key\nAdded\n"), "{text}");
    assert!(!text.contains("Last used\nNever"), "{text}");
    browser.click_button("Remove Test key").await;
    let text = browser.page_text().await;
    assert!(text.contains("Passkey removed."), "{text}");
    assert!(text.contains("You have no passkey."), "{text}");
    browser.click_button("Sign out everywhere").await;

    // The authenticator still holds the credential; the server no longer knows it.
    browser.goto(authorization(&rp).url.as_str()).await;
    browser.click_button("Sign in with a passkey").await;
    let text = browser.page_text().await;
    assert!(text.contains(REFUSED), "{text}");
    assert!(text.starts_with("Sign in\n"), "{text}");

    browser.close().await;
    app.stop().await;
}
