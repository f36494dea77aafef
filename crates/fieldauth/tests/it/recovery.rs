//! Forgotten passwords against a real SMTP server on loopback (Debian's `python3-aiosmtpd`,
//! started by each test, writing what it receives to a maildir): the "Forgot your
//! password?" link only with mail configured, the mail and its link, the link used once, a
//! reset that ends every session and grant, the same answer for an unknown username, and
//! the account's quota.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use secrecy::SecretString;
use store::testing::TestDatabase;
use store::{AuditFilter, TenantId};

use crate::flow::{
    assert_oauth_error, authorize_url, code_for, exchange, hidden, seed, signs_in, submit_password,
    token_request, CLIENT_ID, PASSWORD, TENANT,
};
use crate::helpers::{eventually, on_both_backends, TestApp};

on_both_backends!(
    without_mail_there_is_no_link_and_no_recovery_page,
    a_mailed_link_resets_the_password_once_and_ends_every_session_and_grant,
    every_username_gets_the_same_answer_and_an_account_gets_three_mails_an_hour,
);

const NEW_PASSWORD: &str = "a brand new passphrase";
/// The one answer of the recovery form.
const SENT: &str =
    "If an account with that username exists and has an email address, we sent a link";

/// aiosmtpd on a free loopback port, storing each message in a maildir; stopped on drop.
struct SmtpServer {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl SmtpServer {
    /// `None` (after `skip_or_fail`) when Debian's python3-aiosmtpd is not installed.
    fn start() -> Option<SmtpServer> {
        const PYTHON: &str = "/usr/bin/python3";
        let installed = Command::new(PYTHON)
            .args(["-c", "import aiosmtpd"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !installed {
            store::testing::skip_or_fail(
                "python3-aiosmtpd is not installed (apt-get install python3-aiosmtpd)",
            );
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(PYTHON)
            .args(["-m", "aiosmtpd", "-n", "-l"])
            .arg(format!("127.0.0.1:{port}"))
            .args(["-c", "aiosmtpd.handlers.Mailbox"])
            .arg(dir.path().join("mail"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let server = SmtpServer { child, port, dir };
        let deadline = std::time::Instant::now() + Duration::from_secs(15);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "aiosmtpd did not listen"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(server)
    }

    fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.port)
    }

    /// Every message received so far, raw.
    fn messages(&self) -> Vec<String> {
        let new: PathBuf = self.dir.path().join("mail").join("new");
        let Ok(entries) = std::fs::read_dir(&new) else {
            return Vec::new();
        };
        entries
            .map(|entry| std::fs::read_to_string(entry.unwrap().path()).unwrap())
            .collect()
    }
}

impl Drop for SmtpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A server whose mail goes to `smtp`.
async fn spawn_with_mail(db: TestDatabase, smtp: &SmtpServer) -> TestApp {
    let mailer = oauth::Mailer::new(
        &SecretString::from(smtp.url()),
        "Fieldauth <no-reply@example.com>",
    )
    .unwrap();
    TestApp::spawn_configured(db, oauth::ThrottlePolicy::default(), |config| {
        config.mail = Some(mailer)
    })
    .await
}

/// The password link in a raw message (quoted-printable or not).
fn link_in(message: &str, app: &TestApp) -> String {
    let text = message
        .replace("=\r\n", "")
        .replace("=\n", "")
        .replace("=3D", "=");
    let prefix = format!("{}/account/password?token={TENANT}.", app.issuer);
    let start = text
        .find(&prefix)
        .unwrap_or_else(|| panic!("no link in {message}"));
    text[start..]
        .split(|c: char| c.is_whitespace())
        .next()
        .unwrap()
        .to_owned()
}

/// Opens the recovery page from the sign-in page's link, as a person would: the form.
async fn recovery_form(app: &TestApp, browser: &reqwest::Client) -> String {
    let signin = browser
        .get(authorize_url(app, &[]))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let href = format!("href=\"/account/recover?tenant={TENANT}\"");
    assert!(signin.contains(&href), "no recovery link: {signin}");
    let response = browser
        .get(format!("{}/account/recover?tenant={TENANT}", app.issuer))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let header = |name: &str| response.headers()[name].to_str().unwrap().to_owned();
    assert!(header("content-security-policy").contains("frame-ancestors 'none'"));
    assert_eq!(header("cache-control"), "no-store");
    assert_eq!(header("referrer-policy"), "no-referrer");
    response.text().await.unwrap()
}

/// Submits the recovery form of `page` for `username`: the status and the page.
async fn ask_for_link(
    app: &TestApp,
    browser: &reqwest::Client,
    page: &str,
    username: &str,
) -> (u16, String) {
    let fields = [
        ("tenant", hidden(page, "tenant")),
        ("csrf", hidden(page, "csrf")),
        ("username", username.to_owned()),
    ];
    let response = browser
        .post(format!("{}/account/recover", app.issuer))
        .form(&fields)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

/// The details of the tenant's `account.recovery_requested` events, oldest first.
async fn recovery_events(app: &TestApp) -> Vec<(Option<String>, String)> {
    let tenant = TenantId::parse(TENANT).unwrap();
    let filter = AuditFilter {
        kind: Some("account.recovery_requested"),
        ..AuditFilter::default()
    };
    let mut events: Vec<_> = app
        .store
        .tenant(&tenant)
        .list_audit_events(&filter, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|e| (e.subject, e.detail))
        .collect();
    events.reverse();
    events
}

/// Waits until the trail has `n` recovery events: each request's work is done.
async fn wait_for_events(app: &TestApp, n: usize) -> Vec<(Option<String>, String)> {
    eventually(Duration::from_secs(20), || async {
        recovery_events(app).await.len() >= n
    })
    .await;
    recovery_events(app).await
}

/// The server's `/metrics` text.
async fn metrics(app: &TestApp) -> String {
    app.get(&format!("{}/metrics", app.metrics_url))
        .await
        .text()
        .await
        .unwrap()
}

async fn without_mail_there_is_no_link_and_no_recovery_page(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let browser = app.browser();
    let signin = browser
        .get(authorize_url(&app, &[]))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(signin.contains("action=\"/oauth/signin\""), "{signin}");
    assert!(!signin.contains("Forgot your password?"), "{signin}");
    assert!(!signin.contains("/account/recover"), "{signin}");
    let page = browser
        .get(format!("{}/account/recover?tenant={TENANT}", app.issuer))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 404);
    assert_eq!(page.headers()["cache-control"], "no-store");
    assert!(page.text().await.unwrap().contains("Page not found"));
    let post = browser
        .post(format!("{}/account/recover", app.issuer))
        .form(&[("tenant", TENANT), ("csrf", "x"), ("username", "alice")])
        .send()
        .await
        .unwrap();
    assert_eq!(post.status(), 404);
    app.stop().await;
}

async fn a_mailed_link_resets_the_password_once_and_ends_every_session_and_grant(db: TestDatabase) {
    let Some(smtp) = SmtpServer::start() else {
        return;
    };
    let app = spawn_with_mail(db, &smtp).await;
    let seeded = seed(&app).await;
    // Before: alice holds a browser session and a refresh token.
    let old_browser = app.browser();
    let code = code_for(
        &app,
        &old_browser,
        &[("scope", Some("openid offline_access"))],
    )
    .await;
    let tokens = exchange(&app, &code).await;
    let refresh_token = tokens["refresh_token"].as_str().unwrap().to_owned();

    let browser = app.browser();
    let form = recovery_form(&app, &browser).await;
    let (status, answer) = ask_for_link(&app, &browser, &form, "Alice").await;
    assert_eq!(status, 200);
    assert!(answer.contains(SENT), "{answer}");
    let events = wait_for_events(&app, 1).await;
    assert_eq!(
        events,
        vec![(Some(seeded.alice_sub.clone()), "link sent".to_owned())]
    );
    let messages = smtp.messages();
    assert_eq!(messages.len(), 1);
    let message = &messages[0];
    assert!(message.contains("To: alice@example.com"), "{message}");
    assert!(
        message.contains("From: Fieldauth <no-reply@example.com>"),
        "{message}"
    );
    assert!(
        message.contains("Subject: Reset your password"),
        "{message}"
    );
    let link = link_in(message, &app);
    assert_eq!(
        link.len(),
        format!("{}/account/password?token={TENANT}.", app.issuer).len() + 43,
        "256 bits in base64url: {link}"
    );

    // The link sets the password, once.
    let page = browser.get(&link).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let page = page.text().await.unwrap();
    let set = submit_password(&app, &browser, &page, NEW_PASSWORD, NEW_PASSWORD).await;
    assert_eq!(set.status(), 200);
    assert!(set.text().await.unwrap().contains("Password set"));
    let again = browser.get(&link).send().await.unwrap();
    assert_eq!(again.status(), 400);
    let replay = submit_password(&app, &browser, &page, NEW_PASSWORD, NEW_PASSWORD).await;
    assert_eq!(replay.status(), 400);

    // The reset ended the refresh token's grant and the old browser's session.
    let refresh = token_request(
        &app,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", &refresh_token),
            ("client_id", CLIENT_ID),
        ],
        None,
    )
    .await;
    assert_oauth_error(refresh, 400, "invalid_grant").await;
    let resumed = old_browser
        .get(authorize_url(&app, &[]))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(resumed.contains("action=\"/oauth/signin\""), "{resumed}");
    assert!(!resumed.contains("name=\"decision\""), "{resumed}");

    // The old password is refused, the new one works.
    assert!(
        !signs_in(&app, PASSWORD).await,
        "the old password still works"
    );
    app.clock.advance(60);
    assert!(signs_in(&app, NEW_PASSWORD).await, "the new password fails");

    // The trail has the reset; neither it nor the request's event holds the token.
    let tenant = TenantId::parse(TENANT).unwrap();
    let filter = AuditFilter {
        kind: Some("account.password_reset"),
        ..AuditFilter::default()
    };
    let resets = app
        .store
        .tenant(&tenant)
        .list_audit_events(&filter, 10)
        .await
        .unwrap();
    assert_eq!(resets.len(), 1);
    assert_eq!(
        resets[0].subject.as_deref(),
        Some(seeded.alice_sub.as_str())
    );
    let random = link.rsplit('.').next().unwrap();
    let all = app
        .store
        .tenant(&tenant)
        .list_audit_events(&AuditFilter::default(), 200)
        .await
        .unwrap();
    assert!(all.iter().all(|e| !e.detail.contains(random)));
    let metrics = metrics(&app).await;
    assert!(
        metrics.contains("fieldauth_recovery_mails_total{result=\"sent\"} 1"),
        "{metrics}"
    );
    app.stop().await;
}

async fn every_username_gets_the_same_answer_and_an_account_gets_three_mails_an_hour(
    db: TestDatabase,
) {
    let Some(smtp) = SmtpServer::start() else {
        return;
    };
    let app = spawn_with_mail(db, &smtp).await;
    let seeded = seed(&app).await;
    let browser = app.browser();
    let form = recovery_form(&app, &browser).await;

    // A form without its security token, or from another browser, is refused.
    let (status, refused) = ask_for_link(&app, &app.browser(), &form, "alice").await;
    assert_eq!(status, 400);
    assert!(refused.contains("security token"), "{refused}");
    let no_token = browser
        .post(format!("{}/account/recover", app.issuer))
        .form(&[("tenant", TENANT), ("username", "alice")])
        .send()
        .await
        .unwrap();
    assert_eq!(no_token.status(), 400);

    let (status, unknown) = ask_for_link(&app, &browser, &form, "nobody").await;
    assert_eq!(status, 200);
    assert!(unknown.contains(SENT), "{unknown}");
    assert_eq!(
        wait_for_events(&app, 1).await,
        vec![(
            Some("nobody".to_owned()),
            "unknown user: nothing sent".to_owned()
        )]
    );
    for n in 1..=3 {
        let (status, known) = ask_for_link(&app, &browser, &form, "alice").await;
        assert_eq!((status, &known), (200, &unknown), "the same answer");
        wait_for_events(&app, 1 + n).await;
        assert_eq!(smtp.messages().len(), n);
    }
    // A fourth within the hour: the same answer, no mail, one audit event.
    for _ in 0..2 {
        let (status, throttled) = ask_for_link(&app, &browser, &form, "alice").await;
        assert_eq!((status, &throttled), (200, &unknown));
    }
    let events = wait_for_events(&app, 5).await;
    assert_eq!(
        events[4],
        (
            Some(seeded.alice_sub.clone()),
            "throttled: nothing sent".to_owned()
        )
    );
    // The second refusal is only counted, not audited.
    eventually(Duration::from_secs(10), || async {
        metrics(&app)
            .await
            .contains("fieldauth_recovery_requests_total{result=\"throttled\"} 2")
    })
    .await;
    assert_eq!(recovery_events(&app).await.len(), 5);
    assert_eq!(smtp.messages().len(), 3);
    // Only the last link works: each replaced the one before.
    let mut links: Vec<String> = smtp.messages().iter().map(|m| link_in(m, &app)).collect();
    links.sort();
    links.dedup();
    assert_eq!(links.len(), 3);
    let live = {
        let mut live = Vec::new();
        for link in &links {
            if app.browser().get(link).send().await.unwrap().status() == 200 {
                live.push(link.clone());
            }
        }
        live
    };
    assert_eq!(live.len(), 1);
    // An hour later the account's quota has started over.
    app.clock.advance(3600);
    ask_for_link(&app, &browser, &form, "alice").await;
    wait_for_events(&app, 6).await;
    eventually(Duration::from_secs(10), || async {
        smtp.messages().len() == 4
    })
    .await;
    app.stop().await;
}
