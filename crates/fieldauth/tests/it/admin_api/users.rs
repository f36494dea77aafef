//! `/admin/v1/tenants/{tenant}/users` and `fieldauth user …`: each operation over HTTP and
//! through the CLI, a tenant token confined to its tenant, ETags, bad input, and the audit
//! trail (one event per change, never a password).

use serde_json::{json, Value};
use store::testing::TestDatabase;
use store::TenantId;

use super::support::AdminClient;
use crate::flow::{seed, TENANT};
use crate::helpers::{assert_refused, cli, json_output, on_both_backends, TestApp};

on_both_backends!(
    users_are_created_listed_searched_read_updated_and_deleted,
    a_tenant_token_gets_404_on_another_tenants_users,
    bad_user_input_is_400_naming_the_field,
    every_user_command_of_the_cli,
);

const BASE: &str = "/tenants/acme/users";

fn usernames(body: &Value) -> Vec<String> {
    body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["username"].as_str().unwrap().to_owned())
        .collect()
}

async fn audit_kinds(app: &TestApp) -> Vec<(String, String)> {
    let acme = TenantId::parse(TENANT).unwrap();
    let events = app.store.tenant(&acme).audit_events(50).await.unwrap();
    events
        .into_iter()
        .filter(|e| e.kind.starts_with("admin.user."))
        .map(|e| (e.kind, e.detail))
        .collect()
}

async fn users_are_created_listed_searched_read_updated_and_deleted(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await; // alice, bob, carol
    let admin = AdminClient::new(&app, "ops", None).await;
    let new = json!({ "username": "Dave_1", "name": "Dave 100%", "email": "dave@example.com",
        "password": "a fine password" });
    let created = admin.post(BASE, new.clone()).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let sub = created.body["sub"].as_str().unwrap().to_owned();
    assert_eq!(sub.len(), 36);
    assert_eq!(created.body["username"], "dave_1", "kept lowercase");
    assert_eq!(created.body["disabled"], false);
    assert!(created.etag.is_some());
    assert!(created.body.get("password").is_none() && created.body.get("password_hash").is_none());
    admin.post(BASE, new).await.assert_problem(409, "conflict");

    // By username, two a page.
    let first = admin.get(&format!("{BASE}?limit=2")).await;
    assert_eq!(usernames(first.assert_ok()), ["alice", "bob"]);
    let cursor = first.body["next_cursor"].as_str().unwrap();
    let rest = admin.get(&format!("{BASE}?limit=2&cursor={cursor}")).await;
    assert_eq!(usernames(&rest.body), ["carol", "dave_1"]);
    assert!(rest.body.get("next_cursor").is_none());
    // `q` matches username, name or email, case-insensitively; LIKE wildcards are literal.
    for (q, expected) in [
        ("BOB", vec!["bob"]),
        ("carol%40example", vec!["carol"]),
        ("example", vec!["alice", "bob", "carol", "dave_1"]),
        ("100%25", vec!["dave_1"]),
        ("%25", vec!["dave_1"]),
        ("e_1", vec!["dave_1"]),
        ("_", vec!["dave_1"]),
        ("%5C", vec![]),
    ] {
        let found = admin.get(&format!("{BASE}?q={q}")).await;
        assert_eq!(usernames(found.assert_ok()), expected, "q={q}");
    }

    let read = admin.get(&format!("{BASE}/{sub}")).await;
    assert_eq!(read.assert_ok()["email"], "dave@example.com");
    let path = format!("{BASE}/{sub}");
    let changes = json!({ "name": "Dave", "email": "d@example.org" });
    let updated = admin.patch(&path, changes, read.etag.as_deref()).await;
    assert_eq!(updated.assert_ok()["name"], "Dave");
    assert_eq!(updated.body["username"], "dave_1", "untouched");
    assert_ne!(updated.etag, read.etag);
    admin
        .patch(&path, json!({ "name": "Stale" }), read.etag.as_deref())
        .await
        .assert_problem(412, "precondition-failed");
    admin
        .patch(&path, json!({ "username": "alice" }), None)
        .await
        .assert_problem(409, "conflict");
    let renamed = admin
        .patch(&path, json!({ "username": "dave" }), None)
        .await;
    assert_eq!(renamed.assert_ok()["username"], "dave");

    let password = admin
        .put(
            &format!("{path}/password"),
            Some(json!({ "password": "another fine one" })),
        )
        .await;
    assert_eq!(password.status, 204, "{:?}", password.body);
    let acme = TenantId::parse(TENANT).unwrap();
    let stored = app
        .store
        .tenant(&acme)
        .find_user(&sub)
        .await
        .unwrap()
        .unwrap();
    let secret = secrecy::SecretString::from("another fine one".to_owned());
    assert!(oauth::password::verify_password(&secret, &stored.password_hash).unwrap());
    let after_password = admin.get(&path).await;
    assert_ne!(
        after_password.etag, renamed.etag,
        "a new password raises the revision"
    );

    let disabled = admin.post(&format!("{path}/disable"), json!({})).await;
    assert_eq!(disabled.assert_ok()["disabled"], true);
    let enabled = admin.post(&format!("{path}/enable"), json!({})).await;
    assert_eq!(enabled.assert_ok()["disabled"], false);
    let signed_out = admin.post(&format!("{path}/sign-out"), json!({})).await;
    assert_eq!(signed_out.assert_ok()["sub"], sub.as_str());

    assert_eq!(admin.delete(&path).await.status, 204);
    admin.get(&path).await.assert_problem(404, "not-found");
    admin.delete(&path).await.assert_problem(404, "not-found");
    admin
        .post(&format!("{path}/disable"), json!({}))
        .await
        .assert_problem(404, "not-found");

    let events = audit_kinds(&app).await;
    let kinds: Vec<&str> = events.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "admin.user.created",
            "admin.user.updated",
            "admin.user.updated",
            "admin.user.password_set",
            "admin.user.disabled",
            "admin.user.enabled",
            "admin.user.signed_out",
            "admin.user.deleted",
        ]
    );
    for (_, detail) in &events {
        for secret in [
            "a fine password",
            "another fine one",
            "Dave",
            "d@example.org",
        ] {
            assert!(!detail.contains(secret), "{detail}");
        }
        assert!(detail.contains("\"ops\""), "{detail}");
    }
    app.stop().await;
}

