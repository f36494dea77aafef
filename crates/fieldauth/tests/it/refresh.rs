//! `grant_type=refresh_token` (RFC 6749 §6, spec §5.7): rotation on every use, reuse
//! revoking the whole grant, atomic under concurrency, narrowing only, 30 days.

use store::testing::TestDatabase;

use crate::flow::{
    assert_oauth_error, code_for, exchange, jwt_parts, requiring_dpop, seed, token_request,
    CLIENT_ID, TENANT, WEB_CLIENT, WEB_SECRET,
};
use crate::helpers::{assert_ok, assert_refused, on_both_backends, TestApp};
use crate::node_support::userinfo;

on_both_backends!(
    each_refresh_rotates_and_a_reused_token_revokes_the_newest_too,
    twenty_concurrent_refreshes_of_one_token_have_exactly_one_success,
    scope_may_only_narrow_and_a_refusal_does_not_spend_the_token,
    a_refresh_token_belongs_to_its_client_and_expires_after_30_days,
    a_grant_ends_when_its_user_leaves_the_organization,
    a_grant_ends_after_its_maximum_age_however_often_it_is_refreshed,
    a_refresh_is_one_statement_and_sees_every_change_of_its_client,
    a_token_response_is_sent_once_what_it_issued_is_committed,
    a_token_is_stored_by_its_selector_and_hash_and_an_earlier_one_still_refreshes,
);

/// A grant with a refresh token, through the browser and the token endpoint.
pub(crate) async fn first_refresh_token(app: &TestApp) -> String {
    let code = code_for(
        app,
        &app.browser(),
        &[("scope", Some("openid offline_access jobs"))],
    )
    .await;
    exchange(app, &code).await["refresh_token"]
        .as_str()
        .unwrap()
        .to_owned()
}

pub(crate) async fn refresh(
    app: &TestApp,
    token: &str,
    extra: &[(&str, &str)],
) -> reqwest::Response {
    let mut fields = vec![
        ("grant_type", "refresh_token"),
        ("refresh_token", token),
        ("client_id", CLIENT_ID),
    ];
    fields.extend_from_slice(extra);
    token_request(app, &fields, None).await
}

