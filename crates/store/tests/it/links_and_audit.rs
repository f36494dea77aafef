//! Password links (one per user, single use, expiring) and the audit trail's listing
//! (newest first, by `seq`, filtered by kind and time), on both backends.

use store::testing::TestDatabase;
use store::{
    AuditFilter, LinkPurpose, NewAuditEvent, NewUser, RecoveryQuota, RecoverySubject, SignedOut,
    Store, TenantId,
};

on_both_backends!(
    a_link_is_spent_once_replaced_by_the_next_and_dead_after_expiry,
    audit_events_list_newest_first_by_seq_with_filters,
    a_recovery_link_replaces_an_invitation_and_its_use_ends_every_session,
    recovery_quotas_count_each_subject_in_fixed_windows,
);

const NOW: i64 = 1_800_000_000;

async fn seeded(db: &TestDatabase) -> (Store, TenantId) {
    let store = Store::connect(&db.url).await.unwrap();
    let t = TenantId::parse("acme").unwrap();
    store.create_tenant(&t, "acme", NOW).await.unwrap();
    let user = NewUser {
        user_id: "u1",
        username: "alice",
        password_hash: "old-hash",
        name: "A",
        email: "a@example.com",
    };
    store.tenant(&t).create_user(&user, NOW).await.unwrap();
    (store, t)
}

async fn revision_of(db: &TestDatabase) -> i64 {
    let pool = sqlx::AnyPool::connect(&db.url).await.unwrap();
    let n: i64 = sqlx::query_scalar("SELECT revision FROM users WHERE user_id = 'u1'")
        .fetch_one(&pool)
        .await
        .unwrap();
    pool.close().await;
    n
}

async fn a_link_is_spent_once_replaced_by_the_next_and_dead_after_expiry(db: &TestDatabase) {
    let (store, t) = seeded(db).await;
    let tenant = store.tenant(&t);
    assert!(matches!(
        tenant
            .create_password_link("nobody", b"x", NOW, NOW + 10)
            .await,
        Err(store::StoreError::NotFound(store::Entity::User))
    ));
    tenant
        .create_password_link("u1", b"first", NOW, NOW + 100)
        .await
        .unwrap();
    assert_eq!(
        tenant.find_password_link(b"first", NOW).await.unwrap(),
        Some("u1".to_owned())
    );
    // A second link ends the first.
    tenant
        .create_password_link("u1", b"second", NOW + 1, NOW + 100)
        .await
        .unwrap();
    assert_eq!(
        tenant.find_password_link(b"first", NOW).await.unwrap(),
        None
    );
    assert_eq!(
        tenant
            .redeem_password_link(b"first", "h1", NOW + 2)
            .await
            .unwrap(),
        None
    );
    // Expired at `expires_at` itself.
    assert_eq!(
        tenant
            .find_password_link(b"second", NOW + 100)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        tenant
            .redeem_password_link(b"second", "h1", NOW + 100)
            .await
            .unwrap(),
        None
    );
    let before = revision_of(db).await;
    assert_eq!(
        tenant
            .redeem_password_link(b"second", "new-hash", NOW + 99)
            .await
            .unwrap()
            .map(|redeemed| (redeemed.user_id, redeemed.purpose)),
        Some(("u1".to_owned(), LinkPurpose::Invitation))
    );
    assert_eq!(
        tenant.find_user("u1").await.unwrap().unwrap().password_hash,
        "new-hash"
    );
    assert_eq!(revision_of(db).await, before + 1);
    // Single use.
    assert_eq!(
        tenant
            .redeem_password_link(b"second", "other", NOW + 99)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        tenant.find_user("u1").await.unwrap().unwrap().password_hash,
        "new-hash"
    );
    // Another tenant's link of the same hash is not this tenant's.
    let other = TenantId::parse("globex").unwrap();
    store.create_tenant(&other, "globex", NOW).await.unwrap();
    tenant
        .create_password_link("u1", b"third", NOW, NOW + 100)
        .await
        .unwrap();
    assert_eq!(
        store
            .tenant(&other)
            .find_password_link(b"third", NOW)
            .await
            .unwrap(),
        None
    );
    store.close().await;
}

