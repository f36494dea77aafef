//! The workloads, each on its own: connections that repeat one request (or one whole flow)
//! through a warm-up and a measured window, closed-loop or paced, and what the window saw.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use tokio::time::Instant;

use crate::codes;
use crate::connection::Connection;
use crate::flows::Target;
use crate::latency_log::{Clock, Timed};
use crate::memory::{self, RssAround, Sampler};
use crate::node_oidc::Seeder;
use crate::pacing::{Mode, Schedule};
use crate::server::{own_cpu_time, stolen_time, Server};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Workload {
    /// The whole browser-less flow: authorize, sign in, consent, code exchange.
    Login,
    /// Refresh-token grants, each connection following its own rotation chain.
    Refresh,
    /// Code exchanges alone, with codes minted before the warm-up by a signed-in browser.
    Exchange,
    /// `GET /oauth/userinfo` with one shared access token.
    Userinfo,
    /// A GraphQL page of 20 jobs with their work orders and assignees, the same query each
    /// time: after the first, the API's response cache answers it.
    Api,
    /// The same page, made a new query each time (a unique alias of `__typename`), so the
    /// response cache never has it: what running the query costs.
    #[serde(rename = "api-uncached")]
    ApiUncached,
}

impl Workload {
    pub const ALL: [Workload; 6] = [
        Workload::Login,
        Workload::Refresh,
        Workload::Exchange,
        Workload::Userinfo,
        Workload::Api,
        Workload::ApiUncached,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Workload::Login => "login",
            Workload::Refresh => "refresh",
            Workload::Exchange => "exchange",
            Workload::Userinfo => "userinfo",
            Workload::Api => "api",
            Workload::ApiUncached => "api-uncached",
        }
    }

    /// Whether each request is a token response and little else: two RSA signatures (an
    /// access token and an ID token), so the signing ceiling bounds it. A login pays for
    /// Argon2id and three pages besides; the others sign nothing.
    pub fn is_token_response(self) -> bool {
        matches!(self, Workload::Refresh | Workload::Exchange)
    }

    /// Whether it runs the jobs query, which needs the records seeded.
    pub fn queries_jobs(self) -> bool {
        matches!(self, Workload::Api | Workload::ApiUncached)
    }
}

/// Scopes of the login and refresh flows: what a single-page app signing a user in asks for.
pub const LOGIN_SCOPE: &str = "openid profile email offline_access";

/// What the connections share, made once before any workload runs.
pub struct Shared {
    pub target: Arc<Target>,
    /// The shared-token workloads' tokens; `None` for a server compared only on its token
    /// endpoint.
    pub userinfo_token: Option<Arc<str>>,
    pub api_token: Option<Arc<str>>,
    /// PostgreSQL's URL, to refresh the planner's statistics before each measured window.
    pub statistics: Option<String>,
    /// The seeding endpoint of a server whose refresh tokens and codes do not come from
    /// signing in through its pages (node-oidc-provider).
    pub seeder: Option<Seeder>,
}

/// How long to run.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub connections: usize,
    pub warmup: Duration,
    pub duration: Duration,
}

impl Timing {
    /// The warm-up and the measured window.
    pub fn run_length(&self) -> Duration {
        self.warmup + self.duration
    }
}

/// What one workload's measured window saw.
#[derive(Debug, Default)]
pub struct Measured {
    /// The requests (or flows) that completed inside the window: when each was due (or
    /// sent) and its latency.
    pub requests: Vec<Timed>,
    /// Failed requests over the whole run, warm-up included.
    pub errors: u64,
    /// The first few failures, to say why.
    pub error_samples: Vec<String>,
    /// The window actually observed between the two CPU readings.
    pub elapsed: Duration,
    pub server_cpu: Duration,
    /// The part of `server_cpu` its signing threads spent, for a server that has them.
    pub signing_cpu: Option<Duration>,
    pub generator_cpu: Duration,
    /// CPU time of this machine taken by other guests of the host ([`stolen_time`]).
    pub stolen: Duration,
    /// The server's resident set before, during and after the run.
    pub rss: RssAround,
    /// Under `--callgrind`: what the window's dump counted.
    pub instructions: Option<crate::callgrind::Counted>,
}

/// How long after the connections closed the resident set is read again.
const RSS_SETTLE: Duration = Duration::from_secs(1);

const ERROR_SAMPLES: usize = 5;

