//! The clients' web origins (migration 0006) and the list the CORS allow-list is built from:
//! every client of every tenant, each read from the database its tenant is placed in.

use store::testing::TestDatabase;
use store::{ClientOrigins, NewClient, ShardMap, Store, TenantId};

fn tenant(id: &str) -> TenantId {
    TenantId::parse(id).unwrap()
}

async fn add_client(store: &Store, tenant_id: &TenantId, client_id: &str, uri: &str, web: &[&str]) {
    let uris = [uri.to_owned()];
    let scopes = ["openid".to_owned()];
    let client = NewClient {
        client_id,
        name: client_id,
        secret_hash: None,
        redirect_uris: &uris,
        scopes: &scopes,
    };
    let web: Vec<String> = web.iter().map(|o| (*o).to_owned()).collect();
    store
        .tenant(tenant_id)
        .create_client_with_web_origins(&client, &web, 1)
        .await
        .unwrap();
}

fn sorted(mut list: Vec<ClientOrigins>) -> Vec<(String, String, Vec<String>, Vec<String>)> {
    list.sort_by(|a, b| (&a.tenant_id, &a.client_id).cmp(&(&b.tenant_id, &b.client_id)));
    list.into_iter()
        .map(|c| {
            (
                c.tenant_id.to_string(),
                c.client_id,
                c.redirect_uris,
                c.web_origins,
            )
        })
        .collect()
}

async fn web_origins_are_stored_and_every_tenants_clients_are_listed(db: TestDatabase) {
    let store = Store::connect(&db.url).await.unwrap();
    let (acme, globex) = (tenant("acme"), tenant("globex"));
    store.create_tenant(&acme, "Acme", 1).await.unwrap();
    store.create_tenant(&globex, "Globex", 1).await.unwrap();
    add_client(
        &store,
        &acme,
        "spa",
        "https://spa.example.com/cb",
        &["https://admin.example.com", "http://127.0.0.1:3000"],
    )
    .await;
    let uris = ["com.example.app:/cb".to_owned()];
    let scopes = ["openid".to_owned()];
    let plain = NewClient {
        client_id: "native",
        name: "Native",
        secret_hash: None,
        redirect_uris: &uris,
        scopes: &scopes,
    };
    store
        .tenant(&globex)
        .create_client(&plain, 1)
        .await
        .unwrap();

    let acme_store = store.tenant(&acme);
    assert_eq!(
        acme_store.find_client_web_origins("spa").await.unwrap(),
        Some(vec![
            "https://admin.example.com".to_owned(),
            "http://127.0.0.1:3000".to_owned()
        ])
    );
    assert_eq!(
        store
            .tenant(&globex)
            .find_client_web_origins("native")
            .await
            .unwrap(),
        Some(vec![])
    );
    assert_eq!(
        acme_store.find_client_web_origins("native").await.unwrap(),
        None
    );
    assert_eq!(
        sorted(store.list_client_origins().await.unwrap()),
        [
            (
                "acme".to_owned(),
                "spa".to_owned(),
                vec!["https://spa.example.com/cb".to_owned()],
                vec![
                    "https://admin.example.com".to_owned(),
                    "http://127.0.0.1:3000".to_owned()
                ],
            ),
            (
                "globex".to_owned(),
                "native".to_owned(),
                vec!["com.example.app:/cb".to_owned()],
                vec![],
            ),
        ]
    );
    store.close().await;
}

#[tokio::test]
async fn sqlite_web_origins_are_stored_and_every_tenants_clients_are_listed() {
    web_origins_are_stored_and_every_tenants_clients_are_listed(TestDatabase::sqlite()).await;
}

#[tokio::test]
async fn postgres_web_origins_are_stored_and_every_tenants_clients_are_listed() {
    let Some(db) = TestDatabase::postgres().await else {
        return;
    };
    web_origins_are_stored_and_every_tenants_clients_are_listed(db).await;
}

