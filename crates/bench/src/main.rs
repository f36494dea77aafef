//! `fieldauth-bench`: a load generator. For each database backend it starts a `fieldauth`
//! server on a fresh database, provisions a tenant through the CLI, and measures each
//! workload on its own, then prints a table and optionally writes JSON. With
//! `--target node-oidc-provider` it measures that server's token endpoint the same way.

mod ceiling;
mod codes;
mod connection;
mod flows;
mod html;
mod node_oidc;
mod pacing;
mod provision;
mod report;
mod server;
mod stats;
mod workloads;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use clap::{Parser, ValueEnum};
use serde::Serialize;
use store::testing::TestDatabase;

use crate::ceiling::{Ceiling, Signer};
use crate::flows::Target;
use crate::pacing::{Mode, Pace};
use crate::report::Row;
use crate::server::{Server, ServerSettings};
use crate::workloads::{Shared, Timing, Workload};

#[derive(Debug, Parser, Serialize)]
#[command(
    name = "fieldauth-bench",
    about = "Load generator for fieldauth: starts its own server and measures sign-in flows, \
             refresh grants, userinfo and API queries per second"
)]
struct Cli {
    /// The server to measure: fieldauth, or node-oidc-provider (`refresh` and `exchange`
    /// only) for the comparison in docs/comparison.md.
    #[arg(long, value_enum, default_value = "fieldauth")]
    target: ServerTarget,
    /// The directory of the node-oidc-provider comparison (`server.mjs`, and `node_modules`
    /// from `npm ci`).
    #[arg(long, default_value = node_oidc::DEFAULT_DIR)]
    node_dir: PathBuf,
    /// What to measure, comma-separated; `all` runs each workload in turn (with
    /// `--target node-oidc-provider`: `refresh` and `exchange`).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "all")]
    workload: Vec<WorkloadChoice>,
    /// Concurrent keep-alive connections, each sending its next request when the previous
    /// one is answered.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u16).range(1..))]
    connections: u16,
    /// Seconds measured per workload.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    duration: u64,
    /// Seconds of load before the measured window, not counted.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(0..=600))]
    warmup: u64,
    /// Database backends, comma-separated (`sqlite,postgres` runs both, one after the other).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "sqlite")]
    database: Vec<Backend>,
    /// The database to use instead of a throwaway one (one backend only). It must not hold a
    /// tenant `bench` yet.
    #[arg(long)]
    database_url: Option<String>,
    /// The server binary (default: `fieldauth` next to this executable).
    #[arg(long)]
    server_bin: Option<PathBuf>,
    /// Pin the server to these CPUs (`taskset -c LIST`, e.g. `0` or `0-1`).
    #[arg(long)]
    server_cpus: Option<String>,
    /// Seconds of RSA-2048 signing on the server's first CPU before each workload, for the
    /// per-core ceiling the rows are compared with; 0 leaves it out.
    #[arg(long, default_value_t = 2.0, value_parser = ceiling_seconds)]
    ceiling_seconds: f64,
    /// After each workload's closed-loop run, run it again open-loop at this fraction of the
    /// requests per second it reached (e.g. `0.8`), timing each request from when it was due.
    #[arg(long, value_parser = paced_fraction, conflicts_with = "paced_rate")]
    paced: Option<f64>,
    /// After each workload's closed-loop run, run it again open-loop at this many requests per
    /// second in all (e.g. `800`, 80% of a 1,000/s target), whatever the closed loop reached.
    #[arg(long, value_parser = paced_rate)]
    paced_rate: Option<f64>,
    /// The server's `--log` filter. `info` (its default) logs a line per request.
    #[arg(long, default_value = "info")]
    server_log: String,
    /// Also write the results, settings and machine as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
}

fn ceiling_seconds(value: &str) -> Result<f64, String> {
    match value.parse::<f64>() {
        Ok(seconds) if (0.0..=60.0).contains(&seconds) => Ok(seconds),
        _ => Err("expected seconds from 0 to 60".to_owned()),
    }
}

