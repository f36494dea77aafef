//! The authorization flow in headless Chromium, used as a person uses it: open the
//! authorization URL, type into the fields found by their labels, press the buttons by their
//! text, and read where the browser landed (RFC 6749 §4.1, RFC 9207). Only SQLite: the
//! backends are covered by the HTTP tests of the flow; here the pages are the subject.

use axum::response::Html;
use axum::routing::get;
use axum::Router;
use store::{NewClient, TenantId};

use crate::browser::Browser;
use crate::flow::{self, Seeded};
use crate::helpers::TestApp;

const CLIENT_ID: &str = "browser-app";
const CLIENT_NAME: &str = "Browser App";
/// `flow::authorize_url`'s defaults.
const STATE: &str = "state-123";
const NONCE: &str = "nonce-456";

/// A running server, its seeded tenant, a client whose callback a browser can reach, and the
/// browser. `None` when Chromium is not installed (the test is then skipped, loudly).
struct Flow {
    app: TestApp,
    seeded: Seeded,
    callback: String,
    browser: Browser,
}

impl Flow {
    async fn start() -> Option<Flow> {
        let browser = Browser::launch().await?;
        let app = TestApp::spawn(store::testing::TestDatabase::sqlite()).await;
        let seeded = flow::seed(&app).await;
        let callback = serve_callback().await;
        let acme = TenantId::parse(flow::TENANT).unwrap();
        let scopes = ["openid", "profile", "jobs"].map(str::to_owned);
        let client = NewClient {
            client_id: CLIENT_ID,
            name: CLIENT_NAME,
            secret_hash: None,
            redirect_uris: std::slice::from_ref(&callback),
            scopes: &scopes,
        };
        app.store
            .tenant(&acme)
            .create_client(&client, 0)
            .await
            .unwrap();
        Some(Flow {
            app,
            seeded,
            callback,
            browser,
        })
    }

    /// The authorization URL for this client and its callback.
    fn authorize_url(&self) -> String {
        flow::authorize_url(
            &self.app,
            &[
                ("client_id", Some(CLIENT_ID)),
                ("redirect_uri", Some(&self.callback)),
            ],
        )
    }

    /// Opens the authorization URL and checks that it is the sign-in page for this client.
    async fn open_sign_in(&self) {
        self.browser.goto(&self.authorize_url()).await;
        assert_eq!(
            self.browser.page_text().await,
            format!("Sign in\nto continue to {CLIENT_NAME}\nUsername\nPassword\nSign in"),
            "not the sign-in page"
        );
    }

    async fn sign_in(&self, username: &str, password: &str) {
        self.browser.fill_by_label("Username", username).await;
        self.browser.fill_by_label("Password", password).await;
        self.browser.click_button("Sign in").await;
    }

    /// Checks that the browser shows the consent page for alice, word for word: the client
    /// by name, the three requested scopes, and her organizations Alpha and Bravo (not
    /// Charlie, of which she is not a member).
    async fn assert_consent_page_for_alice(&self) {
        assert_eq!(
            self.browser.page_text().await,
            format!(
                "Allow {CLIENT_NAME} to access your account?\n\
                 Signed in as alice Example (alice)\n\
                 {CLIENT_NAME} asks to\n\
                 Confirm who you are (sign you in)\n\
                 See your name and username\n\
                 Jobs: job lists, assignments and completion reports\n\
                 Organization\n\
                 Alpha\n\
                 Bravo\n\
                 Allow\n\
                 Deny"
            ),
            "not the consent page"
        );
    }

    /// Where the browser is: the callback (origin and path) and its query parameters.
    async fn landed(&self) -> (String, Vec<(String, String)>) {
        let url = self.browser.current_url().await;
        let base = format!("{}{}", url.origin().ascii_serialization(), url.path());
        (base, url.query_pairs().into_owned().collect())
    }

    async fn finish(self) {
        self.browser.close().await;
        self.app.stop().await;
    }
}

/// A stand-in for the client's redirect target: GET `/callback` answers a plain page.
/// Returns its URL, `http://127.0.0.1:<port>/callback`.
async fn serve_callback() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let callback = format!("http://{}/callback", listener.local_addr().unwrap());
    let router = Router::new().route(
        "/callback",
        get(|| async { Html("<!doctype html><title>Callback</title><p>callback reached</p>") }),
    );
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    callback
}

