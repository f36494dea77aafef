//! Reading the time: the system clock in production, a manual one in tests.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch, the unit of JWT `NumericDate` (RFC 7519 §2).
pub type UnixTime = i64;

/// A source of the current time, held in state and read once per request.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// The current time in seconds since the Unix epoch.
    fn now(&self) -> UnixTime;

    /// The current time in milliseconds since the Unix epoch, for what is ordered by time
    /// finer than a second (a grant's id); nothing is decided on it. A clock that keeps
    /// seconds only reads its second's start.
    fn now_millis(&self) -> i64 {
        self.now().saturating_mul(1000)
    }
}

/// The operating system's wall clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    // This is the one place the process reads the wall clock; everything else goes through a
    // `Clock` so that tests can fix or move time.
    #[allow(clippy::disallowed_methods)]
    fn now(&self) -> UnixTime {
        match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(since) => i64::try_from(since.as_secs()).unwrap_or(i64::MAX),
            Err(before) => i64::try_from(before.duration().as_secs()).map_or(i64::MIN, |s| -s),
        }
    }

    #[allow(clippy::disallowed_methods)]
    fn now_millis(&self) -> i64 {
        match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(since) => i64::try_from(since.as_millis()).unwrap_or(i64::MAX),
            Err(_) => 0,
        }
    }
}

/// A clock that only moves when told to, so tests exercise expiry without sleeping.
#[derive(Debug)]
pub struct ManualClock {
    now: AtomicI64,
}

impl ManualClock {
    /// A clock reading `start`.
    pub fn new(start: UnixTime) -> Self {
        Self {
            now: AtomicI64::new(start),
        }
    }

    /// Set the time to `t`.
    pub fn set(&self, t: UnixTime) {
        self.now.store(t, Ordering::SeqCst);
    }

    /// Move the time forward by `secs` (backward if negative).
    pub fn advance(&self, secs: i64) {
        self.now.fetch_add(secs, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> UnixTime {
        self.now.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_reads_what_it_was_given_and_moves_only_when_told() {
        let clock = ManualClock::new(1_700_000_000);
        assert_eq!(clock.now(), 1_700_000_000);
        clock.advance(3600);
        assert_eq!(clock.now(), 1_700_003_600);
        clock.set(42);
        assert_eq!(clock.now(), 42);
        clock.advance(-2);
        assert_eq!(clock.now(), 40);
    }

    #[test]
    fn system_clock_is_after_2023() {
        // 2023-11-14T22:13:20Z; a clock before that is misread, not merely slow.
        assert!(SystemClock.now() > 1_700_000_000);
    }

    #[test]
    fn milliseconds_are_within_the_second_the_clock_reads() {
        assert_eq!(ManualClock::new(7).now_millis(), 7_000);
        let (before, millis, after) = (
            SystemClock.now(),
            SystemClock.now_millis(),
            SystemClock.now(),
        );
        assert!(
            (before * 1000..(after + 1) * 1000).contains(&millis),
            "{millis}"
        );
    }

    #[test]
    fn clocks_are_usable_as_trait_objects() {
        let clocks: [Box<dyn Clock>; 2] = [Box::new(SystemClock), Box::new(ManualClock::new(7))];
        assert_eq!(clocks[1].now(), 7);
    }
}
