//! A second factor's records (issue 24): TOTP authenticators (unconfirmed until a first code,
//! each time step accepted once, whichever caller comes first) and single-use recovery codes
//! (replaced whole, each spent once), on both backends.

use store::testing::TestDatabase;
use store::{Entity, NewUser, Store, StoreError, TenantId, TotpSecret, TotpStatus};

on_both_backends!(
    an_authenticator_counts_only_once_confirmed_and_is_replaced_only_when_asked,
    each_time_step_is_accepted_once_and_never_an_earlier_one,
    concurrent_acceptances_of_one_step_have_one_winner,
    confirmation_needs_the_secret_the_code_was_checked_against,
    recovery_codes_are_spent_once_and_replaced_whole,
    concurrent_uses_of_one_recovery_code_have_one_winner,
    removing_the_authenticator_keeps_recovery_codes_only_for_a_passkey,
    one_tenant_never_sees_another_tenants_factors,
);

const NOW: i64 = 1_800_000_000;

async fn seeded(db: &TestDatabase) -> (Store, TenantId) {
    let store = Store::connect(&db.url).await.unwrap();
    let t = TenantId::parse("acme").unwrap();
    store.create_tenant(&t, "acme", NOW).await.unwrap();
    for (user_id, username) in [("u1", "alice"), ("u2", "bob")] {
        let user = NewUser {
            user_id,
            username,
            password_hash: "hash",
            name: "N",
            email: "n@example.com",
        };
        store.tenant(&t).create_user(&user, NOW).await.unwrap();
    }
    (store, t)
}

fn hashes(seed: u8) -> Vec<[u8; 32]> {
    (0..10).map(|i| [seed.wrapping_add(i); 32]).collect()
}

async fn an_authenticator_counts_only_once_confirmed_and_is_replaced_only_when_asked(
    db: &TestDatabase,
) {
    let (store, t) = seeded(db).await;
    let tenant = store.tenant(&t);
    assert_eq!(tenant.totp_status("u1").await.unwrap(), TotpStatus::None);
    assert!(!tenant.has_second_factor("u1").await.unwrap());
    let unknown = tenant.save_totp_secret("nobody", b"s", NOW, false).await;
    assert!(
        matches!(unknown, Err(StoreError::NotFound(Entity::User))),
        "{unknown:?}"
    );

    assert!(tenant
        .save_totp_secret("u1", b"first", NOW, false)
        .await
        .unwrap());
    assert_eq!(
        tenant.totp_status("u1").await.unwrap(),
        TotpStatus::Unconfirmed
    );
    assert!(!tenant.has_second_factor("u1").await.unwrap());
    assert_eq!(tenant.confirmed_totp_secret("u1").await.unwrap(), None);
    // Unconfirmed: no code counts for it.
    assert!(!tenant.accept_totp_step("u1", 100).await.unwrap());
    // Starting again replaces an unconfirmed secret.
    assert!(tenant
        .save_totp_secret("u1", b"second", NOW + 1, false)
        .await
        .unwrap());
    assert_eq!(
        tenant.unconfirmed_totp_secret("u1").await.unwrap(),
        Some(b"second".to_vec())
    );

    assert!(tenant
        .confirm_totp("u1", b"second", 100, &hashes(1), NOW + 2)
        .await
        .unwrap());
    assert_eq!(
        tenant.totp_status("u1").await.unwrap(),
        TotpStatus::Confirmed { at: NOW + 2 }
    );
    assert_eq!(tenant.unconfirmed_totp_secret("u1").await.unwrap(), None);
    assert_eq!(
        tenant.confirmed_totp_secret("u1").await.unwrap(),
        Some(TotpSecret {
            secret: b"second".to_vec(),
            last_step: Some(100),
        })
    );
    assert_eq!(tenant.remaining_recovery_codes("u1").await.unwrap(), 10);
    assert!(tenant.has_second_factor("u1").await.unwrap());
    // Confirmed twice: the second finds nothing unconfirmed.
    assert!(!tenant
        .confirm_totp("u1", b"second", 101, &hashes(2), NOW + 3)
        .await
        .unwrap());

    // A confirmed authenticator stays unless a re-enrollment is asked for.
    assert!(!tenant
        .save_totp_secret("u1", b"third", NOW + 4, false)
        .await
        .unwrap());
    assert_eq!(
        tenant
            .confirmed_totp_secret("u1")
            .await
            .unwrap()
            .unwrap()
            .secret,
        b"second"
    );
    assert!(tenant
        .save_totp_secret("u1", b"third", NOW + 5, true)
        .await
        .unwrap());
    assert_eq!(
        tenant.totp_status("u1").await.unwrap(),
        TotpStatus::Unconfirmed
    );
    // The new secret starts with no step used.
    assert!(tenant
        .confirm_totp("u1", b"third", 50, &hashes(3), NOW + 6)
        .await
        .unwrap());
    assert_eq!(
        tenant
            .confirmed_totp_secret("u1")
            .await
            .unwrap()
            .unwrap()
            .last_step,
        Some(50)
    );
    assert_eq!(tenant.totp_status("u2").await.unwrap(), TotpStatus::None);
}

