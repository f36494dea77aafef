//! How the server's background loops stop: at once, wherever they wait.

use std::future::Future;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::MissedTickBehavior;

/// Runs `step` at once, then every `period` after the last one began (a step that overruns
/// its period is followed by the next at once, never by a burst of missed ones), until
/// `stopped`: the key and CORS reloads, the WAL checkpoint and the clean-up. The stop drops a
/// step where it waits, as [`unless_stopped`] says; what a step logs of its outcome it logs
/// inside `step`, which a stop cannot cut short once the work is done.
///
/// `step` makes each step's future from clones of what it needs: the loops are spawned, and
/// an async closure's future that borrows its captures is not seen as `Send` by the compiler
/// (rust-lang/rust#139475).
pub async fn run_every<Step>(
    period: Duration,
    mut stopped: watch::Receiver<bool>,
    mut step: impl FnMut() -> Step,
) where
    Step: Future<Output = ()>,
{
    let mut ticks = tokio::time::interval(period);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    while unless_stopped(&mut stopped, ticks.tick()).await.is_some() {
        if unless_stopped(&mut stopped, step()).await.is_none() {
            return;
        }
    }
}

/// Runs `work` unless `stopped` turns true first (or its sender is gone): `None` then, with
/// `work` dropped where it waited. Every background loop runs its step through this, so a
/// graceful stop never waits for a step stuck behind a lock, a full pool or a slow peer;
/// each step must leave nothing half-done when dropped (a statement already sent ends on its
/// own, a transaction not committed rolls back).
pub async fn unless_stopped<T>(
    stopped: &mut watch::Receiver<bool>,
    work: impl Future<Output = T>,
) -> Option<T> {
    if *stopped.borrow_and_update() {
        return None;
    }
    tokio::select! {
        done = work => Some(done),
        _ = stopped.changed() => None,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test]
    async fn work_that_ends_first_is_returned() {
        let (_stop, mut stopped) = watch::channel(false);
        assert_eq!(unless_stopped(&mut stopped, async { 7 }).await, Some(7));
    }

    #[tokio::test]
    async fn a_stop_drops_work_that_waits() {
        let (stop, mut stopped) = watch::channel(false);
        let waiting = unless_stopped(&mut stopped, std::future::pending::<()>());
        let stopping = async {
            tokio::time::sleep(Duration::from_millis(10)).await;
            stop.send(true).unwrap();
        };
        let both = tokio::time::timeout(Duration::from_secs(5), async {
            tokio::join!(waiting, stopping)
        });
        assert_eq!(both.await.expect("the stop ends the wait"), (None, ()));
    }

    #[tokio::test]
    async fn a_stop_seen_before_runs_nothing() {
        let (stop, mut stopped) = watch::channel(false);
        stop.send(true).unwrap();
        let _ = stopped.changed().await;
        // The change is seen: only the value tells that the server stops.
        assert_eq!(unless_stopped(&mut stopped, async { 7 }).await, None);
    }

    #[tokio::test]
    async fn a_sender_gone_stops_too() {
        let (stop, mut stopped) = watch::channel(false);
        drop(stop);
        let waiting = unless_stopped(&mut stopped, std::future::pending::<()>());
        let result = tokio::time::timeout(Duration::from_secs(5), waiting).await;
        assert_eq!(result.expect("the gone sender ends the wait"), None);
    }

    /// Runs `run_every` with `period`, sends the stop once `steps` steps have run, and
    /// returns how many ran in all; the loop must end within 5 s.
    async fn stop_after(period: Duration, steps: usize) -> usize {
        let (stop, stopped) = watch::channel(false);
        let ran = AtomicUsize::new(0);
        let running = run_every(period, stopped, || async {
            ran.fetch_add(1, Ordering::SeqCst);
        });
        let stopping = async {
            while ran.load(Ordering::SeqCst) < steps {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            stop.send(true).unwrap();
        };
        tokio::time::timeout(Duration::from_secs(5), async {
            tokio::join!(running, stopping)
        })
        .await
        .expect("the stop ends the loop");
        ran.load(Ordering::SeqCst)
    }

    #[tokio::test]
    async fn steps_run_on_every_tick_until_the_stop() {
        assert!(stop_after(Duration::from_millis(5), 3).await >= 3);
    }

    #[tokio::test]
    async fn a_stop_ends_the_wait_for_the_next_tick() {
        // The first step runs at once; the next would be a minute later.
        assert_eq!(stop_after(Duration::from_secs(60), 1).await, 1);
    }

    #[tokio::test]
    async fn a_stop_drops_a_step_that_waits() {
        let (stop, stopped) = watch::channel(false);
        let started = tokio::sync::Notify::new();
        let running = run_every(Duration::from_secs(60), stopped, || async {
            started.notify_one();
            std::future::pending::<()>().await
        });
        let stopping = async {
            started.notified().await;
            stop.send(true).unwrap();
        };
        tokio::time::timeout(Duration::from_secs(5), async {
            tokio::join!(running, stopping)
        })
        .await
        .expect("the stop ends the step that waits");
    }
}
