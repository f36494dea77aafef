//! The second step of sign-in (issue 24): the tenant's policy, TOTP codes checked against an
//! independent RFC 6238 implementation (`otp.rs`), recovery codes, the throttle, `acr_values`
//! and `max_age` asking again, an administrator's reset, and the `amr`/`acr` the
//! `openidconnect` crate reads from the ID token.

use openidconnect::core::{CoreClient, CoreProviderMetadata, CoreResponseType};
use openidconnect::{
    AuthenticationContextClass, AuthenticationFlow, AuthorizationCode, ClientId, CsrfToken,
    IssuerUrl, Nonce, OAuth2TokenResponse, PkceCodeChallenge, RedirectUrl, Scope, TokenResponse,
};
use store::testing::TestDatabase;

use crate::flow::{
    self, consent, form_handles, jwt_parts, location_params, param, post_form, seed, sign_in,
    PASSWORD, REDIRECT_URI,
};
use crate::helpers::{assert_ok, json_output, on_both_backends, TestApp};
use crate::otp::totp;
use crate::passkey_support::{origin_of, spawn_on_localhost, Forgery, SoftPasskey};
use crate::passkeys::register as register_passkey;

on_both_backends!(
    a_required_policy_enrolls_the_user_before_consent_and_the_id_token_says_mfa,
    an_enrolled_user_gives_a_code_at_every_sign_in_once_per_step,
    wrong_codes_are_failed_sign_ins_of_the_account,
    a_recovery_code_signs_in_once,
    acr_values_and_max_age_ask_a_signed_in_user_again,
    password_alone_is_amr_pwd_and_discovery_lists_the_acr_values,
    an_administrators_reset_makes_the_user_enroll_again,
    a_passkey_is_the_second_factor_after_the_password,
);

const ALPHA: &str = "10000000-0000-4000-8000-000000000000";

fn set_policy(app: &TestApp, policy: &str) {
    assert_ok(&app.cli(&["tenant", "update", "acme", "--mfa", policy]));
}

/// The HTML a browser gets at `url`.
async fn open(browser: &reqwest::Client, url: impl reqwest::IntoUrl) -> String {
    text(browser.get(url).send().await.unwrap()).await
}

async fn text(response: reqwest::Response) -> String {
    response.text().await.unwrap()
}

fn second_factor_url(app: &TestApp) -> String {
    format!("{}/oauth/signin/second-factor", app.issuer)
}

/// Posts the second-factor form of `page` with `method` and `code`.
async fn answer(
    app: &TestApp,
    browser: &reqwest::Client,
    page: &str,
    method: &str,
    code: &str,
) -> reqwest::Response {
    let (tenant, request, csrf) = form_handles(page);
    let fields = [
        ("tenant", tenant.as_str()),
        ("request", &request),
        ("csrf", &csrf),
        ("method", method),
        ("code", code),
    ];
    post_form(browser, &second_factor_url(app), &fields).await
}

/// The authenticator key an enrollment page shows.
fn shown_key(page: &str) -> String {
    let start = page
        .find("<code class=\"secret\">")
        .unwrap_or_else(|| panic!("no key on {page}"))
        + "<code class=\"secret\">".len();
    page[start..].split('<').next().unwrap().to_owned()
}

fn shown_recovery_codes(page: &str) -> Vec<String> {
    page.split("<li><code>")
        .skip(1)
        .map(|rest| rest.split('<').next().unwrap().to_owned())
        .collect()
}

fn is_consent(page: &str) -> bool {
    page.contains("name=\"decision\"")
}

fn asks_for_code(page: &str) -> bool {
    page.contains("Two-step verification") && page.contains("name=\"method\" value=\"totp\"")
}

