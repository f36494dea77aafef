//! Persistence for fieldauth: the records of every tenant and the global signing keys, on
//! SQLite (embedded default) or PostgreSQL, behind one API whose queries are written once.

mod clients;
mod db;
mod error;
mod keys;
mod organizations;
mod tenant;
mod tenants;
#[cfg(feature = "testing")]
pub mod testing;
mod users;

pub use clients::{Client, ClientType, NewClient};
pub use db::{Backend, Store};
pub use error::{Entity, StoreError};
pub use keys::StoredSigningKey;
pub use organizations::Organization;
pub use tenant::{TenantId, TenantStore};
pub use tenants::Tenant;
pub use users::{NewUser, User};

/// Seconds since the Unix epoch: every time the store reads or writes.
pub type UnixTime = i64;
