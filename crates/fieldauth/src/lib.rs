//! The `fieldauth` binary's library: command line, configuration, wiring and the operator's
//! commands. `main.rs` only parses, installs logging and reports the outcome.

mod admin_tokens;
mod audit;
mod backup;
pub mod cli;
pub mod config;
pub mod connections;
pub mod demo;
pub mod demo_app;
pub mod demo_records;
mod health;
mod keys;
pub mod maintenance;
pub mod manage;
pub mod metrics;
mod report;
pub mod serve;
mod shards;
pub mod telemetry;
mod wal_checkpoints;

use std::io::Read;
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use jose::{Clock, SystemClock};
use oauth::OsRandom;
use secrecy::SecretString;
use store::Store;

use crate::cli::{
    AdminApiCommand, AdminTokenCommand, ApiCommand, AuditCommand, Command, DemoArgs, KeysCommand,
    MaintenanceCommand,
};
use crate::config::ServeConfig;

/// Runs one command to completion.
pub async fn run(cli: cli::Cli) -> anyhow::Result<()> {
    let clock = SystemClock;
    let random = OsRandom::new();
    if let Command::Serve(args) | Command::Demo(DemoArgs { serve: args, .. }) = &cli.command {
        // Settings are checked before anything touches the database.
        let config = ServeConfig::from_args(args)?;
        let demo_app_listen = match &cli.command {
            Command::Demo(demo) => {
                demo::check_app_listen(demo.demo_app_listen)?;
                Some(demo.demo_app_listen)
            }
            _ => None,
        };
        let store = open_store(&cli).await?;
        return serve_until_signal(&config, store, demo_app_listen, &random).await;
    }
    if let Command::Api(ApiCommand::Schema) = &cli.command {
        // Needs no database.
        print!("{}", api::sdl());
        return Ok(());
    }
    if let Command::AdminApi(AdminApiCommand::Openapi) = &cli.command {
        let document = admin::http::openapi()
            .to_pretty_json()
            .context("cannot write the admin API's OpenAPI document")?;
        println!("{document}");
        return Ok(());
    }
    // These two need no migrated store: a new KEK touches no database, and a backup must
    // not migrate the database it copies (a copy taken before an upgrade).
    match &cli.command {
        Command::Keys(KeysCommand::NewKek { out, json }) => {
            keys::new_kek(out)?.print(*json);
            return Ok(());
        }
        Command::Backup { to, json } => {
            backup::backup(&cli, to).await?.print(*json);
            return Ok(());
        }
        _ => {}
    }
    let store = open_store(&cli).await?;
    let now = clock.now();
    let shell = manage::Shell::new(&store, &random, now);
    let (report, json) = match cli.command {
        // handled above
        Command::Serve(_)
        | Command::Demo(_)
        | Command::Api(_)
        | Command::AdminApi(_)
        | Command::Backup { .. }
        | Command::Keys(KeysCommand::NewKek { .. }) => return Ok(()),
        Command::Tenant(command) => manage::tenants::run(command, &shell).await?,
        Command::Client(command) => manage::clients::run(command, &shell).await?,
        Command::User(command) => manage::users::run(command, &shell).await?,
        Command::Org(command) => manage::orgs::run(command, &shell).await?,
        Command::Grant(command) => manage::grants::run(command, &shell).await?,
        Command::Keys(KeysCommand::List { json }) => (keys::list(&store, now).await?, json),
        Command::Keys(KeysCommand::Rotate { kek, json }) => {
            (keys::rotate(&store, &kek, now).await?, json)
        }
        Command::Keys(KeysCommand::Rewrap {
            key_encryption_key_file,
            new_key_encryption_key_file,
            json,
        }) => (
            keys::rewrap(
                &store,
                key_encryption_key_file.as_deref(),
                &new_key_encryption_key_file,
            )
            .await?,
            json,
        ),
        Command::Keys(KeysCommand::Retire { kid, json }) => {
            (keys::retire(&store, &kid, now).await?, json)
        }
        Command::Audit(AuditCommand::List {
            tenant,
            limit,
            kind,
            since,
            until,
            json,
        }) => {
            let selection = audit::Selection {
                limit,
                kind: kind.as_deref(),
                since: since.as_deref(),
                until: until.as_deref(),
            };
            (audit::list(&shell, &tenant, &selection).await?, json)
        }
        Command::Maintenance(MaintenanceCommand::Cleanup {
            audit_retention_days,
            json,
        }) => (
            maintenance::cleanup(&store, now, audit_retention_days).await?,
            json,
        ),
        Command::AdminToken(AdminTokenCommand::Create { name, tenant, json }) => (
            admin_tokens::create(&store, &name, tenant.as_deref(), &random, now).await?,
            json,
        ),
        Command::AdminToken(AdminTokenCommand::List { json }) => {
            (admin_tokens::list(&store).await?, json)
        }
        Command::AdminToken(AdminTokenCommand::Revoke { name, json }) => {
            (admin_tokens::revoke(&store, &name, now).await?, json)
        }
    };
    store.close().await;
    report.print(json);
    Ok(())
}

async fn open_store(cli: &cli::Cli) -> anyhow::Result<Store> {
    let Some(path) = &cli.shards else {
        return Store::connect(&cli.database_url)
            .await
            .context("cannot open the database (--database-url)");
    };
    let map = shards::load(path)?;
    Store::connect_sharded(&cli.database_url, &map)
        .await
        .context("cannot open the databases (--database-url, --shards)")
}

async fn serve_until_signal(
    config: &ServeConfig,
    store: Store,
    demo_app_listen: Option<SocketAddr>,
    random: &OsRandom,
) -> anyhow::Result<()> {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    if let Some(app_listen) = demo_app_listen {
        // Ports first: a busy port must stop the demo before it replaces the demo credentials.
        let listeners = demo::bind_listeners(config, app_listen).await?;
        let running = demo::start(config, listeners, store.clone(), clock, random).await?;
        println!("{}", running.walkthrough);
        shutdown_signal().await;
        tracing::info!("shutting down: finishing requests in flight");
        running.shutdown().await;
    } else {
        if config.key_encryption.sealing_kek().is_none() {
            // The demo stays zero-setup and quiet; a real deployment hears it at every start.
            tracing::warn!("signing keys are stored in clear in the database: start with --key-encryption-key-file to seal them (docs/deployment.md)");
        }
        serve::warn_without_autovacuum(&store).await;
        let listeners = serve::bind_listeners(config).await?;
        let server = serve::start_on(config, listeners, store.clone(), clock).await?;
        shutdown_signal().await;
        tracing::info!("shutting down: finishing requests in flight");
        server.shutdown().await;
    }
    store.close().await;
    Ok(())
}

async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = interrupt => {},
                    _ = terminate.recv() => {},
                }
            }
            Err(_) => {
                let _ = interrupt.await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}

/// The password is the whole of standard input, less one trailing newline, so both
/// `printf %s pw |` and `echo pw |` work; it never appears in argv or the environment.
pub(crate) fn read_password_from_stdin() -> anyhow::Result<SecretString> {
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .context("cannot read the password from standard input")?;
    let password = input.strip_suffix('\n').unwrap_or(&input);
    let password = password.strip_suffix('\r').unwrap_or(password);
    anyhow::ensure!(!password.is_empty(), "no password on standard input");
    Ok(SecretString::from(password.to_owned()))
}
