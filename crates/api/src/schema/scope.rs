//! Scope gating (spec 2.6): each area's root fields need its scope, and so does every field
//! that leads from one area into another. A denied field is null with a FORBIDDEN error that
//! names the scope; the rest of the query still answers.

use async_graphql::{Context, ErrorExtensions, Guard};
use jose::AccessTokenClaims;

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

    const ALL: [Scope; 5] = [
        Scope::Jobs,
        Scope::WorkOrders,
        Scope::Customers,
        Scope::Invoices,
        Scope::Employees,
    ];

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// The API's scopes a token holds, read from its `scope` claim once per request: a query
/// checks them for each of its objects (every job's assignments, say), and splitting the
/// claim each time was 1.6% of an uncached 20-job query (docs/performance.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Scopes(u8);

impl Scopes {
    /// By the claims' own rule (`AccessTokenClaims::has_scope`).
    pub fn of(claims: &AccessTokenClaims) -> Scopes {
        Scopes(
            Scope::ALL
                .iter()
                .filter(|scope| claims.has_scope(scope.as_str()))
                .fold(0, |bits, scope| bits | scope.bit()),
        )
    }

    pub fn has(self, scope: Scope) -> bool {
        self.0 & scope.bit() != 0
    }
}

/// `#[graphql(guard = "Needs(Scope::Jobs)")]`.
pub struct Needs(pub Scope);

impl Guard for Needs {
    async fn check(&self, ctx: &Context<'_>) -> async_graphql::Result<()> {
        let caller = ctx.data::<Caller>()?;
        match caller.scopes.has(self.0) {
            true => Ok(()),
            false => Err(ApiError::Forbidden(self.0.as_str()).extend()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(scope: &str) -> Scopes {
        Scopes::of(&AccessTokenClaims {
            iss: "https://id.example".into(),
            sub: "u1".into(),
            aud: "https://api.example".into(),
            exp: 2,
            iat: 1,
            jti: "j".into(),
            client_id: "spa".into(),
            scope: scope.into(),
            tenant: "acme".into(),
            organization_guid: "o1".into(),
            auth_time: 1,
            grant_id: "g".into(),
            acr: None,
            cnf: None,
        })
    }

    #[test]
    fn a_token_holds_the_scopes_its_claim_names_exactly() {
        let scopes = of("openid jobs offline_access employees");
        assert!(scopes.has(Scope::Jobs) && scopes.has(Scope::Employees));
        assert!(!scopes.has(Scope::WorkOrders) && !scopes.has(Scope::Invoices));
        // Whole words only, case included.
        let near = of("jobsx Customers work_orders invoices:read  employee");
        assert!(Scope::ALL.iter().all(|scope| !near.has(*scope)));
        let all = of("workOrders customers invoices jobs employees jobs");
        assert!(Scope::ALL.iter().all(|scope| all.has(*scope)));
        assert_eq!(of(""), Scopes::default());
    }
}
