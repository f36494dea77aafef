//! RS256 signing off the async workers: a thread per core, started with the state and kept
//! for its life, each taking the next job from one queue, first come first served.
//!
//! Not tokio's blocking pool: it wakes whichever of its idle threads waited longest, so the
//! signatures of a busy server went round every thread it had ever started (each with a cold
//! cache), through the pool's lock and a task allocation per job, and each thread woke once
//! more only to go back to sleep. A thread of its own per core goes straight on to the next
//! queued job while there is one (docs/performance.md).

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::error::OAuthError;

type Job = Box<dyn FnOnce() + Send>;

/// Hands work to the signing threads; they end when the last clone of it is dropped.
#[derive(Clone, Debug)]
pub struct Signer {
    jobs: flume::Sender<Job>,
}

impl Signer {
    /// Starts `threads` signing threads (at least one).
    pub fn start(threads: usize) -> Result<Signer, OAuthError> {
        let (jobs, queue) = flume::unbounded::<Job>();
        for n in 0..threads.max(1) {
            let queue = queue.clone();
            std::thread::Builder::new()
                .name(format!("rs256-{n}"))
                .spawn(move || {
                    // Ends when every sender is gone: the state that started it was dropped.
                    while let Ok(job) = queue.recv() {
                        job();
                    }
                })
                .map_err(|_| OAuthError::Blocking)?;
        }
        Ok(Signer { jobs })
    }

    /// Runs `work` on a signing thread, in the caller's span, and waits for its result. A
    /// caller that has gone away by the time its turn comes (its client hung up) costs no
    /// signature; one whose work panics gets [`OAuthError::Blocking`], and the thread goes on.
    pub async fn run<T, F>(&self, work: F) -> Result<T, OAuthError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let (done, result) = tokio::sync::oneshot::channel();
        let span = tracing::Span::current();
        let job: Job = Box::new(move || {
            if done.is_closed() {
                return;
            }
            // A panic drops `done`, which the caller sees as an error.
            if let Ok(value) = catch_unwind(AssertUnwindSafe(|| span.in_scope(work))) {
                let _ = done.send(value);
            }
        });
        self.jobs.send(job).map_err(|_| OAuthError::Blocking)?;
        result.await.map_err(|_| OAuthError::Blocking)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::*;

    #[tokio::test]
    async fn work_runs_on_a_signing_thread_and_its_result_comes_back() {
        let signer = Signer::start(1).unwrap();
        let thread = signer
            .run(|| std::thread::current().name().map(str::to_owned))
            .await
            .unwrap();
        assert_eq!(thread.as_deref(), Some("rs256-0"));
    }

    #[tokio::test]
    async fn a_panic_is_an_error_for_its_caller_and_the_thread_goes_on() {
        let signer = Signer::start(1).unwrap();
        let failed = signer.run(|| -> u32 { panic!("a signing bug") }).await;
        assert!(matches!(failed, Err(OAuthError::Blocking)));
        assert_eq!(signer.run(|| 7).await.unwrap(), 7);
    }

    #[tokio::test]
    async fn a_caller_gone_before_its_turn_costs_nothing() {
        let signer = Signer::start(1).unwrap();
        let (release, held) = std::sync::mpsc::channel::<()>();
        let ran = Arc::new(AtomicUsize::new(0));
        // The only thread waits inside the first job until released.
        let first = tokio::spawn({
            let signer = signer.clone();
            async move { signer.run(move || held.recv()).await }
        });
        tokio::task::yield_now().await;
        let counted = Arc::clone(&ran);
        let gone = signer.run(move || counted.fetch_add(1, Ordering::SeqCst));
        // Queued behind the first job, then dropped: its client went away.
        assert!(
            tokio::time::timeout(std::time::Duration::from_millis(50), gone)
                .await
                .is_err()
        );
        release.send(()).unwrap();
        first.await.unwrap().unwrap().unwrap();
        // A later job runs after the dropped one was reached.
        assert_eq!(signer.run(|| 1).await.unwrap(), 1);
        assert_eq!(ran.load(Ordering::SeqCst), 0);
    }
}
