//! The store's integration tests, one module per area, in one test binary: each binary links
//! the store with both database drivers, and linking thirteen of them was minutes of every
//! build. `statement_plans` stays a binary of its own: it captures every statement its process
//! sends, so other tests running beside it would land in its capture.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

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
mod suite;
