//! The size of the bench's database, for the soak: on SQLite the main file and its
//! write-ahead log; on PostgreSQL every table of the bench's schema with its indexes and
//! TOAST (`pg_total_relation_size`).

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use sqlx::{Connection, PgConnection};

/// A database's size in bytes; on SQLite, the write-ahead log's share of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Size {
    pub bytes: u64,
    pub wal_bytes: Option<u64>,
}

pub enum DatabaseSize {
    Sqlite(PathBuf),
    Postgres(PgConnection),
}

impl DatabaseSize {
    pub async fn open(url: &str) -> Result<DatabaseSize> {
        if url.starts_with("postgres") {
            let connection = PgConnection::connect(url)
                .await
                .context("connect to PostgreSQL for the database size")?;
            return Ok(DatabaseSize::Postgres(connection));
        }
        Ok(DatabaseSize::Sqlite(sqlite_path(url)?))
    }

    /// The size now, and on SQLite how much of it is the write-ahead log.
    pub async fn measure(&mut self) -> Result<Size> {
        match self {
            DatabaseSize::Sqlite(path) => {
                let size = |path: PathBuf| std::fs::metadata(path).map_or(0, |m| m.len());
                let mut wal = path.clone().into_os_string();
                wal.push("-wal");
                let wal = size(PathBuf::from(wal));
                Ok(Size {
                    bytes: size(path.clone()) + wal,
                    wal_bytes: Some(wal),
                })
            }
            DatabaseSize::Postgres(connection) => {
                let bytes: i64 = sqlx::query_scalar(
                    "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0)::BIGINT \
                     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                     WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')",
                )
                .fetch_one(&mut *connection)
                .await
                .context("the database size")?;
                Ok(Size {
                    bytes: u64::try_from(bytes).unwrap_or(0),
                    wal_bytes: None,
                })
            }
        }
    }
}

/// The file of `sqlite://PATH`, `sqlite:PATH` or either with `?options`.
fn sqlite_path(url: &str) -> Result<PathBuf> {
    let Some(rest) = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
    else {
        bail!("not a SQLite or PostgreSQL URL: {url}");
    };
    let path = rest.split('?').next().unwrap_or(rest);
    if path.is_empty() || path == ":memory:" {
        bail!("the SQLite database {url} has no file to measure");
    }
    Ok(PathBuf::from(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sqlite_file_is_the_url_without_scheme_and_options() {
        assert_eq!(
            sqlite_path("sqlite:///tmp/x/fieldauth.db").unwrap(),
            PathBuf::from("/tmp/x/fieldauth.db")
        );
        assert_eq!(
            sqlite_path("sqlite:data/f.db?mode=rwc").unwrap(),
            PathBuf::from("data/f.db")
        );
        assert!(sqlite_path("sqlite::memory:").is_err());
        assert!(sqlite_path("mysql://x").is_err());
    }

    #[tokio::test]
    async fn a_sqlite_size_adds_the_write_ahead_log() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("f.db");
        std::fs::write(&db, vec![0u8; 4096]).unwrap();
        let url = format!("sqlite://{}", db.display());
        let mut size = DatabaseSize::open(&url).await.unwrap();
        let only_the_file = Size {
            bytes: 4096,
            wal_bytes: Some(0),
        };
        assert_eq!(size.measure().await.unwrap(), only_the_file);
        std::fs::write(dir.path().join("f.db-wal"), vec![0u8; 1000]).unwrap();
        let with_the_log = Size {
            bytes: 5096,
            wal_bytes: Some(1000),
        };
        assert_eq!(size.measure().await.unwrap(), with_the_log);
    }
}
