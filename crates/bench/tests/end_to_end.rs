//! The bench against the debug server on SQLite: every workload runs, completes requests and
//! sees no errors, and the JSON report says so.

use std::path::Path;
use std::process::Command;

/// Each workload for one second on two connections: more than zero requests, zero errors,
/// and the server's CPU time read.
#[test]
fn every_workload_completes_requests_without_errors_on_sqlite() {
    let bench = Path::new(env!("CARGO_BIN_EXE_fieldauth-bench"));
    // The server is another package's binary: `cargo test --workspace` builds it beside the
    // bench, `cargo test -p fieldauth-bench` alone does not.
    let server = bench.with_file_name("fieldauth");
    if !server.is_file() {
        store::testing::skip_or_fail(&format!(
            "no server binary at {} (run `cargo build -p fieldauth` first)",
            server.display()
        ));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("bench.json");
    let output = Command::new(bench)
        .args(["--workload", "all", "--database", "sqlite"])
        .args(["--connections", "2", "--duration", "1", "--warmup", "0"])
        .args(["--server-log", "warn", "--ceiling-seconds", "0.5"])
        .arg("--server-bin")
        .arg(&server)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );

    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let results = report["results"].as_array().unwrap();
    let workloads: Vec<&str> = results
        .iter()
        .map(|r| r["workload"].as_str().unwrap())
        .collect();
    assert_eq!(
        workloads,
        ["login", "refresh", "exchange", "userinfo", "api"]
    );
    for result in results {
        assert_eq!(result["backend"], "sqlite", "{result}");
        assert!(result["requests"].as_u64().unwrap() > 0, "{result}");
        assert_eq!(result["errors"], 0, "{result}");
        assert!(
            result["server_cpu_ms_per_request"].as_f64().unwrap() > 0.0,
            "{result}"
        );
        assert!(
            result["p50_ms"].as_f64().unwrap() <= result["max_ms"].as_f64().unwrap(),
            "{result}"
        );
        assert!(
            result["ceiling_signs_per_cpu_s"].as_f64().unwrap() > 0.0,
            "{result}"
        );
        assert!(
            result["ceiling_percent"].as_f64().unwrap() > 0.0,
            "{result}"
        );
    }
    assert_eq!(report["settings"]["connections"], 2);
    assert!(report["machine"]["nproc"].as_u64().unwrap() >= 1);
    // The table names every workload too.
    for workload in workloads {
        assert!(stdout.contains(&format!("| {workload} ")), "{stdout}");
    }
}
