//! The store's suite, run once on SQLite and once on PostgreSQL: the same assertions on both,
//! so the backends cannot drift.

use store::testing::TestDatabase;
use store::AttemptEnd;
use store::{
    ApiStanding, CheckedExchange, ClientType, CodeExchange, Entity, FailureSubject, GrantUser,
    Issuance, NewAuthorizationCode, NewAuthorizationRequest, NewClient, NewGrant, NewRefreshToken,
    NewUser, PresentedCode, RedeemedCode, RefreshRotation, RefreshingClient, Revision, Store,
    StoreError, TenantId, TenantStore, User,
};

on_both_backends!(connect:
    tenant_ids_are_unique_and_listed_in_order,
    clients_round_trip_with_type_secret_uris_and_scopes,
    client_of_unknown_tenant_is_not_found_and_duplicate_conflicts,
    usernames_are_unique_per_tenant_only,
    memberships_need_known_user_and_organization_once,
    one_tenant_never_sees_another_tenants_records,
    signing_keys_newest_signs_and_retirement_rules,
    private_keys_are_replaced_all_or_none_and_only_where_unchanged,
    authorization_requests_bind_to_a_browser_and_are_consumed_once,
    browser_sessions_expire_and_stay_in_their_tenant,
    authorization_codes_are_stored_once,
    signin_failures_count_per_subject_and_restart_after_the_window,
    a_code_is_redeemed_once_and_a_replay_names_its_grant,
    two_presentations_of_one_code_issue_once_and_the_loser_is_a_replay,
    refresh_tokens_rotate_once_and_reuse_revokes_the_grant,
    twenty_concurrent_rotations_of_one_token_have_one_winner,
    concurrent_failures_each_get_their_own_count,
    concurrent_reservations_take_no_more_places_than_allowed,
    authorization_request_quota_counts_per_address_in_fixed_windows,
    a_grant_costs_a_fixed_number_of_statements,
    userinfo_reads_the_user_of_a_live_grant_only,
    a_grant_ends_with_its_users_membership,
    a_grant_ends_at_its_maximum_age_however_often_it_rotates,
    a_rotation_by_a_kept_client_stands_only_while_the_client_is_unchanged,
    a_checked_exchange_redeems_only_a_code_that_passes_every_check,
);

async fn connect(db: &TestDatabase) -> Store {
    Store::connect(&db.url).await.expect("connect and migrate")
}

fn tenant(id: &str) -> TenantId {
    TenantId::parse(id).unwrap()
}

const NOW: i64 = 1_800_000_000;

/// A grant's maximum age in the rotations: the default 90 days.
const MAX_AGE: i64 = 90 * 86_400;

async fn seeded(store: &Store, id: &str) -> TenantId {
    let t = tenant(id);
    store.create_tenant(&t, id, NOW).await.unwrap();
    t
}

fn user<'a>(id: &'a str, username: &'a str) -> NewUser<'a> {
    NewUser {
        user_id: id,
        username,
        password_hash: "$argon2id$x",
        name: "N",
        email: "n@example.com",
    }
}

async fn tenant_ids_are_unique_and_listed_in_order(store: Store) {
    seeded(&store, "zeta").await;
    seeded(&store, "acme").await;
    let again = store
        .create_tenant(&tenant("acme"), "Acme again", NOW)
        .await;
    assert!(
        matches!(again, Err(StoreError::Conflict(Entity::Tenant))),
        "{again:?}"
    );
    let ids: Vec<String> = store
        .list_tenants()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.tenant_id.to_string())
        .collect();
    assert_eq!(ids, ["acme", "zeta"]);
    assert_eq!(
        store.tenant(&tenant("acme")).require().await.unwrap().name,
        "acme"
    );
    let missing = store.tenant(&tenant("nope")).require().await;
    assert!(
        matches!(missing, Err(StoreError::NotFound(Entity::Tenant))),
        "{missing:?}"
    );
}

async fn clients_round_trip_with_type_secret_uris_and_scopes(store: Store) {
    let t = seeded(&store, "acme").await;
    let uris = vec![
        "https://app.example.com/cb".to_owned(),
        "com.example.app:/cb".to_owned(),
    ];
    let scopes = vec!["openid".to_owned(), "jobs".to_owned()];
    let hash = [7u8; 32];
    let tenant = store.tenant(&t);
    tenant
        .create_client(
            &NewClient {
                client_id: "web",
                name: "Web",
                secret_hash: Some(&hash),
                redirect_uris: &uris,
                scopes: &scopes,
            },
            NOW,
        )
        .await
        .unwrap();
    tenant
        .create_client(
            &NewClient {
                client_id: "spa",
                name: "SPA",
                secret_hash: None,
                redirect_uris: &uris[..1],
                scopes: &scopes,
            },
            NOW,
        )
        .await
        .unwrap();
    let web = tenant.find_client("web").await.unwrap().unwrap();
    assert_eq!(web.client_type, ClientType::Confidential);
    assert_eq!(web.secret_hash.as_deref(), Some(&hash[..]));
    assert_eq!(web.redirect_uris, uris);
    assert_eq!(web.scopes, scopes);
    assert_eq!(web.created_at, NOW);
    let spa = tenant.find_client("spa").await.unwrap().unwrap();
    assert_eq!(spa.client_type, ClientType::Public);
    assert_eq!(spa.secret_hash, None);
    let ids: Vec<_> = tenant
        .list_clients()
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.client_id)
        .collect();
    assert_eq!(ids, ["spa", "web"]);
    assert_eq!(tenant.find_client("other").await.unwrap(), None);

    tenant
        .set_client_secret_hash("web", &[9u8; 32])
        .await
        .unwrap();
    let web = tenant.find_client("web").await.unwrap().unwrap();
    assert_eq!(web.secret_hash.as_deref(), Some(&[9u8; 32][..]));
    let public = tenant.set_client_secret_hash("spa", &[9u8; 32]).await;
    assert!(
        matches!(public, Err(StoreError::NotFound(Entity::Client))),
        "{public:?}"
    );
    assert_eq!(
        tenant
            .find_client("spa")
            .await
            .unwrap()
            .unwrap()
            .secret_hash,
        None
    );
}

async fn client_of_unknown_tenant_is_not_found_and_duplicate_conflicts(store: Store) {
    let uris = vec!["https://app.example.com/cb".to_owned()];
    let new = NewClient {
        client_id: "web",
        name: "Web",
        secret_hash: None,
        redirect_uris: &uris,
        scopes: &[],
    };
    let ghost = tenant("ghost");
    let orphan = store.tenant(&ghost).create_client(&new, NOW).await;
    assert!(
        matches!(orphan, Err(StoreError::NotFound(Entity::Tenant))),
        "{orphan:?}"
    );
    let t = seeded(&store, "acme").await;
    store.tenant(&t).create_client(&new, NOW).await.unwrap();
    let twice = store.tenant(&t).create_client(&new, NOW).await;
    assert!(
        matches!(twice, Err(StoreError::Conflict(Entity::Client))),
        "{twice:?}"
    );
}

async fn usernames_are_unique_per_tenant_only(store: Store) {
    let a = seeded(&store, "a").await;
    let b = seeded(&store, "b").await;
    store
        .tenant(&a)
        .create_user(&user("u1", "alice"), NOW)
        .await
        .unwrap();
    let dup = store
        .tenant(&a)
        .create_user(&user("u2", "alice"), NOW)
        .await;
    assert!(
        matches!(dup, Err(StoreError::Conflict(Entity::User))),
        "{dup:?}"
    );
    store
        .tenant(&b)
        .create_user(&user("u3", "alice"), NOW)
        .await
        .unwrap();
    let found = store
        .tenant(&a)
        .find_user_by_username("alice")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (found.user_id.as_str(), found.email.as_str()),
        ("u1", "n@example.com")
    );
    assert_eq!(
        store
            .tenant(&a)
            .find_user("u1")
            .await
            .unwrap()
            .unwrap()
            .username,
        "alice"
    );
    let ghost = tenant("ghost");
    let orphan = store
        .tenant(&ghost)
        .create_user(&user("u9", "zed"), NOW)
        .await;
    assert!(
        matches!(orphan, Err(StoreError::NotFound(Entity::Tenant))),
        "{orphan:?}"
    );
}

