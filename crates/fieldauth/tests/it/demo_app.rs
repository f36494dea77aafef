//! `fieldauth demo`'s demo app: started as the binary starts it (`demo::start`, on port 0),
//! opened at the URL the walkthrough prints, and used as a person uses it: sign in, Allow,
//! read the decoded claims, userinfo and the jobs, refresh, revoke, start again with the
//! other organization. Then the same over plain HTTP for what a browser cannot see: the
//! status of a refused callback, and that the page's HTML never holds a raw token.

use std::sync::Arc;
use std::time::Duration;

use fieldauth::config::ServeConfig;
use fieldauth::demo::{self, DemoListeners, RunningDemo};
use fieldauth::demo_records::{ELECTRICAL, PLUMBING};
use fieldauth::serve::Listeners;
use jose::{Clock, ManualClock, SystemClock};
use oauth::{Issuer, OsRandom};
use store::testing::TestDatabase;
use store::{Store, TenantId};
use tokio::net::TcpListener;

use crate::browser::Browser;
use crate::flow::{hidden, location_params, param, post_form};
use crate::helpers::on_both_backends;

const CSP: &str = "default-src 'self'; frame-ancestors 'none'";

/// A demo started through `demo::start`, what its walkthrough printed, and the seeded ids.
struct Demo {
    running: RunningDemo,
    store: Store,
    _db: TestDatabase,
    issuer: String,
    /// The demo app's URL, as the walkthrough prints it.
    app_url: String,
    alice_password: String,
    alice_sub: String,
    /// organization_guid by name.
    organizations: Vec<(String, String)>,
}

impl Demo {
    async fn start(db: TestDatabase) -> Demo {
        let auth = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let api = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let issuer = format!("http://{}", auth.local_addr().unwrap());
        let config = ServeConfig {
            issuer: Issuer::parse(&issuer).unwrap(),
            api_url: format!("http://{}", api.local_addr().unwrap()),
            auth_listen: auth.local_addr().unwrap(),
            api_listen: api.local_addr().unwrap(),
            key_reload_interval: Duration::from_secs(30),
            throttle: oauth::ThrottlePolicy::default(),
            api_cache_bytes: 8 << 20,
            metrics_listen: None,
            admin_listen: None,
            connections: fieldauth::connections::ConnectionLimits::default(),
            grant_max_age: 90 * 86_400,
            trusted_proxies: oauth::TrustedProxies::default(),
            cleanup_interval: None,
            audit_retention: 365 * 86_400,
            key_encryption: Default::default(),
            backchannel: Default::default(),
            mail: None,
        };
        let listeners = DemoListeners {
            server: Listeners {
                auth,
                api,
                metrics: None,
                admin: None,
            },
            app: TcpListener::bind("127.0.0.1:0").await.unwrap(),
        };
        let store = Store::connect(&db.url).await.unwrap();
        let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(SystemClock.now()));
        let running = demo::start(&config, listeners, store.clone(), clock, &OsRandom::new())
            .await
            .unwrap();

        let text = &running.walkthrough;
        let app_url = text
            .lines()
            .find_map(|l| l.strip_prefix("Open "))
            .and_then(|l| l.split(' ').next())
            .unwrap_or_else(|| panic!("no demo app URL in the walkthrough:\n{text}"))
            .to_owned();
        assert_eq!(app_url, format!("http://{}/", running.app.addr));
        let alice_password = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("user alice   password "))
            .and_then(|l| l.split(' ').next())
            .unwrap()
            .to_owned();

        let tenant_id = TenantId::parse("demo").unwrap();
        let tenant = store.tenant(&tenant_id);
        let alice_sub = tenant
            .find_user_by_username("alice")
            .await
            .unwrap()
            .unwrap()
            .user_id;
        let organizations = tenant
            .list_organizations()
            .await
            .unwrap()
            .into_iter()
            .map(|o| (o.name, o.organization_guid))
            .collect();
        Demo {
            running,
            store,
            _db: db,
            issuer,
            app_url,
            alice_password,
            alice_sub,
            organizations,
        }
    }

    fn guid(&self, organization: &str) -> &str {
        &self
            .organizations
            .iter()
            .find(|(name, _)| name == organization)
            .unwrap()
            .1
    }

    async fn stop(self) {
        self.running.shutdown().await;
        self.store.close().await;
    }
}

