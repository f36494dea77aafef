//! Scope gating (spec 2.6): each area's root fields need its scope, and so does every field
//! that leads from one area into another. A denied field is null with a FORBIDDEN error that
//! names the scope; the rest of the query still answers.

use async_graphql::{Context, ErrorExtensions, Guard};

use crate::bearer::Caller;
use crate::error::ApiError;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    Jobs,
    WorkOrders,
    Customers,
    Invoices,
    Employees,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Jobs => "jobs",
            Scope::WorkOrders => "workOrders",
            Scope::Customers => "customers",
            Scope::Invoices => "invoices",
            Scope::Employees => "employees",
        }
    }
}

/// `#[graphql(guard = "Needs(Scope::Jobs)")]`.
pub struct Needs(pub Scope);

impl Guard for Needs {
    async fn check(&self, ctx: &Context<'_>) -> async_graphql::Result<()> {
        let caller = ctx.data::<Caller>()?;
        match caller.claims.has_scope(self.0.as_str()) {
            true => Ok(()),
            false => Err(ApiError::Forbidden(self.0.as_str()).extend()),
        }
    }
}
