//! Argon2id's working memory, kept between hashes.
//!
//! The `argon2` crate allocates a hash's 19 MiB for each call and fills them with zeros; the
//! allocator hands them back to the system when they are freed (mimalloc without a purge
//! delay, for a small idle footprint), so every sign-in faulted 4,864 pages in again and
//! zeroed them twice: in the PostgreSQL soak's profile that was about 8% of the server's CPU
//! beside Argon2id's own 26%. Here a hash takes a buffer kept from an earlier one (at most
//! one per password permit is ever in use), and buffers unused for a while go back to the
//! system, so an idle server holds none.
//!
//! A buffer is zeroed as soon as its hash is done: what a finished Argon2 computation leaves
//! in memory lets a guess at the password be checked without paying for the memory-hard
//! part (the "garbage-collector attack" on Argon2), so none of it outlives the hash.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use argon2::Block;
use zeroize::Zeroize;

/// Buffers unused this long are given back to the system.
const IDLE: Duration = Duration::from_secs(10);

/// Buffers for Argon2's blocks. Cheap to share; used from the blocking threads that hash.
pub struct Argon2Memory {
    free: Mutex<Vec<Buffer>>,
    idle: Duration,
    /// A task that frees idle buffers is scheduled.
    reaping: AtomicBool,
}

struct Buffer {
    blocks: Box<[Block]>,
    freed_at: Instant,
}

impl fmt::Debug for Argon2Memory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Argon2Memory")
            .field("kept", &self.kept())
            .field("idle", &self.idle)
            .finish()
    }
}

impl Default for Argon2Memory {
    fn default() -> Argon2Memory {
        Argon2Memory::with_idle(IDLE)
    }
}

impl Argon2Memory {
    /// Memory whose buffers are freed after `idle` unused; `Duration::ZERO` keeps none (each
    /// hash allocates its own, as the `argon2` crate does).
    pub fn with_idle(idle: Duration) -> Argon2Memory {
        Argon2Memory {
            free: Mutex::new(Vec::new()),
            idle,
            reaping: AtomicBool::new(false),
        }
    }

    /// Runs `hash` on `count` blocks (contents unspecified: Argon2 writes every block before
    /// it reads it), then zeroes them and keeps them for the next hash.
    pub(crate) fn with_blocks<T>(
        self: &Arc<Self>,
        count: usize,
        hash: impl FnOnce(&mut [Block]) -> T,
    ) -> T {
        let mut blocks = self.take(count);
        let result = hash(&mut blocks);
        blocks.zeroize();
        self.keep(blocks);
        result
    }

    /// Buffers kept for the next hashes.
    pub fn kept(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Buffer>> {
        // A panic while the lock was held leaves a list of zeroed buffers: still usable.
        self.free
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn take(&self, count: usize) -> Box<[Block]> {
        let kept = {
            let mut free = self.lock();
            // The most recently used first: its pages are the likeliest to be resident.
            free.iter()
                .rposition(|buffer| buffer.blocks.len() == count)
                .map(|at| free.swap_remove(at))
        };
        match kept {
            Some(buffer) => buffer.blocks,
            // Parameters other than the current ones (an older hash) get a buffer of their
            // own, which is kept like any other and freed when it idles.
            None => vec![Block::default(); count].into_boxed_slice(),
        }
    }

    fn keep(self: &Arc<Self>, blocks: Box<[Block]>) {
        if self.idle.is_zero() {
            return;
        }
        self.lock().push(Buffer {
            blocks,
            freed_at: Instant::now(),
        });
        self.reap_later();
    }

    /// Frees the buffers idle for `idle` or longer; true when some are still kept.
    fn reap(&self) -> bool {
        let mut free = self.lock();
        free.retain(|buffer| buffer.freed_at.elapsed() < self.idle);
        !free.is_empty()
    }

    /// Schedules a task that frees idle buffers until none is kept, unless one is running.
    /// Without a runtime (a hash outside the server) nothing is kept beyond the process's
    /// next hash, which frees what has idled.
    fn reap_later(self: &Arc<Self>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.reap();
            return;
        };
        if self.reaping.swap(true, Ordering::AcqRel) {
            return;
        }
        let memory = Arc::clone(self);
        runtime.spawn(async move {
            loop {
                tokio::time::sleep(memory.idle).await;
                if memory.reap() {
                    continue;
                }
                memory.reaping.store(false, Ordering::Release);
                // A buffer kept after the check above, by a hash that saw this task still
                // running, would otherwise stay until the next hash.
                if memory.kept() == 0 || memory.reaping.swap(true, Ordering::AcqRel) {
                    return;
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_zero(memory: &Argon2Memory) -> bool {
        memory.lock().iter().all(|buffer| {
            buffer
                .blocks
                .iter()
                .all(|block| block.as_ref().iter().all(|word| *word == 0))
        })
    }

    #[tokio::test]
    async fn a_buffer_is_zeroed_after_its_hash_reused_by_the_next_and_freed_when_idle() {
        let memory = Arc::new(Argon2Memory::with_idle(Duration::from_millis(100)));
        let first = memory.with_blocks(64, |blocks| {
            blocks[7] = Block::new();
            blocks[7].as_mut()[0] = 0x5eed;
            blocks.as_ptr()
        });
        assert_eq!(memory.kept(), 1);
        assert!(all_zero(&memory), "a hash's blocks outlived it");
        let second = memory.with_blocks(64, |blocks| blocks.as_ptr());
        assert_eq!(first, second, "the kept buffer was not reused");
        // Other parameters: a buffer of their own.
        memory.with_blocks(32, |blocks| assert_eq!(blocks.len(), 32));
        assert_eq!(memory.kept(), 2);
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert_eq!(memory.kept(), 0, "idle buffers were not freed");
        // And the next hash schedules the freeing again.
        memory.with_blocks(64, |_| ());
        assert_eq!(memory.kept(), 1);
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert_eq!(
            memory.kept(),
            0,
            "idle buffers were not freed the second time"
        );
    }

    /// Inside a runtime, as in the server (outside one, a hash frees what has idled anyway).
    #[tokio::test]
    async fn memory_without_an_idle_spell_keeps_nothing() {
        let memory = Arc::new(Argon2Memory::with_idle(Duration::ZERO));
        memory.with_blocks(16, |_| ());
        assert_eq!(memory.kept(), 0);
    }
}
