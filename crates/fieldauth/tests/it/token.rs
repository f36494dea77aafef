//! `POST /oauth/token` with `grant_type=authorization_code` (RFC 6749 §4.1.3, §5; RFC 7636
//! §4.6; RFC 9068; OpenID Connect Core §3.1.3), driven by the `openidconnect` crate where a
//! relying party would use it.

use openidconnect::core::{CoreClient, CoreProviderMetadata, CoreResponseType, CoreUserInfoClaims};
use openidconnect::{
    AccessTokenHash, AuthenticationFlow, AuthorizationCode, ClientId, CsrfToken, IssuerUrl, Nonce,
    OAuth2TokenResponse, PkceCodeChallenge, RedirectUrl, Scope, TokenResponse,
};
use store::testing::TestDatabase;

use crate::flow::{
    self, assert_oauth_error, code_for, exchange, jwt_parts, location_params, param,
    requiring_dpop, seed, token_request, CLIENT_ID, REDIRECT_URI, TENANT, VERIFIER, WEB_CLIENT,
    WEB_SECRET,
};
use crate::helpers::{on_both_backends, TestApp};
use crate::node_support::userinfo;

/// Extra form fields, and HTTP Basic credentials, of a token request.
type Extra = Vec<(&'static str, &'static str)>;
type Basic = Option<(&'static str, &'static str)>;

on_both_backends!(
    openidconnect_exchanges_verifies_the_id_token_reads_userinfo_and_refreshes,
    the_token_response_and_jwts_carry_what_the_spec_and_rfc_9068_name,
    confidential_clients_authenticate_with_basic_or_body_and_every_misuse_is_invalid_client,
    every_bad_code_exchange_is_invalid_grant,
    a_replayed_code_fails_and_revokes_the_tokens_it_issued,
    a_used_code_presented_by_another_client_revokes_nothing,
    a_used_code_revokes_only_until_ten_minutes_after_its_expiry,
    only_authorization_code_and_refresh_token_grants_exist,
    an_exchange_by_a_kept_client_is_one_trip_and_refuses_as_any_other,
);

async fn openidconnect_exchanges_verifies_the_id_token_reads_userinfo_and_refreshes(
    db: TestDatabase,
) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let metadata = CoreProviderMetadata::discover_async(
        IssuerUrl::new(app.issuer.clone()).unwrap(),
        &app.http,
    )
    .await
    .unwrap();
    let client =
        CoreClient::from_provider_metadata(metadata, ClientId::new(CLIENT_ID.into()), None)
            .set_redirect_uri(RedirectUrl::new(REDIRECT_URI.into()).unwrap());
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let (url, _state, nonce) = client
        .authorize_url(
            AuthenticationFlow::<CoreResponseType>::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        )
        .add_scope(Scope::new("profile".into()))
        .add_scope(Scope::new("email".into()))
        .add_scope(Scope::new("offline_access".into()))
        .add_scope(Scope::new("jobs".into()))
        .add_extra_param("tenant", flow::TENANT)
        .set_pkce_challenge(challenge)
        .url();
    let browser = app.browser();
    let page = flow::signed_in_consent_page(&app, &browser, url.as_str(), "alice").await;
    let scopes = ["profile", "email", "offline_access", "jobs"];
    let response = flow::consent(
        &app,
        &browser,
        &page,
        "allow",
        Some("10000000-0000-4000-8000-000000000001"),
        &scopes,
    )
    .await;
    let code = param(&location_params(&response).1, "code")
        .unwrap()
        .to_owned();

    let tokens = client
        .exchange_code(AuthorizationCode::new(code))
        .unwrap()
        .set_pkce_verifier(verifier)
        .request_async(&app.http)
        .await
        .expect("code exchange");
    // The crate verifies the signature against our JWKS, iss, aud, exp and the nonce.
    let id_token = tokens.id_token().expect("an ID token for openid");
    let id_verifier = client.id_token_verifier();
    let claims = id_token
        .claims(&id_verifier, &nonce)
        .expect("a valid ID token");
    assert_eq!(
        claims.subject().as_str(),
        "00000000-0000-4000-8000-000000000000"
    );
    assert_eq!(claims.preferred_username().unwrap().as_str(), "alice");
    assert_eq!(claims.email().unwrap().as_str(), "alice@example.com");
    let at_hash = AccessTokenHash::from_token(
        tokens.access_token(),
        id_token.signing_alg().unwrap(),
        id_token.signing_key(&id_verifier).unwrap(),
    )
    .unwrap();
    assert_eq!(claims.access_token_hash(), Some(&at_hash));

    let userinfo: CoreUserInfoClaims = client
        .user_info(
            tokens.access_token().clone(),
            Some(claims.subject().clone()),
        )
        .unwrap()
        .request_async(&app.http)
        .await
        .expect("userinfo");
    assert_eq!(userinfo.subject(), claims.subject());
    assert_eq!(userinfo.email().unwrap().as_str(), "alice@example.com");

    let refreshed = client
        .exchange_refresh_token(
            tokens
                .refresh_token()
                .expect("offline_access gives a refresh token"),
        )
        .unwrap()
        .request_async(&app.http)
        .await
        .expect("refresh");
    assert_ne!(
        refreshed.refresh_token().unwrap().secret(),
        tokens.refresh_token().unwrap().secret(),
        "rotated"
    );
    let (_, access) = jwt_parts(refreshed.access_token().secret());
    assert_eq!(
        access["organization_guid"], "10000000-0000-4000-8000-000000000001",
        "the same organization"
    );
    app.stop().await;
}

