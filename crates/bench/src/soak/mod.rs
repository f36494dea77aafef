//! `--soak MINUTES`: the workloads mixed on every connection (sign-ins, code exchanges,
//! refreshes, userinfo, API queries and API writes) at 80% of the mix's capacity for a long
//! run, reported minute by minute: latency, steps, errors, the server's resident set and the
//! database's size, and whether that size levelled off.

mod mix;
mod report;
pub mod statistics;

use std::time::Duration;

use anyhow::{bail, Context, Result};
use tokio::time::Instant;

use crate::database_size::DatabaseSize;
use crate::memory::{mib, Sampler};
use crate::pacing::Schedule;
use crate::server::{stolen_time, Server};
pub use mix::Mix;
use mix::MixedConnection;
use report::{minute_of, summarize_minutes, verdict, MinuteEnd, Record};
pub use report::{table, SoakReport};

const MIB: f64 = 1024.0 * 1024.0;

/// What the soak does and for how long.
#[derive(Debug, Clone, Copy)]
pub struct SoakSettings {
    pub minutes: f64,
    /// A "minute" of the report: 60 s, shorter only in the bench's own tests.
    pub minute: Duration,
    /// The open loop's rate in steps per second; `None`: `fraction` of the capacity.
    pub rate: Option<f64>,
    pub fraction: f64,
    /// How long the closed loop that measures the capacity runs.
    pub capacity_run: Duration,
    pub connections: usize,
}

#[derive(Default)]
struct Log {
    records: Vec<Record>,
    /// The minute of each failure.
    errors: Vec<u32>,
    samples: Vec<String>,
}

const ERROR_SAMPLES: usize = 5;

impl Log {
    async fn failed(
        &mut self,
        minute: u32,
        error: anyhow::Error,
        connection: &mut MixedConnection,
    ) -> bool {
        self.errors.push(minute);
        if self.samples.len() < ERROR_SAMPLES {
            self.samples.push(format!("{error:#}"));
        }
        match connection.recover().await {
            Ok(()) => true,
            Err(error) => {
                self.errors.push(minute);
                self.samples.push(format!("cannot recover: {error:#}"));
                false
            }
        }
    }
}

/// Closed loop for `length`: steps per second over all connections.
async fn capacity(mix: &Mix, connections: usize, length: Duration) -> Result<(f64, Log)> {
    let mut opened = Vec::with_capacity(connections);
    for index in 0..connections {
        opened.push(MixedConnection::open(mix, index).await?);
    }
    let start = Instant::now();
    let end = start + length;
    let tasks: Vec<_> = opened
        .into_iter()
        .map(|mut connection| {
            tokio::spawn(async move {
                let mut log = Log::default();
                while Instant::now() < end {
                    let kind = connection.next_kind();
                    let started = Instant::now();
                    match connection.run(kind).await {
                        Ok(()) => log.records.push((0, kind, started.elapsed())),
                        Err(error) => {
                            if !log.failed(0, error, &mut connection).await {
                                break;
                            }
                        }
                    }
                }
                log
            })
        })
        .collect();
    let mut log = Log::default();
    for task in tasks {
        merge(&mut log, task.await.context("a soak connection failed")?);
    }
    let elapsed = start.elapsed().as_secs_f64();
    Ok((log.records.len() as f64 / elapsed.max(1e-9), log))
}

fn merge(into: &mut Log, log: Log) {
    into.records.extend(log.records);
    into.errors.extend(log.errors);
    let room = ERROR_SAMPLES.saturating_sub(into.samples.len());
    into.samples.extend(log.samples.into_iter().take(room));
}

