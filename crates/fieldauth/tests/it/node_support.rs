//! For the multi-node tests: several `fieldauth serve` processes of one issuer on one
//! PostgreSQL schema, killed when the test ends, and the browser's and client's requests
//! addressed to whichever node a step should reach.

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jose::{Clock, SystemClock};
use secrecy::SecretString;
use store::testing::TestDatabase;
use store::{NewClient, NewUser, Store, TenantId};
use tokio::sync::oneshot;

use crate::flow::{
    form_handles, location_params, param, CHALLENGE, CLIENT_ID, PASSWORD, REDIRECT_URI, TENANT,
    VERIFIER,
};

pub const ALICE_SUB: &str = "00000000-0000-4000-8000-000000000000";
pub const ALPHA: &str = "10000000-0000-4000-8000-000000000000";
pub const BRAVO: &str = "10000000-0000-4000-8000-000000000001";

/// A `fieldauth serve` child process, killed when dropped (a failed assertion included).
#[derive(Debug)]
pub struct Node {
    child: Child,
    /// `http://` and the address the node's auth listener answers on.
    pub auth: String,
    /// `http://` and the address the node's API listener answers on.
    pub api: String,
    logs: Arc<Mutex<Vec<String>>>,
}

impl Node {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything the node wrote on stderr so far (JSON log lines).
    pub fn logs(&self) -> String {
        self.logs.lock().unwrap().join("\n")
    }

    /// Waits up to `limit` for the process to exit; `None` if it is still running.
    pub async fn exit_status(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            if tokio::time::Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A process started but not yet known to listen.
struct Starting {
    child: Child,
    logs: Arc<Mutex<Vec<String>>>,
    listening: oneshot::Receiver<(String, String)>,
}

/// Starts `fieldauth serve` with JSON logs; a thread keeps reading its stderr (so the pipe
/// never fills) and reports the addresses of the `listening` line.
fn spawn_node(
    db_url: &str,
    issuer: &str,
    api_url: &str,
    listen: [&str; 2],
    extra: &[&str],
) -> Starting {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fieldauth"))
        .args([
            "--database-url",
            db_url,
            "--log-format",
            "json",
            "--log",
            "info",
        ])
        .args(["serve", "--auth-url", issuer, "--api-url", api_url])
        .args(["--auth-listen", listen[0], "--api-listen", listen[1]])
        .args(extra)
        // Its own free port, not the default: several nodes run at once (`--admin-listen` in
        // `extra` overrides this).
        .env("FIELDAUTH_ADMIN_LISTEN", "127.0.0.1:0")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let logs = Arc::new(Mutex::new(Vec::new()));
    let (report, listening) = oneshot::channel();
    let kept = Arc::clone(&logs);
    let show = std::env::var("TEST_LOG").is_ok_and(|v| v == "1");
    std::thread::spawn(move || {
        let mut report = Some(report);
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if show {
                eprintln!("node: {line}");
            }
            if let Ok(entry) = serde_json::from_str::<serde_json::Value>(&line) {
                if entry["message"] == "listening" {
                    let addr =
                        |name: &str| format!("http://{}", entry[name].as_str().unwrap_or(""));
                    if let Some(report) = report.take() {
                        let _ = report.send((addr("auth_addr"), addr("api_addr")));
                    }
                }
            }
            kept.lock().unwrap().push(line);
        }
    });
    Starting {
        child,
        logs,
        listening,
    }
}

impl Starting {
    /// The node once it logged `listening` and both listeners answer `/readyz` with 200; or
    /// its logs if it exited (or hung) first.
    async fn ready(mut self, http: &reqwest::Client) -> Result<Node, String> {
        let addresses = tokio::time::timeout(Duration::from_secs(60), &mut self.listening).await;
        let Ok(Ok((auth, api))) = addresses else {
            let _ = self.child.kill();
            let _ = self.child.wait();
            // Give the reader thread a moment to collect the last lines.
            tokio::time::sleep(Duration::from_millis(100)).await;
            return Err(self.logs.lock().unwrap().join("\n"));
        };
        let node = Node {
            child: self.child,
            auth,
            api,
            logs: self.logs,
        };
        for base in [&node.auth, &node.api] {
            let url = format!("{base}/readyz");
            let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
            loop {
                match http.get(&url).send().await {
                    Ok(response) if response.status() == 200 => break,
                    _ if tokio::time::Instant::now() >= deadline => {
                        return Err(format!("{url} not ready in 30 s:\n{}", node.logs()))
                    }
                    _ => tokio::time::sleep(Duration::from_millis(50)).await,
                }
            }
        }
        Ok(node)
    }
}

/// A free loopback port, for a listener the node binds itself.
fn free_address() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// Several nodes of one issuer: all use node 0's auth address as `--auth-url` (the issuer,
/// whose JWKS the API fetches) and node 0's API address as `--api-url` (the audience).
#[derive(Debug)]
pub struct Cluster {
    /// Declared before `db`, so the processes end before the schema is dropped.
    pub nodes: Vec<Node>,
    pub issuer: String,
    pub api_url: String,
    /// A client: no redirects followed, no cookies.
    pub http: reqwest::Client,
    pub db: TestDatabase,
}

impl Cluster {
    /// Starts `count` nodes at the same moment with `extra` serve flags, and waits until
    /// every one is ready. Node 0's ports are chosen here; if one was taken meanwhile, the
    /// whole start is tried once more.
    pub async fn start(db: TestDatabase, count: usize, extra: &[&str]) -> Cluster {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let mut failure = String::new();
        for _ in 0..2 {
            let (auth, api) = (free_address().to_string(), free_address().to_string());
            let issuer = format!("http://{auth}");
            let api_url = format!("http://{api}");
            let starting: Vec<Starting> = (0..count)
                .map(|i| {
                    let listen = match i {
                        0 => [auth.as_str(), api.as_str()],
                        _ => ["127.0.0.1:0", "127.0.0.1:0"],
                    };
                    spawn_node(&db.url, &issuer, &api_url, listen, extra)
                })
                .collect();
            let mut nodes = Vec::new();
            let mut failed = None;
            for start in starting {
                match start.ready(&http).await {
                    Ok(node) => nodes.push(node),
                    Err(logs) => failed = failed.or(Some(logs)),
                }
            }
            match failed {
                None => {
                    assert_eq!(nodes[0].auth, issuer);
                    return Cluster {
                        nodes,
                        issuer,
                        api_url,
                        http,
                        db,
                    };
                }
                Some(logs) if logs.contains("cannot listen on") => failure = logs,
                Some(logs) => panic!("a node did not start:\n{logs}"),
            }
        }
        panic!("a node could not listen twice:\n{failure}");
    }