/// Spec §2.4 and §2.5, RFC 9068 §2, OpenID Connect Core §2 and §5.4.
async fn the_token_response_and_jwts_carry_what_the_spec_and_rfc_9068_name(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let browser = app.browser();
    let code = code_for(
        &app,
        &browser,
        &[("scope", Some("openid profile offline_access jobs"))],
    )
    .await;
    let response = token_request(
        &app,
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", REDIRECT_URI),
            ("code_verifier", VERIFIER),
            ("client_id", CLIENT_ID),
        ],
        None,
    )
    .await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["cache-control"], "no-store");
    let body: serde_json::Value = response.json().await.unwrap();
    let mut fields: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    fields.sort_unstable();
    assert_eq!(
        fields,
        [
            "access_token",
            "expires_in",
            "id_token",
            "refresh_token",
            "scope",
            "token_type"
        ]
    );
    assert_eq!(
        (body["token_type"].as_str(), body["expires_in"].as_i64()),
        (Some("Bearer"), Some(3600))
    );
    assert_eq!(body["scope"], "openid profile offline_access jobs");
    let refresh = body["refresh_token"].as_str().unwrap();
    assert!(
        refresh.starts_with("acme.") && refresh.len() == "acme.".len() + 64,
        "{refresh}"
    );

    let (header, access) = jwt_parts(body["access_token"].as_str().unwrap());
    assert_eq!(
        (header["alg"].as_str(), header["typ"].as_str()),
        (Some("RS256"), Some("at+jwt"))
    );
    assert_eq!(header["kid"].as_str().unwrap(), app.jwks_kids().await[0]);
    assert_eq!(access["iss"], app.issuer.as_str());
    assert_eq!(access["aud"], app.api_url.as_str());
    assert_eq!(
        access["exp"].as_i64().unwrap() - access["iat"].as_i64().unwrap(),
        3600
    );
    assert_eq!(
        (access["client_id"].as_str(), access["tenant"].as_str()),
        (Some(CLIENT_ID), Some("acme"))
    );
    assert_eq!(
        access["organization_guid"],
        "10000000-0000-4000-8000-000000000000"
    );
    assert_eq!(access["sub"], "00000000-0000-4000-8000-000000000000");
    assert_eq!(access["scope"], "openid profile offline_access jobs");
    assert_eq!(access["jti"].as_str().unwrap().len(), 43);

    let (header, id) = jwt_parts(body["id_token"].as_str().unwrap());
    assert_eq!(header["alg"], "RS256");
    assert_eq!(
        (id["aud"].as_str(), id["azp"].as_str()),
        (Some(CLIENT_ID), Some(CLIENT_ID))
    );
    assert_eq!(
        id["exp"].as_i64().unwrap() - id["iat"].as_i64().unwrap(),
        600
    );
    assert_eq!(id["nonce"], "nonce-456");
    assert_eq!(id["auth_time"].as_i64(), Some(app.clock_now()));
    assert_eq!(
        id["at_hash"],
        jose::at_hash(body["access_token"].as_str().unwrap()).as_str()
    );
    assert_eq!(
        (id["name"].as_str(), id["preferred_username"].as_str()),
        (Some("alice Example"), Some("alice"))
    );
    assert!(
        id.get("email").is_none(),
        "no email claim without the email scope"
    );

    // Without openid there is no ID token; without offline_access no refresh token.
    let code = code_for(&app, &browser, &[("scope", Some("jobs"))]).await;
    let body = exchange(&app, &code).await;
    assert!(
        body.get("id_token").is_none() && body.get("refresh_token").is_none(),
        "{body}"
    );
    assert_eq!(body["scope"], "jobs");
    app.stop().await;
}

