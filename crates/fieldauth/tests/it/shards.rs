//! `--shards`: a tenant placed on another database is served from there, and its flow writes
//! nothing to the default database (which keeps the signing keys) nor to another shard.

use std::collections::BTreeMap;
use std::io::Write;

use sqlx::Connection;
use store::testing::TestDatabase;
use store::{Store, TenantId};

use crate::helpers::{cli, json_output};
use crate::node_support::{code_at, code_of, exchange, prepare, prepare_tenant, refresh, Cluster};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_on_a_shard_is_served_from_it_and_touches_nothing_else() {
    let Some(default_db) = TestDatabase::postgres().await else {
        return;
    };
    let Some(shard_db) = TestDatabase::postgres().await else {
        return;
    };
    // The tenant, its client and its user exist only in the shard.
    prepare(&shard_db).await;
    let mut file = tempfile::NamedTempFile::new().unwrap();
    write!(
        file,
        "[shards]\neast = \"{}\"\n\n[tenants]\nacme = \"east\"\n",
        shard_db.url
    )
    .unwrap();
    let path = file.path().to_str().unwrap().to_owned();
    let cluster = Cluster::start(default_db, 1, &["--shards", &path]).await;
    let node = cluster.node(0);
    let code = code_at(&node.auth, "openid offline_access jobs").await;
    let tokens = exchange(&cluster.http, &node.auth, &code).await;
    let first = tokens["refresh_token"].as_str().unwrap().to_owned();
    let response = refresh(&cluster.http, &node.auth, &first).await;
    assert_eq!(response.status(), 200);

    let acme = TenantId::parse("acme").unwrap();
    let secret = first.split_once('.').unwrap().1;
    let key = oauth::token::refresh_token::RefreshTokenKey::of(secret);
    let shard = Store::connect(&shard_db.url).await.unwrap();
    let default = Store::connect(&cluster.db.url).await.unwrap();
    let used = shard
        .tenant(&acme)
        .find_refresh_token(key.as_bytes())
        .await
        .unwrap();
    assert!(
        used.is_some_and(|t| t.consumed_at.is_some()),
        "the shard holds the rotated token"
    );
    assert!(default
        .tenant(&acme)
        .find_refresh_token(key.as_bytes())
        .await
        .unwrap()
        .is_none());
    let kinds = |events: Vec<store::AuditEvent>| -> Vec<String> {
        events.into_iter().map(|e| e.kind).collect()
    };
    assert_eq!(
        kinds(shard.tenant(&acme).audit_events(10).await.unwrap()),
        ["signin.succeeded", "consent.given"]
    );
    assert!(default
        .tenant(&acme)
        .audit_events(10)
        .await
        .unwrap()
        .is_empty());
    assert!(default.list_tenants().await.unwrap().is_empty());
    // The node made its first signing key in the default database.
    assert_eq!(default.active_signing_keys().await.unwrap().len(), 1);
    shard.close().await;
    default.close().await;
}

/// Three PostgreSQL databases (default, east, west) and a shard file placing `acme` on east
/// and `globex` on west; `None` when PostgreSQL is absent and the run is not strict.
async fn three_databases() -> Option<(
    TestDatabase,
    TestDatabase,
    TestDatabase,
    tempfile::NamedTempFile,
)> {
    let default_db = TestDatabase::postgres().await?;
    let east = TestDatabase::postgres().await?;
    let west = TestDatabase::postgres().await?;
    let mut file = tempfile::NamedTempFile::new().unwrap();
    write!(
        file,
        "[shards]\neast = \"{}\"\nwest = \"{}\"\n\n[tenants]\nacme = \"east\"\nglobex = \"west\"\n",
        east.url, west.url
    )
    .unwrap();
    Some((default_db, east, west, file))
}

