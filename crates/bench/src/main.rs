//! `fieldauth-bench`: a load generator. For each database backend it starts a `fieldauth`
//! server on a fresh database, provisions a tenant through the CLI, and measures each
//! workload on its own, then prints a table and optionally writes JSON. With
//! `--target node-oidc-provider` it measures that server's token endpoint the same way.

mod callgrind;
mod ceiling;
mod cli;
mod codes;
mod connection;
mod database_size;
mod flows;
mod html;
mod latency_log;
mod memory;
mod merge;
mod node_oidc;
mod pacing;
mod provision;
mod report;
mod server;
mod soak;
mod stats;
mod tenants;
mod workloads;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use clap::Parser;
use store::testing::TestDatabase;

use crate::ceiling::{Ceiling, Signer};
use crate::cli::{chosen_workloads, Backend, Cli, ServerTarget};
use crate::flows::Target;
use crate::pacing::{Mode, Pace};
use crate::report::Row;
use crate::server::{Server, ServerSettings};
use crate::soak::{SoakReport, SoakSettings};
use crate::workloads::{Shared, Timing, Workload};

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    if !cli.merge.is_empty() {
        return match merge::merge(&cli.merge) {
            Ok(table) => {
                println!("{table}");
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("error: {error:#}");
                ExitCode::from(2)
            }
        };
    }
    // On Ctrl-C the run is dropped: the server guard sends SIGTERM, the database goes.
    let outcome = tokio::select! {
        outcome = run(&cli) => outcome,
        _ = tokio::signal::ctrl_c() => Err(anyhow!("interrupted")),
    };
    match outcome {
        Ok(Finished {
            rows,
            soaks,
            stop_failures,
        }) if rows.iter().all(|r| r.errors == 0)
            && soaks.iter().all(|s| s.errors == 0)
            && stop_failures.is_empty() =>
        {
            ExitCode::SUCCESS
        }
        Ok(Finished {
            rows,
            soaks,
            stop_failures,
        }) => {
            for failure in &stop_failures {
                eprintln!("error: {failure}");
            }
            for soak in soaks.iter().filter(|s| s.errors > 0) {
                eprintln!(
                    "error: the soak on {}: {} failed steps, e.g.:",
                    soak.backend, soak.errors
                );
                for sample in &soak.error_samples {
                    eprintln!("  {sample}");
                }
            }
            for row in rows.iter().filter(|r| r.errors > 0) {
                eprintln!(
                    "error: {} ({}) on {}: {} failed requests, e.g.:",
                    row.workload.name(),
                    row.mode,
                    row.backend,
                    row.errors
                );
                for sample in &row.error_samples {
                    eprintln!("  {sample}");
                }
            }
            ExitCode::from(1)
        }
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(2)
        }
    }
}

/// What a run measured.
struct Finished {
    rows: Vec<Row>,
    soaks: Vec<SoakReport>,
    /// Servers that did not stop as they should, after their rows were taken.
    stop_failures: Vec<String>,
}