fn paced_rate(value: &str) -> Result<f64, String> {
    match value.parse::<f64>() {
        Ok(rate) if rate >= 1.0 && rate.is_finite() => Ok(rate),
        _ => Err("expected requests per second, at least 1, e.g. 800".to_owned()),
    }
}

fn paced_fraction(value: &str) -> Result<f64, String> {
    match value.parse::<f64>() {
        Ok(fraction) if fraction > 0.0 && fraction <= 1.0 => Ok(fraction),
        _ => Err("expected a fraction above 0 and at most 1, e.g. 0.8".to_owned()),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
enum WorkloadChoice {
    Login,
    Refresh,
    Exchange,
    Userinfo,
    Api,
    ApiUncached,
    All,
}

impl Workload {
    fn choice(self) -> WorkloadChoice {
        match self {
            Workload::Login => WorkloadChoice::Login,
            Workload::Refresh => WorkloadChoice::Refresh,
            Workload::Exchange => WorkloadChoice::Exchange,
            Workload::Userinfo => WorkloadChoice::Userinfo,
            Workload::Api => WorkloadChoice::Api,
            Workload::ApiUncached => WorkloadChoice::ApiUncached,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
enum ServerTarget {
    Fieldauth,
    NodeOidcProvider,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    // On Ctrl-C the run is dropped: the server guard sends SIGTERM, the database goes.
    let outcome = tokio::select! {
        outcome = run(&cli) => outcome,
        _ = tokio::signal::ctrl_c() => Err(anyhow!("interrupted")),
    };
    match outcome {
        Ok(rows) if rows.iter().all(|r| r.errors == 0) => ExitCode::SUCCESS,
        Ok(rows) => {
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

async fn run(cli: &Cli) -> Result<Vec<Row>> {
    if cli.database_url.is_some() && cli.database.len() != 1 {
        bail!("--database-url names one database: give exactly one --database");
    }
    let workloads = chosen_workloads(cli)?;
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
        seconds if seconds > 0.0 => {
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
        // An unpinned server inherits this process's CPUs.
        server_cores: match server_cpus.len() {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        },
    };
    let mut rows = Vec::new();
    match &node {
        Some(installation) => {
            let settings = node_oidc::RunSettings {
                installation,
                cpus: cli.server_cpus.as_deref(),
            };
            rows = node_oidc::run(&settings, &plan)
                .await
                .with_context(|| format!("on {}", node_oidc::LABEL))?;
        }
        None => {
            let server_bin = server_binary(cli)?;
            for backend in &cli.database {
                let backend_rows = run_backend(cli, *backend, &server_bin, &plan)
                    .await
                    .with_context(|| format!("on {}", backend.name()))?;
                rows.extend(backend_rows);
            }
        }
    }
    println!("{}", report::table(&rows));
    if let Some(path) = &cli.json {
        report::write_json(path, cli, &report::machine(), &rows)?;
    }
    Ok(rows)
}

/// The workloads asked for, in the order of [`Workload::ALL`]; node-oidc-provider is
/// compared on its token endpoint only.
fn chosen_workloads(cli: &Cli) -> Result<Vec<Workload>> {
    let all = cli.workload.contains(&WorkloadChoice::All);
    let chosen = Workload::ALL
        .into_iter()
        .filter(|w| all || cli.workload.contains(&w.choice()));
    match cli.target {
        ServerTarget::Fieldauth => Ok(chosen.collect()),
        ServerTarget::NodeOidcProvider => {
            if cli.database_url.is_some() {
                bail!(
                    "--database-url is for fieldauth: node-oidc-provider keeps its state in memory"
                );
            }
            let compared = |w: &Workload| matches!(w, Workload::Refresh | Workload::Exchange);
            let chosen: Vec<Workload> = chosen.collect();
            if let Some(other) = chosen.iter().find(|w| !compared(w)).filter(|_| !all) {
                bail!(
                    "node-oidc-provider is compared on refresh and exchange only, not {}",
                    other.name()
                );
            }
            Ok(chosen.into_iter().filter(compared).collect())
        }
    }
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
    /// The CPUs the server may run on.
    server_cores: usize,
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
) -> Result<Vec<Row>> {
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
    let settings = ServerSettings {
        bin: server_bin.to_owned(),
        database_url: database.url().to_owned(),
        cpus: cli.server_cpus.clone(),
        log_filter: cli.server_log.clone(),
        log_path: logs.path().join("server.log"),
    };
    let server = Server::start(&settings).await?;
    let statistics = match backend {
        Backend::Postgres => Some(database.url().to_owned()),
        Backend::Sqlite => None,
    };
    let outcome = measure(&server, tenant, backend, plan, statistics).await;
    let outcome = match outcome {
        Ok(rows) => Ok(rows),
        Err(error) => Err(error.context(format!("the server's log ends:\n{}", server.log_tail()))),
    };
    let stopped = server.stop().await;
    let rows = outcome?;
    stopped?;
    Ok(rows)
}

async fn measure(
    server: &Server,
    tenant: provision::Tenant,
    backend: Backend,
    plan: &Plan,
    statistics: Option<String>,
) -> Result<Vec<Row>> {
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
    if plan.workloads.iter().any(|w| w.queries_jobs()) {
        eprintln!("{}: seeding the jobs through the API", backend.name());
        provision::field_records(&flows::app_client()?, &target.api_url, &api.access_token).await?;
    }
    let shared = Shared {
        target,
        userinfo_token: Some(userinfo.access_token.into()),
        api_token: Some(api.access_token.into()),
        statistics,
        seeder: None,
    };
    let mut rows = Vec::new();
    for workload in &plan.workloads {
        rows.extend(measure_workload(server, &shared, backend.name(), plan, *workload).await?);
    }
    Ok(rows)
}

/// One workload's closed-loop row, and its paced row if asked for; `label` is the row's
/// `backend`.
async fn measure_workload(
    server: &Server,
    shared: &Shared,
    label: &str,
    plan: &Plan,
    workload: Workload,
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
    // No server answers faster than its cores can sign, so this bounds the exchanges.
    let codes = match (workload, &ceiling) {
        (Workload::Exchange, Some(ceiling)) => codes::per_connection(
            ceiling.token_responses_per_core() * plan.server_cores as f64,
            timing.run_length(),
            timing.connections,
        ),
        _ => 0,
    };
    let measured = workloads::run(workload, shared, server, timing, Mode::Max, codes).await?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn workloads_of(args: &str) -> Result<Vec<Workload>> {
        let cli =
            Cli::try_parse_from(std::iter::once("fieldauth-bench").chain(args.split_whitespace()))?;
        chosen_workloads(&cli)
    }

    #[test]
    fn all_on_fieldauth_is_every_workload() {
        assert_eq!(workloads_of("").unwrap(), Workload::ALL);
        assert_eq!(
            workloads_of("--workload exchange,refresh").unwrap(),
            [Workload::Refresh, Workload::Exchange]
        );
    }

    #[test]
    fn node_oidc_provider_runs_the_token_endpoint_workloads_only() {
        let both = [Workload::Refresh, Workload::Exchange];
        assert_eq!(workloads_of("--target node-oidc-provider").unwrap(), both);
        assert_eq!(
            workloads_of("--target node-oidc-provider --workload all").unwrap(),
            both
        );
        assert_eq!(
            workloads_of("--target node-oidc-provider --workload exchange").unwrap(),
            [Workload::Exchange]
        );
        let error = workloads_of("--target node-oidc-provider --workload refresh,login")
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "node-oidc-provider is compared on refresh and exchange only, not login"
        );
    }

    #[test]
    fn node_oidc_provider_takes_no_database() {
        let error = workloads_of("--target node-oidc-provider --database-url sqlite://x.db")
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("--database-url is for fieldauth"),
            "{error}"
        );
    }

    #[test]
    fn an_unknown_target_is_refused_by_the_parser() {
        assert!(workloads_of("--target keycloak").is_err());
    }
}
