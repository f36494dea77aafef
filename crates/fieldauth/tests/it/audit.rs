//! The audit trail end to end: sign-ins, the lock, consents, a revoked grant and key
//! rotations are written by the running server and the CLI, and `audit list` shows them in
//! order, with the user's subject and the client, and never a password, code or token.

use chrono::{DateTime, SecondsFormat};
use oauth::ThrottlePolicy;
use serde_json::{json, Value};
use store::testing::TestDatabase;
use store::{NewAuditEvent, Store, TenantId};

use crate::flow::{
    authorize_url, code_for, consent, exchange, location_params, param, seed,
    signed_in_consent_page, CLIENT_ID, PASSWORD, WEB_SECRET,
};
use crate::helpers::{assert_refused, cli, json_output, on_both_backends, TestApp};
use crate::refresh::refresh;
use crate::signin::attempt;

on_both_backends!(
    the_trail_lists_signins_the_lock_consents_a_revoked_grant_and_key_events,
    the_text_list_has_one_aligned_line_per_event,
    the_limit_keeps_the_newest_events_across_both_sources,
    an_unknown_tenant_is_refused_in_one_line,
);

fn rfc3339(t: i64) -> String {
    DateTime::from_timestamp(t, 0)
        .unwrap()
        .to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// `fieldauth audit list --tenant acme ARGS` against the database; the output as text.
fn audit_list(db: &TestDatabase, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["audit", "list", "--tenant", "acme"];
    args.extend_from_slice(extra);
    cli(db, &args, None)
}

fn events(output: &std::process::Output) -> Vec<Value> {
    let body = json_output(output);
    assert_eq!(body["tenant"], "acme");
    assert_eq!(body.len(), 2, "tenant and events only: {body:?}");
    body["events"].as_array().unwrap().clone()
}

fn key_event(at: i64, kid: &str) -> Value {
    json!({
        "occurred_at": rfc3339(at), "kind": "key.created", "subject": null, "client_id": null,
        "address": null, "detail": format!("kid {kid}"), "kid": kid,
    })
}

fn tenant_event(
    at: i64,
    kind: &str,
    subject: &str,
    address: Option<&str>,
    detail: Option<&str>,
) -> Value {
    json!({
        "occurred_at": rfc3339(at), "kind": kind, "subject": subject, "client_id": CLIENT_ID,
        "address": address, "detail": detail, "kid": null,
    })
}

async fn the_trail_lists_signins_the_lock_consents_a_revoked_grant_and_key_events(
    db: TestDatabase,
) {
    let policy = ThrottlePolicy {
        max_account_failures: 2,
        max_address_failures: 50,
        lock_seconds: 300,
        max_authorize_requests_per_address: 600,
    };
    let app = TestApp::spawn_with_throttle(db, policy).await;
    let seeded = seed(&app).await;
    let rotated = json_output(&app.cli(&["keys", "rotate", "--json"]))["kid"]
        .as_str()
        .unwrap()
        .to_owned();
    let keys = app.store.list_signing_keys().await.unwrap();
    let (first_key, new_key) = (&keys[1], &keys[0]);
    assert_eq!(new_key.kid, rotated);
    // The CLI stamped the key with the real time; the server's events follow it.
    let t0 = new_key.created_at;
    app.clock.set(t0 + 1);

    // bob: a wrong password, a second that locks the account, then the right one refused.
    let bob = app.browser();
    let (status, _) = attempt(&app, &bob, "bob", "wrong-password-1").await;
    assert_eq!(status, 200);
    app.clock.advance(60);
    let (status, html) = attempt(&app, &bob, "bob", "wrong-password-2").await;
    assert_eq!((status, html.contains("locked")), (200, true), "{html}");
    app.clock.advance(60);
    let (status, _) = attempt(&app, &bob, "bob", PASSWORD).await;
    assert_eq!(status, 429);

    // alice: signs in and consents; her first refresh token is used twice.
    let scope = "openid offline_access jobs";
    let code = code_for(&app, &app.browser(), &[("scope", Some(scope))]).await;
    let tokens = exchange(&app, &code).await;
    let first = tokens["refresh_token"].as_str().unwrap().to_owned();
    let second = refresh(&app, &first, &[]).await;
    assert_eq!(second.status(), 200);
    let second: Value = second.json().await.unwrap();
    assert_eq!(refresh(&app, &first, &[]).await.status(), 400);
    let grant_id = app
        .store
        .tenant(&TenantId::parse("acme").unwrap())
        .find_refresh_token(
            oauth::token::refresh_token::RefreshTokenKey::of(first.split_once('.').unwrap().1)
                .as_bytes(),
        )
        .await
        .unwrap()
        .unwrap()
        .grant
        .grant_id;

    // alice again, in a new browser: she denies.
    let browser = app.browser();
    let page = signed_in_consent_page(&app, &browser, &authorize_url(&app, &[]), "alice").await;
    let denied = consent(&app, &browser, &page, "deny", None, &[]).await;
    assert_eq!(denied.status(), 302);
    let (_, pairs) = location_params(&denied);
    assert_eq!(param(&pairs, "error"), Some("access_denied"));

    let json = audit_list(&app.db, &["--json"]);
    let alice = seeded.alice_sub.as_str();
    let at = Some("127.0.0.1");
    let t = t0 + 121;
    let expected = vec![
        key_event(first_key.created_at, &first_key.kid),
        key_event(t0, &rotated),
        tenant_event(
            t0 + 1,
            "signin.failed",
            "bob",
            at,
            Some("wrong username or password"),
        ),
        tenant_event(
            t0 + 61,
            "signin.failed",
            "bob",
            at,
            Some("wrong username or password; now locked"),
        ),
        tenant_event(
            t,
            "signin.refused",
            "bob",
            at,
            Some("locked: the password was not checked"),
        ),
        tenant_event(t, "signin.succeeded", alice, at, None),
        tenant_event(
            t,
            "consent.given",
            alice,
            None,
            Some(&format!("organization {}; scope {scope}", seeded.alpha)),
        ),
        json!({
            "occurred_at": rfc3339(t), "kind": "grant.revoked", "subject": null,
            "client_id": CLIENT_ID, "address": null,
            "detail": format!("grant {grant_id}: a consumed refresh token was presented again"),
            "kid": null,
        }),
        tenant_event(t, "signin.succeeded", alice, at, None),
        tenant_event(t, "consent.denied", alice, None, None),
    ];
    assert_eq!(events(&json), expected);

    // No credential of the flow appears, in either format.
    let text = audit_list(&app.db, &[]);
    let mut secrets = vec![
        PASSWORD.to_owned(),
        "wrong-password-1".to_owned(),
        "wrong-password-2".to_owned(),
        WEB_SECRET.to_owned(),
        code.split_once('.').unwrap().1.to_owned(),
    ];
    for body in [&tokens, &second] {
        for name in ["access_token", "refresh_token", "id_token"] {
            let token = body[name].as_str().unwrap();
            secrets.push(token.rsplit('.').next().unwrap().to_owned());
        }
    }
    for output in [&json, &text] {
        let stdout = String::from_utf8(output.stdout.clone()).unwrap();
        let stderr = String::from_utf8(output.stderr.clone()).unwrap();
        for secret in &secrets {
            assert!(
                !stdout.contains(secret.as_str()) && !stderr.contains(secret.as_str()),
                "{secret:?} appears in: {stdout}{stderr}"
            );
        }
    }
    app.stop().await;
}

/// Writes the events a test lists: with `at` times and kinds, in that order, for tenant acme.
async fn write_events(store: &Store, events: &[(i64, &str)]) {
    let acme = TenantId::parse("acme").unwrap();
    store.create_tenant(&acme, "Acme", 0).await.unwrap();
    for (at, kind) in events {
        let event = NewAuditEvent {
            kind,
            occurred_at: *at,
            subject: Some("00000000-0000-4000-8000-000000000000"),
            client_id: Some("spa"),
            address: (*kind == "signin.succeeded").then_some("192.0.2.10"),
            detail: "",
        };
        store
            .tenant(&acme)
            .record_audit_event(&event)
            .await
            .unwrap();
    }
}

async fn the_text_list_has_one_aligned_line_per_event(db: TestDatabase) {
    let store = Store::connect(&db.url).await.unwrap();
    write_events(
        &store,
        &[
            (1_700_000_000, "signin.succeeded"),
            (1_700_000_060, "consent.denied"),
        ],
    )
    .await;
    store
        .insert_signing_key("k-2023", b"not used: no server runs", 1_700_000_030)
        .await
        .unwrap();
    store.close().await;
    let output = audit_list(&db, &[]);
    assert_eq!(output.status.code(), Some(0));
    let text = String::from_utf8(output.stdout).unwrap();
    let sub = "00000000-0000-4000-8000-000000000000";
    let pad = " ".repeat(sub.len() - 1);
    assert_eq!(
        text,
        format!(
            "2023-11-14T22:13:20Z  signin.succeeded  {sub}  spa  192.0.2.10  -\n\
             2023-11-14T22:13:50Z  key.created       -{pad}  -    -           kid k-2023\n\
             2023-11-14T22:14:20Z  consent.denied    {sub}  spa  -           -\n"
        )
    );
}

async fn the_limit_keeps_the_newest_events_across_both_sources(db: TestDatabase) {
    let store = Store::connect(&db.url).await.unwrap();
    write_events(
        &store,
        &[
            (1_000, "signin.succeeded"),
            (2_000, "consent.given"),
            (4_000, "consent.denied"),
        ],
    )
    .await;
    store
        .insert_signing_key("k-3000", b"not used: no server runs", 3_000)
        .await
        .unwrap();
    store.close().await;
    let kinds = |output| -> Vec<(String, String)> {
        events(&output)
            .iter()
            .map(|e| {
                let kind = e["kind"].as_str().unwrap().to_owned();
                (e["occurred_at"].as_str().unwrap().to_owned(), kind)
            })
            .collect()
    };
    let newest_two = vec![
        (rfc3339(3_000), "key.created".to_owned()),
        (rfc3339(4_000), "consent.denied".to_owned()),
    ];
    assert_eq!(
        kinds(audit_list(&db, &["--json", "--limit", "2"])),
        newest_two
    );
    assert_eq!(kinds(audit_list(&db, &["--json"])).len(), 4);
    for out_of_range in ["0", "10001"] {
        let output = audit_list(&db, &["--limit", out_of_range]);
        assert_eq!(output.status.code(), Some(2), "clap refuses {out_of_range}");
    }
}

async fn an_unknown_tenant_is_refused_in_one_line(db: TestDatabase) {
    for (tenant, why) in [
        ("ghost", "error: tenant ghost: tenant not found"),
        ("Acme", "error: --tenant \"Acme\": invalid tenant id"),
    ] {
        let output = cli(&db, &["audit", "list", "--tenant", tenant, "--json"], None);
        assert_refused(&output, why);
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with(why), "{stderr}");
    }
}
