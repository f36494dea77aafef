//! RS256 signing on threads of its own, one per core, fed by one first-come-first-served queue.
//!
//! Why not tokio's blocking pool under a semaphore, as before: a signing then waited for its
//! permit on the async worker, and only the permit's release let the next one be handed to a
//! blocking thread, which had gone to sleep in between. Every token response so cost the
//! signing thread a sleep and a wake-up, and the worker one more. Here the signing threads take
//! the next job from the queue as soon as one is done, and sleep only when it is empty, so
//! under load the kernel switches between them and the async worker once per time slice, not
//! twice per response. RSA stays off the async workers, as before.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use crate::error::OAuthError;

type Job = Box<dyn FnOnce() + Send>;

/// The handle the state holds; the threads end when its last clone is dropped.
#[derive(Clone, Debug)]
pub(crate) struct Signer(Arc<Handle>);

#[derive(Debug)]
struct Handle(Arc<Queue>);

#[derive(Default)]
struct Queue {
    state: Mutex<Jobs>,
    ready: Condvar,
}

#[derive(Default)]
struct Jobs {
    waiting: VecDeque<Job>,
    closed: bool,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue").finish_non_exhaustive()
    }
}

impl Signer {
    fn queue(&self) -> &Queue {
        &self.0 .0
    }

    /// Starts `threads` signing threads (at least one).
    pub(crate) fn start(threads: usize) -> Result<Signer, OAuthError> {
        // The handle first: if a thread cannot start, dropping it ends those that did.
        let handle = Handle(Arc::new(Queue::default()));
        for n in 0..threads.max(1) {
            let queue = Arc::clone(&handle.0);
            std::thread::Builder::new()
                .name(format!("fieldauth-sign-{n}"))
                .spawn(move || queue.serve())
                .map_err(|_| OAuthError::Blocking)?;
        }
        Ok(Signer(Arc::new(handle)))
    }

    /// Runs `work` on a signing thread, after the jobs queued before it, in the caller's span;
    /// not at all if this future is dropped before its turn.
    pub(crate) async fn run<T, F>(&self, work: F) -> Result<T, OAuthError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let (done, result) = tokio::sync::oneshot::channel();
        let span = tracing::Span::current();
        self.queue().push(Box::new(move || {
            // The request was cut off while it waited: no one would read the signature.
            if done.is_closed() {
                return;
            }
            let _ = done.send(span.in_scope(work));
        }));
        // A job that panicked dropped its sender: an internal error, not a lost thread.
        result.await.map_err(|_| OAuthError::Blocking)
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.0.lock().closed = true;
        self.0.ready.notify_all();
    }
}

impl Queue {
    fn lock(&self) -> std::sync::MutexGuard<'_, Jobs> {
        // A job runs outside the lock, so a poisoned lock holds consistent jobs.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn push(&self, job: Job) {
        self.lock().waiting.push_back(job);
        self.ready.notify_one();
    }

    /// A signing thread's loop: the next job while there is one, else sleep until one comes
    /// or the handle is dropped (jobs queued before that still run).
    fn serve(&self) {
        loop {
            let job = {
                let mut jobs = self.lock();
                loop {
                    if let Some(job) = jobs.waiting.pop_front() {
                        break job;
                    }
                    if jobs.closed {
                        return;
                    }
                    jobs = self
                        .ready
                        .wait(jobs)
                        .unwrap_or_else(PoisonError::into_inner);
                }
            };
            // A panic fails its own request (its sender is dropped) and keeps the thread.
            let _ = catch_unwind(AssertUnwindSafe(job));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn runs_work_off_the_callers_thread_and_returns_its_result() {
        let signer = Signer::start(1).unwrap();
        let caller = std::thread::current().id();
        let (value, thread) = signer
            .run(|| (6 * 7, std::thread::current().id()))
            .await
            .unwrap();
        assert_eq!(value, 42);
        assert_ne!(thread, caller);
    }

    #[tokio::test]
    async fn one_thread_runs_jobs_in_the_order_they_came() {
        let signer = Signer::start(1).unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        // Queued before any runs: the thread is held by the first job until all are queued.
        let (release, hold) = std::sync::mpsc::channel::<()>();
        signer.queue().push(Box::new(move || hold.recv().unwrap()));
        for n in 0..20 {
            let order = Arc::clone(&order);
            signer
                .queue()
                .push(Box::new(move || order.lock().unwrap().push(n)));
        }
        release.send(()).unwrap();
        signer.run(|| ()).await.unwrap();
        assert_eq!(*order.lock().unwrap(), (0..20).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn work_whose_caller_left_while_it_waited_is_not_done() {
        let signer = Signer::start(1).unwrap();
        let (release, hold) = std::sync::mpsc::channel::<()>();
        signer.queue().push(Box::new(move || hold.recv().unwrap()));
        let done = Arc::new(Mutex::new(false));
        let flag = Arc::clone(&done);
        // Polled once (the job is queued behind the held one), then dropped: a cut-off request.
        let left = tokio::time::timeout(
            Duration::ZERO,
            signer.run(move || *flag.lock().unwrap() = true),
        )
        .await;
        assert!(
            left.is_err(),
            "the job cannot have run while the thread is held"
        );
        release.send(()).unwrap();
        signer.run(|| ()).await.unwrap();
        assert!(!*done.lock().unwrap());
    }

    #[tokio::test]
    async fn a_panicking_job_fails_alone_and_the_thread_goes_on() {
        let signer = Signer::start(1).unwrap();
        let failed = signer.run(|| -> u8 { panic!("a job's panic") }).await;
        assert!(matches!(failed, Err(OAuthError::Blocking)));
        assert_eq!(signer.run(|| 1u8).await.unwrap(), 1);
    }

    #[tokio::test]
    async fn the_threads_end_when_the_last_handle_is_dropped() {
        let signer = Signer::start(2).unwrap();
        let copy = signer.clone();
        // Each thread holds a reference to the queue, the handle one more.
        let queue = Arc::clone(&signer.0 .0);
        assert_eq!(Arc::strong_count(&queue), 4);
        drop(signer);
        assert_eq!(copy.run(|| 5u8).await.unwrap(), 5, "a clone still works");
        drop(copy);
        for _ in 0..200 {
            if Arc::strong_count(&queue) == 1 {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!(
            "{} signing threads still hold the queue",
            Arc::strong_count(&queue) - 1
        );
    }
}