async fn memberships_need_known_user_and_organization_once(store: Store) {
    let t = seeded(&store, "acme").await;
    let tenant = store.tenant(&t);
    tenant.create_user(&user("u1", "alice"), NOW).await.unwrap();
    tenant
        .create_organization("org-b", "Bravo", NOW)
        .await
        .unwrap();
    tenant
        .create_organization("org-a", "Alpha", NOW)
        .await
        .unwrap();
    let dup_org = tenant.create_organization("org-a", "Alpha", NOW).await;
    assert!(
        matches!(dup_org, Err(StoreError::Conflict(Entity::Organization))),
        "{dup_org:?}"
    );
    tenant.add_membership("u1", "org-b", NOW).await.unwrap();
    tenant.add_membership("u1", "org-a", NOW).await.unwrap();
    let again = tenant.add_membership("u1", "org-a", NOW).await;
    assert!(
        matches!(again, Err(StoreError::Conflict(Entity::Membership))),
        "{again:?}"
    );
    let no_user = tenant.add_membership("u9", "org-a", NOW).await;
    assert!(
        matches!(no_user, Err(StoreError::NotFound(Entity::User))),
        "{no_user:?}"
    );
    let no_org = tenant.add_membership("u1", "org-z", NOW).await;
    assert!(
        matches!(no_org, Err(StoreError::NotFound(Entity::Organization))),
        "{no_org:?}"
    );
    let names: Vec<_> = tenant
        .organizations_of("u1")
        .await
        .unwrap()
        .into_iter()
        .map(|o| o.name)
        .collect();
    assert_eq!(names, ["Alpha", "Bravo"]);
}

async fn one_tenant_never_sees_another_tenants_records(store: Store) {
    let a = seeded(&store, "a").await;
    let b = seeded(&store, "b").await;
    let uris = vec!["https://a.example.com/cb".to_owned()];
    let client = NewClient {
        client_id: "web",
        name: "Web",
        secret_hash: None,
        redirect_uris: &uris,
        scopes: &[],
    };
    store.tenant(&a).create_client(&client, NOW).await.unwrap();
    store
        .tenant(&a)
        .create_user(&user("u1", "alice"), NOW)
        .await
        .unwrap();
    store
        .tenant(&a)
        .create_organization("org-a", "Alpha", NOW)
        .await
        .unwrap();
    store
        .tenant(&a)
        .add_membership("u1", "org-a", NOW)
        .await
        .unwrap();

    let other = store.tenant(&b);
    assert_eq!(other.find_client("web").await.unwrap(), None);
    assert_eq!(other.find_user("u1").await.unwrap(), None);
    assert_eq!(other.find_user_by_username("alice").await.unwrap(), None);
    assert_eq!(other.find_organization("org-a").await.unwrap(), None);
    assert!(other.organizations_of("u1").await.unwrap().is_empty());
    assert!(other.list_clients().await.unwrap().is_empty());
    assert!(other.list_organizations().await.unwrap().is_empty());
    // Tenant b cannot attach a's user to its own organization, nor a's organization.
    other
        .create_organization("org-b", "Bravo", NOW)
        .await
        .unwrap();
    let cross = other.add_membership("u1", "org-b", NOW).await;
    assert!(
        matches!(cross, Err(StoreError::NotFound(Entity::User))),
        "{cross:?}"
    );
}

/// Sealing the keys (issue 21 §3) replaces each one only while it holds the bytes the caller
/// read, and all of them or none: two nodes sealing at once cannot both write.
async fn private_keys_are_replaced_all_or_none_and_only_where_unchanged(store: Store) {
    use store::PrivateKeyChange;
    store.insert_signing_key("k1", b"der-1", NOW).await.unwrap();
    store.insert_signing_key("k2", b"der-2", NOW).await.unwrap();
    let change = |kid: &str, from: &[u8], to: &[u8]| PrivateKeyChange {
        kid: kid.to_owned(),
        from: from.to_vec(),
        to: to.to_vec(),
    };
    let stored = |store: Store| async move {
        let keys = store.list_signing_keys().await.unwrap();
        keys.into_iter()
            .map(|k| (k.kid, k.private_key))
            .collect::<Vec<_>>()
    };
    // k2 no longer holds "der-x": nothing is written, k1 included.
    let stale = [
        change("k1", b"der-1", b"sealed-1"),
        change("k2", b"der-x", b"sealed-2"),
    ];
    assert!(!store.replace_private_keys(&stale).await.unwrap());
    assert_eq!(
        stored(store.clone()).await,
        [
            ("k2".to_owned(), b"der-2".to_vec()),
            ("k1".to_owned(), b"der-1".to_vec())
        ]
    );
    let fresh = [
        change("k1", b"der-1", b"sealed-1"),
        change("k2", b"der-2", b"sealed-2"),
    ];
    assert!(store.replace_private_keys(&fresh).await.unwrap());
    assert_eq!(
        stored(store.clone()).await,
        [
            ("k2".to_owned(), b"sealed-2".to_vec()),
            ("k1".to_owned(), b"sealed-1".to_vec())
        ]
    );
    // The same change again finds the new bytes: refused.
    assert!(!store.replace_private_keys(&fresh).await.unwrap());
    assert!(store.replace_private_keys(&[]).await.unwrap());
}

async fn signing_keys_newest_signs_and_retirement_rules(store: Store) {
    assert!(store.active_signing_keys().await.unwrap().is_empty());
    store
        .insert_signing_key("zulu", b"der-1", NOW)
        .await
        .unwrap();
    store
        .insert_signing_key("alpha", b"der-2", NOW)
        .await
        .unwrap();
    let dup = store.insert_signing_key("alpha", b"der-x", NOW + 20).await;
    assert!(
        matches!(dup, Err(StoreError::Conflict(Entity::SigningKey))),
        "{dup:?}"
    );
    let active = store.active_signing_keys().await.unwrap();
    let kids: Vec<_> = active.iter().map(|k| k.kid.as_str()).collect();
    assert_eq!(
        kids,
        ["alpha", "zulu"],
        "creation order, not kid order, even in the same second"
    );
    assert_eq!(active[0].private_key, b"der-2");
    assert_eq!(active[0].algorithm, "RS256");

    store.retire_signing_key("zulu", NOW + 30).await.unwrap();
    let twice = store.retire_signing_key("zulu", NOW + 40).await;
    assert!(
        matches!(twice, Err(StoreError::NotFound(Entity::SigningKey))),
        "{twice:?}"
    );
    let last = store.retire_signing_key("alpha", NOW + 40).await;
    assert!(matches!(last, Err(StoreError::LastActiveKey)), "{last:?}");
    let unknown = store.retire_signing_key("nope", NOW + 40).await;
    assert!(
        matches!(unknown, Err(StoreError::NotFound(Entity::SigningKey))),
        "{unknown:?}"
    );

    let kids: Vec<_> = store
        .active_signing_keys()
        .await
        .unwrap()
        .into_iter()
        .map(|k| k.kid)
        .collect();
    assert_eq!(kids, ["alpha"]);
    let all = store.list_signing_keys().await.unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all[1].retired_at, Some(NOW + 30));
    assert!(
        !format!("{:?}", all[0]).contains("der"),
        "Debug must not show key material"
    );
}

/// A second node connecting to a migrated database finds the schema and data in place.
async fn reconnect_keeps_schema_and_data(db: &TestDatabase) {
    let first = connect(db).await;
    seeded(&first, "acme").await;
    let second = connect(db).await;
    second.ping().await.unwrap();
    assert_eq!(second.list_tenants().await.unwrap().len(), 1);
}

#[tokio::test]
async fn sqlite_reconnect_keeps_schema_and_data() {
    reconnect_keeps_schema_and_data(&TestDatabase::sqlite()).await;
}

#[tokio::test]
async fn postgres_reconnect_keeps_schema_and_data() {
    if let Some(db) = TestDatabase::postgres().await {
        reconnect_keeps_schema_and_data(&db).await;
    }
}

