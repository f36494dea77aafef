//! `--latency-log`: every request of a measured window, when it was due (sent, in a closed
//! loop) and how long it took. A p99 says how many requests were slow, not whether they came
//! together nor when: laid out by due time, a tail shows as stalls, which line up with the
//! server's log and with `perf record -k CLOCK_REALTIME` by the wall clock
//! (docs/performance.md, What is next).

use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};

/// One request: when it was due (or sent), by the wall clock, and its latency.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Timed {
    pub at: SystemTime,
    pub latency: Duration,
}

/// The bench's monotonic instants on the wall clock: one `Instant` and the `SystemTime` read
/// with it, so that a step of the wall clock during the run moves no request.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    instant: Instant,
    wall: SystemTime,
}

impl Clock {
    // The bench's one read of the wall clock, to line its requests up with other tools' logs
    // to the microsecond: the server's `jose::Clock` counts whole seconds, for tokens, and
    // nothing here is a test's to fix.
    #[allow(clippy::disallowed_methods)]
    pub fn now() -> Clock {
        Clock {
            instant: Instant::now(),
            wall: SystemTime::now(),
        }
    }

    /// `at` on the wall clock; an instant before the clock's own counts as that one.
    pub fn wall(&self, at: Instant) -> SystemTime {
        self.wall + at.saturating_duration_since(self.instant)
    }
}

/// Starts the log empty, before the first window.
pub fn create(path: &Path) -> Result<()> {
    std::fs::File::create(path)
        .with_context(|| format!("cannot create the latency log {}", path.display()))?;
    Ok(())
}

/// Appends one row's requests under a `# label` line, in the order they were due: a line
/// each, seconds since the Unix epoch and the latency in milliseconds, to the microsecond.
pub fn append(path: &Path, label: &str, requests: &[Timed]) -> Result<()> {
    let mut requests: Vec<&Timed> = requests.iter().collect();
    requests.sort_by_key(|request| request.at);
    let file = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .with_context(|| format!("cannot open the latency log {}", path.display()))?;
    let mut out = BufWriter::new(file);
    writeln!(out, "# {label}")?;
    for request in requests {
        let at = request.at.duration_since(UNIX_EPOCH).unwrap_or_default();
        writeln!(
            out,
            "{}.{:06} {:.3}",
            at.as_secs(),
            at.subsec_micros(),
            request.latency.as_secs_f64() * 1e3
        )?;
    }
    out.flush()
        .with_context(|| format!("cannot write the latency log {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(micros: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_micros(micros)
    }

    #[test]
    fn each_row_is_labelled_and_its_requests_come_in_the_order_they_were_due() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("latencies.txt");
        create(&path).unwrap();
        let late = Timed {
            at: at(1_700_000_000_250_000),
            latency: Duration::from_micros(12_500),
        };
        let early = Timed {
            at: at(1_700_000_000_000_001),
            latency: Duration::from_micros(2_250),
        };
        append(&path, "refresh sqlite max", &[late, early]).unwrap();
        append(&path, "refresh sqlite paced 80%", &[early]).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "# refresh sqlite max\n\
             1700000000.000001 2.250\n\
             1700000000.250000 12.500\n\
             # refresh sqlite paced 80%\n\
             1700000000.000001 2.250\n"
        );
        // A new run starts the log over.
        create(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "");
    }

    #[test]
    fn an_instant_is_placed_on_the_wall_clock_by_its_distance_from_the_clocks_own() {
        let clock = Clock::now();
        let later = clock.instant + Duration::from_millis(1_500);
        assert_eq!(clock.wall(later), clock.wall + Duration::from_millis(1_500));
        assert_eq!(clock.wall(clock.instant), clock.wall);
    }
}