/// RFC 6749 §2.3.1 and §5.2: HTTP Basic or body credentials, never both; public clients
/// send none.
async fn confidential_clients_authenticate_with_basic_or_body_and_every_misuse_is_invalid_client(
    db: TestDatabase,
) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let browser = app.browser();
    let fields = |code: &str| -> Vec<(String, String)> {
        [
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", REDIRECT_URI),
            ("code_verifier", VERIFIER),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    };
    let send = |extra: Vec<(&'static str, &'static str)>,
                basic: Option<(&'static str, &'static str)>,
                code: String| {
        let app = &app;
        async move {
            let mut all = fields(&code);
            all.extend(extra.into_iter().map(|(k, v)| (k.to_owned(), v.to_owned())));
            let refs: Vec<(&str, &str)> =
                all.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            token_request(app, &refs, basic).await
        }
    };
    let web = [("client_id", Some(WEB_CLIENT))];

    let ok = send(
        vec![],
        Some((WEB_CLIENT, WEB_SECRET)),
        code_for(&app, &browser, &web).await,
    )
    .await;
    assert_eq!(ok.status(), 200, "HTTP Basic");
    let ok = send(
        vec![("client_id", WEB_CLIENT), ("client_secret", WEB_SECRET)],
        None,
        code_for(&app, &browser, &web).await,
    )
    .await;
    assert_eq!(ok.status(), 200, "client_secret in the body");

    let refusals: Vec<(Extra, Basic)> = vec![
        (vec![("client_id", WEB_CLIENT)], None),
        (vec![], Some((WEB_CLIENT, "wrong-secret"))),
        (
            vec![("client_id", WEB_CLIENT), ("client_secret", "wrong-secret")],
            None,
        ),
        (
            vec![("client_secret", WEB_SECRET)],
            Some((WEB_CLIENT, WEB_SECRET)),
        ),
        (vec![("client_id", "spa")], Some((WEB_CLIENT, WEB_SECRET))),
        (vec![], None),
        (vec![("client_id", "nobody")], None),
    ];
    for (extra, basic) in refusals {
        let code = code_for(&app, &browser, &web).await;
        assert_oauth_error(
            send(extra, basic, code.clone()).await,
            401,
            "invalid_client",
        )
        .await;
        // Nothing about the code counts before the client is authenticated: a presenter
        // without the client's credentials cannot use the code up.
        let ok = send(vec![], Some((WEB_CLIENT, WEB_SECRET)), code).await;
        assert_eq!(ok.status(), 200, "the code survived a refused client");
    }
    // A public client that sends a secret, either way.
    for (extra, basic) in [
        (
            vec![("client_id", CLIENT_ID), ("client_secret", "anything")],
            None,
        ),
        (vec![], Some((CLIENT_ID, "anything"))),
    ] {
        let code = code_for(&app, &browser, &[]).await;
        assert_oauth_error(send(extra, basic, code).await, 401, "invalid_client").await;
    }
    app.stop().await;
}

