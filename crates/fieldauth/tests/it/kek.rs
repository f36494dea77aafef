//! Keys encrypted at rest (docs/deployment.md, Encryption of keys at rest): with a key
//! encryption key (KEK) the private keys in `signing_keys` are sealed, a node without the
//! KEK refuses to start, and `keys rewrap` moves them to a new KEK while nodes that hold both
//! keep signing with the same `kid`.

use std::process::{Command, Stdio};

use store::testing::TestDatabase;

use crate::helpers::{assert_ok, assert_refused, cli, json_output, on_both_backends};
use crate::node_support::{code_at, exchange, jwks_kids, prepare, userinfo, Cluster};

on_both_backends!(
    a_start_with_a_kek_seals_the_keys_and_a_start_without_it_fails,
    rewrap_keeps_the_kid_signing_and_tokens_verify_on_either_side,
);

/// `keys new-kek --out FILE --json`: the file's path and its KEK id.
fn new_kek(db: &TestDatabase, dir: &tempfile::TempDir, name: &str) -> (String, String) {
    let path = dir.path().join(name).display().to_string();
    let made = json_output(&cli(
        db,
        &["keys", "new-kek", "--out", &path, "--json"],
        None,
    ));
    (path, made["kek_id"].as_str().unwrap().to_owned())
}

/// Each stored key: its kid and the bytes in `private_key`, read with sqlx as an operator
/// would.
async fn stored_keys(db: &TestDatabase) -> Vec<(String, Vec<u8>)> {
    let pool = sqlx::AnyPool::connect(&db.url).await.unwrap();
    let rows = sqlx::query_as("SELECT kid, private_key FROM signing_keys ORDER BY seq")
        .fetch_all(&pool)
        .await
        .unwrap();
    pool.close().await;
    rows
}

/// The stored bytes are the envelope of `kek_id`, and not a PKCS#8 key.
fn assert_sealed_by(keys: &[(String, Vec<u8>)], kek_id: &str) {
    for (kid, bytes) in keys {
        assert!(
            jose::SigningKey::from_pkcs8(kid, bytes).is_err(),
            "{kid} is stored as PKCS#8"
        );
        assert_eq!(&bytes[..4], b"FAS\x01", "{kid}");
        let id: String = bytes[4..12].iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(id, kek_id, "{kid}");
    }
}

/// `fieldauth serve` with `args` that must fail at start: its last stderr line.
fn failed_start(db: &TestDatabase, args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_fieldauth"))
        .args(["--database-url", &db.url, "serve"])
        .args([
            "--auth-listen",
            "127.0.0.1:0",
            "--api-listen",
            "127.0.0.1:0",
        ])
        .args(args)
        .env("FIELDAUTH_ADMIN_LISTEN", "127.0.0.1:0")
        .env("FIELDAUTH_LOG", "error")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    stderr.trim_end().to_owned()
}

