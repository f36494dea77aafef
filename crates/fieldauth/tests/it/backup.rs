//! Backups of the embedded default (docs/deployment.md, Backups and restore): `fieldauth
//! backup --to FILE` copies a live SQLite database while a server writes to it, and the copy
//! is whole and serves the tenant's tokens; PostgreSQL is pointed to pg_dump.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use sqlx::Connection;
use store::testing::TestDatabase;
use store::{NewUser, Store, TenantId};

use crate::flow::TENANT;
use crate::helpers::{assert_refused, cli, json_output};
use crate::node_support::{code_at, exchange, prepare, refresh, userinfo, Cluster};

/// The path of a SQLite test database's file (which does not exist until it is opened).
fn file_of(db: &TestDatabase) -> String {
    db.url.strip_prefix("sqlite://").unwrap().to_owned()
}

/// Users in the tenant, counted in the database at `url`.
async fn users_in(url: &str) -> i64 {
    let mut connection = sqlx::SqliteConnection::connect(url).await.unwrap();
    let count = sqlx::query_scalar("SELECT COUNT(*) FROM users")
        .fetch_one(&mut connection)
        .await
        .unwrap();
    connection.close().await.unwrap();
    count
}

/// Issue 21 §4: a backup taken while users are created and a server runs opens, passes
/// `PRAGMA integrity_check`, holds every user created before it started, is readable by its
/// owner alone, and a server started on it serves the tenant's tokens: a refresh token
/// issued before the backup refreshes there, and the new access token verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_under_writes_is_whole_and_a_server_on_it_serves_the_tenants_tokens() {
    let db = TestDatabase::sqlite();
    prepare(&db).await;
    let cluster = Cluster::start(db, 1, &[]).await;
    let base = cluster.node(0).auth.clone();
    let code = code_at(&base, "openid offline_access").await;
    let tokens = exchange(&cluster.http, &base, &code).await;
    let refresh_token = tokens["refresh_token"].as_str().unwrap().to_owned();

    // Writes from another connection all along, as a busy server's would be.
    let store = Store::connect(&cluster.db.url).await.unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let created = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let writer = tokio::spawn({
        let (store, stop, created) = (store.clone(), stop.clone(), created.clone());
        async move {
            let tenant = TenantId::parse(TENANT).unwrap();
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                let (id, name) = (
                    format!("20000000-0000-4000-8000-{n:012}"),
                    format!("user{n}"),
                );
                let user = NewUser {
                    user_id: &id,
                    username: &name,
                    password_hash: "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2g",
                    name: "Load",
                    email: "load@example.com",
                };
                store.tenant(&tenant).create_user(&user, 0).await.unwrap();
                n += 1;
                created.store(n, Ordering::Relaxed);
            }
        }
    });
    while created.load(Ordering::Relaxed) < 20 {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }

    let restored = TestDatabase::sqlite();
    let copy = file_of(&restored);
    let before = created.load(Ordering::Relaxed) as i64;
    let db_url = cluster.db.url.clone();
    let output = tokio::task::spawn_blocking({
        let copy = copy.clone();
        move || {
            std::process::Command::new(env!("CARGO_BIN_EXE_fieldauth"))
                .args(["--database-url", &db_url, "backup", "--to", &copy, "--json"])
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    let during = created.load(Ordering::Relaxed) as i64;
    stop.store(true, Ordering::Relaxed);
    writer.await.unwrap();
    store.close().await;
    let report = json_output(&output);
    assert_eq!(report["file"], copy.as_str());
    assert!(during > before, "no write while the backup ran");

    let mut connection = sqlx::SqliteConnection::connect(&restored.url)
        .await
        .unwrap();
    let check: Vec<String> = sqlx::query_scalar("PRAGMA integrity_check")
        .fetch_all(&mut connection)
        .await
        .unwrap();
    connection.close().await.unwrap();
    assert_eq!(check, ["ok"]);
    // alice, and the users created before the copy began; at most those made until it ended.
    let users = users_in(&restored.url).await;
    assert!(
        (1 + before..=1 + during + 1).contains(&users),
        "{users} users in the copy; {before} created before, {during} by its end"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&copy).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    // The restore: a server started on the copy.
    let restored = Cluster::start(restored, 1, &[]).await;
    let base = restored.node(0).auth.clone();
    let response = refresh(&restored.http, &base, &refresh_token).await;
    assert_eq!(response.status(), 200);
    let refreshed: serde_json::Value = response.json().await.unwrap();
    let access_token = refreshed["access_token"].as_str().unwrap();
    assert_eq!(
        userinfo(&restored.http, &base, access_token).await.status(),
        200
    );
    drop(cluster);
}

/// The backup never replaces a file, and a database that does not exist is an error, not a
/// new empty copy; the file it would have made is not left behind.
#[test]
fn a_backup_refuses_an_existing_file_and_a_missing_database() {
    let db = TestDatabase::sqlite();
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("copy.db").display().to_string();
    let refused = cli(&db, &["backup", "--to", &missing], None);
    assert_refused(
        &refused,
        "error: cannot copy the database (--database-url): ",
    );
    assert!(!std::path::Path::new(&missing).exists());
    assert!(
        !std::path::Path::new(&file_of(&db)).exists(),
        "created the database"
    );

    let existing = dir.path().join("existing").display().to_string();
    std::fs::write(&existing, b"keep").unwrap();
    let created = cli(&db, &["tenant", "list"], None);
    assert_eq!(created.status.code(), Some(0));
    let refused = cli(&db, &["backup", "--to", &existing], None);
    assert_refused(
        &refused,
        &format!("error: cannot create --to {existing:?}: "),
    );
    assert_eq!(std::fs::read(&existing).unwrap(), b"keep");
}

/// On PostgreSQL the command exits 1 and points to pg_dump.
#[tokio::test]
async fn a_backup_of_postgres_points_to_pg_dump() {
    let Some(db) = TestDatabase::postgres().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().join("copy").display().to_string();
    let refused = cli(&db, &["backup", "--to", &to], None);
    assert_refused(
        &refused,
        "error: backup copies an SQLite database; for PostgreSQL use pg_dump -Fc",
    );
    assert!(!std::path::Path::new(&to).exists());
}
