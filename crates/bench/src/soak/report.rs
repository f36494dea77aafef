//! The soak's report: a row per minute, whether the database size levelled off, and the
//! table.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use super::mix::Kind;
use crate::database_size::Size;
use crate::memory::mib;
use crate::stats::{millis, summarize};

const MIB: f64 = 1024.0 * 1024.0;

/// One completed step: the minute it was due in, its kind and latency.
pub type Record = (u32, Kind, Duration);

/// What was read at a minute's end.
#[derive(Debug, Clone, Copy, Default)]
pub struct MinuteEnd {
    /// The highest resident set sampled in the minute, and the last.
    pub rss_peak_kib: u64,
    pub rss_end_kib: u64,
    pub size: Size,
    /// The server's CPU time in the minute, and the time the host gave this machine's CPUs
    /// to other guests (all CPUs): a slow minute with steal says the host was busy.
    pub server_cpu: Duration,
    pub stolen: Duration,
}

/// The soak's per-minute figures.
#[derive(Debug, Clone, Serialize)]
pub struct SoakMinute {
    /// 1 for the first minute.
    pub minute: u32,
    pub steps: u64,
    /// HTTP requests of those steps (a sign-in is four, an exchange three).
    pub requests: u64,
    pub steps_per_s: f64,
    pub errors: u64,
    /// Of every step due in the minute, timed from when it was due.
    pub p99_ms: f64,
    pub p99_ms_by_kind: BTreeMap<Kind, f64>,
    pub steps_by_kind: BTreeMap<Kind, u64>,
    /// The server's resident set: the highest sample (every 250 ms) and at the minute's end.
    pub rss_peak_kib: u64,
    pub rss_end_kib: u64,
    /// The database's size at the minute's end; on SQLite, its write-ahead log's share.
    pub database_bytes: u64,
    pub wal_bytes: Option<u64>,
    /// The server's CPU-seconds per second of the minute.
    pub server_cores: f64,
    /// Steal, in % of all this machine's CPUs (as the workloads' `steal %`).
    pub steal_percent: f64,
}

/// The whole soak of one backend.
#[derive(Debug, Clone, Serialize)]
pub struct SoakReport {
    pub backend: String,
    pub connections: usize,
    /// Steps per second the closed loop reached, if it ran.
    pub capacity_steps_per_s: Option<f64>,
    pub target_steps_per_s: f64,
    pub minute_seconds: f64,
    pub database_bytes_at_start: u64,
    pub wal_bytes_at_start: Option<u64>,
    pub minutes: Vec<SoakMinute>,
    pub errors: u64,
    pub error_samples: Vec<String>,
    /// `true` when the last third of the minutes grew the database by at most a tenth of
    /// what the first third did; `None` under three minutes.
    pub database_levelled_off: Option<bool>,
    pub verdict: String,
}

/// The 0-based minute an offset from the start falls in.
pub fn minute_of(offset: Duration, minute: Duration) -> u32 {
    (offset.as_secs_f64() / minute.as_secs_f64().max(1e-9)) as u32
}

