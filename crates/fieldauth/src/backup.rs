//! `fieldauth backup --to FILE`: a consistent copy of the embedded SQLite database, taken
//! while the server runs (docs/deployment.md, Backups and restore).

use std::path::Path;

use anyhow::{bail, Context};
use serde_json::json;
use store::Backend;

use crate::cli::Cli;
use crate::report::Report;

pub async fn backup(cli: &Cli, to: &Path) -> anyhow::Result<Report> {
    if cli.shards.is_some() {
        bail!("backup copies one database: run it for each database of the shard file, each with its own --database-url and without --shards");
    }
    let backend = Backend::from_url(&cli.database_url)
        .context("cannot open the database (--database-url)")?;
    if backend == Backend::Postgres {
        bail!("backup copies an SQLite database; for PostgreSQL use pg_dump -Fc (docs/deployment.md, Backups and restore)");
    }
    // The copy holds every password hash and the signing keys: created for its owner alone,
    // and never over an existing file (VACUUM INTO then fills the empty file).
    let mut file = std::fs::OpenOptions::new();
    file.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut file, 0o600);
    file.open(to)
        .with_context(|| format!("cannot create --to {to:?}"))?;
    // An absolute path, so SQLite cannot read it as a `file:` URI.
    let copied = match std::fs::canonicalize(to) {
        Ok(path) => store::backup_sqlite(&cli.database_url, &path)
            .await
            .context("cannot copy the database (--database-url)"),
        Err(error) => Err(anyhow::Error::from(error).context(format!("--to {to:?}"))),
    };
    if let Err(error) = copied {
        // The empty or partial file is ours: nothing to restore from.
        let _ = std::fs::remove_file(to);
        return Err(error);
    }
    let bytes = std::fs::metadata(to).map(|m| m.len()).unwrap_or_default();
    Ok(Report::new(
        json!({ "file": to, "bytes": bytes }),
        format!("database copied to {} ({bytes} bytes)", to.display()),
    ))
}