/// The text between the line `heading` and the next of `Jobs`, `ID token`, `Access token`,
/// `Userinfo` (the signed-in page's sections, in that order).
fn section<'t>(page: &'t str, heading: &str) -> &'t str {
    let start = page
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("no section {heading:?} in:\n{page}"))
        + heading.len()
        + 2;
    let rest = &page[start..];
    let end = ["\nID token\n", "\nAccess token\n", "\nUserinfo\n"]
        .iter()
        .filter_map(|next| rest.find(next))
        .min()
        .unwrap_or(rest.len());
    &rest[..end]
}

/// The value in a claims table's row `name`, as WebDriver reads it (cells joined by a space;
/// claim names have none).
fn claim<'t>(section: &'t str, name: &str) -> &'t str {
    section
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no claim {name:?} in:\n{section}"))
}

/// The job titles in the Jobs table: the rows that begin with a demo job's title.
fn job_titles(page: &str) -> Vec<&'static str> {
    let known: Vec<&'static str> = [trade_titles(&PLUMBING), trade_titles(&ELECTRICAL)].concat();
    section(page, "Jobs")
        .lines()
        .filter_map(|l| {
            known
                .iter()
                .find(|t| l.starts_with(&format!("{t} ")))
                .copied()
        })
        .collect()
}

fn trade_titles(trade: &fieldauth::demo_records::Trade) -> Vec<&'static str> {
    trade.work.iter().flat_map(|(_, titles)| *titles).collect()
}

const ALL_SCOPES: &str =
    "openid profile email offline_access jobs workOrders customers invoices employees";

/// Signed in as alice with `organization`: the page says so and shows the claims of both
/// tokens, userinfo, and that organization's jobs (only its own).
fn assert_signed_in_page(demo: &Demo, page: &str, organization: &str) {
    assert!(
        page.starts_with(&format!(
            "Signed in as Alice Anders\nalice for {organization}, through the public client demo-spa"
        )),
        "{page}"
    );
    let id = section(page, "ID token");
    assert_eq!(claim(id, "sub"), demo.alice_sub);
    assert_eq!(claim(id, "aud"), "demo-spa");
    assert_eq!(claim(id, "iss"), demo.issuer);
    assert_eq!(claim(id, "preferred_username"), "alice");
    let access = section(page, "Access token");
    assert_eq!(claim(access, "sub"), demo.alice_sub);
    assert_eq!(claim(access, "organization_guid"), demo.guid(organization));
    assert_eq!(claim(access, "scope"), ALL_SCOPES);
    assert_eq!(claim(access, "client_id"), "demo-spa");
    let userinfo = section(page, "Userinfo");
    assert_eq!(claim(userinfo, "sub"), demo.alice_sub);
    assert_eq!(claim(userinfo, "email"), "alice@demo.fieldauth.example");

    assert!(
        section(page, "Jobs").starts_with(&format!(
            "{organization} has 6 jobs; the API's example query asks for the first 5:"
        )),
        "{page}"
    );
    let (own, other) = match organization {
        "Northwind Plumbing" => (trade_titles(&PLUMBING), trade_titles(&ELECTRICAL)),
        _ => (trade_titles(&ELECTRICAL), trade_titles(&PLUMBING)),
    };
    let titles = job_titles(page);
    assert_eq!(titles.len(), 5, "{page}");
    assert!(
        titles.iter().all(|t| own.contains(t) && !other.contains(t)),
        "{titles:?} are not all jobs of {organization}"
    );
}

