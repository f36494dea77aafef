//! `viewer`: who is calling, answered for any valid token.

use async_graphql::{Context, Object, SimpleObject, ID};
use store::Store;

use super::context::{gql, Result};
use crate::bearer::Caller;
use crate::error::ApiError;

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

#[derive(Default)]
pub struct ViewerQuery;

#[Object]
impl ViewerQuery {
    /// The caller: subject, organization and granted scopes. Needs no particular scope.
    async fn viewer(&self, ctx: &Context<'_>) -> Result<Viewer> {
        let caller = ctx.data::<Caller>()?;
        let store = ctx.data::<Store>()?;
        let organization = store
            .tenant(&caller.tenant)
            .find_organization(&caller.claims.organization_guid)
            .await
            .map_err(gql)?
            .ok_or_else(|| gql(ApiError::NotFound("organization not found".into())))?;
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