async fn run(cli: &Cli) -> Result<Finished> {
    if cli.database_url.is_some() && cli.database.len() != 1 {
        bail!("--database-url names one database: give exactly one --database");
    }
    if cli.tenants > 0 && cli.target == ServerTarget::NodeOidcProvider {
        bail!("--tenants is for fieldauth: node-oidc-provider keeps its state in memory");
    }
    if let Some(dir) = &cli.callgrind {
        if cli.target == ServerTarget::NodeOidcProvider {
            bail!("--callgrind is for fieldauth: valgrind does not count a JIT's code usefully");
        }
        std::fs::create_dir_all(dir).with_context(|| format!("--callgrind {}", dir.display()))?;
    }
    let soak = match cli.soak {
        Some(_) if cli.target == ServerTarget::NodeOidcProvider => {
            bail!("--soak is for fieldauth: node-oidc-provider has no sign-in pages or API")
        }
        Some(minutes) => Some(SoakSettings {
            minutes,
            minute: Duration::from_secs(cli.soak_minute_seconds),
            rate: cli.soak_rate,
            fraction: cli.soak_fraction,
            capacity_run: Duration::from_secs(cli.soak_capacity_seconds),
            connections: usize::from(cli.connections),
        }),
        None => None,
    };
    // A soak mixes every workload itself; no workload runs on its own.
    let workloads = match soak {
        Some(_) => Vec::new(),
        None => chosen_workloads(cli)?,
    };
    // Checked before any key is generated, so a missing `npm ci` fails at once.
    let node = match cli.target {
        ServerTarget::NodeOidcProvider => {
            let installation = node_oidc::locate(&cli.node_dir)?;
            eprintln!(
                "{}: oidc-provider {} on Node.js {} ({})",
                node_oidc::LABEL,
                installation.library_version,
                installation.node_version,
                installation.node.display()
            );
            Some(installation)
        }
        ServerTarget::Fieldauth => None,
    };
    let server_cpus = match &cli.server_cpus {
        Some(list) => ceiling::parse_cpu_list(list).context("--server-cpus")?,
        None => Vec::new(),
    };
    let ceiling = match cli.ceiling_seconds {
        seconds if seconds > 0.0 && !workloads.is_empty() => {
            eprintln!("generating an RSA-2048 key for the signing ceiling");
            Some(CeilingSettings {
                signer: Signer::generate().await?,
                length: Duration::from_secs_f64(seconds),
                // One core's figure, taken on the core the server will use.
                cpu: server_cpus.first().copied(),
            })
        }
        _ => None,
    };
    let timing = Timing {
        connections: usize::from(cli.connections),
        warmup: Duration::from_secs(cli.warmup),
        duration: Duration::from_secs(cli.duration),
    };
    if workloads.contains(&Workload::Exchange) {
        codes::check_run_length(timing.run_length())?;
        if ceiling.is_none() {
            bail!("the exchange workload sizes its pool of codes from the signing ceiling: give --ceiling-seconds above 0");
        }
    }
    let plan = Plan {
        workloads,
        timing,
        ceiling,
        paced: match (cli.paced, cli.paced_rate) {
            (Some(fraction), _) => Some(Pace::Fraction(fraction)),
            (None, Some(rate)) => Some(Pace::Rate(rate)),
            (None, None) => None,
        },
        soak,
        // An unpinned server inherits this process's CPUs.
        server_cores: match server_cpus.len() {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        },
        latency_log: cli.latency_log.clone(),
    };
    if let Some(path) = &plan.latency_log {
        latency_log::create(path)?;
    }
    let mut rows = Vec::new();
    let mut servers = Vec::new();
    let mut soaks = Vec::new();
    let mut stop_failures = Vec::new();
    match &node {
        Some(installation) => {
            let settings = node_oidc::RunSettings {
                installation,
                cpus: cli.server_cpus.as_deref(),
            };
            let run = node_oidc::run(&settings, &plan)
                .await
                .with_context(|| format!("on {}", node_oidc::LABEL))?;
            servers.push(run.server);
            rows = run.rows;
            soaks.extend(run.soak);
            stop_failures.extend(run.stop_failure);
        }
        None => {
            let server_bin = server_binary(cli)?;
            for backend in &cli.database {
                let run = run_backend(cli, *backend, &server_bin, &plan)
                    .await
                    .with_context(|| format!("on {}", backend.name()))?;
                servers.push(run.server);
                rows.extend(run.rows);
                soaks.extend(run.soak);
                stop_failures.extend(run.stop_failure);
            }
        }
    }
    if !rows.is_empty() {
        println!("{}", report::table(&rows));
        if let Some(warning) = report::unsteady_ceiling(&rows) {
            println!("{warning}\n");
        }
        if let Some(counts) = report::instruction_counts(&rows) {
            println!("{counts}\n");
        }
    }
    for soak in &soaks {
        println!("{}\n", soak::table(soak));
    }
    for server in &servers {
        println!("{}", server.summary());
    }
    if let Some(path) = &cli.json {
        report::write_json(path, cli, &report::machine(), &servers, &rows, &soaks)?;
    }
    Ok(Finished {
        rows,
        soaks,
        stop_failures,
    })
}