/// Runs `workload` with `timing.connections` connections, closed-loop or paced; the CPU
/// times are read at the window's two edges. An exchange connection first mints
/// `codes_per_connection` codes.
pub async fn run(
    workload: Workload,
    shared: &Shared,
    server: &Server,
    timing: Timing,
    mode: Mode,
    codes_per_connection: usize,
) -> Result<Measured> {
    let schedules = match mode {
        Mode::Max => None,
        Mode::Paced { rate, .. } => Some(
            (0..timing.connections)
                .map(|index| Schedule::for_connection(index, timing.connections, rate))
                .collect::<Result<Vec<_>>>()?,
        ),
    };
    let rss_before = memory::rss_kib(server.pid())?;
    let sampler = Sampler::start(server.pid());
    let mut connections = Vec::with_capacity(timing.connections);
    for index in 0..timing.connections {
        connections.push(Connection::open(workload, shared, index).await?);
    }
    let mut timing = timing;
    if workload == Workload::Exchange {
        let coverage;
        (connections, coverage) =
            codes::mint(connections, codes_per_connection, timing.run_length()).await?;
        match codes::covered_window(coverage, timing.warmup, timing.duration) {
            Some(window) if window < timing.duration => {
                eprintln!(
                    "exchange: the server minted {:.0}% of the pool within the codes' lifetime: \
                     measuring {:.1} s instead of {:.1} s",
                    coverage * 100.0,
                    window.as_secs_f64(),
                    timing.duration.as_secs_f64()
                );
                timing.duration = window;
            }
            Some(_) => {}
            None => bail!(
                "exchange: the server minted only {:.0}% of the codes a {} s run needs within \
                 their lifetime, too few for a 1 s window; use a shorter --duration or fewer \
                 --connections",
                coverage * 100.0,
                timing.run_length().as_secs()
            ),
        }
    }
    if let Some(url) = &shared.statistics {
        analyze(url).await?;
    }
    if let Some(counter) = server.counter() {
        counter.instrument().await?;
    }
    let clock = Clock::now();
    let start = Instant::now();
    let from = start + timing.warmup;
    let to = from + timing.duration;
    // Under callgrind the window opens and closes with no request in flight, so that its
    // count is of exactly the requests it keeps.
    let gates = server
        .counter()
        .map(|_| Arc::new(Gates::new(connections.len())));
    let tasks: Vec<_> = match schedules {
        None => connections
            .into_iter()
            .map(|connection| match &gates {
                Some(gates) => tokio::spawn(drive_gated(connection, Arc::clone(gates), from, to)),
                None => tokio::spawn(drive(connection, from, to)),
            })
            .collect(),
        Some(schedules) => connections
            .into_iter()
            .zip(schedules)
            .map(|(connection, schedule)| {
                tokio::spawn(drive_paced(connection, schedule, start, from, to))
            })
            .collect(),
    };

    tokio::time::sleep_until(from).await;
    if let (Some(counter), Some(gates)) = (server.counter(), &gates) {
        gates.idle.wait().await;
        counter.zero().await?;
        gates.open.wait().await;
    }
    let (server_from, signing_from, own_from, stolen_from, at_from) = (
        server.cpu_time()?,
        server.signing_cpu_time()?,
        own_cpu_time()?,
        stolen_time()?,
        Instant::now(),
    );
    tokio::time::sleep_until(to).await;
    if let Some(gates) = &gates {
        gates.idle.wait().await;
    }
    let (server_to, signing_to, own_to, stolen_to, at_to) = (
        server.cpu_time()?,
        server.signing_cpu_time()?,
        own_cpu_time()?,
        stolen_time()?,
        Instant::now(),
    );

    let instructions = match server.counter() {
        Some(counter) => Some(counter.dump(workload.name()).await?),
        None => None,
    };
    let rss_peak = sampler.stop(server.pid());
    let mut measured = Measured {
        elapsed: at_to - at_from,
        server_cpu: server_to.saturating_sub(server_from),
        signing_cpu: signing_to
            .zip(signing_from)
            .map(|(to, from)| to.saturating_sub(from)),
        generator_cpu: own_to.saturating_sub(own_from),
        stolen: stolen_to.saturating_sub(stolen_from),
        instructions,
        ..Measured::default()
    };
    // Each task drops its connection when it ends, closing it.
    for task in tasks {
        let log = task.await.context("a connection task failed")?;
        measured
            .requests
            .extend(log.requests.into_iter().map(|(at, latency)| Timed {
                at: clock.wall(at.into_std()),
                latency,
            }));
        measured.errors += log.errors;
        let room = ERROR_SAMPLES.saturating_sub(measured.error_samples.len());
        measured
            .error_samples
            .extend(log.error_samples.into_iter().take(room));
    }
    tokio::time::sleep(RSS_SETTLE).await;
    measured.rss = RssAround {
        before_kib: rss_before,
        peak_kib: rss_peak,
        after_kib: memory::rss_kib(server.pid())?,
    };
    Ok(measured)
}

#[derive(Default)]
struct ConnectionLog {
    /// When each request of the window was due (or sent), and its latency.
    requests: Vec<(Instant, Duration)>,
    errors: u64,
    error_samples: Vec<String>,
}