/// RFC 6749 §5.2 `invalid_grant` for each cause, and RFC 7636 §4.6.
async fn every_bad_code_exchange_is_invalid_grant(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let browser = app.browser();
    let other_verifier = "a".repeat(43);
    let cases: Vec<(&str, Option<&str>, Option<&str>)> = vec![
        (
            "wrong code_verifier",
            Some("code_verifier"),
            Some(other_verifier.as_str()),
        ),
        ("short code_verifier", Some("code_verifier"), Some("abc")),
        (
            "wrong redirect_uri",
            Some("redirect_uri"),
            Some("https://app.example.com/cb?from=acme"),
        ),
        ("another client's code", Some("client_id"), Some("other")),
        (
            "unknown code",
            Some("code"),
            Some("acme.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
        ),
        ("malformed code", Some("code"), Some("not-a-code")),
    ];
    for (why, field, value) in cases {
        let code = code_for(&app, &browser, &[]).await;
        let mut fields = vec![
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("redirect_uri", REDIRECT_URI),
            ("code_verifier", VERIFIER),
            ("client_id", CLIENT_ID),
        ];
        if let (Some(field), Some(value)) = (field, value) {
            fields
                .iter_mut()
                .filter(|(k, _)| *k == field)
                .for_each(|f| f.1 = value);
        }
        let response = if field == Some("client_id") {
            // The code of `spa` presented by the confidential client `web`.
            let fields: Vec<_> = fields
                .into_iter()
                .filter(|(k, _)| *k != "client_id")
                .collect();
            token_request(&app, &fields, Some((WEB_CLIENT, WEB_SECRET))).await
        } else {
            token_request(&app, &fields, None).await
        };
        assert_eq!(response.status(), 400, "{why}");
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(body["error"], "invalid_grant", "{why}: {body}");
    }
    // Expired: 60 seconds, then the clock moves past it.
    let code = code_for(&app, &browser, &[]).await;
    app.clock.advance(61);
    let fields = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT_URI),
        ("code_verifier", VERIFIER),
        ("client_id", CLIENT_ID),
    ];
    assert_oauth_error(
        token_request(&app, &fields, None).await,
        400,
        "invalid_grant",
    )
    .await;
    // A missing verifier is a malformed request.
    let code = code_for(&app, &browser, &[]).await;
    let fields = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT_URI),
        ("client_id", CLIENT_ID),
    ];
    assert_oauth_error(
        token_request(&app, &fields, None).await,
        400,
        "invalid_request",
    )
    .await;
    app.stop().await;
}

/// RFC 6749 §10.5 and §4.1.2: a second redemption fails and revokes what the first issued.
async fn a_replayed_code_fails_and_revokes_the_tokens_it_issued(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let browser = app.browser();
    let code = code_for(
        &app,
        &browser,
        &[("scope", Some("openid offline_access jobs"))],
    )
    .await;
    let first = exchange(&app, &code).await;
    let fields = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT_URI),
        ("code_verifier", VERIFIER),
        ("client_id", CLIENT_ID),
    ];
    assert_oauth_error(
        token_request(&app, &fields, None).await,
        400,
        "invalid_grant",
    )
    .await;
    // The refresh token and the access token of the first redemption are dead.
    let refresh = [
        ("grant_type", "refresh_token"),
        ("refresh_token", first["refresh_token"].as_str().unwrap()),
        ("client_id", CLIENT_ID),
    ];
    assert_oauth_error(
        token_request(&app, &refresh, None).await,
        400,
        "invalid_grant",
    )
    .await;
    let userinfo = userinfo(
        &app.http,
        &app.issuer,
        first["access_token"].as_str().unwrap(),
    )
    .await;
    assert_eq!(userinfo.status(), 401);
    // The audit names the client whose grant it was.
    assert_eq!(
        revocations(&app).await,
        [(
            Some(CLIENT_ID.to_owned()),
            format!(
                "grant {}: an authorization code was redeemed twice",
                grant_of(&first)
            )
        )]
    );
    app.stop().await;
}

