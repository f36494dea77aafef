//! The bench against the debug server on SQLite: every workload runs, completes requests and
//! sees no errors, a paced run follows its target rate, and the JSON report says so.

// The helpers below are test code too, outside any `#[test]`.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// One bench at a time: two servers under load at once would distort the paced run's rate.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The server binary beside the bench's, if it was built.
fn server_binary() -> Option<PathBuf> {
    let bench = Path::new(env!("CARGO_BIN_EXE_fieldauth-bench"));
    // The server is another package's binary: `cargo test --workspace` builds it beside the
    // bench, `cargo test -p fieldauth-bench` alone does not.
    let server = bench.with_file_name("fieldauth");
    if !server.is_file() {
        store::testing::skip_or_fail(&format!(
            "no server binary at {} (run `cargo build -p fieldauth` first)",
            server.display()
        ));
        return None;
    }
    Some(server)
}

/// Runs the bench on SQLite with `args` (split on spaces); its stdout and its JSON report,
/// after checking that it succeeded.
fn bench(server: &Path, args: &str) -> (String, serde_json::Value) {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("bench.json");
    let output = Command::new(env!("CARGO_BIN_EXE_fieldauth-bench"))
        .args(["--database", "sqlite", "--server-log", "warn"])
        .args(args.split_whitespace())
        .arg("--server-bin")
        .arg(server)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let report = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (stdout, report)
}

/// Each workload for one second on two connections: more than zero requests, zero errors,
/// the server's CPU time read, and the signing ceiling measured and compared.
#[test]
fn every_workload_completes_requests_without_errors_on_sqlite() {
    let Some(server) = server_binary() else {
        return;
    };
    let (stdout, report) = bench(
        &server,
        "--workload all --connections 2 --duration 1 --warmup 0 --ceiling-seconds 0.5",
    );
    let results = report["results"].as_array().unwrap();
    let workloads: Vec<&str> = results
        .iter()
        .map(|r| r["workload"].as_str().unwrap())
        .collect();
    assert_eq!(
        workloads,
        [
            "login",
            "refresh",
            "exchange",
            "userinfo",
            "api",
            "api-uncached"
        ]
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

/// A paced run at half the closed loop's rate: a `max` and a `paced 50%` row per workload,
/// the paced one near its target and well below the maximum, and no errors.
#[test]
fn a_paced_run_follows_its_target_rate() {
    let Some(server) = server_binary() else {
        return;
    };
    let (stdout, report) = bench(
        &server,
        "--workload refresh,exchange --connections 2 --duration 1 --warmup 0 \
         --ceiling-seconds 0.5 --paced 0.5",
    );
    let results = report["results"].as_array().unwrap();
    let rows: Vec<(&str, &str)> = results
        .iter()
        .map(|r| (r["workload"].as_str().unwrap(), r["mode"].as_str().unwrap()))
        .collect();
    assert_eq!(
        rows,
        [
            ("refresh", "max"),
            ("refresh", "paced 50%"),
            ("exchange", "max"),
            ("exchange", "paced 50%"),
        ]
    );
    for pair in results.chunks(2) {
        let (max, paced) = (&pair[0], &pair[1]);
        assert_eq!(max["errors"], 0, "{max}");
        assert_eq!(paced["errors"], 0, "{paced}");
        assert!(max["target_requests_per_s"].is_null(), "{max}");
        let max_rate = max["requests_per_s"].as_f64().unwrap();
        let target = paced["target_requests_per_s"].as_f64().unwrap();
        let rate = paced["requests_per_s"].as_f64().unwrap();
        assert!((target - max_rate * 0.5).abs() < 1e-6, "{max}\n{paced}");
        // A one-second run on a busy machine: loose, but a closed loop would exceed it.
        assert!(
            rate > target * 0.6 && rate < target * 1.4,
            "paced at {rate}/s for a target of {target}/s\n{paced}"
        );
        assert!(rate < max_rate * 0.8, "paced at {rate}/s, max {max_rate}/s");
        assert!(paced["ceiling_percent"].as_f64().unwrap() > 0.0, "{paced}");
    }
    assert!(stdout.contains("| paced 50% |"), "{stdout}");
}