/// SQLite: an issue whose caller goes away while its batch waits for the database's write
/// lock (a request cut off) commits all of its writes or none, and leaves no connection of
/// the pool inside a transaction: every write the store makes after it is committed, as a
/// second node sees. (PostgreSQL's issue is one statement.)
#[tokio::test]
async fn sqlite_an_issue_cut_off_mid_way_leaves_the_store_whole() {
    let db = TestDatabase::sqlite();
    let (store, other_node, t) = two_nodes(&db).await;
    let tenant = store.tenant(&t);
    let seen = other_node.tenant(&t);
    for hash in [b"c1", b"c2"] {
        tenant
            .create_authorization_code(&code(hash), NOW)
            .await
            .unwrap();
    }

    let redeemed = redeem(&tenant, b"c1", "g1", NOW + 1).await;
    let g1 = grant("g1");
    cut_off_while_locked(&db, redeemed.issue(&g1, Some(refresh(b"r1")), NOW + 1)).await;

    // The batch gets the lock within its busy handler's next sleep (100 ms at most).
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let c1 = seen.find_authorization_code(b"c1").await.unwrap().unwrap();
    let g1 = seen.find_grant("g1").await.unwrap();
    let r1 = seen.find_refresh_token(b"r1").await.unwrap();
    match c1.redeemed_at {
        Some(_) => assert!(
            c1.grant_id.as_deref() == Some("g1") && g1.is_some() && r1.is_some(),
            "redeemed without all it issues: {c1:?} {g1:?} {r1:?}"
        ),
        None => assert!(g1.is_none() && r1.is_none(), "issued without a redemption"),
    }

    // Enough writes after it to go through every connection of the pool, each in good time
    // (a write waiting for a lock that a lost transaction holds would wait forever).
    let writes = async {
        let redeemed = redeem(&tenant, b"c2", "g2", NOW + 2).await;
        issued(redeemed, "g2", Some(b"r2"), NOW + 2).await;
        let mut presented = b"r2".to_vec();
        for n in 3..12 {
            let next = format!("r{n}").into_bytes();
            let rotation = tenant
                .rotate_refresh_token(
                    &presented,
                    RefreshingClient::new("web", 0),
                    refresh(&next),
                    MAX_AGE,
                    NOW + n,
                )
                .await
                .unwrap();
            assert!(
                matches!(rotation, RefreshRotation::Rotated(_, _)),
                "{rotation:?}"
            );
            let stored = seen.find_refresh_token(&next).await.unwrap();
            assert!(stored.is_some(), "rotation {n} is not committed");
            presented = next;
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(30), writes)
        .await
        .expect("the writes after the cut-off issue finish");
}

/// SQLite: a rotation whose caller goes away while it waits for the database's write lock
/// (its transaction's `BEGIN IMMEDIATE`) spends nothing or does it all, and leaves no
/// connection of the pool inside its transaction: the token then rotates once, and every
/// write after it is committed, as a second node sees.
#[tokio::test]
async fn sqlite_a_rotation_cut_off_while_it_waits_leaves_the_store_whole() {
    let db = TestDatabase::sqlite();
    let (store, other_node, t) = two_nodes(&db).await;
    let tenant = store.tenant(&t);
    let seen = other_node.tenant(&t);
    tenant
        .create_authorization_code(&code(b"c1"), NOW)
        .await
        .unwrap();
    let redeemed = redeem(&tenant, b"c1", "g1", NOW).await;
    issued(redeemed, "g1", Some(b"r1"), NOW).await;
    let rotate = |presented: &'static [u8], next: &'static [u8], now: i64| {
        tenant.rotate_refresh_token(
            presented,
            RefreshingClient::new("web", 0),
            refresh(next),
            MAX_AGE,
            now,
        )
    };

    cut_off_while_locked(&db, rotate(b"r1", b"r2", NOW + 1)).await;

    // The cut-off rotation gets the lock within its busy handler's next sleep.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let r1 = seen.find_refresh_token(b"r1").await.unwrap().unwrap();
    let r2 = seen.find_refresh_token(b"r2").await.unwrap();
    assert_eq!(
        (r1.consumed_at, r2),
        (None, None),
        "a rotation nobody waits for any more spent the token"
    );

    // The token rotates once, and every write after it is committed in good time (a write
    // waiting for a lock that a lost transaction holds would wait forever).
    let writes = async {
        let mut presented: &'static [u8] = b"r1";
        for (n, next) in [b"r3", b"r4", b"r5", b"r6", b"r7", b"r8"]
            .into_iter()
            .enumerate()
        {
            let now = NOW + 2 + n as i64;
            let rotation = rotate(presented, next, now).await.unwrap();
            assert!(
                matches!(rotation, RefreshRotation::Rotated(_, _)),
                "{rotation:?}"
            );
            let stored = seen.find_refresh_token(next).await.unwrap();
            assert!(stored.is_some(), "rotation {n} is not committed");
            presented = next;
        }
        let reuse = rotate(b"r1", b"r9", NOW + 10).await.unwrap();
        assert!(matches!(reuse, RefreshRotation::Reused { .. }), "{reuse:?}");
    };
    tokio::time::timeout(std::time::Duration::from_secs(30), writes)
        .await
        .expect("the writes after the cut-off rotation finish");
}

/// A node with a tenant `acme` (a client and a user), and a second node on its database,
/// which sees only what the first has committed.
async fn two_nodes(db: &TestDatabase) -> (Store, Store, TenantId) {
    let store = connect(db).await;
    let t = with_client_and_user(&store, "acme").await;
    (store, connect(db).await, t)
}

/// Starts `write` while another process holds SQLite's write lock, so that it waits in the
/// busy handler (it must not finish meanwhile), drops it there as a request cut off would,
/// then lets the lock go.
async fn cut_off_while_locked<F: std::future::Future>(db: &TestDatabase, write: F) {
    use sqlx::Connection;
    let mut holder = sqlx::SqliteConnection::connect(&db.url).await.unwrap();
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut holder)
        .await
        .unwrap();
    let mut write = Box::pin(write);
    for _ in 0..20 {
        let polled = tokio::time::timeout(std::time::Duration::ZERO, write.as_mut()).await;
        assert!(
            polled.is_err(),
            "the write finished while the lock was held"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    drop(write);
    sqlx::query("COMMIT").execute(&mut holder).await.unwrap();
    holder.close().await.unwrap();
}

#[tokio::test]
async fn unsupported_database_url_is_refused() {
    let err = Store::connect("mysql://localhost/db").await.unwrap_err();
    assert!(matches!(err, StoreError::UnsupportedUrl), "{err:?}");
}

/// A tenant with a client `web` and a user `u1`, for the flow records.
async fn with_client_and_user(store: &Store, id: &str) -> TenantId {
    let t = seeded(store, id).await;
    let uris = vec!["https://app.example.com/cb".to_owned()];
    let client = NewClient {
        client_id: "web",
        name: "Web",
        secret_hash: None,
        redirect_uris: &uris,
        scopes: &[],
    };
    store.tenant(&t).create_client(&client, NOW).await.unwrap();
    store
        .tenant(&t)
        .create_user(&user("u1", "alice"), NOW)
        .await
        .unwrap();
    // The organization of the tests' codes and grants, which alice belongs to.
    store
        .tenant(&t)
        .create_organization("org-a", "Alpha", NOW)
        .await
        .unwrap();
    store
        .tenant(&t)
        .add_membership("u1", "org-a", NOW)
        .await
        .unwrap();
    t
}

fn pending<'a>(request_hash: &'a [u8], browser_hash: &'a [u8]) -> NewAuthorizationRequest<'a> {
    NewAuthorizationRequest {
        request_hash,
        client_id: "web",
        redirect_uri: "https://app.example.com/cb",
        scope: "openid jobs",
        state: "st",
        nonce: Some("n-1"),
        code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        login_hint: None,
        browser_hash,
        csrf_hash: b"csrf",
        user_id: None,
        auth_time: None,
        acr_mfa: false,
        expires_at: NOW + 600,
    }
}

async fn authorization_requests_bind_to_a_browser_and_are_consumed_once(store: Store) {
    let t = with_client_and_user(&store, "acme").await;
    let tenant = store.tenant(&t);
    tenant
        .create_authorization_request(&pending(b"req-1", b"browser-a"), NOW)
        .await
        .unwrap();
    let found = tenant
        .find_authorization_request(b"req-1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            found.scope.as_str(),
            found.nonce.as_deref(),
            found.user_id.as_deref()
        ),
        ("openid jobs", Some("n-1"), None)
    );
    assert_eq!(found.expires_at, NOW + 600);

    // Sign-in: only from the bound browser, and it moves the binding to the new session.
    assert!(!tenant
        .record_signin(b"req-1", b"browser-b", b"session-b", "u1", NOW + 5, NOW + 5)
        .await
        .unwrap());
    assert!(tenant
        .record_signin(b"req-1", b"browser-a", b"session-a", "u1", NOW + 5, NOW + 5)
        .await
        .unwrap());
    let signed_in = tenant
        .find_authorization_request(b"req-1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (signed_in.user_id.as_deref(), signed_in.auth_time),
        (Some("u1"), Some(NOW + 5))
    );
    assert_eq!(signed_in.browser_hash, b"session-a");

    assert_eq!(
        tenant
            .consume_authorization_request(b"req-1", b"browser-a", NOW + 6)
            .await
            .unwrap(),
        None,
        "old binding"
    );
    let consumed = tenant
        .consume_authorization_request(b"req-1", b"session-a", NOW + 6)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(consumed.consumed_at, Some(NOW + 6));
    assert_eq!(
        tenant
            .consume_authorization_request(b"req-1", b"session-a", NOW + 7)
            .await
            .unwrap(),
        None,
        "twice"
    );
    assert!(!tenant
        .record_signin(b"req-1", b"session-a", b"x", "u1", NOW + 8, NOW + 8)
        .await
        .unwrap());

    tenant
        .create_authorization_request(&pending(b"req-2", b"browser-a"), NOW)
        .await
        .unwrap();
    assert_eq!(
        tenant
            .consume_authorization_request(b"req-2", b"browser-a", NOW + 600)
            .await
            .unwrap(),
        None,
        "expired"
    );
    let other = seeded(&store, "other").await;
    assert_eq!(
        store
            .tenant(&other)
            .find_authorization_request(b"req-2")
            .await
            .unwrap(),
        None
    );
    let unknown_client = NewAuthorizationRequest {
        client_id: "nope",
        ..pending(b"req-3", b"b")
    };
    let refused = tenant
        .create_authorization_request(&unknown_client, NOW)
        .await;
    assert!(
        matches!(refused, Err(StoreError::NotFound(Entity::Client))),
        "{refused:?}"
    );
}

async fn browser_sessions_expire_and_stay_in_their_tenant(store: Store) {
    let t = with_client_and_user(&store, "acme").await;
    let tenant = store.tenant(&t);
    tenant
        .create_browser_session(
            &store::testing::password_session(b"s-1", "sid-1", "u1", NOW, NOW + 100),
            NOW,
        )
        .await
        .unwrap();
    let session = tenant
        .find_browser_session(b"s-1", NOW + 99)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(session.sid.as_deref(), Some("sid-1"));
    assert_eq!(
        (
            session.user_id.as_str(),
            session.auth_time,
            session.expires_at
        ),
        ("u1", NOW, NOW + 100)
    );
    assert_eq!(
        tenant
            .find_browser_session(b"s-1", NOW + 100)
            .await
            .unwrap(),
        None,
        "expired"
    );
    let other = seeded(&store, "other").await;
    assert_eq!(
        store
            .tenant(&other)
            .find_browser_session(b"s-1", NOW)
            .await
            .unwrap(),
        None
    );
    let ghost_user = tenant
        .create_browser_session(
            &store::testing::password_session(b"s-2", "sid-2", "u9", NOW, NOW + 100),
            NOW,
        )
        .await;
    assert!(
        matches!(ghost_user, Err(StoreError::NotFound(Entity::User))),
        "{ghost_user:?}"
    );
    tenant.delete_browser_session(b"s-1", NOW).await.unwrap();
    assert_eq!(
        tenant.find_browser_session(b"s-1", NOW).await.unwrap(),
        None
    );
}

async fn authorization_codes_are_stored_once(store: Store) {
    let t = with_client_and_user(&store, "acme").await;
    let code = NewAuthorizationCode {
        code_hash: b"code-1",
        client_id: "web",
        redirect_uri: "https://app.example.com/cb",
        user_id: "u1",
        organization_guid: "org-a",
        scope: "openid",
        nonce: None,
        code_challenge: "c",
        auth_time: NOW,
        expires_at: NOW + 60,
        sid: None,
        amr: None,
    };
    store
        .tenant(&t)
        .create_authorization_code(&code, NOW)
        .await
        .unwrap();
    let stored = store
        .tenant(&t)
        .find_authorization_code(b"code-1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            stored.organization_guid.as_str(),
            stored.expires_at,
            stored.redeemed_at
        ),
        ("org-a", NOW + 60, None)
    );
    let other = seeded(&store, "other").await;
    assert_eq!(
        store
            .tenant(&other)
            .find_authorization_code(b"code-1")
            .await
            .unwrap(),
        None
    );
    let twice = store.tenant(&t).create_authorization_code(&code, NOW).await;
    assert!(
        matches!(twice, Err(StoreError::Conflict(Entity::AuthorizationCode))),
        "{twice:?}"
    );
}

