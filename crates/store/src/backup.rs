//! A consistent copy of a live SQLite database, taken beside a running server.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use sqlx::{ConnectOptions, Connection};

use crate::db::Backend;
use crate::error::StoreError;

/// How long the copy waits for a writer's lock before it fails, as the server's connections do.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Copies the SQLite database at `url` into `to`, which must not exist or be empty.
///
/// `VACUUM INTO` reads the database in one read transaction, so the copy is the state of
/// one moment even while a server writes (in WAL mode readers and the writer do not wait for
/// each other), and it holds what is still only in the `-wal` file. It opens the database
/// without migrating it and without creating it: a copy taken before an upgrade is a copy of
/// the old schema, and a mistyped path is an error, not a new empty database.
pub async fn backup_sqlite(url: &str, to: &Path) -> Result<(), StoreError> {
    if Backend::from_url(url)? != Backend::Sqlite {
        return Err(StoreError::Refused(
            "only an SQLite database is copied this way".to_owned(),
        ));
    }
    let to = to
        .to_str()
        .ok_or_else(|| StoreError::Refused("the backup's path is not UTF-8".to_owned()))?;
    let options = SqliteConnectOptions::from_str(url)
        .map_err(|_| StoreError::UnsupportedUrl)?
        .create_if_missing(false)
        .busy_timeout(BUSY_TIMEOUT)
        .disable_statement_logging();
    let mut connection = SqliteConnection::connect_with(&options)
        .await
        .map_err(StoreError::Unavailable)?;
    let copied = sqlx::query("VACUUM INTO $1")
        .bind(to)
        .execute(&mut connection)
        .await
        .map_err(StoreError::Database);
    let _ = connection.close().await;
    copied.map(|_| ())
}
