//! The expiry clean-up end to end: a consumed refresh token still revokes its grant after a
//! pass, `fieldauth maintenance cleanup` deletes what expired and keeps what lives, and the
//! server's own pass counts what it deleted in `/metrics`, and a stop does not wait for a pass.

use std::time::{Duration, Instant};

use sqlx::Connection;
use store::testing::TestDatabase;

use crate::flow::{assert_oauth_error, code_for, seed};
use crate::helpers::{eventually, json_output, on_both_backends, TestApp};
use crate::refresh::{first_refresh_token, refresh};

on_both_backends!(
    a_consumed_refresh_token_still_revokes_its_grant_after_a_clean_up,
    the_cli_deletes_what_expired_and_keeps_what_lives,
    the_servers_own_pass_counts_deleted_rows_by_table,
    a_stop_ends_a_pass_that_waits_on_the_database,
);

const DAY: i64 = 86_400;

async fn rotated(app: &TestApp, token: &str) -> String {
    let response = refresh(app, token, &[]).await;
    assert_eq!(response.status(), 200);
    let body: serde_json::Value = response.json().await.unwrap();
    body["refresh_token"].as_str().unwrap().to_owned()
}

/// The pass the server runs, at the server's time.
async fn pass(app: &TestApp) -> store::CleanupReport {
    let window = oauth::ThrottlePolicy::default().window();
    let retention = fieldauth::maintenance::retention(app.clock_now(), window, 365 * DAY);
    app.store.clean_up(&retention).await.unwrap()
}

fn count(report: &store::CleanupReport, table: &str) -> u64 {
    report
        .deleted
        .iter()
        .find(|(name, _)| *name == table)
        .map(|(_, n)| *n)
        .unwrap()
}

async fn a_consumed_refresh_token_still_revokes_its_grant_after_a_clean_up(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let first = first_refresh_token(&app).await;
    let second = rotated(&app, &first).await;
    let newest = rotated(&app, &second).await;

    // Two days on: the code, the request and the sign-in are long gone; the access tokens
    // have expired; the refresh tokens, consumed or not, live for 30 days.
    app.clock.advance(2 * DAY);
    let (one, two) = tokio::join!(pass(&app), pass(&app));
    let both = |table| count(&one, table) + count(&two, table);
    assert_eq!(both("authorization_codes"), 1, "{one:?} {two:?}");
    assert_eq!(both("authorization_requests"), 1, "{one:?} {two:?}");
    assert_eq!(both("refresh_tokens"), 0, "{one:?} {two:?}");
    assert_eq!(both("grants"), 0, "{one:?} {two:?}");

    // The first token again: reuse, which ends the family, newest token included.
    assert_oauth_error(refresh(&app, &first, &[]).await, 400, "invalid_grant").await;
    assert_oauth_error(refresh(&app, &newest, &[]).await, 400, "invalid_grant").await;
    app.stop().await;
}

