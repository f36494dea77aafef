//! The admin listener: the admin API, the probes and `/metrics`, and nothing of the admin API
//! on the auth or API listener. Tokens: missing, unknown and revoked are the same 401.

use serde_json::json;

use super::support::AdminClient;
use crate::helpers::{on_both_backends, TestApp};
use store::testing::TestDatabase;

on_both_backends!(
    the_admin_listener_serves_probes_metrics_and_the_api_only_there,
    admin_tokens_missing_unknown_or_revoked_get_401,
);

async fn the_admin_listener_serves_probes_metrics_and_the_api_only_there(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    for path in ["/healthz", "/readyz", "/metrics", "/admin/v1/openapi.json"] {
        let response = app.get(&format!("{}{path}", app.admin_url)).await;
        assert_eq!(response.status(), 200, "{path}");
    }
    let document: serde_json::Value = app
        .get(&format!("{}/admin/v1/openapi.json", app.admin_url))
        .await
        .json()
        .await
        .unwrap();
    assert!(document["openapi"].as_str().unwrap().starts_with("3.1"));
    let admin = AdminClient::new(&app, "ops", None).await;
    admin.get("/tenants").await.assert_ok();
    for base in [&app.issuer, &app.api_url] {
        let response = app.get(&format!("{base}/admin/v1/tenants")).await;
        assert_eq!(response.status(), 404, "{base}");
    }
    let unknown = admin.get("/nothing-here").await;
    unknown.assert_problem(404, "not-found");
    app.stop().await;
}

async fn admin_tokens_missing_unknown_or_revoked_get_401(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let admin = AdminClient::new(&app, "ops", None).await;
    let unknown = format!("fa_admin_{}", "A".repeat(43));
    for token in ["", "not-a-token", unknown.as_str()] {
        let reply = admin.with_token(token).get("/tenants").await;
        reply.assert_problem(401, "unauthorized");
    }
    let response = app
        .http
        .get(format!("{}/admin/v1/tenants", app.admin_url))
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["www-authenticate"], "Bearer");
    admin::tokens::revoke(&app.store, "ops", app.clock_now())
        .await
        .unwrap();
    admin
        .post("/tenants", json!({ "tenant": "acme" }))
        .await
        .assert_problem(401, "unauthorized");
    app.stop().await;
}