/// Signs alice in under a `required` policy and sets up her authenticator: the key and the
/// recovery codes, and the browser, now signed in with both factors, on the consent page.
async fn enroll_alice(app: &TestApp, browser: &reqwest::Client) -> (String, Vec<String>, String) {
    set_policy(app, "required");
    let page = open(browser, flow::authorize_url(app, &[])).await;
    let step = text(sign_in(app, browser, &page, "alice", PASSWORD).await).await;
    let key = shown_key(&step);
    let codes = answer(
        app,
        browser,
        &step,
        "enroll_totp",
        &totp(&key, app.clock_now()),
    )
    .await;
    assert_eq!(codes.status(), 200);
    let codes = codes.text().await.unwrap();
    let recovery = shown_recovery_codes(&codes);
    assert_eq!(recovery.len(), 10, "{codes}");
    let next = answer(app, browser, &codes, "continue", "").await;
    let consent_page = next.text().await.unwrap();
    assert!(is_consent(&consent_page), "{consent_page}");
    (key, recovery, consent_page)
}

/// A new browser signs alice in with her password: the page that follows.
async fn password_step(
    app: &TestApp,
    browser: &reqwest::Client,
    overrides: &[(&str, Option<&str>)],
) -> String {
    let page = open(browser, flow::authorize_url(app, overrides)).await;
    text(sign_in(app, browser, &page, "alice", PASSWORD).await).await
}

/// Approves the consent page for Alpha: the code.
async fn approve(app: &TestApp, browser: &reqwest::Client, page: &str) -> String {
    let response = consent(
        app,
        browser,
        page,
        "allow",
        Some(ALPHA),
        &["profile", "jobs"],
    )
    .await;
    assert_eq!(response.status(), 302, "{}", response.text().await.unwrap());
    param(&location_params(&response).1, "code")
        .unwrap()
        .to_owned()
}

async fn a_required_policy_enrolls_the_user_before_consent_and_the_id_token_says_mfa(
    db: TestDatabase,
) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    set_policy(&app, "required");
    let metadata = CoreProviderMetadata::discover_async(
        IssuerUrl::new(app.issuer.clone()).unwrap(),
        &app.http,
    )
    .await
    .unwrap();
    let client =
        CoreClient::from_provider_metadata(metadata, ClientId::new(flow::CLIENT_ID.into()), None)
            .set_redirect_uri(RedirectUrl::new(REDIRECT_URI.into()).unwrap());
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let (url, _state, nonce) = client
        .authorize_url(
            AuthenticationFlow::<CoreResponseType>::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        )
        .add_scope(Scope::new("profile".into()))
        .add_scope(Scope::new("jobs".into()))
        .add_extra_param("tenant", flow::TENANT)
        .set_pkce_challenge(challenge)
        .url();
    let browser = app.browser();
    let page = open(&browser, url.as_str()).await;
    let step = text(sign_in(&app, &browser, &page, "alice", PASSWORD).await).await;
    assert!(!is_consent(&step), "consent before the second factor");
    assert!(step.contains("<svg"), "a QR code drawn on the server");
    let key = shown_key(&step);

    // The password alone signs nothing in: not the consent, not the account page.
    let early = consent(&app, &browser, &step, "allow", Some(ALPHA), &["jobs"]).await;
    assert_eq!(early.status(), 400);
    let account = open(&browser, format!("{}/account?tenant=acme", app.issuer)).await;
    assert!(account.contains("name=\"password\""), "{account}");

    // A wrong first code keeps the user on the step.
    let wrong = answer(&app, &browser, &step, "enroll_totp", "000000").await;
    assert_eq!(wrong.status(), 200);
    let step = wrong.text().await.unwrap();
    assert!(step.contains("That code is not right"), "{step}");
    let key_now = shown_key(&step);
    assert_eq!(key_now, key, "the same key until it is confirmed");

    let codes = answer(
        &app,
        &browser,
        &step,
        "enroll_totp",
        &totp(&key_now, app.clock_now()),
    )
    .await;
    let codes = codes.text().await.unwrap();
    assert_eq!(shown_recovery_codes(&codes).len(), 10, "{codes}");
    let consent_page = text(answer(&app, &browser, &codes, "continue", "").await).await;
    assert!(is_consent(&consent_page), "{consent_page}");
    let code = approve(&app, &browser, &consent_page).await;

    let tokens = client
        .exchange_code(AuthorizationCode::new(code))
        .unwrap()
        .set_pkce_verifier(verifier)
        .request_async(&app.http)
        .await
        .expect("code exchange");
    let id_token = tokens.id_token().expect("an ID token");
    let claims = id_token
        .claims(&client.id_token_verifier(), &nonce)
        .expect("a valid ID token");
    let amr: Vec<&str> = claims
        .auth_method_refs()
        .expect("amr")
        .iter()
        .map(|m| m.as_str())
        .collect();
    assert_eq!(amr, ["pwd", "otp", "mfa"]);
    assert_eq!(
        claims.auth_context_ref(),
        Some(&AuthenticationContextClass::new(
            "urn:fieldauth:acr:mfa".into()
        ))
    );
    let (_, access) = jwt_parts(tokens.access_token().secret());
    assert_eq!(access["acr"], "urn:fieldauth:acr:mfa");
    app.stop().await;
}

