//! The results: one row per workload and backend, printed as a table and written as JSON
//! with the settings and the machine.

use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::ceiling::{percent_of_ceiling, Ceiling};
use crate::memory::mib;
use crate::pacing::Mode;
use crate::soak::SoakReport;
use crate::stats::{millis, summarize};
use crate::tenants::Provisioned;
use crate::workloads::{Measured, Workload};

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub workload: Workload,
    pub backend: String,
    /// `max` for the closed loop, `paced 80%` for a paced run at 80% of it.
    pub mode: String,
    /// A paced run's fraction of the closed loop's requests per second, and the rate it
    /// aimed at over all connections.
    pub paced_fraction: Option<f64>,
    pub target_requests_per_s: Option<f64>,
    pub connections: usize,
    pub duration_s: f64,
    pub requests: usize,
    pub requests_per_s: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub errors: u64,
    pub error_samples: Vec<String>,
    /// Server CPU time (user + system) in the window divided by the requests completed.
    pub server_cpu_ms_per_request: f64,
    /// Server CPU time over wall time: how many cores the server kept busy.
    pub server_cores_busy: f64,
    /// The same for the generator, to tell whether it, not the server, was the limit.
    pub generator_cores_busy: f64,
    /// CPU time the host gave to other guests, as a percentage of all this machine's CPUs
    /// over the window: above a few percent the row measured a contended host.
    pub steal_percent: f64,
    /// The RSA-2048 ceiling measured before the workload: signatures per CPU-second of one
    /// core, and per wall second.
    pub ceiling_signs_per_cpu_s: Option<f64>,
    pub ceiling_signs_per_wall_s: Option<f64>,
    /// Requests per server core-second as a percentage of the ceiling's token responses per
    /// core-second (two signatures each); only for `refresh` and `exchange`, whose responses
    /// are two signatures and little else (null for the others).
    pub ceiling_percent: Option<f64>,
    /// The server's signing threads' share of its CPU in the window, as a percentage; only
    /// for `refresh` and `exchange` on fieldauth. What `ceiling_percent` estimates with a
    /// ceiling measured before the workload, measured in the window itself: a host whose
    /// core changes speed between the two moves the one and not the other.
    pub signing_percent: Option<f64>,
    /// The server's resident set (KiB) just before the workload's connections opened, the
    /// highest of the samples taken every 250 ms until the window closed, and 1 s after the
    /// connections closed.
    pub rss_before_kib: u64,
    pub rss_peak_kib: u64,
    pub rss_after_kib: u64,
    /// Under `--callgrind`: the instructions the server executed in the window per request
    /// kept, those beside its signatures, and the window's dump.
    pub instructions_per_request: Option<f64>,
    pub instructions_beside_signing_per_request: Option<f64>,
    pub callgrind_dump: Option<std::path::PathBuf>,
}

