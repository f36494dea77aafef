//! The authenticator app and recovery codes on the account page (issue 24): set up from the
//! QR page with a first code computed here by an RFC 6238 implementation of the test's own
//! (aws-lc's HMAC-SHA-1, not the server's crate), ten recovery codes shown once, removal
//! behind the current password, new codes that end the old ones, every form behind its CSRF
//! token; on both backends.

use aws_lc_rs::digest::{digest, SHA256};
use aws_lc_rs::hmac;
use oauth::sealing::{Kek, KeyEncryption};
use store::testing::TestDatabase;
use store::{TenantId, TotpStatus};

use crate::account::account_page;
use crate::flow::{hidden, post_form, seed, PASSWORD, TENANT};
use crate::helpers::{on_both_backends, TestApp};

on_both_backends!(
    an_authenticator_is_set_up_with_a_first_code_and_gives_ten_recovery_codes_once,
    the_key_is_sealed_under_the_kek_bound_to_its_user,
    forms_of_the_authenticator_without_the_csrf_token_are_refused_and_change_nothing,
    removing_the_authenticator_asks_for_the_current_password,
    new_recovery_codes_end_the_old_ones,
);

/// RFC 6238 §4 with HMAC-SHA-1 and 6 digits, RFC 4226 §5.3's dynamic truncation.
fn totp_code(secret: &[u8], step: i64) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, secret);
    let mac = hmac::sign(&key, &step.to_be_bytes());
    let mac = mac.as_ref();
    let offset = usize::from(mac[19] & 0x0f);
    let binary = u32::from_be_bytes([
        mac[offset],
        mac[offset + 1],
        mac[offset + 2],
        mac[offset + 3],
    ]) & 0x7fff_ffff;
    format!("{:06}", binary % 1_000_000)
}

/// RFC 4648 base32, the alphabet authenticator apps read keys in (spaces ignored).
fn base32_decode(text: &str) -> Vec<u8> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut bits: u64 = 0;
    let mut count = 0;
    let mut out = Vec::new();
    for c in text.bytes().filter(|c| !c.is_ascii_whitespace()) {
        let value = ALPHABET.iter().position(|a| *a == c).expect("base32") as u64;
        bits = (bits << 5) | value;
        count += 5;
        if count >= 8 {
            count -= 8;
            out.push((bits >> count) as u8);
        }
    }
    out
}

#[test]
fn the_tests_own_totp_gives_the_rfc_6238_vectors() {
    // RFC 6238 Appendix B, SHA-1, the last six of its eight digits.
    let seed = b"12345678901234567890";
    assert_eq!(totp_code(seed, 59 / 30), "287082");
    assert_eq!(totp_code(seed, 1_111_111_109 / 30), "081804");
    assert_eq!(totp_code(seed, 2_000_000_000 / 30), "279037");
    assert_eq!(base32_decode("GEZD GNBV GY3T QOJQ"), b"1234567890");
}

fn acme() -> TenantId {
    TenantId::parse(TENANT).unwrap()
}

fn page_url(app: &TestApp, path: &str) -> String {
    format!("{}{path}", app.issuer)
}

/// The page answers with the pages' security headers.
fn assert_page(response: &reqwest::Response) {
    let headers = response.headers();
    assert_eq!(headers["content-type"], "text/html; charset=utf-8");
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(headers["x-frame-options"], "DENY");
    let csp = headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    // Only the pages' one first-party script (the passkey buttons), never inline code.
    assert!(csp.contains("script-src 'self';"), "{csp}");
    assert!(
        !csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"),
        "{csp}"
    );
}

/// The key shown on the set-up page.
fn key_of(html: &str) -> Vec<u8> {
    let marker = "<code id=\"totp-key\" class=\"key\">";
    let start = html.find(marker).expect("the key") + marker.len();
    base32_decode(html[start..].split('<').next().unwrap())
}

/// The codes of a recovery-codes page.
fn codes_of(html: &str) -> Vec<String> {
    html.split("<li><code>")
        .skip(1)
        .map(|rest| rest.split('<').next().unwrap().to_owned())
        .collect()
}

fn step_now(app: &TestApp) -> i64 {
    app.clock_now() / 30
}

