//! The command line: every flag of the bench, with what it means and the values it takes.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Parser, ValueEnum};
use serde::Serialize;

use crate::node_oidc;
use crate::workloads::Workload;

#[derive(Debug, Parser, Serialize)]
#[command(
    name = "fieldauth-bench",
    about = "Load generator for fieldauth: starts its own server and measures sign-in flows, \
             refresh grants, userinfo and API queries per second"
)]
pub struct Cli {
    /// The server to measure: fieldauth, or node-oidc-provider (`refresh` and `exchange`
    /// only) for the comparison in docs/comparison.md.
    #[arg(long, value_enum, default_value = "fieldauth")]
    pub target: ServerTarget,
    /// The directory of the node-oidc-provider comparison (`server.mjs`, and `node_modules`
    /// from `npm ci`).
    #[arg(long, default_value = node_oidc::DEFAULT_DIR)]
    pub node_dir: PathBuf,
    /// What to measure, comma-separated; `all` runs each workload in turn (with
    /// `--target node-oidc-provider`: `refresh` and `exchange`).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "all")]
    pub workload: Vec<WorkloadChoice>,
    /// Concurrent keep-alive connections, each sending its next request when the previous
    /// one is answered.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u16).range(1..))]
    pub connections: u16,
    /// Seconds measured per workload.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub duration: u64,
    /// Seconds of load before the measured window, not counted.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(0..=600))]
    pub warmup: u64,
    /// Database backends, comma-separated (`sqlite,postgres` runs both, one after the other).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "sqlite")]
    pub database: Vec<Backend>,
    /// The database to use instead of a throwaway one (one backend only). It must not hold a
    /// tenant `bench` yet.
    #[arg(long)]
    pub database_url: Option<String>,
    /// The server binary (default: `fieldauth` next to this executable).
    #[arg(long)]
    pub server_bin: Option<PathBuf>,
    /// Pin the server to these CPUs (`taskset -c LIST`, e.g. `0` or `0-1`).
    #[arg(long)]
    pub server_cpus: Option<String>,
    /// Seconds of RSA-2048 signing on the server's first CPU before each workload, for the
    /// per-core ceiling the rows are compared with; 0 leaves it out.
    #[arg(long, default_value_t = 2.0, value_parser = ceiling_seconds)]
    pub ceiling_seconds: f64,
    /// After each workload's closed-loop run, run it again open-loop at this fraction of the
    /// requests per second it reached (e.g. `0.8`), timing each request from when it was due.
    #[arg(long, value_parser = paced_fraction, conflicts_with = "paced_rate")]
    pub paced: Option<f64>,
    /// After each workload's closed-loop run, run it again open-loop at this many requests per
    /// second in all (e.g. `800`, 80% of a 1,000/s target), whatever the closed loop reached.
    #[arg(long, value_parser = paced_rate)]
    pub paced_rate: Option<f64>,
    /// Also write every measured request of each row to this file, when it was due (sent, in
    /// a closed loop) by the wall clock and its latency, in the order they were due: to see
    /// whether a tail is stalls, and when (docs/benchmarks.md). Not with `--soak`, which
    /// reports each minute instead.
    #[arg(long, conflicts_with = "soak")]
    pub latency_log: Option<PathBuf>,
    /// Run the server under valgrind's callgrind and report the instructions it executed per
    /// request in each window (user space only), writing each window's dump to this
    /// directory: counts that repeat whatever the host does, for changes too small to tell
    /// from CPU time on a shared host (docs/benchmarks.md). Closed-loop workloads only.
    #[arg(long, conflicts_with_all = ["soak", "paced", "paced_rate"])]
    pub callgrind: Option<PathBuf>,
    /// The server's `--log` filter. `info` (its default) logs a line per request.
    #[arg(long, default_value = "info")]
    pub server_log: String,
    /// Also write the results, settings and machine as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Before measuring, write this many other tenants straight into the database, each
    /// with a client, users in an organization, live grants with refresh tokens, browser
    /// sessions and a few field-service records.
    #[arg(long, default_value_t = 0)]
    pub tenants: usize,
    /// Users per other tenant (members of its organization, a browser session each).
    #[arg(long, default_value_t = 4)]
    pub tenant_users: usize,
    /// Grants per user of another tenant, each with a rotated and a live refresh token.
    #[arg(long, default_value_t = 1)]
    pub tenant_grants: usize,
    /// Jobs per other tenant's organization (0: no field-service records).
    #[arg(long, default_value_t = 2)]
    pub tenant_jobs: usize,
    /// Instead of the workloads one by one, mix them on every connection (sign-ins, code
    /// exchanges, refreshes, userinfo, API queries and writes) for this many minutes at
    /// `--soak-fraction` of the mix's capacity, and report each minute.
    #[arg(long, value_parser = soak_minutes)]
    pub soak: Option<f64>,
    /// The soak's rate in steps per second, instead of a fraction of the capacity (which is
    /// then not measured).
    #[arg(long, value_parser = paced_rate, requires = "soak")]
    pub soak_rate: Option<f64>,
    /// The soak's rate as a fraction of the steps per second its closed loop reached.
    #[arg(long, default_value_t = 0.8, value_parser = paced_fraction)]
    pub soak_fraction: f64,
    /// Seconds of the closed loop that measures the mix's capacity before the soak.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=600))]
    pub soak_capacity_seconds: u64,
    /// The length of a soak "minute" in seconds: 60, shorter only for the bench's tests.
    #[arg(long, default_value_t = 60, hide = true,
          value_parser = clap::value_parser!(u64).range(1..=60))]
    pub soak_minute_seconds: u64,
    /// Measure nothing: print the side-by-side table of docs/comparison.md from these JSON
    /// reports (`crates/bench/compare/run` writes them).
    #[arg(long, num_args = 1.., value_name = "REPORT")]
    pub merge: Vec<PathBuf>,
}

