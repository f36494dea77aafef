//! DPoP (RFC 9449) end to end, with proofs built by `jsonwebtoken` (RustCrypto), an
//! implementation nobody here wrote: the token endpoint binds tokens to the proof's key after
//! a nonce round, userinfo and the API take a bound token only with the DPoP scheme and a
//! fresh proof of that request by that key, and every refusal carries RFC 9449's error.

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{EcdsaKeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use jsonwebtoken::jwk::{Jwk, ThumbprintHash};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use store::testing::TestDatabase;

use crate::flow::{
    assert_oauth_error, code_for, jwt_parts, seed, token_request, CLIENT_ID, REDIRECT_URI,
    VERIFIER, WEB_CLIENT, WEB_SECRET,
};
use crate::helpers::{on_both_backends, TestApp};

on_both_backends!(
    a_code_exchange_with_a_proof_asks_for_a_nonce_then_binds_the_tokens_to_the_key,
    bound_tokens_work_at_userinfo_and_the_api_only_with_fresh_proofs_of_their_key,
    proofs_that_do_not_fit_the_request_are_refused_at_the_token_endpoint,
    a_confidential_clients_tokens_are_bound_but_its_refresh_token_is_not,
    a_public_clients_refresh_token_works_only_with_a_proof_of_its_key,
    a_client_registered_as_dpop_bound_gets_no_tokens_without_a_proof,
);

/// A client's DPoP key: a P-256 key pair, and proofs signed by `jsonwebtoken`.
pub(crate) struct DpopKey {
    key: EncodingKey,
    jwk: Jwk,
}

impl DpopKey {
    pub(crate) fn new() -> DpopKey {
        // Only the random key comes from aws-lc-rs; the JWK, the signature and the
        // thumbprint are jsonwebtoken's.
        let pkcs8 =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
                .unwrap();
        let key = EncodingKey::from_ec_der(pkcs8.as_ref());
        let mut jwk = Jwk::from_encoding_key(&key, Algorithm::ES256).unwrap();
        // The public key only: no `alg` member is needed either.
        jwk.common = Default::default();
        DpopKey { key, jwk }
    }

    /// RFC 7638 thumbprint, as jsonwebtoken computes it.
    pub(crate) fn jkt(&self) -> String {
        self.jwk.thumbprint(ThumbprintHash::SHA256).unwrap()
    }

    /// A proof with these claims, `typ: dpop+jwt`, the public JWK in the header.
    pub(crate) fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some("dpop+jwt".into());
        header.jwk = Some(self.jwk.clone());
        jsonwebtoken::encode(&header, claims, &self.key).unwrap()
    }

    /// A fresh proof of `method url` at `iat`, with a nonce and an access token's hash.
    pub(crate) fn proof(
        &self,
        method: &str,
        url: &str,
        iat: i64,
        nonce: Option<&str>,
        access_token: Option<&str>,
    ) -> String {
        let mut claims = json!({
            "jti": unique_jti(), "htm": method, "htu": url, "iat": iat,
        });
        if let Some(nonce) = nonce {
            claims["nonce"] = json!(nonce);
        }
        if let Some(token) = access_token {
            claims["ath"] = json!(ath(token));
        }
        self.sign(&claims)
    }
}

/// RFC 9449 §4.2 `ath`: base64url SHA-256 of the access token.
pub(crate) fn ath(token: &str) -> String {
    let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, token.as_bytes());
    URL_SAFE_NO_PAD.encode(digest.as_ref())
}

/// A unique `jti` for each proof: 128 random bits.
fn unique_jti() -> String {
    let mut random = [0u8; 16];
    aws_lc_rs::rand::fill(&mut random).unwrap();
    URL_SAFE_NO_PAD.encode(random)
}

fn token_url(app: &TestApp) -> String {
    format!("{}/oauth/token", app.issuer)
}

