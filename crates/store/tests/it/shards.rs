//! Several databases behind one store: tenants placed on shards by the shard map, migrations
//! and the first signing key when nodes start together, and the audit trail.

use store::testing::TestDatabase;
use store::{NewAuditEvent, NewClient, ShardMap, Store, StoreError, TenantId};

fn tenant(id: &str) -> TenantId {
    TenantId::parse(id).unwrap()
}

async fn client_count(store: &Store, tenant_id: &TenantId) -> usize {
    store
        .tenant(tenant_id)
        .find_client("web")
        .await
        .unwrap()
        .into_iter()
        .count()
}

/// Each tenant's records go to its own database and nowhere else; the default database keeps
/// the unlisted tenants; listing reads every database.
#[tokio::test]
async fn tenants_live_on_the_shard_the_map_names_and_nowhere_else() {
    let Some(default_db) = TestDatabase::postgres().await else {
        return;
    };
    let shard_db = TestDatabase::sqlite();
    let map = ShardMap {
        shards: [("east".to_owned(), shard_db.url.clone())].into(),
        tenants: [(tenant("acme"), "east".to_owned())].into(),
    };
    let store = Store::connect_sharded(&default_db.url, &map).await.unwrap();
    let (acme, globex) = (tenant("acme"), tenant("globex"));
    store.create_tenant(&acme, "Acme", 1).await.unwrap();
    store.create_tenant(&globex, "Globex", 1).await.unwrap();
    assert_eq!(store.database_name(&acme), "east");
    assert_eq!(store.database_name(&globex), "default");
    let uris = ["https://app.example/cb".to_owned()];
    let scopes = ["openid".to_owned()];
    for t in [&acme, &globex] {
        let client = NewClient {
            client_id: "web",
            name: "Web",
            secret_hash: None,
            redirect_uris: &uris,
            scopes: &scopes,
        };
        store.tenant(t).create_client(&client, 1).await.unwrap();
        let event = NewAuditEvent {
            kind: "signin.failed",
            occurred_at: 2,
            subject: Some("alice"),
            client_id: Some("web"),
            address: Some("192.0.2.1"),
            detail: "wrong username or password",
        };
        store.tenant(t).record_audit_event(&event).await.unwrap();
    }
    let listed: Vec<String> = store
        .list_tenants()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.tenant_id.to_string())
        .collect();
    assert_eq!(listed, ["acme", "globex"]);
    store.close().await;

    // Each database on its own: the rows are where the map put them, and only there.
    let default_only = Store::connect(&default_db.url).await.unwrap();
    let shard_only = Store::connect(&shard_db.url).await.unwrap();
    let ids = |tenants: Vec<store::Tenant>| -> Vec<String> {
        tenants
            .into_iter()
            .map(|t| t.tenant_id.to_string())
            .collect()
    };
    assert_eq!(ids(default_only.list_tenants().await.unwrap()), ["globex"]);
    assert_eq!(ids(shard_only.list_tenants().await.unwrap()), ["acme"]);
    assert_eq!(client_count(&default_only, &acme).await, 0);
    assert_eq!(client_count(&default_only, &globex).await, 1);
    assert_eq!(client_count(&shard_only, &acme).await, 1);
    assert_eq!(client_count(&shard_only, &globex).await, 0);
    let events = shard_only.tenant(&acme).audit_events(10).await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].kind, "signin.failed");
    assert_eq!(events[0].subject.as_deref(), Some("alice"));
    assert!(default_only
        .tenant(&acme)
        .audit_events(10)
        .await
        .unwrap()
        .is_empty());
    default_only.close().await;
    shard_only.close().await;
}

#[tokio::test]
async fn a_tenant_placed_on_an_undefined_shard_stops_start_up() {
    let db = TestDatabase::sqlite();
    let map = ShardMap {
        shards: Default::default(),
        tenants: [(tenant("acme"), "west".to_owned())].into(),
    };
    let error = Store::connect_sharded(&db.url, &map).await.unwrap_err();
    assert!(
        matches!(&error, StoreError::UnknownShard(t, s) if t == "acme" && s == "west"),
        "{error:?}"
    );
}

/// Four nodes starting at once on an empty database: migrations run once (the migrator's
/// lock), and exactly one of their first keys is kept, with one `key.created` event.
#[tokio::test]
async fn nodes_starting_together_migrate_once_and_keep_one_first_key() {
    let Some(db) = TestDatabase::postgres().await else {
        return;
    };
    let starts = (0..4).map(|i| {
        let url = db.url.clone();
        tokio::spawn(async move {
            let store = Store::connect(&url).await.unwrap();
            let kept = store
                .insert_first_signing_key(&format!("kid-{i}"), b"not a real key", 100)
                .await
                .unwrap();
            store.close().await;
            kept
        })
    });
    let mut kept = 0;
    for start in starts.collect::<Vec<_>>() {
        kept += usize::from(start.await.unwrap());
    }
    assert_eq!(kept, 1, "exactly one first key is kept");
    let store = Store::connect(&db.url).await.unwrap();
    assert_eq!(store.active_signing_keys().await.unwrap().len(), 1);
    let events = store.key_events(10).await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].kind, "key.created");
    assert!(
        !store
            .insert_first_signing_key("later", b"not a real key", 200)
            .await
            .unwrap(),
        "a first key is refused once one is active"
    );
    store.close().await;
}
