//! The store's integration tests, one module per area, in one test binary: each binary links
//! the store with both database drivers, and linking thirteen of them was minutes of every
//! build. `statement_plans` stays a binary of its own: it captures every statement its process
//! sends, so other tests running beside it would land in its capture.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

/// Declares each test twice, `sqlite::name` and `postgres::name`, each given a throwaway
/// database of its backend (a PostgreSQL test says it is skipped when there is none, and fails
/// under `FIELDAUTH_TEST_STRICT`). The module's `name` takes the `&TestDatabase`; with
/// `connect:` it takes what the module's `connect(&db)` returns; with `run:` the module's
/// `run(&db, name)` calls it.
macro_rules! on_both_backends {
    (connect: $($name:ident),* $(,)?) => {
        on_both_backends!(@each |db, name| name(super::connect(db).await).await; $($name),*);
    };
    (run: $($name:ident),* $(,)?) => {
        on_both_backends!(@each |db, name| super::run(db, name).await; $($name),*);
    };
    (@each |$db:ident, $test:ident| $call:expr; $($name:ident),*) => {
        mod sqlite {
            $(#[tokio::test]
            async fn $name() {
                let db = store::testing::TestDatabase::sqlite();
                let ($db, $test) = (&db, super::$name);
                $call;
            })*
        }
        mod postgres {
            $(#[tokio::test]
            async fn $name() {
                let Some(db) = store::testing::TestDatabase::postgres().await else { return };
                let ($db, $test) = (&db, super::$name);
                $call;
            })*
        }
    };
    ($($name:ident),* $(,)?) => {
        on_both_backends!(@each |db, name| name(db).await; $($name),*);
    };
}

mod admin_tokens;
mod cleanup;
mod client_origins;
mod clients_admin;
mod field;
mod links_and_audit;
mod passkeys_store;
mod plans;
mod refresh_retry;
mod second_factor_store;
mod shards;
mod sqlite_wal;
mod statistics;
mod suite;