/// `POST /oauth/token` with a `DPoP` header.
async fn token_request_with_proof(
    app: &TestApp,
    fields: &[(&str, &str)],
    basic: Option<(&str, &str)>,
    proof: &str,
) -> reqwest::Response {
    let request = app
        .http
        .post(token_url(app))
        .header("DPoP", proof)
        .form(fields);
    let request = match basic {
        Some((id, secret)) => request.basic_auth(id, Some(secret)),
        None => request,
    };
    request.send().await.unwrap()
}

/// A token request with a fresh proof by `key` of now, carrying `nonce`.
async fn with_fresh_proof(
    app: &TestApp,
    key: &DpopKey,
    nonce: &str,
    fields: &[(&str, &str)],
    basic: Option<(&str, &str)>,
) -> reqwest::Response {
    let proof = key.proof("POST", &token_url(app), app.clock_now(), Some(nonce), None);
    token_request_with_proof(app, fields, basic, &proof).await
}

/// A nonce of the token endpoint: the `DPoP-Nonce` of a `use_dpop_nonce` refusal.
async fn nonce(app: &TestApp, key: &DpopKey) -> String {
    let proof = key.proof("POST", &token_url(app), app.clock_now(), None, None);
    let response =
        token_request_with_proof(app, &[("grant_type", "refresh_token")], None, &proof).await;
    let nonce = response.headers()["dpop-nonce"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_oauth_error(response, 400, "use_dpop_nonce").await;
    nonce
}

/// A code of the public client for a grant with a refresh token.
async fn offline_code(app: &TestApp) -> String {
    let scope = [("scope", Some("openid offline_access jobs"))];
    code_for(app, &app.browser(), &scope).await
}

fn exchange_fields(code: &str) -> Vec<(&str, &str)> {
    vec![
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", REDIRECT_URI),
        ("code_verifier", VERIFIER),
        ("client_id", CLIENT_ID),
    ]
}

/// The public client's tokens, bound to `key` (asserting 200).
pub(crate) async fn bound_tokens(app: &TestApp, key: &DpopKey) -> Value {
    let code = offline_code(app).await;
    let nonce = nonce(app, key).await;
    let proof = key.proof("POST", &token_url(app), app.clock_now(), Some(&nonce), None);
    let response = token_request_with_proof(app, &exchange_fields(&code), None, &proof).await;
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

/// The error of an RFC 9449 §7.1 refusal: 401 and a DPoP challenge naming it.
fn assert_dpop_challenge(response: &reqwest::Response, error: &str) {
    assert_eq!(response.status(), 401, "expected {error}");
    let challenge = response.headers()["www-authenticate"].to_str().unwrap();
    assert!(challenge.starts_with("DPoP "), "{challenge}");
    assert!(
        challenge.contains(&format!("error=\"{error}\"")),
        "{challenge}"
    );
    assert!(challenge.contains("algs=\"ES256"), "{challenge}");
}

async fn a_code_exchange_with_a_proof_asks_for_a_nonce_then_binds_the_tokens_to_the_key(
    db: TestDatabase,
) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let key = DpopKey::new();
    let code = offline_code(&app).await;
    // §8: without a nonce, the proof is refused with one to use, and the code is not spent.
    let proof = key.proof("POST", &token_url(&app), app.clock_now(), None, None);
    let refused = token_request_with_proof(&app, &exchange_fields(&code), None, &proof).await;
    let nonce = refused.headers()["dpop-nonce"].to_str().unwrap().to_owned();
    assert_oauth_error(refused, 400, "use_dpop_nonce").await;
    // A nonce that is not ours is refused the same way.
    let forged = key.proof("POST", &token_url(&app), app.clock_now(), Some("n"), None);
    let refused = token_request_with_proof(&app, &exchange_fields(&code), None, &forged).await;
    assert_oauth_error(refused, 400, "use_dpop_nonce").await;

    let proof = key.proof(
        "POST",
        &token_url(&app),
        app.clock_now(),
        Some(&nonce),
        None,
    );
    let response = token_request_with_proof(&app, &exchange_fields(&code), None, &proof).await;
    assert_eq!(response.status(), 200);
    assert!(response.headers().contains_key("dpop-nonce"));
    let body: Value = response.json().await.unwrap();
    // §5: the type says DPoP, and the access token's `cnf.jkt` is the key's thumbprint.
    assert_eq!(body["token_type"], "DPoP");
    let (_, claims) = jwt_parts(body["access_token"].as_str().unwrap());
    assert_eq!(claims["cnf"]["jkt"], json!(key.jkt()), "{claims}");
    assert!(body["id_token"].is_string() && body["refresh_token"].is_string());

    // The same proof again is a replay (§11.1), whatever it is sent with.
    let again = token_request_with_proof(&app, &exchange_fields(&code), None, &proof).await;
    assert_oauth_error(again, 400, "invalid_dpop_proof").await;
    // A nonce expires (five minutes).
    app.clock.advance(301);
    let stale = key.proof(
        "POST",
        &token_url(&app),
        app.clock_now(),
        Some(&nonce),
        None,
    );
    let refused = token_request_with_proof(&app, &exchange_fields(&code), None, &stale).await;
    assert_oauth_error(refused, 400, "use_dpop_nonce").await;

    // Without a proof, nothing is bound.
    let code = code_for(&app, &app.browser(), &[]).await;
    let response = token_request(&app, &exchange_fields(&code), None).await;
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["token_type"], "Bearer");
    let (_, claims) = jwt_parts(body["access_token"].as_str().unwrap());
    assert!(claims.get("cnf").is_none(), "{claims}");
    app.stop().await;
}

