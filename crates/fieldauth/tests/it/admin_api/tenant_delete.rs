//! `DELETE /admin/v1/tenants/{tenant}` and `fieldauth tenant delete`: every row of the tenant
//! goes, its tokens stop working, the admin tokens limited to it are revoked, other tenants
//! are untouched, and only an admin token of every tenant may do it.

use serde_json::json;
use store::testing::TestDatabase;

use super::support::AdminClient;
use crate::flow::{assert_oauth_error, code_for, exchange, seed};
use crate::helpers::{assert_refused, json_output, on_both_backends, TestApp};
use crate::node_support::userinfo;
use crate::refresh::refresh;

on_both_backends!(
    a_deleted_tenant_leaves_no_row_and_no_working_token,
    only_an_admin_of_every_tenant_deletes_a_tenant,
    the_cli_deletes_a_tenant,
);

/// Every table with a `tenant_id` column in the migrations.
const TENANT_TABLES: [&str; 34] = [
    "tenants",
    "clients",
    "users",
    "organizations",
    "memberships",
    "authorization_requests",
    "browser_sessions",
    "grants",
    "refresh_tokens",
    "authorization_codes",
    "signin_failures",
    "record_numbers",
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
    "audit_events",
    "organization_data_versions",
    "authorization_request_quotas",
    "password_links",
    "backchannel_logouts",
    "recovery_quotas",
    "totp_credentials",
    "recovery_codes",
    "webauthn_users",
    "passkeys",
    "webauthn_ceremonies",
];

async fn rows_of(app: &TestApp, table: &str, tenant: &str) -> i64 {
    let pool = sqlx::AnyPool::connect(&app.db.url).await.unwrap();
    let count: i64 = sqlx::query_scalar(&format!(
        "SELECT COUNT(*) FROM {table} WHERE tenant_id = $1"
    ))
    .bind(tenant)
    .fetch_one(&pool)
    .await
    .unwrap();
    pool.close().await;
    count
}

/// A deleted tenant's refresh token is refused. Its client is gone with it, and the token
/// endpoint authenticates the client before it reads the grant, so the answer is
/// `invalid_client` (RFC 6749 §5.2), not `invalid_grant`.
async fn assert_dead_refresh(app: &TestApp, token: &str) {
    assert_oauth_error(refresh(app, token, &[]).await, 401, "invalid_client").await;
}

async fn a_deleted_tenant_leaves_no_row_and_no_working_token(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let seeded = crate::api_support::setup(&app).await;
    crate::api_support::other_tenant(&app).await;
    let tenant = store::TenantId::parse("acme").unwrap();
    let org = app.store.tenant(&tenant).organization(&seeded.alpha);
    let trade = &fieldauth::demo_records::PLUMBING;
    fieldauth::demo_records::seed_organization(&org, trade, app.clock_now())
        .await
        .unwrap();
    let browser = app.browser();
    let code = code_for(
        &app,
        &browser,
        &[("scope", Some("openid offline_access jobs"))],
    )
    .await;
    let tokens = exchange(&app, &code).await;
    let api_token = crate::api_support::token(&app, &browser, &seeded.alpha, "customers").await;
    // A code not yet redeemed, and a browser session, to go with the tenant as well.
    let pending = code_for(&app, &browser, &[]).await;
    let ops = AdminClient::new(&app, "ops", None).await;
    let acme_office = AdminClient::new(&app, "acme-office", Some("acme")).await;
    acme_office.get("/tenants/acme").await.assert_ok();
    ops.patch("/tenants/acme", json!({ "name": "Acme Two" }), None)
        .await
        .assert_ok();
    for table in [
        "grants",
        "refresh_tokens",
        "authorization_codes",
        "browser_sessions",
    ] {
        assert!(rows_of(&app, table, "acme").await > 0, "{table} has rows");
    }

    assert_eq!(ops.delete("/tenants/acme").await.status, 204);

    for table in TENANT_TABLES {
        let left = rows_of(&app, table, "acme").await;
        // The deletion's own event is the one row kept, in the trail.
        let kept = i64::from(table == "audit_events");
        assert_eq!(left, kept, "{table} keeps rows of the deleted tenant");
    }
    let trail = app
        .store
        .tenant(&store::TenantId::parse("acme").unwrap())
        .audit_events(5)
        .await
        .unwrap();
    assert_eq!(trail[0].kind, "admin.tenant.deleted");
    assert!(
        rows_of(&app, "users", "globex").await > 0,
        "globex is untouched"
    );
    ops.get("/tenants/globex").await.assert_ok();

    let refresh_token = tokens["refresh_token"].as_str().unwrap();
    assert_dead_refresh(&app, refresh_token).await;
    let access_token = tokens["access_token"].as_str().unwrap();
    assert_eq!(
        userinfo(&app.http, &app.issuer, access_token)
            .await
            .status(),
        401
    );
    let api = app
        .http
        .post(format!("{}/api", app.api_url))
        .bearer_auth(&api_token)
        .json(&json!({ "query": "{ customers { totalCount } }" }))
        .send()
        .await
        .unwrap();
    assert_eq!(
        api.status(),
        401,
        "the API refuses a deleted tenant's token"
    );
    let redeem = [
        ("grant_type", "authorization_code"),
        ("code", pending.as_str()),
        ("redirect_uri", crate::flow::REDIRECT_URI),
        ("code_verifier", crate::flow::VERIFIER),
        ("client_id", crate::flow::CLIENT_ID),
    ];
    let response = crate::flow::token_request(&app, &redeem, None).await;
    assert!(response.status().is_client_error(), "{}", response.status());
    ops.get("/tenants/acme")
        .await
        .assert_problem(404, "not-found");
    ops.delete("/tenants/acme")
        .await
        .assert_problem(404, "not-found");
    // Its admin token is revoked, even once a tenant of the same id is made again.
    acme_office
        .get("/tenants/acme")
        .await
        .assert_problem(401, "unauthorized");
    ops.post("/tenants", json!({ "tenant": "acme" }))
        .await
        .assert_ok();
    acme_office
        .get("/tenants/acme")
        .await
        .assert_problem(401, "unauthorized");
    app.stop().await;
}

async fn only_an_admin_of_every_tenant_deletes_a_tenant(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let ops = AdminClient::new(&app, "ops", None).await;
    ops.post("/tenants", json!({ "tenant": "globex" }))
        .await
        .assert_ok();
    let acme = AdminClient::new(&app, "acme-office", Some("acme")).await;
    acme.delete("/tenants/acme")
        .await
        .assert_problem(403, "forbidden");
    acme.delete("/tenants/globex")
        .await
        .assert_problem(403, "forbidden");
    ops.delete("/tenants/nowhere")
        .await
        .assert_problem(404, "not-found");
    ops.get("/tenants/acme").await.assert_ok();
    assert!(rows_of(&app, "users", "acme").await > 0);
    app.stop().await;
}

async fn the_cli_deletes_a_tenant(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let token = crate::refresh::first_refresh_token(&app).await;
    let deleted = json_output(&app.cli(&["tenant", "delete", "acme", "--json"]));
    assert_eq!(deleted["deleted"], true);
    assert_dead_refresh(&app, &token).await;
    assert_refused(&app.cli(&["tenant", "delete", "acme"]), "tenant not found");
    assert_eq!(rows_of(&app, "users", "acme").await, 0);
    app.stop().await;
}
