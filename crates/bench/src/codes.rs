//! The `exchange` workload's authorization codes: how many each connection mints before the
//! warm-up so that the run cannot run out, within the time that keeps the first of them
//! valid to the end, and the shorter window a pool that could not be filled still covers.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use tokio::task::JoinSet;

use crate::connection::Connection;

/// The server keeps a code 60 s (`CODE_LIFETIME` in the oauth crate); the codes minted first
/// must still be valid when the run ends, with room for a slow request.
pub const CODE_BUDGET: Duration = Duration::from_secs(50);

/// The longest warm-up plus measured window with codes minted in advance: it leaves at least
/// 10 s of [`CODE_BUDGET`] for the minting.
pub const LONGEST_RUN: Duration = Duration::from_secs(40);

/// Headroom over the rate bound, for a ceiling measured a little low.
const MARGIN: f64 = 1.25;

/// A few more per connection, for the requests in flight at the window's edges.
const SPARE: usize = 4;

/// Fails before anything starts if `run` (warm-up plus window) leaves too little time to mint.
pub fn check_run_length(run: Duration) -> Result<()> {
    if run > LONGEST_RUN {
        bail!(
            "the exchange workload mints its codes before the warm-up and the server keeps \
             them 60 s: --warmup plus --duration must be at most {} s, not {} s",
            LONGEST_RUN.as_secs(),
            run.as_secs()
        );
    }
    Ok(())
}

/// Codes per connection for a run of `run` at no more than `rate_bound` code exchanges per
/// second over all `connections`.
pub fn per_connection(rate_bound: f64, run: Duration, connections: usize) -> usize {
    let total = rate_bound.max(0.0) * run.as_secs_f64() * MARGIN;
    (total / connections.max(1) as f64).ceil() as usize + SPARE
}

/// The time left for minting before a run of `run`: the first codes must outlive the run.
pub fn minting_budget(run: Duration) -> Duration {
    CODE_BUDGET.saturating_sub(run)
}

/// The measured window a short pool still covers: the pool was sized for the whole run, so
/// a fraction `coverage` of it lasts that fraction of the run at the same bound, warm-up
/// first. `None` when less than a second of window would be left.
pub fn covered_window(coverage: f64, warmup: Duration, duration: Duration) -> Option<Duration> {
    if coverage >= 1.0 {
        return Some(duration);
    }
    let covered = (warmup + duration).mul_f64(coverage.max(0.0));
    covered
        .checked_sub(warmup)
        .filter(|window| *window >= Duration::from_secs(1))
}

/// Fills each connection's pool with `count` codes: the connections at once, each one code
/// after the other, until the minting budget of a run of `run` is spent. Returns the
/// connections and the share of `count` the emptiest pool got (1 when all are full).
pub async fn mint(
    connections: Vec<Connection>,
    count: usize,
    run: Duration,
) -> Result<(Vec<Connection>, f64)> {
    let started = Instant::now();
    let deadline = started + minting_budget(run);
    let mut tasks = JoinSet::new();
    for mut connection in connections {
        tasks.spawn(async move {
            let made = connection.mint(count, deadline).await?;
            anyhow::Ok((connection, made))
        });
    }
    let mut minted = Vec::with_capacity(tasks.len());
    let (mut total, mut fewest) = (0, count);
    // Dropping the set on an error aborts the other connections' minting.
    while let Some(task) = tasks.join_next().await {
        let (connection, made) = task.context("a minting task failed")??;
        total += made;
        fewest = fewest.min(made);
        minted.push(connection);
    }
    eprintln!(
        "exchange: minted {total} codes (up to {count} per connection) in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let coverage = match count {
        0 => 1.0,
        _ => fewest as f64 / count as f64,
    };
    Ok((minted, coverage))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_covers_the_bound_over_the_whole_run_with_a_margin() {
        // 400 exchanges/s for 3 s is 1200, 1500 with the margin, 375 on each of 4 connections.
        assert_eq!(
            per_connection(400.0, Duration::from_secs(3), 4),
            375 + SPARE
        );
        // A share that does not divide evenly rounds up.
        assert_eq!(per_connection(10.0, Duration::from_secs(1), 3), 5 + SPARE);
        // No rate, no codes beyond the spare ones.
        assert_eq!(per_connection(0.0, Duration::from_secs(5), 2), SPARE);
    }

    #[test]
    fn a_run_longer_than_forty_seconds_is_refused_up_front() {
        assert!(check_run_length(Duration::from_secs(40)).is_ok());
        let error = check_run_length(Duration::from_secs(41)).unwrap_err();
        assert!(error.to_string().contains("at most 40 s"), "{error}");
    }

    #[test]
    fn minting_may_take_what_the_run_leaves_of_fifty_seconds() {
        assert_eq!(
            minting_budget(Duration::from_secs(12)),
            Duration::from_secs(38)
        );
        assert_eq!(minting_budget(Duration::from_secs(60)), Duration::ZERO);
    }

    #[test]
    fn a_short_pool_shortens_the_window_it_can_cover() {
        let (warmup, duration) = (Duration::from_secs(2), Duration::from_secs(10));
        assert_eq!(covered_window(1.0, warmup, duration), Some(duration));
        // Half a pool covers 6 s of the 12 s run: 2 s of warm-up, then 4 s measured.
        assert_eq!(
            covered_window(0.5, warmup, duration),
            Some(Duration::from_secs(4))
        );
        // Under a second of window is not a measurement.
        assert_eq!(covered_window(0.2, warmup, duration), None);
        assert_eq!(covered_window(0.0, warmup, duration), None);
    }
}