async fn signin_failures_count_per_subject_and_restart_after_the_window(store: Store) {
    let t = seeded(&store, "acme").await;
    let tenant = store.tenant(&t);
    let alice = FailureSubject::Account("alice");
    assert_eq!(tenant.signin_failures(alice).await.unwrap(), None);
    for expected in 1..=3 {
        let count = tenant
            .record_signin_failure(alice, NOW + expected, NOW - 900)
            .await
            .unwrap();
        assert_eq!(
            (
                count.failures,
                count.first_failure_at,
                count.last_failure_at
            ),
            (expected, NOW + 1, NOW + expected)
        );
    }
    // The address and another tenant count apart.
    let address = FailureSubject::Address("192.0.2.1");
    assert_eq!(
        tenant
            .record_signin_failure(address, NOW, NOW - 900)
            .await
            .unwrap()
            .failures,
        1
    );
    let other = seeded(&store, "other").await;
    assert_eq!(
        store
            .tenant(&other)
            .record_signin_failure(alice, NOW, NOW - 900)
            .await
            .unwrap()
            .failures,
        1
    );
    // After the window the count starts over.
    let later = NOW + 10_000;
    let count = tenant
        .record_signin_failure(alice, later, later - 900)
        .await
        .unwrap();
    assert_eq!((count.failures, count.first_failure_at), (1, later));
    tenant.clear_signin_failures(alice).await.unwrap();
    assert_eq!(tenant.signin_failures(alice).await.unwrap(), None);
    assert_eq!(
        tenant
            .signin_failures(address)
            .await
            .unwrap()
            .unwrap()
            .failures,
        1
    );
}

fn code<'a>(code_hash: &'a [u8]) -> NewAuthorizationCode<'a> {
    NewAuthorizationCode {
        code_hash,
        client_id: "web",
        redirect_uri: "https://app.example.com/cb",
        user_id: "u1",
        organization_guid: "org-a",
        scope: "openid offline_access",
        nonce: Some("n"),
        code_challenge: "c",
        auth_time: NOW,
        expires_at: NOW + 60,
        sid: None,
        amr: None,
    }
}

fn grant(grant_id: &str) -> NewGrant<'_> {
    NewGrant {
        grant_id,
        client_id: "web",
        user_id: "u1",
        organization_guid: "org-a",
        scope: "openid offline_access",
        auth_time: NOW,
        dpop_jkt: None,
    }
}

fn refresh(token_hash: &[u8]) -> NewRefreshToken<'_> {
    NewRefreshToken {
        token_hash,
        expires_at: NOW + 30 * 86_400,
    }
}

/// Code `c1` exchanged for grant `g1`, with the first refresh token `refresh_hash` if any.
async fn granted(tenant: &TenantStore<'_>, refresh_hash: Option<&[u8]>) {
    tenant
        .create_authorization_code(&code(b"c1"), NOW)
        .await
        .unwrap();
    let redeemed = redeem(tenant, b"c1", "g1", NOW).await;
    issued(redeemed, "g1", refresh_hash, NOW).await;
}

/// A first redemption, which must succeed, with its transaction open.
async fn redeem<'t>(
    tenant: &'t TenantStore<'_>,
    hash: &[u8],
    grant_id: &str,
    now: i64,
) -> RedeemedCode<'t> {
    match tenant
        .present_code("web", hash, grant_id, now)
        .await
        .unwrap()
        .expect("the client exists")
        .1
    {
        CodeExchange::Redeemed(redeemed) => *redeemed,
        other => panic!("{hash:?} must redeem, got {other:?}"),
    }
}

/// An issue that must write its grant: the user it returns.
async fn issued(
    redeemed: RedeemedCode<'_>,
    grant_id: &str,
    refresh_hash: Option<&[u8]>,
    now: i64,
) -> User {
    match redeemed
        .issue(&grant(grant_id), refresh_hash.map(refresh), now)
        .await
        .unwrap()
    {
        Issuance::Issued(user) => *user,
        other => panic!("{grant_id} must be issued, got {other:?}"),
    }
}

/// A later presentation, which must be a replay: the grant the code issued, if any.
async fn replay(tenant: &TenantStore<'_>, hash: &[u8], now: i64) -> Option<String> {
    match tenant
        .present_code("web", hash, "gx", now)
        .await
        .unwrap()
        .expect("the client exists")
        .1
    {
        CodeExchange::Replayed {
            grant_id,
            client_id,
            expires_at,
        } => {
            // What the token endpoint needs to decide whether the replay may revoke.
            assert_eq!((client_id.as_str(), expires_at), ("web", NOW + 60));
            grant_id
        }
        other => panic!("{hash:?} must be a replay, got {other:?}"),
    }
}

