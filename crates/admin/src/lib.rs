//! Administration (issue 22): the operations an operator or a tenant's back office performs
//! on tenants, clients, users, organizations and grants, written once here for both front
//! ends, the admin API and the CLI. So far: admin tokens, and how a request proves one.

pub mod auth;
pub mod error;
pub mod tokens;

pub use auth::{authenticate, Admin, AdminScope};
pub use error::AdminError;
