//! Passkeys, WebAuthn user handles and ceremonies on both backends: a handle made once per
//! user, a credential id registered once, a counter update that only one of two concurrent
//! uses wins, and a ceremony taken at most once and never after it expires.

use store::testing::TestDatabase;
use store::{
    CeremonyKind, Entity, NewCeremony, NewPasskey, NewUser, Store, StoreError, TenantId,
    TenantStore,
};

on_both_backends!(connect:
    a_user_handle_is_made_once_and_only_for_a_known_user,
    a_credential_id_is_registered_once_and_removed_only_by_its_user,
    of_two_uses_against_one_counter_only_one_is_recorded,
    a_ceremony_is_taken_once_and_never_after_it_expires,
);

const NOW: i64 = 1_800_000_000;

async fn connect(db: &TestDatabase) -> Store {
    Store::connect(&db.url).await.expect("connect and migrate")
}

async fn seeded(store: &Store, id: &str) -> TenantId {
    let t = TenantId::parse(id).unwrap();
    store.create_tenant(&t, id, NOW).await.unwrap();
    let tenant = store.tenant(&t);
    for (user_id, username) in [("u1", "alice"), ("u2", "bob")] {
        let user = NewUser {
            user_id,
            username,
            password_hash: "$argon2id$x",
            name: "N",
            email: "n@example.com",
        };
        tenant.create_user(&user, NOW).await.unwrap();
    }
    t
}

fn passkey<'a>(credential_id: &'a [u8], user_id: &'a str, name: &'a str) -> NewPasskey<'a> {
    NewPasskey {
        credential_id,
        user_id,
        name,
        credential: "{\"counter\":0}",
        created_at: NOW,
    }
}

async fn a_user_handle_is_made_once_and_only_for_a_known_user(store: Store) {
    let t = seeded(&store, "acme").await;
    let tenant = store.tenant(&t);
    assert_eq!(tenant.find_webauthn_user_handle("u1").await.unwrap(), None);
    let first = tenant.webauthn_user_handle("u1", "handle-1").await.unwrap();
    assert_eq!(first, "handle-1");
    // A second registration keeps the handle the user's passkeys already carry.
    let again = tenant.webauthn_user_handle("u1", "handle-2").await.unwrap();
    assert_eq!(again, "handle-1");
    assert_eq!(
        tenant.find_webauthn_user_handle("u1").await.unwrap(),
        Some("handle-1".to_owned())
    );
    let unknown = tenant.webauthn_user_handle("nobody", "handle-3").await;
    assert!(
        matches!(unknown, Err(StoreError::NotFound(Entity::User))),
        "{unknown:?}"
    );
    // Another tenant's user of the same id has no handle.
    let other = seeded(&store, "globex").await;
    assert_eq!(
        store
            .tenant(&other)
            .find_webauthn_user_handle("u1")
            .await
            .unwrap(),
        None
    );
}

async fn a_credential_id_is_registered_once_and_removed_only_by_its_user(store: Store) {
    let t = seeded(&store, "acme").await;
    let tenant = store.tenant(&t);
    tenant
        .add_passkey(&passkey(b"cred-a", "u1", "Laptop"))
        .await
        .unwrap();
    tenant
        .add_passkey(&passkey(b"cred-b", "u1", "Phone"))
        .await
        .unwrap();
    let twice = tenant
        .add_passkey(&passkey(b"cred-a", "u2", "Stolen"))
        .await;
    assert!(
        matches!(twice, Err(StoreError::Conflict(Entity::Passkey))),
        "{twice:?}"
    );
    let unknown = tenant.add_passkey(&passkey(b"cred-c", "nobody", "X")).await;
    assert!(
        matches!(unknown, Err(StoreError::NotFound(Entity::User))),
        "{unknown:?}"
    );
    let names: Vec<String> = tenant
        .list_passkeys("u1")
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(names, ["Laptop", "Phone"]);
    assert_eq!(tenant.count_passkeys("u1").await.unwrap(), 2);
    assert_eq!(tenant.count_passkeys("u2").await.unwrap(), 0);
    let found = tenant.find_passkey(b"cred-a").await.unwrap().unwrap();
    assert_eq!(found.user_id, "u1");
    assert_eq!(found.last_used_at, None);

    // Bob cannot remove Alice's passkey; Alice can, once.
    assert_eq!(tenant.remove_passkey("u2", b"cred-a").await.unwrap(), None);
    assert_eq!(
        tenant.remove_passkey("u1", b"cred-a").await.unwrap(),
        Some("Laptop".to_owned())
    );
    assert_eq!(tenant.remove_passkey("u1", b"cred-a").await.unwrap(), None);
    assert!(tenant.find_passkey(b"cred-a").await.unwrap().is_none());

    // Another tenant sees none of them.
    let other = seeded(&store, "globex").await;
    assert!(store
        .tenant(&other)
        .find_passkey(b"cred-b")
        .await
        .unwrap()
        .is_none());
}

async fn of_two_uses_against_one_counter_only_one_is_recorded(store: Store) {
    let t = seeded(&store, "acme").await;
    let tenant: TenantStore<'_> = store.tenant(&t);
    tenant
        .add_passkey(&passkey(b"cred-a", "u1", "Laptop"))
        .await
        .unwrap();
    let stored = "{\"counter\":0}";
    assert!(tenant
        .record_passkey_use(b"cred-a", stored, "{\"counter\":1}", NOW + 5)
        .await
        .unwrap());
    // The second was verified against the same stored counter: it loses.
    assert!(!tenant
        .record_passkey_use(b"cred-a", stored, "{\"counter\":1}", NOW + 6)
        .await
        .unwrap());
    let found = tenant.find_passkey(b"cred-a").await.unwrap().unwrap();
    assert_eq!(found.credential, "{\"counter\":1}");
    assert_eq!(found.last_used_at, Some(NOW + 5));
}

async fn a_ceremony_is_taken_once_and_never_after_it_expires(store: Store) {
    let t = seeded(&store, "acme").await;
    let tenant = store.tenant(&t);
    let new = |hash: &'static [u8], kind, user_id| NewCeremony {
        ceremony_hash: hash,
        kind,
        user_id,
        state: "{\"challenge\":\"c\"}",
        expires_at: NOW + 300,
    };
    tenant
        .create_webauthn_ceremony(&new(b"reg", CeremonyKind::Register, Some("u1")))
        .await
        .unwrap();
    tenant
        .create_webauthn_ceremony(&new(b"disc", CeremonyKind::Discover, None))
        .await
        .unwrap();
    let taken = tenant
        .take_webauthn_ceremony(b"reg", NOW + 299)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(taken.kind, CeremonyKind::Register);
    assert_eq!(taken.user_id.as_deref(), Some("u1"));
    assert_eq!(taken.state, "{\"challenge\":\"c\"}");
    assert_eq!(
        tenant
            .take_webauthn_ceremony(b"reg", NOW + 299)
            .await
            .unwrap(),
        None
    );
    // Another tenant cannot take this tenant's ceremony.
    let other = seeded(&store, "globex").await;
    assert_eq!(
        store
            .tenant(&other)
            .take_webauthn_ceremony(b"disc", NOW)
            .await
            .unwrap(),
        None
    );
    // At its expiry it is gone for good.
    assert_eq!(
        tenant
            .take_webauthn_ceremony(b"disc", NOW + 300)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        tenant
            .take_webauthn_ceremony(b"disc", NOW + 10)
            .await
            .unwrap(),
        Some(store::Ceremony {
            kind: CeremonyKind::Discover,
            user_id: None,
            state: "{\"challenge\":\"c\"}".to_owned(),
        })
    );
}
