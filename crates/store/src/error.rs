//! The store's one error type. The store decides what a constraint violation means.

use std::fmt;

/// The kind of record an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entity {
    Tenant,
    Client,
    User,
    Organization,
    Membership,
    SigningKey,
    AuthorizationCode,
    Employee,
    Customer,
    Property,
    WorkOrder,
    Job,
    Invoice,
    AdminToken,
    Passkey,
}

impl fmt::Display for Entity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Entity::Tenant => "tenant",
            Entity::Client => "client",
            Entity::User => "user",
            Entity::Organization => "organization",
            Entity::Membership => "membership",
            Entity::SigningKey => "signing key",
            Entity::AuthorizationCode => "authorization code",
            Entity::Employee => "employee",
            Entity::Customer => "customer",
            Entity::Property => "property",
            Entity::WorkOrder => "work order",
            Entity::Job => "job",
            Entity::Invoice => "invoice",
            Entity::AdminToken => "admin token",
            Entity::Passkey => "passkey",
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0} already exists")]
    Conflict(Entity),
    #[error("{0} not found")]
    NotFound(Entity),
    /// A conditional update found the record at another revision than the one expected.
    #[error("{0} changed since it was read")]
    Changed(Entity),
    #[error("the last active signing key cannot be retired; rotate first")]
    LastActiveKey,
    #[error("invalid tenant id: {0}")]
    InvalidTenantId(&'static str),
    #[error("unsupported database URL scheme (expected sqlite:// or postgres://)")]
    UnsupportedUrl,
    /// A shard of the shard map could not be opened; names the shard, never its URL.
    #[error("shard {0:?}: {1}")]
    Shard(String, #[source] Box<StoreError>),
    #[error("tenant {0:?} is placed on shard {1:?}, which the shard map does not define")]
    UnknownShard(String, String),
    #[error("database unavailable")]
    Unavailable(#[source] sqlx::Error),
    #[error("database error")]
    Database(#[source] sqlx::Error),
    #[error("database migration failed")]
    Migration(#[from] sqlx::migrate::MigrateError),
    /// A business rule refused a write (an overlapping shift, an over-payment, a closed
    /// work order); the message is for the person who asked.
    #[error("{0}")]
    Refused(String),
    #[error("stored record is corrupt: {0}")]
    Corrupt(&'static str),
}

impl StoreError {
    /// Classifies a driver error; `entity` names the record an insert or update was about.
    pub(crate) fn from_sqlx(error: sqlx::Error, entity: Entity) -> StoreError {
        match &error {
            sqlx::Error::Database(db) if db.kind() == sqlx::error::ErrorKind::UniqueViolation => {
                StoreError::Conflict(entity)
            }
            _ => StoreError::from(error),
        }
    }

    /// True when the error is a foreign-key violation, which callers turn into the
    /// `NotFound` of the record that was referenced.
    pub(crate) fn is_foreign_key_violation(error: &sqlx::Error) -> bool {
        matches!(error, sqlx::Error::Database(db)
            if db.kind() == sqlx::error::ErrorKind::ForeignKeyViolation)
    }
}

impl From<sqlx::Error> for StoreError {
    fn from(error: sqlx::Error) -> StoreError {
        match error {
            sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            // A connection cut mid-message reads as a protocol error.
            | sqlx::Error::Protocol(_)
            | sqlx::Error::WorkerCrashed => StoreError::Unavailable(error),
            sqlx::Error::Database(ref db) if is_unavailable_state(db.code().as_deref()) => {
                StoreError::Unavailable(error)
            }
            other => StoreError::Database(other),
        }
    }
}

/// SQLSTATE classes that mean "the database is going away or not reachable", not "this
/// statement is wrong": 08 connection exception, 57P01–57P05 shutdown and crash, 53300 too
/// many connections. A client may retry these.
pub(crate) fn is_unavailable_state(code: Option<&str>) -> bool {
    code.is_some_and(|c| c.starts_with("08") || c.starts_with("57P") || c == "53300")
}

#[cfg(test)]
mod tests {
    use super::is_unavailable_state;

    #[test]
    fn shutdown_and_connection_states_are_unavailable_constraint_states_are_not() {
        for code in ["08006", "08001", "57P01", "57P03", "53300"] {
            assert!(is_unavailable_state(Some(code)), "{code}");
        }
        for code in ["23505", "23503", "40001", "42P01", "57014"] {
            assert!(!is_unavailable_state(Some(code)), "{code}");
        }
        assert!(!is_unavailable_state(None));
    }
}