async fn a_tenant_token_gets_404_on_another_tenants_users(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let ops = AdminClient::new(&app, "ops", None).await;
    ops.post("/tenants", json!({ "tenant": "globex" }))
        .await
        .assert_ok();
    let globex = AdminClient::new(&app, "globex-office", Some("globex")).await;
    let alice = "00000000-0000-4000-8000-000000000000";
    let path = format!("{BASE}/{alice}");
    globex.get(BASE).await.assert_problem(404, "not-found");
    let new = json!({ "username": "mallory", "name": "M", "email": "m@example.com" });
    globex
        .post(BASE, new)
        .await
        .assert_problem(404, "not-found");
    globex.get(&path).await.assert_problem(404, "not-found");
    globex
        .patch(&path, json!({ "name": "Mine" }), None)
        .await
        .assert_problem(404, "not-found");
    globex
        .put(
            &format!("{path}/password"),
            Some(json!({ "password": "0123456789" })),
        )
        .await
        .assert_problem(404, "not-found");
    for verb in ["disable", "enable", "sign-out"] {
        globex
            .post(&format!("{path}/{verb}"), json!({}))
            .await
            .assert_problem(404, "not-found");
    }
    globex.delete(&path).await.assert_problem(404, "not-found");
    // Nothing changed: alice is there, enabled, with her name.
    let read = ops.get(&path).await;
    assert_eq!(read.assert_ok()["disabled"], false);
    assert_eq!(read.body["name"], "alice Example");
    // Its own tenant's users are its to list.
    globex.get("/tenants/globex/users").await.assert_ok();
    app.stop().await;
}