/// The JWKS document `base` serves.
async fn jwks(http: &reqwest::Client, base: &str) -> serde_json::Value {
    let response = http.get(format!("{base}/oauth/jwks")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

/// A token from `node`'s flow: its access token and the kid that signed it.
async fn access_token(cluster: &Cluster, node: usize) -> (String, String) {
    let base = &cluster.node(node).auth;
    let code = code_at(base, "openid").await;
    let tokens = exchange(&cluster.http, base, &code).await;
    let token = tokens["access_token"].as_str().unwrap().to_owned();
    let kid = crate::flow::jwt_parts(&token).0["kid"]
        .as_str()
        .unwrap()
        .to_owned();
    (token, kid)
}

/// Issue 21 §3: the first start with a KEK seals the keys stored in clear (not PKCS#8 any
/// more, the kid unchanged), the node signs as before, a start without the KEK or with
/// another one fails with one line naming the KEK, and `keys rotate` needs the KEK too and
/// seals the new key. Without a KEK, `serve` warns that keys are stored in clear.
async fn a_start_with_a_kek_seals_the_keys_and_a_start_without_it_fails(db: TestDatabase) {
    let dir = tempfile::tempdir().unwrap();
    prepare(&db).await;
    let clear = stored_keys(&db).await;
    assert!(jose::SigningKey::from_pkcs8(&clear[0].0, &clear[0].1).is_ok());
    let (kek, kek_id) = new_kek(&db, &dir, "kek");

    let cluster = Cluster::start(db, 1, &[]).await;
    assert!(
        cluster
            .node(0)
            .logs()
            .contains("signing keys are stored in clear"),
        "no warning without a KEK"
    );
    let Cluster { nodes, db, .. } = cluster;
    drop(nodes);

    let cluster = Cluster::start(db, 1, &["--key-encryption-key-file", &kek]).await;
    assert!(!cluster.node(0).logs().contains("stored in clear"));
    let sealed = stored_keys(&cluster.db).await;
    assert_eq!(sealed.len(), 1);
    assert_eq!(sealed[0].0, clear[0].0, "the kid is unchanged");
    assert_sealed_by(&sealed, &kek_id);
    let (token, kid) = access_token(&cluster, 0).await;
    assert_eq!(kid, clear[0].0);
    let base = cluster.node(0).auth.clone();
    assert_eq!(userinfo(&cluster.http, &base, &token).await.status(), 200);

    // The CLI's rotation needs the KEK as well, and seals what it makes.
    let db = &cluster.db;
    let refused = cli(db, &["keys", "rotate"], None);
    assert_refused(
        &refused,
        &format!("error: cannot rotate the signing key (--key-encryption-key-file): signing key {kid}: sealed by the key encryption key {kek_id}, which was not given"),
    );
    let rotated = cli(
        db,
        &["keys", "rotate", "--key-encryption-key-file", &kek],
        None,
    );
    assert_ok(&rotated);
    let keys = stored_keys(db).await;
    assert_eq!(keys.len(), 2);
    assert_sealed_by(&keys, &kek_id);

    let newest = &keys[1].0;

    let Cluster { nodes, db, .. } = cluster;
    drop(nodes);
    let line = failed_start(&db, &[]);
    assert_eq!(
        line,
        format!("error: cannot load the signing keys (--key-encryption-key-file): signing key {newest}: sealed by the key encryption key {kek_id}, which was not given")
    );
    let (other, _) = new_kek(&db, &dir, "other");
    let line = failed_start(&db, &["--key-encryption-key-file", &other]);
    assert!(
        line.ends_with(&format!(
            "sealed by the key encryption key {kek_id}, which was not given"
        )),
        "{line}"
    );
    // A KEK file of the wrong shape names its flag and stops the start.
    std::fs::write(dir.path().join("short"), [7u8; 31]).unwrap();
    let short = dir.path().join("short").display().to_string();
    let line = failed_start(&db, &["--key-encryption-key-file", &short]);
    assert!(
        line.starts_with(&format!("error: --key-encryption-key-file {short:?}: a key encryption key file holds exactly 32 bytes")),
        "{line}"
    );
}

/// Issue 21 §3: `keys rewrap` re-seals every key under the new KEK without downtime. A node
/// given the new KEK and the previous one signs with the same kid before and after, the JWKS
/// does not change, a token issued before verifies after, and a node started with the new
/// KEK alone serves the same key; the old KEK alone no longer opens it.
async fn rewrap_keeps_the_kid_signing_and_tokens_verify_on_either_side(db: TestDatabase) {
    let dir = tempfile::tempdir().unwrap();
    prepare(&db).await;
    let (old, old_id) = new_kek(&db, &dir, "old");
    let (new, new_id) = new_kek(&db, &dir, "new");
    // From clear to the old KEK: rewrap without a current KEK seals keys stored in clear.
    let sealed = json_output(&cli(
        &db,
        &[
            "keys",
            "rewrap",
            "--new-key-encryption-key-file",
            &old,
            "--json",
        ],
        None,
    ));
    assert_eq!(sealed["keys_sealed"], 1);
    assert_sealed_by(&stored_keys(&db).await, &old_id);

    let both = [
        "--key-encryption-key-file",
        new.as_str(),
        "--previous-key-encryption-key-file",
        old.as_str(),
    ];
    let cluster = Cluster::start(db, 1, &both).await;
    let base = cluster.node(0).auth.clone();
    let published = jwks(&cluster.http, &base).await;
    let (before, kid) = access_token(&cluster, 0).await;
    assert_eq!(
        jwks_kids(&cluster.http, &base).await,
        std::slice::from_ref(&kid)
    );
    // The node left the keys under the old KEK: only rewrap moves them.
    assert_sealed_by(&stored_keys(&cluster.db).await, &old_id);

    let rewrapped = json_output(&cli(
        &cluster.db,
        &[
            "keys",
            "rewrap",
            "--key-encryption-key-file",
            &old,
            "--new-key-encryption-key-file",
            &new,
            "--json",
        ],
        None,
    ));
    assert_eq!(rewrapped["kek_id"], new_id.as_str());
    assert_eq!(rewrapped["keys_sealed"], 1);
    let keys = stored_keys(&cluster.db).await;
    assert_eq!(keys[0].0, kid);
    assert_sealed_by(&keys, &new_id);

    // The node reloads every 30 s by default but its kids did not change: it keeps the keys
    // it holds, and a node reading them now opens them under the new KEK.
    assert_eq!(jwks(&cluster.http, &base).await, published);
    assert_eq!(userinfo(&cluster.http, &base, &before).await.status(), 200);
    let (after, kid_after) = access_token(&cluster, 0).await;
    assert_eq!(kid_after, kid);
    assert_eq!(userinfo(&cluster.http, &base, &after).await.status(), 200);

    // Rewrapping again with the old KEK as current: the keys are already under the new one.
    let again = json_output(&cli(
        &cluster.db,
        &[
            "keys",
            "rewrap",
            "--key-encryption-key-file",
            &old,
            "--new-key-encryption-key-file",
            &new,
            "--json",
        ],
        None,
    ));
    assert_eq!(again["keys_sealed"], 0);

    let Cluster { nodes, db, .. } = cluster;
    drop(nodes);
    let line = failed_start(&db, &["--key-encryption-key-file", &old]);
    assert!(
        line.ends_with(&format!(
            "sealed by the key encryption key {new_id}, which was not given"
        )),
        "{line}"
    );
    // A node with the new KEK alone publishes the same public key (so the tokens signed
    // before and after verify against it; it is another issuer URL here, so its userinfo
    // would refuse them for their `iss`) and signs with the same kid.
    let cluster = Cluster::start(db, 1, &["--key-encryption-key-file", &new]).await;
    let base = cluster.node(0).auth.clone();
    assert_eq!(jwks(&cluster.http, &base).await, published);
    let (token, kid_now) = access_token(&cluster, 0).await;
    assert_eq!(kid_now, kid);
    assert_eq!(userinfo(&cluster.http, &base, &token).await.status(), 200);
}

/// `keys new-kek` writes a 0600 file of 43 base64url characters and a newline, and never
/// overwrites a file.
#[test]
fn new_kek_writes_an_owner_only_file_and_never_overwrites() {
    let db = TestDatabase::sqlite();
    let dir = tempfile::tempdir().unwrap();
    let (path, id) = new_kek(&db, &dir, "kek");
    assert_eq!(id.len(), 16);
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.len(), 44);
    assert!(text.ends_with('\n'));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let refused = cli(&db, &["keys", "new-kek", "--out", &path], None);
    assert_refused(&refused, &format!("error: cannot create --out {path:?}: "));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}