async fn confirmed(store: &Store, t: &TenantId, user_id: &str, step: i64) {
    let tenant = store.tenant(t);
    assert!(tenant
        .save_totp_secret(user_id, b"secret", NOW, false)
        .await
        .unwrap());
    assert!(tenant
        .confirm_totp(user_id, b"secret", step, &hashes(0), NOW)
        .await
        .unwrap());
}

async fn each_time_step_is_accepted_once_and_never_an_earlier_one(db: &TestDatabase) {
    let (store, t) = seeded(db).await;
    confirmed(&store, &t, "u1", 100).await;
    let tenant = store.tenant(&t);
    // The step of the first code is used already.
    assert!(!tenant.accept_totp_step("u1", 100).await.unwrap());
    assert!(tenant.accept_totp_step("u1", 101).await.unwrap());
    assert!(!tenant.accept_totp_step("u1", 101).await.unwrap());
    assert!(!tenant.accept_totp_step("u1", 99).await.unwrap());
    assert!(tenant.accept_totp_step("u1", 103).await.unwrap());
    assert!(!tenant.accept_totp_step("u1", 102).await.unwrap());
    // Another user's authenticator is not there.
    assert!(!tenant.accept_totp_step("u2", 200).await.unwrap());
    assert_eq!(
        tenant
            .confirmed_totp_secret("u1")
            .await
            .unwrap()
            .unwrap()
            .last_step,
        Some(103)
    );
}

async fn concurrent_acceptances_of_one_step_have_one_winner(db: &TestDatabase) {
    let (store, t) = seeded(db).await;
    confirmed(&store, &t, "u1", 100).await;
    let attempts = (0..10).map(|_| {
        let store = store.clone();
        let t = t.clone();
        tokio::spawn(async move { store.tenant(&t).accept_totp_step("u1", 101).await })
    });
    let mut accepted = 0;
    for attempt in attempts {
        if attempt.await.unwrap().unwrap() {
            accepted += 1;
        }
    }
    assert_eq!(accepted, 1);
}

async fn confirmation_needs_the_secret_the_code_was_checked_against(db: &TestDatabase) {
    let (store, t) = seeded(db).await;
    let tenant = store.tenant(&t);
    tenant
        .save_totp_secret("u1", b"shown-in-tab-1", NOW, false)
        .await
        .unwrap();
    tenant
        .save_totp_secret("u1", b"shown-in-tab-2", NOW, false)
        .await
        .unwrap();
    assert!(!tenant
        .confirm_totp("u1", b"shown-in-tab-1", 100, &hashes(1), NOW)
        .await
        .unwrap());
    assert_eq!(
        tenant.totp_status("u1").await.unwrap(),
        TotpStatus::Unconfirmed
    );
    // Nothing of the refused confirmation was kept: no recovery codes either.
    assert_eq!(tenant.remaining_recovery_codes("u1").await.unwrap(), 0);
}

