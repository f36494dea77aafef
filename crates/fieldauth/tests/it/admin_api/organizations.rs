//! `/admin/v1/tenants/{tenant}/organizations` and their members: each operation over HTTP and
//! through the CLI, a tenant token confined to its tenant, and a removed member's live tokens
//! refused at once.

use serde_json::{json, Value};
use store::testing::TestDatabase;

use super::support::AdminClient;
use crate::api_support::{setup, token};
use crate::flow::{assert_oauth_error, code_for, exchange};
use crate::helpers::{assert_ok, assert_refused, json_output, on_both_backends, TestApp};
use crate::node_support::userinfo;
use crate::refresh::refresh;

on_both_backends!(
    organizations_are_created_listed_read_renamed_and_deleted,
    members_are_added_listed_and_removed,
    a_tenant_token_cannot_reach_another_tenants_organizations,
    a_removed_member_loses_every_token_of_the_organization_at_once,
    a_deleted_organization_takes_its_records_and_its_grants,
    the_cli_administers_organizations_and_members,
);

const ORGS: &str = "/tenants/acme/organizations";

async fn tenant(admin: &AdminClient, id: &str) {
    admin
        .post("/tenants", json!({ "tenant": id }))
        .await
        .assert_ok();
}

fn names(body: &Value) -> Vec<String> {
    body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap().to_owned())
        .collect()
}

async fn audit_kinds(app: &TestApp, tenant: &str) -> Vec<String> {
    let mut events = app
        .store
        .tenant(&store::TenantId::parse(tenant).unwrap())
        .audit_events(50)
        .await
        .unwrap();
    events.sort_by_key(|e| e.seq);
    events.into_iter().map(|e| e.kind).collect()
}

async fn organizations_are_created_listed_read_renamed_and_deleted(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let admin = AdminClient::new(&app, "ops", None).await;
    tenant(&admin, "acme").await;
    let mut guids = Vec::new();
    for name in [
        "Delta 500",
        "Bravo HVAC",
        "Alpha Plumbing",
        "Charlie 50% Off",
    ] {
        let made = admin.post(ORGS, json!({ "name": name })).await;
        assert_eq!(made.status, 201, "{:?}", made.body);
        assert!(made.etag.is_some());
        assert_eq!(made.body["name"], name);
        let guid = made.body["organization_guid"].as_str().unwrap().to_owned();
        assert_eq!(guid.len(), 36, "a UUID: {guid}");
        guids.push(guid);
    }

    // By name, two per page.
    let first = admin.get(&format!("{ORGS}?limit=2")).await;
    assert_eq!(names(first.assert_ok()), ["Alpha Plumbing", "Bravo HVAC"]);
    let cursor = first.body["next_cursor"].as_str().unwrap();
    let rest = admin.get(&format!("{ORGS}?limit=2&cursor={cursor}")).await;
    assert_eq!(names(&rest.body), ["Charlie 50% Off", "Delta 500"]);
    assert!(rest.body.get("next_cursor").is_none());
    // `q` is case-insensitive, and its `%` is a percent sign, not a wildcard.
    let found = admin.get(&format!("{ORGS}?q=CHARLIE")).await;
    assert_eq!(names(&found.body), ["Charlie 50% Off"]);
    let found = admin.get(&format!("{ORGS}?q=50%25")).await;
    assert_eq!(names(&found.body), ["Charlie 50% Off"]);

    let path = format!("{ORGS}/{}", guids[1]);
    let read = admin.get(&path).await;
    assert_eq!(read.assert_ok()["name"], "Bravo HVAC");
    let stale = read.etag.clone().unwrap();
    let renamed = admin
        .patch(&path, json!({ "name": "Bravo Heating" }), Some(&stale))
        .await;
    assert_eq!(renamed.assert_ok()["name"], "Bravo Heating");
    assert_ne!(renamed.etag, read.etag);
    admin
        .patch(&path, json!({ "name": "Lost Update" }), Some(&stale))
        .await
        .assert_problem(412, "precondition-failed");
    let detail = admin
        .patch(&path, json!({ "name": " " }), None)
        .await
        .assert_problem(400, "invalid-input");
    assert!(detail.starts_with("name"), "{detail}");
    assert_eq!(admin.get(&path).await.body["name"], "Bravo Heating");

    assert_eq!(admin.delete(&path).await.status, 204);
    admin.get(&path).await.assert_problem(404, "not-found");
    admin.delete(&path).await.assert_problem(404, "not-found");
    admin
        .get(&format!("{ORGS}/not-a-guid"))
        .await
        .assert_problem(404, "not-found");
    assert_eq!(
        names(&admin.get(ORGS).await.body),
        ["Alpha Plumbing", "Charlie 50% Off", "Delta 500"]
    );
    let kinds = audit_kinds(&app, "acme").await;
    assert_eq!(
        kinds
            .iter()
            .filter(|k| k.starts_with("admin.organization."))
            .count(),
        6,
        "{kinds:?}"
    );
    assert!(kinds.contains(&"admin.organization.renamed".to_owned()));
    assert!(kinds.contains(&"admin.organization.deleted".to_owned()));
    app.stop().await;
}