async fn the_cli_deletes_what_expired_and_keeps_what_lives(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    // The server lives two days in the past, so what it writes has expired by the CLI's
    // (real) time, sign-in counts included (the CLI keeps them a day, the longest lock),
    // except the refresh token (30 days) and its grant.
    app.clock.set(app.clock_now() - 2 * DAY);
    let token = first_refresh_token(&app).await;

    let report = json_output(&app.cli(&["maintenance", "cleanup", "--json"]));
    let deleted = &report["deleted"];
    for table in [
        "authorization_requests",
        "browser_sessions",
        "authorization_codes",
    ] {
        assert_eq!(deleted[table], 1, "{table}: {report:?}");
    }
    for table in ["refresh_tokens", "grants", "audit_events"] {
        assert_eq!(deleted[table], 0, "{table}: {report:?}");
    }
    // The live grant still refreshes.
    rotated(&app, &token).await;
    let again = json_output(&app.cli(&["maintenance", "cleanup", "--json"]));
    let total: u64 = again["deleted"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(total, 0, "{again:?}");

    for out_of_range in ["0", "36501", "x"] {
        let refused = app.cli(&[
            "maintenance",
            "cleanup",
            "--audit-retention-days",
            out_of_range,
        ]);
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert_eq!(
            refused.status.code(),
            Some(2),
            "clap refuses {out_of_range}"
        );
        assert!(stderr.contains("--audit-retention-days"), "{stderr}");
    }
    app.stop().await;
}

async fn the_servers_own_pass_counts_deleted_rows_by_table(db: TestDatabase) {
    let url = db.url.clone();
    let app = TestApp::start_configured(db, &url, oauth::ThrottlePolicy::default(), |config| {
        config.cleanup_interval = Some(Duration::from_millis(100));
    })
    .await;
    seed(&app).await;
    code_for(&app, &app.browser(), &[]).await;
    app.clock.advance(DAY);
    let metric = "fieldauth_cleanup_deleted_rows_total{table=\"authorization_requests\"} 1";
    eventually(Duration::from_secs(10), || async {
        let scrape = app
            .get(&format!("{}/metrics", app.metrics_url))
            .await
            .text()
            .await
            .unwrap();
        scrape.lines().any(|line| line == metric)
    })
    .await;
    let scrape = app
        .get(&format!("{}/metrics", app.metrics_url))
        .await
        .text()
        .await
        .unwrap();
    for line in [
        "fieldauth_cleanup_deleted_rows_total{table=\"browser_sessions\"} 1",
        "fieldauth_cleanup_deleted_rows_total{table=\"authorization_codes\"} 1",
        "fieldauth_cleanup_deleted_rows_total{table=\"grants\"} 0",
    ] {
        assert!(scrape.lines().any(|l| l == line), "{line} in {scrape}");
    }
    app.stop().await;
}

/// A connection that holds the lock the pass's first delete needs (SQLite's write lock, or
/// PostgreSQL's lock on `authorization_requests`), until it is dropped.
enum Blocker {
    Sqlite(sqlx::SqliteConnection),
    Postgres(sqlx::PgConnection),
}

impl Blocker {
    async fn hold(url: &str) -> Blocker {
        if url.starts_with("postgres") {
            let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
            sqlx::query("BEGIN").execute(&mut conn).await.unwrap();
            // EXCLUSIVE conflicts with the ROW EXCLUSIVE a DELETE takes, not with reads.
            sqlx::query("LOCK TABLE authorization_requests IN EXCLUSIVE MODE")
                .execute(&mut conn)
                .await
                .unwrap();
            Blocker::Postgres(conn)
        } else {
            let mut conn = sqlx::SqliteConnection::connect(url).await.unwrap();
            sqlx::query("BEGIN IMMEDIATE")
                .execute(&mut conn)
                .await
                .unwrap();
            Blocker::Sqlite(conn)
        }
    }

    async fn release(self) {
        match self {
            Blocker::Sqlite(mut conn) => {
                sqlx::query("ROLLBACK").execute(&mut conn).await.unwrap();
                conn.close().await.unwrap();
            }
            Blocker::Postgres(mut conn) => {
                sqlx::query("ROLLBACK").execute(&mut conn).await.unwrap();
                conn.close().await.unwrap();
            }
        }
    }
}

/// A pass waiting on the database (here on a lock another connection holds; in production
/// mostly in its pauses) must not hold up a graceful stop: on SQLite it would wait out the
/// 5 s busy timeout, on PostgreSQL for as long as the lock is held.
async fn a_stop_ends_a_pass_that_waits_on_the_database(db: TestDatabase) {
    let url = db.url.clone();
    let mut app = TestApp::start_configured(db, &url, oauth::ThrottlePolicy::default(), |config| {
        config.cleanup_interval = Some(Duration::from_millis(100));
    })
    .await;
    let blocker = Blocker::hold(&url).await;
    // Several ticks: a pass has started and waits on its first delete.
    tokio::time::sleep(Duration::from_millis(500)).await;

    let started = Instant::now();
    tokio::time::timeout(Duration::from_secs(20), app.stop_serving())
        .await
        .expect("the server stops while the pass waits");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(2), "the stop took {took:?}");

    blocker.release().await;
    app.stop().await;
}
