//! `/admin/v1/tenants/{tenant}/grants` and `…/users/{sub}/grants`: listed by user and by
//! client, newest first, with their last refresh; revoked one at a time, over HTTP and the
//! CLI; another tenant's grants are 404 to a tenant token.

use serde_json::{json, Value};
use store::testing::TestDatabase;

use super::support::AdminClient;
use crate::flow::{assert_oauth_error, code_for, exchange, seed, Seeded, CLIENT_ID};
use crate::helpers::{assert_refused, json_output, on_both_backends, TestApp};
use crate::node_support::userinfo;
use crate::refresh::refresh;

on_both_backends!(
    grants_are_listed_by_user_and_client_newest_first,
    a_revoked_grant_ends_its_tokens,
    a_tenant_token_cannot_reach_another_tenants_grants,
    the_cli_lists_and_revokes_grants,
);

/// Two grants of alice for `spa`, a minute apart (their access tokens still live); the
/// tokens of each.
async fn two_grants(app: &TestApp) -> (Seeded, Vec<Value>) {
    let seeded = seed(app).await;
    let mut tokens = Vec::new();
    for _ in 0..2 {
        let code = code_for(
            app,
            &app.browser(),
            &[("scope", Some("openid offline_access jobs"))],
        )
        .await;
        tokens.push(exchange(app, &code).await);
        app.clock.advance(60);
    }
    (seeded, tokens)
}

fn grant_ids(body: &Value) -> Vec<String> {
    body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["grant_id"].as_str().unwrap().to_owned())
        .collect()
}

async fn grants_are_listed_by_user_and_client_newest_first(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let start = app.clock_now();
    let (seeded, tokens) = two_grants(&app).await;
    let admin = AdminClient::new(&app, "ops", None).await;
    let of_alice = format!("/tenants/acme/users/{}/grants", seeded.alice_sub);

    let first = admin.get(&format!("{of_alice}?limit=1")).await;
    let newest = &first.assert_ok()["items"][0];
    assert_eq!(newest["client_id"], CLIENT_ID);
    assert_eq!(newest["sub"], seeded.alice_sub.as_str());
    assert_eq!(newest["organization_guid"], seeded.alpha.as_str());
    assert_eq!(
        newest["scopes"],
        json!(["openid", "offline_access", "jobs"])
    );
    assert_eq!(newest["created_at"], start + 60);
    assert_eq!(newest["revoked"], false);
    let cursor = first.body["next_cursor"].as_str().unwrap();
    let older = admin
        .get(&format!("{of_alice}?limit=1&cursor={cursor}"))
        .await;
    assert_eq!(older.body["items"][0]["created_at"], start);
    assert!(older.body.get("next_cursor").is_none());
    assert_eq!(older.body["items"][0]["last_refreshed_at"], start);

    // A refresh moves `last_refreshed_at`; the order stays by creation.
    app.clock.advance(60);
    let token = tokens[0]["refresh_token"].as_str().unwrap();
    assert_eq!(refresh(&app, token, &[]).await.status(), 200);
    let by_client = admin
        .get(&format!("/tenants/acme/grants?client_id={CLIENT_ID}"))
        .await;
    let items = by_client.assert_ok()["items"].as_array().unwrap().clone();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["created_at"], start + 60);
    assert_eq!(items[1]["last_refreshed_at"], start + 180);
    let by_sub = admin
        .get(&format!("/tenants/acme/grants?sub={}", seeded.alice_sub))
        .await;
    assert_eq!(grant_ids(&by_sub.body), grant_ids(&by_client.body));
    let web = admin.get("/tenants/acme/grants?client_id=web").await;
    assert!(grant_ids(web.assert_ok()).is_empty());

    for query in ["", "?client_id=spa&sub=x", "?limit=0&client_id=spa"] {
        admin
            .get(&format!("/tenants/acme/grants{query}"))
            .await
            .assert_problem(400, "invalid-input");
    }
    for path in [
        "/tenants/acme/grants?client_id=nobody".to_owned(),
        "/tenants/acme/users/nobody/grants".to_owned(),
    ] {
        admin.get(&path).await.assert_problem(404, "not-found");
    }
    app.stop().await;
}

