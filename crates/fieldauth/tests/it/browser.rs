//! A headless Chromium driven over WebDriver, for tests that use the pages as a person does:
//! find a field by its label, type, choose, press a button by its text, read where the browser
//! landed. Debian's `chromium` and `chromium-driver` packages provide the two programs; without
//! them a test is skipped, loudly, or fails under `FIELDAUTH_TEST_STRICT=1`.

use std::collections::HashMap;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use axum::response::{Html, Redirect};
use axum::routing::{get, post};
use axum::{Form, Router};
use fantoccini::elements::Element;
use fantoccini::wd::Capabilities;
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::json;

const NOT_INSTALLED: &str =
    "Chromium and chromedriver are not installed (apt-get install chromium chromium-driver)";

/// How long chromedriver may take to answer its `/status`.
const DRIVER_START: Duration = Duration::from_secs(10);

/// A page that has not loaded by then fails the test instead of hanging it.
const PAGE_LOAD: Duration = Duration::from_secs(20);

/// How often to look again while waiting.
const POLL: Duration = Duration::from_millis(20);

/// One chromedriver and its one headless Chromium, with a fresh profile.
pub struct Browser {
    client: Client,
    chromedriver: Child,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts chromedriver on a free loopback port and opens a session in headless Chromium.
    /// `None` (after `skip_or_fail`) when the two programs are not installed.
    pub async fn launch() -> Option<Browser> {
        let (Some(chromedriver), Some(chromium)) = (
            program("/usr/bin/chromedriver", "chromedriver"),
            program("/usr/bin/chromium", "chromium"),
        ) else {
            store::testing::skip_or_fail(NOT_INSTALLED);
            return None;
        };

        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("no free loopback port for chromedriver")
            .port();
        let child = Command::new(&chromedriver)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its own process group, so that Drop can take the browser down with it.
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", chromedriver.display()));
        // From here on, a panic stops chromedriver through Drop.
        let mut starting = Starting(Some(child));
        let driver_url = format!("http://127.0.0.1:{port}");
        wait_until_ready(&driver_url, starting.child()).await;

        let profile = tempfile::tempdir().expect("no temporary directory for the profile");
        let mut capabilities = Capabilities::new();
        capabilities.insert("browserName".into(), json!("chrome"));
        capabilities.insert(
            "timeouts".into(),
            json!({ "pageLoad": PAGE_LOAD.as_millis() as u64 }),
        );
        capabilities.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": chromium,
                "args": [
                    "--headless=new",
                    // Tests run as root, where Chromium's sandbox cannot start.
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-dev-shm-usage",
                    // No internet here: no background fetches to be refused.
                    "--disable-quic",
                    "--no-first-run",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    format!("--user-data-dir={}", profile.path().display()),
                ],
            }),
        );
        let client = ClientBuilder::new(HttpConnector::new())
            .capabilities(capabilities)
            .connect(&driver_url)
            .await
            .unwrap_or_else(|e| panic!("chromedriver at {driver_url} opened no session: {e}"));

        Some(Browser {
            client,
            chromedriver: starting.take(),
            _profile: profile,
        })
    }

    /// Ends the session, which quits Chromium; Drop then stops chromedriver.
    pub async fn close(self) {
        self.client
            .clone()
            .close()
            .await
            .expect("closing the WebDriver session");
    }

    /// Opens `url` and waits for it to load.
    pub async fn goto(&self, url: &str) {
        self.client
            .goto(url)
            .await
            .unwrap_or_else(|e| panic!("cannot open {url}: {e}"));
    }

    pub async fn current_url(&self) -> url::Url {
        self.client.current_url().await.expect("current URL")
    }

    /// The page's visible text, as a person reads it.
    pub async fn page_text(&self) -> String {
        self.client
            .find(Locator::Css("body"))
            .await
            .expect("the page has no <body>")
            .text()
            .await
            .expect("text of <body>")
    }

    /// Replaces the value of the `<input>` whose `<label>` reads exactly `label`.
    pub async fn fill_by_label(&self, label: &str, value: &str) {
        let input = self.input_labelled(label).await;
        input.clear().await.expect("clearing the input");
        input.send_keys(value).await.expect("typing into the input");
    }

    /// Clicks the radio button whose `<label>` reads exactly `label`.
    pub async fn choose_radio_by_label(&self, label: &str) {
        let radio = self.input_labelled(label).await;
        let kind = radio.attr("type").await.expect("type of the input");
        assert_eq!(
            kind.as_deref(),
            Some("radio"),
            "the input labelled {label:?} is not a radio button"
        );
        radio.click().await.expect("clicking the radio button");
        assert!(
            radio
                .is_selected()
                .await
                .expect("state of the radio button"),
            "the radio button labelled {label:?} did not become selected"
        );
    }

    /// Clicks the one `<button>` whose visible text is exactly `text` and waits for the page
    /// that loads; a click that loads no page within `PAGE_LOAD` fails the test.
    pub async fn click_button(&self, text: &str) {
        let button = self.one_with_text("button", text).await;
        let page = self
            .client
            .find(Locator::Css("html"))
            .await
            .expect("the page has no <html>");
        button
            .click()
            .await
            .unwrap_or_else(|e| panic!("clicking the button {text:?}: {e}"));

        // Chromedriver answers the click before the form's navigation has begun: wait until
        // the old document is gone (its elements go stale), then until the new one has loaded.
        // Not for a new URL: a form that posts to its own page keeps it.
        let deadline = Instant::now() + PAGE_LOAD;
        loop {
            match page.tag_name().await {
                Err(e) if e.is_stale_element_reference() => break,
                // Under load Chromium may report the same thing as an inspector error.
                Err(e) if e.to_string().contains("does not belong to the document") => break,
                Err(e) => panic!("after clicking {text:?}: {e}"),
                Ok(_) if Instant::now() > deadline => {
                    panic!("clicking {text:?} loaded no new page within {PAGE_LOAD:?}")
                }
                Ok(_) => tokio::time::sleep(POLL).await,
            }
        }
        loop {
            let state = self
                .client
                .execute("return document.readyState", vec![])
                .await
                .unwrap_or_else(|e| panic!("after clicking {text:?}: {e}"));
            if state == "complete" {
                return;
            }
            if Instant::now() > deadline {
                panic!("the page after clicking {text:?} did not load within {PAGE_LOAD:?}");
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Gives the browser a virtual authenticator (WebAuthn Level 2 §11.2, through
    /// chromedriver): CTAP2, built in, with resident keys and user verification that always
    /// succeeds, so passkey ceremonies run without a person.
    pub async fn add_virtual_authenticator(&self) {
        self.client
            .issue_cmd(AddVirtualAuthenticator)
            .await
            .expect("adding a virtual authenticator");
    }

    /// Saves what the browser shows, to look at when a test fails.
    pub async fn screenshot_png(&self, path: impl AsRef<Path>) {
        let path = path.as_ref();
        let png = self.client.screenshot().await.expect("screenshot");
        std::fs::write(path, png).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    }

    /// The `<input>` that the `<label for=..>` with exactly this visible text points at.
    async fn input_labelled(&self, label: &str) -> Element {
        let tag = self.one_with_text("label", label).await;
        let id = tag
            .attr("for")
            .await
            .expect("for attribute of the label")
            .unwrap_or_else(|| panic!("the label {label:?} has no `for` attribute"));
        let input = self
            .client
            .find(Locator::Id(&id))
            .await
            .unwrap_or_else(|e| panic!("the label {label:?} is for #{id}, which is absent: {e}"));
        let name = input.tag_name().await.expect("tag name");
        assert_eq!(name, "input", "the label {label:?} is for a <{name}>");
        input
    }

    /// The one element matching `css` whose visible text is exactly `text`; none, or two
    /// that a person could not tell apart, fail the test.
    async fn one_with_text(&self, css: &str, text: &str) -> Element {
        let mut found = Vec::new();
        for element in self.client.find_all(Locator::Css(css)).await.expect(css) {
            if element.text().await.expect("element text") == text {
                found.push(element);
            }
        }
        if found.len() != 1 {
            let url = self.current_url().await;
            panic!(
                "{} <{css}> elements read {text:?} on {url}; want exactly one",
                found.len()
            );
        }
        found.remove(0)
    }
}

/// WebDriver's Add Virtual Authenticator command, which fantoccini does not offer.
#[derive(Debug)]
struct AddVirtualAuthenticator;

impl fantoccini::wd::WebDriverCompatibleCommand for AddVirtualAuthenticator {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        let session = session_id.expect("a WebDriver session");
        base_url.join(&format!("session/{session}/webauthn/authenticator"))
    }

    fn method_and_body(&self, _: &url::Url) -> (axum::http::Method, Option<String>) {
        let options = json!({
            "protocol": "ctap2",
            "transport": "internal",
            "hasResidentKey": true,
            "hasUserVerification": true,
            "isUserVerified": true,
            "isUserConsenting": true,
        });
        (axum::http::Method::POST, Some(options.to_string()))
    }
}

impl Drop for Browser {
    /// Stops chromedriver and, with it, any Chromium that `close` did not quit.
    fn drop(&mut self) {
        kill_group(&mut self.chromedriver);
    }
}

/// Chromedriver before the session is open: stopped if opening it panics.
struct Starting(Option<Child>);

impl Starting {
    fn child(&mut self) -> &mut Child {
        self.0.as_mut().expect("chromedriver already handed over")
    }

    fn take(&mut self) -> Child {
        self.0.take().expect("chromedriver already handed over")
    }
}

impl Drop for Starting {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            kill_group(child);
        }
    }
}

