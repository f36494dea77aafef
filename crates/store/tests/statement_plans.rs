//! The plan of every statement a sign-in, a code exchange, a refresh, userinfo, an API
//! request and a sign-out send, on both backends: each row must be found by its key, never by reading the
//! tenant's rows (or a whole table) in search of it. The cost of such a plan grows with the
//! tenant, so nothing else in the suite would notice it: a refresh rotation once listed every
//! grant of the tenant on SQLite (`grant_id IN (SELECT …)`) and ran at half its speed in the
//! bench.
//!
//! The statements are the ones the store really sends, taken from sqlx's debug events while
//! the operations run, then explained: SQLite's `EXPLAIN QUERY PLAN` (its plans use no
//! statistics), and on PostgreSQL the generic plan each connection keeps, made with the
//! statistics of a database in use and sent back by `auto_explain`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Mutex, OnceLock};

use sqlx::{Connection, Row};
use store::testing::TestDatabase;
use store::{
    CheckedExchange, CodeExchange, FailureSubject, Issuance, NewAuditEvent, NewAuthorizationCode,
    NewAuthorizationRequest, NewClient, NewGrant, NewRefreshToken, NewUser, PresentedCode,
    RefreshRotation, RefreshingClient, Store, TenantId, TenantStore,
};
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::Layer;

const NOW: i64 = 1_800_000_000;

/// One test for both backends, one after the other: the statements are taken from events
/// every thread sends, so no other test of this file may send any meanwhile.
#[tokio::test]
async fn hot_statements_find_rows_by_key() {
    let db = TestDatabase::sqlite();
    let statements = hot_paths(&db.url).await.statements;
    let faults = sqlite_faults(&db.url, &statements).await;
    assert!(
        faults.is_empty(),
        "SQLite plans that read more than a key's rows:\n{}",
        faults.join("\n\n")
    );

    let Some(db) = TestDatabase::postgres().await else {
        return;
    };
    {
        let store = Store::connect(&db.url).await.unwrap();
        store.close().await;
    }
    fill_and_analyze(&db.url).await;
    let plans = hot_paths(&with_plans_explained(&db.url)).await.plans;
    // Every statement's plan, with its nested statements (triggers): well over one each.
    assert!(plans.len() >= 15, "captured only {plans:?}");
    let faults: Vec<&String> = plans
        .iter()
        .filter(|plan| plan.lines().any(postgres_reads_too_much))
        .collect();
    assert!(
        faults.is_empty(),
        "PostgreSQL plans that read more than a key's rows:\n{}",
        faults
            .iter()
            .map(|plan| plan.as_str())
            .collect::<Vec<_>>()
            .join("\n\n")
    );
}

/// Three other tenants' records, a thousand or a few of each kind, with statistics: the planner's view
/// of a database in use. (A fresh database's first plans, made before any statistics, can
/// be anything while every table looks empty; autovacuum analyzes a table within its first
/// minute of writes, which replaces the plans connections keep. `plans.rs` checks the
/// lookups by hash even then.)
async fn fill_and_analyze(url: &str) {
    let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
    for sql in [
        "INSERT INTO tenants SELECT 'other' || t, 'Other', 0 FROM generate_series(1, 3) t",
        "INSERT INTO clients SELECT tenant_id, 'web', 'Web', 'public', NULL, '[]', 'openid', 0 \
         FROM tenants",
        "INSERT INTO clients SELECT tenant_id, 'app' || n, 'App', 'public', NULL, '[]', \
           'openid', 0 FROM tenants, generate_series(1, 1000) n",
        "INSERT INTO users SELECT tenant_id, 'u' || n, 'user' || n, 'x', 'N', 'e', 0 \
         FROM tenants, generate_series(1, 1000) n",
        "INSERT INTO organizations SELECT tenant_id, 'org' || n, 'Org ' || n, 0 \
         FROM tenants, generate_series(1, 1000) n",
        "INSERT INTO memberships SELECT tenant_id, 'u' || n, 'org' || (n % 1000 + 1), 0 \
         FROM tenants, generate_series(1, 1000) n",
        "INSERT INTO grants SELECT tenant_id, 'g' || n, 'web', 'u' || (n % 1000 + 1), 'org1', \
           'openid', 0, 0, NULL, NULL FROM tenants, generate_series(1, 3000) n",
        "INSERT INTO refresh_tokens SELECT tenant_id, sha256(('r' || n)::bytea), 'g' || n, 0, \
           4000000000, NULL FROM tenants, generate_series(1, 3000) n",
        "INSERT INTO authorization_codes SELECT tenant_id, sha256(('c' || n)::bytea), 'web', \
           'https://a/cb', 'u' || (n % 1000 + 1), 'org1', 'openid', NULL, 'c', 0, 0, \
           4000000000, NULL, NULL FROM tenants, generate_series(1, 3000) n",
        "INSERT INTO authorization_requests SELECT tenant_id, sha256(('q' || n)::bytea), 'web', \
           'https://a/cb', 'openid', 's', NULL, 'c', NULL, '\\x00', '\\x00', NULL, NULL, 0, \
           4000000000, NULL FROM tenants, generate_series(1, 3000) n",
        "INSERT INTO browser_sessions SELECT tenant_id, sha256(('b' || n)::bytea), \
           'u' || (n % 1000 + 1), 0, 0, 4000000000 FROM tenants, generate_series(1, 3000) n",
        "INSERT INTO signin_failures SELECT tenant_id, 'account', 'user' || n, 1, 0, 0 \
         FROM tenants, generate_series(1, 1000) n",
        "ANALYZE",
    ] {
        sqlx::query(sql)
            .execute(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("{e}: {sql}"));
    }
    conn.close().await.unwrap();
}

