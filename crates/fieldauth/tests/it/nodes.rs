//! Several `fieldauth serve` processes on one PostgreSQL database are one issuer (DESIGN.md:
//! no state in a node): any node serves any step of a flow, refresh-token rotation and reuse
//! detection, sign-in throttling and key rotation are shared, nodes starting together on an
//! empty database create one key, and SIGTERM finishes the request in flight. PostgreSQL
//! only: SQLite is one process's embedded file.

use std::time::Duration;

use openidconnect::core::{CoreClient, CoreJsonWebKeySet, CoreResponseType, CoreUserInfoClaims};
use openidconnect::{
    AccessTokenHash, AuthUrl, AuthenticationFlow, AuthorizationCode, ClientId, CsrfToken,
    IssuerUrl, JsonWebKeySetUrl, Nonce, OAuth2TokenResponse, PkceCodeChallenge, RedirectUrl, Scope,
    TokenResponse, TokenUrl, UserInfoUrl,
};
use serde_json::{json, Value};
use store::testing::TestDatabase;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::flow::{
    assert_oauth_error, jwt_parts, location_params, param, CLIENT_ID, PASSWORD, REDIRECT_URI,
    TENANT, VERIFIER,
};
use crate::helpers::{cli, eventually, json_output};
use crate::node_support::{
    allow, authorize_url, code_at, exchange, graphql, jwks_kids, prepare, refresh, sign_in,
    userinfo, Cluster, ALICE_SUB, BRAVO,
};

const VIEWER: &str = "{ viewer { subject organization { guid } } }";

/// A prepared schema (migrated, one signing key, tenant `acme`) and `count` nodes on it.
async fn prepared_cluster(count: usize, extra: &[&str]) -> Option<Cluster> {
    let db = TestDatabase::postgres().await?;
    prepare(&db).await;
    Some(Cluster::start(db, count, extra).await)
}

/// RFC 6750 §3.1: a token that is no longer valid.
fn assert_invalid_token(response: &reqwest::Response, what: &str) {
    assert_eq!(response.status(), 401, "{what}");
    let challenge = response.headers()["www-authenticate"].to_str().unwrap();
    assert!(
        challenge.starts_with("Bearer error=\"invalid_token\""),
        "{what}: {challenge}"
    );
}