/// Starts a set-up from the account page: the set-up page's HTML.
async fn setup_page(app: &TestApp, browser: &reqwest::Client, account: &str) -> String {
    let fields = [("tenant", TENANT), ("csrf", &hidden(account, "csrf"))];
    let response = post_form(browser, &page_url(app, "/account/totp/setup"), &fields).await;
    assert_eq!(response.status(), 303);
    assert_eq!(
        response.headers()["location"],
        "/account/totp/setup?tenant=acme"
    );
    let response = browser
        .get(page_url(app, "/account/totp/setup?tenant=acme"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_page(&response);
    response.text().await.unwrap()
}

async fn confirm(
    app: &TestApp,
    browser: &reqwest::Client,
    page: &str,
    code: &str,
) -> reqwest::Response {
    let fields = [
        ("tenant", TENANT),
        ("csrf", &hidden(page, "csrf")),
        ("code", code),
    ];
    post_form(browser, &page_url(app, "/account/totp/confirm"), &fields).await
}

/// Alice signs in to her account page and sets up an authenticator: its key and her
/// recovery codes.
async fn enrolled(app: &TestApp, browser: &reqwest::Client) -> (Vec<u8>, Vec<String>) {
    let account = account_page(app, browser, "alice").await;
    let page = setup_page(app, browser, &account).await;
    let key = key_of(&page);
    let response = confirm(app, browser, &page, &totp_code(&key, step_now(app))).await;
    assert_eq!(response.status(), 200);
    let html = response.text().await.unwrap();
    (key, codes_of(&html))
}

async fn audit_kinds(app: &TestApp) -> Vec<String> {
    app.store
        .tenant(&acme())
        .audit_events(100)
        .await
        .unwrap()
        .into_iter()
        .map(|event| event.kind)
        .collect()
}

async fn an_authenticator_is_set_up_with_a_first_code_and_gives_ten_recovery_codes_once(
    db: TestDatabase,
) {
    let app = TestApp::spawn(db).await;
    let seeded = seed(&app).await;
    let browser = app.browser();
    let account = account_page(&app, &browser, "alice").await;
    assert!(
        account.contains("<dt>Authenticator app</dt>\n  <dd>Off</dd>"),
        "{account}"
    );
    assert!(account.contains("Set up an authenticator app</button>"));
    assert!(!account.contains("New recovery codes"));

    let page = setup_page(&app, &browser, &account).await;
    assert!(page.contains("<svg role=\"img\""), "{page}");
    assert!(page.contains("otpauth://totp/Acme:alice?secret="), "{page}");
    let key = key_of(&page);
    assert_eq!(key.len(), 20, "160 bits");
    let acme = acme();
    let records = app.store.tenant(&acme);
    assert_eq!(
        records.totp_status(&seeded.alice_sub).await.unwrap(),
        TotpStatus::Unconfirmed
    );

    // A code of two steps ago is refused, and the same key is shown again.
    let step = step_now(&app);
    let wrong = confirm(&app, &browser, &page, &totp_code(&key, step - 2)).await;
    assert_eq!(wrong.status(), 200);
    let wrong = wrong.text().await.unwrap();
    assert!(wrong.contains("That code is not right."), "{wrong}");
    assert_eq!(key_of(&wrong), key);
    assert_eq!(
        records.totp_status(&seeded.alice_sub).await.unwrap(),
        TotpStatus::Unconfirmed
    );

    // The code of the step before (the clock drifts) is accepted.
    let right = confirm(&app, &browser, &page, &totp_code(&key, step - 1)).await;
    assert_eq!(right.status(), 200);
    assert_page(&right);
    let html = right.text().await.unwrap();
    assert!(html.contains("Save these codes now"), "{html}");
    // The link onwards (its `&` escaped as askama escapes it) shows the confirmation.
    assert!(html.contains("done=totp-enabled\">Continue</a>"), "{html}");
    let codes = codes_of(&html);
    assert_eq!(codes.len(), 10, "{html}");
    for code in &codes {
        assert_eq!(code.len(), 11, "{code}");
        assert_eq!(&code[5..6], "-");
        assert!(code
            .bytes()
            .all(|b| b == b'-' || b"0123456789abcdefghjkmnpqrstvwxyz".contains(&b)));
    }
    let mut distinct = codes.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 10);
    assert!(matches!(
        records.totp_status(&seeded.alice_sub).await.unwrap(),
        TotpStatus::Confirmed { .. }
    ));

    // The same code again: nothing is being set up any more, so back to the account page.
    let again = confirm(&app, &browser, &page, &totp_code(&key, step - 1)).await;
    assert_eq!(again.status(), 303);
    let account = account_page(&app, &browser, "alice").await;
    assert!(account.contains("<dt>Authenticator app</dt>\n  <dd>On</dd>"));
    assert!(account.contains("<dt>Recovery codes left</dt>\n  <dd>10</dd>"));
    assert!(account.contains("Remove the authenticator app</button>"));
    // Set up already: a second set-up is refused rather than replacing the working one.
    let fields = [("tenant", TENANT), ("csrf", &hidden(&account, "csrf"))];
    let twice = post_form(&browser, &page_url(&app, "/account/totp/setup"), &fields).await;
    assert_eq!(twice.status(), 400);
    assert!(twice.text().await.unwrap().contains("Remove it first"));

    let kinds = audit_kinds(&app).await;
    for kind in [
        "mfa.totp.failed",
        "mfa.totp.enrolled",
        "mfa.recovery_codes.generated",
    ] {
        assert!(kinds.iter().any(|k| k == kind), "{kind} not in {kinds:?}");
    }
    let metrics = app.get(&format!("{}/metrics", app.metrics_url)).await;
    let metrics = metrics.text().await.unwrap();
    assert!(
        metrics.contains("fieldauth_mfa_total{factor=\"totp\",result=\"enrolled\"} 1"),
        "{metrics}"
    );
}

/// The key is sealed under the KEK, bound to its tenant and user, and a KEK rewrap moves it.
async fn the_key_is_sealed_under_the_kek_bound_to_its_user(db: TestDatabase) {
    let app = TestApp::spawn_configured(db, oauth::ThrottlePolicy::default(), |config| {
        let kek = Kek::parse(&[7u8; 32]).unwrap();
        config.key_encryption = KeyEncryption::new(Some(kek), None);
    })
    .await;
    let seeded = seed(&app).await;
    let browser = app.browser();
    let (key, _) = enrolled(&app, &browser).await;
    let acme = acme();
    let records = app.store.tenant(&acme);
    let stored = records
        .confirmed_totp_secret(&seeded.alice_sub)
        .await
        .unwrap()
        .unwrap();
    assert!(stored.secret.starts_with(b"FAS\x01"), "sealed");
    assert!(!stored
        .secret
        .windows(key.len())
        .any(|w| w == key.as_slice()));
    let encryption = KeyEncryption::new(Some(Kek::parse(&[7u8; 32]).unwrap()), None);
    let context = format!("totp\0{TENANT}\0{}", seeded.alice_sub);
    assert_eq!(
        encryption
            .reveal(context.as_bytes(), &stored.secret)
            .unwrap(),
        key
    );
    let elsewhere = format!("totp\0{TENANT}\0someone-else");
    assert!(encryption
        .reveal(elsewhere.as_bytes(), &stored.secret)
        .is_err());

    // `keys rewrap` to a new KEK takes the authenticator secrets along, so the old KEK
    // can go (docs/key-rotation.md).
    let new_kek = || Kek::parse(&[9u8; 32]).unwrap();
    let both = KeyEncryption::new(Some(new_kek()), Some(Kek::parse(&[7u8; 32]).unwrap()));
    oauth::rewrap_stored_keys(&app.store, &both).await.unwrap();
    let rewrapped = records
        .confirmed_totp_secret(&seeded.alice_sub)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        oauth::sealing::sealed_by(&rewrapped.secret),
        Some(new_kek().id())
    );
    let only_new = KeyEncryption::new(Some(new_kek()), None);
    assert_eq!(
        only_new
            .reveal(context.as_bytes(), &rewrapped.secret)
            .unwrap(),
        key
    );
}