impl Row {
    pub fn new(
        workload: Workload,
        backend: &str,
        mode: Mode,
        connections: usize,
        measured: Measured,
        ceiling: Option<&Ceiling>,
    ) -> Row {
        let window = measured.elapsed.as_secs_f64();
        let summary = summarize(measured.requests.iter().map(|r| r.latency).collect());
        let requests = summary.map_or(0, |s| s.count);
        let ms = |pick: fn(&crate::stats::Summary) -> std::time::Duration| {
            summary.as_ref().map_or(0.0, |s| millis(pick(s)))
        };
        let per_second = |value: f64| if window > 0.0 { value / window } else { 0.0 };
        let server_cpu_ms_per_request = match requests {
            0 => 0.0,
            n => millis(measured.server_cpu) / n as f64,
        };
        let signs_per_cpu_s = ceiling.map(Ceiling::per_cpu_second);
        let per_request = |count: u64| count as f64 / requests as f64;
        let counted = measured.instructions.filter(|_| requests > 0);
        let instructions_per_request = counted.as_ref().map(|c| per_request(c.total));
        let instructions_beside_signing_per_request = counted.as_ref().and_then(|c| {
            c.signing
                .map(|signing| per_request(c.total.saturating_sub(signing)))
        });
        let callgrind_dump = counted.map(|c| c.dump);
        let (paced_fraction, target_requests_per_s) = match mode {
            Mode::Max => (None, None),
            Mode::Paced { fraction, rate, .. } => (Some(fraction), Some(rate)),
        };
        Row {
            workload,
            backend: backend.to_owned(),
            mode: mode.label(),
            paced_fraction,
            target_requests_per_s,
            connections,
            duration_s: window,
            requests,
            requests_per_s: per_second(requests as f64),
            p50_ms: ms(|s| s.p50),
            p95_ms: ms(|s| s.p95),
            p99_ms: ms(|s| s.p99),
            max_ms: ms(|s| s.max),
            errors: measured.errors,
            error_samples: measured.error_samples,
            server_cpu_ms_per_request,
            server_cores_busy: per_second(measured.server_cpu.as_secs_f64()),
            generator_cores_busy: per_second(measured.generator_cpu.as_secs_f64()),
            steal_percent: per_second(measured.stolen.as_secs_f64()) * 100.0
                / machine().nproc.max(1) as f64,
            ceiling_signs_per_cpu_s: signs_per_cpu_s,
            ceiling_signs_per_wall_s: ceiling.map(Ceiling::per_wall_second),
            ceiling_percent: signs_per_cpu_s
                .filter(|_| workload.is_token_response())
                .and_then(|signs| percent_of_ceiling(server_cpu_ms_per_request, signs)),
            signing_percent: measured
                .signing_cpu
                .filter(|_| workload.is_token_response() && !measured.server_cpu.is_zero())
                .map(|signing| 100.0 * signing.as_secs_f64() / measured.server_cpu.as_secs_f64()),
            rss_before_kib: measured.rss.before_kib,
            rss_peak_kib: measured.rss.peak_kib,
            rss_after_kib: measured.rss.after_kib,
            instructions_per_request,
            instructions_beside_signing_per_request,
            callgrind_dump,
        }
    }
}

/// Under `--callgrind`, a line per row: the instructions per request and the dump that
/// `callgrind_annotate` reads for where they went.
pub fn instruction_counts(rows: &[Row]) -> Option<String> {
    let lines: Vec<String> = rows
        .iter()
        .filter_map(|r| {
            let per_request = r.instructions_per_request?;
            let dump = r.callgrind_dump.as_ref()?;
            let beside = r
                .instructions_beside_signing_per_request
                .map(|beside| format!(", {beside:.0} beside the signatures"))
                .unwrap_or_default();
            Some(format!(
                "callgrind: {} on {}, {} requests: {per_request:.0} instructions per request{beside} ({})",
                r.workload.name(),
                r.backend,
                r.requests,
                dump.display()
            ))
        })
        .collect();
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// The rows as an aligned text table.
pub fn table(rows: &[Row]) -> String {
    let header = [
        "workload",
        "backend",
        "mode",
        "conns",
        "secs",
        "requests",
        "req/s",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "max ms",
        "errors",
        "srv cpu ms/req",
        "srv cores",
        "gen cores",
        "steal %",
        "ceiling signs/s",
        "ceiling %",
        "signing %",
        "rss before MiB",
        "rss peak MiB",
        "rss after MiB",
    ];
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.workload.name().to_owned(),
                r.backend.clone(),
                r.mode.clone(),
                r.connections.to_string(),
                format!("{:.1}", r.duration_s),
                r.requests.to_string(),
                format!("{:.1}", r.requests_per_s),
                format!("{:.2}", r.p50_ms),
                format!("{:.2}", r.p95_ms),
                format!("{:.2}", r.p99_ms),
                format!("{:.2}", r.max_ms),
                r.errors.to_string(),
                format!("{:.3}", r.server_cpu_ms_per_request),
                format!("{:.2}", r.server_cores_busy),
                format!("{:.2}", r.generator_cores_busy),
                format!("{:.1}", r.steal_percent),
                optional(r.ceiling_signs_per_cpu_s, 0),
                optional(r.ceiling_percent, 1),
                optional(r.signing_percent, 1),
                format!("{:.1}", mib(r.rss_before_kib)),
                format!("{:.1}", mib(r.rss_peak_kib)),
                format!("{:.1}", mib(r.rss_after_kib)),
            ]
        })
        .collect();
    let widths: Vec<usize> = header
        .iter()
        .enumerate()
        .map(|(i, h)| cells.iter().map(|c| c[i].len()).fold(h.len(), usize::max))
        .collect();
    let line = |values: Vec<String>| {
        let padded: Vec<String> = values
            .iter()
            .zip(&widths)
            .enumerate()
            // Names left-aligned, figures right-aligned.
            .map(|(i, (v, w))| match i {
                0..=2 => format!("{v:<w$}"),
                _ => format!("{v:>w$}"),
            })
            .collect();
        format!("| {} |", padded.join(" | "))
    };
    let mut out = vec![line(header.iter().map(|h| h.to_string()).collect())];
    let rule: Vec<String> = widths
        .iter()
        .enumerate()
        .map(|(i, w)| match i {
            0..=2 => "-".repeat(w + 2),
            _ => format!("{}:", "-".repeat(w + 1)),
        })
        .collect();
    out.push(format!("|{}|", rule.join("|")));
    out.extend(cells.into_iter().map(line));
    out.join("\n")
}