/// One row per minute; `ends` holds each minute's RSS peak, RSS at its end, database size and
/// CPU times; `cpus` is the machine's CPU count.
pub fn summarize_minutes(
    records: &[Record],
    errors: &[u32],
    ends: &[MinuteEnd],
    minute: Duration,
    total: Duration,
    cpus: usize,
) -> Vec<SoakMinute> {
    ends.iter()
        .enumerate()
        .map(|(index, end)| {
            let index = index as u32;
            let records: Vec<&Record> = records.iter().filter(|r| r.0 == index).collect();
            let length = (total.saturating_sub(minute * index)).min(minute);
            let p99 = |kind: Option<Kind>| {
                let latencies: Vec<Duration> = records
                    .iter()
                    .filter(|r| kind.is_none_or(|k| r.1 == k))
                    .map(|r| r.2)
                    .collect();
                summarize(latencies).map(|s| millis(s.p99))
            };
            let mut p99_ms_by_kind = BTreeMap::new();
            let mut steps_by_kind = BTreeMap::new();
            for kind in Kind::ALL {
                let count = records.iter().filter(|r| r.1 == kind).count() as u64;
                steps_by_kind.insert(kind, count);
                if let Some(p99) = p99(Some(kind)) {
                    p99_ms_by_kind.insert(kind, p99);
                }
            }
            SoakMinute {
                minute: index + 1,
                steps: records.len() as u64,
                requests: records.iter().map(|r| r.1.requests()).sum(),
                steps_per_s: records.len() as f64 / length.as_secs_f64().max(1e-9),
                errors: errors.iter().filter(|m| **m == index).count() as u64,
                p99_ms: p99(None).unwrap_or(0.0),
                p99_ms_by_kind,
                steps_by_kind,
                rss_peak_kib: end.rss_peak_kib,
                rss_end_kib: end.rss_end_kib,
                database_bytes: end.size.bytes,
                wal_bytes: end.size.wal_bytes,
                server_cores: end.server_cpu.as_secs_f64() / length.as_secs_f64().max(1e-9),
                steal_percent: end.stolen.as_secs_f64() * 100.0
                    / (length.as_secs_f64().max(1e-9) * cpus.max(1) as f64),
            }
        })
        .collect()
}

/// Whether the database (with its write-ahead log) levelled off; on SQLite also said of the
/// file alone, as the log's size swings with checkpoints and can hide the file's growth.
pub fn verdict(at_start: Size, minutes: &[SoakMinute]) -> (Option<bool>, String) {
    let (levelled, mut verdict) = levelling(at_start.bytes, minutes, |m| m.database_bytes);
    if let Some(wal) = at_start.wal_bytes {
        let file =
            |m: &SoakMinute| m.database_bytes - m.wal_bytes.unwrap_or(0).min(m.database_bytes);
        let (_, alone) = levelling(at_start.bytes - wal.min(at_start.bytes), minutes, file);
        if levelled.is_some() {
            verdict.push_str(&format!("; without the write-ahead log: {alone}"));
        }
    }
    (levelled, verdict)
}

/// Whether `size` stopped growing: the growth of the last third of the minutes against the
/// first third's.
fn levelling(
    at_start: u64,
    minutes: &[SoakMinute],
    size_of: impl Fn(&SoakMinute) -> u64,
) -> (Option<bool>, String) {
    let n = minutes.len();
    if n < 3 {
        return (
            None,
            format!("{n} minute(s): too short to tell whether the database size levels off"),
        );
    }
    let third = n / 3;
    let size = |i: usize| match i {
        0 => at_start,
        i => size_of(&minutes[i - 1]),
    };
    let first = size(third) as i64 - size(0) as i64;
    let last = size(n) as i64 - size(n - third) as i64;
    let mb = |b: i64| b as f64 / MIB;
    let levelled = last <= 0 || (first > 0 && last * 10 <= first);
    let verdict = format!(
        "database size {}: grew {:.2} MiB over the first {third} minute(s), {:.2} MiB over the last {third}",
        match levelled {
            true => "levelled off",
            false => "still growing",
        },
        mb(first),
        mb(last)
    );
    (Some(levelled), verdict)
}

