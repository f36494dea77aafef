//! One request's batched reads: every key a level of the query asks for, of one kind, is read
//! with one statement, and each key once per request.
//!
//! async-graphql's `DataLoader` did this before, with what this API never used: a spawned
//! task per batch behind a timer, a oneshot channel and two hash sets per key, and a copy of
//! each row into its cache and another out of it (docs/performance.md). Here a key waiting
//! for its batch is a waker in the request's one map, and `execute` (lib.rs) starts the
//! batches itself, in its own task, once the query can go no further without them: so a
//! batch holds every key of its level, however many rounds the level's items took to poll.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::future::{poll_fn, Future};
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Poll, Waker};

use futures_util::future::BoxFuture;

/// The batches' maps. Their keys are record ids, a few hundred at most in a request (the
/// query's complexity is bounded), so a flood of colliding keys cannot grow them; foldhash
/// (seeded per process) hashes an id faster than the standard SipHash, whose hashing here was
/// about 4% of an uncached query's CPU, 2.4% after (docs/performance.md).
pub type Map<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// Reads the values of many keys of one kind at once.
pub trait Fetch<K>: Send + Sync + 'static {
    type Value: Clone + Send + Sync + 'static;
    type Error: Clone + Send + Sync + 'static;

    /// The value of each key that names one; a key left out names nothing.
    fn fetch(
        &self,
        keys: &[K],
    ) -> impl Future<Output = Result<Map<K, Self::Value>, Self::Error>> + Send;
}

/// A request's batches over `F`'s reads. Cheap to clone; clones share the batches.
pub struct Batcher<F> {
    inner: Arc<Inner<F>>,
}

impl<F> Clone for Batcher<F> {
    fn clone(&self) -> Self {
        Batcher {
            inner: Arc::clone(&self.inner),
        }
    }
}

struct Inner<F> {
    fetcher: F,
    /// One queue per kind of key, found by the key's type (a request asks for a few kinds).
    queues: Mutex<Queues<F>>,
}

type Queues<F> = Vec<(TypeId, Box<dyn Queued<F>>)>;

/// A key's answer, or who waits for it.
enum Answer<V, E> {
    Waiting(Vec<Waker>),
    Ready(Result<Option<V>, E>),
}

/// The keys of one kind: those not yet in a batch, and every key's answer so far.
struct Queue<K, V, E> {
    pending: Vec<K>,
    answers: Map<K, Answer<V, E>>,
}

/// A queue with its key's type erased, so that all of them can be started at once.
trait Queued<F>: Send {
    /// The batch of the keys pending, if any: a future that reads them and answers them.
    fn start(&mut self, inner: &Arc<Inner<F>>) -> Option<BoxFuture<'static, ()>>;
    fn as_any(&mut self) -> &mut dyn Any;
}

impl<F, K> Queued<F> for Queue<K, F::Value, F::Error>
where
    F: Fetch<K>,
    K: Hash + Eq + Clone + Send + Sync + 'static,
{
    fn start(&mut self, inner: &Arc<Inner<F>>) -> Option<BoxFuture<'static, ()>> {
        if self.pending.is_empty() {
            return None;
        }
        let keys = std::mem::take(&mut self.pending);
        let inner = Arc::clone(inner);
        Some(Box::pin(async move {
            let fetched = inner.fetcher.fetch(&keys).await;
            inner.answer(keys, fetched);
        }))
    }

    fn as_any(&mut self) -> &mut dyn Any {
        self
    }
}

