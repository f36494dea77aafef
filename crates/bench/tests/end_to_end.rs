//! The bench against the debug server on SQLite: every workload runs, completes requests and
//! sees no errors, a paced run follows its target rate, other tenants are written before
//! measuring, a soak reports each minute, and the JSON report says so.

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

/// A debug server's resident set: more than 4 MiB, less than 2 GiB.
fn assert_plausible_rss(kib: &serde_json::Value, what: &str) {
    assert!(kib.is_u64(), "no RSS: {what}");
    let kib = kib.as_u64().unwrap();
    assert!(kib > 4 * 1024 && kib < 2 * 1024 * 1024, "{kib} KiB: {what}");
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
        // Compared with the ceiling only where a response is two signatures.
        match result["workload"].as_str().unwrap() {
            "refresh" | "exchange" => assert!(
                result["ceiling_percent"].as_f64().unwrap() > 0.0,
                "{result}"
            ),
            _ => assert!(result["ceiling_percent"].is_null(), "{result}"),
        }
        for field in ["rss_before_kib", "rss_peak_kib", "rss_after_kib"] {
            assert_plausible_rss(&result[field], &format!("{field} of {result}"));
        }
    }
    assert_plausible_rss(&report["servers"][0]["idle_rss_kib"], "idle");
    assert_eq!(report["servers"][0]["backend"], "sqlite");
    assert!(report["servers"][0]["tenants"].is_null());
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

/// `--tenants 50` writes 50 other tenants, each with its client, users, organization,
/// grants and refresh tokens, before the server starts; the workloads still run cleanly.
#[test]
fn other_tenants_are_provisioned_before_measuring() {
    let Some(server) = server_binary() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("tenants.db").display());
    let (stdout, report) = bench(
        &server,
        &format!(
            "--workload refresh,api --connections 2 --duration 1 --warmup 0 \
             --ceiling-seconds 0.2 --tenants 50 --tenant-users 3 --tenant-grants 2 \
             --database-url {url}"
        ),
    );
    let tenants = &report["servers"][0]["tenants"];
    assert_eq!(tenants["shape"]["tenants"], 50, "{tenants}");
    // Per tenant: the tenant, its client, organization, 3 users with a membership, a
    // session and a sign-in event each, 6 grants with 2 refresh tokens each, an employee, a
    // customer, a record number, a work order, 2 jobs and their 2 assignments.
    assert_eq!(
        tenants["rows"],
        50 * (3 + 3 * 4 + 6 * 3 + 4 + 2 * 2),
        "{tenants}"
    );
    assert!(tenants["seconds"].as_f64().unwrap() > 0.0);
    for result in report["results"].as_array().unwrap() {
        assert_eq!(result["errors"], 0, "{result}");
        assert!(result["requests"].as_u64().unwrap() > 0, "{result}");
    }
    assert!(stdout.contains("50 other tenants"), "{stdout}");
    let counts = tokio::runtime::Runtime::new().unwrap().block_on(async {
        use sqlx::Connection;
        let mut db = sqlx::SqliteConnection::connect(&url).await.unwrap();
        let mut counts = Vec::new();
        for sql in [
            "SELECT COUNT(*) FROM tenants WHERE tenant_id LIKE 'load-%'",
            "SELECT COUNT(*) FROM users WHERE tenant_id LIKE 'load-%'",
            "SELECT COUNT(*) FROM memberships WHERE tenant_id LIKE 'load-%'",
            "SELECT COUNT(*) FROM refresh_tokens WHERE tenant_id LIKE 'load-%' AND consumed_at IS NULL",
            "SELECT COUNT(*) FROM organization_data_versions WHERE tenant_id LIKE 'load-%'",
        ] {
            let count: i64 = sqlx::query_scalar(sql).fetch_one(&mut db).await.unwrap();
            counts.push(count);
        }
        counts
    });
    assert_eq!(counts, [50, 150, 150, 300, 50]);
}

/// A soak of three (two-second) "minutes": a row per minute with steps of every kind, no
/// errors, the server's resident set and the database's size, and a verdict on its growth.
#[test]
fn a_soak_reports_each_minute() {
    let Some(server) = server_binary() else {
        return;
    };
    let (stdout, report) = bench(
        &server,
        "--soak 3 --soak-minute-seconds 2 --soak-capacity-seconds 1 --connections 2",
    );
    assert_eq!(report["results"].as_array().unwrap().len(), 0);
    let soak = &report["soak"][0];
    assert_eq!(soak["backend"], "sqlite");
    assert_eq!(soak["errors"], 0, "{soak}");
    let capacity = soak["capacity_steps_per_s"].as_f64().unwrap();
    let target = soak["target_steps_per_s"].as_f64().unwrap();
    assert!((target - capacity * 0.8).abs() < 1e-6, "{soak}");
    let minutes = soak["minutes"].as_array().unwrap();
    assert_eq!(minutes.len(), 3, "{soak}");
    for (index, minute) in minutes.iter().enumerate() {
        assert_eq!(minute["minute"], index + 1);
        assert!(minute["steps"].as_u64().unwrap() > 0, "{minute}");
        assert!(
            minute["requests"].as_u64().unwrap() > minute["steps"].as_u64().unwrap(),
            "{minute}"
        );
        assert!(minute["p99_ms"].as_f64().unwrap() > 0.0, "{minute}");
        assert_plausible_rss(&minute["rss_peak_kib"], "soak peak");
        assert_plausible_rss(&minute["rss_end_kib"], "soak end");
        assert!(
            minute["database_bytes"].as_u64().unwrap() > 100_000,
            "{minute}"
        );
    }
    // Over the three minutes every kind of step ran.
    for kind in [
        "sign-in",
        "exchange",
        "refresh",
        "userinfo",
        "api-query",
        "api-write",
    ] {
        let steps: u64 = minutes
            .iter()
            .map(|m| m["steps_by_kind"][kind].as_u64().unwrap())
            .sum();
        assert!(steps > 0, "no {kind} step: {soak}");
    }
    assert!(soak["database_levelled_off"].is_boolean(), "{soak}");
    assert!(stdout.contains("sqlite: database size "), "{stdout}");
    assert!(stdout.contains("| 3 |"), "{stdout}");
}
