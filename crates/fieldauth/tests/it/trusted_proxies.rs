//! `--trusted-proxies` (issue 21): behind a trusted proxy, the sign-in throttle and the
//! audit trail count the address the proxy forwards, not the proxy's; from anyone else,
//! `Forwarded` and `X-Forwarded-For` change nothing.

use oauth::{ThrottlePolicy, TrustedProxies};
use store::testing::TestDatabase;
use store::TenantId;

use crate::flow::{seed, PASSWORD};
use crate::helpers::{on_both_backends, TestApp};
use crate::signin::attempt;

on_both_backends!(
    behind_a_trusted_proxy_the_forwarded_address_is_locked_not_the_proxy,
    forwarded_headers_from_an_untrusted_peer_are_ignored,
);

/// Three failures from one address lock it; accounts lock much later.
const POLICY: ThrottlePolicy = ThrottlePolicy {
    max_account_failures: 100,
    max_address_failures: 3,
    lock_seconds: 300,
    max_authorize_requests_per_address: 600,
};

async fn spawn(db: TestDatabase, proxies: &str) -> TestApp {
    let proxies = TrustedProxies::parse(proxies).unwrap();
    let app =
        TestApp::spawn_configured(db, POLICY, |config| config.trusted_proxies = proxies).await;
    seed(&app).await;
    app
}

/// Three wrong passwords for three usernames from `browser`, a minute apart.
async fn three_failures(app: &TestApp, browser: &reqwest::Client) {
    for username in ["bob", "carol", "nobody"] {
        let (status, html) = attempt(app, browser, username, "wrong").await;
        assert_eq!(status, 200, "{html}");
        app.clock.advance(60);
    }
}

/// The address each sign-in event of tenant `acme` recorded, oldest first.
async fn audited_addresses(app: &TestApp) -> Vec<String> {
    let tenant = TenantId::parse("acme").unwrap();
    let events = app.store.tenant(&tenant).audit_events(100).await.unwrap();
    let mut addresses: Vec<(i64, String)> = events
        .into_iter()
        .filter(|e| e.kind.starts_with("signin."))
        .map(|e| (e.seq, e.address.unwrap_or_default()))
        .collect();
    addresses.sort();
    addresses.into_iter().map(|(_, a)| a).collect()
}

async fn behind_a_trusted_proxy_the_forwarded_address_is_locked_not_the_proxy(db: TestDatabase) {
    // The tests connect from 127.0.0.1: that is the proxy. The client spoofs the leftmost
    // value; the proxies (one trusted hop, 10.0.0.2) appended the rest.
    let app = spawn(db, "127.0.0.1, 10.0.0.0/8").await;
    let attacker = app.browser_with(&[("x-forwarded-for", "192.0.2.99, 203.0.113.7, 10.0.0.2")]);
    three_failures(&app, &attacker).await;
    let (status, html) = attempt(&app, &attacker, "alice", PASSWORD).await;
    assert_eq!(status, 429, "the forwarded address is locked: {html}");
    // Another user behind the same proxy, named by RFC 7239 `Forwarded`, is not.
    let neighbour = app.browser_with(&[("forwarded", "for=203.0.113.8;proto=https")]);
    let (status, html) = attempt(&app, &neighbour, "alice", PASSWORD).await;
    assert_eq!(status, 200, "{html}");
    // Nor is the proxy itself.
    let (status, _) = attempt(&app, &app.browser(), "alice", PASSWORD).await;
    assert_eq!(status, 200);
    // The audit trail names the client each time, never the proxy or the spoofed value.
    assert_eq!(
        audited_addresses(&app).await,
        [
            "203.0.113.7",
            "203.0.113.7",
            "203.0.113.7",
            "203.0.113.7",
            "203.0.113.8",
            "127.0.0.1"
        ]
    );
    app.stop().await;
}

async fn forwarded_headers_from_an_untrusted_peer_are_ignored(db: TestDatabase) {
    // Only 10.0.0.0/8 is trusted; the tests connect from 127.0.0.1.
    let app = spawn(db, "10.0.0.0/8").await;
    for (n, spoofed) in ["198.51.100.1", "198.51.100.2", "198.51.100.3"]
        .into_iter()
        .enumerate()
    {
        let browser = app.browser_with(&[
            ("x-forwarded-for", spoofed),
            ("forwarded", &format!("for={spoofed}")),
        ]);
        let (status, _) = attempt(&app, &browser, ["bob", "carol", "nobody"][n], "wrong").await;
        assert_eq!(status, 200);
        app.clock.advance(60);
    }
    // All three counted against 127.0.0.1, whatever each claimed: it is locked, and a fresh
    // spoofed value does not get it out.
    let escape = app.browser_with(&[("x-forwarded-for", "198.51.100.4")]);
    let (status, _) = attempt(&app, &escape, "alice", PASSWORD).await;
    assert_eq!(status, 429);
    let addresses = audited_addresses(&app).await;
    assert_eq!(addresses.len(), 4, "{addresses:?}");
    assert!(addresses.iter().all(|a| a == "127.0.0.1"), "{addresses:?}");
    app.stop().await;
}