async fn bound_tokens_work_at_userinfo_and_the_api_only_with_fresh_proofs_of_their_key(
    db: TestDatabase,
) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let (key, thief) = (DpopKey::new(), DpopKey::new());
    let tokens = bound_tokens(&app, &key).await;
    let token = tokens["access_token"].as_str().unwrap();
    let userinfo = format!("{}/oauth/userinfo", app.issuer);
    let api = format!("{}/api", app.api_url);
    let now = app.clock_now();
    let get_userinfo = |scheme: &'static str, proof: Option<String>| {
        let request = app
            .http
            .get(&userinfo)
            .header("Authorization", format!("{scheme} {token}"));
        let request = match proof {
            Some(proof) => request.header("DPoP", proof),
            None => request,
        };
        async move { request.send().await.unwrap() }
    };
    let query = json!({ "query": "{ viewer { subject } }" });
    let post_api = |scheme: &'static str, proof: Option<String>| {
        let request = app
            .http
            .post(&api)
            .header("Authorization", format!("{scheme} {token}"))
            .json(&query);
        let request = match proof {
            Some(proof) => request.header("DPoP", proof),
            None => request,
        };
        async move { request.send().await.unwrap() }
    };

    // The DPoP scheme and a proof of this request by the key: accepted, once.
    let proof = key.proof("GET", &userinfo, now, None, Some(token));
    let response = get_userinfo("DPoP", Some(proof.clone())).await;
    assert_eq!(response.status(), 200);
    let replayed = get_userinfo("DPoP", Some(proof)).await;
    assert_dpop_challenge(&replayed, "invalid_dpop_proof");
    let proof = key.proof("POST", &api, now, None, Some(token));
    let response = post_api("DPoP", Some(proof.clone())).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert!(body["data"]["viewer"]["subject"].is_string(), "{body}");
    assert_dpop_challenge(&post_api("DPoP", Some(proof)).await, "invalid_dpop_proof");

    // A bound token as a Bearer token is refused (§7.2), proof or not.
    for response in [
        get_userinfo("Bearer", None).await,
        get_userinfo(
            "Bearer",
            Some(key.proof("GET", &userinfo, now, None, Some(token))),
        )
        .await,
        post_api("Bearer", None).await,
    ] {
        assert_eq!(response.status(), 401);
        let challenge = response.headers()["www-authenticate"].to_str().unwrap();
        assert!(
            challenge.starts_with("Bearer error=\"invalid_token\""),
            "{challenge}"
        );
    }

    // Proofs that do not fit: another key, another URL or method, stale or future `iat`,
    // no `ath` or the hash of another token, none at all.
    let userinfo_misfits = [
        Some(thief.proof("GET", &userinfo, now, None, Some(token))),
        Some(key.proof("GET", &api, now, None, Some(token))),
        Some(key.proof("POST", &userinfo, now, None, Some(token))),
        Some(key.proof("GET", &userinfo, now - 61, None, Some(token))),
        Some(key.proof("GET", &userinfo, now + 61, None, Some(token))),
        Some(key.proof("GET", &userinfo, now, None, None)),
        Some(key.proof("GET", &userinfo, now, None, Some("another.access.token"))),
        Some("not a proof".to_owned()),
        None,
    ];
    for proof in userinfo_misfits {
        let response = get_userinfo("DPoP", proof.clone()).await;
        assert_dpop_challenge(&response, "invalid_dpop_proof");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"], "invalid_dpop_proof", "{proof:?}");
    }
    for proof in [
        Some(thief.proof("POST", &api, now, None, Some(token))),
        Some(key.proof("POST", &userinfo, now, None, Some(token))),
        Some(key.proof("GET", &api, now, None, Some(token))),
        Some(key.proof("POST", &api, now - 61, None, Some(token))),
        Some(key.proof("POST", &api, now, None, None)),
        None,
    ] {
        assert_dpop_challenge(&post_api("DPoP", proof).await, "invalid_dpop_proof");
    }

    // An unbound token is not presented with the DPoP scheme.
    let code = code_for(&app, &app.browser(), &[]).await;
    let response = token_request(&app, &exchange_fields(&code), None).await;
    let body: Value = response.json().await.unwrap();
    let unbound = body["access_token"].as_str().unwrap();
    let response = app
        .http
        .get(&userinfo)
        .header("Authorization", format!("DPoP {unbound}"))
        .header(
            "DPoP",
            key.proof("GET", &userinfo, now, None, Some(unbound)),
        )
        .send()
        .await
        .unwrap();
    assert_dpop_challenge(&response, "invalid_token");
    app.stop().await;
}

