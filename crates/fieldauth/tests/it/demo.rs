//! `fieldauth demo`'s seed: idempotent, with the users, organizations and clients the issue
//! names, and fresh credentials at every start that the walkthrough prints.

use std::time::Duration;

use fieldauth::config::ServeConfig;
use fieldauth::demo;
use oauth::{Issuer, OsRandom};
use secrecy::{ExposeSecret, SecretString};
use store::testing::TestDatabase;
use store::{ClientType, Store, TenantId};

use crate::helpers::{assert_refused, cli, on_both_backends};

on_both_backends!(seeding_twice_keeps_one_set_of_records_and_renews_credentials);

const NOW: i64 = 1_800_000_000;
const FIRST_CALLBACK: &str = "http://127.0.0.1:8400/callback";
/// The demo app listened elsewhere at the second start.
const SECOND_CALLBACK: &str = "http://127.0.0.1:41234/callback";

async fn seeding_twice_keeps_one_set_of_records_and_renews_credentials(db: TestDatabase) {
    let store = Store::connect(&db.url).await.unwrap();
    let random = OsRandom::new();
    let first = demo::seed(&store, &random, NOW, FIRST_CALLBACK)
        .await
        .unwrap();
    let second = demo::seed(&store, &random, NOW + 60, SECOND_CALLBACK)
        .await
        .unwrap();

    let id = TenantId::parse("demo").unwrap();
    let tenant = store.tenant(&id);
    assert_eq!(store.list_tenants().await.unwrap().len(), 1);
    let clients = tenant.list_clients().await.unwrap();
    let summary: Vec<_> = clients
        .iter()
        .map(|c| (c.client_id.as_str(), c.client_type))
        .collect();
    assert_eq!(
        summary,
        [
            ("demo-spa", ClientType::Public),
            ("demo-web", ClientType::Confidential)
        ]
    );
    // demo-spa's redirect URI follows the demo app to where it listens now.
    let redirect_uris: Vec<_> = clients.iter().map(|c| c.redirect_uris.clone()).collect();
    assert_eq!(
        redirect_uris,
        [[SECOND_CALLBACK], ["http://127.0.0.1:8500/callback"]]
    );
    let organizations = tenant.list_organizations().await.unwrap();
    assert_eq!(organizations.len(), 2);
    // Each organization has its own records, seeded once.
    for org in &organizations {
        let records = tenant.organization(&org.organization_guid);
        let counts = (
            records.count_employees(&Default::default()).await.unwrap(),
            records.count_customers(&Default::default()).await.unwrap(),
            records
                .count_work_orders(&Default::default())
                .await
                .unwrap(),
            records.count_jobs(&Default::default()).await.unwrap(),
            records.count_invoices(&Default::default()).await.unwrap(),
        );
        assert_eq!(counts, (4, 3, 3, 6, 3), "{}", org.name);
    }

    let alice = tenant
        .find_user_by_username("alice")
        .await
        .unwrap()
        .unwrap();
    let bob = tenant.find_user_by_username("bob").await.unwrap().unwrap();
    assert_eq!(
        tenant.organizations_of(&alice.user_id).await.unwrap().len(),
        2
    );
    assert_eq!(
        tenant.organizations_of(&bob.user_id).await.unwrap().len(),
        1
    );

    let verifies = |password: &SecretString, hash: &str| {
        oauth::password::verify_password(password, hash).unwrap()
    };
    assert!(verifies(&second.alice_password, &alice.password_hash));
    assert!(
        !verifies(&first.alice_password, &alice.password_hash),
        "the previous start's password is void"
    );
    assert!(verifies(&second.bob_password, &bob.password_hash));
    let web = &clients[1];
    assert!(oauth::secret::verify_secret(
        &second.web_client_secret,
        web.secret_hash.as_deref().unwrap()
    ));
    assert!(!oauth::secret::verify_secret(
        &first.web_client_secret,
        web.secret_hash.as_deref().unwrap()
    ));

    // The walkthrough's authorization URL carries the PKCE challenge of the verifier it prints.
    let config = ServeConfig {
        issuer: Issuer::parse("http://127.0.0.1:8080").unwrap(),
        api_url: "http://127.0.0.1:8081".into(),
        auth_listen: "127.0.0.1:8080".parse().unwrap(),
        api_listen: "127.0.0.1:8081".parse().unwrap(),
        key_reload_interval: Duration::from_secs(30),
        throttle: oauth::ThrottlePolicy::default(),
        api_cache_bytes: 0,
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
    let text = demo::walkthrough(&config, &second, "http://127.0.0.1:8400", &random).unwrap();
    // The demo app comes first; the curl walkthrough follows.
    let first_lines: Vec<&str> = text.lines().skip_while(|l| l.is_empty()).take(3).collect();
    assert_eq!(
        first_lines,
        [
            "fieldauth demo is running.",
            "",
            &*format!(
                "Open http://127.0.0.1:8400/ in a browser and sign in as alice (password {}).",
                second.alice_password.expose_secret()
            ),
        ]
    );
    assert!(text.contains(second.alice_password.expose_secret()));
    assert!(text.contains(second.web_client_secret.expose_secret()));
    let url = text
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("http://127.0.0.1:8080/oauth/authorize?"))
        .unwrap();
    let verifier = text
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("PKCE code_verifier for the token exchange: ")
        })
        .unwrap();
    let url = url::Url::parse(url).unwrap();
    let param = |name: &str| {
        url.query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
            .unwrap()
    };
    assert!(text
        .contains("curl -s http://127.0.0.1:8081/api -H \"Authorization: Bearer $ACCESS_TOKEN\""));
    assert!(text.contains(demo::API_EXAMPLE));
    assert_eq!(param("tenant"), "demo");
    assert_eq!(param("client_id"), "demo-spa");
    assert_eq!(param("redirect_uri"), FIRST_CALLBACK);
    assert_eq!(param("code_challenge_method"), "S256");
    assert_eq!(
        param("code_challenge"),
        oauth::pkce::s256_challenge(verifier)
    );
    store.close().await;
}

/// RFC 8252 §7.3: the demo app serves plain http, so it may listen on loopback only; the
/// refusal names the flag.
#[test]
fn a_demo_app_address_off_loopback_is_refused() {
    let db = TestDatabase::sqlite();
    let output = cli(&db, &["demo", "--demo-app-listen", "0.0.0.0:8400"], None);
    assert_refused(
        &output,
        "--demo-app-listen 0.0.0.0:8400: the demo app serves plain http, so it listens on a \
         loopback address only (127.0.0.1 or [::1])",
    );
}