/// How far the RSA ceiling may move between the rows of one run before the `ceiling %`
/// column stops meaning anything: a tenth, about what one host's runs differ by.
const STEADY_CEILING: f64 = 0.10;

/// A warning for under the table when the ceilings measured before the rows differ by more
/// than [`STEADY_CEILING`]: the host's CPU was not steady (a throttled or shared core), so
/// no row can be judged against the target with a ceiling measured seconds apart.
pub fn unsteady_ceiling(rows: &[Row]) -> Option<String> {
    let ceilings = rows.iter().filter_map(|r| r.ceiling_signs_per_cpu_s);
    let (low, high) = ceilings.fold((f64::INFINITY, 0.0_f64), |(low, high), c| {
        (low.min(c), high.max(c))
    });
    if low <= 0.0 || !low.is_finite() || high / low - 1.0 <= STEADY_CEILING {
        return None;
    }
    Some(format!(
        "warning: the RSA-2048 ceiling moved from {low:.0} to {high:.0} signatures per \
         CPU-second ({:.0}% apart) between the rows: this host's CPU was not steady, so the \
         ceiling % column cannot judge a row; measure on a quieter host",
        (high / low - 1.0) * 100.0
    ))
}

/// A figure, or an empty cell where it means nothing.
fn optional(value: Option<f64>, decimals: usize) -> String {
    value.map_or_else(String::new, |v| format!("{v:.decimals$}"))
}

/// One server's run beside its rows: its resident set once ready, and the other tenants
/// written before it started.
#[derive(Debug, Clone, Serialize)]
pub struct ServerRun {
    pub backend: String,
    /// Resident set (KiB) 1 s after the server was ready, its database provisioned.
    pub idle_rss_kib: u64,
    pub tenants: Option<Provisioned>,
}

impl ServerRun {
    /// One line for under the table.
    pub fn summary(&self) -> String {
        let mut line = format!(
            "{}: idle RSS {:.1} MiB after start-up",
            self.backend,
            mib(self.idle_rss_kib)
        );
        if let Some(tenants) = &self.tenants {
            line.push_str(&format!(
                "; {} other tenants ({} rows) written in {:.1} s before it started",
                tenants.shape.tenants, tenants.rows, tenants.seconds
            ));
        }
        line
    }
}

/// The machine the figures come from.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    /// CPUs online.
    pub nproc: usize,
    /// CPUs the generator may run on (after `taskset`).
    pub generator_cpus: usize,
    pub cpu_model: String,
}

pub fn machine() -> Machine {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let nproc = cpuinfo
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count();
    let cpu_model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map_or_else(|| "unknown".to_owned(), |(_, m)| m.trim().to_owned());
    let generator_cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    Machine {
        nproc,
        generator_cpus,
        cpu_model,
    }
}