/// Rows per (table, tenant) of every table with a `tenant_id` column, read directly.
async fn tenant_rows(db: &TestDatabase) -> BTreeMap<(String, String), i64> {
    let mut conn = sqlx::PgConnection::connect(&db.url).await.unwrap();
    let tables: Vec<(String,)> = sqlx::query_as(
        "SELECT table_name::text FROM information_schema.columns \
         WHERE column_name = 'tenant_id' AND table_schema = current_schema() \
         ORDER BY table_name",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    assert!(tables.len() > 20, "the tenant tables: {tables:?}");
    let mut rows = BTreeMap::new();
    for (table,) in tables {
        let sql = format!("SELECT tenant_id, count(*) FROM {table} GROUP BY tenant_id");
        let counts: Vec<(String, i64)> = sqlx::query_as(&sql).fetch_all(&mut conn).await.unwrap();
        for (tenant, count) in counts {
            rows.insert((table.clone(), tenant), count);
        }
    }
    conn.close().await.unwrap();
    rows
}

/// Rows of a table without a tenant (the signing keys and their events).
async fn count(db: &TestDatabase, table: &str) -> i64 {
    let mut conn = sqlx::PgConnection::connect(&db.url).await.unwrap();
    let (n,): (i64,) = sqlx::query_as(&format!("SELECT count(*) FROM {table}"))
        .fetch_one(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    n
}

/// What one flow (sign-in, consent, exchange, one refresh) leaves of `tenant`, and the
/// records `prepare_tenant` seeded, table by table.
fn one_flow_of(tenant: &str) -> BTreeMap<(String, String), i64> {
    [
        ("audit_events", 2),
        ("authorization_codes", 1),
        // The anonymous request's place in its address's quota (migration 0007).
        ("authorization_request_quotas", 1),
        ("authorization_requests", 1),
        ("browser_sessions", 1),
        ("clients", 1),
        ("grants", 1),
        ("memberships", 2),
        // One data version per organization, made with it (migration 0004).
        ("organization_data_versions", 2),
        ("organizations", 2),
        ("refresh_tokens", 2),
        // The sign-in's places, the username's and the address's, freed but kept.
        ("signin_failures", 2),
        ("tenants", 1),
        ("users", 1),
    ]
    .into_iter()
    .map(|(table, n)| ((table.to_owned(), tenant.to_owned()), n))
    .collect()
}

/// Two tenants on two shards served by one node at once: each tenant's records, written by
/// its flow, are in its own shard only; the default database keeps only the signing keys.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_tenants_on_two_shards_each_write_only_to_their_own() {
    let Some((default_db, east, west, file)) = three_databases().await else {
        return;
    };
    prepare_tenant(&east, "acme", "Acme").await;
    prepare_tenant(&west, "globex", "Globex").await;
    let path = file.path().to_str().unwrap().to_owned();
    let cluster = Cluster::start(default_db, 1, &["--shards", &path]).await;
    let node = cluster.node(0);
    for tenant in ["acme", "globex"] {
        let code = code_of(&node.auth, tenant, "openid offline_access jobs").await;
        assert!(code.starts_with(&format!("{tenant}.")), "{code}");
        let tokens = exchange(&cluster.http, &node.auth, &code).await;
        let token = tokens["refresh_token"].as_str().unwrap();
        let response = refresh(&cluster.http, &node.auth, token).await;
        assert_eq!(response.status(), 200, "{tenant}");
    }

    assert_eq!(tenant_rows(&east).await, one_flow_of("acme"));
    assert_eq!(tenant_rows(&west).await, one_flow_of("globex"));
    assert_eq!(tenant_rows(&cluster.db).await, BTreeMap::new());
    // The node made the issuer's first key in the default database, and nowhere else.
    assert_eq!(count(&cluster.db, "signing_keys").await, 1);
    assert_eq!(count(&cluster.db, "key_events").await, 1);
    for shard in [&east, &west] {
        assert_eq!(count(shard, "signing_keys").await, 0);
        assert_eq!(count(shard, "key_events").await, 0);
    }

    // `audit list` with the shard file reads each tenant's trail from its shard, and the
    // key events from the default database.
    let kid = jwks_kid(&cluster).await;
    for tenant in ["acme", "globex"] {
        let output = cli(
            &cluster.db,
            &[
                "--shards", &path, "audit", "list", "--tenant", tenant, "--json",
            ],
            None,
        );
        let body = json_output(&output);
        let kinds: Vec<(&str, &str)> = body["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                let who = e["kid"].as_str().or(e["subject"].as_str()).unwrap();
                (e["kind"].as_str().unwrap(), who)
            })
            .collect();
        let alice = crate::node_support::ALICE_SUB;
        assert_eq!(
            kinds,
            [
                ("key.created", kid.as_str()),
                ("signin.succeeded", alice),
                ("consent.given", alice)
            ],
            "{tenant}"
        );
    }
}

async fn jwks_kid(cluster: &Cluster) -> String {
    let kids = crate::node_support::jwks_kids(&cluster.http, &cluster.node(0).auth).await;
    assert_eq!(kids.len(), 1);
    kids[0].clone()
}

/// `tenant create` with `--shards` writes the tenant to its shard only, and `tenant list`
/// shows each tenant once, from the database the map places it in (a copy left behind in
/// the default database after a move is not listed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenant_create_and_list_through_the_cli_follow_the_shard_map() {
    let Some((default_db, east, west, file)) = three_databases().await else {
        return;
    };
    let path = file.path().to_str().unwrap().to_owned();
    for tenant in ["globex", "acme"] {
        let output = cli(
            &default_db,
            &["--shards", &path, "tenant", "create", tenant, "--json"],
            None,
        );
        assert_eq!(json_output(&output)["tenant"], tenant);
    }
    // The tenant's row, and the audit event of its creation, both on its own shard.
    let created = |tenant: &str| {
        BTreeMap::from([
            ((String::from("audit_events"), tenant.to_owned()), 1),
            ((String::from("tenants"), tenant.to_owned()), 1),
        ])
    };
    assert_eq!(tenant_rows(&west).await, created("globex"));
    assert_eq!(tenant_rows(&east).await, created("acme"));
    assert_eq!(tenant_rows(&default_db).await, BTreeMap::new());

    // A stale copy of globex in the default database, as a move would leave it.
    let default = Store::connect(&default_db.url).await.unwrap();
    let globex = TenantId::parse("globex").unwrap();
    default
        .create_tenant(&globex, "Globex (moved)", 0)
        .await
        .unwrap();
    default.close().await;
    let output = cli(
        &default_db,
        &["--shards", &path, "tenant", "list", "--json"],
        None,
    );
    let listed: Vec<(String, String)> = json_output(&output)["tenants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let id = t["tenant"].as_str().unwrap().to_owned();
            (id, t["name"].as_str().unwrap().to_owned())
        })
        .collect();
    let expected =
        [("acme", "acme"), ("globex", "globex")].map(|(id, name)| (id.to_owned(), name.to_owned()));
    assert_eq!(listed, expected);
}