async fn recovery_codes_are_spent_once_and_replaced_whole(db: &TestDatabase) {
    let (store, t) = seeded(db).await;
    let tenant = store.tenant(&t);
    let unknown = tenant
        .replace_recovery_codes("nobody", &hashes(1), NOW)
        .await;
    assert!(
        matches!(unknown, Err(StoreError::NotFound(Entity::User))),
        "{unknown:?}"
    );
    let first = hashes(1);
    tenant
        .replace_recovery_codes("u1", &first, NOW)
        .await
        .unwrap();
    assert_eq!(tenant.remaining_recovery_codes("u1").await.unwrap(), 10);
    assert!(!tenant
        .redeem_recovery_code("u2", &first[0], NOW)
        .await
        .unwrap());
    assert!(tenant
        .redeem_recovery_code("u1", &first[0], NOW)
        .await
        .unwrap());
    assert!(!tenant
        .redeem_recovery_code("u1", &first[0], NOW + 1)
        .await
        .unwrap());
    assert!(!tenant
        .redeem_recovery_code("u1", &[0xee; 32], NOW)
        .await
        .unwrap());
    assert_eq!(tenant.remaining_recovery_codes("u1").await.unwrap(), 9);

    // A new set: every code of the old one dies, used or not.
    let second = hashes(101);
    tenant
        .replace_recovery_codes("u1", &second, NOW + 2)
        .await
        .unwrap();
    assert_eq!(tenant.remaining_recovery_codes("u1").await.unwrap(), 10);
    assert!(!tenant
        .redeem_recovery_code("u1", &first[1], NOW + 3)
        .await
        .unwrap());
    assert!(tenant
        .redeem_recovery_code("u1", &second[9], NOW + 3)
        .await
        .unwrap());
    assert_eq!(tenant.remaining_recovery_codes("u1").await.unwrap(), 9);
    assert_eq!(tenant.remaining_recovery_codes("u2").await.unwrap(), 0);
}

async fn concurrent_uses_of_one_recovery_code_have_one_winner(db: &TestDatabase) {
    let (store, t) = seeded(db).await;
    store
        .tenant(&t)
        .replace_recovery_codes("u1", &hashes(1), NOW)
        .await
        .unwrap();
    let attempts = (0..10).map(|_| {
        let store = store.clone();
        let t = t.clone();
        tokio::spawn(async move {
            store
                .tenant(&t)
                .redeem_recovery_code("u1", &[1; 32], NOW)
                .await
        })
    });
    let mut used = 0;
    for attempt in attempts {
        if attempt.await.unwrap().unwrap() {
            used += 1;
        }
    }
    assert_eq!(used, 1);
}

async fn removing_the_authenticator_keeps_recovery_codes_only_for_a_passkey(db: &TestDatabase) {
    let (store, t) = seeded(db).await;
    confirmed(&store, &t, "u1", 100).await;
    confirmed(&store, &t, "u2", 100).await;
    // bob also has a passkey (written as the passkeys' store would).
    let pool = sqlx::AnyPool::connect(&db.url).await.unwrap();
    sqlx::query(
        "INSERT INTO passkeys (tenant_id, credential_id, user_id, name, credential, created_at) \
         VALUES ('acme', $1, 'u2', 'key', '{}', $2)",
    )
    .bind(b"cred".to_vec())
    .bind(NOW)
    .execute(&pool)
    .await
    .unwrap();
    pool.close().await;
    let tenant = store.tenant(&t);
    assert!(tenant.has_second_factor("u1").await.unwrap());

    assert!(tenant.remove_totp("u1").await.unwrap());
    assert!(!tenant.has_second_factor("u1").await.unwrap());
    assert_eq!(tenant.totp_status("u1").await.unwrap(), TotpStatus::None);
    assert_eq!(tenant.remaining_recovery_codes("u1").await.unwrap(), 0);
    assert!(!tenant.accept_totp_step("u1", 500).await.unwrap());
    assert!(!tenant.remove_totp("u1").await.unwrap());

    assert!(tenant.remove_totp("u2").await.unwrap());
    assert_eq!(tenant.remaining_recovery_codes("u2").await.unwrap(), 10);
    // The passkey is still a second factor.
    assert!(tenant.has_second_factor("u2").await.unwrap());
}

async fn one_tenant_never_sees_another_tenants_factors(db: &TestDatabase) {
    let (store, t) = seeded(db).await;
    confirmed(&store, &t, "u1", 100).await;
    let other = TenantId::parse("other").unwrap();
    store.create_tenant(&other, "other", NOW).await.unwrap();
    let elsewhere = store.tenant(&other);
    assert_eq!(elsewhere.totp_status("u1").await.unwrap(), TotpStatus::None);
    assert_eq!(elsewhere.confirmed_totp_secret("u1").await.unwrap(), None);
    assert!(!elsewhere.accept_totp_step("u1", 101).await.unwrap());
    assert!(!elsewhere
        .redeem_recovery_code("u1", &[0; 32], NOW)
        .await
        .unwrap());
    assert_eq!(elsewhere.remaining_recovery_codes("u1").await.unwrap(), 0);
    assert!(!elsewhere.remove_totp("u1").await.unwrap());
    assert!(store.tenant(&t).accept_totp_step("u1", 101).await.unwrap());
}