async fn audit_events_list_newest_first_by_seq_with_filters(db: &TestDatabase) {
    let (store, t) = seeded(db).await;
    let tenant = store.tenant(&t);
    for (i, kind) in ["a", "b", "a", "b", "a"].into_iter().enumerate() {
        let detail = format!("e{i}");
        let event = NewAuditEvent {
            kind,
            occurred_at: NOW + i as i64,
            subject: None,
            client_id: None,
            address: None,
            detail: &detail,
        };
        tenant.record_audit_event(&event).await.unwrap();
    }
    let details = |events: Vec<store::AuditEvent>| -> Vec<String> {
        events.into_iter().map(|e| e.detail).collect()
    };
    let all = tenant
        .list_audit_events(&AuditFilter::default(), 10)
        .await
        .unwrap();
    let last_of_two = all[1].seq;
    assert_eq!(details(all), ["e4", "e3", "e2", "e1", "e0"]);
    let after = AuditFilter {
        before_seq: Some(last_of_two),
        ..AuditFilter::default()
    };
    assert_eq!(
        details(tenant.list_audit_events(&after, 2).await.unwrap()),
        ["e2", "e1"]
    );
    let of_kind = AuditFilter {
        kind: Some("a"),
        ..AuditFilter::default()
    };
    assert_eq!(
        details(tenant.list_audit_events(&of_kind, 10).await.unwrap()),
        ["e4", "e2", "e0"]
    );
    // `since` is inclusive, `until` exclusive.
    let window = AuditFilter {
        since: Some(NOW + 1),
        until: Some(NOW + 3),
        ..AuditFilter::default()
    };
    assert_eq!(
        details(tenant.list_audit_events(&window, 10).await.unwrap()),
        ["e2", "e1"]
    );
    let other = TenantId::parse("globex").unwrap();
    store.create_tenant(&other, "globex", NOW).await.unwrap();
    assert!(store
        .tenant(&other)
        .list_audit_events(&AuditFilter::default(), 10)
        .await
        .unwrap()
        .is_empty());
    store.close().await;
}

async fn a_recovery_link_replaces_an_invitation_and_its_use_ends_every_session(db: &TestDatabase) {
    let (store, t) = seeded(db).await;
    let tenant = store.tenant(&t);
    for (hash, sid) in [(&b"session-1"[..], "sid-1"), (&b"session-2"[..], "sid-2")] {
        tenant
            .create_browser_session(
                &store::testing::password_session(hash, sid, "u1", NOW, NOW + 3600),
                NOW,
            )
            .await
            .unwrap();
    }
    tenant
        .create_password_link("u1", b"invitation", NOW, NOW + 86_400)
        .await
        .unwrap();
    tenant
        .create_recovery_link("u1", b"recovery", NOW + 1, NOW + 3600)
        .await
        .unwrap();
    assert_eq!(
        tenant
            .find_password_link(b"invitation", NOW + 2)
            .await
            .unwrap(),
        None
    );
    let redeemed = tenant
        .redeem_password_link(b"recovery", "new-hash", NOW + 2)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(redeemed.user_id, "u1");
    assert_eq!(redeemed.purpose, LinkPurpose::Recovery);
    assert_eq!(
        redeemed.signed_out,
        SignedOut {
            sessions: 2,
            grants: 0
        }
    );
    assert_eq!(
        tenant
            .find_browser_session(b"session-1", NOW + 3)
            .await
            .unwrap(),
        None
    );
    store.close().await;
}

async fn recovery_quotas_count_each_subject_in_fixed_windows(db: &TestDatabase) {
    let (store, t) = seeded(db).await;
    let tenant = store.tenant(&t);
    let take = |subject, now| tenant.take_recovery_quota(subject, 2, now, 3600);
    let alice = RecoverySubject::Account("u1");
    let home = RecoverySubject::Address("192.0.2.1");
    assert_eq!(take(alice, NOW).await.unwrap(), RecoveryQuota::Taken);
    assert_eq!(take(alice, NOW + 1).await.unwrap(), RecoveryQuota::Taken);
    // The first refusal of the window is told apart from the later ones.
    assert_eq!(
        take(alice, NOW + 2).await.unwrap(),
        RecoveryQuota::Refused { first: true }
    );
    assert_eq!(
        take(alice, NOW + 3).await.unwrap(),
        RecoveryQuota::Refused { first: false }
    );
    // Each subject, and each kind, has its own count.
    assert_eq!(take(home, NOW + 3).await.unwrap(), RecoveryQuota::Taken);
    assert_eq!(
        take(RecoverySubject::Address("u1"), NOW + 3).await.unwrap(),
        RecoveryQuota::Taken
    );
    // The window is fixed: it ends an hour after its first request, refusals or not.
    assert_eq!(
        take(alice, NOW + 3599).await.unwrap(),
        RecoveryQuota::Refused { first: false }
    );
    assert_eq!(take(alice, NOW + 3600).await.unwrap(), RecoveryQuota::Taken);
    store.close().await;
}
