//! `fieldauth admin-token create|list|revoke` (issue 22): a token is printed once, stored
//! only as its hash, listed by name without its value, and revoked by name.

use store::testing::TestDatabase;

use crate::helpers::{assert_ok, assert_refused, cli, json_output, on_both_backends};

on_both_backends!(admin_tokens_are_shown_once_stored_as_a_hash_and_revoked_by_name);

async fn admin_tokens_are_shown_once_stored_as_a_hash_and_revoked_by_name(db: TestDatabase) {
    assert_ok(&cli(&db, &["tenant", "create", "acme"], None));
    let every = json_output(&cli(
        &db,
        &["admin-token", "create", "--name", "ops", "--json"],
        None,
    ));
    assert_eq!(every["name"], "ops");
    assert!(every["tenant"].is_null(), "{every:?}");
    let token = every["token"].as_str().unwrap();
    // 256 random bits in base64url after the recognisable prefix.
    let random = token.strip_prefix("fa_admin_").unwrap();
    assert_eq!(random.len(), 43, "{token}");
    assert!(random
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));

    let args = [
        "admin-token",
        "create",
        "--name",
        "acme-office",
        "--tenant",
        "acme",
    ];
    let text = cli(&db, &args, None);
    assert_ok(&text);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.starts_with("created admin token acme-office for tenant acme\ntoken: fa_admin_"),
        "{text}"
    );
    assert!(text.contains("shown once"), "{text}");

    // Only the hash is in the database (connecting the store installs sqlx's drivers).
    let store = store::Store::connect(&db.url).await.unwrap();
    let pool = sqlx::AnyPool::connect(&db.url).await.unwrap();
    let stored: Vec<u8> =
        sqlx::query_scalar("SELECT token_hash FROM admin_tokens WHERE name = 'ops'")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(stored, oauth::secret::hash_secret(token));
    pool.close().await;
    store.close().await;

    // Refused: a name taken, a bad name, an unknown tenant.
    let taken = cli(&db, &["admin-token", "create", "--name", "ops"], None);
    assert_refused(&taken, "an admin token named \"ops\" exists already");
    let bad = cli(&db, &["admin-token", "create", "--name", "two words"], None);
    assert_refused(&bad, "must have 1 to 64 letters");
    let ghost = cli(
        &db,
        &["admin-token", "create", "--name", "x", "--tenant", "ghost"],
        None,
    );
    assert_refused(&ghost, "cannot create the admin token: tenant not found");

    let listed = json_output(&cli(&db, &["admin-token", "list", "--json"], None));
    let listed = listed["admin_tokens"].as_array().unwrap();
    let rows: Vec<(&str, Option<&str>, &str)> = listed
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap(),
                t["tenant"].as_str(),
                t["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("acme-office", Some("acme"), "active"),
            ("ops", None, "active")
        ]
    );
    let all = serde_json::Value::Array(listed.clone()).to_string();
    assert!(!all.contains(random), "a listing shows a token's value");

    assert_ok(&cli(&db, &["admin-token", "revoke", "ops"], None));
    assert_refused(
        &cli(&db, &["admin-token", "revoke", "ops"], None),
        "cannot revoke admin token \"ops\": active admin token not found",
    );
    let listed = json_output(&cli(&db, &["admin-token", "list", "--json"], None));
    assert_eq!(listed["admin_tokens"][1]["status"], "revoked");
    assert!(listed["admin_tokens"][1]["revoked_at"].is_i64());
}