/// The server's connections with each executed plan sent back as a notice (`auto_explain`,
/// which needs a superuser, as the test role of `FIELDAUTH_TEST_POSTGRES_URL` is), and the
/// generic plan that every connection comes to keep for a prepared statement made at once.
fn with_plans_explained(url: &str) -> String {
    assert!(url.contains("options=-c%20search_path"), "{url}");
    format!(
        "{url}%20-c%20session_preload_libraries%3Dauto_explain\
         %20-c%20auto_explain.log_min_duration%3D0\
         %20-c%20auto_explain.log_level%3Dnotice\
         %20-c%20auto_explain.log_nested_statements%3Don\
         %20-c%20plan_cache_mode%3Dforce_generic_plan"
    )
}

async fn sqlite_faults(url: &str, statements: &[String]) -> Vec<String> {
    let mut conn = sqlx::SqliteConnection::connect(url).await.unwrap();
    let mut faults = Vec::new();
    for sql in statements {
        let plan: Vec<String> = sqlx::query(&format!("EXPLAIN QUERY PLAN {sql}"))
            .fetch_all(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("{e}: {sql}"))
            .iter()
            .map(|row| {
                row.try_get::<String, _>("detail")
                    .unwrap_or_else(|e| panic!("{e}: {sql}"))
            })
            .collect();
        // What a plan scans that it built itself (a subquery's rows, `VALUES`).
        let built: Vec<&str> = plan
            .iter()
            .filter_map(|line| {
                line.strip_prefix("MATERIALIZE ")
                    .or_else(|| line.strip_prefix("CO-ROUTINE "))
            })
            .collect();
        if plan.iter().any(|line| sqlite_reads_too_much(line, &built)) {
            faults.push(format!("{sql}\n  {}", plan.join("\n  ")));
        }
    }
    conn.close().await.unwrap();
    faults
}

/// A scan of a table, a list built from a subquery, an automatic index, or an index searched
/// by the tenant alone: work that grows with the tenant's rows. A scan of constant rows or of
/// rows the plan `built` itself (`VALUES`) is not, nor is a sort: it orders rows already
/// found by a key (a user's organizations).
fn sqlite_reads_too_much(line: &str, built: &[&str]) -> bool {
    let scanned = line.strip_prefix("SCAN ").is_some_and(|rest| {
        !rest.contains("CONSTANT ROW")
            && !rest.contains("VALUES CLAUSE")
            && !built.contains(&rest.split(' ').next().unwrap_or(""))
    });
    scanned
        || line.contains("LIST SUBQUERY")
        || line.contains("AUTOMATIC")
        || line.ends_with("(tenant_id=?)")
}

/// A sequential scan, a hash join (which reads one side whole), or an index (or a bitmap
/// of one) searched by the tenant alone. A bitmap scan by more than the tenant (a user's
/// grants) reads that key's rows, as an index scan would.
fn postgres_reads_too_much(line: &str) -> bool {
    line.contains("Seq Scan")
        || line.contains("Hash Join")
        || condition_is_tenant_only(line, "Index Cond: ")
        || condition_is_tenant_only(line, "Recheck Cond: ")
}

