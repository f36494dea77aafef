//! The database going away under a running server, and coming back (PostgreSQL, reached
//! through a [`DbProxy`] the test cuts). While it is gone, clients get RFC 6749's
//! `temporarily_unavailable` with HTTP 503 (§5.2 for the token endpoint, §4.1.2.1 for the
//! authorization endpoint), the API a 503 `UNAVAILABLE`, operators a failing `/readyz` and a
//! passing `/healthz`; nothing is spent or lost, and the node recovers without a restart.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use sqlx::Connection;
use store::testing::TestDatabase;
use store::TenantId;
use tokio::sync::watch;

use crate::db_proxy::DbProxy;
use crate::flow::{authorize_url, code_for, exchange, jwt_parts, seed, TENANT};
use crate::helpers::{eventually, TestApp};
use crate::refresh::refresh;

/// How long an answer may take while the database is stopped.
const STOPPED_LIMIT: Duration = Duration::from_secs(10);
/// How long an answer may take while the database is partitioned away.
const PARTITION_LIMIT: Duration = Duration::from_secs(20);
/// How long a node may take to be ready again once the database is back.
const RECOVERY_LIMIT: Duration = Duration::from_secs(15);

const VIEWER: &str = "{ viewer { subject organization { guid name } } }";

/// A server on a fresh PostgreSQL schema, reaching it through its own proxy, with the flow's
/// tenant seeded directly; `None` when PostgreSQL is not available (a loud skip).
async fn app_behind_proxy() -> Option<(TestApp, DbProxy)> {
    let db = TestDatabase::postgres().await?;
    let proxy = DbProxy::start(&db.url).await;
    let app = TestApp::spawn_with_database_url(db, proxy.url()).await;
    seed(&app).await;
    Some((app, proxy))
}

/// What a client holds after the code flow, and the grant it belongs to.
struct Issued {
    refresh_token: String,
    access_token: String,
    grant_id: String,
}

async fn issue(app: &TestApp) -> Issued {
    let code = code_for(
        app,
        &app.browser(),
        &[("scope", Some("openid offline_access jobs"))],
    )
    .await;
    let body = exchange(app, &code).await;
    let access_token = body["access_token"].as_str().unwrap().to_owned();
    let (_, claims) = jwt_parts(&access_token);
    Issued {
        refresh_token: body["refresh_token"].as_str().unwrap().to_owned(),
        access_token,
        grant_id: claims["grant_id"].as_str().unwrap().to_owned(),
    }
}

/// Awaits `answer`, failing the test if it takes `limit` or more; returns it and the time
/// it took.
async fn within<T>(limit: Duration, what: &str, answer: impl Future<Output = T>) -> (T, Duration) {
    let started = Instant::now();
    let answer = tokio::time::timeout(limit, answer)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {limit:?}"));
    let took = started.elapsed();
    assert!(took < limit, "{what}: answered after {took:?}");
    (answer, took)
}

async fn get(app: &TestApp, url: String) -> reqwest::Response {
    app.http.get(url).send().await.unwrap()
}

async fn api(app: &TestApp, access_token: &str) -> reqwest::Response {
    app.http
        .post(format!("{}/api", app.api_url))
        .bearer_auth(access_token)
        .json(&json!({ "query": VIEWER }))
        .send()
        .await
        .unwrap()
}