/// The `grant.revoked` events of tenant `acme`: (client_id, detail), oldest first.
async fn revocations(app: &TestApp) -> Vec<(Option<String>, String)> {
    let tenant = store::TenantId::parse(flow::TENANT).unwrap();
    let mut events = app.store.tenant(&tenant).audit_events(100).await.unwrap();
    events.sort_by_key(|event| event.seq);
    events
        .into_iter()
        .filter(|event| event.kind == "grant.revoked")
        .map(|event| (event.client_id, event.detail))
        .collect()
}

/// The `grant_id` of a token response's access token.
fn grant_of(tokens: &serde_json::Value) -> String {
    let (_, claims) = jwt_parts(tokens["access_token"].as_str().unwrap());
    claims["grant_id"].as_str().unwrap().to_owned()
}

/// `grant_type=refresh_token` with the response's refresh token: as `spa`, or with HTTP Basic
/// credentials.
async fn refreshed_by(
    app: &TestApp,
    tokens: &serde_json::Value,
    basic: Option<(&str, &str)>,
) -> reqwest::Response {
    let mut fields = vec![
        ("grant_type", "refresh_token"),
        ("refresh_token", tokens["refresh_token"].as_str().unwrap()),
    ];
    if basic.is_none() {
        fields.push(("client_id", CLIENT_ID));
    }
    token_request(app, &fields, basic).await
}

/// RFC 6749 §4.1.2: a replay revokes only when the code's own client presents it. A public
/// client of the tenant (which authenticates with its id alone) presenting the confidential
/// client's used code gets `invalid_grant`, and the confidential client's grant stands.
async fn a_used_code_presented_by_another_client_revokes_nothing(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let code = code_for(
        &app,
        &app.browser(),
        &[
            ("client_id", Some(WEB_CLIENT)),
            ("scope", Some("openid offline_access jobs")),
        ],
    )
    .await;
    let mut fields = vec![
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT_URI),
        ("code_verifier", VERIFIER),
    ];
    let web = token_request(&app, &fields, Some((WEB_CLIENT, WEB_SECRET))).await;
    assert_eq!(web.status(), 200);
    let web: serde_json::Value = web.json().await.unwrap();

    fields.push(("client_id", CLIENT_ID));
    assert_oauth_error(
        token_request(&app, &fields, None).await,
        400,
        "invalid_grant",
    )
    .await;
    let userinfo = userinfo(
        &app.http,
        &app.issuer,
        web["access_token"].as_str().unwrap(),
    )
    .await;
    assert_eq!(
        userinfo.status(),
        200,
        "the grant's access token still works"
    );
    let rotated = refreshed_by(&app, &web, Some((WEB_CLIENT, WEB_SECRET))).await;
    assert_eq!(
        rotated.status(),
        200,
        "the grant's refresh token still works"
    );
    assert_eq!(revocations(&app).await, []);
    app.stop().await;
}

/// RFC 6749 §4.1.2: a used code presented again by its own client revokes its grant until
/// ten minutes after the code's expiry (codes live 60 s); later, it is `invalid_grant` and
/// revokes nothing.
async fn a_used_code_revokes_only_until_ten_minutes_after_its_expiry(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let browser = app.browser();
    let scope = [("scope", Some("openid offline_access jobs"))];
    let soon = code_for(&app, &browser, &scope).await;
    let late = code_for(&app, &browser, &scope).await;
    let soon_tokens = exchange(&app, &soon).await;
    let late_tokens = exchange(&app, &late).await;

    // Both codes expired 60 s after they were issued; the last second of the window.
    app.clock.advance(60 + 599);
    assert_oauth_error(present(&app, &soon, VERIFIER).await, 400, "invalid_grant").await;
    assert_oauth_error(
        refreshed_by(&app, &soon_tokens, None).await,
        400,
        "invalid_grant",
    )
    .await;

    app.clock.advance(1);
    assert_oauth_error(present(&app, &late, VERIFIER).await, 400, "invalid_grant").await;
    let rotated = refreshed_by(&app, &late_tokens, None).await;
    assert_eq!(rotated.status(), 200, "the late replay revoked nothing");
    assert_eq!(
        revocations(&app).await,
        [(
            Some(CLIENT_ID.to_owned()),
            format!(
                "grant {}: an authorization code was redeemed twice",
                grant_of(&soon_tokens)
            )
        )]
    );
    app.stop().await;
}