async fn an_enrolled_user_gives_a_code_at_every_sign_in_once_per_step(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let (key, _, _) = enroll_alice(&app, &app.browser()).await;
    // Once enrolled, the factor is asked under `optional` too.
    set_policy(&app, "optional");
    let browser = app.browser();
    let step = password_step(&app, &browser, &[]).await;
    assert!(asks_for_code(&step), "{step}");
    // The code the enrollment used, in the same step: a replay.
    let replay = answer(&app, &browser, &step, "totp", &totp(&key, app.clock_now())).await;
    let replay = replay.text().await.unwrap();
    assert!(replay.contains("That code is not right"), "{replay}");
    app.clock.advance(30);
    let code = totp(&key, app.clock_now());
    let page = text(answer(&app, &browser, &replay, "totp", &code).await).await;
    assert!(is_consent(&page), "{page}");
    // The same code again, from another browser: refused.
    app.clock.advance(1);
    let other = app.browser();
    let step = password_step(&app, &other, &[]).await;
    let again = text(answer(&app, &other, &step, "totp", &code).await).await;
    assert!(!is_consent(&again), "a code was accepted twice");
    // With the tenant's second factors off, the password is enough again (after the wait
    // the refused code earned).
    set_policy(&app, "off");
    app.clock.advance(5);
    let off = password_step(&app, &app.browser(), &[]).await;
    assert!(is_consent(&off), "{off}");
    app.stop().await;
}

async fn wrong_codes_are_failed_sign_ins_of_the_account(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let (key, _, _) = enroll_alice(&app, &app.browser()).await;
    let browser = app.browser();
    let mut page = password_step(&app, &browser, &[]).await;
    // The default policy locks an account after 5 failures, with growing waits between.
    for _ in 0..5 {
        app.clock.advance(20);
        let response = answer(&app, &browser, &page, "totp", "000000").await;
        page = response.text().await.unwrap();
    }
    assert!(page.contains("locked"), "{page}");
    app.clock.advance(30);
    let right = answer(&app, &browser, &page, "totp", &totp(&key, app.clock_now())).await;
    assert_eq!(right.status(), 429);
    // The lock is the account's: the password is not checked either.
    let fresh = app.browser();
    let signin = open(&fresh, flow::authorize_url(&app, &[])).await;
    let refused = sign_in(&app, &fresh, &signin, "alice", PASSWORD).await;
    assert_eq!(refused.status(), 429);
    let trail = app.cli(&[
        "audit",
        "list",
        "--tenant",
        "acme",
        "--kind",
        "signin.second_factor_failed",
        "--json",
    ]);
    assert_ok(&trail);
    assert!(String::from_utf8_lossy(&trail.stdout).contains("now locked"));
    app.stop().await;
}

async fn a_recovery_code_signs_in_once(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let (_, recovery, _) = enroll_alice(&app, &app.browser()).await;
    let browser = app.browser();
    let step = password_step(&app, &browser, &[]).await;
    assert!(step.contains("Use a recovery code"), "{step}");
    let page = text(answer(&app, &browser, &step, "recovery_code", &recovery[3]).await).await;
    assert!(is_consent(&page), "{page}");
    let code = approve(&app, &browser, &page).await;
    let tokens = flow::exchange(&app, &code).await;
    let (_, id) = jwt_parts(tokens["id_token"].as_str().unwrap());
    assert_eq!(id["amr"], serde_json::json!(["pwd", "otp", "mfa"]));
    let other = app.browser();
    let step = password_step(&app, &other, &[]).await;
    let again = text(answer(&app, &other, &step, "recovery_code", &recovery[3]).await).await;
    assert!(again.contains("That code is not right"), "{again}");
    app.stop().await;
}

