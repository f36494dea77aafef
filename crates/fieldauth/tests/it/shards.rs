//! `--shards`: a tenant placed on another database is served from there, and its flow writes
//! nothing to the default database (which keeps the signing keys).

use std::io::Write;

use store::testing::TestDatabase;
use store::{Store, TenantId};

use crate::node_support::{code_at, exchange, prepare, refresh, Cluster};

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
    let hash = oauth::secret::hash_secret(secret);
    let shard = Store::connect(&shard_db.url).await.unwrap();
    let default = Store::connect(&cluster.db.url).await.unwrap();
    let used = shard.tenant(&acme).find_refresh_token(&hash).await.unwrap();
    assert!(
        used.is_some_and(|t| t.consumed_at.is_some()),
        "the shard holds the rotated token"
    );
    assert!(default
        .tenant(&acme)
        .find_refresh_token(&hash)
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