async fn a_code_is_redeemed_once_and_a_replay_names_its_grant(store: Store) {
    let t = with_client_and_user(&store, "acme").await;
    let tenant = store.tenant(&t);
    for hash in [b"c1", b"c2"] {
        tenant
            .create_authorization_code(&code(hash), NOW)
            .await
            .unwrap();
    }

    // A presentation dropped before it issues or spends (a request cut off) spends nothing.
    drop(redeem(&tenant, b"c1", "g0", NOW + 1).await);

    // A redemption that fails its checks is spent alone and names no grant.
    let redeemed = redeem(&tenant, b"c1", "g0", NOW + 1).await;
    assert_eq!(
        (
            redeemed.code().redeemed_at,
            redeemed.code().nonce.as_deref()
        ),
        (Some(NOW + 1), Some("n"))
    );
    assert_eq!(redeemed.spend().await.unwrap().grant_id, None);
    assert_eq!(replay(&tenant, b"c1", NOW + 2).await, None);
    assert!(tenant.find_grant("g0").await.unwrap().is_none());

    // A redemption that issues writes the grant and its first refresh token in its commit;
    // a replay names that grant.
    let redeemed = redeem(&tenant, b"c2", "g2", NOW + 3).await;
    let user = issued(redeemed, "g2", Some(b"r2"), NOW + 3).await;
    assert_eq!(user.user_id, "u1");
    assert_eq!(replay(&tenant, b"c2", NOW + 4).await, Some("g2".into()));
    let token = tenant.find_refresh_token(b"r2").await.unwrap().unwrap();
    assert_eq!(
        (token.grant.grant_id.as_str(), token.grant.created_at),
        ("g2", NOW + 3)
    );

    assert!(matches!(
        tenant
            .present_code("web", b"nope", "gx", NOW)
            .await
            .unwrap()
            .expect("the client exists")
            .1,
        CodeExchange::Unknown
    ));
    // Another tenant's client of the same id finds no code of this tenant's.
    let other = with_client_and_user(&store, "other").await;
    assert!(matches!(
        store
            .tenant(&other)
            .present_code("web", b"c2", "gx", NOW)
            .await
            .unwrap()
            .expect("the client exists")
            .1,
        CodeExchange::Unknown
    ));
    // The client comes with the code; no client of that id, nothing about the code.
    let (client, _) = tenant
        .present_code("web", b"c2", "gx", NOW)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (client.client_id.as_str(), client.redirect_uris.len()),
        ("web", 1)
    );
    assert!(tenant
        .present_code("nobody", b"c2", "gx", NOW)
        .await
        .unwrap()
        .is_none());
}

/// RFC 6749 §4.1.2 and §10.5: two presentations of one code, both read before either
/// redeems it, issue one grant, and the other is a replay naming that grant (which the token
/// endpoint then revokes): the conditional redemption in `issue` settles the race.
async fn two_presentations_of_one_code_issue_once_and_the_loser_is_a_replay(store: Store) {
    let t = with_client_and_user(&store, "acme").await;
    let tenant = store.tenant(&t);
    for hash in [b"c1", b"c2"] {
        tenant
            .create_authorization_code(&code(hash), NOW)
            .await
            .unwrap();
    }

    let first = redeem(&tenant, b"c1", "g1", NOW + 1).await;
    let second = redeem(&tenant, b"c1", "g2", NOW + 2).await;
    let user = issued(first, "g1", Some(b"r1"), NOW + 1).await;
    let loser_names = match second
        .issue(&grant("g2"), Some(refresh(b"r2")), NOW + 2)
        .await
        .unwrap()
    {
        Issuance::Replayed { grant_id } => grant_id,
        other => panic!("the second issue must be a replay, got {other:?}"),
    };
    assert_eq!(user.user_id, "u1");
    assert_eq!(loser_names.as_deref(), Some("g1"));
    // The winner's grant and first refresh token alone exist, and the code names that grant.
    let token = tenant.find_refresh_token(b"r1").await.unwrap().unwrap();
    assert_eq!(
        (token.grant.grant_id.as_str(), token.grant.revoked_at),
        ("g1", None)
    );
    assert!(tenant.find_grant("g2").await.unwrap().is_none());
    assert!(tenant.find_refresh_token(b"r2").await.unwrap().is_none());
    let stored = tenant
        .find_authorization_code(b"c1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (stored.redeemed_at, stored.grant_id.as_deref()),
        (Some(NOW + 1), Some("g1"))
    );

    // A loser that failed the endpoint's checks spends a code already spent, and must not
    // take the winner's grant off it (a later replay still revokes it).
    let second = redeem(&tenant, b"c2", "g4", NOW + 3).await;
    issued(
        redeem(&tenant, b"c2", "g3", NOW + 3).await,
        "g3",
        None,
        NOW + 3,
    )
    .await;
    assert_eq!(second.spend().await.unwrap().grant_id, None);
    assert_eq!(replay(&tenant, b"c2", NOW + 4).await, Some("g3".into()));
}

async fn refresh_tokens_rotate_once_and_reuse_revokes_the_grant(store: Store) {
    let t = with_client_and_user(&store, "acme").await;
    let tenant = store.tenant(&t);
    granted(&tenant, Some(b"r1")).await;
    let stored = tenant.find_refresh_token(b"r1").await.unwrap().unwrap();
    assert_eq!(
        (stored.grant.grant_id.as_str(), stored.consumed_at),
        ("g1", None)
    );
    assert!(stored.is_live(NOW));
    assert!(!stored.is_live(NOW + 30 * 86_400), "expired");

    // Another client cannot use it, and that attempt does not consume it.
    assert_eq!(
        tenant
            .rotate_refresh_token(
                b"r1",
                RefreshingClient::new("spa", 0),
                refresh(b"x"),
                MAX_AGE,
                NOW
            )
            .await
            .unwrap(),
        RefreshRotation::Refused
    );
    let RefreshRotation::Rotated(g, _) = tenant
        .rotate_refresh_token(
            b"r1",
            RefreshingClient::new("web", 0),
            refresh(b"r2"),
            MAX_AGE,
            NOW + 5,
        )
        .await
        .unwrap()
    else {
        panic!("the live token rotates");
    };
    assert_eq!(
        (g.grant_id.as_str(), g.scope.as_str(), g.revoked_at),
        ("g1", "openid offline_access", None)
    );
    let RefreshRotation::Rotated(_, _) = tenant
        .rotate_refresh_token(
            b"r2",
            RefreshingClient::new("web", 0),
            refresh(b"r3"),
            MAX_AGE,
            NOW + 6,
        )
        .await
        .unwrap()
    else {
        panic!("its successor rotates");
    };
    // r1 again: reuse. The grant is revoked, so even the newest token r3 is refused.
    assert_eq!(
        tenant
            .rotate_refresh_token(
                b"r1",
                RefreshingClient::new("web", 0),
                refresh(b"r4"),
                MAX_AGE,
                NOW + 7
            )
            .await
            .unwrap(),
        RefreshRotation::Reused {
            grant_id: "g1".into()
        }
    );
    assert_eq!(
        tenant.find_grant("g1").await.unwrap().unwrap().revoked_at,
        Some(NOW + 7)
    );
    assert_eq!(
        tenant
            .rotate_refresh_token(
                b"r3",
                RefreshingClient::new("web", 0),
                refresh(b"r5"),
                MAX_AGE,
                NOW + 8
            )
            .await
            .unwrap(),
        RefreshRotation::Refused
    );
    assert!(
        !tenant.revoke_grant("g1", "again", NOW + 9).await.unwrap(),
        "already revoked"
    );
    for grant_id in ["g1", "no-such-grant"] {
        assert_eq!(
            tenant.api_standing(grant_id, "org-a").await.unwrap(),
            ApiStanding::Revoked,
            "{grant_id}"
        );
    }

    // An expired token is refused without revoking anything.
    tenant
        .create_authorization_code(&code(b"c2"), NOW)
        .await
        .unwrap();
    let redeemed = redeem(&tenant, b"c2", "g2", NOW).await;
    let issuance = redeemed
        .issue(
            &grant("g2"),
            Some(NewRefreshToken {
                token_hash: b"old",
                expires_at: NOW + 10,
            }),
            NOW,
        )
        .await
        .unwrap();
    assert!(matches!(issuance, Issuance::Issued(_)), "{issuance:?}");
    assert_eq!(
        tenant
            .rotate_refresh_token(
                b"old",
                RefreshingClient::new("web", 0),
                refresh(b"x2"),
                MAX_AGE,
                NOW + 10
            )
            .await
            .unwrap(),
        RefreshRotation::Refused
    );
    assert_eq!(
        tenant.find_grant("g2").await.unwrap().unwrap().revoked_at,
        None
    );
    assert!(matches!(
        tenant.api_standing("g2", "org-a").await.unwrap(),
        ApiStanding::Live { .. }
    ));
}