/// From the printed URL to the jobs on the page, then refresh, revoke, a refused refresh,
/// and the other organization; in headless Chromium, on SQLite (the pages are the subject).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_signs_in_through_the_demo_app_and_sees_claims_userinfo_and_jobs() {
    let Some(browser) = Browser::launch().await else {
        return;
    };
    let demo = Demo::start(TestDatabase::sqlite()).await;

    browser.goto(&demo.app_url).await;
    let start = browser.page_text().await;
    assert!(start.starts_with("Dispatch board\n"), "{start}");
    browser.click_button("Sign in as alice").await;
    assert_eq!(
        browser.page_text().await,
        "Sign in\nto continue to Dispatch board (demo SPA)\nUsername\nPassword\nSign in"
    );
    browser.fill_by_label("Username", "alice").await;
    browser
        .fill_by_label("Password", &demo.alice_password)
        .await;
    browser.click_button("Sign in").await;
    browser.choose_radio_by_label("Northwind Plumbing").await;
    browser.click_button("Allow").await;

    // The callback exchanged the code and sent the browser on to the app's page.
    assert_eq!(browser.current_url().await.as_str(), demo.app_url);
    let page = browser.page_text().await;
    assert_signed_in_page(&demo, &page, "Northwind Plumbing");
    assert!(page.contains("\nSigned in: the code was exchanged for tokens.\n"));
    let first_jti = claim(section(&page, "Access token"), "jti").to_owned();

    browser.click_button("Refresh tokens").await;
    let page = browser.page_text().await;
    assert_signed_in_page(&demo, &page, "Northwind Plumbing");
    assert!(page.contains("\nTokens refreshed: the claims below are the new ones.\n"));
    assert_ne!(claim(section(&page, "Access token"), "jti"), first_jti);

    browser.click_button("Revoke").await;
    let page = browser.page_text().await;
    assert!(page.contains("\nRevoked.\nThe grant is revoked: its refresh token no longer works, and the API refuses its access token.\n"), "{page}");
    assert!(
        section(&page, "Jobs")
            .starts_with("the API answered 401 Unauthorized: Bearer error=\"invalid_token\""),
        "{page}"
    );

    browser.click_button("Refresh tokens").await;
    let refused = browser.page_text().await;
    assert!(
        refused.starts_with(
            "Refused by the authorization server\nThe token endpoint answered invalid_grant"
        ),
        "{refused}"
    );

    browser.goto(&demo.app_url).await;
    browser.click_button("Start again").await;
    // Still signed in at the server: straight to the consent page, to choose again.
    let consent = browser.page_text().await;
    assert!(
        consent.starts_with("Allow Dispatch board (demo SPA) to access your account?\n"),
        "{consent}"
    );
    browser.choose_radio_by_label("Summit Electric").await;
    browser.click_button("Allow").await;
    assert_eq!(browser.current_url().await.as_str(), demo.app_url);
    assert_signed_in_page(&demo, &browser.page_text().await, "Summit Electric");

    browser.close().await;
    demo.stop().await;
}

on_both_backends!(a_callback_with_another_state_is_refused_and_tokens_never_reach_the_page,);

