//! Administration (issue 22): the operations an operator or a tenant's back office performs
//! on tenants, clients, users, organizations and grants, written once here for both front
//! ends, the admin API ([`http`]) and the CLI. Each operation is a function of a [`Ctx`]
//! (who asks, when) and checked input, returning a view the API serializes and the CLI
//! prints; each change writes one audit event.

pub mod audit;
pub mod audit_trail;
pub mod auth;
pub mod clients;
pub mod context;
pub mod error;
pub mod etag;
pub mod grants;
pub mod http;
pub mod organizations;
pub mod page;
pub mod password_links;
pub mod tenants;
pub mod text;
pub mod tokens;
pub mod users;
pub mod versioned;

pub use auth::{authenticate, Admin, AdminScope};
pub use context::{cli_admin, Ctx};
pub use error::AdminError;
pub use versioned::Versioned;