async fn proofs_that_do_not_fit_the_request_are_refused_at_the_token_endpoint(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let key = DpopKey::new();
    let code = code_for(&app, &app.browser(), &[]).await;
    let nonce = nonce(&app, &key).await;
    let url = token_url(&app);
    let now = app.clock_now();
    let misfits = [
        key.proof("GET", &url, now, Some(&nonce), None),
        key.proof(
            "POST",
            &format!("{}/oauth/userinfo", app.issuer),
            now,
            Some(&nonce),
            None,
        ),
        key.proof("POST", &url, now - 61, Some(&nonce), None),
        key.sign(&json!({"htm": "POST", "htu": url, "iat": now, "nonce": nonce})),
        "eyJhbGciOiJub25lIn0.e30.".to_owned(),
    ];
    for proof in &misfits {
        let response = token_request_with_proof(&app, &exchange_fields(&code), None, proof).await;
        assert!(response.headers().contains_key("dpop-nonce"));
        assert_oauth_error(response, 400, "invalid_dpop_proof").await;
    }
    // Two proofs at once are refused too (§4.3 item 1).
    let one = key.proof("POST", &url, now, Some(&nonce), None);
    let two = key.proof("POST", &url, now, Some(&nonce), None);
    let response = app
        .http
        .post(&url)
        .header("DPoP", one)
        .header("DPoP", two)
        .form(&exchange_fields(&code))
        .send()
        .await
        .unwrap();
    assert_oauth_error(response, 400, "invalid_dpop_proof").await;
    // None of it spent the code.
    let response = with_fresh_proof(&app, &key, &nonce, &exchange_fields(&code), None).await;
    assert_eq!(response.status(), 200);
    app.stop().await;
}