/// The per-minute table.
pub fn table(report: &SoakReport) -> String {
    let mut out = vec![
        format!(
            "soak on {}: {:.1} steps/s ({}), {} connections",
            report.backend,
            report.target_steps_per_s,
            match report.capacity_steps_per_s {
                Some(capacity) => format!(
                    "{:.0}% of the {capacity:.1} the closed loop reached",
                    report.target_steps_per_s / capacity * 100.0
                ),
                None => "given".to_owned(),
            },
            report.connections
        ),
        String::new(),
    ];
    let mut header = vec!["minute", "steps", "requests", "steps/s", "errors", "p99 ms"];
    header.extend(Kind::ALL.iter().map(|k| k.name()));
    header.extend([
        "rss peak MiB",
        "rss end MiB",
        "db MiB",
        "of it wal MiB",
        "srv cores",
        "steal %",
    ]);
    out.push(format!("| {} |", header.join(" | ")));
    out.push(format!(
        "|{}|",
        header
            .iter()
            .map(|h| format!("{}:", "-".repeat(h.len() + 1)))
            .collect::<Vec<_>>()
            .join("|")
    ));
    for m in &report.minutes {
        let mut cells = vec![
            m.minute.to_string(),
            m.steps.to_string(),
            m.requests.to_string(),
            format!("{:.1}", m.steps_per_s),
            m.errors.to_string(),
            format!("{:.2}", m.p99_ms),
        ];
        cells.extend(Kind::ALL.iter().map(|k| {
            m.p99_ms_by_kind
                .get(k)
                .map_or_else(String::new, |p| format!("{p:.2}"))
        }));
        cells.push(format!("{:.1}", mib(m.rss_peak_kib)));
        cells.push(format!("{:.1}", mib(m.rss_end_kib)));
        cells.push(format!("{:.2}", m.database_bytes as f64 / MIB));
        cells.push(
            m.wal_bytes
                .map_or_else(String::new, |w| format!("{:.2}", w as f64 / MIB)),
        );
        cells.push(format!("{:.2}", m.server_cores));
        cells.push(format!("{:.1}", m.steal_percent));
        out.push(format!("| {} |", cells.join(" | ")));
    }
    out.push(String::new());
    out.push(format!("{}: {}", report.backend, report.verdict));
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn minute(database_bytes: u64) -> SoakMinute {
        SoakMinute {
            minute: 0,
            steps: 0,
            requests: 0,
            steps_per_s: 0.0,
            errors: 0,
            p99_ms: 0.0,
            p99_ms_by_kind: BTreeMap::new(),
            steps_by_kind: BTreeMap::new(),
            rss_peak_kib: 0,
            rss_end_kib: 0,
            database_bytes,
            wal_bytes: None,
            server_cores: 0.0,
            steal_percent: 0.0,
        }
    }

    #[test]
    fn a_size_that_stops_growing_has_levelled_off() {
        let sizes = |mb: &[u64]| -> Vec<SoakMinute> {
            mb.iter().map(|m| minute(m * 1024 * 1024)).collect()
        };
        // 10 MiB at the start; +6 over the first two minutes, +0 over the last two.
        let total = |m: &SoakMinute| m.database_bytes;
        let (levelled, verdict) = levelling(10 << 20, &sizes(&[13, 16, 17, 17, 17, 17]), total);
        assert_eq!(levelled, Some(true), "{verdict}");
        assert!(
            verdict.starts_with("database size levelled off"),
            "{verdict}"
        );
        let (levelled, verdict) = levelling(10 << 20, &sizes(&[13, 16, 19, 22, 25, 28]), total);
        assert_eq!(levelled, Some(false), "{verdict}");
        assert!(
            verdict.contains("grew 6.00 MiB over the first 2 minute(s), 6.00 MiB over the last 2"),
            "{verdict}"
        );
        assert_eq!(levelling(0, &sizes(&[1, 2]), total).0, None);
    }

    #[test]
    fn on_sqlite_the_verdict_also_speaks_of_the_file_without_its_log() {
        let m = |file: u64, wal: u64| SoakMinute {
            database_bytes: (file + wal) << 20,
            wal_bytes: Some(wal << 20),
            ..minute(0)
        };
        // The log jumps to 30 MiB at once; the file grows by 2 MiB, then stops.
        let minutes = [
            m(11, 30),
            m(12, 30),
            m(12, 30),
            m(12, 30),
            m(12, 5),
            m(12, 30),
        ];
        let at_start = Size {
            bytes: 10 << 20,
            wal_bytes: Some(0),
        };
        let (levelled, verdict) = verdict(at_start, &minutes);
        assert_eq!(levelled, Some(true), "{verdict}");
        assert!(
            verdict.ends_with(
                "; without the write-ahead log: database size levelled off: grew 2.00 MiB \
                 over the first 2 minute(s), 0.00 MiB over the last 2"
            ),
            "{verdict}"
        );
        // PostgreSQL has no such log to set apart.
        let postgres = Size {
            bytes: 10 << 20,
            wal_bytes: None,
        };
        assert!(!verdict_of(postgres, &minutes).contains("write-ahead"));
    }

    fn verdict_of(at_start: Size, minutes: &[SoakMinute]) -> String {
        verdict(at_start, minutes).1
    }

    #[test]
    fn the_table_has_a_cell_under_every_header() {
        let report = SoakReport {
            backend: "sqlite".to_owned(),
            connections: 2,
            capacity_steps_per_s: Some(100.0),
            target_steps_per_s: 80.0,
            minute_seconds: 60.0,
            database_bytes_at_start: 1 << 20,
            wal_bytes_at_start: Some(0),
            minutes: vec![SoakMinute {
                minute: 1,
                wal_bytes: Some(3 << 19),
                server_cores: 0.81,
                steal_percent: 12.5,
                ..minute(2 << 20)
            }],
            errors: 0,
            error_samples: Vec::new(),
            database_levelled_off: None,
            verdict: "1 minute(s): too short".to_owned(),
        };
        let table = table(&report);
        let lines: Vec<&str> = table.lines().collect();
        assert!(
            lines[0].starts_with("soak on sqlite: 80.0 steps/s (80% of the 100.0"),
            "{table}"
        );
        let cells = |line: &str| line.matches('|').count();
        assert_eq!(cells(lines[2]), cells(lines[4]), "{table}");
        assert!(
            lines[4].ends_with("| 2.00 | 1.50 | 0.81 | 12.5 |"),
            "{table}"
        );
    }

    #[test]
    fn each_step_counts_in_the_minute_it_was_due() {
        let m = Duration::from_secs(5);
        assert_eq!(minute_of(Duration::from_millis(4_999), m), 0);
        assert_eq!(minute_of(Duration::from_secs(5), m), 1);
        let records = [
            (0, Kind::Refresh, Duration::from_millis(2)),
            (0, Kind::SignIn, Duration::from_millis(90)),
            (1, Kind::Userinfo, Duration::from_millis(1)),
        ];
        let end = |rss_peak_kib, rss_end_kib, bytes| MinuteEnd {
            rss_peak_kib,
            rss_end_kib,
            size: Size {
                bytes,
                wal_bytes: Some(bytes / 2),
            },
            server_cpu: Duration::from_secs(2),
            stolen: Duration::from_millis(500),
        };
        let ends = [end(100, 90, 4096), end(120, 95, 8192)];
        // 7.5 s in all: the second "minute" is half a one.
        let rows = summarize_minutes(&records, &[1], &ends, m, Duration::from_millis(7_500), 2);
        // 2 s of the server's CPU in 5 s, then in 2.5 s; 0.5 s stolen of two CPUs' 10 s, then 5 s.
        assert_eq!((rows[0].server_cores, rows[1].server_cores), (0.4, 0.8));
        assert_eq!((rows[0].steal_percent, rows[1].steal_percent), (5.0, 10.0));
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].steps, rows[0].requests, rows[0].errors), (2, 5, 0));
        assert_eq!(rows[0].p99_ms, 90.0);
        assert_eq!(rows[0].p99_ms_by_kind[&Kind::Refresh], 2.0);
        assert_eq!(rows[0].steps_per_s, 0.4);
        assert_eq!((rows[1].steps, rows[1].errors), (1, 1));
        assert_eq!(rows[1].steps_per_s, 0.4);
        assert_eq!((rows[1].rss_peak_kib, rows[1].database_bytes), (120, 8192));
        assert_eq!(rows[1].wal_bytes, Some(4096));
    }
}