fn condition_is_tenant_only(line: &str, label: &str) -> bool {
    let Some(cond) = line.split(label).nth(1) else {
        return false;
    };
    cond.matches(" = ").count() == 1 && cond.contains("tenant_id = ")
}

#[test]
fn the_fault_tests_tell_a_key_from_the_tenant() {
    let built = ["v"];
    assert!(sqlite_reads_too_much(
        "SEARCH grants USING INDEX sqlite_autoindex_grants_1 (tenant_id=?)",
        &built
    ));
    assert!(sqlite_reads_too_much("LIST SUBQUERY 1", &built));
    assert!(sqlite_reads_too_much("SCAN grants", &built));
    assert!(!sqlite_reads_too_much("SCAN 2 CONSTANT ROWS", &built));
    assert!(!sqlite_reads_too_much("SCAN 2-ROW VALUES CLAUSE", &built));
    assert!(!sqlite_reads_too_much("SCAN v", &built));
    assert!(sqlite_reads_too_much("SCAN g", &built));
    assert!(!sqlite_reads_too_much(
        "SEARCH g USING INDEX sqlite_autoindex_grants_1 (tenant_id=? AND grant_id=?)",
        &built
    ));
    assert!(postgres_reads_too_much(
        "        Index Cond: (tenant_id = $2)"
    ));
    assert!(!postgres_reads_too_much(
        "        Index Cond: ((tenant_id = $2) AND (grant_id = refresh_tokens.grant_id))"
    ));
    assert!(postgres_reads_too_much(
        "  ->  Seq Scan on grants g  (cost=0.00..1.00 rows=1 width=32)"
    ));
    assert!(postgres_reads_too_much(
        "        Recheck Cond: (tenant_id = $1)"
    ));
    assert!(!postgres_reads_too_much(
        "        Recheck Cond: ((tenant_id = $1) AND (user_id = s.user_id))"
    ));
    assert!(postgres_reads_too_much(
        "        Index Cond: ((tenant_id = $1) AND (sid IS NOT NULL))"
    ));
}

/// What the hot paths sent: the distinct statements in the order first sent, and on
/// PostgreSQL with [`with_plans_explained`] the plan of each execution.
async fn hot_paths(url: &str) -> Captured {
    let store = Store::connect(url).await.unwrap();
    let t = TenantId::parse("acme").unwrap();
    store.create_tenant(&t, "Acme", NOW).await.unwrap();
    let tenant = store.tenant(&t);
    provision(&tenant).await;

    let capture = start_capture();
    sign_in(&tenant).await;
    exchange_and_refresh(&tenant).await;
    // Sign-out, which finds the clients to tell among the grants of the session's user.
    tenant
        .delete_browser_session(b"session", NOW)
        .await
        .unwrap();
    let mut captured = capture.take();
    store.close().await;

    let mut distinct: Vec<String> = Vec::new();
    // A SQLite batch is sent as one string of several statements (no `;` is quoted in them).
    let sent = captured
        .statements
        .iter()
        .flat_map(|batch| batch.split(';'));
    for sql in sent {
        let sql = sql.trim().to_owned();
        // Transaction control, and the settings of a connection the pool opened meanwhile.
        let unplanned = [
            "BEGIN",
            "COMMIT",
            "ROLLBACK",
            "SAVEPOINT",
            "RELEASE",
            "PRAGMA",
            "SET",
        ]
        .iter()
        .any(|word| sql.to_ascii_uppercase().starts_with(word));
        if !unplanned && !sql.is_empty() && !distinct.contains(&sql) {
            distinct.push(sql);
        }
    }
    // A grant's path sends well over ten kinds of statement; fewer means the capture lost
    // them, and the test would pass on nothing.
    assert!(distinct.len() >= 15, "captured only {distinct:?}");
    captured.statements = distinct;
    captured
}

async fn provision(tenant: &TenantStore<'_>) {
    let uris = vec!["https://app.example.com/cb".to_owned()];
    let scopes = vec!["openid".to_owned(), "offline_access".to_owned()];
    tenant
        .create_client(
            &NewClient {
                client_id: "web",
                name: "Web",
                secret_hash: Some(&[7u8; 32]),
                redirect_uris: &uris,
                scopes: &scopes,
            },
            NOW,
        )
        .await
        .unwrap();
    tenant
        .create_user(
            &NewUser {
                user_id: "u1",
                username: "alice",
                password_hash: "$argon2id$x",
                name: "Alice",
                email: "alice@example.com",
            },
            NOW,
        )
        .await
        .unwrap();
    tenant
        .create_organization("org-a", "Org A", NOW)
        .await
        .unwrap();
    tenant.add_membership("u1", "org-a", NOW).await.unwrap();
}