/// RFC 6749 §5.2: `temporarily_unavailable`, as HTTP 503 with the token endpoint's headers,
/// and no detail of ours in the body.
async fn assert_temporarily_unavailable(response: reqwest::Response, what: &str) {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.text().await.unwrap();
    assert_eq!(status, 503, "{what}: {body}");
    assert_eq!(headers["content-type"], "application/json", "{what}");
    assert_eq!(headers["cache-control"], "no-store", "{what}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["error"], "temporarily_unavailable", "{what}: {body}");
    let keys: Vec<&String> = body.as_object().unwrap().keys().collect();
    assert!(
        keys.iter()
            .all(|k| *k == "error" || *k == "error_description"),
        "{what}: {body}"
    );
    assert_no_internal_detail(&body.to_string(), what);
}

/// Text a client must never see: driver errors, addresses, schema names, panics.
fn assert_no_internal_detail(body: &str, what: &str) {
    let lower = body.to_lowercase();
    for fragment in [
        "sqlx",
        "database error",
        "error returned from database",
        "os error",
        "connection reset",
        "connection refused",
        "pooltimedout",
        "io error",
        "panicked",
        "backtrace",
        ".rs:",
        "fieldauth_test_",
        "search_path",
        "5432",
    ] {
        assert!(
            !lower.contains(fragment),
            "{what} shows {fragment:?}: {body}"
        );
    }
}

/// `/readyz` of both listeners, as (auth, api) statuses.
async fn readiness(app: &TestApp) -> (u16, u16) {
    let auth = get(app, format!("{}/readyz", app.issuer)).await;
    let api = get(app, format!("{}/readyz", app.api_url)).await;
    (auth.status().as_u16(), api.status().as_u16())
}

/// Polls both `/readyz` until they answer 200, within `RECOVERY_LIMIT` of the database's
/// return; returns how long that took.
async fn until_ready(app: &TestApp) -> Duration {
    let started = Instant::now();
    eventually(RECOVERY_LIMIT, || async {
        readiness(app).await == (200, 200)
    })
    .await;
    started.elapsed()
}

/// Refreshes and returns the next refresh token, asserting 200.
async fn rotate(app: &TestApp, token: &str, what: &str) -> String {
    let response = refresh(app, token, &[]).await;
    let status = response.status().as_u16();
    let body = response.text().await.unwrap();
    assert_eq!(status, 200, "{what}: {body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    body["refresh_token"].as_str().unwrap().to_owned()
}

/// The grant in the database, read directly: not revoked, and holding exactly one refresh
/// token per issue (the exchange and each successful rotation), all consumed but `newest`.
async fn assert_grant_intact(app: &TestApp, grant_id: &str, rotations: i64, newest: &str) {
    assert_grant_live(app, grant_id, newest).await;
    let mut conn = sqlx::PgConnection::connect(&app.db.url).await.unwrap();
    let (tokens, consumed): (i64, i64) = sqlx::query_as(
        "SELECT count(*), count(consumed_at) FROM refresh_tokens \
         WHERE tenant_id = $1 AND grant_id = $2",
    )
    .bind(TENANT)
    .bind(grant_id)
    .fetch_one(&mut conn)
    .await
    .unwrap();
    conn.close().await.unwrap();
    assert_eq!(
        (tokens, consumed),
        (1 + rotations, rotations),
        "(refresh tokens, consumed) of the grant after {rotations} successful rotations"
    );
}

/// The grant is not revoked and `newest` is one of its refresh tokens, not yet used.
async fn assert_grant_live(app: &TestApp, grant_id: &str, newest: &str) {
    let tenant_id = TenantId::parse(TENANT).unwrap();
    let tenant = app.store.tenant(&tenant_id);
    let grant = tenant.find_grant(grant_id).await.unwrap().unwrap();
    assert_eq!(grant.revoked_at, None, "the grant was revoked");
    let (_, secret) = newest.split_once('.').unwrap();
    let found = tenant
        .find_refresh_token(&oauth::secret::hash_secret(secret))
        .await
        .unwrap()
        .expect("the newest refresh token is stored");
    assert_eq!(found.consumed_at, None, "the newest refresh token is live");
    assert_eq!(found.grant.grant_id, grant_id);
}

/// How the database stops.
#[derive(Debug, Clone, Copy)]
enum Stop {
    /// The database process: connections reset, new ones closed at once.
    Process,
    /// The database host: connections reset, new ones refused (the pool retries those until
    /// its acquire timeout).
    Host,
}

/// RFC 6749 §5.2 and §4.1.2.1: `temporarily_unavailable` (503) is what a client gets while
/// the database is stopped, on every endpoint that needs it; the node says not ready but
/// alive, and once the database is back it is ready again without a restart, and the refresh
/// token refused during the outage was never spent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_database_answers_503_everywhere_and_nothing_is_lost_when_it_returns() {
    stopped_database_answers_503_and_recovers(Stop::Process).await;
}

/// As above, with the database's port refusing connections.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_database_answers_503_everywhere_and_nothing_is_lost_when_it_returns() {
    stopped_database_answers_503_and_recovers(Stop::Host).await;
}

