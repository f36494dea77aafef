//! `/admin/v1/tenants/{tenant}/clients` and `fieldauth client …`: every operation, tenant
//! tokens confined to their tenant, and what rotation, disabling and deletion do to the
//! protocol: the old secret, live refresh tokens, the authorization page.

use serde_json::{json, Value};
use store::testing::TestDatabase;

use super::support::AdminClient;
use crate::flow::{
    assert_oauth_error, authorize_url, code_for, seed, token_request, CLIENT_ID, REDIRECT_URI,
    TENANT, VERIFIER, WEB_CLIENT, WEB_SECRET,
};
use crate::helpers::{assert_ok, assert_refused, json_output, on_both_backends, TestApp};
use crate::refresh::{first_refresh_token, refresh};

on_both_backends!(
    clients_are_created_listed_read_updated_and_deleted,
    a_tenant_token_gets_404_on_another_tenants_clients,
    a_rotation_without_grace_stops_the_old_secret_at_once,
    a_rotation_with_grace_accepts_both_until_the_grace_ends,
    disabling_ends_live_tokens_and_enabling_brings_none_back,
    deleting_a_client_ends_its_tokens_and_its_flows,
    the_cli_runs_every_client_command,
);

const BASE: &str = "/tenants/acme/clients";

async fn clients_are_created_listed_read_updated_and_deleted(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let admin = AdminClient::new(&app, "ops", None).await;
    admin
        .post("/tenants", json!({ "tenant": "acme" }))
        .await
        .assert_ok();
    let made = admin
        .post(
            BASE,
            json!({ "client_id": "web", "type": "confidential", "name": "Back Office",
                    "redirect_uris": ["https://app.example.com/cb"], "scopes": ["openid", "jobs"],
                    "web_origins": ["https://app.example.com"] }),
        )
        .await;
    assert_eq!(made.status, 201, "{:?}", made.body);
    assert!(made.etag.is_some());
    let secret = made.body["client_secret"].as_str().unwrap().to_owned();
    assert_eq!(secret.len(), 43);
    assert_eq!(made.body["type"], "confidential");
    assert_eq!(made.body["web_origins"], json!(["https://app.example.com"]));
    assert_eq!(made.body["disabled"], false);
    let spa = admin
        .post(
            BASE,
            json!({ "client_id": "spa", "type": "public",
                    "redirect_uris": ["http://127.0.0.1:8400/cb"] }),
        )
        .await;
    assert_eq!(spa.status, 201);
    assert!(spa.body.get("client_secret").is_none(), "{:?}", spa.body);
    assert_eq!(spa.body["scopes"].as_array().unwrap().len(), 9);
    admin
        .post(
            BASE,
            json!({ "client_id": "spa", "type": "public", "redirect_uris": ["http://127.0.0.1:1/cb"] }),
        )
        .await
        .assert_problem(409, "conflict");
    for (body, field) in [
        (
            json!({ "client_id": "bad id", "type": "public", "redirect_uris": ["https://a.example.com/cb"] }),
            "client_id",
        ),
        (
            json!({ "client_id": "x", "type": "public", "redirect_uris": ["/cb"] }),
            "redirect_uris",
        ),
        (
            json!({ "client_id": "x", "type": "public", "redirect_uris": [] }),
            "redirect_uris",
        ),
        (
            json!({ "client_id": "x", "type": "public", "redirect_uris": ["https://a.example.com/cb"], "scopes": ["admin"] }),
            "scopes",
        ),
        (
            json!({ "client_id": "x", "type": "public", "redirect_uris": ["https://a.example.com/cb"], "web_origins": ["https://a.example.com/x"] }),
            "web_origins",
        ),
    ] {
        let detail = admin
            .post(BASE, body)
            .await
            .assert_problem(400, "invalid-input");
        assert!(detail.starts_with(field), "{detail}");
    }
    admin
        .post(
            BASE,
            json!({ "client_id": "x", "type": "secret", "redirect_uris": [] }),
        )
        .await
        .assert_problem(400, "invalid-input");

    // By client id, one per page; `q` on the id or the name, case-insensitively, wildcards
    // taken literally.
    let first = admin.get(&format!("{BASE}?limit=1")).await;
    assert_eq!(ids(&first.body), ["spa"]);
    let cursor = first.body["next_cursor"].as_str().unwrap();
    let rest = admin.get(&format!("{BASE}?limit=1&cursor={cursor}")).await;
    assert_eq!(ids(&rest.body), ["web"]);
    assert!(rest.body.get("next_cursor").is_none());
    assert_eq!(
        ids(&admin.get(&format!("{BASE}?q=BACK%20off")).await.body),
        ["web"]
    );
    assert_eq!(
        ids(&admin.get(&format!("{BASE}?q=%25")).await.body),
        Vec::<String>::new()
    );

    let read = admin.get(&format!("{BASE}/web")).await;
    assert_eq!(read.body["name"], "Back Office");
    assert!(read.body.get("client_secret").is_none());
    assert!(!read.body.to_string().contains("hash"));
    let stale = read.etag.clone().unwrap();
    let updated = admin
        .patch(
            &format!("{BASE}/web"),
            json!({ "name": "Office", "redirect_uris": ["https://office.example.com/cb"], "scopes": ["openid"] }),
            Some(&stale),
        )
        .await;
    assert_eq!(updated.assert_ok()["name"], "Office");
    assert_eq!(
        updated.body["redirect_uris"],
        json!(["https://office.example.com/cb"])
    );
    assert_eq!(updated.body["scopes"], json!(["openid"]));
    assert_ne!(updated.etag, read.etag);
    admin
        .patch(
            &format!("{BASE}/web"),
            json!({ "name": "Again" }),
            Some(&stale),
        )
        .await
        .assert_problem(412, "precondition-failed");
    admin
        .patch(&format!("{BASE}/web"), json!({ "scopes": ["nope"] }), None)
        .await
        .assert_problem(400, "invalid-input");
    admin
        .patch(&format!("{BASE}/ghost"), json!({ "name": "Ghost" }), None)
        .await
        .assert_problem(404, "not-found");
    admin
        .post(&format!("{BASE}/spa/secret"), json!({}))
        .await
        .assert_problem(409, "conflict");
    admin
        .post(&format!("{BASE}/web/secret"), json!({ "grace_seconds": 0 }))
        .await
        .assert_problem(400, "invalid-input");

    let deleted = admin.delete(&format!("{BASE}/spa")).await;
    assert_eq!(deleted.status, 204);
    admin
        .get(&format!("{BASE}/spa"))
        .await
        .assert_problem(404, "not-found");
    admin
        .delete(&format!("{BASE}/spa"))
        .await
        .assert_problem(404, "not-found");

    let events = app
        .store
        .tenant(&store::TenantId::parse("acme").unwrap())
        .audit_events(20)
        .await
        .unwrap();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e.kind.as_str())
        .filter(|k| k.starts_with("admin.client."))
        .collect();
    assert_eq!(
        kinds,
        [
            "admin.client.created",
            "admin.client.created",
            "admin.client.updated",
            "admin.client.deleted"
        ]
    );
    for event in &events {
        assert!(!event.detail.contains(&secret), "{}", event.detail);
    }
    app.stop().await;
}

