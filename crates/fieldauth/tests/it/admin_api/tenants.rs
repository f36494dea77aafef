//! `/admin/v1/tenants`: create, list, get, rename; what a tenant token may not do; ETags.

use serde_json::json;

use super::support::AdminClient;
use crate::helpers::{assert_ok, assert_refused, cli, json_output, on_both_backends, TestApp};
use store::testing::TestDatabase;

on_both_backends!(
    tenants_are_created_listed_read_and_renamed,
    a_tenant_token_sees_only_its_tenant,
    a_rename_with_a_stale_etag_is_412_and_changes_nothing,
    bad_tenant_input_is_400_naming_the_field,
    the_cli_shows_and_renames_tenants_through_the_same_rules,
);

async fn tenants_are_created_listed_read_and_renamed(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let admin = AdminClient::new(&app, "ops", None).await;
    let created = admin
        .post(
            "/tenants",
            json!({ "tenant": "acme", "name": "Acme Services" }),
        )
        .await;
    assert_eq!(created.status, 201);
    assert_eq!(created.body["tenant"], "acme");
    assert!(created.etag.is_some());
    admin
        .post("/tenants", json!({ "tenant": "acme" }))
        .await
        .assert_problem(409, "conflict");
    for id in ["beta", "gamma"] {
        admin
            .post("/tenants", json!({ "tenant": id }))
            .await
            .assert_ok();
    }

    // By id, two per page, then the rest.
    let first = admin.get("/tenants?limit=2").await;
    let ids = |body: &serde_json::Value| -> Vec<String> {
        body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["tenant"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(ids(&first.body), ["acme", "beta"]);
    let cursor = first.body["next_cursor"].as_str().unwrap();
    let rest = admin
        .get(&format!("/tenants?limit=2&cursor={cursor}"))
        .await;
    assert_eq!(ids(&rest.body), ["gamma"]);
    assert!(rest.body.get("next_cursor").is_none());
    let found = admin.get("/tenants?q=ACME%20serv").await;
    assert_eq!(ids(&found.body), ["acme"]);

    let read = admin.get("/tenants/acme").await;
    assert_eq!(read.body["name"], "Acme Services");
    let renamed = admin
        .patch(
            "/tenants/acme",
            json!({ "name": "Acme" }),
            read.etag.as_deref(),
        )
        .await;
    assert_eq!(renamed.assert_ok()["name"], "Acme");
    assert_ne!(renamed.etag, read.etag, "a change gives a new ETag");
    assert_eq!(admin.get("/tenants/acme").await.body["name"], "Acme");

    // Each change is one audit event naming the token, never its value.
    let events = app
        .store
        .tenant(&"acme".parse_tenant())
        .audit_events(10)
        .await
        .unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["admin.tenant.created", "admin.tenant.renamed"]);
    assert!(events[1].detail.contains("\"ops\""), "{}", events[1].detail);
    assert!(!events[1].detail.contains(&admin.token));
    app.stop().await;
}

async fn a_tenant_token_sees_only_its_tenant(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let ops = AdminClient::new(&app, "ops", None).await;
    for id in ["acme", "globex"] {
        ops.post("/tenants", json!({ "tenant": id }))
            .await
            .assert_ok();
    }
    let acme = AdminClient::new(&app, "acme-backoffice", Some("acme")).await;
    let listed = acme.get("/tenants").await;
    assert_eq!(listed.body["items"].as_array().unwrap().len(), 1);
    acme.get("/tenants/acme").await.assert_ok();
    acme.get("/tenants/globex")
        .await
        .assert_problem(404, "not-found");
    acme.get("/tenants/nowhere")
        .await
        .assert_problem(404, "not-found");
    acme.patch("/tenants/globex", json!({ "name": "Mine" }), None)
        .await
        .assert_problem(404, "not-found");
    acme.post("/tenants", json!({ "tenant": "initech" }))
        .await
        .assert_problem(403, "forbidden");
    assert_eq!(ops.get("/tenants/globex").await.body["name"], "globex");
    app.stop().await;
}

async fn a_rename_with_a_stale_etag_is_412_and_changes_nothing(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let admin = AdminClient::new(&app, "ops", None).await;
    admin
        .post("/tenants", json!({ "tenant": "acme" }))
        .await
        .assert_ok();
    let read = admin.get("/tenants/acme").await;
    let stale = read.etag.clone().unwrap();
    admin
        .patch("/tenants/acme", json!({ "name": "First" }), Some(&stale))
        .await
        .assert_ok();
    admin
        .patch("/tenants/acme", json!({ "name": "Second" }), Some(&stale))
        .await
        .assert_problem(412, "precondition-failed");
    admin
        .patch(
            "/tenants/acme",
            json!({ "name": "Second" }),
            Some("\"not-ours\""),
        )
        .await
        .assert_problem(412, "precondition-failed");
    assert_eq!(admin.get("/tenants/acme").await.body["name"], "First");
    admin
        .patch("/tenants/acme", json!({ "name": "Any" }), Some("*"))
        .await
        .assert_ok();
    app.stop().await;
}

async fn bad_tenant_input_is_400_naming_the_field(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let admin = AdminClient::new(&app, "ops", None).await;
    let detail = admin
        .post("/tenants", json!({ "tenant": "Not Valid" }))
        .await
        .assert_problem(400, "invalid-input");
    assert!(detail.starts_with("tenant"), "{detail}");
    let detail = admin
        .post("/tenants", json!({ "tenant": "acme", "name": "a\u{0}b" }))
        .await
        .assert_problem(400, "invalid-input");
    assert!(detail.starts_with("name"), "{detail}");
    admin
        .post("/tenants", json!({ "tenant": 7 }))
        .await
        .assert_problem(400, "invalid-input");
    admin
        .post("/tenants", json!({ "tenant": "acme", "extra": true }))
        .await
        .assert_problem(400, "invalid-input");
    for query in ["limit=0", "limit=201", "limit=x", "cursor=%25%25"] {
        admin
            .get(&format!("/tenants?{query}"))
            .await
            .assert_problem(400, "invalid-input");
    }
    app.stop().await;
}

async fn the_cli_shows_and_renames_tenants_through_the_same_rules(db: TestDatabase) {
    assert_ok(&cli(
        &db,
        &["tenant", "create", "acme", "--name", "Acme"],
        None,
    ));
    let shown = json_output(&cli(&db, &["tenant", "show", "acme", "--json"], None));
    assert_eq!(shown["name"], "Acme");
    let etag = shown["etag"].as_str().unwrap().to_owned();
    let rename = |name: &str, tag: &str| {
        cli(
            &db,
            &[
                "tenant",
                "rename",
                "acme",
                "--name",
                name,
                "--if-match",
                tag,
                "--json",
            ],
            None,
        )
    };
    let renamed = json_output(&rename("Acme Services", &etag));
    assert_eq!(renamed["name"], "Acme Services");
    assert_ne!(renamed["etag"], etag);
    assert_refused(&rename("Stale", &etag), "changed since it was read");
    assert_refused(
        &rename("a\u{7}b", "*"),
        "name must not contain control characters",
    );
    assert_refused(
        &cli(&db, &["tenant", "show", "nowhere"], None),
        "tenant not found",
    );
    let text = cli(&db, &["tenant", "show", "acme"], None);
    assert!(String::from_utf8(text.stdout)
        .unwrap()
        .contains("name: Acme Services"));
    // The trail names the CLI as the admin.
    let app_store = store::Store::connect(&db.url).await.unwrap();
    let events = app_store
        .tenant(&"acme".parse_tenant())
        .audit_events(10)
        .await
        .unwrap();
    assert_eq!(events.last().unwrap().kind, "admin.tenant.renamed");
    assert!(events.last().unwrap().detail.contains("\"cli\""));
    app_store.close().await;
}

/// Test shorthand: a tenant id known to be valid.
trait ParseTenant {
    fn parse_tenant(&self) -> store::TenantId;
}

impl ParseTenant for str {
    fn parse_tenant(&self) -> store::TenantId {
        store::TenantId::parse(self).unwrap()
    }
}