async fn members_are_added_listed_and_removed(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let seeded = crate::flow::seed(&app).await;
    let admin = AdminClient::new(&app, "ops", None).await;
    let charlie = format!("{ORGS}/{}/members", seeded.charlie);
    let members = |body: &Value| -> Vec<String> {
        body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["username"].as_str().unwrap().to_owned())
            .collect()
    };
    assert!(members(admin.get(&charlie).await.assert_ok()).is_empty());
    let bob = "00000000-0000-4000-8000-000000000001";
    let carol = "00000000-0000-4000-8000-000000000002";
    for sub in [carol, bob] {
        let added = admin.put(&format!("{charlie}/{sub}"), None).await;
        assert_eq!(added.status, 204, "{:?}", added.body);
    }
    let again = admin.put(&format!("{charlie}/{bob}"), None).await;
    assert_eq!(again.status, 200, "adding a member again changes nothing");
    admin
        .put(&format!("{charlie}/no-such-user"), None)
        .await
        .assert_problem(404, "not-found");

    let listed = admin.get(&format!("{charlie}?limit=1")).await;
    assert_eq!(members(listed.assert_ok()), ["bob"]);
    assert_eq!(listed.body["items"][0]["sub"], bob);
    assert_eq!(listed.body["items"][0]["email"], "bob@example.com");
    assert_eq!(listed.body["items"][0]["name"], "bob Example");
    let cursor = listed.body["next_cursor"].as_str().unwrap();
    let rest = admin
        .get(&format!("{charlie}?limit=1&cursor={cursor}"))
        .await;
    assert_eq!(members(&rest.body), ["carol"]);

    assert_eq!(admin.delete(&format!("{charlie}/{bob}")).await.status, 204);
    admin
        .delete(&format!("{charlie}/{bob}"))
        .await
        .assert_problem(404, "not-found");
    assert_eq!(members(&admin.get(&charlie).await.body), ["carol"]);
    let gone = format!("{ORGS}/00000000-0000-4000-8000-0000000000ff/members");
    admin.get(&gone).await.assert_problem(404, "not-found");
    let kinds = audit_kinds(&app, "acme").await;
    let count = |kind: &str| kinds.iter().filter(|k| *k == kind).count();
    assert_eq!(count("admin.membership.added"), 2, "{kinds:?}");
    assert_eq!(count("admin.membership.removed"), 1, "{kinds:?}");
    app.stop().await;
}

async fn a_tenant_token_cannot_reach_another_tenants_organizations(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let seeded = crate::flow::seed(&app).await;
    let ops = AdminClient::new(&app, "ops", None).await;
    tenant(&ops, "globex").await;
    let globex = AdminClient::new(&app, "globex-office", Some("globex")).await;
    let one = format!("{ORGS}/{}", seeded.alpha);
    let member = format!("{one}/members/{}", seeded.alice_sub);
    for reply in [
        globex.get(ORGS).await,
        globex.post(ORGS, json!({ "name": "Mine" })).await,
        globex.get(&one).await,
        globex.patch(&one, json!({ "name": "Mine" }), None).await,
        globex.get(&format!("{one}/members")).await,
        globex.put(&member, None).await,
        globex.delete(&member).await,
        globex.delete(&one).await,
    ] {
        reply.assert_problem(404, "not-found");
    }
    assert_eq!(ops.get(&one).await.body["name"], "Alpha");
    let members = ops.get(&format!("{one}/members")).await;
    assert_eq!(members.body["items"].as_array().unwrap().len(), 2);
    globex
        .get("/tenants/globex/organizations")
        .await
        .assert_ok();
    app.stop().await;
}