async fn bad_user_input_is_400_naming_the_field(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let admin = AdminClient::new(&app, "ops", None).await;
    let base = json!({ "username": "erin", "name": "Erin", "email": "erin@example.com" });
    for (field, value) in [
        ("username", json!("a b")),
        ("name", json!("")),
        ("email", json!("erin")),
        ("password", json!("short")),
    ] {
        let mut body = base.clone();
        body[field] = value;
        let detail = admin
            .post(BASE, body)
            .await
            .assert_problem(400, "invalid-input");
        assert!(detail.starts_with(field), "{field}: {detail}");
        assert!(
            !detail.contains("short"),
            "the password is never echoed: {detail}"
        );
    }
    let mut extra = base.clone();
    extra["password_hash"] = json!("$argon2id$...");
    admin
        .post(BASE, extra)
        .await
        .assert_problem(400, "invalid-input");
    let alice = format!("{BASE}/00000000-0000-4000-8000-000000000000");
    let detail = admin
        .patch(&alice, json!({}), None)
        .await
        .assert_problem(400, "invalid-input");
    assert!(detail.starts_with("body"), "{detail}");
    admin
        .put(
            &format!("{alice}/password"),
            Some(json!({ "password": 12345678 })),
        )
        .await
        .assert_problem(400, "invalid-input");
    for query in ["limit=0", "limit=201", "cursor=%25%25"] {
        admin
            .get(&format!("{BASE}?{query}"))
            .await
            .assert_problem(400, "invalid-input");
    }
    app.stop().await;
}

fn user_cli(
    db: &TestDatabase,
    args: &[&str],
    stdin: Option<&str>,
) -> serde_json::Map<String, Value> {
    let mut all = vec!["user"];
    all.extend_from_slice(args);
    all.push("--json");
    json_output(&cli(db, &all, stdin))
}

async fn every_user_command_of_the_cli(db: TestDatabase) {
    json_output(&cli(&db, &["tenant", "create", "acme", "--json"], None));
    let t = ["--tenant", "acme"];
    let person = ["--name", "Frank", "--email", "frank@example.com"];
    let created = user_cli(
        &db,
        &[
            &["create", "--username", "frank", "--password-stdin"][..],
            &t[..],
            &person[..],
        ]
        .concat(),
        Some("correct horse battery\n"),
    );
    let sub = created["sub"].as_str().unwrap().to_owned();
    assert!(created["etag"].is_string());
    let nopass = user_cli(
        &db,
        &[
            &["create", "--username", "grace", "--no-password"][..],
            &t[..],
            &person[..],
        ]
        .concat(),
        None,
    );
    assert_eq!(nopass["username"], "grace");
    let who = [t[0], t[1], "--sub", sub.as_str()];

    let listed = user_cli(&db, &[&["list", "--q", "GRAC"][..], &t[..]].concat(), None);
    let listed = listed["users"].as_array().unwrap().clone();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["username"], "grace");
    let shown = user_cli(&db, &[&["show"], &who[..]].concat(), None);
    assert_eq!(shown["email"], "frank@example.com");
    let etag = shown["etag"].as_str().unwrap().to_owned();
    let updated = user_cli(
        &db,
        &[
            &["update"],
            &who[..],
            &["--name", "Frank F", "--if-match", &etag],
        ]
        .concat(),
        None,
    );
    assert_eq!(updated["name"], "Frank F");
    let stale = cli(
        &db,
        &[
            &["user", "update"],
            &who[..],
            &["--name", "X", "--if-match", &etag],
        ]
        .concat(),
        None,
    );
    assert_refused(&stale, "changed since it was read");
    let taken = cli(
        &db,
        &[&["user", "update"], &who[..], &["--username", "grace"]].concat(),
        None,
    );
    assert_refused(&taken, "already exists");
    let set = user_cli(
        &db,
        &[&["set-password"], &who[..], &["--password-stdin"]].concat(),
        Some("a new password"),
    );
    assert_eq!(set["password_set"], true);
    let short = cli(
        &db,
        &[&["user", "set-password"], &who[..], &["--password-stdin"]].concat(),
        Some("short"),
    );
    assert_refused(&short, "at least 10 characters");
    assert_eq!(
        user_cli(&db, &[&["disable"], &who[..]].concat(), None)["disabled"],
        true
    );
    assert_eq!(
        user_cli(&db, &[&["enable"], &who[..]].concat(), None)["disabled"],
        false
    );
    let out = user_cli(&db, &[&["sign-out"], &who[..]].concat(), None);
    assert_eq!(out["grants_revoked"], 0);
    assert_eq!(
        user_cli(&db, &[&["delete"], &who[..]].concat(), None)["deleted"],
        true
    );
    assert_refused(
        &cli(&db, &[&["user", "show"], &who[..]].concat(), None),
        "user not found",
    );
    assert_refused(
        &cli(&db, &["user", "list", "--tenant", "ghost"], None),
        "tenant not found",
    );
}