async fn refreshed(app: &TestApp, token: &str) -> serde_json::Value {
    let response = refresh(app, token, &[]).await;
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

/// Durability before the answer: read from a connection of its own as soon as a response
/// has come, what the exchange and the refresh stored is there. (On SQLite their writes
/// are committed with their group's, `sqlite_group_commit.rs`, and the server waits for it
/// before it sends the tokens.)
async fn a_token_response_is_sent_once_what_it_issued_is_committed(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    // The client's first exchange reads it from the database; the node keeps it for the
    // next, which is then one transaction (`exchange_checked_code`).
    first_refresh_token(&app).await;
    let before = (app.rows("grants").await, app.rows("refresh_tokens").await);
    let first = first_refresh_token(&app).await;
    let exchanged = (app.rows("grants").await, app.rows("refresh_tokens").await);
    assert_eq!(exchanged, (before.0 + 1, before.1 + 1));
    refreshed(&app, &first).await;
    assert_eq!(app.rows("refresh_tokens").await, before.1 + 2);
    app.stop().await;
}

/// A refresh token's random part is 64 characters: a time-ordered selector and a 256-bit
/// secret, stored under the selector and SHA-256 of the whole part, never as itself
/// (`oauth::token::refresh_token`). A token of the earlier form (43 characters, stored under
/// SHA-256 alone) still refreshes, once, and its successor has the new form.
async fn a_token_is_stored_by_its_selector_and_hash_and_an_earlier_one_still_refreshes(
    db: TestDatabase,
) {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;
    use oauth::secret::hash_secret;

    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let token = first_refresh_token(&app).await;
    let random = token.strip_prefix("acme.").unwrap();
    let decoded = URL_SAFE_NO_PAD.decode(random).unwrap();
    assert_eq!(decoded.len(), 48, "{token}");
    let key = [&decoded[..16], &hash_secret(random)[..]].concat();
    let pool = sqlx::AnyPool::connect(&app.db.url).await.unwrap();
    let stored: Vec<Vec<u8>> = sqlx::query_scalar("SELECT token_hash FROM refresh_tokens")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(stored, std::slice::from_ref(&key));

    // The same grant's token as a token of the earlier form would have been stored.
    let earlier = "an-earlier-refresh-token-of-43-characters-x";
    assert_eq!(earlier.len(), 43);
    let replaced = sqlx::query("UPDATE refresh_tokens SET token_hash = $1 WHERE token_hash = $2")
        .bind(hash_secret(earlier).to_vec())
        .bind(key)
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(replaced.rows_affected(), 1);
    pool.close().await;
    assert_oauth_error(refresh(&app, &token, &[]).await, 400, "invalid_grant").await;
    let earlier = format!("acme.{earlier}");
    let next = refreshed(&app, &earlier).await;
    let next = next["refresh_token"].as_str().unwrap();
    assert_eq!(next.len(), "acme.".len() + 64, "{next}");
    assert_oauth_error(refresh(&app, &earlier, &[]).await, 400, "invalid_grant").await;
    app.stop().await;
}

async fn each_refresh_rotates_and_a_reused_token_revokes_the_newest_too(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let first = first_refresh_token(&app).await;
    let second = refreshed(&app, &first).await;
    let second_token = second["refresh_token"].as_str().unwrap().to_owned();
    assert_ne!(second_token, first);
    assert!(second["id_token"].is_string(), "openid: a new ID token");
    let (_, id) = jwt_parts(second["id_token"].as_str().unwrap());
    assert!(
        id.get("nonce").is_none(),
        "OpenID Connect Core §12.2: no nonce on refresh"
    );
    let third = refreshed(&app, &second_token).await;
    let newest = third["refresh_token"].as_str().unwrap().to_owned();

    // The first token again: refused, and the whole family goes, newest token included.
    assert_oauth_error(refresh(&app, &first, &[]).await, 400, "invalid_grant").await;
    assert_oauth_error(refresh(&app, &newest, &[]).await, 400, "invalid_grant").await;
    let userinfo = userinfo(
        &app.http,
        &app.issuer,
        third["access_token"].as_str().unwrap(),
    )
    .await;
    assert_eq!(
        userinfo.status(),
        401,
        "the family's access tokens end with it"
    );
    app.stop().await;
}

/// DESIGN.md: two concurrent refreshes of one token can never both succeed.
async fn twenty_concurrent_refreshes_of_one_token_have_exactly_one_success(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let token = first_refresh_token(&app).await;
    let url = format!("{}/oauth/token", app.issuer);
    let attempts: Vec<_> = (0..20)
        .map(|_| {
            let (http, url, token) = (app.http.clone(), url.clone(), token.clone());
            tokio::spawn(async move {
                let fields = [
                    ("grant_type", "refresh_token"),
                    ("refresh_token", token.as_str()),
                    ("client_id", CLIENT_ID),
                ];
                http.post(url)
                    .form(&fields)
                    .send()
                    .await
                    .unwrap()
                    .status()
                    .as_u16()
            })
        })
        .collect();
    let mut statuses = Vec::new();
    for attempt in attempts {
        statuses.push(attempt.await.unwrap());
    }
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}"
    );
    assert!(
        statuses.iter().all(|s| *s == 200 || *s == 400),
        "{statuses:?}"
    );
    app.stop().await;
}

/// RFC 6749 §6: the requested scope may not include anything not originally granted.
async fn scope_may_only_narrow_and_a_refusal_does_not_spend_the_token(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let token = first_refresh_token(&app).await;
    assert_oauth_error(
        refresh(&app, &token, &[("scope", "jobs customers")]).await,
        400,
        "invalid_scope",
    )
    .await;
    let narrowed = refresh(&app, &token, &[("scope", "jobs")]).await;
    assert_eq!(
        narrowed.status(),
        200,
        "the refused attempt did not spend the token"
    );
    let body: serde_json::Value = narrowed.json().await.unwrap();
    assert_eq!(body["scope"], "jobs");
    assert!(
        body.get("id_token").is_none(),
        "no openid in the narrowed scope"
    );
    let (_, access) = jwt_parts(body["access_token"].as_str().unwrap());
    assert_eq!(access["scope"], "jobs");
    // The next refresh without a scope gets the whole original grant back.
    let full = refreshed(&app, body["refresh_token"].as_str().unwrap()).await;
    assert_eq!(full["scope"], "openid offline_access jobs");
    app.stop().await;
}

