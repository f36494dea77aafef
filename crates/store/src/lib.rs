//! Persistence for fieldauth: the records of every tenant and the global signing keys, on
//! SQLite (embedded default) or PostgreSQL, behind one API whose queries are written once.

mod account;
mod admin_tokens;
mod audit;
mod audit_listing;
mod authorization_requests;
mod backchannel_logouts;
mod backup;
mod browser_sessions;
mod cleanup;
mod clients;
mod clients_admin;
mod code_exchange;
mod code_exchange_checked;
mod codes;
mod data_versions;
mod db;
mod dpop_proofs;
mod error;
mod field;
mod grants;
mod grants_admin;
mod grants_retry;
mod keys;
mod organizations;
mod organizations_admin;
mod passkeys;
mod password_links;
mod password_settings;
mod pool;
mod recovery_codes;
mod recovery_quotas;
mod request_quotas;
mod revision;
mod second_factors;
mod session_ends;
mod signin_failures;
mod sqlite_exchange;
mod sqlite_group_commit;
mod sqlite_inline;
mod sqlite_page_cache;
mod sqlite_rotation;
mod sqlite_statements;
mod sqlite_sync;
mod sqlite_wal_writes;
mod statistics;
mod tenant;
mod tenants;
mod tenants_admin;
#[cfg(feature = "testing")]
pub mod testing;
mod totp_credentials;
mod users;
mod users_admin;
mod webauthn_ceremonies;

pub use account::{AccountGrant, ACCOUNT_GRANTS_LIMIT, REVOKED_BY_USER};
pub use admin_tokens::AdminToken;
pub use audit::{AuditEvent, KeyEvent, NewAuditEvent};
pub use audit_listing::AuditFilter;
pub use authorization_requests::{AuthorizationRequest, NewAuthorizationRequest};
pub use backchannel_logouts::BackchannelLogout;
pub use backup::backup_sqlite;
pub use browser_sessions::{BrowserSession, FactorDue, NewBrowserSession};
pub use cleanup::{CleanupReport, Retention, CLEANUP_BATCH_ROWS, CLEANUP_PAUSE_FACTOR};
pub use clients::{
    Client, ClientLogout, ClientOrigins, ClientSettings, ClientType, NewClient, PreviousSecret,
};
pub use clients_admin::{ClientChanges, ManagedClient, CLIENT_DISABLED};
pub use code_exchange::{CodeExchange, Issuance, RedeemedCode};
pub use code_exchange_checked::{CheckedExchange, PresentedCode};
pub use codes::{AuthorizationCode, NewAuthorizationCode};
pub use data_versions::ApiStanding;
pub use db::{Backend, Checkpoint, PoolUse, ShardMap, Store};
pub use error::{Entity, StoreError};
pub use field::{
    Address, Assignment, BillingProfile, Contact, Contract, Cursor, Customer, CustomerFilter,
    Employee, EmployeeFilter, EmployeeRole, Invoice, InvoiceFilter, InvoiceLine, InvoiceStatus,
    Job, JobFilter, JobStatus, NewCustomer, NewEmployee, NewInvoice, NewInvoiceLine, NewJob,
    NewPayment, NewWorkOrder, OrgStore, Page, PageRequest, Payment, PaymentMethod, Property,
    ScheduledJob, Shift, SortKey, Staffed, StaffedJob, WorkOrder, WorkOrderFilter, WorkOrderStatus,
};
pub use grants::{
    Grant, GrantUser, NewGrant, NewRefreshToken, RefreshRotation, RefreshToken, RefreshingClient,
};
pub use grants_admin::{GrantSummary, GrantsOf};
pub use keys::{PrivateKeyChange, StoredSigningKey};
pub use organizations::Organization;
pub use organizations_admin::Member;
pub use passkeys::{NewPasskey, StoredPasskey};
pub use password_links::{LinkPurpose, RedeemedLink};
pub use recovery_quotas::{RecoveryQuota, RecoverySubject};
pub use revision::Revision;
pub use second_factors::{SecondFactorStanding, SecondFactors};
pub use session_ends::{SignedOut, REVOKED_PASSWORD_CHANGED};
pub use signin_failures::{AttemptEnd, FailureCount, FailureSubject};
pub use sqlite_group_commit::Durable;
pub use sqlite_page_cache::install as install_sqlite_page_cache;
pub use statistics::GROWN_ROWS;
pub use tenant::{TenantId, TenantStore};
pub use tenants::{MfaPolicy, Tenant};
pub use tenants_admin::TenantUpdate;

pub use totp_credentials::{TotpSecret, TotpStatus};
pub use users::{NewUser, User};
pub use users_admin::{AdminUser, UserChanges, REVOKED_SIGNED_OUT, REVOKED_USER_DISABLED};
pub use webauthn_ceremonies::{Ceremony, CeremonyKind, NewCeremony};

/// Seconds since the Unix epoch: every time the store reads or writes.
pub type UnixTime = i64;