fn names(params: &[(String, String)]) -> Vec<&str> {
    params.iter().map(|(name, _)| name.as_str()).collect()
}

/// RFC 6749 §4.1.2 and RFC 9207: signing in and allowing with the second organization chosen
/// brings the browser to the redirect URI with `code`, `state` and `iss` only, and the code
/// is bound to that organization, the client, the nonce and the approved scopes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_sign_in_choose_second_organization_allow_lands_with_code_and_state() {
    let Some(flow) = Flow::start().await else {
        return;
    };
    flow.open_sign_in().await;
    flow.sign_in("alice", flow::PASSWORD).await;
    flow.assert_consent_page_for_alice().await;

    flow.browser.choose_radio_by_label("Bravo").await;
    flow.browser.click_button("Allow").await;

    let (base, params) = flow.landed().await;
    assert_eq!(base, flow.callback);
    assert_eq!(names(&params), ["code", "state", "iss"]);
    assert_eq!(flow::param(&params, "state"), Some(STATE));
    assert_eq!(flow::param(&params, "iss"), Some(flow.app.issuer.as_str()));
    assert_eq!(flow.browser.page_text().await, "callback reached");

    let code = flow::param(&params, "code").unwrap();
    let random = code
        .strip_prefix("acme.")
        .unwrap_or_else(|| panic!("the code {code:?} does not start with the tenant"));
    assert_eq!(random.len(), 43, "code {code:?}");
    assert!(
        random
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
        "not base64url: {code:?}"
    );

    let acme = TenantId::parse(flow::TENANT).unwrap();
    let stored = flow
        .app
        .store
        .tenant(&acme)
        .find_authorization_code(&oauth::secret::hash_secret(random))
        .await
        .unwrap()
        .expect("the code in the redirect is not in the store");
    assert_eq!(stored.organization_guid, flow.seeded.bravo);
    assert_eq!(stored.client_id, CLIENT_ID);
    assert_eq!(stored.redirect_uri, flow.callback);
    assert_eq!(stored.user_id, flow.seeded.alice_sub);
    assert_eq!(stored.nonce.as_deref(), Some(NONCE));
    assert_eq!(stored.scope, "openid profile jobs");
    assert_eq!(stored.code_challenge, flow::CHALLENGE);
    assert_eq!(stored.redeemed_at, None);
    flow.finish().await;
}

/// RFC 6749 §4.1.2.1: Deny brings the browser to the redirect URI with
/// `error=access_denied`, the `state` and `iss`, and no code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_deny_lands_with_access_denied_and_state() {
    let Some(flow) = Flow::start().await else {
        return;
    };
    flow.open_sign_in().await;
    flow.sign_in("alice", flow::PASSWORD).await;
    flow.assert_consent_page_for_alice().await;

    flow.browser.click_button("Deny").await;

    let (base, params) = flow.landed().await;
    assert_eq!(base, flow.callback);
    assert_eq!(
        names(&params),
        ["error", "error_description", "state", "iss"]
    );
    assert_eq!(flow::param(&params, "error"), Some("access_denied"));
    assert_eq!(
        flow::param(&params, "error_description"),
        Some("the user denied access")
    );
    assert_eq!(flow::param(&params, "state"), Some(STATE));
    assert_eq!(flow::param(&params, "iss"), Some(flow.app.issuer.as_str()));
    assert_eq!(flow::param(&params, "code"), None);
    assert_eq!(flow.browser.page_text().await, "callback reached");
    flow.finish().await;
}

/// A wrong password shows the sign-in form again with a message and sends the browser
/// nowhere; after the one-second wait the throttle asks for (moved on the clock, not slept),
/// the right password reaches the consent page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_wrong_password_stays_on_sign_in_with_a_message() {
    let Some(flow) = Flow::start().await else {
        return;
    };
    flow.open_sign_in().await;
    flow.sign_in("alice", "not the password").await;

    let (base, _) = flow.landed().await;
    assert_eq!(base, format!("{}/oauth/signin", flow.app.issuer));
    assert_eq!(
        flow.browser.page_text().await,
        format!(
            "Sign in\nto continue to {CLIENT_NAME}\nIncorrect username or password.\n\
             Username\nPassword\nSign in"
        )
    );

    flow.app.clock.advance(1);
    flow.sign_in("alice", flow::PASSWORD).await;
    flow.assert_consent_page_for_alice().await;
    flow.finish().await;
}
