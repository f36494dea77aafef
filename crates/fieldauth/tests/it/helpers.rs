//! What every end-to-end test needs: a database per test, the server started through the
//! same wiring as the binary, the binary itself, and assertions.

use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::Duration;

use fieldauth::config::ServeConfig;
use fieldauth::connections::ConnectionLimits;
use fieldauth::serve::{self, Listeners, Server};
use jose::{Clock, ManualClock, SystemClock};
use oauth::Issuer;
use store::testing::TestDatabase;
use store::Store;
use tokio::net::TcpListener;

/// Declares each `async fn name(db: TestDatabase)` test twice: `sqlite::name` and
/// `postgres::name` (skipped, loudly, when no PostgreSQL answers and the run is not strict).
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                super::$name(store::testing::TestDatabase::sqlite()).await;
            })*
        }
        mod postgres {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let Some(db) = store::testing::TestDatabase::postgres().await else { return };
                super::$name(db).await;
            })*
        }
    };
}
pub(crate) use on_both_backends;

/// A running server on its own database.
pub struct TestApp {
    pub db: TestDatabase,
    pub store: Store,
    pub issuer: String,
    pub api_url: String,
    /// `http://` and the metrics listener's address.
    pub metrics_url: String,
    /// The admin API's listener, `http://127.0.0.1:<port>`.
    pub admin_url: String,
    pub http: reqwest::Client,
    /// The server's clock: starts at the real time (the CLI writes real times) and moves
    /// only when a test says so.
    pub clock: Arc<ManualClock>,
    /// The server's own store: `store` itself unless the server reaches the database
    /// through another URL.
    server_store: Store,
    server: Option<Server>,
}

impl TestApp {
    pub async fn spawn(db: TestDatabase) -> TestApp {
        TestApp::spawn_with_throttle(db, oauth::ThrottlePolicy::default()).await
    }

    pub async fn spawn_with_throttle(db: TestDatabase, throttle: oauth::ThrottlePolicy) -> TestApp {
        let url = db.url.clone();
        TestApp::start(db, &url, throttle).await
    }

    /// A server whose store connects to `server_url` (a proxy in front of `db`, which a
    /// fault test can cut), while `app.store` stays connected to `db` directly, so the test
    /// can seed and inspect the database whatever the server sees.
    pub async fn spawn_with_database_url(db: TestDatabase, server_url: &str) -> TestApp {
        TestApp::start(db, server_url, oauth::ThrottlePolicy::default()).await
    }

    /// A server whose listeners keep these limits (short timeouts, a small cap).
    pub async fn spawn_with_connection_limits(
        db: TestDatabase,
        connections: ConnectionLimits,
    ) -> TestApp {
        let url = db.url.clone();
        let throttle = oauth::ThrottlePolicy::default();
        TestApp::start_configured(db, &url, throttle, |config| {
            config.connections = connections
        })
        .await
    }

    /// A server on `db` whose configuration `configure` changes first.
    pub async fn spawn_configured(
        db: TestDatabase,
        throttle: oauth::ThrottlePolicy,
        configure: impl FnOnce(&mut ServeConfig),
    ) -> TestApp {
        let url = db.url.clone();
        TestApp::start_configured(db, &url, throttle, configure).await
    }

    async fn start(db: TestDatabase, server_url: &str, throttle: oauth::ThrottlePolicy) -> TestApp {
        TestApp::start_configured(db, server_url, throttle, |_| {}).await
    }

    pub async fn start_configured(
        db: TestDatabase,
        server_url: &str,
        throttle: oauth::ThrottlePolicy,
        configure: impl FnOnce(&mut ServeConfig),
    ) -> TestApp {
        init_test_log();
        let auth = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let api = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let metrics = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let admin = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let admin_url = format!("http://{}", admin.local_addr().unwrap());
        let issuer = format!("http://{}", auth.local_addr().unwrap());
        let api_url = format!("http://{}", api.local_addr().unwrap());
        let metrics_url = format!("http://{}", metrics.local_addr().unwrap());
        let mut config = ServeConfig {
            issuer: Issuer::parse(&issuer).unwrap(),
            api_url: api_url.clone(),
            auth_listen: auth.local_addr().unwrap(),
            api_listen: api.local_addr().unwrap(),
            // Short, so a rotation by the CLI shows within the tests' patience.
            key_reload_interval: Duration::from_millis(200),
            throttle,
            // On, as in production, so every API test also runs through the cache.
            api_cache_bytes: 8 << 20,
            metrics_listen: Some(metrics.local_addr().unwrap()),
            admin_listen: Some(admin.local_addr().unwrap()),
            connections: ConnectionLimits::default(),
            grant_max_age: 90 * 86_400,
            trusted_proxies: oauth::TrustedProxies::default(),
            // Off: a test that wants the background clean-up turns it on.
            cleanup_interval: None,
            audit_retention: 365 * 86_400,
            key_encryption: Default::default(),
            backchannel: Default::default(),
            mail: None,
        };
        configure(&mut config);
        let store = Store::connect(&db.url).await.unwrap();
        let server_store = match server_url == db.url {
            true => store.clone(),
            false => Store::connect(server_url).await.unwrap(),
        };
        let clock = Arc::new(ManualClock::new(SystemClock.now()));
        // One RSA key for the whole test process, installed as if created a day ago so it
        // signs at once: generating a key per server would dominate the suite's time.
        let key = test_signing_key();
        store
            .insert_signing_key(&key.kid, &key.pkcs8_der, clock.now() - 86_400)
            .await
            .unwrap();
        let server = serve::start_on(
            &config,
            Listeners {
                auth,
                api,
                metrics: Some(metrics),
                admin: Some(admin),
            },
            server_store.clone(),
            clock.clone(),
        )
        .await
        .unwrap();
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        TestApp {
            db,
            store,
            issuer,
            api_url,
            metrics_url,
            admin_url,
            http,
            clock,
            server_store,
            server: Some(server),
        }
    }