impl ConnectionLog {
    /// A request of the window, due (or sent) `at`, answered `latency` later.
    fn took(&mut self, at: Instant, latency: Duration) {
        self.requests.push((at, latency));
    }

    /// Counts a failure and lets the connection recover; `false` when it cannot go on.
    async fn failed(&mut self, error: anyhow::Error, connection: &mut Connection) -> bool {
        self.errors += 1;
        if self.error_samples.len() < ERROR_SAMPLES {
            self.error_samples.push(format!("{error:#}"));
        }
        match connection.recover().await {
            Ok(()) => true,
            Err(error) => {
                self.errors += 1;
                self.error_samples
                    .push(format!("cannot recover: {error:#}"));
                false
            }
        }
    }
}

/// Repeats the connection's request until the window closes; keeps the latencies of the
/// requests that complete inside `[from, to]`, so the edges balance out as in a steady state.
async fn drive(mut connection: Connection, from: Instant, to: Instant) -> ConnectionLog {
    let mut log = ConnectionLog::default();
    while Instant::now() < to {
        let started = Instant::now();
        let outcome = connection.once().await;
        let finished = Instant::now();
        match outcome {
            Ok(()) if finished >= from && finished <= to => log.took(started, finished - started),
            Ok(()) => {}
            Err(error) => {
                if !log.failed(error, &mut connection).await {
                    break;
                }
            }
        }
    }
    log
}

/// Where the connections of a counted window ([`drive_gated`]) wait for each other and for
/// the counter: `idle` once each has its last request answered (at the window's two edges),
/// `open` when the counter has been zeroed.
struct Gates {
    idle: tokio::sync::Barrier,
    open: tokio::sync::Barrier,
}

impl Gates {
    fn new(connections: usize) -> Gates {
        // The connections and the task that counts.
        Gates {
            idle: tokio::sync::Barrier::new(connections + 1),
            open: tokio::sync::Barrier::new(connections + 1),
        }
    }
}

/// As [`drive`], but the window's edges are quiet: at `from` the connection finishes its
/// request and waits until the counter is zeroed, and at `to` it finishes its request and
/// says so; it keeps every request sent in between. A connection that fails for good still
/// passes the gates, so the others are not held.
async fn drive_gated(
    mut connection: Connection,
    gates: Arc<Gates>,
    from: Instant,
    to: Instant,
) -> ConnectionLog {
    let mut log = ConnectionLog::default();
    let mut usable = true;
    for (until, keep) in [(from, false), (to, true)] {
        while usable && Instant::now() < until {
            let started = Instant::now();
            match connection.once().await {
                Ok(()) if keep => log.took(started, started.elapsed()),
                Ok(()) => {}
                Err(error) => usable = log.failed(error, &mut connection).await,
            }
        }
        gates.idle.wait().await;
        if !keep {
            gates.open.wait().await;
        }
    }
    log
}

/// Sends on the connection's schedule (offsets from `start`) until the window closes; keeps
/// the latencies, from the due instant, of the requests due inside `[from, to)`, however late
/// they are answered. Nothing is sent after `to`, so a connection that fell behind shows as
/// fewer requests than the target rate.
async fn drive_paced(
    mut connection: Connection,
    mut schedule: Schedule,
    start: Instant,
    from: Instant,
    to: Instant,
) -> ConnectionLog {
    let mut log = ConnectionLog::default();
    loop {
        let slot = schedule.next(Instant::now().saturating_duration_since(start));
        let (due, send_at) = (start + slot.due, start + slot.send_at);
        if send_at >= to {
            break;
        }
        tokio::time::sleep_until(send_at).await;
        let outcome = connection.once().await;
        let finished = Instant::now();
        match outcome {
            Ok(()) if due >= from => log.took(due, finished.saturating_duration_since(due)),
            Ok(()) => {}
            Err(error) => {
                if !log.failed(error, &mut connection).await {
                    break;
                }
            }
        }
    }
    log
}

/// `ANALYZE` on the bench's PostgreSQL database. Its tables were created empty a minute ago
/// and filled since (the tenant, the seeded records, the minted codes), faster than
/// autovacuum's next look (a minute, then 10% growth). Without statistics, the plans that
/// connections prepare and keep can prefer a `(tenant_id, expires_at)` index and filter a
/// hash lookup through every row of the tenant. A server that has run for a while has
/// them, so the window measures that server.
pub async fn analyze(url: &str) -> Result<()> {
    use sqlx::Connection;
    let mut connection = sqlx::PgConnection::connect(url)
        .await
        .context("connect to PostgreSQL for ANALYZE")?;
    sqlx::query("ANALYZE")
        .execute(&mut connection)
        .await
        .context("ANALYZE")?;
    connection.close().await.context("close after ANALYZE")?;
    Ok(())
}
