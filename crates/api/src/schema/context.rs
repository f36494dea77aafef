//! What resolvers take from a request: the caller's organization in the store, the loaders,
//! the clock, fresh ids, and store errors in their GraphQL form.

use std::sync::Arc;

use async_graphql::{Context, ErrorExtensions};
use jose::Clock;
use store::{OrgStore, Store};

use super::batcher::Fetch;
use super::loaders::{FieldLoader, LoadError, Loaders, Shared};
use crate::bearer::Caller;
use crate::error::ApiError;

pub type Result<T> = async_graphql::Result<T>;

/// The token's organization: every read and write of a resolver goes through it.
pub fn org<'c>(ctx: &Context<'c>) -> Result<OrgStore<'c>> {
    let caller = ctx.data::<Caller>()?;
    let store = ctx.data::<Store>()?;
    Ok(store
        .tenant(&caller.tenant)
        .organization(&caller.claims.organization_guid))
}

pub fn now(ctx: &Context<'_>) -> Result<i64> {
    Ok(ctx.data::<Arc<dyn Clock>>()?.now())
}

/// A new record id: a type prefix and 128 random bits. Clients treat ids as opaque.
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::new_v4().simple())
}

/// Any failure in its GraphQL form, with its `extensions.code`.
pub fn gql(error: impl Into<ApiError>) -> async_graphql::Error {
    error.into().extend()
}

/// One value through the request's loader; `None` when the key names nothing.
pub async fn load<K, V>(ctx: &Context<'_>, key: K) -> Result<Option<V>>
where
    K: Send + Sync + std::hash::Hash + Eq + Clone + 'static,
    FieldLoader: Fetch<K, Value = V, Error = LoadError>,
    V: Send + Sync + Clone + 'static,
{
    ctx.data::<Loaders>()?
        .load(key)
        .await
        .map_err(|e| gql(ApiError::from_shared(&e)))
}

/// A record that must exist in the caller's organization, else NOT_FOUND.
pub async fn require<K, V>(ctx: &Context<'_>, key: K, what: &str) -> Result<V>
where
    K: Send + Sync + std::hash::Hash + Eq + Clone + 'static,
    FieldLoader: Fetch<K, Value = V, Error = LoadError>,
    V: Send + Sync + Clone + 'static,
{
    load(ctx, key)
        .await?
        .ok_or_else(|| gql(ApiError::NotFound(format!("{what} not found"))))
}

/// Children through the loader, the list shared with it; a parent without any has an empty
/// list.
pub async fn children<K, V>(ctx: &Context<'_>, key: K) -> Result<Shared<Vec<V>>>
where
    K: Send + Sync + std::hash::Hash + Eq + Clone + 'static,
    FieldLoader: Fetch<K, Value = Shared<Vec<V>>, Error = LoadError>,
    V: Send + Sync + 'static,
{
    Ok(load(ctx, key).await?.unwrap_or_default())
}
