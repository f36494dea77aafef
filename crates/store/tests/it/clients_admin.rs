//! The clients' administration in the store: keyset listing with a literal `q`, updates under
//! a revision, secret rotation with and without grace, disabling (out of the CORS list).

use store::testing::TestDatabase;
use store::{ClientChanges, NewClient, PreviousSecret, Store, StoreError, TenantId};

async fn seeded(db: &TestDatabase) -> (Store, TenantId) {
    let store = Store::connect(&db.url).await.unwrap();
    let acme = TenantId::parse("acme").unwrap();
    store.create_tenant(&acme, "Acme", 1).await.unwrap();
    let uris = ["https://a.example.com/cb".to_owned()];
    let scopes = ["openid".to_owned()];
    for (id, name, hash) in [
        ("a_b", "Under Score", None),
        ("axb", "Plain", None),
        ("web", "Back Office", Some(&[1u8; 32][..])),
    ] {
        let client = NewClient {
            client_id: id,
            name,
            secret_hash: hash,
            redirect_uris: &uris,
            scopes: &scopes,
        };
        let web = ["https://a.example.com".to_owned()];
        store
            .tenant(&acme)
            .create_client_with_web_origins(&client, &web, 1)
            .await
            .unwrap();
    }
    (store, acme)
}

async fn clients_are_administered(db: TestDatabase) {
    let (store, acme) = seeded(&db).await;
    let t = store.tenant(&acme);
    let ids = |page: Vec<store::ManagedClient>| -> Vec<String> {
        page.into_iter().map(|c| c.client.client_id).collect()
    };
    assert_eq!(
        ids(t.list_clients_page(None, None, 2).await.unwrap()),
        ["a_b", "axb"]
    );
    assert_eq!(
        ids(t.list_clients_page(Some("axb"), None, 2).await.unwrap()),
        ["web"]
    );
    assert_eq!(
        ids(t.list_clients_page(None, Some("_"), 10).await.unwrap()),
        ["a_b"]
    );
    assert_eq!(
        ids(t
            .list_clients_page(None, Some("back off"), 10)
            .await
            .unwrap()),
        ["web"]
    );

    let read = t.find_managed_client("web").await.unwrap().unwrap();
    let changes = ClientChanges {
        name: Some("Office"),
        ..ClientChanges::default()
    };
    let next = t
        .update_client("web", &changes, Some(read.revision))
        .await
        .unwrap();
    assert_eq!(next.revision, read.revision.revision + 1);
    assert!(matches!(
        t.update_client("web", &changes, Some(read.revision)).await,
        Err(StoreError::Changed(_))
    ));
    assert!(matches!(
        t.update_client("ghost", &changes, None).await,
        Err(StoreError::NotFound(_))
    ));

    t.rotate_client_secret("web", &[2u8; 32], Some(100))
        .await
        .unwrap();
    let web = t.find_client("web").await.unwrap().unwrap();
    assert_eq!(web.secret_hash.as_deref(), Some(&[2u8; 32][..]));
    let previous = PreviousSecret {
        hash: vec![1u8; 32],
        expires_at: 100,
    };
    assert_eq!(web.previous_secret.as_ref(), Some(&previous));
    // The code exchange reads the client with the code, previous secret included.
    let (client, _) = t
        .present_code("web", b"none", "g1", 1)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(client.previous_secret, Some(previous));
    t.rotate_client_secret("web", &[3u8; 32], None)
        .await
        .unwrap();
    assert_eq!(
        t.find_client("web").await.unwrap().unwrap().previous_secret,
        None
    );
    assert!(matches!(
        t.rotate_client_secret("axb", &[3u8; 32], None).await,
        Err(StoreError::NotFound(_))
    ));

    let (_, revoked) = t.disable_client("axb", 5).await.unwrap();
    assert_eq!(revoked, 0);
    assert!(t.find_client("axb").await.unwrap().unwrap().disabled);
    let listed: Vec<String> = store
        .list_client_origins()
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.client_id)
        .collect();
    assert_eq!(listed.len(), 2);
    assert!(!listed.contains(&"axb".to_owned()), "{listed:?}");
    t.enable_client("axb").await.unwrap();
    assert!(!t.find_client("axb").await.unwrap().unwrap().disabled);
    t.delete_client("axb").await.unwrap();
    assert!(matches!(
        t.delete_client("axb").await,
        Err(StoreError::NotFound(_))
    ));
    store.close().await;
}

#[tokio::test]
async fn sqlite_clients_are_administered() {
    clients_are_administered(TestDatabase::sqlite()).await;
}

#[tokio::test]
async fn postgres_clients_are_administered() {
    let Some(db) = TestDatabase::postgres().await else {
        return;
    };
    clients_are_administered(db).await;
}