/// The `fieldauth` binary: `--server-bin`, or the one next to this executable.
fn server_binary(cli: &Cli) -> Result<PathBuf> {
    let server_bin = match &cli.server_bin {
        Some(path) => path.clone(),
        None => std::env::current_exe()?
            .parent()
            .ok_or_else(|| anyhow!("this executable has no directory"))?
            .join("fieldauth"),
    };
    if !server_bin.is_file() {
        bail!(
            "no server binary at {} (build it with `cargo build --release -p fieldauth`, or give --server-bin)",
            server_bin.display()
        );
    }
    Ok(server_bin)
}

/// What every backend runs.
struct Plan {
    workloads: Vec<Workload>,
    timing: Timing,
    ceiling: Option<CeilingSettings>,
    paced: Option<Pace>,
    /// A soak instead of the workloads.
    soak: Option<SoakSettings>,
    /// The CPUs the server may run on.
    server_cores: usize,
    /// Where each row's requests go (`--latency-log`).
    latency_log: Option<PathBuf>,
}

/// How to measure the RSA-signing ceiling before each workload.
struct CeilingSettings {
    signer: Signer,
    length: Duration,
    cpu: Option<usize>,
}

impl CeilingSettings {
    /// `label` names the server's row (its backend) in the progress lines.
    async fn measure(&self, label: &str) -> Result<Ceiling> {
        let ceiling = self.signer.measure(self.length, self.cpu).await?;
        let place = match ceiling.pinned_cpu {
            Some(cpu) => format!("on CPU {cpu}"),
            None => "unpinned".to_owned(),
        };
        eprintln!(
            "{label}: RSA-2048 ceiling {place}: {:.0} signatures per CPU-second ({:.0} per wall second), {:.0} token responses per core-second",
            ceiling.per_cpu_second(),
            ceiling.per_wall_second(),
            ceiling.token_responses_per_core()
        );
        Ok(ceiling)
    }
}

/// The database of one backend: the given URL, or a throwaway one dropped with the value.
enum Database {
    Given(String),
    Throwaway(TestDatabase),
}

impl Database {
    async fn open(backend: Backend, url: Option<&String>) -> Result<Database> {
        if let Some(url) = url {
            return Ok(Database::Given(url.clone()));
        }
        match backend {
            Backend::Sqlite => Ok(Database::Throwaway(TestDatabase::sqlite())),
            // A randomly named schema in FIELDAUTH_TEST_POSTGRES_URL's database
            // (postgres://postgres@127.0.0.1:5432/test by default), dropped afterwards.
            Backend::Postgres => TestDatabase::postgres()
                .await
                .map(Database::Throwaway)
                .ok_or_else(|| {
                    anyhow!(
                        "PostgreSQL is not reachable (set FIELDAUTH_TEST_POSTGRES_URL, or give --database-url)"
                    )
                }),
        }
    }

    fn url(&self) -> &str {
        match self {
            Database::Given(url) => url,
            Database::Throwaway(db) => &db.url,
        }
    }
}

async fn run_backend(
    cli: &Cli,
    backend: Backend,
    server_bin: &std::path::Path,
    plan: &Plan,
) -> Result<BackendRun> {
    // Declared before the server, so it is dropped after the server has stopped.
    let database = Database::open(backend, cli.database_url.as_ref()).await?;
    let logs = tempfile::tempdir()?;
    eprintln!(
        "{}: provisioning the tenant through the CLI",
        backend.name()
    );
    let provisioner = provision::Cli {
        bin: server_bin.to_owned(),
        database_url: database.url().to_owned(),
    };
    let tenant = provision::tenant(&provisioner, plan.timing.connections).await?;
    let tenants = match cli.tenants {
        0 => None,
        count => {
            let shape = tenants::Shape {
                tenants: count,
                users: cli.tenant_users,
                grants_per_user: cli.tenant_grants,
                jobs: cli.tenant_jobs,
            };
            eprintln!("{}: writing {count} other tenants", backend.name());
            let provisioned = tenants::provision(database.url(), shape).await?;
            eprintln!(
                "{}: {count} other tenants, {} rows, written in {:.1} s",
                backend.name(),
                provisioned.rows,
                provisioned.seconds
            );
            Some(provisioned)
        }
    };
    let settings = ServerSettings {
        bin: server_bin.to_owned(),
        database_url: database.url().to_owned(),
        cpus: cli.server_cpus.clone(),
        log_filter: cli.server_log.clone(),
        log_path: logs.path().join("server.log"),
        // valgrind writes the dumps from the server's own directory.
        callgrind: cli
            .callgrind
            .as_deref()
            .map(std::fs::canonicalize)
            .transpose()?,
    };
    let server = Server::start(&settings).await?;
    let idle_rss_kib = idle_rss(&server, backend.name()).await?;
    let statistics = match backend {
        Backend::Postgres => Some(database.url().to_owned()),
        Backend::Sqlite => None,
    };
    let outcome = measure(&server, tenant, backend, plan, statistics, database.url()).await;
    let outcome = match outcome {
        Ok(measures) => Ok(measures),
        Err(error) => Err(error.context(format!("the server's log ends:\n{}", server.log_tail()))),
    };
    let stopped = server.stop().await;
    let (rows, soak) = outcome?;
    Ok(BackendRun {
        server: report::ServerRun {
            backend: backend.name().to_owned(),
            idle_rss_kib,
            tenants,
        },
        rows,
        soak,
        stop_failure: stop_failure(backend.name(), stopped),
    })
}