impl<F: Send + Sync + 'static> Batcher<F> {
    pub fn new(fetcher: F) -> Batcher<F> {
        Batcher {
            inner: Arc::new(Inner {
                fetcher,
                queues: Mutex::new(Vec::new()),
            }),
        }
    }

    /// The key's value, `None` when it names nothing. Waits for the batch the key joins;
    /// asked again in the same request, it is answered from the first read.
    pub async fn load<K>(&self, key: K) -> Result<Option<F::Value>, F::Error>
    where
        F: Fetch<K>,
        K: Hash + Eq + Clone + Send + Sync + 'static,
    {
        poll_fn(|cx| {
            let mut queues = self.inner.lock();
            let queue = queue_of::<F, K>(&mut queues);
            match queue.answers.get_mut(&key) {
                Some(Answer::Ready(answer)) => Poll::Ready(answer.clone()),
                Some(Answer::Waiting(wakers)) => {
                    if !wakers.iter().any(|waker| waker.will_wake(cx.waker())) {
                        wakers.push(cx.waker().clone());
                    }
                    Poll::Pending
                }
                None => {
                    queue.pending.push(key.clone());
                    let waiting = Answer::Waiting(vec![cx.waker().clone()]);
                    queue.answers.insert(key.clone(), waiting);
                    Poll::Pending
                }
            }
        })
        .await
    }

    /// Answers `key` with a value read by another statement (a page of records read with
    /// their parents), so that loading it starts no batch. A key asked for already keeps its
    /// own batch's answer.
    pub fn prime<K>(&self, key: K, value: F::Value)
    where
        F: Fetch<K>,
        K: Hash + Eq + Clone + Send + Sync + 'static,
    {
        let mut queues = self.inner.lock();
        let queue = queue_of::<F, K>(&mut queues);
        queue
            .answers
            .entry(key)
            .or_insert(Answer::Ready(Ok(Some(value))));
    }

    /// A batch for each kind of key asked for since the last call. Each, once read, answers
    /// its keys and wakes who waits for them.
    pub fn start_batches(&self) -> Vec<BoxFuture<'static, ()>> {
        let mut queues = self.inner.lock();
        queues
            .iter_mut()
            .filter_map(|(_, queue)| queue.start(&self.inner))
            .collect()
    }
}

impl<F> Inner<F> {
    fn lock(&self) -> MutexGuard<'_, Queues<F>> {
        // A panic while the lock was held left no queue half-changed (each change is one
        // insert or one take), so the queues are still good.
        self.queues.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Settles every key of a batch and wakes its waiters (after the lock is let go).
    fn answer<K>(&self, keys: Vec<K>, mut fetched: Result<Map<K, F::Value>, F::Error>)
    where
        F: Fetch<K>,
        K: Hash + Eq + Clone + Send + Sync + 'static,
    {
        let mut woken = Vec::new();
        {
            let mut queues = self.lock();
            let queue = queue_of::<F, K>(&mut queues);
            for key in keys {
                // Keys of one batch are distinct (a key joins a batch only when first asked).
                let answer = match &mut fetched {
                    Ok(values) => Ok(values.remove(&key)),
                    Err(error) => Err(error.clone()),
                };
                if let Some(Answer::Waiting(wakers)) =
                    queue.answers.insert(key, Answer::Ready(answer))
                {
                    woken.extend(wakers);
                }
            }
        }
        woken.into_iter().for_each(Waker::wake);
    }
}