/// OpenID Connect Core §3.1 across three nodes: the authorization request on A, sign-in on
/// B, consent on C, the code exchange on B, the refresh on A, userinfo and the API on B. The
/// relying party (`openidconnect`) verifies each ID token against the JWKS of a node other
/// than the one that signed it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_step_of_a_flow_may_reach_a_different_node() {
    let Some(cluster) = prepared_cluster(3, &[]).await else {
        return;
    };
    let (a, b, c) = (cluster.node(0), cluster.node(1), cluster.node(2));
    let http = &cluster.http;
    let jwks_of = |base: &str| {
        let url = JsonWebKeySetUrl::new(format!("{base}/oauth/jwks")).unwrap();
        async move { CoreJsonWebKeySet::fetch_async(&url, http).await.unwrap() }
    };
    let client = |jwks: CoreJsonWebKeySet, token_node: &str| {
        CoreClient::new(
            ClientId::new(CLIENT_ID.into()),
            IssuerUrl::new(cluster.issuer.clone()).unwrap(),
            jwks,
        )
        .set_auth_uri(AuthUrl::new(format!("{}/oauth/authorize", a.auth)).unwrap())
        .set_token_uri(TokenUrl::new(format!("{token_node}/oauth/token")).unwrap())
        .set_user_info_url(UserInfoUrl::new(format!("{}/oauth/userinfo", b.auth)).unwrap())
        .set_redirect_uri(RedirectUrl::new(REDIRECT_URI.into()).unwrap())
    };
    // Tokens from B are verified with A's keys, tokens from A with B's.
    let client_b = client(jwks_of(&a.auth).await, &b.auth);
    let client_a = client(jwks_of(&b.auth).await, &a.auth);

    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let (url, state, nonce) = client_b
        .authorize_url(
            AuthenticationFlow::<CoreResponseType>::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        )
        .add_scope(Scope::new("profile".into()))
        .add_scope(Scope::new("offline_access".into()))
        .add_scope(Scope::new("jobs".into()))
        .add_extra_param("tenant", TENANT)
        .set_pkce_challenge(challenge)
        .url();
    assert!(url.as_str().starts_with(&a.auth), "{url}");
    let browser = cluster.browser();
    let page = browser.get(url.as_str()).send().await.unwrap();
    assert_eq!(page.status(), 200, "the sign-in page from node A");
    let page = page.text().await.unwrap();
    let consent = sign_in(&browser, &b.auth, &page, "alice", PASSWORD).await;
    assert_eq!(consent.status(), 200, "sign-in at node B");
    let consent = consent.text().await.unwrap();
    assert!(
        consent.contains("name=\"decision\""),
        "node B did not accept node A's sign-in form: {consent}"
    );
    let scopes = ["profile", "offline_access", "jobs"];
    let response = allow(&browser, &c.auth, &consent, BRAVO, &scopes).await;
    assert_eq!(response.status(), 302, "consent at node C");
    let (base, pairs) = location_params(&response);
    assert_eq!(base, REDIRECT_URI);
    // RFC 6749 §4.1.2: state echoed; RFC 9207: the one issuer, whichever node answered.
    assert_eq!(param(&pairs, "state"), Some(state.secret().as_str()));
    assert_eq!(param(&pairs, "iss"), Some(cluster.issuer.as_str()));
    let code = param(&pairs, "code").expect("a code").to_owned();

    let tokens = client_b
        .exchange_code(AuthorizationCode::new(code))
        .set_pkce_verifier(verifier)
        .request_async(http)
        .await
        .expect("code exchange at node B");
    let id_token = tokens.id_token().expect("an ID token for openid");
    let id_verifier = client_b.id_token_verifier();
    // The crate checks the signature, iss, aud, exp and the nonce.
    let claims = id_token
        .claims(&id_verifier, &nonce)
        .expect("node B's ID token verifies against node A's JWKS");
    assert_eq!(claims.subject().as_str(), ALICE_SUB);
    assert_eq!(claims.issuer().as_str(), cluster.issuer);
    assert_eq!(claims.nonce().map(Nonce::secret), Some(nonce.secret()));
    let at_hash = AccessTokenHash::from_token(
        tokens.access_token(),
        id_token.signing_alg().unwrap(),
        id_token.signing_key(&id_verifier).unwrap(),
    )
    .unwrap();
    assert_eq!(claims.access_token_hash(), Some(&at_hash));
    let (_, access) = jwt_parts(tokens.access_token().secret());
    assert_eq!(access["iss"], cluster.issuer.as_str());
    assert_eq!(access["aud"], cluster.api_url.as_str());
    assert_eq!(access["organization_guid"], BRAVO);

    let first_refresh = tokens.refresh_token().expect("offline_access");
    let refreshed = client_a
        .exchange_refresh_token(first_refresh)
        .request_async(http)
        .await
        .expect("refresh at node A");
    let next_refresh = refreshed.refresh_token().expect("a rotated refresh token");
    assert_ne!(next_refresh.secret(), first_refresh.secret(), "rotated");
    let refreshed_id = refreshed.id_token().expect("openid: a new ID token");
    // OpenID Connect Core §12.2: no nonce on refresh.
    let no_nonce = |n: Option<&Nonce>| match n {
        None => Ok(()),
        Some(_) => Err("a nonce in a refreshed ID token".to_owned()),
    };
    let refreshed_claims = refreshed_id
        .claims(&client_a.id_token_verifier(), no_nonce)
        .expect("node A's ID token verifies against node B's JWKS");
    assert_eq!(refreshed_claims.subject(), claims.subject());

    let info: CoreUserInfoClaims = client_b
        .user_info(
            refreshed.access_token().clone(),
            Some(claims.subject().clone()),
        )
        .request_async(http)
        .await
        .expect("userinfo at node B");
    assert_eq!(info.subject().as_str(), ALICE_SUB);
    assert_eq!(info.preferred_username().unwrap().as_str(), "alice");

    let response = graphql(http, &b.api, refreshed.access_token().secret(), VIEWER).await;
    assert_eq!(response.status(), 200, "the API at node B");
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body,
        json!({ "data": { "viewer": {
            "subject": ALICE_SUB,
            "organization": { "guid": BRAVO },
        }}})
    );
}