/// With shards, the list reads every database, and a tenant's clients only from the database
/// the map places it in: a copy left in the default database after a move is not read.
#[tokio::test]
async fn sharded_list_reads_every_database_and_ignores_a_moved_tenants_copy() {
    let (default_db, shard_db) = (TestDatabase::sqlite(), TestDatabase::sqlite());
    let (acme, globex) = (tenant("acme"), tenant("globex"));
    // The copy of acme left behind in the default database.
    let default_only = Store::connect(&default_db.url).await.unwrap();
    default_only.create_tenant(&acme, "Acme", 1).await.unwrap();
    add_client(
        &default_only,
        &acme,
        "stale",
        "https://stale.example.com/cb",
        &[],
    )
    .await;
    default_only.close().await;

    let map = ShardMap {
        shards: [("east".to_owned(), shard_db.url.clone())].into(),
        tenants: [(acme.clone(), "east".to_owned())].into(),
    };
    let store = Store::connect_sharded(&default_db.url, &map).await.unwrap();
    store.create_tenant(&acme, "Acme", 1).await.unwrap();
    store.create_tenant(&globex, "Globex", 1).await.unwrap();
    add_client(&store, &acme, "spa", "https://spa.example.com/cb", &[]).await;
    add_client(
        &store,
        &globex,
        "web",
        "https://web.example.com/cb",
        &["https://admin.example.com"],
    )
    .await;
    let listed: Vec<(String, String)> = sorted(store.list_client_origins().await.unwrap())
        .into_iter()
        .map(|(tenant, client, _, _)| (tenant, client))
        .collect();
    assert_eq!(
        listed,
        [
            ("acme".to_owned(), "spa".to_owned()),
            ("globex".to_owned(), "web".to_owned())
        ]
    );
    store.close().await;
}

/// Migration 0019: each database's mark changes with every insert, update and delete of a
/// client (a tenant's delete, whose clients go with it, included), and with nothing else, so
/// the CORS list is read again exactly when it may have changed.
async fn the_mark_changes_with_every_change_of_a_client_and_only_then(db: TestDatabase) {
    let store = Store::connect(&db.url).await.unwrap();
    let acme = tenant("acme");
    let mut marks = vec![store.client_changes().await.unwrap()];
    fn changed(marks: &mut Vec<Vec<i64>>, now: Vec<i64>) -> bool {
        let changed = marks.last() != Some(&now);
        marks.push(now);
        changed
    }
    assert_eq!(marks[0].len(), 1, "one database, one mark");

    store.create_tenant(&acme, "Acme", 1).await.unwrap();
    assert!(
        !changed(&mut marks, store.client_changes().await.unwrap()),
        "a tenant"
    );
    add_client(&store, &acme, "spa", "https://spa.example.com/cb", &[]).await;
    assert!(
        changed(&mut marks, store.client_changes().await.unwrap()),
        "created"
    );
    let uris = ["https://spa.example.com/other".to_owned()];
    let tenant_store = store.tenant(&acme);
    tenant_store
        .set_client_redirect_uris("spa", &uris)
        .await
        .unwrap();
    assert!(
        changed(&mut marks, store.client_changes().await.unwrap()),
        "updated"
    );
    tenant_store.disable_client("spa", 2).await.unwrap();
    assert!(
        changed(&mut marks, store.client_changes().await.unwrap()),
        "disabled"
    );
    tenant_store
        .create_organization("org-a", "Alpha", 1)
        .await
        .unwrap();
    assert!(
        !changed(&mut marks, store.client_changes().await.unwrap()),
        "another table"
    );
    tenant_store.delete_client("spa").await.unwrap();
    assert!(
        changed(&mut marks, store.client_changes().await.unwrap()),
        "deleted"
    );
    add_client(&store, &acme, "web", "https://web.example.com/cb", &[]).await;
    assert!(
        changed(&mut marks, store.client_changes().await.unwrap()),
        "created"
    );
    tenant_store.delete_tenant().await.unwrap();
    assert!(
        changed(&mut marks, store.client_changes().await.unwrap()),
        "tenant deleted"
    );
    assert!(store.list_client_origins().await.unwrap().is_empty());
    store.close().await;
}

#[tokio::test]
async fn sqlite_the_mark_changes_with_every_change_of_a_client_and_only_then() {
    the_mark_changes_with_every_change_of_a_client_and_only_then(TestDatabase::sqlite()).await;
}

#[tokio::test]
async fn postgres_the_mark_changes_with_every_change_of_a_client_and_only_then() {
    let Some(db) = TestDatabase::postgres().await else {
        return;
    };
    the_mark_changes_with_every_change_of_a_client_and_only_then(db).await;
}
