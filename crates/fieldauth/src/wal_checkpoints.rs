//! SQLite's checkpoints, off the requests' path: commits never run one (see the store), a
//! background task does, often while the log is being written and once a second while it
//! is not. Nothing to do on PostgreSQL, where each pass finds nothing and the task wakes once
//! a second.

use std::time::Duration;

use oauth::stopping::unless_stopped;
use store::{Checkpoint, Store, StoreError};
use tokio::sync::watch;

/// How soon the next pass runs while the log is being written. A pass runs on the same cores
/// as the requests and delays those behind it by its own CPU time: at 1 s, under 1,150
/// exchanges a second on one core, that was about 16 ms once a second, which a core 87% busy
/// took some 120 ms to catch up on, and p99 at 80% of capacity was 11 to 34 ms. A tenth of
/// the copy every 100 ms kept it at 5.8 to 7.3 ms in four runs of five, for about a point of
/// the closed loop's throughput: pages written again within the second are copied again, and
/// each pass syncs the log (docs/performance.md). Under steady writes the log is still only
/// reused from its start when the store restarts it (past 64 MiB).
const WRITTEN: Duration = Duration::from_millis(100);

/// How soon the next pass runs after one that found the log as the last left it, all of it
/// copied, or that failed (retried then; the log only grows meanwhile): an idle server wakes
/// once a second for its checkpoints, as before the passes were every 100 ms, not ten times.
const QUIET: Duration = Duration::from_secs(1);

/// Runs the passes until `stopped`.
pub async fn run(store: Store, mut stopped: watch::Receiver<bool>) {
    let mut last = None;
    loop {
        let Some(pass) = unless_stopped(&mut stopped, store.checkpoint()).await else {
            return;
        };
        let wait = match &pass {
            Ok(found) => next_pass_in(last.as_ref(), found),
            Err(_) => QUIET,
        };
        last = pass.as_ref().ok().copied();
        log(pass);
        if unless_stopped(&mut stopped, tokio::time::sleep(wait))
            .await
            .is_none()
        {
            return;
        }
    }
}

/// [`QUIET`] when `found` is the log `last` left, all of it copied; [`WRITTEN`] otherwise.
/// A log written since to exactly its old length counts as quiet: its next pass is then a
/// second away, as every pass was before.
fn next_pass_in(last: Option<&Checkpoint>, found: &Checkpoint) -> Duration {
    let unchanged = last.is_some_and(|last| last.wal_pages == found.wal_pages);
    let copied = found.copied_pages == found.wal_pages && found.restarts_refused == 0;
    if unchanged && copied {
        QUIET
    } else {
        WRITTEN
    }
}

/// What a pass did, at `debug` when it tried to restart the log.
fn log(pass: Result<Checkpoint, StoreError>) {
    match pass {
        Ok(pass) if pass.restarts + pass.restarts_refused > 0 => {
            tracing::debug!(
                pages = pass.wal_pages,
                restarted = pass.restarts,
                refused = pass.restarts_refused,
                held_ms = pass.writers_held.as_secs_f64() * 1e3,
                "write-ahead log restart tried"
            );
        }
        Ok(_) => {}
        Err(error) => tracing::warn!(error = %error, "write-ahead log not checkpointed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(wal_pages: u64, copied_pages: u64) -> Checkpoint {
        Checkpoint {
            wal_pages,
            copied_pages,
            ..Checkpoint::default()
        }
    }

    #[test]
    fn a_log_being_written_is_copied_again_within_a_tenth_of_a_second() {
        assert_eq!(
            next_pass_in(None, &found(12, 12)),
            WRITTEN,
            "the first pass"
        );
        assert_eq!(next_pass_in(Some(&found(12, 12)), &found(40, 40)), WRITTEN);
        // All copied, but since the last pass the log grew: the writes may go on.
        assert_eq!(next_pass_in(Some(&found(40, 40)), &found(41, 41)), WRITTEN);
    }

    #[test]
    fn a_quiet_log_all_copied_waits_a_second() {
        assert_eq!(next_pass_in(Some(&found(40, 40)), &found(40, 40)), QUIET);
        assert_eq!(
            next_pass_in(Some(&found(0, 0)), &found(0, 0)),
            QUIET,
            "PostgreSQL"
        );
    }

    #[test]
    fn a_log_a_reader_kept_from_being_copied_or_restarted_is_tried_again_soon() {
        assert_eq!(next_pass_in(Some(&found(40, 30)), &found(40, 30)), WRITTEN);
        let refused = Checkpoint {
            restarts_refused: 1,
            ..found(20_000, 20_000)
        };
        assert_eq!(next_pass_in(Some(&refused), &refused), WRITTEN);
    }
}
