//! Start-up: a bad setting stops the process at once with a one-line reason and a non-zero
//! exit; logs are one line per request, in JSON when asked, with no secret in them.

use std::io::{BufRead, BufReader, Lines};
use std::process::{Child, ChildStderr, Command, Stdio};

use store::testing::TestDatabase;
use store::{NewClient, Store, TenantId};

fn serve(db: &TestDatabase, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fieldauth"))
        .args(["--database-url", &db.url, "serve"])
        .args(args)
        .env("FIELDAUTH_ADMIN_LISTEN", "127.0.0.1:0")
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

/// A `fieldauth serve` process, killed when dropped (a failed assertion included).
struct Serving(Child);

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `fieldauth serve` on `db` with JSON logs on loopback ports: the process, the rest of its
/// stderr, the auth listener's address, and the lines logged up to `listening`.
/// A provisioning command's stderr is for its errors: on PostgreSQL the migrator's notices
/// ("relation _sqlx_migrations already exists, skipping") must not fill it on every run.
#[tokio::test]
async fn commands_on_postgres_print_nothing_to_stderr() {
    let Some(db) = TestDatabase::postgres().await else {
        return;
    };
    for run in ["first", "second"] {
        let output = Command::new(env!("CARGO_BIN_EXE_fieldauth"))
            .args(["--database-url", &db.url, "tenant", "list"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(output.status.success(), "{run} run");
        assert_eq!(
            String::from_utf8_lossy(&output.stderr),
            "",
            "stderr of the {run} run"
        );
    }
}

fn serve_json_logs(
    db: &TestDatabase,
) -> (
    Serving,
    Lines<BufReader<ChildStderr>>,
    String,
    Vec<serde_json::Value>,
) {
    let spawned = Command::new(env!("CARGO_BIN_EXE_fieldauth"))
        .args(["--database-url", &db.url, "--log-format", "json", "serve"])
        .args([
            "--auth-listen",
            "127.0.0.1:0",
            "--api-listen",
            "127.0.0.1:0",
        ])
        .env("FIELDAUTH_ADMIN_LISTEN", "127.0.0.1:0")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = Serving(spawned);
    let mut lines = BufReader::new(child.0.stderr.take().unwrap()).lines();
    let mut startup = Vec::new();
    loop {
        let line = lines
            .next()
            .expect("the server logs before exiting")
            .unwrap();
        let entry: serde_json::Value =
            serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON: {line}"));
        if entry["message"] == "listening" {
            let auth_addr = entry["auth_addr"].as_str().unwrap().to_owned();
            return (child, lines, auth_addr, startup);
        }
        startup.push(entry);
    }
}

/// Reads log lines up to the `response` line of the request `request_id`: every line of that
/// request, which must not contain any of `absent`.
fn request_lines(
    lines: &mut Lines<BufReader<ChildStderr>>,
    request_id: &str,
    absent: &[&str],
) -> Vec<serde_json::Value> {
    let mut found = Vec::new();
    loop {
        let line = lines.next().expect("a request line").unwrap();
        for text in absent {
            assert!(!line.contains(text), "{text:?} reached the log: {line}");
        }
        let entry: serde_json::Value =
            serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON: {line}"));
        if entry["span"]["request_id"] != request_id {
            continue;
        }
        let done = entry["message"] == "response";
        found.push(entry);
        if done {
            return found;
        }
    }
}

/// Every log line is a JSON object; each request gets one line with its method, route,
/// status and request id, and the query string (where `state` and codes travel) is absent.
#[tokio::test]
async fn json_logs_have_one_line_per_request_without_the_query() {
    let db = TestDatabase::sqlite();
    let (server, mut lines, auth_addr, startup) = serve_json_logs(&db);
    // The first start on an empty database generated the signing key it serves.
    let created_kid = startup
        .iter()
        .find(|entry| entry["message"] == "signing key created")
        .and_then(|entry| entry["kid"].as_str())
        .expect("a key was generated on first start")
        .to_owned();
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
    let entries = request_lines(&mut lines, &request_id, &["SECRET-STATE"]);
    drop(server);
    let entry = entries.last().unwrap();
    assert_eq!(entry["status"], 200);
    assert_eq!(entry["span"]["method"], "GET");
    assert_eq!(entry["span"]["path"], "/oauth/jwks");
    assert_eq!(entry["span"]["request_id"], request_id.as_str());
}

/// STYLE.md §6: a request's lines name its tenant and client once the client is known. Only a
/// registered client id is logged: an unknown one is whatever the caller typed.
#[tokio::test]
async fn json_logs_name_the_tenant_and_only_a_registered_client() {
    let db = TestDatabase::sqlite();
    let store = Store::connect(&db.url).await.unwrap();
    let acme = TenantId::parse("acme").unwrap();
    store.create_tenant(&acme, "Acme", 0).await.unwrap();
    let client = NewClient {
        client_id: "spa",
        name: "Dispatch Board",
        secret_hash: None,
        redirect_uris: &["http://127.0.0.1:9/callback".to_owned()],
        scopes: &["openid".to_owned()],
    };
    store.tenant(&acme).create_client(&client, 0).await.unwrap();
    store.close().await;
    let (server, mut lines, auth_addr, _) = serve_json_logs(&db);
    let http = reqwest::Client::new();
    // Well formed (`<tenant>.<43 characters>`), so it reaches client authentication.
    let token = format!("acme.{:x<43}", "NOT-A-REAL-REFRESH-TOKEN");
    let refresh = |client_id: &str| {
        let fields = [
            ("grant_type", "refresh_token"),
            ("refresh_token", token.as_str()),
            ("client_id", client_id),
        ];
        http.post(format!("http://{auth_addr}/oauth/token"))
            .form(&fields)
            .send()
    };

    // A registered client presents a token that is not one: refused after authentication.
    let response = refresh("spa").await.unwrap();
    assert_eq!(response.status(), 400);
    let request_id = response.headers()["x-request-id"].to_str().unwrap();
    let entries = request_lines(&mut lines, request_id, &["NOT-A-REAL-REFRESH-TOKEN"]);
    let last = entries.last().unwrap();
    assert_eq!(last["status"], 400);
    assert_eq!(last["span"]["path"], "/oauth/token");
    assert_eq!(last["span"]["tenant"], "acme", "{last}");
    assert_eq!(last["span"]["client_id"], "spa", "{last}");
    // The span list (outermost first) holds the same request span.
    assert_eq!(last["spans"][0]["client_id"], "spa", "{last}");

    // An unregistered id is refused and never logged as a client id.
    let response = refresh("intruder-chosen-id").await.unwrap();
    assert_eq!(response.status(), 401);
    let request_id = response.headers()["x-request-id"].to_str().unwrap();
    let entries = request_lines(
        &mut lines,
        request_id,
        &["intruder-chosen-id", "NOT-A-REAL-REFRESH-TOKEN"],
    );
    drop(server);
    assert_eq!(entries.last().unwrap()["status"], 401);
    for entry in &entries {
        assert!(entry["span"].get("client_id").is_none(), "{entry}");
    }
}

crate::helpers::on_both_backends!(serve_warns_at_start_when_postgresql_runs_without_autovacuum);

/// docs/deployment.md (Database): a PostgreSQL without autovacuum keeps the statistics of
/// its last `ANALYZE`, and plans made for nearly empty tables come to read whole tables.
/// `serve` says so at every start, and says nothing of it otherwise (SQLite plans without
/// statistics). The test's PostgreSQL decides which of the two is checked.
async fn serve_warns_at_start_when_postgresql_runs_without_autovacuum(db: TestDatabase) {
    let autovacuum_off = if db.url.starts_with("postgres") {
        use sqlx::Connection;
        let mut conn = sqlx::PgConnection::connect(&db.url).await.unwrap();
        let setting: String = sqlx::query_scalar("SELECT current_setting('autovacuum')")
            .fetch_one(&mut conn)
            .await
            .unwrap();
        conn.close().await.unwrap();
        setting != "on"
    } else {
        false
    };
    crate::node_support::prepare(&db).await;
    let cluster = crate::node_support::Cluster::start(db, 1, &[]).await;
    let logs = cluster.node(0).logs();
    assert_eq!(
        logs.contains("PostgreSQL's autovacuum is off"),
        autovacuum_off,
        "{logs}"
    );
}
