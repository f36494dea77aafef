//! Micro-benchmarks of Argon2id with the production parameters (`src/password.rs`: 19 MiB,
//! 2 passes, 1 lane): the cost that bounds sign-in, and password changes and user creation.
// Bench setup may unwrap: a failure there is a broken benchmark, not a request to answer.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode};
use oauth::argon2_memory::Argon2Memory;
use oauth::password::{hash_password, verify_password, verify_password_in};
use oauth::OsRandom;
use secrecy::SecretString;

fn bench_password(c: &mut Criterion) {
    let password = SecretString::from("correct horse battery staple".to_owned());
    let random = OsRandom::new();
    // `hash_password` is async (it runs Argon2id on the blocking pool), as in the server.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let phc = runtime
        .block_on(hash_password(password.clone(), &random))
        .unwrap();
    assert!(phc.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{phc}");
    assert!(verify_password(&password, &phc).unwrap());

    let mut group = c.benchmark_group("password");
    // Tens of milliseconds per call: few samples, each of the same iteration count.
    group.sample_size(10);
    group.sampling_mode(SamplingMode::Flat);
    group.bench_function("argon2id_hash", |b| {
        b.iter(|| {
            runtime
                .block_on(hash_password(black_box(password.clone()), &random))
                .unwrap()
        })
    });
    // What sign-in does with a known user (a wrong password costs the same): hashing in
    // memory kept from the last check, as the server does.
    let memory = Arc::new(Argon2Memory::default());
    group.bench_function("argon2id_verify", |b| {
        b.iter(|| verify_password_in(black_box(&password), black_box(&phc), &memory).unwrap())
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    targets = bench_password
}
criterion_main!(benches);
