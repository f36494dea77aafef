//! The open-loop mode: connections that send on a fixed schedule, at a fraction of the rate
//! the closed-loop run reached or at a rate given outright, so that the latency at a given
//! load can be read. A request is
//! timed from when it was due, not from when it went out: a server that stalls delays every
//! request queued behind the stall, and those delays count (no coordinated omission).

use std::time::Duration;

use anyhow::{bail, Result};

/// How a workload's connections send.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mode {
    /// Closed loop: each connection sends when its previous request is answered.
    Max,
    /// Open loop at `rate` requests per second in all, `fraction` of the closed loop's;
    /// `fixed` when the rate was given outright (`--paced-rate`), not as the fraction.
    Paced {
        fraction: f64,
        rate: f64,
        fixed: bool,
    },
}

/// What the open-loop run is asked to reach: a fraction of the closed loop's rate, or a rate
/// in requests per second (a target's load, whatever the closed loop reached).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pace {
    Fraction(f64),
    Rate(f64),
}

impl Pace {
    /// The open-loop mode after a closed loop that reached `max_rate` requests per second.
    pub fn mode(self, max_rate: f64) -> Mode {
        match self {
            Pace::Fraction(fraction) => Mode::Paced {
                fraction,
                rate: fraction * max_rate,
                fixed: false,
            },
            Pace::Rate(rate) => Mode::Paced {
                fraction: rate / max_rate,
                rate,
                fixed: true,
            },
        }
    }
}

impl Mode {
    /// `max`, `paced 80%`, or `paced 800/s` for a rate given outright.
    pub fn label(&self) -> String {
        match self {
            Mode::Max => "max".to_owned(),
            Mode::Paced {
                fraction,
                fixed: false,
                ..
            } => format!("paced {}%", (fraction * 1000.0).round() / 10.0),
            Mode::Paced {
                rate, fixed: true, ..
            } => format!("paced {}/s", rate.round()),
        }
    }
}

/// One connection's send instants, as offsets from the run's start: `offset + k × interval`.
#[derive(Debug, Clone)]
pub struct Schedule {
    offset: Duration,
    interval: Duration,
    sent: u32,
}

/// When a request is due and when it goes out, both from the run's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub due: Duration,
    pub send_at: Duration,
}

impl Schedule {
    /// The `index`-th of `connections` connections sharing `rate` requests per second: each
    /// sends every `connections / rate` seconds, the `index`-th starting `index / rate`
    /// seconds in, so that together they send evenly spaced requests.
    pub fn for_connection(index: usize, connections: usize, rate: f64) -> Result<Schedule> {
        if !(rate.is_finite() && rate > 0.0) || connections == 0 {
            bail!("cannot pace {connections} connections at {rate} requests per second");
        }
        let interval = Duration::try_from_secs_f64(connections as f64 / rate)?;
        let offset = Duration::try_from_secs_f64(index as f64 / rate)?;
        Ok(Schedule {
            offset,
            interval,
            sent: 0,
        })
    }

    /// The next request, `now` being the time since the run's start. It goes out when due, or
    /// at once when the previous answer came back after that; either way it stays due on the
    /// schedule, so a late request is timed from its due instant and the schedule never
    /// slips.
    pub fn next(&mut self, now: Duration) -> Slot {
        let due = self.offset + self.interval.saturating_mul(self.sent);
        self.sent = self.sent.saturating_add(1);
        Slot {
            due,
            send_at: due.max(now),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(value: u64) -> Duration {
        Duration::from_millis(value)
    }

    #[test]
    fn the_rate_is_split_evenly_with_staggered_starts() {
        // 100 requests/s over 4 connections: each every 40 ms, starting 10 ms apart.
        let mut schedules: Vec<Schedule> = (0..4)
            .map(|i| Schedule::for_connection(i, 4, 100.0).unwrap())
            .collect();
        assert!(schedules.iter().all(|s| s.interval == ms(40)));
        let firsts: Vec<Duration> = schedules.iter_mut().map(|s| s.next(ms(0)).due).collect();
        assert_eq!(firsts, [ms(0), ms(10), ms(20), ms(30)]);
        // Together: one request every 10 ms.
        let mut all: Vec<Duration> = firsts;
        for schedule in &mut schedules {
            all.extend((0..2).map(|_| schedule.next(ms(0)).due));
        }
        all.sort();
        let expected: Vec<Duration> = (0..12).map(|k| ms(10 * k)).collect();
        assert_eq!(all, expected);
    }

    #[test]
    fn a_request_on_time_waits_for_its_instant() {
        let mut schedule = Schedule::for_connection(1, 2, 50.0).unwrap();
        assert_eq!(schedule.interval, ms(40));
        let slot = schedule.next(ms(3));
        assert_eq!(
            slot,
            Slot {
                due: ms(20),
                send_at: ms(20)
            }
        );
        let slot = schedule.next(ms(25));
        assert_eq!(
            slot,
            Slot {
                due: ms(60),
                send_at: ms(60)
            }
        );
    }

    #[test]
    fn a_late_request_goes_at_once_but_stays_due_on_the_schedule() {
        let mut schedule = Schedule::for_connection(0, 1, 100.0).unwrap();
        // (asked at, due, sent at), in ms. The first answer took 35 ms: the requests due at
        // 10, 20 and 30 ms go at once, one after the other, each timed from its own due
        // instant; caught up, the next one waits for its instant again.
        let steps = [
            (0, 0, 0),
            (35, 10, 35),
            (36, 20, 36),
            (37, 30, 37),
            (38, 40, 40),
        ];
        for (now, due, send_at) in steps {
            assert_eq!(
                schedule.next(ms(now)),
                Slot {
                    due: ms(due),
                    send_at: ms(send_at)
                },
                "asked at {now} ms"
            );
        }
    }

    #[test]
    fn no_rate_no_schedule() {
        assert!(Schedule::for_connection(0, 4, 0.0).is_err());
        assert!(Schedule::for_connection(0, 4, f64::NAN).is_err());
        assert!(Schedule::for_connection(0, 0, 10.0).is_err());
    }

    #[test]
    fn the_mode_is_labelled_with_the_fraction_as_a_percentage() {
        assert_eq!(Mode::Max.label(), "max");
        let paced = |fraction| Pace::Fraction(fraction).mode(10.0);
        assert_eq!(paced(0.8).label(), "paced 80%");
        assert_eq!(paced(0.125).label(), "paced 12.5%");
        assert_eq!(paced(1.0).label(), "paced 100%");
    }

    #[test]
    fn a_rate_given_outright_is_labelled_with_it_and_keeps_its_fraction() {
        let mode = Pace::Rate(800.0).mode(1_000.0);
        assert_eq!(mode.label(), "paced 800/s");
        assert_eq!(
            mode,
            Mode::Paced {
                fraction: 0.8,
                rate: 800.0,
                fixed: true
            }
        );
        assert_eq!(
            Pace::Fraction(0.5).mode(1_000.0),
            Mode::Paced {
                fraction: 0.5,
                rate: 500.0,
                fixed: false
            }
        );
    }
}
