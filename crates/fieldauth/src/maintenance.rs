//! Expiry clean-up: `fieldauth maintenance cleanup` (one pass, by hand) and the task each
//! server runs every `--cleanup-interval-seconds`. Both run the same store pass with the same
//! retention, which comes from the lifetimes the authorization server gives its records.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use jose::{Clock, UnixTime};
use oauth::stopping::run_every;
use serde_json::json;
use store::{CleanupReport, Retention, Store};
use tokio::sync::watch;

use crate::metrics::CleanupMetrics;
use crate::report::Report;

/// How long each kind of record is kept at `now`: until nothing can use it any more.
/// `signin_window` is how long sign-in failures are counted (the throttle's window).
pub fn retention(now: UnixTime, signin_window: i64, audit_retention: i64) -> Retention {
    Retention {
        now,
        code_replay_window: oauth::token::REPLAY_REVOCATION_WINDOW,
        access_token_lifetime: oauth::token::ACCESS_TOKEN_LIFETIME,
        signin_window,
        request_quota_window: oauth::REQUEST_QUOTA_WINDOW,
        recovery_quota_window: oauth::RECOVERY_QUOTA_WINDOW,
        audit_retention,
    }
}

/// `fieldauth maintenance cleanup`: one pass now. It cannot know the servers'
/// `--signin-lock-seconds`, so it keeps failure counts for the longest window that flag
/// allows, and never ends a lock early.
pub async fn cleanup(
    store: &Store,
    now: UnixTime,
    audit_retention_days: u16,
) -> anyhow::Result<Report> {
    let signin_window = oauth::ThrottlePolicy {
        lock_seconds: crate::cli::MAX_SIGNIN_LOCK_SECONDS,
        ..oauth::ThrottlePolicy::default()
    }
    .window();
    let retention = retention(now, signin_window, i64::from(audit_retention_days) * 86_400);
    let report = store
        .clean_up(&retention)
        .await
        .context("cannot clean up the database")?;
    Ok(describe(&report))
}

fn describe(report: &CleanupReport) -> Report {
    let deleted: serde_json::Map<String, serde_json::Value> = report
        .deleted
        .iter()
        .map(|(table, n)| ((*table).to_owned(), json!(n)))
        .collect();
    let mut lines: Vec<String> = report
        .deleted
        .iter()
        .map(|(table, n)| format!("{table}\t{n}"))
        .collect();
    for database in &report.skipped {
        lines.push(format!(
            "database {database} skipped: another node is cleaning it"
        ));
    }
    Report::new(
        json!({
            "deleted": deleted,
            "skipped_databases": report.skipped,
            "pages_released": report.pages_released,
        }),
        lines.join("\n"),
    )
}

/// The server's clean-up: a pass every `every`, the first at start. A failed pass is logged
/// and tried again at the next tick; it never stops the server.
pub async fn clean_up_every(
    store: Store,
    clock: Arc<dyn Clock>,
    every: Duration,
    signin_window: i64,
    audit_retention: i64,
    metrics: CleanupMetrics,
    stopped: watch::Receiver<bool>,
) {
    // A paced pass takes tens of seconds on a busy server, longer than a graceful stop should
    // wait: a stop drops it where it waits (each batch is a transaction of its own), and the
    // next start's pass goes on from there.
    run_every(every, stopped, || {
        let retention = retention(clock.now(), signin_window, audit_retention);
        let (store, metrics) = (store.clone(), metrics.clone());
        async move { clean_up_once(&store, &retention, &metrics).await }
    })
    .await
}

/// One pass of [`clean_up_every`], logged.
async fn clean_up_once(store: &Store, retention: &Retention, metrics: &CleanupMetrics) {
    let started = std::time::Instant::now();
    match store.clean_up_beside_requests(retention).await {
        Ok(report) => {
            metrics.count(&report);
            if report.total() > 0 {
                tracing::info!(
                    deleted = report.total(),
                    pages_released = report.pages_released,
                    took_ms = started.elapsed().as_millis(),
                    busy_ms = report.busy.as_millis(),
                    "expired records cleaned up"
                );
            }
        }
        Err(error) => tracing::warn!(error = %error, "expired records not cleaned up"),
    }
}