/// What was measured is reported even when the server then fails to stop as it should (a
/// 30-minute soak is not thrown away for it); the failure is said, and fails the run.
pub(crate) fn stop_failure(label: &str, stopped: Result<()>) -> Option<String> {
    stopped.err().map(|error| format!("on {label}: {error:#}"))
}

/// What one backend's run gave.
struct BackendRun {
    server: report::ServerRun,
    rows: Vec<Row>,
    soak: Option<SoakReport>,
    /// Why the server did not stop as it should, after it was measured.
    stop_failure: Option<String>,
}

/// The server's resident set once it is ready and has settled, printed with `label`.
async fn idle_rss(server: &Server, label: &str) -> Result<u64> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    let kib = memory::rss_kib(server.pid())?;
    eprintln!(
        "{label}: the server is ready, idle at {:.1} MiB resident",
        memory::mib(kib)
    );
    Ok(kib)
}

/// The workloads' rows, or the soak.
async fn measure(
    server: &Server,
    tenant: provision::Tenant,
    backend: Backend,
    plan: &Plan,
    statistics: Option<String>,
    database_url: &str,
) -> Result<(Vec<Row>, Option<SoakReport>)> {
    let timing = plan.timing;
    let usernames: Vec<String> = (0..timing.connections).map(provision::username).collect();
    let first = usernames
        .first()
        .cloned()
        .ok_or_else(|| anyhow!("no connections"))?;
    let target = Arc::new(Target {
        issuer: server.issuer.clone(),
        api_url: server.api_url.clone(),
        tenant: provision::TENANT.to_owned(),
        client_id: provision::CLIENT_ID.to_owned(),
        redirect_uri: provision::REDIRECT_URI.to_owned(),
        usernames,
        password: tenant.password,
        organization: tenant.organization,
    });
    let browser = flows::browser()?;
    let userinfo = flows::login(&browser, &target, &first, workloads::LOGIN_SCOPE).await?;
    let api = flows::login(&browser, &target, &first, provision::API_SCOPE).await?;
    let mut work_orders = Vec::new();
    if plan.soak.is_some() || plan.workloads.iter().any(|w| w.queries_jobs()) {
        eprintln!("{}: seeding the jobs through the API", backend.name());
        work_orders =
            provision::field_records(&flows::app_client()?, &target.api_url, &api.access_token)
                .await?;
    }
    if let Some(settings) = &plan.soak {
        let stand_in = match &statistics {
            Some(url) => {
                workloads::analyze(url).await?;
                soak::statistics::StandIn::start_if_off(url, backend.name()).await?
            }
            None => None,
        };
        let mix = soak::Mix {
            target,
            work_orders: Arc::new(work_orders),
        };
        let mut size = database_size::DatabaseSize::open(database_url).await?;
        let report = soak::run(settings, &mix, server, &mut size, backend.name()).await;
        if let Some(stand_in) = stand_in {
            let analyzed = stand_in.stop().await?;
            eprintln!(
                "{}: the bench ran ANALYZE on {analyzed} tables during the soak",
                backend.name()
            );
        }
        return Ok((Vec::new(), Some(report?)));
    }
    let shared = Shared {
        target,
        userinfo_token: Some(userinfo.access_token.into()),
        api_token: Some(api.access_token.into()),
        statistics,
        seeder: None,
    };
    let mut rows = Vec::new();
    let mut highest_ceiling = 0.0;
    for workload in &plan.workloads {
        rows.extend(
            measure_workload(
                server,
                &shared,
                backend.name(),
                plan,
                *workload,
                &mut highest_ceiling,
            )
            .await?,
        );
    }
    Ok((rows, None))
}