async fn acr_values_and_max_age_ask_a_signed_in_user_again(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let browser = app.browser();
    let (key, _, _) = enroll_alice(&app, &browser).await;
    set_policy(&app, "optional");
    // Signed in with both factors: a plain request goes straight to consent…
    app.clock.advance(30);
    let plain = open(&browser, flow::authorize_url(&app, &[])).await;
    assert!(is_consent(&plain), "{plain}");
    // …and so does one that accepts `…:pwd` too (Core §3.1.2.1: any listed value will do).
    let either = [(
        "acr_values",
        Some("urn:fieldauth:acr:pwd urn:fieldauth:acr:mfa"),
    )];
    let either = open(&browser, flow::authorize_url(&app, &either)).await;
    assert!(is_consent(&either), "{either}");
    // …one with acr_values=…:mfa asks for a factor again first.
    let acr = [("acr_values", Some("urn:fieldauth:acr:mfa"))];
    let step = open(&browser, flow::authorize_url(&app, &acr)).await;
    assert!(asks_for_code(&step), "{step}");
    // Its consent cannot be posted around the step.
    let around = consent(&app, &browser, &step, "allow", Some(ALPHA), &["jobs"]).await;
    assert_eq!(around.status(), 400);
    let step = open(&browser, flow::authorize_url(&app, &acr)).await;
    let page =
        text(answer(&app, &browser, &step, "totp", &totp(&key, app.clock_now())).await).await;
    assert!(is_consent(&page), "{page}");
    let code = approve(&app, &browser, &page).await;
    let (_, id) = jwt_parts(
        flow::exchange(&app, &code).await["id_token"]
            .as_str()
            .unwrap(),
    );
    assert_eq!(id["acr"], "urn:fieldauth:acr:mfa");

    // max_age exceeded: the password and the factor again.
    app.clock.advance(120);
    let age = [("max_age", Some("60"))];
    let signin = open(&browser, flow::authorize_url(&app, &age)).await;
    assert!(signin.contains("name=\"password\""), "{signin}");
    let step = text(sign_in(&app, &browser, &signin, "alice", PASSWORD).await).await;
    assert!(asks_for_code(&step), "{step}");

    // Bob has no factor: acr_values leads him to set one up, under `optional`.
    let bob = app.browser();
    let signin = open(&bob, flow::authorize_url(&app, &acr)).await;
    let step = text(sign_in(&app, &bob, &signin, "bob", PASSWORD).await).await;
    assert!(step.contains("<code class=\"secret\">"), "{step}");
    app.stop().await;
}

async fn password_alone_is_amr_pwd_and_discovery_lists_the_acr_values(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let browser = app.browser();
    let code = flow::code_for(&app, &browser, &[]).await;
    let tokens = flow::exchange(&app, &code).await;
    let (_, id) = jwt_parts(tokens["id_token"].as_str().unwrap());
    assert_eq!(id["amr"], serde_json::json!(["pwd"]));
    assert_eq!(id["acr"], "urn:fieldauth:acr:pwd");
    let (_, access) = jwt_parts(tokens["access_token"].as_str().unwrap());
    assert_eq!(access["acr"], "urn:fieldauth:acr:pwd");
    let metadata: serde_json::Value = app
        .get(&format!("{}/.well-known/openid-configuration", app.issuer))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        metadata["acr_values_supported"],
        serde_json::json!(["urn:fieldauth:acr:pwd", "urn:fieldauth:acr:mfa"])
    );
    let claims = metadata["claims_supported"].as_array().unwrap();
    for claim in ["amr", "acr"] {
        assert!(claims.iter().any(|c| c == claim), "{claim}");
    }
    app.stop().await;
}