async fn a_tenant_token_gets_404_on_another_tenants_clients(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let ops = AdminClient::new(&app, "ops", None).await;
    ops.post("/tenants", json!({ "tenant": "globex" }))
        .await
        .assert_ok();
    let globex = AdminClient::new(&app, "globex-office", Some("globex")).await;
    globex.get(BASE).await.assert_problem(404, "not-found");
    globex
        .get(&format!("{BASE}/web"))
        .await
        .assert_problem(404, "not-found");
    let paths = ["/web/secret", "/web/disable", "/web/enable"];
    for path in paths {
        globex
            .post(&format!("{BASE}{path}"), json!({}))
            .await
            .assert_problem(404, "not-found");
    }
    globex
        .patch(&format!("{BASE}/web"), json!({ "name": "Mine" }), None)
        .await
        .assert_problem(404, "not-found");
    globex
        .delete(&format!("{BASE}/web"))
        .await
        .assert_problem(404, "not-found");
    globex
        .post(BASE, json!({ "client_id": "x", "type": "public", "redirect_uris": ["https://a.example.com/cb"] }))
        .await
        .assert_problem(404, "not-found");
    // Nothing changed: the secret still works.
    assert_web_secret(&app, WEB_SECRET, true).await;
    assert_eq!(
        globex.get("/tenants/globex/clients").await.body["items"],
        json!([])
    );
    app.stop().await;
}