/// The authorize endpoint, the sign-in page and the consent page.
async fn sign_in(tenant: &TenantStore<'_>) {
    tenant.find_client("web").await.unwrap().unwrap();
    tenant
        .create_authorization_request(
            &NewAuthorizationRequest {
                request_hash: b"req",
                client_id: "web",
                redirect_uri: "https://app.example.com/cb",
                scope: "openid offline_access",
                state: "st",
                nonce: Some("n"),
                code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
                login_hint: None,
                browser_hash: b"browser",
                csrf_hash: b"csrf",
                user_id: None,
                auth_time: None,
                acr_mfa: false,
                expires_at: NOW + 600,
            },
            NOW,
        )
        .await
        .unwrap();
    tenant
        .find_authorization_request(b"req")
        .await
        .unwrap()
        .unwrap();
    let account = FailureSubject::Account("alice");
    let address = FailureSubject::Address("127.0.0.1");
    tenant.signin_failures(account).await.unwrap();
    tenant
        .record_signin_failure(account, NOW, NOW - 60)
        .await
        .unwrap();
    tenant
        .record_signin_failure(address, NOW, NOW - 60)
        .await
        .unwrap();
    tenant
        .find_user_by_username("alice")
        .await
        .unwrap()
        .unwrap();
    tenant.clear_signin_failures(account).await.unwrap();
    assert!(tenant
        .record_signin(b"req", b"browser", b"browser2", "u1", NOW, NOW)
        .await
        .unwrap());
    tenant
        .create_browser_session(
            &store::testing::password_session(b"session", "sid-1", "u1", NOW, NOW + 3600),
            NOW,
        )
        .await
        .unwrap();
    tenant
        .find_browser_session(b"session", NOW)
        .await
        .unwrap()
        .unwrap();
    tenant.find_user("u1").await.unwrap().unwrap();
    tenant.organizations_of("u1").await.unwrap();
    tenant.find_organization("org-a").await.unwrap().unwrap();
    tenant
        .consume_authorization_request(b"req", b"browser2", NOW)
        .await
        .unwrap()
        .unwrap();
    tenant
        .create_authorization_code(&code(b"c1"), NOW)
        .await
        .unwrap();
    tenant
        .record_audit_event(&NewAuditEvent {
            kind: "signin",
            occurred_at: NOW,
            subject: Some("u1"),
            client_id: Some("web"),
            address: Some("127.0.0.1"),
            detail: "{}",
        })
        .await
        .unwrap();
}

