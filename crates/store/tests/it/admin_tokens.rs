//! Admin API tokens (migration 0010): kept by hash, found only while unrevoked, names unique
//! forever, on both backends.

use store::testing::TestDatabase;
use store::{AdminToken, Entity, Store, StoreError, TenantId};

async fn tokens_are_found_by_hash_until_revoked(db: TestDatabase) {
    let store = Store::connect(&db.url).await.unwrap();
    let acme = TenantId::parse("acme").unwrap();
    let (every, one) = ([1u8; 32], [2u8; 32]);
    store
        .create_admin_token("ops", None, &every, 10)
        .await
        .unwrap();
    store
        .create_admin_token("acme-office", Some(&acme), &one, 11)
        .await
        .unwrap();
    let ops = AdminToken {
        name: "ops".into(),
        tenant: None,
        created_at: 10,
        revoked_at: None,
    };
    assert_eq!(
        store.find_admin_token(&every).await.unwrap(),
        Some(ops.clone())
    );
    let office = store.find_admin_token(&one).await.unwrap().unwrap();
    assert_eq!(office.tenant, Some(acme.clone()));
    assert_eq!(store.find_admin_token(&[3u8; 32]).await.unwrap(), None);

    // A name is never given twice, not even once its token is revoked; nor is a hash.
    let again = store.create_admin_token("ops", None, &[4u8; 32], 12).await;
    assert!(
        matches!(again, Err(StoreError::Conflict(Entity::AdminToken))),
        "{again:?}"
    );
    let same_hash = store.create_admin_token("other", None, &every, 12).await;
    assert!(
        matches!(same_hash, Err(StoreError::Conflict(_))),
        "{same_hash:?}"
    );

    store.revoke_admin_token("ops", 20).await.unwrap();
    assert_eq!(store.find_admin_token(&every).await.unwrap(), None);
    let twice = store.revoke_admin_token("ops", 21).await;
    assert!(
        matches!(twice, Err(StoreError::NotFound(Entity::AdminToken))),
        "{twice:?}"
    );
    let unknown = store.revoke_admin_token("ghost", 21).await;
    assert!(
        matches!(unknown, Err(StoreError::NotFound(Entity::AdminToken))),
        "{unknown:?}"
    );
    let reused = store.create_admin_token("ops", None, &[5u8; 32], 22).await;
    assert!(
        matches!(reused, Err(StoreError::Conflict(Entity::AdminToken))),
        "{reused:?}"
    );

    let listed = store.list_admin_tokens().await.unwrap();
    let names: Vec<(&str, Option<i64>)> = listed
        .iter()
        .map(|t| (t.name.as_str(), t.revoked_at))
        .collect();
    assert_eq!(names, [("acme-office", None), ("ops", Some(20))]);
    store.close().await;
}

#[tokio::test]
async fn sqlite_tokens_are_found_by_hash_until_revoked() {
    tokens_are_found_by_hash_until_revoked(TestDatabase::sqlite()).await;
}

#[tokio::test]
async fn postgres_tokens_are_found_by_hash_until_revoked() {
    let Some(db) = TestDatabase::postgres().await else {
        return;
    };
    tokens_are_found_by_hash_until_revoked(db).await;
}
