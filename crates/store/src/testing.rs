//! Throwaway databases for tests: a temporary SQLite file, or a PostgreSQL schema with a
//! random name, set as the connections' `search_path` and dropped afterwards, so test runs
//! can overlap. A schema costs milliseconds where `CREATE DATABASE` costs a template copy.
//!
//! PostgreSQL is found at `FIELDAUTH_TEST_POSTGRES_URL` (default
//! `postgres://postgres@127.0.0.1:5432/test`). When it cannot be reached the PostgreSQL tests
//! say so and skip, unless `FIELDAUTH_TEST_STRICT=1`, which turns the skip into a failure.

use sqlx::{Connection, Executor, PgConnection};

const DEFAULT_ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// A database that exists for the lifetime of the value.
#[derive(Debug)]
pub struct TestDatabase {
    pub url: String,
    _dir: Option<tempfile::TempDir>,
    postgres: Option<PostgresDatabase>,
}

#[derive(Debug)]
struct PostgresDatabase {
    admin_url: String,
    schema: String,
}

impl TestDatabase {
    /// A fresh SQLite file in its own temporary directory.
    pub fn sqlite() -> TestDatabase {
        #[allow(clippy::expect_used)] // test support: no temp dir means no test can run
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let url = format!("sqlite://{}", dir.path().join("fieldauth.db").display());
        TestDatabase {
            url,
            _dir: Some(dir),
            postgres: None,
        }
    }

    /// A fresh, randomly named PostgreSQL schema, or `None` (after saying so on stderr) when
    /// no server answers and the run is not strict.
    pub async fn postgres() -> Option<TestDatabase> {
        let admin_url = std::env::var("FIELDAUTH_TEST_POSTGRES_URL")
            .unwrap_or_else(|_| DEFAULT_ADMIN_URL.to_owned());
        let schema = format!("fieldauth_test_{}", uuid::Uuid::new_v4().simple());
        let created = async {
            let mut admin = PgConnection::connect(&admin_url).await?;
            admin
                .execute(format!(r#"CREATE SCHEMA "{schema}""#).as_str())
                .await?;
            admin.close().await
        }
        .await;
        if let Err(error) = created {
            skip_or_fail(&format!("PostgreSQL not reachable at {admin_url}: {error}"));
            return None;
        }
        let url = with_search_path(&admin_url, &schema);
        let postgres = Some(PostgresDatabase { admin_url, schema });
        Some(TestDatabase {
            url,
            _dir: None,
            postgres,
        })
    }
}

/// Reports a test that cannot run here: a failure under `FIELDAUTH_TEST_STRICT=1`, a loud
/// skip otherwise.
pub fn skip_or_fail(reason: &str) {
    if strict() {
        #[allow(clippy::panic)] // test support: a strict run must fail, not skip
        {
            panic!("FIELDAUTH_TEST_STRICT=1 and a test cannot run: {reason}");
        }
    }
    // Written to the real stderr, not through `eprintln!`, which the test harness captures
    // and hides for passing tests: a skip must be seen.
    use std::io::Write;
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test} (set FIELDAUTH_TEST_STRICT=1 to fail instead): {reason}"
    );
}

/// True when skipped tests must fail (CI).
pub fn strict() -> bool {
    std::env::var("FIELDAUTH_TEST_STRICT").is_ok_and(|v| v == "1")
}

/// The URL with `options=-c search_path=<schema>`, so every table lives in the schema.
fn with_search_path(url: &str, schema: &str) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}options=-c%20search_path%3D{schema}")
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let Some(pg) = self.postgres.take() else {
            return;
        };
        // Drop runs outside any async context we could borrow, so the cleanup gets its own
        // thread and runtime.
        let cleanup = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            if let Ok(runtime) = runtime {
                runtime.block_on(async {
                    if let Ok(mut admin) = PgConnection::connect(&pg.admin_url).await {
                        let sql = format!(r#"DROP SCHEMA IF EXISTS "{}" CASCADE"#, pg.schema);
                        let _ = admin.execute(sql.as_str()).await;
                        let _ = admin.close().await;
                    }
                });
            }
        });
        let _ = cleanup.join();
    }
}

/// A signed-in session by password alone, as most tests need one.
pub fn password_session<'a>(
    session_hash: &'a [u8],
    sid: &'a str,
    user_id: &'a str,
    auth_time: i64,
    expires_at: i64,
) -> crate::NewBrowserSession<'a> {
    crate::NewBrowserSession {
        session_hash,
        sid,
        user_id,
        amr: "pwd",
        factor_due: None,
        mfa_at: None,
        auth_time,
        expires_at,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_schema_rides_in_the_connection_options() {
        assert_eq!(
            super::with_search_path("postgres://postgres@127.0.0.1:5432/test", "x"),
            "postgres://postgres@127.0.0.1:5432/test?options=-c%20search_path%3Dx"
        );
        assert_eq!(
            super::with_search_path("postgres://h/test?sslmode=disable", "x"),
            "postgres://h/test?sslmode=disable&options=-c%20search_path%3Dx"
        );
    }
}

/// SQLite's page cache as the server installs it (`sqlite_page_cache.rs`): its truncations
/// handed on to SQLite's own cache and left out, since the process started.
pub mod sqlite_page_cache {
    pub use crate::sqlite_page_cache::truncations;
}
