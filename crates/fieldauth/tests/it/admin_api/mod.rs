//! The admin API over HTTP, on its own listener, with real admin tokens: every operation on
//! SQLite and PostgreSQL, tenant tokens confined to their tenant, and the contract (problem
//! JSON, ETags and If-Match).

mod audit;
mod client_settings;
mod clients;
mod contract;
mod grants;
mod listener;
mod organizations;
mod password_links;
pub(crate) mod support;
mod tenant_delete;
mod tenants;
mod user_effects;
mod users;