/// Spec §1 and issue 22: removing a member revokes their grants for the organization, so the
/// refresh token is `invalid_grant` and the access token is refused by userinfo and the API;
/// their grants elsewhere stand.
async fn a_removed_member_loses_every_token_of_the_organization_at_once(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let seeded = setup(&app).await;
    let admin = AdminClient::new(&app, "ops", None).await;
    let code = code_for(
        &app,
        &app.browser(),
        &[("scope", Some("openid offline_access jobs"))],
    )
    .await;
    let tokens = exchange(&app, &code).await;
    let refresh_token = tokens["refresh_token"].as_str().unwrap();
    let access_token = tokens["access_token"].as_str().unwrap();
    let browser = app.browser();
    let api_alpha = token(&app, &browser, &seeded.alpha, "customers").await;
    let api_bravo = token(&app, &browser, &seeded.bravo, "customers").await;
    assert_eq!(
        userinfo(&app.http, &app.issuer, access_token)
            .await
            .status(),
        200
    );

    let member = format!("{ORGS}/{}/members/{}", seeded.alpha, seeded.alice_sub);
    assert_eq!(admin.delete(&member).await.status, 204);

    assert_oauth_error(
        refresh(&app, refresh_token, &[]).await,
        400,
        "invalid_grant",
    )
    .await;
    assert_eq!(
        userinfo(&app.http, &app.issuer, access_token)
            .await
            .status(),
        401
    );
    let query = json!({ "query": "{ customers { totalCount } }" });
    let api = |token: String| {
        let request = app
            .http
            .post(format!("{}/api", app.api_url))
            .bearer_auth(token)
            .json(&query);
        async move { request.send().await.unwrap().status() }
    };
    assert_eq!(api(api_alpha).await, 401);
    assert_eq!(
        api(api_bravo).await,
        200,
        "another organization's grant stands"
    );

    // The grants are revoked, not merely unusable: adding her back revives none of them.
    assert_eq!(admin.put(&member, None).await.status, 204);
    assert_oauth_error(
        refresh(&app, refresh_token, &[]).await,
        400,
        "invalid_grant",
    )
    .await;
    let grants = admin
        .get(&format!("/tenants/acme/users/{}/grants", seeded.alice_sub))
        .await;
    for grant in grants.assert_ok()["items"].as_array().unwrap() {
        let in_alpha = grant["organization_guid"] == seeded.alpha.as_str();
        assert_eq!(grant["revoked"], in_alpha, "{grant}");
    }
    app.stop().await;
}

/// The field-service tables, each with an `organization_guid`.
const FIELD_TABLES: [&str; 13] = [
    "employees",
    "shifts",
    "customers",
    "customer_contacts",
    "properties",
    "work_orders",
    "jobs",
    "job_assignments",
    "invoices",
    "invoice_lines",
    "payments",
    "record_numbers",
    "organization_data_versions",
];

async fn rows_of_organization(app: &TestApp, table: &str, guid: &str) -> i64 {
    let pool = sqlx::AnyPool::connect(&app.db.url).await.unwrap();
    let count: i64 = sqlx::query_scalar(&format!(
        "SELECT COUNT(*) FROM {table} WHERE organization_guid = $1"
    ))
    .bind(guid)
    .fetch_one(&pool)
    .await
    .unwrap();
    pool.close().await;
    count
}

async fn seed_records(app: &TestApp, guid: &str) {
    let tenant = store::TenantId::parse("acme").unwrap();
    let org = app.store.tenant(&tenant).organization(guid);
    let trade = &fieldauth::demo_records::PLUMBING;
    fieldauth::demo_records::seed_organization(&org, trade, app.clock_now())
        .await
        .unwrap();
}

