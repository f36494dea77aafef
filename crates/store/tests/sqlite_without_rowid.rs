//! Migration 0020 builds SQLite's grants, refresh tokens and authorization codes again as
//! `WITHOUT ROWID` tables: a database written before it keeps every row, column for column,
//! with its indexes and its foreign keys (the refresh tokens still go with their grant).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::str::FromStr;

use sqlx::migrate::Migrator;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use sqlx::{Connection, Executor, Row};
use store::testing::TestDatabase;
use store::Store;

const REBUILT: [&str; 3] = ["grants", "refresh_tokens", "authorization_codes"];

/// A database migrated up to the migration before 0020, as a server of that version left it.
async fn migrated_before_the_rebuild(url: &str) -> SqliteConnection {
    let all = concat!(env!("CARGO_MANIFEST_DIR"), "/migrations/sqlite");
    let earlier = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(all).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        let version: u32 = name[..4].parse().unwrap();
        if version < 20 {
            std::fs::copy(&path, earlier.path().join(&name)).unwrap();
        }
    }
    let options = SqliteConnectOptions::from_str(url)
        .unwrap()
        .create_if_missing(true)
        .foreign_keys(true);
    let mut conn = SqliteConnection::connect_with(&options).await.unwrap();
    Migrator::new(earlier.path())
        .await
        .unwrap()
        .run(&mut conn)
        .await
        .unwrap();
    conn
}

const ROWS: &str = "
    INSERT INTO tenants (tenant_id, name, created_at) VALUES ('t', 'T', 1);
    INSERT INTO clients (tenant_id, client_id, name, client_type, secret_hash, redirect_uris,
        scopes, created_at)
        VALUES ('t', 'app', 'App', 'public', NULL, '[]', 'openid', 1);
    INSERT INTO users (tenant_id, user_id, username, password_hash, name, email, created_at)
        VALUES ('t', 'u1', 'ann', '$argon2id$x', 'Ann', 'ann@example.com', 1);
    INSERT INTO grants (tenant_id, grant_id, client_id, user_id, organization_guid, scope,
        auth_time, created_at, revoked_at, revoked_reason, sid, amr, dpop_jkt)
        VALUES ('t', 'g1', 'app', 'u1', 'org', 'openid jobs', 10, 11, NULL, NULL, 's1', 'pwd',
                'jkt'),
               ('t', 'g2', 'app', 'u1', 'org', 'openid', 12, 13, 14, 'replay', NULL, NULL, NULL);
    INSERT INTO refresh_tokens (tenant_id, token_hash, grant_id, created_at, expires_at,
        consumed_at, successor_hash, retried_at)
        VALUES ('t', x'01', 'g1', 20, 30, 21, x'02', 22),
               ('t', x'02', 'g1', 21, 31, NULL, NULL, NULL),
               ('t', x'03', 'g2', 23, 33, NULL, NULL, NULL);
    INSERT INTO authorization_codes (tenant_id, code_hash, client_id, redirect_uri, user_id,
        organization_guid, scope, nonce, code_challenge, auth_time, created_at, expires_at,
        redeemed_at, grant_id, sid, amr)
        VALUES ('t', x'0a', 'app', 'https://app/cb', 'u1', 'org', 'openid', 'n', 'ch', 10, 11,
                71, 12, 'g1', 's1', 'pwd'),
               ('t', x'0b', 'app', 'https://app/cb', 'u1', 'org', 'openid', NULL, 'ch', 10, 11,
                71, NULL, NULL, NULL, NULL);
";

/// Every row of a table, each column as text (`quote()`: types and NULLs tell apart).
async fn dump(conn: &mut SqliteConnection, table: &str) -> Vec<String> {
    let columns: Vec<String> =
        sqlx::query(&format!("SELECT name FROM pragma_table_info('{table}')"))
            .fetch_all(&mut *conn)
            .await
            .unwrap()
            .iter()
            .map(|row| {
                format!(
                    "{}=' || quote({})",
                    row.get::<String, _>(0),
                    row.get::<String, _>(0)
                )
            })
            .collect();
    let select = format!("SELECT '{} FROM {table} ORDER BY 1", columns.join(" || ' "));
    sqlx::query(&select)
        .fetch_all(&mut *conn)
        .await
        .unwrap()
        .iter()
        .map(|row| row.get::<String, _>(0))
        .collect()
}

/// The table's indexes by name, the primary key's own left out (a rowid table has one).
async fn indexes(conn: &mut SqliteConnection, table: &str) -> Vec<String> {
    sqlx::query(&format!(
        "SELECT name FROM pragma_index_list('{table}') WHERE origin = 'c' ORDER BY name"
    ))
    .fetch_all(&mut *conn)
    .await
    .unwrap()
    .iter()
    .map(|row| row.get::<String, _>(0))
    .collect()
}

#[tokio::test]
async fn the_rebuilt_tables_keep_every_row_index_and_foreign_key() {
    let db = TestDatabase::sqlite();
    let mut conn = migrated_before_the_rebuild(&db.url).await;
    conn.execute(ROWS).await.unwrap();
    let mut before = Vec::new();
    for table in REBUILT {
        before.push((
            dump(&mut conn, table).await,
            indexes(&mut conn, table).await,
        ));
    }
    conn.close().await.unwrap();

    // The store migrates what is left: 0020.
    Store::connect(&db.url).await.unwrap().close().await;

    let options = SqliteConnectOptions::from_str(&db.url)
        .unwrap()
        .foreign_keys(true);
    let mut conn = SqliteConnection::connect_with(&options).await.unwrap();
    for (table, (rows, names)) in REBUILT.iter().zip(&before) {
        assert_eq!(&dump(&mut conn, table).await, rows, "{table}'s rows");
        assert_eq!(&indexes(&mut conn, table).await, names, "{table}'s indexes");
        let sql: String = sqlx::query_scalar("SELECT sql FROM sqlite_master WHERE name = $1")
            .bind(table)
            .fetch_one(&mut conn)
            .await
            .unwrap();
        assert!(sql.ends_with("WITHOUT ROWID"), "{table}: {sql}");
    }
    assert_eq!(dump(&mut conn, "refresh_tokens").await.len(), 3);
    let left: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE name LIKE '%kept' OR name LIKE '%rebuilt'",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    assert!(left.is_empty(), "working tables left behind: {left:?}");
    let broken = sqlx::query("PRAGMA foreign_key_check")
        .fetch_all(&mut conn)
        .await
        .unwrap();
    assert!(broken.is_empty(), "rows without their parent");

    // The refresh tokens still reference their grant: they go with it, and only they.
    conn.execute("DELETE FROM grants WHERE tenant_id = 't' AND grant_id = 'g1'")
        .await
        .unwrap();
    let tokens: Vec<Vec<u8>> =
        sqlx::query_scalar("SELECT token_hash FROM refresh_tokens ORDER BY token_hash")
            .fetch_all(&mut conn)
            .await
            .unwrap();
    assert_eq!(tokens, vec![vec![3u8]]);
    // And a grant still needs its user and client.
    let orphan = conn
        .execute(
            "INSERT INTO grants (tenant_id, grant_id, client_id, user_id, organization_guid, \
             scope, auth_time, created_at) VALUES ('t', 'g3', 'app', 'nobody', 'org', 'openid', \
             1, 1)",
        )
        .await;
    assert!(orphan.is_err(), "a grant of no user was written");
}