/// Writes `{"settings": …, "machine": …, "servers": [servers], "results": [rows],
/// "soak": [per backend]}`.
pub fn write_json(
    path: &Path,
    settings: &impl Serialize,
    machine: &Machine,
    servers: &[ServerRun],
    rows: &[Row],
    soaks: &[SoakReport],
) -> Result<()> {
    let document = serde_json::json!({
        "settings": settings,
        "machine": machine,
        "servers": servers,
        "results": rows,
        "soak": soaks,
    });
    let text = serde_json::to_string_pretty(&document)?;
    std::fs::write(path, text + "\n").with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::latency_log::Timed;
    use crate::memory::RssAround;

    /// `count` requests of `millis` ms each.
    fn answered(count: usize, millis: u64) -> Vec<Timed> {
        let request = Timed {
            at: std::time::UNIX_EPOCH,
            latency: Duration::from_millis(millis),
        };
        vec![request; count]
    }

    fn ceiling() -> Ceiling {
        Ceiling {
            signatures: 1000,
            cpu: Duration::from_millis(500),
            wall: Duration::from_secs(1),
            pinned_cpu: Some(0),
        }
    }

    #[test]
    fn a_ceiling_that_moved_more_than_a_tenth_between_rows_is_called_unsteady() {
        let with_ceiling = |signs: Option<f64>| {
            let mut row = Row::new(
                Workload::Refresh,
                "sqlite",
                Mode::Max,
                4,
                Measured {
                    requests: answered(10, 2),
                    errors: 0,
                    error_samples: Vec::new(),
                    elapsed: Duration::from_secs(1),
                    server_cpu: Duration::from_millis(10),
                    signing_cpu: None,
                    generator_cpu: Duration::ZERO,
                    stolen: Duration::ZERO,
                    rss: RssAround::default(),
                    instructions: None,
                },
                Some(&ceiling()),
            );
            row.ceiling_signs_per_cpu_s = signs;
            row
        };
        let steady = [with_ceiling(Some(2000.0)), with_ceiling(Some(2190.0))];
        assert_eq!(unsteady_ceiling(&steady), None);
        let moved = [
            with_ceiling(Some(1477.0)),
            with_ceiling(None),
            with_ceiling(Some(2646.0)),
        ];
        let warning = unsteady_ceiling(&moved).expect("a warning");
        assert!(
            warning.contains("from 1477 to 2646") && warning.contains("(79% apart)"),
            "{warning}"
        );
        assert_eq!(unsteady_ceiling(&[with_ceiling(None)]), None);
        assert_eq!(unsteady_ceiling(&[]), None);
    }

    #[test]
    fn a_row_divides_the_cpu_time_by_the_requests_of_the_window() {
        let measured = Measured {
            requests: answered(400, 2),
            errors: 0,
            error_samples: Vec::new(),
            elapsed: Duration::from_secs(2),
            server_cpu: Duration::from_millis(1000),
            signing_cpu: Some(Duration::from_millis(850)),
            generator_cpu: Duration::from_millis(500),
            stolen: Duration::from_millis(100),
            rss: RssAround {
                before_kib: 20 * 1024,
                peak_kib: 30 * 1024 + 512,
                after_kib: 21 * 1024,
            },
            instructions: Some(crate::callgrind::Counted {
                dump: "/tmp/cg/callgrind.out.7.1".into(),
                total: 4_000_000_000,
                signing: Some(3_800_000_000),
            }),
        };
        let row = Row::new(
            Workload::Refresh,
            "sqlite",
            Mode::Max,
            4,
            measured,
            Some(&ceiling()),
        );
        assert_eq!(row.requests, 400);
        assert_eq!(row.requests_per_s, 200.0);
        assert_eq!(row.server_cpu_ms_per_request, 2.5);
        assert_eq!(row.server_cores_busy, 0.5);
        assert_eq!(row.generator_cores_busy, 0.25);
        // 0.1 s of 2 s on each of the machine's CPUs.
        let steal_of_one_cpu = row.steal_percent * machine().nproc as f64;
        assert!(
            (steal_of_one_cpu - 5.0).abs() < 1e-9,
            "{}",
            row.steal_percent
        );
        assert_eq!(row.p99_ms, 2.0);
        assert_eq!(row.ceiling_signs_per_cpu_s, Some(2000.0));
        assert_eq!(row.ceiling_signs_per_wall_s, Some(1000.0));
        // 2.5 ms per request is 400 per core-second; the ceiling is 1000 responses.
        assert_eq!(row.ceiling_percent, Some(40.0));
        // 0.85 s of the server's 1 s were its signing threads'.
        assert_eq!(row.signing_percent, Some(85.0));
        assert_eq!(
            (row.rss_before_kib, row.rss_peak_kib, row.rss_after_kib),
            (20480, 31232, 21504)
        );
        let table = table(std::slice::from_ref(&row));
        assert!(table.contains("| refresh  | sqlite  | max  |"), "{table}");
        assert!(
            table.ends_with(
                "|            2000 |      40.0 |      85.0 |           20.0 |         30.5 |          21.0 |"
            ),
            "{table}"
        );
        assert_eq!(table.lines().count(), 3, "{table}");
        assert_eq!(row.instructions_per_request, Some(10_000_000.0));
        assert_eq!(row.instructions_beside_signing_per_request, Some(500_000.0));
        assert_eq!(
            instruction_counts(std::slice::from_ref(&row)).as_deref(),
            Some(
                "callgrind: refresh on sqlite, 400 requests: 10000000 instructions per request, \
                 500000 beside the signatures (/tmp/cg/callgrind.out.7.1)"
            )
        );
    }

    #[test]
    fn only_token_workloads_are_compared_with_the_signing_ceiling() {
        let measured = || Measured {
            requests: answered(400, 2),
            elapsed: Duration::from_secs(2),
            server_cpu: Duration::from_millis(1000),
            signing_cpu: Some(Duration::from_millis(900)),
            ..Measured::default()
        };
        for workload in Workload::ALL {
            let row = Row::new(
                workload,
                "sqlite",
                Mode::Max,
                4,
                measured(),
                Some(&ceiling()),
            );
            // The ceiling itself is still reported.
            assert_eq!(row.ceiling_signs_per_cpu_s, Some(2000.0), "{workload:?}");
            let expected = match workload {
                Workload::Refresh | Workload::Exchange => Some(40.0),
                _ => None,
            };
            assert_eq!(row.ceiling_percent, expected, "{workload:?}");
            let signing = expected.map(|_| 90.0);
            assert_eq!(row.signing_percent, signing, "{workload:?}");
            let json = serde_json::to_value(&row).unwrap();
            assert_eq!(json["ceiling_percent"].is_null(), expected.is_none());
            assert_eq!(json["signing_percent"].is_null(), expected.is_none());
            // Empty cells, not dashes or zeros.
            let table = table(&[row]);
            let cells: Vec<&str> = table.lines().nth(2).unwrap().split('|').collect();
            for cell in &cells[cells.len() - 6..cells.len() - 4] {
                assert_eq!(cell.trim().is_empty(), expected.is_none(), "{table}");
            }
        }
        // A server without signing threads of its own (node-oidc-provider) has no share.
        let other_server = Measured {
            signing_cpu: None,
            ..measured()
        };
        let row = Row::new(
            Workload::Refresh,
            "node",
            Mode::Max,
            4,
            other_server,
            Some(&ceiling()),
        );
        assert_eq!(row.signing_percent, None);
    }

    #[test]
    fn a_paced_row_says_so_and_keeps_its_target() {
        let measured = || Measured {
            requests: answered(100, 3),
            elapsed: Duration::from_secs(1),
            server_cpu: Duration::from_millis(300),
            ..Measured::default()
        };
        let max = Row::new(Workload::Refresh, "sqlite", Mode::Max, 2, measured(), None);
        let paced = Mode::Paced {
            fraction: 0.8,
            rate: 80.0,
            fixed: false,
        };
        let paced = Row::new(Workload::Refresh, "sqlite", paced, 2, measured(), None);
        assert_eq!(
            (max.paced_fraction, max.target_requests_per_s),
            (None, None)
        );
        assert_eq!(paced.mode, "paced 80%");
        assert_eq!(paced.paced_fraction, Some(0.8));
        assert_eq!(paced.target_requests_per_s, Some(80.0));
        let table = table(&[max, paced]);
        let lines: Vec<&str> = table.lines().collect();
        assert!(
            lines[0].starts_with("| workload | backend | mode      | conns |"),
            "{table}"
        );
        assert!(
            lines[2].starts_with("| refresh  | sqlite  | max       |"),
            "{table}"
        );
        assert!(
            lines[3].starts_with("| refresh  | sqlite  | paced 80% |"),
            "{table}"
        );
        // Without a ceiling its columns are empty.
        assert!(
            lines[3].contains("|                 |           |"),
            "{table}"
        );
    }
}