    pub async fn get(&self, url: &str) -> reqwest::Response {
        self.http.get(url).send().await.unwrap()
    }

    pub async fn jwks_kids(&self) -> Vec<String> {
        let body: serde_json::Value = self
            .get(&format!("{}/oauth/jwks", self.issuer))
            .await
            .json()
            .await
            .unwrap();
        body["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["kid"].as_str().unwrap().to_owned())
            .collect()
    }

    /// Runs the binary against this app's database.
    pub fn cli(&self, args: &[&str]) -> Output {
        cli(&self.db, args, None)
    }

    /// The rows of `table` in the database, of every tenant, read directly.
    pub async fn rows(&self, table: &str) -> i64 {
        let pool = sqlx::AnyPool::connect(&self.db.url).await.unwrap();
        let count: i64 = sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table}"))
            .fetch_one(&pool)
            .await
            .unwrap();
        pool.close().await;
        count
    }

    /// The server's time now.
    pub fn clock_now(&self) -> i64 {
        self.clock.now()
    }

    /// A new browser: its own cookie jar, redirects not followed.
    pub fn browser(&self) -> reqwest::Client {
        reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .cookie_store(true)
            .build()
            .unwrap()
    }

    /// A new browser whose connections come from `address` (any of 127.0.0.0/8 on
    /// loopback), as the server sees it.
    pub fn browser_from(&self, address: std::net::IpAddr) -> reqwest::Client {
        reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .cookie_store(true)
            .local_address(address)
            .build()
            .unwrap()
    }

    /// A new browser whose every request carries these headers (`X-Forwarded-For` as a
    /// proxy would add it, or as a client would spoof it).
    pub fn browser_with(&self, headers: &[(&'static str, &str)]) -> reqwest::Client {
        let mut map = reqwest::header::HeaderMap::new();
        for (name, value) in headers {
            map.append(*name, value.parse().unwrap());
        }
        reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .cookie_store(true)
            .default_headers(map)
            .build()
            .unwrap()
    }

    /// Stops the server alone (its listeners and tasks); the stores stay open.
    pub async fn stop_serving(&mut self) {
        if let Some(server) = self.server.take() {
            server.shutdown().await;
        }
    }

    pub async fn stop(mut self) {
        self.stop_serving().await;
        self.server_store.close().await;
        self.store.close().await;
    }
}

fn test_signing_key() -> &'static jose::GeneratedKey {
    static KEY: std::sync::OnceLock<jose::GeneratedKey> = std::sync::OnceLock::new();
    KEY.get_or_init(|| jose::generate_signing_key().unwrap())
}

/// Runs `fieldauth --database-url <db> ARGS`, with `stdin` piped in when given.
pub fn cli(db: &TestDatabase, args: &[&str], stdin: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_fieldauth"));
    command
        .arg("--database-url")
        .arg(&db.url)
        .args(args)
        .env("FIELDAUTH_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    {
        use std::io::Write;
        let mut input = child.stdin.take().unwrap();
        if let Some(text) = stdin {
            // A command refused before it reads stdin closes the pipe: not our failure.
            match input.write_all(text.as_bytes()) {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                other => other.unwrap(),
            }
        }
    }
    child.wait_with_output().unwrap()
}

pub fn assert_ok(output: &Output) {
    assert_eq!(
        output.status.code(),
        Some(0),
        "command failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The one JSON object a successful `--json` command prints.
pub fn json_output(output: &Output) -> serde_json::Map<String, serde_json::Value> {
    assert_ok(output);
    let stdout = String::from_utf8(output.stdout.clone()).unwrap();
    match serde_json::from_str::<serde_json::Value>(&stdout) {
        Ok(serde_json::Value::Object(map)) => map,
        other => panic!("stdout is not exactly one JSON object: {stdout:?} ({other:?})"),
    }
}

/// A refused command: exit code 1, nothing on stdout, and a reason on stderr containing `why`.
pub fn assert_refused(output: &Output, why: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(1),
        "expected exit 1; stderr: {stderr}"
    );
    assert!(
        output.stdout.is_empty(),
        "a refusal printed on stdout: {}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert!(
        stderr.contains(why),
        "stderr does not say {why:?}: {stderr}"
    );
}

/// Polls `check` until it holds, for state that another process changes (a key rotation
/// picked up by the server's reload). Bounded: fails after `limit`.
pub async fn eventually<F, Fut>(limit: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if check().await {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "condition not met within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `TEST_LOG=1` shows the server's logs.
fn init_test_log() {
    if std::env::var("TEST_LOG").is_ok_and(|v| v == "1") {
        let _ = tracing_subscriber::fmt()
            .with_env_filter("debug")
            .with_test_writer()
            .try_init();
    }
}