/// RFC 6749 §10.12: a callback whose state is not this browser's is refused with a 400 page
/// and its code is not used; a good one is exchanged, and the page it leads to holds the
/// decoded claims but no raw token (nor the code), under the app's CSP.
async fn a_callback_with_another_state_is_refused_and_tokens_never_reach_the_page(
    db: TestDatabase,
) {
    let demo = Demo::start(db).await;
    let app = demo.app_url.trim_end_matches('/').to_owned();
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .cookie_store(true)
        .build()
        .unwrap();

    let start = browser.get(&demo.app_url).send().await.unwrap();
    assert_eq!(start.status(), 200);
    assert_page_headers(&start);

    let to_authorize = browser
        .get(format!("{app}/signin?login_hint=alice"))
        .send()
        .await
        .unwrap();
    assert_eq!(to_authorize.status(), 303);
    let cookie = to_authorize.headers()["set-cookie"].to_str().unwrap();
    assert!(
        cookie.starts_with("fieldauth-demo-app=")
            && cookie.ends_with("; Path=/; HttpOnly; SameSite=Lax"),
        "{cookie}"
    );
    let (base, query) = location_params(&to_authorize);
    assert_eq!(base, format!("{}/oauth/authorize", demo.issuer));
    let names: Vec<&str> = query.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        [
            "tenant",
            "response_type",
            "client_id",
            "redirect_uri",
            "scope",
            "code_challenge",
            "code_challenge_method",
            "state",
            "nonce",
            "login_hint"
        ]
    );
    assert_eq!(
        param(&query, "redirect_uri"),
        Some(&*format!("{app}/callback"))
    );

    let forged = browser
        .get(format!(
            "{app}/callback?code=demo.forged&state=another&iss={}",
            demo.issuer
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 400);
    assert_page_headers(&forged);
    let html = forged.text().await.unwrap();
    assert!(html.contains("<h1>Sign-in refused</h1>"), "{html}");
    assert!(
        html.contains("The callback&#39;s state does not match the sign-in this browser started"),
        "{html}"
    );

    // A sign-in of its own, through the server's forms, to the callback and the page.
    let to_authorize = browser
        .get(format!("{app}/signin?login_hint=alice"))
        .send()
        .await
        .unwrap();
    let authorize_url = to_authorize.headers()["location"]
        .to_str()
        .unwrap()
        .to_owned();
    let sign_in_page = browser.get(&authorize_url).send().await.unwrap();
    let sign_in_page = sign_in_page.text().await.unwrap();
    let consent_page = post_form(
        &browser,
        &format!("{}/oauth/signin", demo.issuer),
        &[
            ("tenant", &hidden(&sign_in_page, "tenant")),
            ("request", &hidden(&sign_in_page, "request")),
            ("csrf", &hidden(&sign_in_page, "csrf")),
            ("username", "alice"),
            ("password", &demo.alice_password),
        ],
    )
    .await
    .text()
    .await
    .unwrap();
    let mut consent = vec![
        ("tenant", hidden(&consent_page, "tenant")),
        ("request", hidden(&consent_page, "request")),
        ("csrf", hidden(&consent_page, "csrf")),
        ("decision", "allow".to_owned()),
        ("organization", demo.guid("Summit Electric").to_owned()),
    ];
    consent.extend(ALL_SCOPES.split(' ').map(|s| ("scope", s.to_owned())));
    let fields: Vec<(&str, &str)> = consent.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let to_callback = post_form(
        &browser,
        &format!("{}/oauth/authorize", demo.issuer),
        &fields,
    )
    .await;
    assert_eq!(to_callback.status(), 302);
    let callback_url = to_callback.headers()["location"]
        .to_str()
        .unwrap()
        .to_owned();
    let (_, callback_params) = location_params(&to_callback);
    let code = param(&callback_params, "code").unwrap().to_owned();

    let landed = browser.get(&callback_url).send().await.unwrap();
    assert_eq!(landed.status(), 303);
    assert_eq!(landed.headers()["location"], "/");
    let page = browser.get(&demo.app_url).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert_page_headers(&page);
    let html = page.text().await.unwrap();
    assert!(
        html.contains("<h1>Signed in as Alice Anders</h1>"),
        "{html}"
    );
    assert!(
        html.contains(&format!(
            "<tr><th>organization_guid</th><td>{}</td></tr>",
            demo.guid("Summit Electric")
        )),
        "{html}"
    );
    assert!(!html.contains(&code), "the code is on the page");
    assert_eq!(
        token_shaped(&html),
        Vec::<&str>::new(),
        "raw tokens on the page"
    );
    assert!(!html.contains("<script"), "{html}");

    // The code was used once: the same callback again finds no sign-in in progress.
    let replayed = browser.get(&callback_url).send().await.unwrap();
    assert_eq!(replayed.status(), 400);
    assert!(replayed
        .text()
        .await
        .unwrap()
        .contains("<h1>No sign-in in progress</h1>"));

    // The buttons' forms need this session's CSRF token.
    for fields in [vec![], vec![("csrf", "not-the-token")]] {
        let refused = post_form(&browser, &format!("{app}/refresh"), &fields).await;
        assert_eq!(refused.status(), 403);
        assert!(refused
            .text()
            .await
            .unwrap()
            .contains("<h1>Form refused</h1>"));
    }
    demo.stop().await;
}

fn assert_page_headers(response: &reqwest::Response) {
    let headers = response.headers();
    assert_eq!(headers["content-security-policy"], CSP);
    assert_eq!(headers["content-type"], "text/html; charset=utf-8");
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(headers["referrer-policy"], "no-referrer");
}

/// Every run of token characters shaped like a JWT (three base64url parts, the first a JSON
/// object: `eyJ…`) or like a refresh token of the demo tenant (`demo.` and 64 characters, or
/// 43 in the earlier form).
fn token_shaped(html: &str) -> Vec<&str> {
    html.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'))
        .filter(|run| {
            let jwt = run.starts_with("eyJ") && run.split('.').count() == 3;
            let refresh = run
                .strip_prefix("demo.")
                .is_some_and(|rest| matches!(rest.len(), 43 | 64) && !rest.contains('.'));
            jwt || refresh
        })
        .collect()
}