async fn forms_of_the_authenticator_without_the_csrf_token_are_refused_and_change_nothing(
    db: TestDatabase,
) {
    let app = TestApp::spawn(db).await;
    let seeded = seed(&app).await;
    let browser = app.browser();
    let account = account_page(&app, &browser, "alice").await;
    let wrong = "A".repeat(43);
    for path in [
        "/account/totp/setup",
        "/account/totp/confirm",
        "/account/totp/remove",
        "/account/recovery-codes",
    ] {
        for csrf in [None, Some(wrong.as_str())] {
            let mut fields = vec![
                ("tenant", TENANT),
                ("code", "123456"),
                ("current_password", PASSWORD),
            ];
            if let Some(csrf) = csrf {
                fields.push(("csrf", csrf));
            }
            let response = post_form(&browser, &page_url(&app, path), &fields).await;
            assert_eq!(response.status(), 400, "{path} {csrf:?}");
            let html = response.text().await.unwrap();
            assert!(html.contains("security token"), "{path}: {html}");
        }
    }
    let acme = acme();
    let records = app.store.tenant(&acme);
    assert_eq!(
        records.totp_status(&seeded.alice_sub).await.unwrap(),
        TotpStatus::None
    );
    // With the token but without a second factor: no recovery codes to renew.
    let fields = [("tenant", TENANT), ("csrf", &hidden(&account, "csrf"))];
    let response = post_form(
        &browser,
        &page_url(&app, "/account/recovery-codes"),
        &fields,
    )
    .await;
    assert_eq!(response.status(), 400);
    assert_eq!(
        records
            .remaining_recovery_codes(&seeded.alice_sub)
            .await
            .unwrap(),
        0
    );
    // The set-up page without a session sends to the account page (which signs in).
    let response = app
        .browser()
        .get(page_url(&app, "/account/totp/setup?tenant=acme"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 303);
    assert_eq!(response.headers()["location"], "/account?tenant=acme");
}

async fn removing_the_authenticator_asks_for_the_current_password(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let seeded = seed(&app).await;
    let browser = app.browser();
    enrolled(&app, &browser).await;
    let account = account_page(&app, &browser, "alice").await;
    let csrf = hidden(&account, "csrf");
    let remove = page_url(&app, "/account/totp/remove");
    let acme = acme();
    let records = app.store.tenant(&acme);

    let wrong = [
        ("tenant", TENANT),
        ("csrf", csrf.as_str()),
        ("current_password", "not the password"),
    ];
    let response = post_form(&browser, &remove, &wrong).await;
    assert_eq!(response.status(), 200);
    assert_page(&response);
    let html = response.text().await.unwrap();
    assert!(
        html.contains("Your current password is incorrect."),
        "{html}"
    );
    assert!(html.contains("action=\"/account/totp/remove\""), "{html}");
    assert!(matches!(
        records.totp_status(&seeded.alice_sub).await.unwrap(),
        TotpStatus::Confirmed { .. }
    ));
    // The wrong password counts toward the sign-in throttle: wait it out.
    app.clock.advance(60);

    let csrf = hidden(&html, "csrf");
    let right = [
        ("tenant", TENANT),
        ("csrf", csrf.as_str()),
        ("current_password", PASSWORD),
    ];
    let response = post_form(&browser, &remove, &right).await;
    assert_eq!(response.status(), 303);
    assert_eq!(
        response.headers()["location"],
        "/account?tenant=acme&done=totp-removed"
    );
    assert_eq!(
        records.totp_status(&seeded.alice_sub).await.unwrap(),
        TotpStatus::None
    );
    // Without a second factor the recovery codes go too.
    assert_eq!(
        records
            .remaining_recovery_codes(&seeded.alice_sub)
            .await
            .unwrap(),
        0
    );
    let location = response.headers()["location"].to_str().unwrap().to_owned();
    let response = browser.get(page_url(&app, &location)).send().await.unwrap();
    let account = response.text().await.unwrap();
    assert!(account.contains("<dd>Off</dd>"), "{account}");
    assert!(account.contains("The authenticator app is removed."));
    let kinds = audit_kinds(&app).await;
    for kind in ["account.password_check_failed", "mfa.totp.removed"] {
        assert!(kinds.iter().any(|k| k == kind), "{kind} not in {kinds:?}");
    }
}

/// The stored hash of a recovery code as shown (the server's binding to tenant and user).
fn recovery_hash(user_id: &str, code: &str) -> Vec<u8> {
    let plain = code.replace('-', "");
    let text = format!("recovery code\0{TENANT}\0{user_id}\0{plain}");
    digest(&SHA256, text.as_bytes()).as_ref().to_vec()
}

async fn new_recovery_codes_end_the_old_ones(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let seeded = seed(&app).await;
    let browser = app.browser();
    let (_, first) = enrolled(&app, &browser).await;
    let account = account_page(&app, &browser, "alice").await;
    let fields = [("tenant", TENANT), ("csrf", &hidden(&account, "csrf"))];
    let response = post_form(
        &browser,
        &page_url(&app, "/account/recovery-codes"),
        &fields,
    )
    .await;
    assert_eq!(response.status(), 200);
    assert_page(&response);
    let html = response.text().await.unwrap();
    assert!(html.contains("Your new recovery codes"), "{html}");
    let second = codes_of(&html);
    assert_eq!(second.len(), 10);
    assert!(first.iter().all(|code| !second.contains(code)));

    let acme = acme();
    let records = app.store.tenant(&acme);
    let sub = &seeded.alice_sub;
    let now = app.clock_now();
    for old in &first {
        assert!(!records
            .redeem_recovery_code(sub, &recovery_hash(sub, old), now)
            .await
            .unwrap());
    }
    assert!(records
        .redeem_recovery_code(sub, &recovery_hash(sub, &second[3]), now)
        .await
        .unwrap());
    assert_eq!(records.remaining_recovery_codes(sub).await.unwrap(), 9);
    let account = account_page(&app, &browser, "alice").await;
    assert!(account.contains("<dt>Recovery codes left</dt>\n  <dd>9</dd>"));
    assert!(
        audit_kinds(&app)
            .await
            .iter()
            .filter(|k| *k == "mfa.recovery_codes.generated")
            .count()
            == 2
    );
}
