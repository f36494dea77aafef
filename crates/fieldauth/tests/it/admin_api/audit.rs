//! `/admin/v1/tenants/{tenant}/audit`: newest first, a page at a time, filtered by kind and
//! time; confined to the token's tenant; and `fieldauth audit list` reads the same listing.

use serde_json::Value;

use super::support::AdminClient;
use crate::helpers::{assert_refused, json_output, on_both_backends, TestApp};
use store::testing::TestDatabase;
use store::{NewAuditEvent, TenantId};

on_both_backends!(
    the_trail_lists_newest_first_in_pages_filtered_by_kind_and_time,
    a_tenant_token_reads_only_its_own_trail,
    bad_audit_queries_are_400_naming_the_field,
    the_cli_lists_the_same_trail_with_the_same_filters,
);

const T0: i64 = 1_700_000_000;

/// Tenants acme and globex; acme's trail: `e0` … `e5` one second apart, kinds alternating
/// `signin.failed` and `consent.given`; globex has one event of its own.
async fn seeded(app: &TestApp) {
    for id in ["acme", "globex"] {
        let tenant = TenantId::parse(id).unwrap();
        app.store.create_tenant(&tenant, id, T0).await.unwrap();
    }
    let acme = TenantId::parse("acme").unwrap();
    for i in 0..6 {
        let kind = if i % 2 == 0 {
            "signin.failed"
        } else {
            "consent.given"
        };
        let detail = format!("e{i}");
        let event = NewAuditEvent {
            kind,
            occurred_at: T0 + i,
            subject: Some("alice"),
            client_id: Some("spa"),
            address: Some("127.0.0.1"),
            detail: &detail,
        };
        app.store
            .tenant(&acme)
            .record_audit_event(&event)
            .await
            .unwrap();
    }
    let globex = TenantId::parse("globex").unwrap();
    let event = NewAuditEvent {
        kind: "signin.failed",
        occurred_at: T0,
        subject: None,
        client_id: None,
        address: None,
        detail: "globex's own",
    };
    app.store
        .tenant(&globex)
        .record_audit_event(&event)
        .await
        .unwrap();
}

fn details(body: &Value) -> Vec<String> {
    body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["detail"].as_str().unwrap().to_owned())
        .collect()
}

async fn the_trail_lists_newest_first_in_pages_filtered_by_kind_and_time(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seeded(&app).await;
    let admin = AdminClient::new(&app, "ops", None).await;
    let first = admin.get("/tenants/acme/audit?limit=4").await;
    assert_eq!(details(first.assert_ok()), ["e5", "e4", "e3", "e2"]);
    let event = &first.body["items"][0];
    assert_eq!(
        event.as_object().unwrap().keys().collect::<Vec<_>>(),
        [
            "address",
            "client_id",
            "detail",
            "kind",
            "occurred_at",
            "seq",
            "subject"
        ]
    );
    assert_eq!(event["occurred_at"], T0 + 5);
    assert_eq!(event["kind"], "consent.given");
    assert_eq!(event["subject"], "alice");
    assert_eq!(event["address"], "127.0.0.1");
    let cursor = first.body["next_cursor"].as_str().unwrap();
    let rest = admin
        .get(&format!("/tenants/acme/audit?limit=4&cursor={cursor}"))
        .await;
    assert_eq!(details(&rest.body), ["e1", "e0"]);
    assert!(rest.body.get("next_cursor").is_none());

    let failed = admin.get("/tenants/acme/audit?kind=signin.failed").await;
    assert_eq!(details(&failed.body), ["e4", "e2", "e0"]);
    // `since` inclusive, `until` exclusive; Unix seconds or RFC 3339.
    let window = admin
        .get(&format!(
            "/tenants/acme/audit?since={}&until=2023-11-14T22:13:24Z",
            T0 + 1
        ))
        .await;
    assert_eq!(details(&window.body), ["e3", "e2", "e1"]);
    let both = admin
        .get(&format!(
            "/tenants/acme/audit?kind=consent.given&since={}&limit=1",
            T0 + 2
        ))
        .await;
    assert_eq!(details(&both.body), ["e5"]);
    let cursor = both.body["next_cursor"].as_str().unwrap();
    let next = admin
        .get(&format!(
            "/tenants/acme/audit?kind=consent.given&since={}&limit=1&cursor={cursor}",
            T0 + 2
        ))
        .await;
    assert_eq!(details(&next.body), ["e3"]);
    let none = admin.get("/tenants/acme/audit?kind=no.such.kind").await;
    assert_eq!(details(&none.body), Vec::<String>::new());
    app.stop().await;
}

async fn a_tenant_token_reads_only_its_own_trail(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seeded(&app).await;
    let globex = AdminClient::new(&app, "globex-office", Some("globex")).await;
    globex
        .get("/tenants/acme/audit")
        .await
        .assert_problem(404, "not-found");
    let own = globex.get("/tenants/globex/audit").await;
    assert_eq!(details(own.assert_ok()), ["globex's own"]);
    let ops = AdminClient::new(&app, "ops", None).await;
    ops.get("/tenants/nowhere/audit")
        .await
        .assert_problem(404, "not-found");
    ops.with_token("")
        .get("/tenants/acme/audit")
        .await
        .assert_problem(401, "unauthorized");
    app.stop().await;
}

async fn bad_audit_queries_are_400_naming_the_field(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seeded(&app).await;
    let admin = AdminClient::new(&app, "ops", None).await;
    for (query, field) in [
        ("limit=0", "limit"),
        ("limit=201", "limit"),
        ("since=yesterday", "since"),
        ("until=2023-13-01T00:00:00Z", "until"),
        ("kind=Signin%20Failed", "kind"),
        ("cursor=%25%25", "cursor"),
    ] {
        let detail = admin
            .get(&format!("/tenants/acme/audit?{query}"))
            .await
            .assert_problem(400, "invalid-input");
        assert!(detail.contains(field), "{query}: {detail}");
    }
    admin
        .get("/tenants/acme/audit?limit=x")
        .await
        .assert_problem(400, "invalid-input");
    app.stop().await;
}

async fn the_cli_lists_the_same_trail_with_the_same_filters(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seeded(&app).await;
    let listed = |extra: &[&str]| -> Vec<String> {
        let mut args = vec!["audit", "list", "--tenant", "acme", "--json"];
        args.extend_from_slice(extra);
        let body = json_output(&app.cli(&args));
        body["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["kid"].is_null())
            .map(|e| e["detail"].as_str().unwrap().to_owned())
            .collect()
    };
    // Oldest first, as the CLI always listed.
    assert_eq!(listed(&[]), ["e0", "e1", "e2", "e3", "e4", "e5"]);
    assert_eq!(listed(&["--kind", "consent.given"]), ["e1", "e3", "e5"]);
    let since = (T0 + 2).to_string();
    assert_eq!(
        listed(&["--since", &since, "--until", "2023-11-14T22:13:24Z"]),
        ["e2", "e3"]
    );
    assert_eq!(
        listed(&["--kind", "signin.failed", "--limit", "2"]),
        ["e2", "e4"]
    );
    let bad = app.cli(&["audit", "list", "--tenant", "acme", "--since", "soon"]);
    assert_refused(&bad, "--since");
    app.stop().await;
}
