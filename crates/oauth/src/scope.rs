//! The scopes of the specification (2.6): identity scopes and the API's areas.

use std::fmt;

use crate::error::OAuthError;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    OpenId,
    Profile,
    Email,
    OfflineAccess,
    Jobs,
    WorkOrders,
    Customers,
    Invoices,
    Employees,
}

impl Scope {
    /// Every scope, in the order discovery lists them.
    pub const ALL: [Scope; 9] = [
        Scope::OpenId,
        Scope::Profile,
        Scope::Email,
        Scope::OfflineAccess,
        Scope::Jobs,
        Scope::WorkOrders,
        Scope::Customers,
        Scope::Invoices,
        Scope::Employees,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::OpenId => "openid",
            Scope::Profile => "profile",
            Scope::Email => "email",
            Scope::OfflineAccess => "offline_access",
            Scope::Jobs => "jobs",
            Scope::WorkOrders => "workOrders",
            Scope::Customers => "customers",
            Scope::Invoices => "invoices",
            Scope::Employees => "employees",
        }
    }

    /// What the consent screen says the scope gives.
    pub fn description(self) -> &'static str {
        match self {
            Scope::OpenId => "Confirm who you are (sign you in)",
            Scope::Profile => "See your name and username",
            Scope::Email => "See your email address",
            Scope::OfflineAccess => "Stay connected when you are not using it",
            Scope::Jobs => "Jobs: job lists, assignments and completion reports",
            Scope::WorkOrders => "Work orders and contracts",
            Scope::Customers => "Customers: records, properties and billing profiles",
            Scope::Invoices => "Invoices: create invoices and record payments",
            Scope::Employees => "Employees: staff rosters and schedules",
        }
    }

    /// Scope names are case-sensitive (RFC 6749 §3.3).
    pub fn parse(value: &str) -> Result<Scope, OAuthError> {
        Scope::ALL
            .into_iter()
            .find(|s| s.as_str() == value)
            .ok_or(OAuthError::UnknownScope)
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scope_parses_back_and_case_matters() {
        for scope in Scope::ALL {
            assert_eq!(Scope::parse(scope.as_str()).unwrap(), scope);
        }
        assert!(Scope::parse("workorders").is_err());
        assert!(Scope::parse("OpenID").is_err());
    }
}