/// Appends a row's requests to the `--latency-log`, if one was asked for, under the names
/// its row has in the table.
fn log_latencies(
    plan: &Plan,
    workload: Workload,
    label: &str,
    mode: Mode,
    measured: &workloads::Measured,
) -> Result<()> {
    let Some(path) = &plan.latency_log else {
        return Ok(());
    };
    let row = format!("{} {} {}", workload.name(), label, mode.label());
    latency_log::append(path, &row, &measured.requests)
}

/// One workload's closed-loop row, and its paced row if asked for; `label` is the row's
/// `backend`. `highest_ceiling` is the most token responses per core-second any ceiling of
/// this server's run has measured so far.
async fn measure_workload(
    server: &Server,
    shared: &Shared,
    label: &str,
    plan: &Plan,
    workload: Workload,
    highest_ceiling: &mut f64,
) -> Result<Vec<Row>> {
    let timing = plan.timing;
    // Before the connections open: the server is idle then.
    let ceiling = match &plan.ceiling {
        Some(settings) => Some(settings.measure(label).await?),
        None => None,
    };
    eprintln!(
        "{}: {} with {} connections, {:?} warm-up, {:?} measured",
        label,
        workload.name(),
        timing.connections,
        timing.warmup,
        timing.duration
    );
    if let Some(ceiling) = &ceiling {
        *highest_ceiling = highest_ceiling.max(ceiling.token_responses_per_core());
    }
    // No server answers faster than its cores can sign, so this bounds the exchanges. The
    // highest ceiling of the run, not this one alone: on a host whose core slows and
    // speeds up, a ceiling measured low ran the pool dry mid-window.
    let bound = match server.counter() {
        Some(_) => callgrind::RESPONSES_PER_SECOND,
        None => *highest_ceiling * plan.server_cores as f64,
    };
    let codes = match (workload, &ceiling) {
        (Workload::Exchange, Some(_)) => {
            codes::per_connection(bound, timing.run_length(), timing.connections)
        }
        _ => 0,
    };
    let measured = workloads::run(workload, shared, server, timing, Mode::Max, codes).await?;
    log_latencies(plan, workload, label, Mode::Max, &measured)?;
    let max = Row::new(
        workload,
        label,
        Mode::Max,
        timing.connections,
        measured,
        ceiling.as_ref(),
    );
    let max_rate = max.requests_per_s;
    let Some(pace) = plan.paced else {
        return Ok(vec![max]);
    };
    if max_rate <= 0.0 {
        bail!(
            "{}: no request completed in the closed loop, so there is no rate to pace at",
            workload.name()
        );
    }
    let mode = pace.mode(max_rate);
    let Mode::Paced { rate, .. } = mode else {
        bail!("an open-loop run has a rate");
    };
    eprintln!(
        "{}: {} {} of {max_rate:.1} requests/s",
        label,
        workload.name(),
        mode.label()
    );
    let codes = match workload {
        Workload::Exchange => codes::per_connection(rate, timing.run_length(), timing.connections),
        _ => 0,
    };
    let measured = workloads::run(workload, shared, server, timing, mode, codes).await?;
    log_latencies(plan, workload, label, mode, &measured)?;
    // The ceiling measured before the closed loop, not a new one: the two rows' ratios
    // then share a denominator, so a difference between them is the server's.
    let paced = Row::new(
        workload,
        label,
        mode,
        timing.connections,
        measured,
        ceiling.as_ref(),
    );
    Ok(vec![max, paced])
}
