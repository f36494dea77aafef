//! Start-up: a bad setting stops the process at once with a one-line reason and a non-zero
//! exit; logs are one line per request, in JSON when asked, with no secret in them.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use store::testing::TestDatabase;

fn serve(db: &TestDatabase, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fieldauth"))
        .args(["--database-url", &db.url, "serve"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn assert_one_line_failure(output: &std::process::Output, starts: &str) {
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with(starts),
        "last stderr line {last:?} does not start with {starts:?}"
    );
}

#[test]
fn unparsable_urls_stop_start_up() {
    let db = TestDatabase::sqlite();
    let output = serve(
        &db,
        &[
            "--auth-url",
            "not a url",
            "--auth-listen",
            "127.0.0.1:0",
            "--api-listen",
            "127.0.0.1:0",
        ],
    );
    assert_one_line_failure(
        &output,
        "error: --auth-url \"not a url\": invalid issuer URL",
    );
    let output = serve(
        &db,
        &[
            "--api-url",
            "127.0.0.1:8081",
            "--auth-listen",
            "127.0.0.1:0",
            "--api-listen",
            "127.0.0.1:0",
        ],
    );
    assert_one_line_failure(&output, "error: --api-url \"127.0.0.1:8081\"");
}

#[test]
fn a_busy_port_stops_start_up() {
    let db = TestDatabase::sqlite();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().to_string();
    let output = serve(
        &db,
        &["--auth-listen", &port, "--api-listen", "127.0.0.1:0"],
    );
    assert_one_line_failure(
        &output,
        &format!("error: cannot listen on {port} (--auth-listen): "),
    );
}

#[test]
fn an_unsupported_database_url_stops_start_up() {
    let output = Command::new(env!("CARGO_BIN_EXE_fieldauth"))
        .args(["--database-url", "mysql://localhost/x", "tenant", "list"])
        .output()
        .unwrap();
    assert_one_line_failure(
        &output,
        "error: cannot open the database (--database-url): unsupported database URL scheme",
    );
}

/// Every log line is a JSON object; each request gets one line with its method, route,
/// status and request id, and the query string (where `state` and codes travel) is absent.
#[tokio::test]
async fn json_logs_have_one_line_per_request_without_the_query() {
    let db = TestDatabase::sqlite();
    let mut child = Command::new(env!("CARGO_BIN_EXE_fieldauth"))
        .args(["--database-url", &db.url, "--log-format", "json", "serve"])
        .args([
            "--auth-listen",
            "127.0.0.1:0",
            "--api-listen",
            "127.0.0.1:0",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut created_kid = None;
    let auth_addr = loop {
        let line = lines
            .next()
            .expect("the server logs before exiting")
            .unwrap();
        let entry: serde_json::Value =
            serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON: {line}"));
        if entry["message"] == "signing key created" {
            created_kid = entry["kid"].as_str().map(str::to_owned);
        }
        if entry["message"] == "listening" {
            break entry["auth_addr"].as_str().unwrap().to_owned();
        }
    };
    // The first start on an empty database generated the signing key it serves.
    let created_kid = created_kid.expect("a key was generated on first start");
    let response = reqwest::get(format!("http://{auth_addr}/oauth/jwks?state=SECRET-STATE"))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let request_id = response.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let jwks: serde_json::Value = response.json().await.unwrap();
    assert_eq!(jwks["keys"][0]["kid"], created_kid.as_str());
    let entry = loop {
        let line = lines.next().expect("a request line").unwrap();
        assert!(
            !line.contains("SECRET-STATE"),
            "the query string reached the log: {line}"
        );
        let entry: serde_json::Value =
            serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON: {line}"));
        if entry["message"] == "response" {
            break entry;
        }
    };
    child.kill().unwrap();
    let _ = child.wait();
    assert_eq!(entry["status"], 200);
    assert_eq!(entry["span"]["method"], "GET");
    assert_eq!(entry["span"]["path"], "/oauth/jwks");
    assert_eq!(entry["span"]["request_id"], request_id.as_str());
}