/// DESIGN.md: rotation is one atomic conditional update, so concurrent refreshes of one
/// token can never both win.
async fn twenty_concurrent_rotations_of_one_token_have_one_winner(store: Store) {
    let t = with_client_and_user(&store, "acme").await;
    granted(&store.tenant(&t), Some(b"r1")).await;
    let attempts = (0..20u8).map(|i| {
        let store = store.clone();
        let t = t.clone();
        tokio::spawn(async move {
            let next = [b'n', i];
            store
                .tenant(&t)
                .rotate_refresh_token(
                    b"r1",
                    RefreshingClient::new("web", 0),
                    refresh(&next),
                    MAX_AGE,
                    NOW + 1,
                )
                .await
                .unwrap()
        })
    });
    let mut rotated = 0;
    for attempt in attempts.collect::<Vec<_>>() {
        if let RefreshRotation::Rotated(_, _) = attempt.await.unwrap() {
            rotated += 1;
        }
    }
    assert_eq!(rotated, 1);
}

/// The sign-in throttle counts an attempt before checking its password; parallel attempts
/// must each get a distinct count, or they could all slip under the limit.
async fn concurrent_failures_each_get_their_own_count(store: Store) {
    let t = seeded(&store, "acme").await;
    let attempts: Vec<_> = (0..10)
        .map(|_| {
            let (store, t) = (store.clone(), t.clone());
            tokio::spawn(async move {
                let subject = FailureSubject::Account("alice");
                store
                    .tenant(&t)
                    .record_signin_failure(subject, NOW, NOW - 900)
                    .await
                    .unwrap()
                    .failures
            })
        })
        .collect();
    let mut counts = Vec::new();
    for attempt in attempts {
        counts.push(attempt.await.unwrap());
    }
    counts.sort_unstable();
    assert_eq!(counts, (1..=10).collect::<Vec<i64>>());
}

/// The round trips of the two hot paths (issue 9: no statement that is not needed), counted
/// by the store: a read, then one trip that does the whole transaction's work (PostgreSQL:
/// one statement of data-modifying CTEs; SQLite: one batch, or one statement).
async fn a_grant_costs_a_fixed_number_of_statements(store: Store) {
    let t = with_client_and_user(&store, "acme").await;
    let tenant = store.tenant(&t);
    tenant
        .create_authorization_code(&code(b"c1"), NOW)
        .await
        .unwrap();

    // Code exchange: read the client with the code, then redeem it, insert the grant and its
    // refresh token and read the user in one trip.
    let before = store.statements_executed();
    let redeemed = redeem(&tenant, b"c1", "g1", NOW + 1).await;
    let user = issued(redeemed, "g1", Some(b"r1"), NOW + 1).await;
    assert_eq!(store.statements_executed() - before, 2, "code exchange");
    assert_eq!(user.username, "alice");
    // The grant and its first refresh token were really written, and the code names them.
    let token = tenant.find_refresh_token(b"r1").await.unwrap().unwrap();
    assert_eq!(
        (
            token.grant.grant_id.as_str(),
            token.grant.user_id.as_str(),
            token.grant.created_at,
            token.consumed_at
        ),
        ("g1", "u1", NOW + 1, None)
    );
    assert_eq!(replay(&tenant, b"c1", NOW + 1).await, Some("g1".into()));

    // A code that fails the token endpoint's checks: read it with the client, then one
    // conditional redemption.
    tenant
        .create_authorization_code(&code(b"c2"), NOW)
        .await
        .unwrap();
    let before = store.statements_executed();
    redeem(&tenant, b"c2", "g2", NOW + 1)
        .await
        .spend()
        .await
        .unwrap();
    assert_eq!(store.statements_executed() - before, 2, "spent code");
    assert_eq!(replay(&tenant, b"c2", NOW + 1).await, None);

    // Refresh: one statement that consumes the token, stores its successor and reads the
    // grant with its user (PostgreSQL: data-modifying CTEs; SQLite: an upsert of two rows).
    let before = store.statements_executed();
    let rotation = tenant
        .rotate_refresh_token(
            b"r1",
            RefreshingClient::new("web", 0),
            refresh(b"r2"),
            MAX_AGE,
            NOW + 2,
        )
        .await
        .unwrap();
    let RefreshRotation::Rotated(rotated, user) = rotation else {
        panic!("not rotated: {rotation:?}");
    };
    assert_eq!(store.statements_executed() - before, 1, "refresh rotation");
    assert_eq!(
        (rotated.grant_id.as_str(), user.username.as_str()),
        ("g1", "alice")
    );
    // The successor was stored and the old token spent: the next rotation uses r2.
    assert!(matches!(
        tenant
            .rotate_refresh_token(
                b"r2",
                RefreshingClient::new("web", 0),
                refresh(b"r3"),
                MAX_AGE,
                NOW + 3
            )
            .await
            .unwrap(),
        RefreshRotation::Rotated(_, _)
    ));
}

async fn userinfo_reads_the_user_of_a_live_grant_only(store: Store) {
    let t = with_client_and_user(&store, "acme").await;
    let tenant = store.tenant(&t);
    granted(&tenant, None).await;
    let GrantUser::Live(user) = tenant.user_of_grant("g1", "u1").await.unwrap() else {
        panic!("a live grant's user");
    };
    assert_eq!(
        (user.user_id.as_str(), user.username.as_str()),
        ("u1", "alice")
    );
    assert_eq!(
        tenant.user_of_grant("g1", "someone-else").await.unwrap(),
        GrantUser::Gone,
        "a token whose subject is not the grant's user"
    );
    assert_eq!(
        tenant.user_of_grant("no-such-grant", "u1").await.unwrap(),
        GrantUser::Revoked
    );
    let other = seeded(&store, "other").await;
    assert_eq!(
        store
            .tenant(&other)
            .user_of_grant("g1", "u1")
            .await
            .unwrap(),
        GrantUser::Revoked,
        "another tenant's grant"
    );
    assert!(tenant.revoke_grant("g1", "test", NOW + 1).await.unwrap());
    assert_eq!(
        tenant.user_of_grant("g1", "u1").await.unwrap(),
        GrantUser::Revoked
    );
}

/// The SQLite file holds every password and secret hash: it is created readable and writable
/// by its owner alone, and so are its write-ahead log and shared-memory index.
#[cfg(unix)]
#[tokio::test]
async fn sqlite_files_are_created_for_their_owner_alone() {
    use std::os::unix::fs::PermissionsExt;
    let db = TestDatabase::sqlite();
    let store = connect(&db).await;
    seeded(&store, "acme").await;
    let path = db.url.strip_prefix("sqlite://").unwrap();
    for file in [
        path.to_owned(),
        format!("{path}-wal"),
        format!("{path}-shm"),
    ] {
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{file} has mode {mode:o}");
    }
}

/// Spec §1: tokens are bound to the organization membership chosen at consent. Once it is
/// removed, the API refuses the grant, a rotation is refused without spending the token or
/// revoking anything, and a code of that organization issues nothing.
async fn a_grant_ends_with_its_users_membership(store: Store) {
    let t = with_client_and_user(&store, "acme").await;
    let tenant = store.tenant(&t);
    granted(&tenant, Some(b"r1")).await;
    tenant
        .create_authorization_code(&code(b"c2"), NOW)
        .await
        .unwrap();
    assert!(matches!(
        tenant.api_standing("g1", "org-a").await.unwrap(),
        ApiStanding::Live { .. }
    ));

    assert!(tenant.remove_membership("u1", "org-a").await.unwrap());
    assert!(
        !tenant.remove_membership("u1", "org-a").await.unwrap(),
        "already removed"
    );
    assert_eq!(
        tenant.api_standing("g1", "org-a").await.unwrap(),
        ApiStanding::Revoked
    );
    assert_eq!(
        tenant
            .rotate_refresh_token(
                b"r1",
                RefreshingClient::new("web", 0),
                refresh(b"r2"),
                MAX_AGE,
                NOW + 1
            )
            .await
            .unwrap(),
        RefreshRotation::Refused
    );
    let token = tenant.find_refresh_token(b"r1").await.unwrap().unwrap();
    assert_eq!((token.consumed_at, token.grant.revoked_at), (None, None));
    assert!(tenant.find_refresh_token(b"r2").await.unwrap().is_none());
    // The code is spent and names no grant; nothing is written for it.
    let redeemed = redeem(&tenant, b"c2", "g2", NOW + 1).await;
    let issuance = redeemed
        .issue(&grant("g2"), Some(refresh(b"r3")), NOW + 1)
        .await
        .unwrap();
    assert_eq!(issuance, Issuance::UserGone);
    assert_eq!(replay(&tenant, b"c2", NOW + 2).await, None);
    assert!(tenant.find_grant("g2").await.unwrap().is_none());
    assert!(tenant.find_refresh_token(b"r3").await.unwrap().is_none());

    // A membership of another organization does not stand for this one.
    tenant
        .create_organization("org-b", "Bravo", NOW)
        .await
        .unwrap();
    tenant.add_membership("u1", "org-b", NOW).await.unwrap();
    assert_eq!(
        tenant
            .rotate_refresh_token(
                b"r1",
                RefreshingClient::new("web", 0),
                refresh(b"r2"),
                MAX_AGE,
                NOW + 3
            )
            .await
            .unwrap(),
        RefreshRotation::Refused
    );
    assert_eq!(
        tenant.api_standing("g1", "org-a").await.unwrap(),
        ApiStanding::Revoked
    );
}

