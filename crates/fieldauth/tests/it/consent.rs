//! Sign-in and consent end to end: the happy path with an authorization URL built by the
//! `openidconnect` crate, denial, and every kind of tampering, none of which yields a code.

use openidconnect::core::{CoreClient, CoreProviderMetadata};
use openidconnect::{
    AuthenticationFlow, ClientId, CsrfToken, IssuerUrl, Nonce, PkceCodeChallenge, RedirectUrl,
    Scope,
};
use store::testing::TestDatabase;
use store::TenantId;

use crate::flow::{
    self, authorize_url, consent, hidden, location_params, param, seed, signed_in_consent_page,
    REDIRECT_URI,
};
use crate::helpers::{on_both_backends, TestApp};

on_both_backends!(
    openidconnect_url_sign_in_and_consent_with_a_chosen_organization_yield_a_bound_code,
    deny_redirects_with_access_denied_state_and_iss_and_no_code,
    tampered_consents_never_yield_a_code,
    a_consent_is_used_once_and_only_from_its_own_browser_session,
    a_user_without_an_organization_can_only_deny,
);

/// Spec §1 and §2.3: code `<tenant>.<random>`, `state`, `iss`; the code bound to the chosen
/// organization, the approved scopes, the nonce and the PKCE challenge (DESIGN.md).
async fn openidconnect_url_sign_in_and_consent_with_a_chosen_organization_yield_a_bound_code(
    db: TestDatabase,
) {
    let app = TestApp::spawn(db).await;
    let seeded = seed(&app).await;
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
    let (url, csrf_state, nonce) = client
        .authorize_url(
            AuthenticationFlow::<openidconnect::core::CoreResponseType>::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        )
        .add_scope(Scope::new("profile".into()))
        .add_scope(Scope::new("jobs".into()))
        .add_extra_param("tenant", flow::TENANT)
        .set_pkce_challenge(challenge.clone())
        .url();

    let browser = app.browser();
    let page = signed_in_consent_page(&app, &browser, url.as_str(), "alice").await;
    for text in [
        "Dispatch Board",
        "Alpha",
        "Bravo",
        "See your name and username",
        "Jobs: job lists",
    ] {
        assert!(page.contains(text), "consent page lacks {text:?}");
    }
    assert!(
        !page.contains("Charlie"),
        "only the user's organizations are offered"
    );
    // The user clears `profile`: only openid (always kept) and jobs are granted.
    let response = consent(
        &app,
        &browser,
        &page,
        "allow",
        Some(&seeded.bravo),
        &["jobs"],
    )
    .await;
    assert_eq!(response.status(), 302);
    let (base, pairs) = location_params(&response);
    assert_eq!(base, REDIRECT_URI);
    assert_eq!(param(&pairs, "state"), Some(csrf_state.secret().as_str()));
    assert_eq!(param(&pairs, "iss"), Some(app.issuer.as_str()));
    let code = param(&pairs, "code").unwrap();
    let (prefix, secret) = code.split_once('.').unwrap();
    assert_eq!(prefix, "acme");
    assert_eq!(secret.len(), 43);

    let tenant = TenantId::parse("acme").unwrap();
    let stored = app
        .store
        .tenant(&tenant)
        .find_authorization_code(&oauth::secret::hash_secret(secret))
        .await
        .unwrap()
        .expect("stored under the hash of its random part");
    assert_eq!(stored.organization_guid, seeded.bravo);
    assert_eq!(stored.user_id, seeded.alice_sub);
    assert_eq!(stored.scope, "openid jobs");
    assert_eq!(stored.nonce.as_deref(), Some(nonce.secret().as_str()));
    assert_eq!(stored.code_challenge, challenge.as_str());
    assert_eq!(
        oauth::pkce::s256_challenge(verifier.secret()),
        stored.code_challenge
    );
    assert_eq!(stored.expires_at - stored.created_at, 60);
    assert_eq!(stored.auth_time, app.clock_now());
    app.stop().await;
}

/// Spec §2.3 and §7: denial carries `error=access_denied` and `state`, no code.
async fn deny_redirects_with_access_denied_state_and_iss_and_no_code(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let browser = app.browser();
    let page = signed_in_consent_page(&app, &browser, &authorize_url(&app, &[]), "alice").await;
    let response = consent(&app, &browser, &page, "deny", None, &[]).await;
    assert_eq!(response.status(), 302);
    let (base, pairs) = location_params(&response);
    assert_eq!(base, REDIRECT_URI);
    assert_eq!(param(&pairs, "error"), Some("access_denied"));
    assert_eq!(param(&pairs, "state"), Some("state-123"));
    assert_eq!(param(&pairs, "iss"), Some(app.issuer.as_str()));
    assert_eq!(param(&pairs, "code"), None);
    app.stop().await;
}

async fn assert_refused_page(response: reqwest::Response, message: &str) {
    assert_eq!(response.status(), 400);
    assert!(
        response.headers().get("location").is_none(),
        "a refused consent redirected"
    );
    let body = response.text().await.unwrap();
    assert!(
        body.contains(message),
        "page does not say {message:?}: {body}"
    );
}

