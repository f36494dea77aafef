//! The GraphQL schema. This first part answers `viewer`; the field-service areas (jobs, work
//! orders, customers, invoices, employees) join it area by area.

use async_graphql::{
    Context, EmptyMutation, EmptySubscription, ErrorExtensions, Object, Schema, SimpleObject, ID,
};
use store::Store;

use crate::bearer::Caller;
use crate::error::ApiError;

pub type ApiSchema = Schema<Query, EmptyMutation, EmptySubscription>;

/// Deep or costly queries are refused before they run.
const MAX_DEPTH: usize = 12;
const MAX_COMPLEXITY: usize = 500;

pub fn build_schema(store: Store) -> ApiSchema {
    Schema::build(Query, EmptyMutation, EmptySubscription)
        .data(store)
        .limit_depth(MAX_DEPTH)
        .limit_complexity(MAX_COMPLEXITY)
        .finish()
}

pub struct Query;

/// The organization an access token is bound to.
#[derive(SimpleObject)]
pub struct Organization {
    /// The `organization_guid` of the token.
    pub guid: ID,
    pub name: String,
}

/// Who is calling, as the access token says.
#[derive(SimpleObject)]
pub struct Viewer {
    /// The token's `sub`: the signed-in user.
    pub subject: String,
    /// The organization chosen at consent; every query sees only its data.
    pub organization: Organization,
    /// The granted scopes.
    pub scopes: Vec<String>,
}

#[Object]
impl Query {
    /// The caller: subject, organization and granted scopes. Needs no particular scope.
    async fn viewer(&self, ctx: &Context<'_>) -> async_graphql::Result<Viewer> {
        let caller = ctx.data::<Caller>()?;
        let store = ctx.data::<Store>()?;
        let organization = store
            .tenant(&caller.tenant)
            .find_organization(&caller.claims.organization_guid)
            .await
            .map_err(|e| ApiError::from(e).extend())?
            .ok_or_else(|| ApiError::NotFound.extend())?;
        Ok(Viewer {
            subject: caller.claims.sub.clone(),
            organization: Organization {
                guid: ID(organization.organization_guid),
                name: organization.name,
            },
            scopes: caller
                .claims
                .scope
                .split(' ')
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect(),
        })
    }
}
