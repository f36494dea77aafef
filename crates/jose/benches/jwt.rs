//! Micro-benchmarks of the JWTs of a token response: RS256 signing (2048-bit key) of the access
//! token and the ID token with the claims `oauth/src/token/issue.rs` puts in them, and the API's
//! check of an access token (`api/src/bearer.rs`: header, signature, registered claims, claims).
// Bench setup may unwrap: a failure there is a broken benchmark, not a request to answer.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use jose::{
    at_hash, decode_header, generate_signing_key, verify_jwt, AccessTokenClaims, IdTokenClaims,
    KeyRing, SigningKey, UnixTime, Validation, VerificationKeys,
};

const ISSUER: &str = "https://auth.example.com";
const API_AUDIENCE: &str = "https://api.example.com";
const CLIENT_ID: &str = "field-app";
const NOW: UnixTime = 1_760_000_000;

/// A fresh RSA-2048 key, as `fieldauth` generates on first start.
fn signing_key() -> SigningKey {
    let generated = generate_signing_key().unwrap();
    SigningKey::from_pkcs8(&generated.kid, &generated.pkcs8_der).unwrap()
}

/// The claims of a code exchange granting every scope (the longest `scope` the server issues).
fn access_claims() -> AccessTokenClaims {
    AccessTokenClaims {
        iss: ISSUER.to_owned(),
        sub: "0b8e4c52-3f1d-4c7a-9a55-2f6f0d1e8b21".to_owned(),
        aud: API_AUDIENCE.to_owned(),
        exp: NOW + 3600,
        iat: NOW,
        // OsRandom::token: 256 bits, base64url.
        jti: "q3J9Jr0d2m4n1UuGkX7Cz8bW5yVtP6aLhE0sQfRi-_A".to_owned(),
        client_id: CLIENT_ID.to_owned(),
        scope: "openid profile email offline_access jobs workOrders customers invoices employees"
            .to_owned(),
        tenant: "acme-plumbing".to_owned(),
        organization_guid: "6f1c2d3e-4b5a-4978-8a6b-5c4d3e2f1a0b".to_owned(),
        auth_time: NOW - 120,
        grant_id: "d4e5f6a7-b8c9-4d0e-9f1a-2b3c4d5e6f70".to_owned(),
        acr: Some("urn:fieldauth:acr:mfa".to_owned()),
        cnf: None,
    }
}

/// The ID token of the same exchange, with `profile` and `email`; `at_hash` is set per token.
fn id_claims() -> IdTokenClaims {
    IdTokenClaims {
        iss: ISSUER.to_owned(),
        sub: "0b8e4c52-3f1d-4c7a-9a55-2f6f0d1e8b21".to_owned(),
        aud: CLIENT_ID.to_owned(),
        exp: NOW + 600,
        iat: NOW,
        auth_time: NOW - 120,
        nonce: Some("n-0S6_WzA2Mj".to_owned()),
        at_hash: String::new(),
        azp: CLIENT_ID.to_owned(),
        name: Some("Alice Martin".to_owned()),
        preferred_username: Some("alice".to_owned()),
        email: Some("alice@acme-plumbing.example".to_owned()),
        email_verified: Some(false),
        sid: None,
        amr: Some(vec!["pwd".to_owned(), "otp".to_owned(), "mfa".to_owned()]),
        acr: Some("urn:fieldauth:acr:mfa".to_owned()),
    }
}

fn bench_jwt(c: &mut Criterion) {
    let ring = KeyRing::new(signing_key(), Vec::new());
    let key = ring.signing_key();
    let access = access_claims();
    let id = id_claims();
    let access_token = key.sign_jwt("at+jwt", &access).unwrap();
    let mut id_with_hash = id.clone();
    id_with_hash.at_hash = at_hash(&access_token);

    // The API parses the issuer's JWKS once and caches it (`api/src/keys.rs`).
    let keys = VerificationKeys::from_jwks(ring.jwks()).unwrap();
    let validation = Validation {
        typ: "at+jwt",
        issuer: ISSUER,
        audience: API_AUDIENCE,
        now: NOW + 10,
        leeway: 60,
    };
    // The measured check must succeed, or it would time an early refusal.
    let checked: AccessTokenClaims = verify_jwt(&access_token, &keys, &validation).unwrap();
    assert_eq!(checked, access);

    let mut group = c.benchmark_group("jwt");
    group.bench_function("sign_access_token_rs256", |b| {
        b.iter(|| {
            key.sign_jwt(black_box("at+jwt"), black_box(&access))
                .unwrap()
        })
    });
    group.bench_function("sign_id_token_rs256", |b| {
        b.iter(|| {
            key.sign_jwt(black_box("JWT"), black_box(&id_with_hash))
                .unwrap()
        })
    });
    // What `issue::sign` does for a code exchange or refresh with `openid`: two signatures.
    group.bench_function("sign_token_response_openid", |b| {
        b.iter_batched(
            || id.clone(),
            |mut id| {
                let access_token = key.sign_jwt("at+jwt", black_box(&access)).unwrap();
                id.at_hash = at_hash(&access_token);
                let id_token = key.sign_jwt("JWT", black_box(&id)).unwrap();
                (access_token, id_token)
            },
            BatchSize::SmallInput,
        )
    });
    // `api/src/bearer.rs`: decode the header for its kid, then verify and check the claims.
    group.bench_function("verify_access_token_rs256", |b| {
        b.iter(|| {
            let token = black_box(access_token.as_str());
            let header = decode_header(token).unwrap();
            let claims: AccessTokenClaims =
                verify_jwt(token, black_box(&keys), black_box(&validation)).unwrap();
            (header, claims)
        })
    });
    group.bench_function("at_hash", |b| {
        b.iter(|| at_hash(black_box(access_token.as_str())))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    // A few seconds per benchmark; `cargo bench -- --measurement-time N` overrides it.
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = bench_jwt
}
criterion_main!(benches);
