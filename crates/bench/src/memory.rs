//! The server's memory: its resident set (`VmRSS` of `/proc/<pid>/status`) read once, or
//! sampled every 250 ms in the background for the peak of a stretch of load.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use serde::Serialize;

/// How often [`Sampler`] reads the resident set.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(250);

/// The resident set of process `pid`, in KiB.
pub fn rss_kib(pid: u32) -> Result<u64> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
    parse_vm_rss(&status).ok_or_else(|| anyhow!("no VmRSS in {path}"))
}

/// `VmRSS:    23456 kB` of proc(5) `status` (the kernel's "kB" are KiB).
fn parse_vm_rss(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line["VmRSS:".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// KiB as MiB, for the tables.
pub fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// The server's resident set around one stretch of load: just before its connections open,
/// the highest sample while it ran, and a second after they closed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RssAround {
    pub before_kib: u64,
    pub peak_kib: u64,
    pub after_kib: u64,
}

/// Reads a process's resident set every [`SAMPLE_EVERY`] until stopped, keeping the highest
/// and the latest reading.
pub struct Sampler {
    readings: Arc<Readings>,
    task: tokio::task::JoinHandle<()>,
}

#[derive(Default)]
struct Readings {
    peak: AtomicU64,
    latest: AtomicU64,
}

impl Sampler {
    /// Starts sampling `pid`, the first reading at once.
    pub fn start(pid: u32) -> Sampler {
        let readings = Arc::new(Readings::default());
        let shared = readings.clone();
        let task = tokio::spawn(async move {
            let mut ticks = tokio::time::interval(SAMPLE_EVERY);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                // A process that is gone has no resident set; the last reading stands.
                if let Ok(kib) = rss_kib(pid) {
                    shared.peak.fetch_max(kib, Ordering::Relaxed);
                    shared.latest.store(kib, Ordering::Relaxed);
                }
            }
        });
        Sampler { readings, task }
    }

    /// The highest reading so far, and resets it (the next stretch's peak starts from the
    /// latest reading).
    pub fn take_peak(&self) -> u64 {
        let latest = self.readings.latest.load(Ordering::Relaxed);
        self.readings.peak.swap(latest, Ordering::Relaxed)
    }

    /// The latest reading.
    pub fn latest(&self) -> u64 {
        self.readings.latest.load(Ordering::Relaxed)
    }

    /// Stops sampling; the highest reading, with one more taken now.
    pub fn stop(self, pid: u32) -> u64 {
        self.task.abort();
        let peak = self.readings.peak.load(Ordering::Relaxed);
        rss_kib(pid).map_or(peak, |now| peak.max(now))
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vm_rss_is_read_in_kib() {
        let status = "Name:\tfieldauth\nVmPeak:\t  912340 kB\nVmHWM:\t   48000 kB\n\
                      VmRSS:\t   46512 kB\nRssAnon:\t   30000 kB\n";
        assert_eq!(parse_vm_rss(status), Some(46512));
        assert_eq!(parse_vm_rss("Name:\tkthreadd\n"), None);
        assert_eq!(mib(46512), 45.421875);
    }

    #[tokio::test]
    async fn this_process_has_a_resident_set_and_the_sampler_sees_it() {
        let pid = std::process::id();
        let now = rss_kib(pid).unwrap();
        assert!(now > 1024, "{now} KiB");
        let sampler = Sampler::start(pid);
        tokio::time::sleep(SAMPLE_EVERY * 2).await;
        assert!(sampler.latest() > 1024);
        assert!(sampler.take_peak() >= sampler.latest());
        assert!(sampler.stop(pid) > 1024);
    }
}