/// An organization that is not the user's, a scope that was not requested, a missing or
/// wrong CSRF token: refused with a page, and the request stays usable for the real form.
async fn tampered_consents_never_yield_a_code(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let seeded = seed(&app).await;
    let browser = app.browser();
    let page = signed_in_consent_page(&app, &browser, &authorize_url(&app, &[]), "alice").await;
    let not_member = consent(
        &app,
        &browser,
        &page,
        "allow",
        Some(&seeded.charlie),
        &["jobs"],
    )
    .await;
    assert_refused_page(not_member, "not a member of the chosen organization").await;
    let unknown_org = consent(
        &app,
        &browser,
        &page,
        "allow",
        Some("00000000-0000-4000-8000-000000000999"),
        &[],
    )
    .await;
    assert_refused_page(unknown_org, "not a member").await;
    let added_scope = consent(
        &app,
        &browser,
        &page,
        "allow",
        Some(&seeded.alpha),
        &["jobs", "customers"],
    )
    .await;
    assert_refused_page(added_scope, "altered").await;
    let no_org = consent(&app, &browser, &page, "allow", None, &["jobs"]).await;
    assert_refused_page(no_org, "Choose an organization").await;

    let (tenant, request) = (hidden(&page, "tenant"), hidden(&page, "request"));
    let url = format!("{}/oauth/authorize", app.issuer);
    let without_csrf = [
        ("tenant", tenant.as_str()),
        ("request", &request),
        ("decision", "allow"),
        ("organization", &seeded.alpha),
    ];
    assert_refused_page(
        flow::post_form(&browser, &url, &without_csrf).await,
        "incomplete",
    )
    .await;
    let wrong_csrf = [
        ("csrf", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
        without_csrf[0],
        without_csrf[1],
        without_csrf[2],
        without_csrf[3],
    ];
    assert_refused_page(
        flow::post_form(&browser, &url, &wrong_csrf).await,
        "security token",
    )
    .await;
    let not_a_form = browser.post(&url).body("tenant=acme").send().await.unwrap();
    assert_refused_page(not_a_form, "x-www-form-urlencoded").await;

    // The untampered form still works, once.
    let response = consent(
        &app,
        &browser,
        &page,
        "allow",
        Some(&seeded.alpha),
        &["jobs"],
    )
    .await;
    assert_eq!(response.status(), 302);
    assert!(param(&location_params(&response).1, "code").is_some());
    app.stop().await;
}

/// A consent form replayed, or posted with another browser's cookie, yields nothing.
async fn a_consent_is_used_once_and_only_from_its_own_browser_session(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let seeded = seed(&app).await;
    let browser = app.browser();
    let page = signed_in_consent_page(&app, &browser, &authorize_url(&app, &[]), "alice").await;

    // Another browser, even one signed in as the same user, cannot use this form.
    let other = app.browser();
    signed_in_consent_page(&app, &other, &authorize_url(&app, &[]), "alice").await;
    let foreign = consent(&app, &other, &page, "allow", Some(&seeded.alpha), &["jobs"]).await;
    assert_refused_page(foreign, "another browser session").await;
    let cookieless = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let anonymous = consent(
        &app,
        &cookieless,
        &page,
        "allow",
        Some(&seeded.alpha),
        &["jobs"],
    )
    .await;
    assert_refused_page(anonymous, "another browser session").await;

    let first = consent(
        &app,
        &browser,
        &page,
        "allow",
        Some(&seeded.alpha),
        &["jobs"],
    )
    .await;
    assert_eq!(first.status(), 302);
    let replay = consent(
        &app,
        &browser,
        &page,
        "allow",
        Some(&seeded.alpha),
        &["jobs"],
    )
    .await;
    assert_refused_page(replay, "already completed").await;
    let deny_after = consent(&app, &browser, &page, "deny", None, &[]).await;
    assert_refused_page(deny_after, "already completed").await;

    // An expired request is refused too (10 minutes).
    let page = browser
        .get(authorize_url(&app, &[]))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    app.clock.advance(601);
    let late = consent(
        &app,
        &browser,
        &page,
        "allow",
        Some(&seeded.alpha),
        &["jobs"],
    )
    .await;
    assert_refused_page(late, "expired").await;
    app.stop().await;
}

/// Spec §1: the consent needs an organization; without one the user is told and can deny.
async fn a_user_without_an_organization_can_only_deny(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let seeded = seed(&app).await;
    let browser = app.browser();
    let page = signed_in_consent_page(&app, &browser, &authorize_url(&app, &[]), "carol").await;
    assert!(
        page.contains("does not belong to any organization"),
        "{page}"
    );
    assert!(!page.contains(">Allow</button>"));
    assert!(page.contains(">Deny</button>"));
    let forced = consent(
        &app,
        &browser,
        &page,
        "allow",
        Some(&seeded.alpha),
        &["jobs"],
    )
    .await;
    assert_refused_page(forced, "not a member").await;
    let denied = consent(&app, &browser, &page, "deny", None, &[]).await;
    assert_eq!(
        param(&location_params(&denied).1, "error"),
        Some("access_denied")
    );
    app.stop().await;
}
