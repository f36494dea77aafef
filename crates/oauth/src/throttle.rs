//! Sign-in throttling: after each failure the next attempt must wait a little longer, and
//! past a limit the account (or the client address) is locked for a while. Each attempt
//! reserves its place in the counts before its password is checked, so parallel guesses
//! cannot outrun the limit. Counts live in the store, so every node sees them. Also the
//! quota of authorization requests an address may start without a session.

use std::net::IpAddr;

use jose::UnixTime;
use store::FailureCount;

/// The limits, from the command line.
#[derive(Clone, Copy, Debug)]
pub struct ThrottlePolicy {
    /// Failures on one username before it is locked.
    pub max_account_failures: i64,
    /// Failures from one client address, across usernames, before it is locked.
    pub max_address_failures: i64,
    /// How long a lock lasts.
    pub lock_seconds: i64,
    /// Authorization requests one client address may start without a session, per tenant,
    /// in [`REQUEST_QUOTA_WINDOW`] seconds: each is stored until it expires.
    pub max_authorize_requests_per_address: i64,
}

impl Default for ThrottlePolicy {
    fn default() -> ThrottlePolicy {
        ThrottlePolicy {
            max_account_failures: 5,
            max_address_failures: 50,
            lock_seconds: 300,
            max_authorize_requests_per_address: 600,
        }
    }
}

/// The authorization-request quota's window: a request's lifetime, so one address never
/// holds more than twice its quota of unexpired requests.
pub const REQUEST_QUOTA_WINDOW: UnixTime = crate::authorize::REQUEST_LIFETIME;

/// The key an address is counted under: an IPv4 address itself, an IPv6 address by its /64
/// (one subscriber's network: RFC 6177 §3), so one host cannot spread over its addresses.
pub fn address_key(address: IpAddr) -> String {
    match address.to_canonical() {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => {
            let s = v6.segments();
            format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
        }
    }
}

/// Failures older than this are forgotten.
pub const WINDOW_SECONDS: UnixTime = 900;

/// The longest delay between attempts before the lock.
const MAX_DELAY_SECONDS: i64 = 30;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    /// Too soon after the last failure: try again in this many seconds.
    Wait(i64),
    /// Locked for this many more seconds.
    Locked(i64),
}

impl Verdict {
    /// The stricter of two verdicts.
    pub fn and(self, other: Verdict) -> Verdict {
        match (self, other) {
            (Verdict::Locked(a), Verdict::Locked(b)) => Verdict::Locked(a.max(b)),
            (Verdict::Locked(a), _) | (_, Verdict::Locked(a)) => Verdict::Locked(a),
            (Verdict::Wait(a), Verdict::Wait(b)) => Verdict::Wait(a.max(b)),
            (Verdict::Wait(a), _) | (_, Verdict::Wait(a)) => Verdict::Wait(a),
            (Verdict::Allowed, Verdict::Allowed) => Verdict::Allowed,
        }
    }
}

impl ThrottlePolicy {
    /// How long failures are remembered: at least as long as a lock lasts, or a long lock
    /// would end early when its count is forgotten.
    pub fn window(&self) -> UnixTime {
        WINDOW_SECONDS.max(self.lock_seconds)
    }

    /// An account gets growing delays between attempts, then the lock.
    pub fn account_verdict(&self, count: Option<FailureCount>, now: UnixTime) -> Verdict {
        verdict(
            count,
            self.max_account_failures,
            self.lock_seconds,
            self.window(),
            true,
            now,
        )
    }

    /// How many failures and attempts in flight an account may hold once a new attempt is
    /// admitted, given the count read before it.
    pub fn account_places(&self, previous: Option<FailureCount>, now: UnixTime) -> i64 {
        self.places(previous, self.max_account_failures, now)
    }

    /// The same for an address.
    pub fn address_places(&self, previous: Option<FailureCount>, now: UnixTime) -> i64 {
        self.places(previous, self.max_address_failures, now)
    }

    /// Up to the limit, or one more than the failures once a lock has run out (which locks
    /// again if it fails). Attempts in flight take places as failures do, so however many
    /// arrive at once, no more than the limit reach the password check; a success frees
    /// only its own place.
    fn places(&self, previous: Option<FailureCount>, max_failures: i64, now: UnixTime) -> i64 {
        match previous {
            // The store restarts a count whose last attempt left the window.
            Some(count) if count.last_attempt_at >= now - self.window() => {
                count.failures.max(max_failures - 1) + 1
            }
            _ => max_failures,
        }
    }

    /// An address gets only the lock: many users may share one address (a proxy, an office),
    /// and one user's typo must not slow the others down.
    pub fn address_verdict(&self, count: Option<FailureCount>, now: UnixTime) -> Verdict {
        verdict(
            count,
            self.max_address_failures,
            self.lock_seconds,
            self.window(),
            false,
            now,
        )
    }
}