/// Spec §1: implicit, password and client credentials are refused; so is anything unknown.
async fn only_authorization_code_and_refresh_token_grants_exist(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    for grant_type in [
        "password",
        "client_credentials",
        "implicit",
        "urn:ietf:params:oauth:grant-type:device_code",
    ] {
        let fields = [
            ("grant_type", grant_type),
            ("username", "alice"),
            ("password", flow::PASSWORD),
            ("client_id", CLIENT_ID),
        ];
        assert_oauth_error(
            token_request(&app, &fields, None).await,
            400,
            "unsupported_grant_type",
        )
        .await;
    }
    assert_oauth_error(
        token_request(&app, &[("client_id", CLIENT_ID)], None).await,
        400,
        "unsupported_grant_type",
    )
    .await;
    let repeated = [
        ("grant_type", "authorization_code"),
        ("code", "a"),
        ("code", "b"),
    ];
    assert_oauth_error(
        token_request(&app, &repeated, None).await,
        400,
        "invalid_request",
    )
    .await;
    let json = app
        .http
        .post(format!("{}/oauth/token", app.issuer))
        .json(&serde_json::json!({"grant_type": "authorization_code"}))
        .send()
        .await
        .unwrap();
    assert_oauth_error(json, 400, "invalid_request").await;
    app.stop().await;
}

/// A node keeps the clients it authenticated, and an exchange by a kept client redeems a code
/// that passes every check in one trip; a code that fails one is still spent by the
/// refusal, and a change of the client (made through the store, as another node or the CLI
/// would) counts at the next exchange.
async fn an_exchange_by_a_kept_client_is_one_trip_and_refuses_as_any_other(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let browser = app.browser();
    let code = code_for(&app, &browser, &[]).await;
    exchange(&app, &code).await;
    // The fewest statements of three exchanges: the server's background tasks count theirs
    // in the same counter now and then.
    let mut fewest = u64::MAX;
    for _ in 0..3 {
        let code = code_for(&app, &browser, &[]).await;
        let before = app.store.statements_executed();
        let tokens = exchange(&app, &code).await;
        fewest = fewest.min(app.store.statements_executed() - before);
        assert!(tokens["id_token"].is_string() && tokens["access_token"].is_string());
    }
    assert_eq!(fewest, 1, "statements of an exchange by a kept client");

    // A wrong verifier spends the code: the right one then finds it used.
    let code = code_for(&app, &browser, &[]).await;
    let wrong = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
    assert_oauth_error(present(&app, &code, wrong).await, 400, "invalid_grant").await;
    assert_oauth_error(present(&app, &code, VERIFIER).await, 400, "invalid_grant").await;

    let tenant_id = store::TenantId::parse(TENANT).unwrap();
    let tenant = app.store.tenant(&tenant_id);
    tenant
        .update_client(CLIENT_ID, &requiring_dpop(true), None)
        .await
        .unwrap();
    let code = code_for(&app, &browser, &[]).await;
    assert_oauth_error(
        present(&app, &code, VERIFIER).await,
        400,
        "invalid_dpop_proof",
    )
    .await;
    tenant
        .update_client(CLIENT_ID, &requiring_dpop(false), None)
        .await
        .unwrap();
    // The refusal for the proof spent nothing.
    let tokens: serde_json::Value = present(&app, &code, VERIFIER).await.json().await.unwrap();
    assert!(tokens["access_token"].is_string(), "{tokens}");

    let code = code_for(&app, &browser, &[]).await;
    tenant
        .disable_client(CLIENT_ID, app.clock_now())
        .await
        .unwrap();
    assert_oauth_error(present(&app, &code, VERIFIER).await, 401, "invalid_client").await;
    app.stop().await;
}

/// A code exchange of the public client `spa` with this verifier, whatever its answer.
async fn present(app: &TestApp, code: &str, verifier: &str) -> reqwest::Response {
    let fields = [
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", REDIRECT_URI),
        ("code_verifier", verifier),
        ("client_id", CLIENT_ID),
    ];
    token_request(app, &fields, None).await
}