fn soak_minutes(value: &str) -> Result<f64, String> {
    match value.parse::<f64>() {
        Ok(minutes) if (1.0..=1440.0).contains(&minutes) => Ok(minutes),
        _ => Err("expected minutes from 1 to 1440".to_owned()),
    }
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
pub enum WorkloadChoice {
    Login,
    Refresh,
    Exchange,
    Userinfo,
    Api,
    ApiUncached,
    All,
}

impl Workload {
    pub fn choice(self) -> WorkloadChoice {
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
pub enum ServerTarget {
    Fieldauth,
    NodeOidcProvider,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

/// The workloads asked for, in the order of [`Workload::ALL`]; node-oidc-provider is
/// compared on its token endpoint only.
pub fn chosen_workloads(cli: &Cli) -> Result<Vec<Workload>> {
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

    fn parse(args: &str) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("fieldauth-bench").chain(args.split_whitespace()))
    }

    #[test]
    fn a_soak_is_at_least_a_minute_and_its_rate_needs_it() {
        assert_eq!(parse("--soak 30").unwrap().soak, Some(30.0));
        assert_eq!(parse("--soak 1.5").unwrap().soak, Some(1.5));
        assert!(parse("--soak 0.5").is_err());
        assert!(parse("--soak-rate 100").is_err());
        let cli = parse("--soak 2 --soak-rate 100").unwrap();
        assert_eq!((cli.soak_rate, cli.soak_fraction), (Some(100.0), 0.8));
        assert_eq!(cli.soak_minute_seconds, 60);
    }

    #[test]
    fn a_latency_log_is_for_the_rows_not_for_a_soak() {
        let cli = parse("--paced 0.8 --latency-log lat.txt").unwrap();
        assert_eq!(cli.latency_log, Some(PathBuf::from("lat.txt")));
        assert!(parse("--soak 2 --latency-log lat.txt").is_err());
    }

    #[test]
    fn merge_takes_several_reports() {
        let cli = parse("--merge a.json b.json").unwrap();
        assert_eq!(
            cli.merge,
            [PathBuf::from("a.json"), PathBuf::from("b.json")]
        );
        assert!(parse("").unwrap().merge.is_empty());
    }

    #[test]
    fn an_unknown_target_is_refused_by_the_parser() {
        assert!(workloads_of("--target keycloak").is_err());
    }
}