    pub fn node(&self, i: usize) -> &Node {
        &self.nodes[i]
    }

    /// A new browser: its own cookie jar (cookies ignore the port, so a session set by one
    /// node goes to every node), redirects not followed.
    pub fn browser(&self) -> reqwest::Client {
        reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .cookie_store(true)
            .build()
            .unwrap()
    }
}

/// Migrates the schema, installs one signing key (as if created a day ago, so it signs at
/// once and no node generates its own) and seeds what `flow::seed` does, minus bob and
/// carol: tenant `acme`, public client `spa`, alice (member of Alpha and Bravo).
pub async fn prepare(db: &TestDatabase) {
    let store = Store::connect(&db.url).await.unwrap();
    let key = signing_key();
    let now = SystemClock.now();
    store
        .insert_signing_key(&key.kid, &key.pkcs8_der, now - 86_400)
        .await
        .unwrap();
    store.close().await;
    prepare_tenant(db, TENANT, "Acme").await;
}

/// Migrates the schema and seeds `tenant` as `prepare` seeds `acme` (client `spa`, alice in
/// Alpha and Bravo), without a signing key: for a shard, which holds tenants only.
pub async fn prepare_tenant(db: &TestDatabase, tenant: &str, name: &str) {
    let store = Store::connect(&db.url).await.unwrap();
    let tenant_id = TenantId::parse(tenant).unwrap();
    store.create_tenant(&tenant_id, name, 0).await.unwrap();
    let tenant = store.tenant(&tenant_id);
    let uris = [REDIRECT_URI.to_owned()];
    let scopes: Vec<String> = ["openid", "profile", "email", "offline_access", "jobs"]
        .map(str::to_owned)
        .to_vec();
    let client = NewClient {
        client_id: CLIENT_ID,
        name: "Dispatch Board",
        secret_hash: None,
        redirect_uris: &uris,
        scopes: &scopes,
    };
    tenant.create_client(&client, 0).await.unwrap();
    let hash = oauth::password::hash_password(
        SecretString::from(PASSWORD.to_owned()),
        &oauth::OsRandom::new(),
    )
    .await
    .unwrap();
    let alice = NewUser {
        user_id: ALICE_SUB,
        username: "alice",
        password_hash: &hash,
        name: "alice Example",
        email: "alice@example.com",
    };
    tenant.create_user(&alice, 0).await.unwrap();
    for (guid, name) in [(ALPHA, "Alpha"), (BRAVO, "Bravo")] {
        tenant.create_organization(guid, name, 0).await.unwrap();
        tenant.add_membership(ALICE_SUB, guid, 0).await.unwrap();
    }
    store.close().await;
}

/// One RSA key for the whole test process: generating one per test would dominate the time.
fn signing_key() -> &'static jose::GeneratedKey {
    static KEY: std::sync::OnceLock<jose::GeneratedKey> = std::sync::OnceLock::new();
    KEY.get_or_init(|| jose::generate_signing_key().unwrap())
}

/// An authorization request of the public client `spa` at the node `base`.
pub fn authorize_url(base: &str, scope: &str) -> String {
    authorize_url_of(base, TENANT, scope)
}