/// A grant lasts its maximum age from its exchange, however often it rotates: a rotation at
/// its end is refused (spending and revoking nothing), even with a token that would outlive
/// it, and one just before gives a successor that expires with the grant.
async fn a_grant_ends_at_its_maximum_age_however_often_it_rotates(store: Store) {
    let t = with_client_and_user(&store, "acme").await;
    let tenant = store.tenant(&t);
    tenant
        .create_authorization_code(&code(b"c1"), NOW)
        .await
        .unwrap();
    // A first token that outlives its grant, as one issued under a longer maximum age.
    let long = NewRefreshToken {
        token_hash: b"r1",
        expires_at: NOW + 2 * MAX_AGE,
    };
    let redeemed = redeem(&tenant, b"c1", "g1", NOW).await;
    let issuance = redeemed.issue(&grant("g1"), Some(long), NOW).await.unwrap();
    assert!(matches!(issuance, Issuance::Issued(_)), "{issuance:?}");

    let end = NOW + MAX_AGE;
    let next = |token_hash: &'static [u8], now: i64| NewRefreshToken {
        token_hash,
        expires_at: now + 30 * 86_400,
    };
    assert_eq!(
        tenant
            .rotate_refresh_token(
                b"r1",
                RefreshingClient::new("web", 0),
                next(b"r2", end),
                MAX_AGE,
                end
            )
            .await
            .unwrap(),
        RefreshRotation::Refused
    );
    let token = tenant.find_refresh_token(b"r1").await.unwrap().unwrap();
    assert_eq!((token.consumed_at, token.grant.revoked_at), (None, None));

    let rotation = tenant
        .rotate_refresh_token(
            b"r1",
            RefreshingClient::new("web", 0),
            next(b"r2", end - 1),
            MAX_AGE,
            end - 1,
        )
        .await
        .unwrap();
    assert!(
        matches!(rotation, RefreshRotation::Rotated(..)),
        "{rotation:?}"
    );
    let successor = tenant.find_refresh_token(b"r2").await.unwrap().unwrap();
    assert_eq!(
        successor.expires_at, end,
        "the successor ends with its grant"
    );
    assert!(!successor.is_live(end));

    // The maximum age is the caller's: under a longer one the same grant goes on, and a
    // successor far from the grant's end keeps the expiry asked for.
    let rotation = tenant
        .rotate_refresh_token(
            b"r2",
            RefreshingClient::new("web", 0),
            next(b"r3", end - 1),
            2 * MAX_AGE,
            end - 1,
        )
        .await
        .unwrap();
    assert!(
        matches!(rotation, RefreshRotation::Rotated(..)),
        "{rotation:?}"
    );
    let successor = tenant.find_refresh_token(b"r3").await.unwrap().unwrap();
    assert_eq!(successor.expires_at, end - 1 + 30 * 86_400);
}

/// Issues 20 and 26: an attempt's place is taken in one conditional statement, so of ten
/// taken at once with three places, exactly three get one; a failure keeps its place, a
/// success frees its own and forgives the failures, and a window without attempts frees all.
async fn concurrent_reservations_take_no_more_places_than_allowed(store: Store) {
    let t = seeded(&store, "acme").await;
    let subject = FailureSubject::Address("192.0.2.1");
    let attempts: Vec<_> = (0..10)
        .map(|_| {
            let (store, t) = (store.clone(), t.clone());
            tokio::spawn(async move {
                store
                    .tenant(&t)
                    .reserve_signin_attempt(subject, 3, NOW, NOW - 900)
                    .await
                    .unwrap()
                    .is_some()
            })
        })
        .collect();
    let mut admitted = 0;
    for attempt in attempts {
        admitted += usize::from(attempt.await.unwrap());
    }
    assert_eq!(admitted, 3);
    let tenant = store.tenant(&t);
    let read = || async {
        let c = tenant.signin_failures(subject).await.unwrap().unwrap();
        (c.failures, c.in_flight)
    };
    assert_eq!(read().await, (0, 3));
    tenant
        .end_signin_attempt(subject, AttemptEnd::Failed, NOW, NOW - 900)
        .await
        .unwrap();
    tenant
        .end_signin_attempt(subject, AttemptEnd::Succeeded, NOW, NOW - 900)
        .await
        .unwrap();
    assert_eq!(read().await, (0, 1), "the success forgave the failure");
    tenant
        .end_signin_attempt(subject, AttemptEnd::Released, NOW, NOW - 900)
        .await
        .unwrap();
    assert_eq!(read().await, (0, 0));
    // The first refusal after a failure is the one to write down.
    tenant
        .record_signin_failure(subject, NOW, NOW - 900)
        .await
        .unwrap();
    assert!(tenant.count_signin_refusal(subject).await.unwrap());
    assert!(!tenant.count_signin_refusal(subject).await.unwrap());
    // A place never given back is freed once a window passes without an attempt.
    for _ in 0..2 {
        tenant
            .reserve_signin_attempt(subject, 3, NOW, NOW - 900)
            .await
            .unwrap()
            .unwrap();
    }
    assert!(tenant
        .reserve_signin_attempt(subject, 3, NOW, NOW - 900)
        .await
        .unwrap()
        .is_none());
    let later = NOW + 901;
    let fresh = tenant
        .reserve_signin_attempt(subject, 3, later, later - 900)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((fresh.failures, fresh.in_flight), (0, 1));
    assert!(
        tenant.count_signin_refusal(subject).await.unwrap(),
        "refusals start over"
    );
}

/// Issue 26: anonymous authorization requests are counted per tenant and address in fixed
/// windows; a refusal writes nothing and a new window starts the count over.
async fn authorization_request_quota_counts_per_address_in_fixed_windows(store: Store) {
    let t = seeded(&store, "acme").await;
    let other = seeded(&store, "other").await;
    let take = |address: &'static str, now| {
        let tenant = store.tenant(&t);
        async move {
            tenant
                .take_authorization_request_quota(address, 2, now, 600)
                .await
                .unwrap()
        }
    };
    assert!(take("192.0.2.1", NOW).await);
    assert!(take("192.0.2.1", NOW + 10).await);
    assert!(!take("192.0.2.1", NOW + 20).await);
    assert!(take("192.0.2.2", NOW + 20).await, "another address");
    assert!(store
        .tenant(&other)
        .take_authorization_request_quota("192.0.2.1", 2, NOW + 20, 600)
        .await
        .unwrap());
    // The window runs from its first request, not from the last.
    assert!(!take("192.0.2.1", NOW + 599).await);
    assert!(take("192.0.2.1", NOW + 600).await);
    assert!(take("192.0.2.1", NOW + 601).await);
    assert!(!take("192.0.2.1", NOW + 602).await);
}