/// RFC 6749 §10.4 and RFC 9700 §4.14.2: a refresh token used at node A and replayed at node
/// B is refused and revokes its grant: the newest token fails at either node, and the grant's
/// access tokens end at userinfo and at the API.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refresh_token_replayed_at_another_node_revokes_the_grant_everywhere() {
    let Some(cluster) = prepared_cluster(2, &[]).await else {
        return;
    };
    let (a, b, http) = (cluster.node(0), cluster.node(1), &cluster.http);
    let code = code_at(&a.auth, "openid offline_access jobs").await;
    let first = exchange(http, &a.auth, &code).await;
    let old = first["refresh_token"].as_str().unwrap();
    let response = refresh(http, &a.auth, old).await;
    assert_eq!(response.status(), 200, "refresh at node A");
    let second: Value = response.json().await.unwrap();
    let newest = second["refresh_token"].as_str().unwrap();
    assert_ne!(newest, old, "rotated");
    let access = second["access_token"].as_str().unwrap();
    // Before the replay the newest access token works on the other node.
    assert_eq!(userinfo(http, &b.auth, access).await.status(), 200);
    assert_eq!(graphql(http, &b.api, access, VIEWER).await.status(), 200);

    assert_oauth_error(refresh(http, &b.auth, old).await, 400, "invalid_grant").await;
    for node in [a, b] {
        let response = refresh(http, &node.auth, newest).await;
        assert_oauth_error(response, 400, "invalid_grant").await;
    }
    for node in [a, b] {
        for token in [first["access_token"].as_str().unwrap(), access] {
            let what = format!("userinfo at {} after the replay", node.auth);
            assert_invalid_token(&userinfo(http, &node.auth, token).await, &what);
        }
        let what = format!("the API at {} after the replay", node.api);
        assert_invalid_token(&graphql(http, &node.api, access, VIEWER).await, &what);
    }
}

/// DESIGN.md: two concurrent refreshes of one token can never both succeed, on one node or
/// on two. The losers presented a consumed token, which is reuse: the grant is revoked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_concurrent_refreshes_on_two_nodes_have_exactly_one_success() {
    let Some(cluster) = prepared_cluster(2, &[]).await else {
        return;
    };
    let (a, b, http) = (cluster.node(0), cluster.node(1), &cluster.http);
    let code = code_at(&a.auth, "openid offline_access jobs").await;
    let token = exchange(http, &a.auth, &code).await["refresh_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let attempts: Vec<_> = (0..20)
        .map(|i| {
            let base = [&a.auth, &b.auth][i % 2].clone();
            let (http, token) = (http.clone(), token.clone());
            tokio::spawn(async move {
                let response = refresh(&http, &base, &token).await;
                let status = response.status().as_u16();
                (status, response.json::<Value>().await.unwrap())
            })
        })
        .collect();
    let mut answers = Vec::new();
    for attempt in attempts {
        answers.push(attempt.await.unwrap());
    }
    let statuses: Vec<u16> = answers.iter().map(|(s, _)| *s).collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}"
    );
    for (status, body) in &answers {
        assert!(
            *status == 200 || (*status == 400 && body["error"] == "invalid_grant"),
            "{status} {body}"
        );
    }
    let (_, winner) = answers.iter().find(|(s, _)| *s == 200).unwrap();
    let next = winner["refresh_token"].as_str().unwrap();
    let access = winner["access_token"].as_str().unwrap();
    for node in [a, b] {
        let response = refresh(http, &node.auth, next).await;
        assert_oauth_error(response, 400, "invalid_grant").await;
        let what = format!("userinfo at {}: the grant was revoked", node.auth);
        assert_invalid_token(&userinfo(http, &node.auth, access).await, &what);
    }
}

/// One sign-in attempt at `base` (the page fetched from the same node); a "wait" answer of the
/// growing delay is retried after the wait, since the delay is measured on the real clock.
async fn attempt_after_any_wait(
    browser: &reqwest::Client,
    base: &str,
    password: &str,
) -> (u16, String) {
    for _ in 0..100 {
        let (status, html) = attempt(browser, base, password).await;
        if status != 429 || !html.contains("second(s) before trying again") {
            return (status, html);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("still asked to wait after 20 s");
}

async fn attempt(browser: &reqwest::Client, base: &str, password: &str) -> (u16, String) {
    let page = browser
        .get(authorize_url(base, "openid"))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let page = page.text().await.unwrap();
    let response = sign_in(browser, base, &page, "alice", password).await;
    (response.status().as_u16(), response.text().await.unwrap())
}

/// Spec: the throttle's counts live in the database. Three failures alternating between
/// nodes lock the account (per-node counts would stop at 2 and 1), and then even the right
/// password is refused on both nodes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signin_failures_on_different_nodes_add_up_to_one_lock() {
    let Some(cluster) = prepared_cluster(2, &["--signin-max-failures", "3"]).await else {
        return;
    };
    let (a, b) = (cluster.node(0), cluster.node(1));
    let browser = cluster.browser();
    for (i, node) in [a, b, a].into_iter().enumerate() {
        let (status, html) = attempt_after_any_wait(&browser, &node.auth, "wrong").await;
        assert_eq!(status, 200, "failure {} at {}", i + 1, node.auth);
        assert!(html.contains("Incorrect username or password."), "{html}");
        assert_eq!(
            html.contains("locked"),
            i == 2,
            "failure {} at {}: {html}",
            i + 1,
            node.auth
        );
    }
    for node in [b, a] {
        let (status, html) = attempt(&browser, &node.auth, PASSWORD).await;
        assert_eq!(
            status, 429,
            "locked at {}: the right password is refused",
            node.auth
        );
        assert!(html.contains("locked for 5 more minute(s)"), "{html}");
        assert!(!html.contains("name=\"decision\""), "{html}");
    }
}

/// RFC 7517 key rollover with several nodes: a key rotated by the CLI in the shared database
/// is published by every node at its next reload (`--key-reload-seconds 1`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_rotated_in_the_database_reaches_every_node_jwks() {
    let Some(cluster) = prepared_cluster(2, &["--key-reload-seconds", "1"]).await else {
        return;
    };
    let (a, b, http) = (cluster.node(0), cluster.node(1), &cluster.http);
    let first = jwks_kids(http, &a.auth).await;
    assert_eq!(first.len(), 1, "one key to start with");
    assert_eq!(jwks_kids(http, &b.auth).await, first);
    let rotated = json_output(&cli(&cluster.db, &["keys", "rotate", "--json"], None));
    let new_kid = rotated["kid"].as_str().unwrap().to_owned();
    assert_ne!(new_kid, first[0]);
    let published = vec![first[0].clone(), new_kid];
    eventually(Duration::from_secs(10), || async {
        jwks_kids(http, &a.auth).await == published && jwks_kids(http, &b.auth).await == published
    })
    .await;
}