/// The queue of `K`'s keys, made on first use.
fn queue_of<F, K>(queues: &mut Queues<F>) -> &mut Queue<K, F::Value, F::Error>
where
    F: Fetch<K>,
    K: Hash + Eq + Clone + Send + Sync + 'static,
{
    let kind = TypeId::of::<K>();
    let at = match queues.iter().position(|(id, _)| *id == kind) {
        Some(at) => at,
        None => {
            let queue: Queue<K, F::Value, F::Error> = Queue {
                pending: Vec::new(),
                answers: Map::default(),
            };
            queues.push((kind, Box::new(queue)));
            queues.len() - 1
        }
    };
    #[allow(clippy::expect_used)] // the entry of K's TypeId is always a queue of K's keys
    queues[at]
        .1
        .as_any()
        .downcast_mut()
        .expect("the queue of a key's type holds that type's keys")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use futures_util::future::join_all;
    use futures_util::stream::{FuturesUnordered, StreamExt};

    /// Doubles numbers; 0 names nothing, 13 fails its whole batch. Keeps every batch it read.
    #[derive(Default)]
    struct Doubler {
        batches: Mutex<Vec<Vec<u32>>>,
        reads: AtomicUsize,
    }

    impl Fetch<u32> for Arc<Doubler> {
        type Value = u64;
        type Error = String;

        async fn fetch(&self, keys: &[u32]) -> Result<Map<u32, u64>, String> {
            self.reads.fetch_add(1, Ordering::SeqCst);
            let mut sorted = keys.to_vec();
            sorted.sort_unstable();
            self.batches
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(sorted);
            if keys.contains(&13) {
                return Err("thirteen".to_owned());
            }
            Ok(keys
                .iter()
                .filter(|k| **k != 0)
                .map(|k| (*k, u64::from(*k) * 2))
                .collect())
        }
    }

    /// Runs `loads` to their end as `execute` does: every load polled until none can go on,
    /// then the batches started and run, again and again.
    async fn drive<T>(batcher: &Batcher<Arc<Doubler>>, loads: Vec<BoxFuture<'_, T>>) -> Vec<T> {
        let mut all = std::pin::pin!(join_all(loads));
        poll_fn(|cx| loop {
            if let Poll::Ready(done) = all.as_mut().poll(cx) {
                return Poll::Ready(done);
            }
            let mut batches: FuturesUnordered<_> = batcher.start_batches().into_iter().collect();
            if batches.is_empty() {
                return Poll::Pending;
            }
            while let Poll::Ready(Some(())) = batches.poll_next_unpin(cx) {}
        })
        .await
    }

    #[tokio::test]
    async fn keys_asked_together_are_read_in_one_batch_and_each_once() {
        let doubler = Arc::new(Doubler::default());
        let batcher = Batcher::new(Arc::clone(&doubler));
        let loads = [3, 1, 3, 0, 2]
            .into_iter()
            .map(|k| Box::pin(batcher.load(k)) as BoxFuture<'_, _>)
            .collect();
        let answers = drive(&batcher, loads).await;
        assert_eq!(
            answers,
            vec![
                Ok(Some(6u64)),
                Ok(Some(2u64)),
                Ok(Some(6u64)),
                Ok(None),
                Ok(Some(4u64))
            ]
        );
        let batches = doubler
            .batches
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        assert_eq!(*batches, vec![vec![0, 1, 2, 3]], "one batch, each key once");
    }

    #[tokio::test]
    async fn a_key_read_before_is_answered_without_another_batch() {
        let doubler = Arc::new(Doubler::default());
        let batcher = Batcher::new(Arc::clone(&doubler));
        let first = drive(&batcher, vec![Box::pin(batcher.load(5))]).await;
        let again = drive(
            &batcher,
            vec![Box::pin(batcher.load(5)), Box::pin(batcher.load(6))],
        )
        .await;
        assert_eq!(first, vec![Ok(Some(10u64))]);
        assert_eq!(again, vec![Ok(Some(10u64)), Ok(Some(12u64))]);
        let batches = doubler
            .batches
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        assert_eq!(*batches, vec![vec![5], vec![6]]);
    }

    #[tokio::test]
    async fn a_primed_key_is_answered_without_a_batch_and_one_asked_before_keeps_its_answer() {
        let doubler = Arc::new(Doubler::default());
        let batcher = Batcher::new(Arc::clone(&doubler));
        let first = drive(&batcher, vec![Box::pin(batcher.load(2))]).await;
        batcher.prime(2, 99);
        batcher.prime(3, 100);
        let later = drive(
            &batcher,
            vec![Box::pin(batcher.load(2)), Box::pin(batcher.load(3))],
        )
        .await;
        assert_eq!(first, vec![Ok(Some(4u64))]);
        assert_eq!(later, vec![Ok(Some(4u64)), Ok(Some(100u64))]);
        let batches = doubler
            .batches
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        assert_eq!(*batches, vec![vec![2]], "3 was primed, 2 read before");
    }

    #[tokio::test]
    async fn a_failed_batch_fails_every_key_it_held_and_only_those() {
        let doubler = Arc::new(Doubler::default());
        let batcher = Batcher::new(Arc::clone(&doubler));
        let failed = drive(
            &batcher,
            vec![Box::pin(batcher.load(13)), Box::pin(batcher.load(4))],
        )
        .await;
        let thirteen = Err("thirteen".to_owned());
        assert_eq!(failed, vec![thirteen.clone(), thirteen]);
        let later = drive(&batcher, vec![Box::pin(batcher.load(7))]).await;
        assert_eq!(later, vec![Ok(Some(14u64))]);
        assert_eq!(doubler.reads.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_level_asked_after_its_parents_settled_is_a_batch_of_its_own() {
        let doubler = Arc::new(Doubler::default());
        let batcher = Batcher::new(Arc::clone(&doubler));
        // Each load asks for its parent, then for the parent's double: two levels.
        let nested = |k: u32| {
            let batcher = &batcher;
            Box::pin(async move {
                let parent = batcher.load(k).await?.unwrap_or_default();
                batcher.load(u32::try_from(parent).unwrap_or(0)).await
            }) as BoxFuture<'_, _>
        };
        let answers = drive(&batcher, vec![nested(1), nested(2), nested(3)]).await;
        assert_eq!(
            answers,
            vec![Ok(Some(4u64)), Ok(Some(8u64)), Ok(Some(12u64))]
        );
        let batches = doubler
            .batches
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        assert_eq!(
            *batches,
            vec![vec![1, 2, 3], vec![4, 6]],
            "2 was read already"
        );
    }
}