/// An authorization request of `tenant`'s public client `spa` at the node `base`.
pub fn authorize_url_of(base: &str, tenant: &str, scope: &str) -> String {
    let mut url = url::Url::parse(&format!("{base}/oauth/authorize")).unwrap();
    url.query_pairs_mut().extend_pairs([
        ("tenant", tenant),
        ("response_type", "code"),
        ("client_id", CLIENT_ID),
        ("redirect_uri", REDIRECT_URI),
        ("scope", scope),
        ("code_challenge", CHALLENGE),
        ("code_challenge_method", "S256"),
        ("state", "state-123"),
        ("nonce", "nonce-456"),
    ]);
    url.into()
}

/// Submits the sign-in form of `page` to the node `base`.
pub async fn sign_in(
    browser: &reqwest::Client,
    base: &str,
    page: &str,
    username: &str,
    password: &str,
) -> reqwest::Response {
    let (tenant, request, csrf) = form_handles(page);
    let fields = [
        ("tenant", tenant.as_str()),
        ("request", &request),
        ("csrf", &csrf),
        ("username", username),
        ("password", password),
    ];
    let url = format!("{base}/oauth/signin");
    browser.post(url).form(&fields).send().await.unwrap()
}

/// Submits the consent form of `page` to the node `base`: allow `scopes` for `organization`.
pub async fn allow(
    browser: &reqwest::Client,
    base: &str,
    page: &str,
    organization: &str,
    scopes: &[&str],
) -> reqwest::Response {
    let (tenant, request, csrf) = form_handles(page);
    let mut fields = vec![
        ("tenant", tenant.as_str()),
        ("request", &request),
        ("csrf", &csrf),
        ("decision", "allow"),
        ("organization", organization),
    ];
    fields.extend(scopes.iter().map(|s| ("scope", *s)));
    let url = format!("{base}/oauth/authorize");
    browser.post(url).form(&fields).send().await.unwrap()
}

/// A code for alice and Alpha with `scope` (all of it approved), every step at `base`.
pub async fn code_at(base: &str, scope: &str) -> String {
    code_of(base, TENANT, scope).await
}

/// A code of `tenant` for alice and Alpha with `scope`, every step at `base`.
pub async fn code_of(base: &str, tenant: &str, scope: &str) -> String {
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .cookie_store(true)
        .build()
        .unwrap();
    let page = browser
        .get(authorize_url_of(base, tenant, scope))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let page = page.text().await.unwrap();
    let consent = sign_in(&browser, base, &page, "alice", PASSWORD).await;
    assert_eq!(consent.status(), 200);
    let consent = consent.text().await.unwrap();
    let scopes: Vec<&str> = scope.split(' ').collect();
    let response = allow(&browser, base, &consent, ALPHA, &scopes).await;
    assert_eq!(response.status(), 302, "consent did not redirect");
    param(&location_params(&response).1, "code")
        .expect("a code")
        .to_owned()
}

/// `POST {base}/oauth/token` with form fields.
pub async fn token_request(
    http: &reqwest::Client,
    base: &str,
    fields: &[(&str, &str)],
) -> reqwest::Response {
    let url = format!("{base}/oauth/token");
    http.post(url).form(fields).send().await.unwrap()
}

/// Exchanges a code of `spa` at the node `base`; the JSON body (asserting 200).
pub async fn exchange(http: &reqwest::Client, base: &str, code: &str) -> serde_json::Value {
    let fields = [
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", REDIRECT_URI),
        ("code_verifier", VERIFIER),
        ("client_id", CLIENT_ID),
    ];
    let response = token_request(http, base, &fields).await;
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

/// `grant_type=refresh_token` of `spa` at the node `base`.
pub async fn refresh(http: &reqwest::Client, base: &str, token: &str) -> reqwest::Response {
    let fields = [
        ("grant_type", "refresh_token"),
        ("refresh_token", token),
        ("client_id", CLIENT_ID),
    ];
    token_request(http, base, &fields).await
}

/// `GET {base}/oauth/userinfo` with a bearer token.
pub async fn userinfo(http: &reqwest::Client, base: &str, access_token: &str) -> reqwest::Response {
    let url = format!("{base}/oauth/userinfo");
    http.get(url)
        .bearer_auth(access_token)
        .send()
        .await
        .unwrap()
}

/// `POST {api}/api` with a GraphQL query and a bearer token.
pub async fn graphql(
    http: &reqwest::Client,
    api: &str,
    access_token: &str,
    query: &str,
) -> reqwest::Response {
    let url = format!("{api}/api");
    http.post(url)
        .bearer_auth(access_token)
        .json(&serde_json::json!({ "query": query }))
        .send()
        .await
        .unwrap()
}

/// The `kid`s of the node's `/oauth/jwks`, in order.
pub async fn jwks_kids(http: &reqwest::Client, base: &str) -> Vec<String> {
    let response = http.get(format!("{base}/oauth/jwks")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let body: serde_json::Value = response.json().await.unwrap();
    body["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kid"].as_str().unwrap().to_owned())
        .collect()
}
