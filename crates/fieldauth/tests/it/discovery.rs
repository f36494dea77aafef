//! Discovery and JWKS as a relying party consumes them: the `openidconnect` crate's provider
//! discovery (which also fetches the JWKS) must accept our documents.

use openidconnect::core::{CoreJsonWebKeySet, CoreProviderMetadata};
use openidconnect::{IssuerUrl, JsonWebKey};
use store::testing::TestDatabase;

use crate::helpers::{on_both_backends, TestApp};

on_both_backends!(
    openidconnect_crate_discovers_the_provider_and_its_keys,
    both_metadata_documents_are_the_same_and_complete,
    jwks_publishes_rs256_signing_keys_with_cache_control,
    unknown_paths_get_a_plain_404_and_health_checks_answer,
);

/// OpenID Connect Discovery 1.0 §4: the issuer in the document equals the one used to
/// discover it, and the keys at `jwks_uri` parse.
async fn openidconnect_crate_discovers_the_provider_and_its_keys(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let issuer = IssuerUrl::new(app.issuer.clone()).unwrap();
    let metadata = CoreProviderMetadata::discover_async(issuer, &app.http)
        .await
        .expect("discovery");
    assert_eq!(metadata.issuer().as_str(), app.issuer);
    assert_eq!(
        metadata.authorization_endpoint().as_str(),
        format!("{}/oauth/authorize", app.issuer)
    );
    assert_eq!(
        metadata.token_endpoint().unwrap().as_str(),
        format!("{}/oauth/token", app.issuer)
    );
    assert_eq!(
        metadata.userinfo_endpoint().unwrap().as_str(),
        format!("{}/oauth/userinfo", app.issuer)
    );
    assert_eq!(metadata.jwks().keys().len(), 1);
    let kid = metadata.jwks().keys()[0]
        .key_id()
        .unwrap()
        .as_str()
        .to_owned();
    assert_eq!(app.jwks_kids().await, [kid]);
    app.stop().await;
}

/// RFC 8414 §3 and OpenID Connect Discovery §3, with the values the issue fixes.
async fn both_metadata_documents_are_the_same_and_complete(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let oidc = app
        .get(&format!("{}/.well-known/openid-configuration", app.issuer))
        .await;
    assert_eq!(oidc.status(), 200);
    assert_eq!(oidc.headers()["content-type"], "application/json");
    let oidc: serde_json::Value = oidc.json().await.unwrap();
    let rfc8414: serde_json::Value = app
        .get(&format!(
            "{}/.well-known/oauth-authorization-server",
            app.issuer
        ))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(oidc, rfc8414);
    let at = |path: &str| format!("{}{path}", app.issuer);
    assert_eq!(oidc["issuer"], app.issuer);
    assert_eq!(oidc["revocation_endpoint"], at("/oauth/revoke"));
    assert_eq!(oidc["jwks_uri"], at("/oauth/jwks"));
    let expect = serde_json::json!({
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
        "revocation_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "authorization_response_iss_parameter_supported": true,
        "scopes_supported": ["openid", "profile", "email", "offline_access", "jobs", "workOrders", "customers", "invoices", "employees"],
    });
    for (field, value) in expect.as_object().unwrap() {
        assert_eq!(&oidc[field], value, "{field}");
    }
    for claim in [
        "sub",
        "name",
        "email",
        "preferred_username",
        "nonce",
        "at_hash",
    ] {
        assert!(
            oidc["claims_supported"]
                .as_array()
                .unwrap()
                .contains(&claim.into()),
            "{claim}"
        );
    }
    app.stop().await;
}

/// RFC 7517 §5 / RFC 7518 §6.3.1: RSA public keys with kid, use and alg, and no private part.
async fn jwks_publishes_rs256_signing_keys_with_cache_control(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let response = app.get(&format!("{}/oauth/jwks", app.issuer)).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["cache-control"], "public, max-age=60");
    let body = response.bytes().await.unwrap();
    let set: CoreJsonWebKeySet =
        serde_json::from_slice(&body).expect("the openidconnect key set type parses it");
    assert_eq!(set.keys().len(), 1);
    let raw: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let key = raw["keys"][0].as_object().unwrap();
    let mut fields: Vec<_> = key.keys().map(String::as_str).collect();
    fields.sort_unstable();
    assert_eq!(
        fields,
        ["alg", "e", "kid", "kty", "n", "use"],
        "public members only"
    );
    assert_eq!(
        (
            key["kty"].as_str(),
            key["use"].as_str(),
            key["alg"].as_str()
        ),
        (Some("RSA"), Some("sig"), Some("RS256"))
    );
    // RSA-2048: a 256-byte modulus is 342 base64url characters.
    assert!(key["n"].as_str().unwrap().len() >= 342);
    app.stop().await;
}

async fn unknown_paths_get_a_plain_404_and_health_checks_answer(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    for base in [&app.issuer, &app.api_url] {
        let missing = app.get(&format!("{base}/no/such/path")).await;
        assert_eq!(missing.status(), 404);
        assert!(missing.headers().contains_key("x-request-id"));
        assert_eq!(missing.text().await.unwrap(), "not found\n");
        assert_eq!(app.get(&format!("{base}/healthz")).await.status(), 200);
        assert_eq!(app.get(&format!("{base}/readyz")).await.status(), 200);
    }
    // A request id sent by the caller is echoed back.
    let echoed = app
        .http
        .get(format!("{}/healthz", app.issuer))
        .header("x-request-id", "abc-123")
        .send()
        .await
        .unwrap();
    assert_eq!(echoed.headers()["x-request-id"], "abc-123");
    app.stop().await;
}
