//! Issue 27's retry window on both backends, with fixed times: a consumed refresh token
//! presented again by its own client within the window, while the successor its rotation
//! issued is unused, is answered once (the successor ended, the grant standing); outside
//! the window, after the successor was used, by another client, or with no window, it is
//! reuse and revokes the grant as spec §5.7 says. Concurrent retries on two stores (two
//! nodes) have exactly one winner.

use store::testing::TestDatabase;
use store::{
    ClientChanges, CodeExchange, Issuance, NewAuthorizationCode, NewClient, NewGrant,
    NewRefreshToken, NewUser, RefreshRotation, RefreshingClient, Store, TenantId, TenantStore,
};

on_both_backends!(
    a_retry_within_the_window_is_answered_once_and_ends_the_first_successor,
    a_retry_after_the_window_is_reuse_and_revokes_the_grant,
    a_retry_after_the_successor_was_used_is_reuse_and_revokes_the_grant,
    another_clients_presentation_is_reuse_whatever_its_window,
    without_a_window_a_second_presentation_is_reuse_as_before,
    concurrent_retries_on_two_nodes_have_exactly_one_winner,
    concurrent_refreshes_of_a_live_token_with_a_window_are_one_rotation_and_one_retry,
);

const NOW: i64 = 1_800_000_000;
const MAX_AGE: i64 = 90 * 86_400;
/// The window of client `app`.
const WINDOW: i64 = 60;
/// When `r1` is consumed (rotated into `r2`).
const CONSUMED: i64 = NOW + 10;

async fn connect(db: &TestDatabase) -> Store {
    Store::connect(&db.url).await.expect("connect and migrate")
}

/// Tenant `acme`: public clients `app` (window [`WINDOW`]) and `other` (window 120), user
/// `u1` a member of `org-a`, and grant `g1` of `app` whose first refresh token `r1` was
/// rotated into `r2` at [`CONSUMED`].
async fn seeded(store: &Store) -> TenantId {
    let t = TenantId::parse("acme").unwrap();
    store.create_tenant(&t, "acme", NOW).await.unwrap();
    let tenant = store.tenant(&t);
    let uris = vec!["com.example.app:/cb".to_owned()];
    for (client_id, window) in [("app", WINDOW), ("other", 120)] {
        let client = NewClient {
            client_id,
            name: client_id,
            secret_hash: None,
            redirect_uris: &uris,
            scopes: &[],
        };
        tenant.create_client(&client, NOW).await.unwrap();
        let changes = ClientChanges {
            refresh_retry_seconds: Some(window),
            ..ClientChanges::default()
        };
        tenant
            .update_client(client_id, &changes, None)
            .await
            .unwrap();
    }
    let stored = tenant.find_client("app").await.unwrap().unwrap();
    assert_eq!(
        (
            stored.refresh_retry_seconds,
            stored.dpop_bound_access_tokens
        ),
        (WINDOW, false)
    );
    let user = NewUser {
        user_id: "u1",
        username: "alice",
        password_hash: "$argon2id$x",
        name: "N",
        email: "n@example.com",
    };
    tenant.create_user(&user, NOW).await.unwrap();
    tenant
        .create_organization("org-a", "Alpha", NOW)
        .await
        .unwrap();
    tenant.add_membership("u1", "org-a", NOW).await.unwrap();
    grant(&tenant).await;
    assert!(matches!(
        rotate(&tenant, b"r1", b"r2", CONSUMED).await,
        RefreshRotation::Rotated(..)
    ));
    t
}

/// Grant `g1` of client `app`, through a code exchange at `NOW`, with refresh token `r1`.
async fn grant(tenant: &TenantStore<'_>) {
    let code = NewAuthorizationCode {
        code_hash: b"code",
        client_id: "app",
        redirect_uri: "com.example.app:/cb",
        user_id: "u1",
        organization_guid: "org-a",
        scope: "openid offline_access",
        nonce: None,
        code_challenge: "c",
        auth_time: NOW,
        expires_at: NOW + 60,
        sid: None,
        amr: None,
    };
    tenant.create_authorization_code(&code, NOW).await.unwrap();
    let CodeExchange::Redeemed(redeemed) = tenant
        .present_code("app", b"code", "g1", NOW)
        .await
        .unwrap()
        .unwrap()
        .1
    else {
        panic!("the code redeems");
    };
    let new_grant = NewGrant {
        grant_id: "g1",
        client_id: "app",
        user_id: "u1",
        organization_guid: "org-a",
        scope: "openid offline_access",
        auth_time: NOW,
        dpop_jkt: None,
    };
    let first = NewRefreshToken {
        token_hash: b"r1",
        expires_at: NOW + 30 * 86_400,
    };
    let issued = redeemed.issue(&new_grant, Some(first), NOW).await.unwrap();
    assert!(matches!(issued, Issuance::Issued(_)), "{issued:?}");
}