async fn an_administrators_reset_makes_the_user_enroll_again(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let seeded = seed(&app).await;
    enroll_alice(&app, &app.browser()).await;
    let reset = app.cli(&[
        "user",
        "reset-second-factors",
        "--tenant",
        "acme",
        "--sub",
        &seeded.alice_sub,
        "--json",
    ]);
    assert_ok(&reset);
    assert_eq!(json_output(&reset)["removed"], true);
    assert_eq!(app.rows("totp_credentials").await, 0);
    assert_eq!(app.rows("recovery_codes").await, 0);
    let step = password_step(&app, &app.browser(), &[]).await;
    assert!(
        step.contains("<code class=\"secret\">"),
        "enroll again: {step}"
    );
    let trail = app.cli(&[
        "audit",
        "list",
        "--tenant",
        "acme",
        "--kind",
        "admin.user.second_factors_reset",
        "--json",
    ]);
    assert_ok(&trail);
    assert!(String::from_utf8_lossy(&trail.stdout).contains(&seeded.alice_sub));
    app.stop().await;
}

/// A user with a passkey and no authenticator app: after the password the step offers the
/// passkey, whose ceremony (started from the step's own form) completes the sign-in, and
/// the ID token says `pwd hwk mfa`.
async fn a_passkey_is_the_second_factor_after_the_password(db: TestDatabase) {
    let app = spawn_on_localhost(db).await;
    seed(&app).await;
    let mut passkey = SoftPasskey::new(&origin_of(&app));
    register_passkey(&app, &app.browser(), &mut passkey).await;
    let browser = app.browser();
    let step = password_step(&app, &browser, &[]).await;
    assert!(step.contains("data-passkey=\"verify\""), "{step}");
    assert!(!asks_for_code(&step), "no authenticator app to ask for");
    let (tenant, request, csrf) = form_handles(&step);
    let start_url = format!("{}/oauth/second-factor/passkey/start", app.issuer);
    let fields = [
        ("tenant", tenant.as_str()),
        ("request", &request),
        ("csrf", &csrf),
    ];
    let start = post_form(&browser, &start_url, &fields).await;
    assert_eq!(start.status(), 200);
    let options: serde_json::Value = start.json().await.unwrap();
    let answer_with = |credential: String, ceremony: String| {
        let (tenant, request, csrf) = (tenant.clone(), request.clone(), csrf.clone());
        let browser = browser.clone();
        let url = second_factor_url(&app);
        async move {
            let fields = [
                ("tenant", tenant.as_str()),
                ("request", &request),
                ("csrf", &csrf),
                ("method", "passkey"),
                ("ceremony", &ceremony),
                ("credential", &credential),
            ];
            post_form(&browser, &url, &fields).await
        }
    };
    let ceremony = options["ceremony"].as_str().unwrap().to_owned();
    // An assertion for another challenge is a failed second factor.
    let forged = passkey.assert(
        &options,
        Forgery {
            challenge: Some("AAAA"),
            ..Forgery::default()
        },
    );
    let refused = answer_with(forged, ceremony.clone())
        .await
        .text()
        .await
        .unwrap();
    assert!(refused.contains("could not be verified"), "{refused}");
    // The failure is a failed sign-in: the throttle's first wait is a second.
    app.clock.advance(2);
    let start = post_form(&browser, &start_url, &fields).await;
    let options: serde_json::Value = start.json().await.unwrap();
    let credential = passkey.assert(&options, Forgery::default());
    let ceremony = options["ceremony"].as_str().unwrap().to_owned();
    let page = answer_with(credential, ceremony)
        .await
        .text()
        .await
        .unwrap();
    assert!(is_consent(&page), "{page}");
    let code = approve(&app, &browser, &page).await;
    let (_, id) = jwt_parts(
        flow::exchange(&app, &code).await["id_token"]
            .as_str()
            .unwrap(),
    );
    assert_eq!(id["amr"], serde_json::json!(["pwd", "hwk", "mfa"]));
    assert_eq!(id["acr"], "urn:fieldauth:acr:mfa");
    app.stop().await;
}