async fn stopped_database_answers_503_and_recovers(stop: Stop) {
    let Some((app, proxy)) = app_behind_proxy().await else {
        return;
    };
    let issued = issue(&app).await;
    // The API has fetched the issuer's keys, so a 503 later is about the database.
    assert_eq!(api(&app, &issued.access_token).await.status(), 200);
    assert_eq!(readiness(&app).await, (200, 200));

    match stop {
        Stop::Process => proxy.down().await,
        Stop::Host => proxy.stop().await,
    }

    let (response, took) = within(
        STOPPED_LIMIT,
        "refresh",
        refresh(&app, &issued.refresh_token, &[]),
    )
    .await;
    eprintln!("{stop:?}: refresh answered in {took:?}");
    assert_temporarily_unavailable(response, "refresh while the database is stopped").await;

    for base in [&app.issuer, &app.api_url] {
        let (ready, took) =
            within(STOPPED_LIMIT, "readyz", get(&app, format!("{base}/readyz"))).await;
        eprintln!("{stop:?}: {base}/readyz answered in {took:?}");
        assert_eq!(ready.status(), 503, "{base}/readyz while stopped");
        let (alive, _) = within(
            STOPPED_LIMIT,
            "healthz",
            get(&app, format!("{base}/healthz")),
        )
        .await;
        assert_eq!(alive.status(), 200, "{base}/healthz: the process is alive");
    }

    let (response, took) = within(STOPPED_LIMIT, "API", api(&app, &issued.access_token)).await;
    eprintln!("{stop:?}: the API answered in {took:?}");
    assert_eq!(response.status(), 503, "API while the database is stopped");
    let body: Value = response.json().await.unwrap();
    let errors = body["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{body}");
    assert_eq!(errors[0]["extensions"]["code"], "UNAVAILABLE", "{body}");
    assert_eq!(
        errors[0]["message"],
        api::ApiError::Unavailable.to_string(),
        "the database's error, not the keys': {body}"
    );
    assert!(body.get("data").is_none(), "{body}");

    let (page, took) = within(
        STOPPED_LIMIT,
        "authorize",
        app.browser().get(authorize_url(&app, &[])).send(),
    )
    .await;
    eprintln!("{stop:?}: the authorization page answered in {took:?}");
    let page = page.unwrap();
    assert_eq!(page.status(), 503, "GET /oauth/authorize while stopped");
    let content_type = page.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(content_type.starts_with("text/html"), "{content_type}");
    let html = page.text().await.unwrap();
    assert_no_internal_detail(&html, "the authorization page");

    proxy.up().await;
    let took = until_ready(&app).await;
    eprintln!("{stop:?}: ready {took:?} after the database returned");

    // The token refused during the outage was never spent: it rotates now, and the chain
    // goes on.
    let second = rotate(&app, &issued.refresh_token, "the refused token, after").await;
    let third = rotate(&app, &second, "the next one").await;
    assert_grant_intact(&app, &issued.grant_id, 2, &third).await;
    app.stop().await;
}

/// One refresh of a chain: the status, the `error` of a refusal, and how long it took.
#[derive(Debug)]
struct Attempt {
    status: u16,
    error: Option<String>,
    took: Duration,
}

/// Progress of a chain: (successful rotations, 503 answers).
type Progress = watch::Sender<(usize, usize)>;