/// May a sign-in be attempted now, given the failures counted so far?
fn verdict(
    count: Option<FailureCount>,
    max_failures: i64,
    lock_seconds: i64,
    window: UnixTime,
    delays: bool,
    now: UnixTime,
) -> Verdict {
    // Attempts in flight do not delay: two sign-ins of one user at once both go through.
    let Some(count) = count.filter(|c| c.failures > 0) else {
        return Verdict::Allowed;
    };
    if count.last_failure_at < now - window {
        return Verdict::Allowed;
    }
    if count.failures >= max_failures {
        let until = count.last_failure_at + lock_seconds;
        return match now < until {
            true => Verdict::Locked(until - now),
            false => Verdict::Allowed,
        };
    }
    if !delays {
        return Verdict::Allowed;
    }
    // 1, 2, 4, 8 … seconds after the 1st, 2nd, 3rd, 4th … failure.
    let exponent = u32::try_from((count.failures - 1).clamp(0, 5)).unwrap_or(5);
    let delay = (1i64 << exponent).min(MAX_DELAY_SECONDS);
    let until = count.last_failure_at + delay;
    match now < until {
        true => Verdict::Wait(until - now),
        false => Verdict::Allowed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: ThrottlePolicy = ThrottlePolicy {
        max_account_failures: 5,
        max_address_failures: 5,
        lock_seconds: 300,
        max_authorize_requests_per_address: 10,
    };

    fn count(failures: i64, last: UnixTime) -> Option<FailureCount> {
        Some(FailureCount {
            failures,
            first_failure_at: last,
            last_failure_at: last,
            in_flight: 0,
            last_attempt_at: last,
        })
    }

    #[test]
    fn each_failure_doubles_the_wait_until_the_lock() {
        let t = 1_000;
        assert_eq!(POLICY.account_verdict(None, t), Verdict::Allowed);
        assert_eq!(POLICY.account_verdict(count(1, t), t), Verdict::Wait(1));
        assert_eq!(POLICY.account_verdict(count(1, t), t + 1), Verdict::Allowed);
        assert_eq!(POLICY.account_verdict(count(3, t), t + 1), Verdict::Wait(3));
        assert_eq!(POLICY.account_verdict(count(4, t), t + 8), Verdict::Allowed);
    }

    #[test]
    fn the_limit_locks_for_the_lock_time_then_lets_go() {
        let t = 1_000;
        assert_eq!(
            POLICY.account_verdict(count(5, t), t + 10),
            Verdict::Locked(290)
        );
        assert_eq!(
            POLICY.account_verdict(count(9, t), t + 299),
            Verdict::Locked(1)
        );
        assert_eq!(
            POLICY.account_verdict(count(5, t), t + 300),
            Verdict::Allowed
        );
        assert_eq!(
            POLICY.account_verdict(count(5, t), t + WINDOW_SECONDS + 1),
            Verdict::Allowed
        );
    }

    #[test]
    fn addresses_only_lock_and_long_locks_outlive_the_window() {
        let t = 1_000;
        assert_eq!(
            POLICY.address_verdict(count(3, t), t),
            Verdict::Allowed,
            "no delays per address"
        );
        assert_eq!(
            POLICY.address_verdict(count(5, t), t + 1),
            Verdict::Locked(299)
        );
        let long = ThrottlePolicy {
            lock_seconds: 3600,
            ..POLICY
        };
        assert_eq!(long.window(), 3600);
        assert_eq!(
            long.account_verdict(count(5, t), t + 2000),
            Verdict::Locked(1600)
        );
    }

    #[test]
    fn parallel_attempts_get_the_places_left_before_the_lock() {
        let t = 1_000;
        assert_eq!(POLICY.account_places(None, t), 5);
        assert_eq!(POLICY.account_places(count(2, t), t + 10), 5);
        assert_eq!(
            POLICY.account_places(count(5, t), t + 300),
            6,
            "one try after the lock"
        );
        assert_eq!(
            POLICY.account_places(count(5, t), t + WINDOW_SECONDS + 1),
            5,
            "forgotten"
        );
        let address = ThrottlePolicy {
            max_address_failures: 3,
            ..POLICY
        };
        assert_eq!(address.address_places(count(1, t), t), 3);
    }

    #[test]
    fn attempts_in_flight_do_not_delay_another() {
        let t = 1_000;
        let in_flight = Some(FailureCount {
            failures: 0,
            first_failure_at: t,
            last_failure_at: t,
            in_flight: 2,
            last_attempt_at: t,
        });
        assert_eq!(POLICY.account_verdict(in_flight, t), Verdict::Allowed);
        // A reservation keeps a count in the window: its places are not forgotten.
        let late = in_flight.map(|c| FailureCount {
            failures: 5,
            last_attempt_at: t + WINDOW_SECONDS,
            ..c
        });
        assert_eq!(POLICY.account_places(late, t + WINDOW_SECONDS + 1), 6);
    }

    #[test]
    fn ipv6_addresses_count_by_their_64() {
        let key = |s: &str| address_key(s.parse().unwrap());
        assert_eq!(key("192.0.2.7"), "192.0.2.7");
        assert_eq!(key("::ffff:192.0.2.7"), "192.0.2.7");
        assert_eq!(key("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
        assert_eq!(key("2001:db8:1:2:bbbb::9"), "2001:db8:1:2::/64");
        assert_ne!(key("2001:db8:1:3::1"), key("2001:db8:1:2::1"));
    }

    #[test]
    fn the_stricter_verdict_wins() {
        assert_eq!(Verdict::Wait(3).and(Verdict::Locked(2)), Verdict::Locked(2));
        assert_eq!(Verdict::Allowed.and(Verdict::Wait(4)), Verdict::Wait(4));
        assert_eq!(Verdict::Wait(3).and(Verdict::Wait(5)), Verdict::Wait(5));
        assert_eq!(Verdict::Allowed.and(Verdict::Allowed), Verdict::Allowed);
    }
}
