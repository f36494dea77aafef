//! The `exchange` workload's authorization codes: how many each connection mints before the
//! warm-up so that the run cannot run out, and the checks that the last of them is still
//! valid when it is used.

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

/// Fails if codes minted over `minting` would expire before a run of `run` ends.
pub fn check_minting(minting: Duration, run: Duration) -> Result<()> {
    if minting + run > CODE_BUDGET {
        bail!(
            "minting the codes took {:.1} s: with {} s of warm-up and window the first codes \
             would near their 60 s lifetime before the run ends; use fewer --connections, a \
             shorter --duration, or pin the server to fewer CPUs with --server-cpus",
            minting.as_secs_f64(),
            run.as_secs()
        );
    }
    Ok(())
}

/// Fills each connection's pool with `count` codes: the connections at once, each one code
/// after the other. Fails if that took too long for a run of `run`.
pub async fn mint(
    connections: Vec<Connection>,
    count: usize,
    run: Duration,
) -> Result<Vec<Connection>> {
    let started = Instant::now();
    let mut tasks = JoinSet::new();
    for mut connection in connections {
        tasks.spawn(async move { connection.mint(count).await.map(|()| connection) });
    }
    let mut minted = Vec::with_capacity(tasks.len());
    // Dropping the set on an error aborts the other connections' minting.
    while let Some(task) = tasks.join_next().await {
        minted.push(task.context("a minting task failed")??);
    }
    let took = started.elapsed();
    eprintln!(
        "exchange: minted {} codes ({count} per connection) in {:.1} s",
        count * minted.len(),
        took.as_secs_f64()
    );
    check_minting(took, run)?;
    Ok(minted)
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
    fn minting_and_running_must_end_within_fifty_seconds() {
        assert!(check_minting(Duration::from_secs(38), Duration::from_secs(12)).is_ok());
        let error = check_minting(Duration::from_millis(38_100), Duration::from_secs(12));
        assert!(error.unwrap_err().to_string().contains("38.1 s"));
    }
}