/// The token endpoint (both grants, a replayed code, a reused refresh token), userinfo and
/// the API's bearer check.
async fn exchange_and_refresh(tenant: &TenantStore<'_>) {
    let CodeExchange::Redeemed(redeemed) = tenant
        .present_code("web", b"c1", "g1", NOW + 1)
        .await
        .unwrap()
        .expect("the client exists")
        .1
    else {
        panic!("c1 must redeem");
    };
    let grant = NewGrant {
        grant_id: "g1",
        client_id: "web",
        user_id: "u1",
        organization_guid: "org-a",
        scope: "openid offline_access",
        auth_time: NOW,
        dpop_jkt: None,
    };
    let issuance = redeemed
        .issue(&grant, Some(refresh(b"r1")), NOW + 1)
        .await
        .unwrap();
    assert!(matches!(issuance, Issuance::Issued(_)), "{issuance:?}");
    // An exchange by a client kept in memory: the redemption makes the code's checks.
    tenant
        .create_authorization_code(&code(b"c4"), NOW)
        .await
        .unwrap();
    let client = tenant.find_client("web").await.unwrap().unwrap();
    let presented = PresentedCode {
        code_hash: b"c4",
        client_id: "web",
        client_state: client.state(),
        redirect_uri: "https://app.example.com/cb",
        code_challenge: "c",
        grant_id: "g4",
        dpop_jkt: None,
        refresh_token: refresh(b"r4"),
    };
    let checked = tenant
        .exchange_checked_code(&presented, NOW + 1)
        .await
        .unwrap();
    assert!(
        matches!(checked, CheckedExchange::Issued { .. }),
        "{checked:?}"
    );
    // The replay of the code, which revokes its grant: on a grant of its own.
    tenant
        .create_authorization_code(&code(b"c2"), NOW)
        .await
        .unwrap();
    let CodeExchange::Redeemed(spent) = tenant
        .present_code("web", b"c2", "g2", NOW + 1)
        .await
        .unwrap()
        .expect("the client exists")
        .1
    else {
        panic!("c2 must redeem");
    };
    spent.spend().await.unwrap();
    let replay = tenant
        .present_code("web", b"c2", "g3", NOW + 2)
        .await
        .unwrap()
        .expect("the client exists")
        .1;
    assert!(
        matches!(replay, CodeExchange::Replayed { .. }),
        "{replay:?}"
    );

    let rotation = tenant
        .rotate_refresh_token(
            b"r1",
            RefreshingClient::new("web", 0),
            refresh(b"r2"),
            90 * 86_400,
            NOW + 3,
        )
        .await
        .unwrap();
    assert!(
        matches!(rotation, RefreshRotation::Rotated(..)),
        "{rotation:?}"
    );
    tenant.user_of_grant("g1", "u1").await.unwrap();
    tenant.api_standing("g1", "org-a").await.unwrap();
    tenant.find_refresh_token(b"r2").await.unwrap().unwrap();
    // Issue 27: r1 again within a 60 s window, r2 unused: the retry's statements.
    let retry = tenant
        .rotate_refresh_token(
            b"r1",
            RefreshingClient::new("web", 60),
            refresh(b"r9"),
            90 * 86_400,
            NOW + 4,
        )
        .await
        .unwrap();
    assert!(matches!(retry, RefreshRotation::Retried(..)), "{retry:?}");
    let reuse = tenant
        .rotate_refresh_token(
            b"r1",
            RefreshingClient::new("web", 0),
            refresh(b"r3"),
            90 * 86_400,
            NOW + 4,
        )
        .await
        .unwrap();
    assert!(matches!(reuse, RefreshRotation::Reused { .. }), "{reuse:?}");
}

fn code(code_hash: &[u8]) -> NewAuthorizationCode<'_> {
    NewAuthorizationCode {
        code_hash,
        client_id: "web",
        redirect_uri: "https://app.example.com/cb",
        user_id: "u1",
        organization_guid: "org-a",
        scope: "openid offline_access",
        nonce: Some("n"),
        code_challenge: "c",
        auth_time: NOW,
        expires_at: NOW + 60,
        sid: None,
        amr: None,
    }
}

fn refresh(token_hash: &[u8]) -> NewRefreshToken<'_> {
    NewRefreshToken {
        token_hash,
        expires_at: NOW + 30 * 86_400,
    }
}

/// sqlx's statement events, and PostgreSQL's notices, while a [`Capture`] is taken.
static CAPTURED: Mutex<Option<Captured>> = Mutex::new(None);

#[derive(Debug, Default)]
struct Captured {
    statements: Vec<String>,
    plans: Vec<String>,
}

struct Capture;

impl Capture {
    fn take(self) -> Captured {
        CAPTURED.lock().unwrap().take().unwrap_or_default()
    }
}

fn start_capture() -> Capture {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(Events))
            .unwrap();
    });
    *CAPTURED.lock().unwrap() = Some(Captured::default());
    Capture
}

struct Events;

impl<S: tracing::Subscriber> Layer<S> for Events {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let target = event.metadata().target();
        if target != "sqlx::query" && target != "sqlx::postgres::notice" {
            return;
        }
        let mut fields = StatementFields::default();
        event.record(&mut fields);
        let mut captured = CAPTURED.lock().unwrap();
        let Some(captured) = captured.as_mut() else {
            return;
        };
        if target == "sqlx::postgres::notice" {
            if fields.message.contains("plan:") {
                captured.plans.push(fields.message);
            }
        } else if fields.statement.trim().is_empty() {
            // sqlx leaves `db.statement` empty when the summary (its first words) is the
            // whole statement.
            captured.statements.push(fields.summary);
        } else {
            captured.statements.push(fields.statement);
        }
    }
}

#[derive(Default)]
struct StatementFields {
    summary: String,
    statement: String,
    message: String,
}

impl Visit for StatementFields {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "summary" => value.clone_into(&mut self.summary),
            "db.statement" => value.clone_into(&mut self.statement),
            "message" => value.clone_into(&mut self.message),
            _ => {}
        }
    }

    /// The fields read are strings; the rest (`elapsed`, …) are not needed.
    fn record_debug(&mut self, _: &Field, _: &dyn std::fmt::Debug) {}
}
