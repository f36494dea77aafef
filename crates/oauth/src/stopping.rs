//! How the server's background loops stop: at once, wherever they wait.

use std::future::Future;

use tokio::sync::watch;

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
    use std::time::Duration;

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
}