async fn a_revoked_grant_ends_its_tokens(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let (seeded, tokens) = two_grants(&app).await;
    let admin = AdminClient::new(&app, "ops", None).await;
    let of_alice = format!("/tenants/acme/users/{}/grants", seeded.alice_sub);
    let listed = admin.get(&of_alice).await;
    let ids = grant_ids(listed.assert_ok());
    // Newest first: the second exchange's grant is the first listed.
    let (kept, revoked) = (&tokens[0], &tokens[1]);
    assert_eq!(
        admin
            .delete(&format!("/tenants/acme/grants/{}", ids[0]))
            .await
            .status,
        204
    );
    let access = |t: &Value| t["access_token"].as_str().unwrap().to_owned();
    let refresh_token = |t: &Value| t["refresh_token"].as_str().unwrap().to_owned();
    assert_oauth_error(
        refresh(&app, &refresh_token(revoked), &[]).await,
        400,
        "invalid_grant",
    )
    .await;
    assert_eq!(
        userinfo(&app.http, &app.issuer, &access(revoked))
            .await
            .status(),
        401
    );
    assert_eq!(
        userinfo(&app.http, &app.issuer, &access(kept))
            .await
            .status(),
        200
    );
    assert_eq!(refresh(&app, &refresh_token(kept), &[]).await.status(), 200);

    let after = admin.get(&of_alice).await;
    assert_eq!(after.body["items"][0]["revoked"], true);
    assert_eq!(after.body["items"][1]["revoked"], false);
    // Revoking again changes nothing; an unknown grant is 404.
    assert_eq!(
        admin
            .delete(&format!("/tenants/acme/grants/{}", ids[0]))
            .await
            .status,
        204
    );
    admin
        .delete("/tenants/acme/grants/nope")
        .await
        .assert_problem(404, "not-found");
    let events = app
        .store
        .tenant(&store::TenantId::parse("acme").unwrap())
        .audit_events(50)
        .await
        .unwrap();
    let revocations: Vec<_> = events
        .iter()
        .filter(|e| e.kind == "admin.grant.revoked")
        .collect();
    assert_eq!(revocations.len(), 1);
    assert_eq!(
        revocations[0].subject.as_deref(),
        Some(seeded.alice_sub.as_str())
    );
    app.stop().await;
}

async fn a_tenant_token_cannot_reach_another_tenants_grants(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let (seeded, _) = two_grants(&app).await;
    let ops = AdminClient::new(&app, "ops", None).await;
    ops.post("/tenants", json!({ "tenant": "globex" }))
        .await
        .assert_ok();
    let ids = grant_ids(
        ops.get(&format!("/tenants/acme/grants?client_id={CLIENT_ID}"))
            .await
            .assert_ok(),
    );
    let globex = AdminClient::new(&app, "globex-office", Some("globex")).await;
    for reply in [
        globex
            .get(&format!("/tenants/acme/grants?client_id={CLIENT_ID}"))
            .await,
        globex
            .get(&format!("/tenants/acme/users/{}/grants", seeded.alice_sub))
            .await,
        globex
            .delete(&format!("/tenants/acme/grants/{}", ids[0]))
            .await,
        globex
            .delete(&format!("/tenants/globex/grants/{}", ids[0]))
            .await,
    ] {
        reply.assert_problem(404, "not-found");
    }
    let still = ops
        .get(&format!("/tenants/acme/grants?client_id={CLIENT_ID}"))
        .await;
    assert!(still.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .all(|g| g["revoked"] == false));
    app.stop().await;
}

async fn the_cli_lists_and_revokes_grants(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let (seeded, tokens) = two_grants(&app).await;
    let by_sub = json_output(&app.cli(&[
        "grant",
        "list",
        "--tenant",
        "acme",
        "--sub",
        &seeded.alice_sub,
        "--json",
    ]));
    let grants = by_sub["grants"].as_array().unwrap();
    assert_eq!(grants.len(), 2);
    let newest = grants[0]["grant_id"].as_str().unwrap().to_owned();
    let by_client = json_output(&app.cli(&[
        "grant",
        "list",
        "--tenant",
        "acme",
        "--client-id",
        CLIENT_ID,
        "--json",
    ]));
    assert_eq!(by_client["grants"], by_sub["grants"]);
    // clap refuses a list of no one's grants before anything runs (its usage error, exit 2).
    let neither = app.cli(&["grant", "list", "--tenant", "acme"]);
    assert_eq!(neither.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&neither.stderr).contains("required"));
    let revoked =
        json_output(&app.cli(&["grant", "revoke", "--tenant", "acme", &newest, "--json"]));
    assert_eq!(revoked["revoked"], true);
    let token = tokens[1]["refresh_token"].as_str().unwrap();
    assert_oauth_error(refresh(&app, token, &[]).await, 400, "invalid_grant").await;
    assert_refused(
        &app.cli(&["grant", "revoke", "--tenant", "acme", "nope"]),
        "grant not found",
    );
    app.stop().await;
}