/// A rotation by a client authenticated from a copy kept in memory stands only while the
/// client is still as that copy was read, and checks it inside its one statement: after any
/// change (here the redirect URIs, then a disable), the rotation is `ClientChanged` and
/// neither spends the token nor, for a consumed one, revokes the grant.
async fn a_rotation_by_a_kept_client_stands_only_while_the_client_is_unchanged(store: Store) {
    let t = with_client_and_user(&store, "acme").await;
    let tenant = store.tenant(&t);
    granted(&tenant, Some(b"r1")).await;
    let kept = tenant.find_client("web").await.unwrap().unwrap();
    let rotate = |presented: &'static [u8], next: &'static [u8], state| {
        let tenant = &tenant;
        async move {
            let client = RefreshingClient {
                known: Some(state),
                ..RefreshingClient::new("web", 0)
            };
            tenant
                .rotate_refresh_token(presented, client, refresh(next), MAX_AGE, NOW + 1)
                .await
                .unwrap()
        }
    };

    let before = store.statements_executed();
    assert!(matches!(
        rotate(b"r1", b"r2", kept.state()).await,
        RefreshRotation::Rotated(..)
    ));
    assert_eq!(store.statements_executed() - before, 1, "one statement");

    let uris = vec!["https://app.example.com/other".to_owned()];
    tenant.set_client_redirect_uris("web", &uris).await.unwrap();
    assert_eq!(
        rotate(b"r2", b"r3", kept.state()).await,
        RefreshRotation::ClientChanged
    );
    // A consumed token presented by the stale copy is not judged: no reuse, no revocation.
    assert_eq!(
        rotate(b"r1", b"r3", kept.state()).await,
        RefreshRotation::ClientChanged
    );
    let token = tenant.find_refresh_token(b"r2").await.unwrap().unwrap();
    assert_eq!((token.consumed_at, token.grant.revoked_at), (None, None));
    assert!(tenant.find_refresh_token(b"r3").await.unwrap().is_none());

    // Read again, the client rotates the unspent token.
    let fresh = tenant.find_client("web").await.unwrap().unwrap();
    assert_eq!(fresh.revision, kept.revision + 1);
    assert!(matches!(
        rotate(b"r2", b"r3", fresh.state()).await,
        RefreshRotation::Rotated(..)
    ));

    // A disabled client's copy, read after the disable, stands for nothing either.
    tenant.disable_client("web", NOW + 1).await.unwrap();
    let disabled = tenant.find_client("web").await.unwrap().unwrap();
    assert!(disabled.disabled);
    assert_eq!(
        rotate(b"r3", b"r4", disabled.state()).await,
        RefreshRotation::ClientChanged
    );
}

/// The one-trip exchange of a client authenticated from a kept copy: a code that fails any
/// check, or a client no longer as its copy says, matches nothing and spends nothing; a code
/// that passes is redeemed with its grant, its refresh token for `offline_access` only, and
/// its user, in one statement.
async fn a_checked_exchange_redeems_only_a_code_that_passes_every_check(store: Store) {
    let t = with_client_and_user(&store, "acme").await;
    let tenant = store.tenant(&t);
    let kept = tenant.find_client("web").await.unwrap().unwrap();
    tenant
        .create_authorization_code(&code(b"c1"), NOW)
        .await
        .unwrap();
    let passing = PresentedCode {
        code_hash: b"c1",
        client_id: "web",
        client_state: kept.state(),
        redirect_uri: "https://app.example.com/cb",
        code_challenge: "c",
        grant_id: "g1",
        dpop_jkt: None,
        refresh_token: refresh(b"r1"),
    };
    // Another code of the client, presented as `passing` is, with a grant and token of its own.
    let another =
        |code_hash: &'static [u8], grant_id: &'static str, token: &'static [u8]| PresentedCode {
            code_hash,
            grant_id,
            refresh_token: refresh(token),
            ..passing
        };
    let exchange = |presented: PresentedCode<'static>, now: i64| {
        let tenant = &tenant;
        async move { tenant.exchange_checked_code(&presented, now).await.unwrap() }
    };
    let changed = Revision {
        revision: kept.revision + 1,
        ..kept.state()
    };
    let failing = [
        PresentedCode {
            redirect_uri: "https://app.example.com/other",
            ..passing
        },
        PresentedCode {
            code_challenge: "d",
            ..passing
        },
        PresentedCode {
            client_id: "spa",
            ..passing
        },
        PresentedCode {
            client_state: changed,
            ..passing
        },
        PresentedCode {
            code_hash: b"c9",
            ..passing
        },
    ];
    for presented in failing {
        assert_eq!(
            exchange(presented, NOW + 1).await,
            CheckedExchange::NotRedeemed,
            "{presented:?}"
        );
    }
    // Expired: a code lives until its expires_at, exclusive.
    assert_eq!(
        exchange(passing, NOW + 60).await,
        CheckedExchange::NotRedeemed
    );
    let unspent = tenant
        .find_authorization_code(b"c1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!((unspent.redeemed_at, unspent.grant_id), (None, None));

    let before = store.statements_executed();
    let CheckedExchange::Issued {
        code: redeemed,
        user,
        refresh_token_stored,
    } = exchange(passing, NOW + 1).await
    else {
        panic!("c1 must be issued");
    };
    assert_eq!(store.statements_executed() - before, 1, "one trip");
    assert_eq!(
        (
            redeemed.grant_id.as_deref(),
            redeemed.redeemed_at,
            redeemed.nonce.as_deref(),
            redeemed.scope.as_str()
        ),
        (
            Some("g1"),
            Some(NOW + 1),
            Some("n"),
            "openid offline_access"
        )
    );
    assert_eq!(
        (user.user_id.as_str(), user.username.as_str()),
        ("u1", "alice")
    );
    assert!(refresh_token_stored);
    let token = tenant.find_refresh_token(b"r1").await.unwrap().unwrap();
    assert_eq!(
        (
            token.grant.grant_id.as_str(),
            token.grant.user_id.as_str(),
            token.grant.organization_guid.as_str(),
            token.grant.created_at
        ),
        ("g1", "u1", "org-a", NOW + 1)
    );
    // Used: it matches nothing again, and the other path finds the replay.
    assert_eq!(
        exchange(
            PresentedCode {
                grant_id: "g2",
                ..passing
            },
            NOW + 2
        )
        .await,
        CheckedExchange::NotRedeemed
    );
    assert_eq!(replay(&tenant, b"c1", NOW + 2).await, Some("g1".into()));

    // Without offline_access, the grant has no refresh token.
    tenant
        .create_authorization_code(
            &NewAuthorizationCode {
                scope: "openid jobs",
                ..code(b"c2")
            },
            NOW,
        )
        .await
        .unwrap();
    let online = another(b"c2", "g2", b"r2");
    let CheckedExchange::Issued {
        refresh_token_stored,
        ..
    } = exchange(online, NOW + 1).await
    else {
        panic!("c2 must be issued");
    };
    assert!(!refresh_token_stored);
    assert!(tenant.find_refresh_token(b"r2").await.unwrap().is_none());
    assert!(tenant.find_grant("g2").await.unwrap().is_some());

    // RFC 9449 §5: a public client's grant bound to its DPoP key refreshes only with it.
    tenant
        .create_authorization_code(&code(b"c5"), NOW)
        .await
        .unwrap();
    let bound = PresentedCode {
        dpop_jkt: Some("jkt-1"),
        ..another(b"c5", "g5", b"r5")
    };
    assert!(matches!(
        exchange(bound, NOW + 1).await,
        CheckedExchange::Issued { .. }
    ));
    let rotate = |jkt| {
        let tenant = &tenant;
        async move {
            let client = RefreshingClient {
                dpop_jkt: jkt,
                ..RefreshingClient::new("web", 0)
            };
            tenant
                .rotate_refresh_token(b"r5", client, refresh(b"r6"), MAX_AGE, NOW + 2)
                .await
                .unwrap()
        }
    };
    assert_eq!(rotate(None).await, RefreshRotation::WrongKey);
    assert!(matches!(
        rotate(Some("jkt-1")).await,
        RefreshRotation::Rotated(..)
    ));

    // A user no longer a member: the code is spent without a grant.
    tenant
        .create_authorization_code(&code(b"c3"), NOW)
        .await
        .unwrap();
    tenant.remove_membership("u1", "org-a").await.unwrap();
    let gone = another(b"c3", "g3", b"r3");
    assert_eq!(exchange(gone, NOW + 1).await, CheckedExchange::UserGone);
    assert_eq!(replay(&tenant, b"c3", NOW + 1).await, None);
    assert!(tenant.find_grant("g3").await.unwrap().is_none());
    assert!(tenant.find_refresh_token(b"r3").await.unwrap().is_none());

    // A changed client's copy: nothing is spent.
    tenant
        .create_authorization_code(&code(b"c4"), NOW)
        .await
        .unwrap();
    tenant.add_membership("u1", "org-a", NOW).await.unwrap();
    let uris = vec!["https://app.example.com/cb".to_owned()];
    tenant.set_client_redirect_uris("web", &uris).await.unwrap();
    let stale = PresentedCode {
        code_hash: b"c4",
        grant_id: "g4",
        refresh_token: refresh(b"r4"),
        ..passing
    };
    assert_eq!(exchange(stale, NOW + 1).await, CheckedExchange::NotRedeemed);
    let unspent = tenant
        .find_authorization_code(b"c4")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(unspent.redeemed_at, None);
}