async fn a_confidential_clients_tokens_are_bound_but_its_refresh_token_is_not(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let key = DpopKey::new();
    let code = code_for(
        &app,
        &app.browser(),
        &[
            ("client_id", Some(WEB_CLIENT)),
            ("scope", Some("openid offline_access jobs")),
        ],
    )
    .await;
    let nonce = nonce(&app, &key).await;
    let fields = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT_URI),
        ("code_verifier", VERIFIER),
    ];
    let basic = Some((WEB_CLIENT, WEB_SECRET));
    let response = with_fresh_proof(&app, &key, &nonce, &fields, basic).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["token_type"], "DPoP");
    // §5: its refresh token is bound to its credentials, not to the key: a refresh
    // without a proof gets a Bearer token.
    let refresh_token = body["refresh_token"].as_str().unwrap();
    let fields = [
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh_token),
    ];
    let response = token_request(&app, &fields, basic).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["token_type"], "Bearer");
    app.stop().await;
}

fn refresh_fields(token: &str) -> Vec<(&str, &str)> {
    vec![
        ("grant_type", "refresh_token"),
        ("refresh_token", token),
        ("client_id", CLIENT_ID),
    ]
}

async fn a_public_clients_refresh_token_works_only_with_a_proof_of_its_key(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let (key, thief) = (DpopKey::new(), DpopKey::new());
    let first = bound_tokens(&app, &key).await["refresh_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let nonce = nonce(&app, &key).await;
    // Without a proof, or with another key's: refused, and nothing is spent (§5).
    let bare = token_request(&app, &refresh_fields(&first), None).await;
    assert_oauth_error(bare, 400, "invalid_dpop_proof").await;
    let response = with_fresh_proof(&app, &thief, &nonce, &refresh_fields(&first), None).await;
    assert_oauth_error(response, 400, "invalid_dpop_proof").await;

    let response = with_fresh_proof(&app, &key, &nonce, &refresh_fields(&first), None).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["token_type"], "DPoP");
    let (_, claims) = jwt_parts(body["access_token"].as_str().unwrap());
    assert_eq!(claims["cnf"]["jkt"], json!(key.jkt()));
    let second = body["refresh_token"].as_str().unwrap().to_owned();

    // The consumed token presented without the key revokes nothing: a copy of it is not
    // enough to end the user's grant.
    let response = with_fresh_proof(&app, &thief, &nonce, &refresh_fields(&first), None).await;
    assert_oauth_error(response, 400, "invalid_dpop_proof").await;
    let response = with_fresh_proof(&app, &key, &nonce, &refresh_fields(&second), None).await;
    assert_eq!(response.status(), 200);
    // With the key, reuse is reuse (spec §5.7).
    let response = with_fresh_proof(&app, &key, &nonce, &refresh_fields(&first), None).await;
    assert_oauth_error(response, 400, "invalid_grant").await;
    app.stop().await;
}

async fn a_client_registered_as_dpop_bound_gets_no_tokens_without_a_proof(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let key = DpopKey::new();
    let code = offline_code(&app).await;
    let plain = token_request(&app, &exchange_fields(&code), None).await;
    let refresh_token = plain.json::<Value>().await.unwrap()["refresh_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let registered = app.cli(&[
        "client",
        "update",
        "--tenant",
        "acme",
        "--client-id",
        CLIENT_ID,
        "--dpop-bound-access-tokens",
    ]);
    assert!(registered.status.success(), "{registered:?}");

    // §5.2: no token request without a proof, and the refusal spends nothing.
    let refused = token_request(&app, &refresh_fields(&refresh_token), None).await;
    assert_oauth_error(refused, 400, "invalid_dpop_proof").await;
    let code = code_for(&app, &app.browser(), &[]).await;
    let refused = token_request(&app, &exchange_fields(&code), None).await;
    assert_oauth_error(refused, 400, "invalid_dpop_proof").await;

    let nonce = nonce(&app, &key).await;
    let response = with_fresh_proof(&app, &key, &nonce, &exchange_fields(&code), None).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.json::<Value>().await.unwrap()["token_type"],
        "DPoP"
    );
    // A grant from before the registration was not bound: any key may refresh it now,
    // and the new access token is bound to that key.
    let response =
        with_fresh_proof(&app, &key, &nonce, &refresh_fields(&refresh_token), None).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.json::<Value>().await.unwrap()["token_type"],
        "DPoP"
    );
    app.stop().await;
}
