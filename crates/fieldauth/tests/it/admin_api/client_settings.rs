//! The client settings of issue 27, `refresh_retry_seconds` (0 to 120, default 0) and
//! `dpop_bound_access_tokens` (RFC 9449 §5.2, default false): set on create, changed on
//! update, shown, and a window outside 0 to 120 refused with each front end's error, by the
//! admin API (RFC 9457 problem, 400) and by the CLI (clap's usage error, exit 2).

use serde_json::json;
use store::testing::TestDatabase;

use super::support::AdminClient;
use crate::helpers::{json_output, on_both_backends, TestApp};

on_both_backends!(
    the_admin_api_sets_shows_and_checks_the_client_settings,
    the_cli_sets_shows_and_checks_the_client_settings,
);

const BASE: &str = "/tenants/acme/clients";

async fn the_admin_api_sets_shows_and_checks_the_client_settings(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let admin = AdminClient::new(&app, "ops", None).await;
    admin
        .post("/tenants", json!({ "tenant": "acme" }))
        .await
        .assert_ok();
    let plain = admin
        .post(
            BASE,
            json!({ "client_id": "web", "type": "public",
                    "redirect_uris": ["https://app.example.com/cb"] }),
        )
        .await;
    assert_eq!(plain.status, 201, "{:?}", plain.body);
    assert_eq!(plain.body["refresh_retry_seconds"], 0, "the default");
    assert_eq!(plain.body["dpop_bound_access_tokens"], false, "the default");

    let made = admin
        .post(
            BASE,
            json!({ "client_id": "mobile", "type": "public",
                    "redirect_uris": ["com.example.app:/cb"],
                    "refresh_retry_seconds": 120, "dpop_bound_access_tokens": true }),
        )
        .await;
    assert_eq!(made.status, 201, "{:?}", made.body);
    assert_eq!(made.body["refresh_retry_seconds"], 120);
    assert_eq!(made.body["dpop_bound_access_tokens"], true);
    let read = admin.get(&format!("{BASE}/mobile")).await;
    assert_eq!(read.assert_ok()["refresh_retry_seconds"], 120);
    assert_eq!(read.body["dpop_bound_access_tokens"], true);

    let changed = admin
        .patch(
            &format!("{BASE}/mobile"),
            json!({ "refresh_retry_seconds": 30, "dpop_bound_access_tokens": false }),
            read.etag.as_deref(),
        )
        .await;
    assert_eq!(changed.assert_ok()["refresh_retry_seconds"], 30);
    assert_eq!(changed.body["dpop_bound_access_tokens"], false);
    let listed = admin.get(BASE).await;
    let mobile = listed.assert_ok()["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["client_id"] == "mobile")
        .cloned()
        .unwrap();
    assert_eq!(mobile["refresh_retry_seconds"], 30);

    for bad in [121, -1] {
        let detail = admin
            .post(
                BASE,
                json!({ "client_id": "bad", "type": "public",
                        "redirect_uris": ["com.example.app:/cb"],
                        "refresh_retry_seconds": bad }),
            )
            .await
            .assert_problem(400, "invalid-input");
        assert!(detail.starts_with("refresh_retry_seconds"), "{detail}");
        let detail = admin
            .patch(
                &format!("{BASE}/mobile"),
                json!({ "refresh_retry_seconds": bad }),
                None,
            )
            .await
            .assert_problem(400, "invalid-input");
        assert!(detail.starts_with("refresh_retry_seconds"), "{detail}");
    }
    assert_eq!(
        admin.get(&format!("{BASE}/bad")).await.status,
        404,
        "nothing was registered"
    );
    let kept = admin.get(&format!("{BASE}/mobile")).await;
    assert_eq!(kept.assert_ok()["refresh_retry_seconds"], 30, "unchanged");
    app.stop().await;
}

async fn the_cli_sets_shows_and_checks_the_client_settings(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    json_output(&app.cli(&["tenant", "create", "acme", "--json"]));
    let create = |client_id: &str, extra: &[&str]| {
        let mut args = vec![
            "client",
            "create",
            "--tenant",
            "acme",
            "--client-id",
            client_id,
            "--redirect-uri",
            "com.example.app:/cb",
            "--json",
        ];
        args.extend_from_slice(extra);
        app.cli(&args)
    };
    let plain = json_output(&create("plain", &[]));
    assert_eq!(plain["refresh_retry_seconds"], 0);
    assert_eq!(plain["dpop_bound_access_tokens"], false);
    let made = json_output(&create(
        "mobile",
        &[
            "--refresh-retry-seconds",
            "90",
            "--dpop-bound-access-tokens",
        ],
    ));
    assert_eq!(made["refresh_retry_seconds"], 90);
    assert_eq!(made["dpop_bound_access_tokens"], true);

    let target = ["--tenant", "acme", "--client-id", "mobile"];
    let update = |extra: &[&str]| {
        let mut args = vec!["client", "update"];
        args.extend_from_slice(&target);
        args.extend_from_slice(extra);
        app.cli(&args)
    };
    let updated = json_output(&update(&[
        "--refresh-retry-seconds",
        "0",
        "--dpop-bound-access-tokens=false",
        "--json",
    ]));
    assert_eq!(updated["refresh_retry_seconds"], 0);
    assert_eq!(updated["dpop_bound_access_tokens"], false);
    let mut show = vec!["client", "show"];
    show.extend_from_slice(&target);
    let shown = app.cli(&show);
    let text = String::from_utf8(shown.stdout).unwrap();
    assert!(text.contains("\nrefresh_retry_seconds: 0\n"), "{text}");
    assert!(
        text.contains("\ndpop_bound_access_tokens: false\n"),
        "{text}"
    );

    for bad in ["121", "-1"] {
        for refused in [
            create("bad", &["--refresh-retry-seconds", bad]),
            update(&[&format!("--refresh-retry-seconds={bad}")]),
        ] {
            let stderr = String::from_utf8_lossy(&refused.stderr);
            assert_eq!(
                refused.status.code(),
                Some(2),
                "clap's usage error: {stderr}"
            );
            assert!(refused.stdout.is_empty());
            assert!(
                stderr.contains("refresh_retry_seconds: must be between 0 and 120"),
                "{stderr}"
            );
        }
    }
    let mut show_json = show.clone();
    show_json.push("--json");
    let kept = json_output(&app.cli(&show_json));
    assert_eq!(kept["refresh_retry_seconds"], 0, "unchanged");
    let missing = json_output(&app.cli(&["client", "list", "--tenant", "acme", "--json"]));
    let ids: Vec<_> = missing["clients"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["client_id"].clone())
        .collect();
    assert_eq!(
        ids,
        [json!("mobile"), json!("plain")],
        "nothing was registered"
    );
    app.stop().await;
}
