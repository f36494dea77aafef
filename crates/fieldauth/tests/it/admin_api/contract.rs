//! The admin API's contract: the OpenAPI document the binary prints is the one the repository
//! keeps (`admin-openapi.json`) and the one the listener serves, and a property-based run of
//! schemathesis against that document finds no 5xx and no response outside the schema.

use std::time::Duration;

use serde_json::{json, Value};

use super::support::AdminClient;
use crate::helpers::{on_both_backends, TestApp};
use store::testing::{skip_or_fail, TestDatabase};

const KEPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../admin-openapi.json");

#[tokio::test]
async fn the_repository_openapi_document_is_what_the_binary_prints() {
    let db = TestDatabase::sqlite();
    let output = crate::helpers::cli(&db, &["admin-api", "openapi"], None);
    crate::helpers::assert_ok(&output);
    let printed = String::from_utf8(output.stdout).unwrap();
    let kept = std::fs::read_to_string(KEPT).unwrap();
    assert!(
        printed == kept,
        "admin-openapi.json drifted from the code: run \
         `cargo run -- admin-api openapi > admin-openapi.json` and review the diff"
    );
    let document: Value = serde_json::from_str(&kept).unwrap();
    assert!(document["openapi"].as_str().unwrap().starts_with("3.1."));
    // The contract's paths, as the issue fixes them.
    for path in ["/admin/v1/tenants", "/admin/v1/tenants/{tenant}"] {
        assert!(document["paths"].get(path).is_some(), "{path} is missing");
    }
}

on_both_backends!(
    the_served_document_is_the_kept_one,
    schemathesis_finds_no_server_error_and_no_response_outside_the_schema,
);

async fn the_served_document_is_the_kept_one(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let served: Value = app
        .get(&format!("{}/admin/v1/openapi.json", app.admin_url))
        .await
        .json()
        .await
        .unwrap();
    let kept: Value = serde_json::from_str(&std::fs::read_to_string(KEPT).unwrap()).unwrap();
    assert_eq!(served, kept);
    app.stop().await;
}

/// How many examples schemathesis generates per operation: enough to reach the refusals of
/// every field, few enough that the run takes a minute.
const EXAMPLES_PER_OPERATION: &str = "25";

async fn schemathesis_finds_no_server_error_and_no_response_outside_the_schema(db: TestDatabase) {
    let Some(schemathesis) = which("schemathesis") else {
        skip_or_fail("schemathesis is not installed (python3 -m pip install schemathesis)");
        return;
    };
    let app = TestApp::spawn(db).await;
    let admin = AdminClient::new(&app, "schemathesis", None).await;
    // A tenant with one of everything, so generated requests also reach existing records.
    admin
        .post("/tenants", json!({ "tenant": "acme" }))
        .await
        .assert_ok();
    // schemathesis keeps a cache of what it found in its working directory: a temporary one,
    // so a run leaves nothing in the checkout.
    let workdir = tempfile::tempdir().unwrap();
    let output = tokio::time::timeout(
        Duration::from_secs(600),
        tokio::process::Command::new(schemathesis)
            .args([
                "run",
                &format!("{}/admin/v1/openapi.json", app.admin_url),
                "--header",
                &format!("Authorization: Bearer {}", admin.token),
                "--checks",
                "not_a_server_error,response_schema_conformance,content_type_conformance",
                "--max-examples",
                EXAMPLES_PER_OPERATION,
                "--workers",
                "1",
                "--seed",
                "22",
                "--no-color",
                "--suppress-health-check",
                "all",
            ])
            .current_dir(workdir.path())
            .env("SCHEMATHESIS_HOOKS", "")
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("schemathesis ran over 10 minutes")
    .unwrap();
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "schemathesis found failures:\n{report}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    app.stop().await;
}

fn which(program: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|dir| std::path::Path::new(dir).join(program))
        .find(|path| path.is_file())
}
