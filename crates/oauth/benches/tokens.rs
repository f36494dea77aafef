//! Micro-benchmarks of the cheap secrets work of a token request: a 256-bit random token
//! (codes, refresh tokens, `jti`), its SHA-256 for storage, the constant-time check of a
//! presented secret, and PKCE S256 (RFC 7636 §4.6).
// Bench setup may unwrap: a failure there is a broken benchmark, not a request to answer.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use oauth::pkce::s256_challenge;
use oauth::secret::{hash_secret, verify_secret};
use oauth::{OsRandom, RandomSource};
use secrecy::SecretString;
use subtle::ConstantTimeEq;

/// RFC 7636 Appendix B.
const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

fn bench_tokens(c: &mut Criterion) {
    let random = OsRandom::new();
    let token = random.token().unwrap();
    let stored_hash = hash_secret(&token);
    let presented = SecretString::from(token.clone());
    assert!(verify_secret(&presented, &stored_hash));

    let mut group = c.benchmark_group("tokens");
    group.bench_function("generate_token_256bit", |b| {
        b.iter(|| black_box(&random).token().unwrap())
    });
    group.bench_function("hash_secret_sha256", |b| {
        b.iter(|| hash_secret(black_box(token.as_str())))
    });
    // Client secret check: SHA-256 of the presented secret, then `subtle` ct_eq.
    group.bench_function("verify_secret_constant_time", |b| {
        b.iter(|| verify_secret(black_box(&presented), black_box(&stored_hash)))
    });
    group.finish();

    assert_eq!(s256_challenge(VERIFIER), CHALLENGE);
    let long_verifier = "a".repeat(128);
    let mut group = c.benchmark_group("pkce");
    group.bench_function("s256_challenge_43", |b| {
        b.iter(|| s256_challenge(black_box(VERIFIER)))
    });
    group.bench_function("s256_challenge_128", |b| {
        b.iter(|| s256_challenge(black_box(long_verifier.as_str())))
    });
    // The comparison `check_verifier` (token/code.rs, private) makes after the S256.
    group.bench_function("verify_s256_43", |b| {
        b.iter(|| {
            let computed = s256_challenge(black_box(VERIFIER));
            bool::from(computed.as_bytes().ct_eq(black_box(CHALLENGE).as_bytes()))
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    // A few seconds per benchmark; `cargo bench -- --measurement-time N` overrides it.
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = bench_tokens
}
criterion_main!(benches);
