//! The comparison with node-oidc-provider: finding Node.js and the library `npm ci` installed
//! in the compare directory, and starting its `server.mjs` the way the bench starts fieldauth
//! (free loopback ports, `taskset`, CPU time from `/proc`), with its seeding endpoint.

mod seeder;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;
use tokio::process::Command;

use crate::flows::Target;
use crate::provision;
use crate::server::{self, Launch, Server};
use crate::workloads::Shared;
use crate::{idle_rss, measure_workload, report, BackendRun, Plan};

pub use seeder::Seeder;

/// The `backend` column of its rows.
pub const LABEL: &str = "node-oidc-provider";

/// The `aud` of its access tokens, as fieldauth's is its API's URL; nothing listens there.
const AUDIENCE: &str = "http://127.0.0.1:9";

/// The directory with `server.mjs`, `package.json` and what `npm ci` put in `node_modules`.
pub const DEFAULT_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/compare/node-oidc-provider");

/// A Node.js and an installed node-oidc-provider, checked before anything starts.
#[derive(Debug, Clone)]
pub struct Installation {
    pub dir: PathBuf,
    /// The `node` executable itself (`process.execPath`), which the process must turn out
    /// to be.
    pub node: PathBuf,
    pub node_version: String,
    pub library_version: String,
}

/// Checks `dir`, Node.js on `PATH` and the installed library; the error says what to do.
pub fn locate(dir: &Path) -> Result<Installation> {
    let npm_ci = format!("run `npm ci` in {}", dir.display());
    for file in ["server.mjs", "package.json"] {
        if !dir.join(file).is_file() {
            bail!(
                "no {file} in {}: give --node-dir the directory of the node-oidc-provider comparison",
                dir.display()
            );
        }
    }
    let probe = std::process::Command::new("node")
        .args(["-p", "process.version + '\\n' + process.execPath"])
        .output();
    let probe = match probe {
        Ok(output) if output.status.success() => output.stdout,
        Ok(output) => bail!(
            "`node` failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            bail!("Node.js (`node`) is not on PATH: install Node.js 20 or later, then {npm_ci}")
        }
        Err(error) => return Err(error).context("cannot run `node`"),
    };
    let (node_version, node) = parse_node_probe(&String::from_utf8_lossy(&probe))?;
    let read = |path: PathBuf| {
        std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))
    };
    let pinned = pinned_version(&read(dir.join("package.json"))?)?;
    let installed_manifest = dir.join("node_modules/oidc-provider/package.json");
    if !installed_manifest.is_file() {
        bail!("node-oidc-provider is not installed: {npm_ci}");
    }
    let library_version = installed_version(&read(installed_manifest)?)?;
    if library_version != pinned {
        bail!(
            "node_modules holds oidc-provider {library_version} but package.json pins {pinned}: {npm_ci}"
        );
    }
    Ok(Installation {
        dir: dir.to_owned(),
        node,
        node_version,
        library_version,
    })
}

/// How to run the comparison.
pub struct RunSettings<'a> {
    pub installation: &'a Installation,
    /// A `taskset -c` CPU list, as for fieldauth.
    pub cpus: Option<&'a str>,
}

/// Starts node-oidc-provider and measures the plan's workloads (`refresh`, `exchange`) with
/// the same connections, windows, ceiling and report as fieldauth's.
pub async fn run(settings: &RunSettings<'_>, plan: &Plan) -> Result<BackendRun> {
    let logs = tempfile::tempdir()?;
    let (server, seeder) = start(
        settings.installation,
        settings.cpus,
        logs.path().join("server.log"),
    )
    .await?;
    let idle_rss_kib = idle_rss(&server, LABEL).await?;
    // The same client, redirect URI and user names as fieldauth's tenant; the users are
    // made by the seeding endpoint, nothing needs a password.
    let target = Arc::new(Target {
        issuer: server.issuer.clone(),
        api_url: server.api_url.clone(),
        tenant: String::new(),
        client_id: provision::CLIENT_ID.to_owned(),
        redirect_uri: provision::REDIRECT_URI.to_owned(),
        usernames: (0..plan.timing.connections)
            .map(provision::username)
            .collect(),
        password: String::new(),
        organization: String::new(),
    });
    let shared = Shared {
        target,
        userinfo_token: None,
        api_token: None,
        statistics: None,
        seeder: Some(seeder),
    };
    let outcome = async {
        let mut rows = Vec::new();
        let mut highest_ceiling = 0.0;
        for workload in &plan.workloads {
            let measured = measure_workload(
                &server,
                &shared,
                LABEL,
                plan,
                *workload,
                &mut highest_ceiling,
            );
            rows.extend(measured.await?);
        }
        anyhow::Ok(rows)
    }
    .await
    .map_err(|error| error.context(format!("the server's log ends:\n{}", server.log_tail())));
    let stopped = server.stop().await;
    let rows = outcome?;
    Ok(BackendRun {
        server: report::ServerRun {
            backend: LABEL.to_owned(),
            idle_rss_kib,
            tenants: None,
        },
        rows,
        soak: None,
        stop_failure: crate::stop_failure(LABEL, stopped),
    })
}

