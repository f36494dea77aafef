//! SQLite's write-ahead log: no commit checkpoints it (that fsync would sit on a request's
//! path); `Store::checkpoint`, which the server runs in the background, does.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

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

fn user(id: &str) -> NewUser<'_> {
    NewUser {
        user_id: id,
        username: id,
        password_hash: "$argon2id$x",
        name: "N",
        email: "n@example.com",
    }
}

/// A writer reuses the log from its start only after a checkpoint copied all of it, so under
/// writes without a pause from another connection the log grows for as long as they last,
/// unless the checkpoint restarts it. The writer here is another store on the same file, as the CLI or a second process beside
/// a server; it never waits for the checkpoints and takes no turn of this store's, so during
/// a restart it waits in SQLite's busy handler and must not fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_written_without_a_pause_is_restarted() {
    const RESTART_AFTER: u64 = 200;
    let db = TestDatabase::sqlite();
    let mut store = Store::connect(&db.url).await.unwrap();
    store.restart_log_after(RESTART_AFTER);
    let tenant = TenantId::parse("busy").unwrap();
    store.create_tenant(&tenant, "busy", NOW).await.unwrap();
    store.checkpoint().await.unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let other = Store::connect(&db.url).await.unwrap();
    let writer = tokio::spawn({
        let (store, tenant, stop) = (other.clone(), tenant.clone(), Arc::clone(&stop));
        async move {
            let mut written = 0u32;
            while !stop.load(Ordering::Relaxed) {
                let id = format!("u{written}");
                store
                    .tenant(&tenant)
                    .create_user(&user(&id), NOW)
                    .await
                    .unwrap();
                written += 1;
            }
            written
        }
    });
    // Let the log grow past the threshold before the first checkpoint.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while store.checkpoint().await.unwrap().wal_pages < RESTART_AFTER {
        assert!(
            std::time::Instant::now() < deadline,
            "the log never grew past {RESTART_AFTER} pages"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut seen = Vec::new();
    let (mut restarts, mut held) = (0, Duration::ZERO);
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let checkpoint = store.checkpoint().await.unwrap();
        restarts += checkpoint.restarts;
        held += checkpoint.writers_held;
        seen.push(checkpoint.wal_pages);
    }
    let writing = !writer.is_finished();
    stop.store(true, Ordering::Relaxed);
    let written = writer.await.unwrap();

    assert!(writing, "the writer stopped before the checkpoints did");
    assert!(restarts > 0, "no checkpoint restarted the log: {seen:?}");
    assert!(
        held > Duration::ZERO,
        "the restarts held writers for no time"
    );
    assert!(
        seen.windows(2).any(|pair| pair[1] < pair[0]),
        "the log never started over while it was written: {seen:?}"
    );
    // Nothing written during the restarts was lost.
    for i in [0, written / 2, written - 1] {
        let name = format!("u{i}");
        let found = store
            .tenant(&tenant)
            .find_user_by_username(&name)
            .await
            .unwrap();
        assert!(found.is_some(), "{name} of {written} is missing");
    }
}

/// A checkpoint runs on a connection of its own: with every pooled connection taken (the
/// pool has one on a small machine, and a request may hold it), it neither waits for one nor
/// makes the requests wait behind its sync of the files.
#[tokio::test]
async fn a_checkpoint_needs_no_pooled_connection() {
    let db = TestDatabase::sqlite();
    let store = Store::connect(&db.url).await.unwrap();
    let tenant = TenantId::parse("held").unwrap();
    store.create_tenant(&tenant, "held", NOW).await.unwrap();
    let held = store.hold_every_connection().await.unwrap();
    let checkpoint = tokio::time::timeout(Duration::from_secs(2), store.checkpoint())
        .await
        .expect("the checkpoint waited for a pooled connection")
        .unwrap();
    assert_eq!(checkpoint.copied_pages, checkpoint.wal_pages);
    assert!(
        checkpoint.wal_pages > 0,
        "the tenant's pages were in the log"
    );
    drop(held);
    // And again, on the connection it kept.
    store
        .tenant(&tenant)
        .create_user(&user("u1"), NOW)
        .await
        .unwrap();
    let again = store.checkpoint().await.unwrap();
    assert_eq!(again.copied_pages, again.wal_pages);
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