/// Refreshes along one chain, one request at a time, until `rotations` succeed, as a client
/// that honors 503 would: keep the new token on 200, keep the old one on 503 (after a short
/// back-off). Stops at any other answer, or after `limit`. Returns every attempt and the
/// newest token.
async fn refresh_chain(
    http: reqwest::Client,
    issuer: String,
    mut token: String,
    rotations: usize,
    progress: Arc<Progress>,
    limit: Duration,
) -> (Vec<Attempt>, String) {
    let started = Instant::now();
    let mut attempts = Vec::new();
    let (mut rotated, mut unavailable) = (0, 0);
    while rotated < rotations && started.elapsed() < limit {
        let fields = [
            ("grant_type", "refresh_token"),
            ("refresh_token", token.as_str()),
            ("client_id", crate::flow::CLIENT_ID),
        ];
        let sent = Instant::now();
        let request = http
            .post(format!("{issuer}/oauth/token"))
            .form(&fields)
            .send();
        let Ok(response) = tokio::time::timeout(STOPPED_LIMIT, request).await else {
            attempts.push(Attempt {
                status: 0,
                error: Some(format!("no answer within {STOPPED_LIMIT:?}")),
                took: sent.elapsed(),
            });
            break;
        };
        let response = response.unwrap();
        let status = response.status().as_u16();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        let took = sent.elapsed();
        let error = body["error"].as_str().map(str::to_owned);
        match (status, error.as_deref()) {
            (200, _) => {
                token = body["refresh_token"].as_str().unwrap().to_owned();
                rotated += 1;
            }
            (503, Some("temporarily_unavailable")) => unavailable += 1,
            _ => {
                attempts.push(Attempt {
                    status,
                    error: Some(body.to_string()),
                    took,
                });
                break;
            }
        }
        attempts.push(Attempt {
            status,
            error,
            took,
        });
        progress.send_replace((rotated, unavailable));
        if status == 503 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    (attempts, token)
}

/// A client refreshing as fast as it can while the database stops and returns: every answer
/// is a rotation (200) or `temporarily_unavailable` (503), never a server error or
/// `invalid_grant`; the chain completes, and the database holds exactly its tokens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refreshes_through_an_outage_are_200_or_503_and_the_chain_stays_whole() {
    const ROTATIONS: usize = 30;
    let Some((app, proxy)) = app_behind_proxy().await else {
        return;
    };
    let issued = issue(&app).await;
    let progress = Arc::new(watch::Sender::new((0, 0)));
    let chain = tokio::spawn(refresh_chain(
        app.http.clone(),
        app.issuer.clone(),
        issued.refresh_token.clone(),
        ROTATIONS,
        Arc::clone(&progress),
        Duration::from_secs(120),
    ));
    let mut seen = progress.subscribe();
    let (rotated, _) = within(
        Duration::from_secs(60),
        "rotations before the outage",
        async { *seen.wait_for(|(rotated, _)| *rotated >= 5).await.unwrap() },
    )
    .await
    .0;
    proxy.down().await;
    within(Duration::from_secs(30), "503s during the outage", async {
        seen.wait_for(|(_, unavailable)| *unavailable >= 3)
            .await
            .unwrap();
    })
    .await;
    proxy.up().await;
    let (attempts, newest) = within(Duration::from_secs(150), "the chain", chain)
        .await
        .0
        .unwrap();
    eprintln!(
        "{} attempts, outage began after {rotated} rotations: {:?}",
        attempts.len(),
        attempts
            .iter()
            .map(|a| (a.status, a.took.as_millis()))
            .collect::<Vec<_>>()
    );

    let wrong: Vec<(usize, &Attempt)> = attempts
        .iter()
        .enumerate()
        .filter(|(_, a)| {
            !(a.status == 200
                || a.status == 503 && a.error.as_deref() == Some("temporarily_unavailable"))
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "answers other than 200 and 503: {wrong:?}"
    );
    let slow: Vec<&Attempt> = attempts
        .iter()
        .filter(|a| a.took >= STOPPED_LIMIT)
        .collect();
    assert!(
        slow.is_empty(),
        "answers slower than {STOPPED_LIMIT:?}: {slow:?}"
    );
    assert_eq!(
        attempts.iter().filter(|a| a.status == 200).count(),
        ROTATIONS,
        "the chain completed"
    );
    assert!(
        attempts.iter().any(|a| a.status == 503),
        "the outage was seen"
    );
    assert_grant_intact(&app, &issued.grant_id, ROTATIONS as i64, &newest).await;
    app.stop().await;
}

/// A network partition (connections that neither answer nor close): requests still get a
/// 503 within a bounded time instead of hanging, and the node recovers once it heals.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_database_answers_503_within_bounded_time_then_recovers() {
    let Some((app, proxy)) = app_behind_proxy().await else {
        return;
    };
    let issued = issue(&app).await;
    assert_eq!(api(&app, &issued.access_token).await.status(), 200);

    proxy.blackhole();

    let (response, took) = within(
        PARTITION_LIMIT,
        "refresh during a partition",
        refresh(&app, &issued.refresh_token, &[]),
    )
    .await;
    eprintln!("refresh answered in {took:?} during the partition");
    assert_temporarily_unavailable(response, "refresh during a partition").await;
    for base in [&app.issuer, &app.api_url] {
        let (ready, took) = within(
            PARTITION_LIMIT,
            "readyz during a partition",
            get(&app, format!("{base}/readyz")),
        )
        .await;
        eprintln!("{base}/readyz answered in {took:?} during the partition");
        assert_eq!(ready.status(), 503, "{base}/readyz during a partition");
    }
    let (response, took) = within(
        PARTITION_LIMIT,
        "API during a partition",
        api(&app, &issued.access_token),
    )
    .await;
    eprintln!("the API answered in {took:?} during the partition");
    assert_eq!(response.status(), 503, "API during a partition");
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body["errors"][0]["extensions"]["code"], "UNAVAILABLE",
        "{body}"
    );

    proxy.up().await;
    let took = until_ready(&app).await;
    eprintln!("ready {took:?} after the partition healed");
    let second = rotate(&app, &issued.refresh_token, "the refused token, after").await;
    assert_grant_intact(&app, &issued.grant_id, 1, &second).await;
    app.stop().await;
}

