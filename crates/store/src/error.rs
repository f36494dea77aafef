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
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0} already exists")]
    Conflict(Entity),
    #[error("{0} not found")]
    NotFound(Entity),
    #[error("the last active signing key cannot be retired; rotate first")]
    LastActiveKey,
    #[error("invalid tenant id: {0}")]
    InvalidTenantId(&'static str),
    #[error("unsupported database URL scheme (expected sqlite:// or postgres://)")]
    UnsupportedUrl,
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
            | sqlx::Error::Tls(_) => StoreError::Unavailable(error),
            other => StoreError::Database(other),
        }
    }
}