async fn a_rotation_without_grace_stops_the_old_secret_at_once(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let admin = AdminClient::new(&app, "ops", Some(TENANT)).await;
    let rotated = admin
        .send(
            reqwest::Method::POST,
            &format!("{BASE}/web/secret"),
            None,
            None,
        )
        .await;
    let new = rotated.assert_ok()["client_secret"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(new, WEB_SECRET);
    assert_web_secret(&app, WEB_SECRET, false).await;
    assert_web_secret(&app, &new, true).await;
    app.stop().await;
}

async fn a_rotation_with_grace_accepts_both_until_the_grace_ends(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let admin = AdminClient::new(&app, "ops", None).await;
    let rotated = admin
        .post(
            &format!("{BASE}/web/secret"),
            json!({ "grace_seconds": 600 }),
        )
        .await;
    let new = rotated.assert_ok()["client_secret"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_web_secret(&app, WEB_SECRET, true).await;
    assert_web_secret(&app, &new, true).await;
    // The code exchange reads its client with the code; the previous secret works there too.
    let code = code_for(&app, &app.browser(), &[("client_id", Some(WEB_CLIENT))]).await;
    let fields = [
        ("grant_type", "authorization_code"),
        ("code", &code),
        ("redirect_uri", REDIRECT_URI),
        ("code_verifier", VERIFIER),
    ];
    let exchanged = token_request(&app, &fields, Some((WEB_CLIENT, WEB_SECRET))).await;
    assert_eq!(exchanged.status(), 200);
    app.clock.advance(600);
    assert_web_secret(&app, WEB_SECRET, false).await;
    assert_web_secret(&app, &new, true).await;
    let events = app
        .store
        .tenant(&store::TenantId::parse(TENANT).unwrap())
        .audit_events(50)
        .await
        .unwrap();
    let rotation = events
        .iter()
        .find(|e| e.kind == "admin.client.secret_rotated")
        .unwrap();
    assert!(!rotation.detail.contains(&new), "{}", rotation.detail);
    app.stop().await;
}

async fn disabling_ends_live_tokens_and_enabling_brings_none_back(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let admin = AdminClient::new(&app, "ops", None).await;
    let live = first_refresh_token(&app).await;
    let disabled = admin
        .post(&format!("{BASE}/{CLIENT_ID}/disable"), json!({}))
        .await;
    assert_eq!(disabled.assert_ok()["disabled"], true);
    assert_oauth_error(refresh(&app, &live, &[]).await, 401, "invalid_client").await;
    assert_unregistered(&app).await;
    admin
        .post(&format!("{BASE}/web/disable"), json!({}))
        .await
        .assert_ok();
    assert_web_secret(&app, WEB_SECRET, false).await;
    let revoke = crate::flow::client_post(
        &app,
        "/oauth/revoke",
        &[("token", &live), ("client_id", CLIENT_ID)],
        None,
    )
    .await;
    assert_oauth_error(revoke, 401, "invalid_client").await;

    let enabled = admin
        .post(&format!("{BASE}/{CLIENT_ID}/enable"), json!({}))
        .await;
    assert_eq!(enabled.assert_ok()["disabled"], false);
    let fresh = first_refresh_token(&app).await;
    assert_eq!(refresh(&app, &fresh, &[]).await.status(), 200);
    assert_oauth_error(refresh(&app, &live, &[]).await, 400, "invalid_grant").await;
    let events = app
        .store
        .tenant(&store::TenantId::parse(TENANT).unwrap())
        .audit_events(50)
        .await
        .unwrap();
    let disabled = events
        .iter()
        .find(|e| e.kind == "admin.client.disabled")
        .unwrap();
    assert!(
        disabled.detail.contains("1 live grant"),
        "{}",
        disabled.detail
    );
    assert!(events.iter().any(|e| e.kind == "admin.client.enabled"));
    app.stop().await;
}

async fn deleting_a_client_ends_its_tokens_and_its_flows(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let admin = AdminClient::new(&app, "ops", None).await;
    let live = first_refresh_token(&app).await;
    assert_eq!(
        admin.delete(&format!("{BASE}/{CLIENT_ID}")).await.status,
        204
    );
    assert_oauth_error(refresh(&app, &live, &[]).await, 401, "invalid_client").await;
    assert_unregistered(&app).await;
    assert_eq!(app.rows("grants").await, 0);
    app.stop().await;
}

async fn the_cli_runs_every_client_command(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    assert_ok(&app.cli(&["tenant", "create", "acme"]));
    let target = |command: &'static str| {
        vec![
            "client",
            command,
            "--tenant",
            "acme",
            "--client-id",
            "web",
            "--json",
        ]
    };
    let mut create = target("create");
    create.extend([
        "--confidential",
        "--redirect-uri",
        "https://app.example.com/cb",
        "--name",
        "Back Office",
    ]);
    let made = json_output(&app.cli(&create));
    let first = made["client_secret"].as_str().unwrap().to_owned();
    assert_eq!(made["type"], "confidential");
    let listed = json_output(&app.cli(&[
        "client", "list", "--tenant", "acme", "--q", "back", "--json",
    ]));
    assert_eq!(listed["clients"][0]["client_id"], "web");
    let shown = json_output(&app.cli(&target("show")));
    let etag = shown["etag"].as_str().unwrap().to_owned();
    let mut update = target("update");
    update.extend(["--name", "Office", "--scope", "openid", "--if-match", &etag]);
    let updated = json_output(&app.cli(&update));
    assert_eq!(
        (updated["name"].as_str(), updated["scopes"].clone()),
        (Some("Office"), json!(["openid"]))
    );
    assert_refused(&app.cli(&update), "changed since it was read");
    let mut rotate = target("rotate-secret");
    rotate.extend(["--grace-seconds", "60"]);
    let rotated = json_output(&app.cli(&rotate));
    let second = rotated["client_secret"].as_str().unwrap();
    assert_ne!(second, first);
    let acme = store::TenantId::parse("acme").unwrap();
    let stored = app
        .store
        .tenant(&acme)
        .find_client("web")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        stored.secret_hash.as_deref(),
        Some(&oauth::secret::hash_secret(second)[..])
    );
    assert_eq!(
        stored.previous_secret.unwrap().hash,
        oauth::secret::hash_secret(&first)
    );
    assert_eq!(json_output(&app.cli(&target("disable")))["disabled"], true);
    assert!(
        app.store
            .tenant(&acme)
            .find_client("web")
            .await
            .unwrap()
            .unwrap()
            .disabled
    );
    assert_eq!(json_output(&app.cli(&target("enable")))["disabled"], false);
    assert_eq!(json_output(&app.cli(&target("delete")))["deleted"], true);
    assert_refused(&app.cli(&target("show")), "client not found");
    assert_refused(&app.cli(&target("delete")), "client not found");
    app.stop().await;
}

fn ids(body: &Value) -> Vec<String> {
    body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["client_id"].as_str().unwrap().to_owned())
        .collect()
}

/// Whether the token endpoint authenticates `web` with `secret`: a refresh with a token that
/// names the tenant but is no token is `invalid_grant` after the client is authenticated,
/// `invalid_client` before.
async fn assert_web_secret(app: &TestApp, secret: &str, accepted: bool) {
    let bogus = format!("{TENANT}.{}", "a".repeat(43));
    let fields = [
        ("grant_type", "refresh_token"),
        ("refresh_token", bogus.as_str()),
    ];
    let response = token_request(app, &fields, Some((WEB_CLIENT, secret))).await;
    match accepted {
        true => assert_oauth_error(response, 400, "invalid_grant").await,
        false => assert_oauth_error(response, 401, "invalid_client").await,
    }
}

/// Authorize for `spa` shows the error page of an unregistered client, never a redirect.
async fn assert_unregistered(app: &TestApp) {
    let response = app.get(&authorize_url(app, &[])).await;
    assert_eq!(response.status(), 400);
    assert!(response.headers().get("location").is_none());
    let body = response.text().await.unwrap();
    assert!(
        body.contains("is not registered with this tenant"),
        "{body}"
    );
}