/// SIGKILL to the process group that chromedriver leads (Chromium and its helpers are in it),
/// then reaps chromedriver.
fn kill_group(child: &mut Child) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    let _ = child.kill();
    let _ = child.wait();
}

/// `fixed` if it exists, else `name` found on `PATH`.
fn program(fixed: &str, name: &str) -> Option<PathBuf> {
    let fixed = PathBuf::from(fixed);
    if fixed.is_file() {
        return Some(fixed);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// Waits until chromedriver's `/status` says it is ready, or fails the test.
async fn wait_until_ready(driver_url: &str, chromedriver: &mut Child) {
    let http = reqwest::Client::new();
    let deadline = Instant::now() + DRIVER_START;
    loop {
        if let Ok(response) = http.get(format!("{driver_url}/status")).send().await {
            if let Ok(status) = response.json::<serde_json::Value>().await {
                if status["value"]["ready"] == json!(true) {
                    return;
                }
            }
        }
        if let Ok(Some(exit)) = chromedriver.try_wait() {
            panic!("chromedriver exited before answering at {driver_url}: {exit}");
        }
        if Instant::now() > deadline {
            panic!("chromedriver did not answer at {driver_url}/status within {DRIVER_START:?}");
        }
        tokio::time::sleep(POLL).await;
    }
}

// The harness on a page of its own, so that it is proven before fieldauth has pages.

/// Two text fields and two buttons, so that a helper taking the first it sees types into the
/// wrong field or presses the wrong button; a username already typed, so that filling must
/// replace it; the first radio checked, so that choosing the second shows.
const SIGN_IN: &str = r#"<!doctype html>
<html><head><title>Sign in</title></head><body>
<form method="post" action="/done">
  <label for="n">Nickname</label> <input id="n" name="nickname">
  <label for="u">Username</label> <input id="u" name="username" value="typed-over">
  <fieldset><legend>Send the code by</legend>
    <input type="radio" id="c1" name="choice" value="sms" checked><label for="c1">Text message</label>
    <input type="radio" id="c2" name="choice" value="email"><label for="c2">Email</label>
  </fieldset>
  <button type="button">Cancel</button>
  <button type="submit">Sign in</button>
</form>
</body></html>"#;

/// The form's target: 303 to `/landed` with what was submitted.
async fn done(Form(form): Form<HashMap<String, String>>) -> Redirect {
    let field = |name: &str| form.get(name).map(String::as_str).unwrap_or_default();
    let query = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("user", field("username"))
        .append_pair("choice", field("choice"))
        .finish();
    Redirect::to(&format!("/landed?{query}"))
}

/// The harness itself: a page rendered, a field found by its label and typed over, a radio
/// chosen by its label, a button pressed by its text, the POST's 303 followed, a screenshot.
#[tokio::test]
async fn chromium_renders_a_page_and_submits_a_form() {
    let app = Router::new()
        .route("/", get(|| async { Html(SIGN_IN) }))
        .route("/done", post(done))
        .route(
            "/landed",
            get(|| async { Html("<!doctype html><p>You have landed.</p>") }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let Some(browser) = Browser::launch().await else {
        return;
    };
    browser.goto(&format!("{origin}/")).await;
    assert_eq!(
        browser.page_text().await,
        "Nickname Username\nSend the code by\nText message Email\nCancel Sign in"
    );

    browser.fill_by_label("Username", "ada lovelace&co").await;
    browser.choose_radio_by_label("Email").await;
    browser.click_button("Sign in").await;

    let landed = browser.current_url().await;
    assert_eq!(
        landed.as_str(),
        format!("{origin}/landed?user=ada+lovelace%26co&choice=email")
    );
    assert_eq!(landed.path(), "/landed");
    let query: Vec<(String, String)> = landed.query_pairs().into_owned().collect();
    assert_eq!(
        query,
        [
            ("user".to_owned(), "ada lovelace&co".to_owned()),
            ("choice".to_owned(), "email".to_owned()),
        ]
    );
    assert_eq!(browser.page_text().await, "You have landed.");

    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("landed.png");
    browser.screenshot_png(&png).await;
    assert_eq!(std::fs::read(&png).unwrap()[..8], *b"\x89PNG\r\n\x1a\n");
    browser.close().await;
}
