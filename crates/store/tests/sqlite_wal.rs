//! SQLite's write-ahead log: no commit checkpoints it (that fsync would sit on a request's
//! path); `Store::checkpoint`, which the server runs in the background, does.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use store::testing::TestDatabase;
use store::{Checkpoint, NewUser, Store, TenantId};

const NOW: i64 = 1_800_000_000;

/// SQLite's own default checkpoints a commit that leaves the log above this many pages.
const SQLITE_AUTOCHECKPOINT_PAGES: u64 = 1000;

#[tokio::test]
async fn commits_leave_the_log_to_the_background_checkpoint() {
    let db = TestDatabase::sqlite();
    let store = Store::connect(&db.url).await.unwrap();
    let tenant = TenantId::parse("wal").unwrap();
    store.create_tenant(&tenant, "wal", NOW).await.unwrap();
    // Whatever the migrations and the tenant wrote, from an empty log on.
    let start = store.checkpoint().await.unwrap();
    assert_eq!(
        start.copied_pages, start.wal_pages,
        "no reader holds the log"
    );

    // Each user is its own commit of a few pages: well past the default's threshold.
    for i in 0..600 {
        let (id, name) = (format!("u{i}"), format!("user{i}"));
        let user = NewUser {
            user_id: &id,
            username: &name,
            password_hash: "$argon2id$x",
            name: "N",
            email: "n@example.com",
        };
        store.tenant(&tenant).create_user(&user, NOW).await.unwrap();
    }

    let grown = store.checkpoint().await.unwrap();
    assert!(
        grown.wal_pages > SQLITE_AUTOCHECKPOINT_PAGES + start.wal_pages,
        "a commit checkpointed the log: {grown:?}"
    );
    assert_eq!(grown.copied_pages, grown.wal_pages, "all of it is copied");
    let users = store
        .tenant(&tenant)
        .find_user_by_username("user599")
        .await
        .unwrap();
    assert!(users.is_some());

    // A copied log is reused from its start by the next writer, so it does not grow forever.
    store
        .tenant(&tenant)
        .create_user(
            &NewUser {
                user_id: "last",
                username: "last",
                password_hash: "$argon2id$x",
                name: "N",
                email: "n@example.com",
            },
            NOW,
        )
        .await
        .unwrap();
    let restarted = store.checkpoint().await.unwrap();
    assert!(
        restarted.wal_pages < 20,
        "the log started over after the checkpoint: {restarted:?}"
    );
    assert_eq!(restarted.copied_pages, restarted.wal_pages);
}

#[tokio::test]
async fn a_postgres_store_has_nothing_to_checkpoint() {
    let Some(db) = TestDatabase::postgres().await else {
        return;
    };
    let store = Store::connect(&db.url).await.unwrap();
    let before = store.statements_executed();
    assert_eq!(store.checkpoint().await.unwrap(), Checkpoint::default());
    assert_eq!(store.statements_executed(), before, "no statement was sent");
}