/// Measures the capacity (unless a rate is given), then runs the mix open-loop, one report
/// row per minute.
pub async fn run(
    settings: &SoakSettings,
    mix: &Mix,
    server: &Server,
    size: &mut DatabaseSize,
    label: &str,
) -> Result<SoakReport> {
    let (capacity_rate, target) = match settings.rate {
        Some(rate) => (None, rate),
        None => {
            eprintln!(
                "{label}: soak: the mix's capacity, closed loop for {:.0} s",
                settings.capacity_run.as_secs_f64()
            );
            let (rate, log) = capacity(mix, settings.connections, settings.capacity_run).await?;
            if !log.errors.is_empty() {
                bail!(
                    "soak: {} failed steps while measuring the capacity, e.g. {}",
                    log.errors.len(),
                    log.samples.join("; ")
                );
            }
            (Some(rate), rate * settings.fraction)
        }
    };
    let total = settings.minute.mul_f64(settings.minutes);
    let rows = (settings.minutes.ceil() as u32).max(1);
    eprintln!(
        "{label}: soak: {target:.1} steps/s for {:.0} s on {} connections",
        total.as_secs_f64(),
        settings.connections
    );
    let mut opened = Vec::with_capacity(settings.connections);
    for index in 0..settings.connections {
        opened.push(MixedConnection::open(mix, index).await?);
    }
    let at_start = size.measure().await?;
    let sampler = Sampler::start(server.pid());
    let mut cpu_before = (server.cpu_time()?, stolen_time()?);
    let start = Instant::now();
    let end = start + total;
    let minute = settings.minute;
    let mut tasks = Vec::new();
    for (index, connection) in opened.into_iter().enumerate() {
        let schedule = Schedule::for_connection(index, settings.connections, target)?;
        tasks.push(tokio::spawn(drive(
            connection, schedule, start, end, minute,
        )));
    }
    let mut ends = Vec::new();
    for row in 1..=rows {
        let at = (start + minute * row).min(end);
        tokio::time::sleep_until(at).await;
        let peak = sampler.take_peak();
        let cpu = (server.cpu_time()?, stolen_time()?);
        let measured = size.measure().await?;
        // A long soak says where it is; the figures of the minute come at the end.
        eprintln!(
            "{label}: soak minute {row} of {rows}: RSS {:.1} MiB (peak {:.1}), database {:.2} MiB",
            mib(sampler.latest()),
            mib(peak),
            measured.bytes as f64 / MIB
        );
        ends.push(MinuteEnd {
            rss_peak_kib: peak,
            rss_end_kib: sampler.latest(),
            size: measured,
            server_cpu: cpu.0.saturating_sub(cpu_before.0),
            stolen: cpu.1.saturating_sub(cpu_before.1),
        });
        cpu_before = cpu;
    }
    let mut log = Log::default();
    for task in tasks {
        merge(&mut log, task.await.context("a soak connection failed")?);
    }
    let cpus = crate::report::machine().nproc;
    let minutes = summarize_minutes(&log.records, &log.errors, &ends, minute, total, cpus);
    let (levelled, verdict) = verdict(at_start, &minutes);
    Ok(SoakReport {
        backend: label.to_owned(),
        connections: settings.connections,
        capacity_steps_per_s: capacity_rate,
        target_steps_per_s: target,
        minute_seconds: minute.as_secs_f64(),
        database_bytes_at_start: at_start.bytes,
        wal_bytes_at_start: at_start.wal_bytes,
        errors: log.errors.len() as u64,
        error_samples: log.samples,
        minutes,
        database_levelled_off: levelled,
        verdict,
    })
}

/// The connection's steps on its schedule until `end`, each timed from when it was due.
async fn drive(
    mut connection: MixedConnection,
    mut schedule: Schedule,
    start: Instant,
    end: Instant,
    minute: Duration,
) -> Log {
    let mut log = Log::default();
    loop {
        let slot = schedule.next(Instant::now().saturating_duration_since(start));
        let (due, send_at) = (start + slot.due, start + slot.send_at);
        if send_at >= end {
            break;
        }
        tokio::time::sleep_until(send_at).await;
        let index = minute_of(slot.due, minute);
        let kind = connection.next_kind();
        match connection.run(kind).await {
            Ok(()) => {
                log.records
                    .push((index, kind, Instant::now().saturating_duration_since(due)))
            }
            Err(error) => {
                if !log.failed(index, error, &mut connection).await {
                    break;
                }
            }
        }
    }
    log
}