/// Nodes starting at the same moment on an empty database (no tables, no keys) all become
/// ready, and together create exactly one signing key, which every node publishes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_starting_together_on_an_empty_database_create_one_key() {
    let Some(db) = TestDatabase::postgres().await else {
        return;
    };
    let cluster = Cluster::start(db, 3, &[]).await;
    let listed = json_output(&cli(&cluster.db, &["keys", "list", "--json"], None));
    let keys = listed["keys"].as_array().unwrap();
    assert_eq!(
        keys.len(),
        1,
        "three nodes starting together created {} keys: {keys:?}",
        keys.len()
    );
    let kid = keys[0]["kid"].as_str().unwrap();
    for node in &cluster.nodes {
        assert_eq!(
            jwks_kids(&cluster.http, &node.auth).await,
            [kid],
            "{}",
            node.auth
        );
    }
}

/// Operations (docs/deployment.md, shutdown): on SIGTERM a node stops accepting connections,
/// finishes the request in flight (here one whose body is still arriving) and exits with 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_finishes_the_request_in_flight_then_exits_0() {
    let Some(mut cluster) = prepared_cluster(1, &[]).await else {
        return;
    };
    let addr = cluster
        .node(0)
        .auth
        .trim_start_matches("http://")
        .to_owned();
    let body = format!(
        "grant_type=authorization_code&code={TENANT}.not-a-code&redirect_uri={}\
         &code_verifier={VERIFIER}&client_id={CLIENT_ID}",
        url::form_urlencoded::byte_serialize(REDIRECT_URI.as_bytes()).collect::<String>()
    );
    let (head, tail) = body.split_at(body.len() / 2);
    let mut stream = TcpStream::connect(&addr).await.unwrap();
    let request = format!(
        "POST /oauth/token HTTP/1.1\r\nHost: {addr}\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{head}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    stream.flush().await.unwrap();
    // Let the node read the headers: from now on the request is in flight.
    tokio::time::sleep(Duration::from_secs(1)).await;

    let pid = cluster.node(0).pid().to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    eventually(Duration::from_secs(5), || async {
        matches!(
            TcpStream::connect(&addr).await,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused
        )
    })
    .await;
    let node = &mut cluster.nodes[0];
    assert!(
        node.exit_status(Duration::ZERO).await.is_none(),
        "exited with a request in flight:\n{}",
        node.logs()
    );

    stream.write_all(tail.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut response))
        .await
        .expect("the response and the end of the connection within 5 s")
        .unwrap();
    let response = String::from_utf8(response).unwrap();
    let (head, body) = response
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("not a whole HTTP response: {response:?}"));
    let status = head.split(' ').nth(1).unwrap_or_default();
    assert!(status == "400" || status == "401", "{response}");
    let length = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length: ")
                .map(str::to_owned)
        })
        .unwrap_or_else(|| panic!("no Content-Length: {response}"));
    assert_eq!(length.parse::<usize>().unwrap(), body.len(), "{response}");
    let error: Value = serde_json::from_str(body).unwrap();
    assert!(error["error"].is_string(), "{error}");

    let exit = node.exit_status(Duration::from_secs(5)).await;
    let exit = exit.unwrap_or_else(|| panic!("still running 5 s after SIGTERM:\n{}", node.logs()));
    assert_eq!(exit.code(), Some(0), "{}", node.logs());
}