/// A partition that begins in the middle of a rotation, with the transaction open and its
/// statement sent: the request still answers 503 within a bounded time rather than hanging
/// on the stalled connection, and once the partition heals the token the client kept (it
/// was told to try again) still works and the grant stands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_in_the_middle_of_a_rotation_answers_503_within_bounded_time() {
    let Some((app, proxy)) = app_behind_proxy().await else {
        return;
    };
    let issued = issue(&app).await;

    // The rotation's first statement; this server has not prepared it on any connection yet.
    proxy.blackhole_at_statement("UPDATE refresh_tokens SET consumed_at");
    let answer = within(
        PARTITION_LIMIT,
        "refresh partitioned in the middle of its rotation",
        refresh(&app, &issued.refresh_token, &[]),
    );
    let (response, took) = answer.await;
    assert!(proxy.is_blackholed(), "the rotation reached the database");
    eprintln!("refresh partitioned mid-rotation answered in {took:?}");
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    proxy.up().await;
    until_ready(&app).await;

    let newest = match status {
        503 => {
            assert_eq!(body["error"], "temporarily_unavailable", "{body}");
            rotate(&app, &issued.refresh_token, "the retry after a 503").await
        }
        // The statement went through once the partition healed, within the limit.
        200 => body["refresh_token"].as_str().unwrap().to_owned(),
        other => panic!("refresh partitioned mid-rotation: {other} {body}"),
    };
    assert_grant_live(&app, &issued.grant_id, &newest).await;
    app.stop().await;
}

/// The database goes away right after it commits a rotation, before the server has answered.
/// A client told 503 keeps its old token (RFC 6749 §5.2: try again later), so the server may
/// only say 503 if that token still works; otherwise the retry looks like reuse and the
/// whole grant is revoked (RFC 6749 §10.4) for a fault that was the server's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_lost_right_after_a_rotation_commits_does_not_cost_the_client_its_grant() {
    let Some((app, proxy)) = app_behind_proxy().await else {
        return;
    };
    let issued = issue(&app).await;

    proxy.down_after_next_commit();
    let (response, _) = within(
        STOPPED_LIMIT,
        "refresh as the database goes",
        refresh(&app, &issued.refresh_token, &[]),
    )
    .await;
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    assert!(
        proxy.is_down(),
        "the rotation committed through the proxy ({status} {body})"
    );
    proxy.up().await;
    until_ready(&app).await;

    let newest = match status {
        // The answer was complete before the database went: the new token is the client's.
        200 => body["refresh_token"].as_str().unwrap().to_owned(),
        503 => {
            assert_eq!(body["error"], "temporarily_unavailable", "{body}");
            // The client retries with the token it holds.
            rotate(
                &app,
                &issued.refresh_token,
                "the retry of a refresh answered 503 after its rotation committed",
            )
            .await
        }
        other => panic!("refresh as the database goes: {other} {body}"),
    };
    match status {
        200 => assert_grant_intact(&app, &issued.grant_id, 1, &newest).await,
        // How many tokens the committed rotation left is the server's business; that the
        // grant stands and the retry's token is live is the client's.
        _ => assert_grant_live(&app, &issued.grant_id, &newest).await,
    }
    app.stop().await;
}