/// Starts `server.mjs` under `taskset -c CPUS` when given; the server and its seeding
/// endpoint, both ready.
pub async fn start(
    installation: &Installation,
    cpus: Option<&str>,
    log_path: PathBuf,
) -> Result<(Server, Seeder)> {
    let (port, seed_port) = server::free_ports()?;
    let issuer = format!("http://127.0.0.1:{port}");
    let seeder = Seeder::new(format!("http://127.0.0.1:{seed_port}"))?;
    let mut command: Command = server::pinned(cpus, &installation.node);
    command
        .arg(installation.dir.join("server.mjs"))
        .args(["--port", &port.to_string()])
        .args(["--seed-port", &seed_port.to_string()])
        .args(["--audience", AUDIENCE])
        .env("NODE_ENV", "production")
        .current_dir(&installation.dir);
    let launch = Launch {
        command,
        bin: installation.node.clone(),
        callgrind: None,
        ready: vec![
            format!("{issuer}/.well-known/openid-configuration"),
            seeder.readiness_url(),
        ],
        issuer,
        api_url: AUDIENCE.to_owned(),
        log_path,
    };
    Ok((Server::launch(launch).await?, seeder))
}

/// `node -p` printed the version, then the executable's path.
fn parse_node_probe(stdout: &str) -> Result<(String, PathBuf)> {
    let mut lines = stdout.lines();
    match (lines.next(), lines.next()) {
        (Some(version), Some(path)) if version.starts_with('v') && !path.is_empty() => {
            Ok((version.to_owned(), PathBuf::from(path)))
        }
        _ => Err(anyhow!(
            "`node -p` printed {stdout:?}, not its version and path"
        )),
    }
}

#[derive(Deserialize)]
struct PackageJson {
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    dependencies: std::collections::BTreeMap<String, String>,
}

/// The exact version `package.json` pins oidc-provider to.
fn pinned_version(package_json: &str) -> Result<String> {
    let package: PackageJson =
        serde_json::from_str(package_json).context("package.json is not valid JSON")?;
    let version = package
        .dependencies
        .get("oidc-provider")
        .ok_or_else(|| anyhow!("package.json does not depend on oidc-provider"))?;
    if !version.chars().all(|c| c.is_ascii_digit() || c == '.') {
        bail!("package.json must pin oidc-provider to an exact version, not {version:?}");
    }
    Ok(version.clone())
}

/// The `version` of the installed `node_modules/oidc-provider/package.json`.
fn installed_version(package_json: &str) -> Result<String> {
    let package: PackageJson = serde_json::from_str(package_json)
        .context("node_modules/oidc-provider/package.json is not valid JSON")?;
    package
        .version
        .ok_or_else(|| anyhow!("node_modules/oidc-provider/package.json has no version"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_gives_the_version_then_the_executable() {
        let (version, path) = parse_node_probe("v20.20.2\n/usr/local/bin/node\n").unwrap();
        assert_eq!(version, "v20.20.2");
        assert_eq!(path, PathBuf::from("/usr/local/bin/node"));
        for bad in ["", "v20.20.2\n", "20.20.2\n/usr/bin/node\n"] {
            assert!(parse_node_probe(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_pinned_version_must_be_exact() {
        let pinned = r#"{"name":"x","dependencies":{"oidc-provider":"9.13.3"}}"#;
        assert_eq!(pinned_version(pinned).unwrap(), "9.13.3");
        let ranged = r#"{"dependencies":{"oidc-provider":"^9.13.3"}}"#;
        assert_eq!(
            pinned_version(ranged).unwrap_err().to_string(),
            "package.json must pin oidc-provider to an exact version, not \"^9.13.3\""
        );
        let missing = r#"{"dependencies":{"koa":"3.0.0"}}"#;
        assert_eq!(
            pinned_version(missing).unwrap_err().to_string(),
            "package.json does not depend on oidc-provider"
        );
    }

    #[test]
    fn the_installed_version_is_the_manifest_version() {
        let manifest =
            r#"{"name":"oidc-provider","version":"9.13.3","dependencies":{"jose":"^6.2.13"}}"#;
        assert_eq!(installed_version(manifest).unwrap(), "9.13.3");
        assert!(installed_version(r#"{"name":"oidc-provider"}"#).is_err());
    }

    #[test]
    fn the_checked_in_package_json_pins_an_exact_version() {
        let text = std::fs::read_to_string(Path::new(DEFAULT_DIR).join("package.json")).unwrap();
        let version = pinned_version(&text).unwrap();
        assert_eq!(version.split('.').count(), 3, "{version}");
    }

    #[test]
    fn a_directory_without_the_script_is_refused_before_node_is_looked_for() {
        let dir = tempfile::tempdir().unwrap();
        let error = locate(dir.path()).unwrap_err().to_string();
        assert!(error.starts_with("no server.mjs in "), "{error}");
    }

    #[test]
    fn a_directory_without_node_modules_says_to_run_npm_ci() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("server.mjs"), "").unwrap();
        std::fs::write(
            dir.path().join("package.json"),
            r#"{"dependencies":{"oidc-provider":"9.13.3"}}"#,
        )
        .unwrap();
        let error = locate(dir.path()).unwrap_err().to_string();
        // With Node.js on PATH the library is missing; without it, Node.js is. Both say what
        // to run.
        assert!(
            error.ends_with(&format!("run `npm ci` in {}", dir.path().display())),
            "{error}"
        );
    }
}