/// `presented` by client `app` (its window), `next` to be stored.
async fn rotate(
    tenant: &TenantStore<'_>,
    presented: &[u8],
    next: &[u8],
    now: i64,
) -> RefreshRotation {
    present(tenant, "app", WINDOW, presented, next, now).await
}

async fn present(
    tenant: &TenantStore<'_>,
    client_id: &str,
    window: i64,
    presented: &[u8],
    next: &[u8],
    now: i64,
) -> RefreshRotation {
    let next = NewRefreshToken {
        token_hash: next,
        expires_at: now + 30 * 86_400,
    };
    tenant
        .rotate_refresh_token(
            presented,
            RefreshingClient::new(client_id, window),
            next,
            MAX_AGE,
            now,
        )
        .await
        .unwrap()
}

async fn revoked_at(tenant: &TenantStore<'_>) -> Option<i64> {
    tenant.find_grant("g1").await.unwrap().unwrap().revoked_at
}

fn reused() -> RefreshRotation {
    RefreshRotation::Reused {
        grant_id: "g1".into(),
    }
}

/// The lost answer: `r1` again at the window's last second gets `r3` in place of `r2`; `r2`
/// is then refused without revoking anything; a twin of the retry is refused the same way;
/// `r3` rotates; and `r1` once more, its retry's successor now used, is reuse.
async fn a_retry_within_the_window_is_answered_once_and_ends_the_first_successor(
    db: &TestDatabase,
) {
    let store = connect(db).await;
    let t = seeded(&store).await;
    let tenant = store.tenant(&t);
    let at = CONSUMED + WINDOW;
    let RefreshRotation::Retried(grant, user) = rotate(&tenant, b"r1", b"r3", at).await else {
        panic!("r1 is retried within the window");
    };
    assert_eq!(
        (
            grant.grant_id.as_str(),
            grant.client_id.as_str(),
            user.user_id.as_str()
        ),
        ("g1", "app", "u1")
    );
    let first_successor = tenant.find_refresh_token(b"r2").await.unwrap().unwrap();
    assert!(!first_successor.is_live(at), "r2 is ended");
    assert_eq!(first_successor.consumed_at, None, "ended, not consumed");
    let retried = tenant.find_refresh_token(b"r3").await.unwrap().unwrap();
    assert!(retried.is_live(at));
    assert_eq!(retried.expires_at, at + 30 * 86_400);

    // The first successor, and a twin of the retry: refused, the grant standing.
    assert_eq!(
        rotate(&tenant, b"r2", b"x1", at).await,
        RefreshRotation::Refused
    );
    assert_eq!(
        rotate(&tenant, b"r1", b"x2", at).await,
        RefreshRotation::Refused
    );
    assert_eq!(revoked_at(&tenant).await, None);
    assert!(matches!(
        rotate(&tenant, b"r3", b"r4", at + 1).await,
        RefreshRotation::Rotated(..)
    ));
    assert_eq!(revoked_at(&tenant).await, None);

    // r1 again, still within the window: the retry's successor r3 was used, so it is reuse.
    assert_eq!(rotate(&tenant, b"r1", b"x3", at).await, reused());
    assert_eq!(revoked_at(&tenant).await, Some(at));
    assert_eq!(
        rotate(&tenant, b"r4", b"x4", at + 2).await,
        RefreshRotation::Refused
    );
}

async fn a_retry_after_the_window_is_reuse_and_revokes_the_grant(db: &TestDatabase) {
    let store = connect(db).await;
    let t = seeded(&store).await;
    let tenant = store.tenant(&t);
    let late = CONSUMED + WINDOW + 1;
    assert_eq!(rotate(&tenant, b"r1", b"r3", late).await, reused());
    assert_eq!(revoked_at(&tenant).await, Some(late));
    assert_eq!(
        rotate(&tenant, b"r2", b"r4", late).await,
        RefreshRotation::Refused
    );
    assert!(tenant.find_refresh_token(b"r3").await.unwrap().is_none());
}

async fn a_retry_after_the_successor_was_used_is_reuse_and_revokes_the_grant(db: &TestDatabase) {
    let store = connect(db).await;
    let t = seeded(&store).await;
    let tenant = store.tenant(&t);
    assert!(matches!(
        rotate(&tenant, b"r2", b"r3", CONSUMED + 1).await,
        RefreshRotation::Rotated(..)
    ));
    assert_eq!(rotate(&tenant, b"r1", b"r4", CONSUMED + 2).await, reused());
    assert_eq!(revoked_at(&tenant).await, Some(CONSUMED + 2));
    assert_eq!(
        rotate(&tenant, b"r3", b"r5", CONSUMED + 3).await,
        RefreshRotation::Refused
    );
}