/// Deleting an organization deletes its field-service records (whose foreign keys do not all
/// cascade) and memberships, and revokes its grants; another organization keeps its own.
async fn a_deleted_organization_takes_its_records_and_its_grants(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let seeded = setup(&app).await;
    let admin = AdminClient::new(&app, "ops", None).await;
    seed_records(&app, &seeded.alpha).await;
    seed_records(&app, &seeded.bravo).await;
    let code = code_for(
        &app,
        &app.browser(),
        &[("scope", Some("openid offline_access jobs"))],
    )
    .await;
    let tokens = exchange(&app, &code).await;
    let api_bravo = token(&app, &app.browser(), &seeded.bravo, "customers").await;

    let path = format!("{ORGS}/{}", seeded.alpha);
    assert_eq!(admin.delete(&path).await.status, 204);

    for table in FIELD_TABLES.iter().chain(&["memberships", "organizations"]) {
        assert_eq!(
            rows_of_organization(&app, table, &seeded.alpha).await,
            0,
            "{table}"
        );
    }
    for table in ["employees", "work_orders", "invoices", "payments"] {
        assert!(
            rows_of_organization(&app, table, &seeded.bravo).await > 0,
            "{table}"
        );
    }
    let refresh_token = tokens["refresh_token"].as_str().unwrap();
    assert_oauth_error(
        refresh(&app, refresh_token, &[]).await,
        400,
        "invalid_grant",
    )
    .await;
    let access_token = tokens["access_token"].as_str().unwrap();
    assert_eq!(
        userinfo(&app.http, &app.issuer, access_token)
            .await
            .status(),
        401
    );
    let response = app
        .http
        .post(format!("{}/api", app.api_url))
        .bearer_auth(&api_bravo)
        .json(&json!({ "query": "{ customers { totalCount } }" }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    app.stop().await;
}

async fn the_cli_administers_organizations_and_members(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let seeded = crate::flow::seed(&app).await;
    let made = json_output(&app.cli(&[
        "org", "create", "--tenant", "acme", "--name", "Echo", "--json",
    ]));
    let guid = made["organization_guid"].as_str().unwrap().to_owned();
    assert!(made["etag"].is_string());
    let listed =
        json_output(&app.cli(&["org", "list", "--tenant", "acme", "--q", "ECH", "--json"]));
    assert_eq!(
        listed["organizations"][0]["organization_guid"],
        guid.as_str()
    );
    let org = ["--tenant", "acme", "--org", guid.as_str()];
    let with = |command: &[&str], rest: &[&str]| {
        let args: Vec<&str> = command.iter().chain(&org).chain(rest).copied().collect();
        app.cli(&args)
    };
    let shown = json_output(&with(&["org", "show"], &["--json"]));
    assert_eq!(shown["name"], "Echo");
    let etag = shown["etag"].as_str().unwrap().to_owned();
    let renamed = json_output(&with(
        &["org", "rename"],
        &["--name", "Echo Electric", "--if-match", &etag, "--json"],
    ));
    assert_eq!(renamed["name"], "Echo Electric");
    assert_refused(
        &with(
            &["org", "rename"],
            &["--name", "Stale", "--if-match", &etag],
        ),
        "changed since it was read",
    );

    let added = json_output(&with(
        &["org", "add-member"],
        &["--username", "bob", "--json"],
    ));
    assert_eq!(added["sub"], "00000000-0000-4000-8000-000000000001");
    assert_ok(&with(&["org", "add-member"], &["--sub", &seeded.alice_sub]));
    let members = json_output(&with(&["org", "members"], &["--json"]));
    let usernames: Vec<&str> = members["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["username"].as_str().unwrap())
        .collect();
    assert_eq!(usernames, ["alice", "bob"]);
    assert_ok(&with(
        &["org", "remove-member"],
        &["--sub", &seeded.alice_sub],
    ));
    assert_ok(&with(&["org", "remove-member"], &["--username", "bob"]));
    assert_refused(
        &with(&["org", "remove-member"], &["--username", "bob"]),
        "\"bob\" is not a member of organization",
    );
    let deleted = json_output(&with(&["org", "delete"], &["--json"]));
    assert_eq!(deleted["deleted"], true);
    assert_refused(&with(&["org", "show"], &[]), "organization not found");
    app.stop().await;
}