async fn a_refresh_token_belongs_to_its_client_and_expires_after_30_days(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let token = first_refresh_token(&app).await;
    let stolen = [
        ("grant_type", "refresh_token"),
        ("refresh_token", token.as_str()),
    ];
    assert_oauth_error(
        token_request(&app, &stolen, Some((WEB_CLIENT, WEB_SECRET))).await,
        400,
        "invalid_grant",
    )
    .await;
    let kept = refreshed(&app, &token).await;
    let next = kept["refresh_token"].as_str().unwrap().to_owned();
    app.clock.advance(30 * 86_400);
    assert_oauth_error(refresh(&app, &next, &[]).await, 400, "invalid_grant").await;
    app.stop().await;
}

/// Spec §1: tokens are bound to the organization membership chosen at consent. Once the
/// membership is removed (`fieldauth org remove-member`), the grant's refresh token is
/// `invalid_grant`.
async fn a_grant_ends_when_its_user_leaves_the_organization(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let seeded = seed(&app).await;
    let token = first_refresh_token(&app).await;
    let remove = || {
        app.cli(&[
            "org",
            "remove-member",
            "--tenant",
            TENANT,
            "--org",
            &seeded.alpha,
            "--username",
            "alice",
        ])
    };
    assert_ok(&remove());
    assert_oauth_error(refresh(&app, &token, &[]).await, 400, "invalid_grant").await;
    assert_refused(&remove(), "\"alice\" is not a member of organization");
    app.stop().await;
}

/// A grant lasts `--grant-max-days` (90 by default) from its code exchange, however often
/// it is refreshed: each refresh token expires with the grant at the latest, and a refresh
/// at the grant's end is `invalid_grant`.
async fn a_grant_ends_after_its_maximum_age_however_often_it_is_refreshed(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let start = app.clock_now();
    let end = start + 90 * 86_400;
    let mut token = first_refresh_token(&app).await;
    for _ in 0..3 {
        app.clock.advance(29 * 86_400);
        token = refreshed(&app, &token).await["refresh_token"]
            .as_str()
            .unwrap()
            .to_owned();
    }
    app.clock.set(end - 1);
    let last = refreshed(&app, &token).await["refresh_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let stored = app
        .store
        .tenant(&store::TenantId::parse(TENANT).unwrap())
        .find_refresh_token(
            oauth::token::refresh_token::RefreshTokenKey::of(last.split_once('.').unwrap().1)
                .as_bytes(),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (stored.grant.created_at, stored.expires_at),
        (start, end),
        "the last refresh token expires with its grant"
    );
    app.clock.set(end);
    assert_oauth_error(refresh(&app, &last, &[]).await, 400, "invalid_grant").await;
    app.stop().await;
}

/// The node keeps the clients it authenticated, so a refresh is one statement (the rotation);
/// the rotation checks the kept copy against the database, so every change of the client
/// (made here through the store, as another node or the CLI would) counts at the next
/// refresh, and a refusal for it spends nothing.
async fn a_refresh_is_one_statement_and_sees_every_change_of_its_client(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let first = first_refresh_token(&app).await;
    let mut token = refreshed(&app, &first).await["refresh_token"]
        .as_str()
        .unwrap()
        .to_owned();
    // The fewest statements of five refreshes: the server's background tasks (reloads,
    // clean-up) count theirs in the same counter now and then.
    let mut fewest = u64::MAX;
    for _ in 0..5 {
        let before = app.store.statements_executed();
        token = refreshed(&app, &token).await["refresh_token"]
            .as_str()
            .unwrap()
            .to_owned();
        fewest = fewest.min(app.store.statements_executed() - before);
    }
    assert_eq!(fewest, 1, "statements of a refresh by a kept client");
    let third = token;

    let tenant_id = store::TenantId::parse(TENANT).unwrap();
    let tenant = app.store.tenant(&tenant_id);
    tenant
        .update_client(CLIENT_ID, &requiring_dpop(true), None)
        .await
        .unwrap();
    assert_oauth_error(refresh(&app, &third, &[]).await, 400, "invalid_dpop_proof").await;
    tenant
        .update_client(CLIENT_ID, &requiring_dpop(false), None)
        .await
        .unwrap();
    let fourth = refreshed(&app, &third).await["refresh_token"]
        .as_str()
        .unwrap()
        .to_owned();

    tenant
        .disable_client(CLIENT_ID, app.clock_now())
        .await
        .unwrap();
    assert_oauth_error(refresh(&app, &fourth, &[]).await, 401, "invalid_client").await;
    app.stop().await;
}