async fn another_clients_presentation_is_reuse_whatever_its_window(db: &TestDatabase) {
    let store = connect(db).await;
    let t = seeded(&store).await;
    let tenant = store.tenant(&t);
    let stolen = present(&tenant, "other", 120, b"r1", b"r3", CONSUMED + 1).await;
    assert_eq!(stolen, reused());
    assert_eq!(revoked_at(&tenant).await, Some(CONSUMED + 1));
    assert_eq!(
        rotate(&tenant, b"r2", b"r4", CONSUMED + 2).await,
        RefreshRotation::Refused
    );
}

/// Spec §5.7 as written: a client without a window (the default) gets no retry.
async fn without_a_window_a_second_presentation_is_reuse_as_before(db: &TestDatabase) {
    let store = connect(db).await;
    let t = seeded(&store).await;
    let tenant = store.tenant(&t);
    let again = present(&tenant, "app", 0, b"r1", b"r3", CONSUMED).await;
    assert_eq!(again, reused());
    assert_eq!(revoked_at(&tenant).await, Some(CONSUMED));
    assert_eq!(
        rotate(&tenant, b"r2", b"r4", CONSUMED + 1).await,
        RefreshRotation::Refused
    );
}

/// Twenty presentations of `token` by client `app` at [`CONSUMED`] + 5, started at once
/// and alternating between `nodes`: what each stored as its successor, and what it came to.
async fn twenty_at_once(
    nodes: &[Store; 2],
    t: &TenantId,
    token: &'static [u8],
) -> Vec<([u8; 2], RefreshRotation)> {
    let attempts: Vec<_> = (0..20u8)
        .map(|i| {
            let store = nodes[usize::from(i % 2)].clone();
            let t = t.clone();
            tokio::spawn(async move {
                let next = [b'n', i];
                let rotation = rotate(&store.tenant(&t), token, &next, CONSUMED + 5).await;
                (next, rotation)
            })
        })
        .collect();
    let mut answers = Vec::new();
    for attempt in attempts {
        answers.push(attempt.await.unwrap());
    }
    answers
}

/// Twenty retries of `r1` at once, alternating between two stores on one database (two
/// nodes): exactly one is answered, the rest are refused without revoking, and the winner's
/// token rotates.
async fn concurrent_retries_on_two_nodes_have_exactly_one_winner(db: &TestDatabase) {
    let first = connect(db).await;
    let t = seeded(&first).await;
    let nodes = [first, connect(db).await];
    let mut winners = Vec::new();
    for answer in twenty_at_once(&nodes, &t, b"r1").await {
        match answer {
            (next, RefreshRotation::Retried(..)) => winners.push(next),
            (_, RefreshRotation::Refused) => {}
            (_, other) => panic!("a retry came to {other:?}"),
        }
    }
    assert_eq!(winners.len(), 1, "{winners:?}");
    let tenant = nodes[1].tenant(&t);
    assert_eq!(revoked_at(&tenant).await, None, "the grant stands");
    assert!(matches!(
        rotate(&tenant, &winners[0], b"after", CONSUMED + 6).await,
        RefreshRotation::Rotated(..)
    ));
}

/// With a window, twenty refreshes of the live `r2` at once on two nodes: one rotates it,
/// the others find it consumed within the window, and exactly one of them is answered as a
/// retry (ending the rotation's successor); the rest are refused, the grant stands.
async fn concurrent_refreshes_of_a_live_token_with_a_window_are_one_rotation_and_one_retry(
    db: &TestDatabase,
) {
    let first = connect(db).await;
    let t = seeded(&first).await;
    let nodes = [first, connect(db).await];
    let (mut rotated, mut retried, mut refused) = (Vec::new(), Vec::new(), 0);
    for answer in twenty_at_once(&nodes, &t, b"r2").await {
        match answer {
            (next, RefreshRotation::Rotated(..)) => rotated.push(next),
            (next, RefreshRotation::Retried(..)) => retried.push(next),
            (_, RefreshRotation::Refused) => refused += 1,
            (_, other) => panic!("a refresh came to {other:?}"),
        }
    }
    assert_eq!((rotated.len(), retried.len(), refused), (1, 1, 18));
    let tenant = nodes[0].tenant(&t);
    assert_eq!(revoked_at(&tenant).await, None, "the grant stands");
    assert_eq!(
        rotate(&tenant, &rotated[0], b"late", CONSUMED + 6).await,
        RefreshRotation::Refused,
        "the rotation's successor was ended by the retry"
    );
    assert!(matches!(
        rotate(&tenant, &retried[0], b"after", CONSUMED + 6).await,
        RefreshRotation::Rotated(..)
    ));
}
