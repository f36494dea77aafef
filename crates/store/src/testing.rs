//! Throwaway databases for tests: a temporary SQLite file, or a PostgreSQL database with a
//! random name that is dropped afterwards, so test runs can overlap.
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
    name: String,
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

    /// A fresh, randomly named PostgreSQL database, or `None` (after saying so on stderr) when
    /// no server answers and the run is not strict.
    pub async fn postgres() -> Option<TestDatabase> {
        let admin_url = std::env::var("FIELDAUTH_TEST_POSTGRES_URL")
            .unwrap_or_else(|_| DEFAULT_ADMIN_URL.to_owned());
        let name = format!("fieldauth_test_{}", uuid::Uuid::new_v4().simple());
        let created = async {
            let mut admin = PgConnection::connect(&admin_url).await?;
            admin
                .execute(format!(r#"CREATE DATABASE "{name}""#).as_str())
                .await?;
            admin.close().await
        }
        .await;
        if let Err(error) = created {
            skip_or_fail(&format!("PostgreSQL not reachable at {admin_url}: {error}"));
            return None;
        }
        let url = replace_database(&admin_url, &name);
        Some(TestDatabase {
            url,
            _dir: None,
            postgres: Some(PostgresDatabase { admin_url, name }),
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

fn replace_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    // postgres://user@host:port/db -> keep everything up to the last '/' after the host.
    let authority_end = base.find("://").map_or(0, |i| i + 3);
    let base = match base[authority_end..].find('/') {
        Some(slash) => &base[..authority_end + slash],
        None => base,
    };
    match query {
        Some(q) => format!("{base}/{name}?{q}"),
        None => format!("{base}/{name}"),
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let Some(pg) = self.postgres.take() else {
            return;
        };
        // Drop runs outside any async context we could borrow, so the cleanup gets its own
        // thread and runtime. FORCE ends connections a test's pool still holds.
        let cleanup = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            if let Ok(runtime) = runtime {
                runtime.block_on(async {
                    if let Ok(mut admin) = PgConnection::connect(&pg.admin_url).await {
                        let sql = format!(r#"DROP DATABASE IF EXISTS "{}" WITH (FORCE)"#, pg.name);
                        let _ = admin.execute(sql.as_str()).await;
                        let _ = admin.close().await;
                    }
                });
            }
        });
        let _ = cleanup.join();
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn replaces_the_database_of_a_url() {
        assert_eq!(
            super::replace_database("postgres://postgres@127.0.0.1:5432/test", "x"),
            "postgres://postgres@127.0.0.1:5432/x"
        );
        assert_eq!(
            super::replace_database("postgres://u:p@h/test?sslmode=disable", "x"),
            "postgres://u:p@h/x?sslmode=disable"
        );
        assert_eq!(
            super::replace_database("postgres://h:1", "x"),
            "postgres://h:1/x"
        );
    }
}
