//! The other tenants' rows on their way into the database: the tables and their columns
//! (as `crates/store/migrations` define them), and a batch written as multi-row INSERTs.

use anyhow::{Context, Result};
use sqlx::AnyConnection;

/// Bound parameters per statement: under SQLite's 32,766 and PostgreSQL's 65,535.
const PARAMETERS_PER_STATEMENT: usize = 8_000;

/// The tables written, in the order their foreign keys need.
#[derive(Debug, Clone, Copy)]
pub enum Table {
    Tenants,
    Clients,
    Organizations,
    Users,
    Memberships,
    BrowserSessions,
    AuditEvents,
    Grants,
    RefreshTokens,
    Employees,
    Customers,
    RecordNumbers,
    WorkOrders,
    Jobs,
    JobAssignments,
}

impl Table {
    pub const ALL: [Table; 15] = [
        Table::Tenants,
        Table::Clients,
        Table::Organizations,
        Table::Users,
        Table::Memberships,
        Table::BrowserSessions,
        Table::AuditEvents,
        Table::Grants,
        Table::RefreshTokens,
        Table::Employees,
        Table::Customers,
        Table::RecordNumbers,
        Table::WorkOrders,
        Table::Jobs,
        Table::JobAssignments,
    ];

    /// `INSERT INTO table (columns)`, the columns in the order [`add_tenant`] gives them.
    pub fn head(self) -> (&'static str, &'static [&'static str]) {
        match self {
            Table::Tenants => ("tenants", &["tenant_id", "name", "created_at"]),
            Table::Clients => (
                "clients",
                &[
                    "tenant_id",
                    "client_id",
                    "name",
                    "client_type",
                    "secret_hash",
                    "redirect_uris",
                    "scopes",
                    "created_at",
                ],
            ),
            Table::Organizations => (
                "organizations",
                &["tenant_id", "organization_guid", "name", "created_at"],
            ),
            Table::Users => (
                "users",
                &[
                    "tenant_id",
                    "user_id",
                    "username",
                    "password_hash",
                    "name",
                    "email",
                    "created_at",
                ],
            ),
            Table::Memberships => (
                "memberships",
                &["tenant_id", "user_id", "organization_guid", "created_at"],
            ),
            Table::BrowserSessions => (
                "browser_sessions",
                &[
                    "tenant_id",
                    "session_hash",
                    "user_id",
                    "auth_time",
                    "created_at",
                    "expires_at",
                    "sid",
                ],
            ),
            Table::AuditEvents => (
                "audit_events",
                &[
                    "tenant_id",
                    "occurred_at",
                    "kind",
                    "subject",
                    "address",
                    "detail",
                ],
            ),
            Table::Grants => (
                "grants",
                &[
                    "tenant_id",
                    "grant_id",
                    "client_id",
                    "user_id",
                    "organization_guid",
                    "scope",
                    "auth_time",
                    "created_at",
                    "sid",
                    "amr",
                ],
            ),
            Table::RefreshTokens => (
                "refresh_tokens",
                &[
                    "tenant_id",
                    "token_hash",
                    "grant_id",
                    "created_at",
                    "expires_at",
                    "consumed_at",
                ],
            ),
            Table::Employees => (
                "employees",
                &[
                    "tenant_id",
                    "employee_id",
                    "organization_guid",
                    "name",
                    "role",
                    "created_at",
                ],
            ),
            Table::Customers => (
                "customers",
                &[
                    "tenant_id",
                    "customer_id",
                    "organization_guid",
                    "name",
                    "name_key",
                    "billing_currency",
                    "payment_terms_days",
                    "created_at",
                ],
            ),
            Table::RecordNumbers => (
                "record_numbers",
                &["tenant_id", "organization_guid", "kind", "last_value"],
            ),
            Table::WorkOrders => (
                "work_orders",
                &[
                    "tenant_id",
                    "work_order_id",
                    "organization_guid",
                    "number",
                    "customer_id",
                    "description",
                    "status",
                    "created_at",
                    "updated_at",
                ],
            ),
            Table::Jobs => (
                "jobs",
                &[
                    "tenant_id",
                    "job_id",
                    "organization_guid",
                    "work_order_id",
                    "title",
                    "status",
                    "scheduled_start",
                    "scheduled_end",
                    "created_at",
                ],
            ),
            Table::JobAssignments => (
                "job_assignments",
                &[
                    "tenant_id",
                    "job_id",
                    "employee_id",
                    "organization_guid",
                    "assigned_at",
                ],
            ),
        }
    }
}

pub enum Value {
    Text(String),
    Int(i64),
    Blob(Vec<u8>),
    Null,
}

/// Rows of each table, flattened, waiting for one transaction.
pub struct Batch {
    pub tables: Vec<Vec<Value>>,
}

impl Batch {
    pub fn new() -> Batch {
        Batch {
            tables: Table::ALL.iter().map(|_| Vec::new()).collect(),
        }
    }

    pub fn add<const N: usize>(&mut self, table: Table, row: [Value; N]) {
        debug_assert_eq!(N, table.head().1.len(), "{table:?}");
        self.tables[table as usize].extend(row);
    }

    /// Multi-row INSERTs of every table in order; the rows written.
    pub async fn write(self, connection: &mut AnyConnection, style: Placeholders) -> Result<u64> {
        let mut written = 0;
        for (table, values) in Table::ALL.into_iter().zip(self.tables) {
            let (name, columns) = table.head();
            let per_statement = (PARAMETERS_PER_STATEMENT / columns.len()).max(1);
            let mut values = values.into_iter().peekable();
            while values.peek().is_some() {
                let chunk: Vec<Value> = values
                    .by_ref()
                    .take(per_statement * columns.len())
                    .collect();
                let rows = chunk.len() / columns.len();
                let sql = insert_statement(name, columns, rows, style);
                let mut query = sqlx::query(&sql);
                for value in chunk {
                    query = match value {
                        Value::Text(text) => query.bind(text),
                        Value::Int(int) => query.bind(int),
                        Value::Blob(bytes) => query.bind(bytes),
                        Value::Null => query.bind(None::<i64>),
                    };
                }
                query
                    .execute(&mut *connection)
                    .await
                    .with_context(|| format!("insert into {name}"))?;
                written += rows as u64;
            }
        }
        Ok(written)
    }
}

/// How a statement's parameters are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placeholders {
    /// `$1, $2`: PostgreSQL's only form.
    Numbered,
    /// `?, ?`: on SQLite, where binding looks each numbered parameter's name up in a list
    /// as long as the statement's parameters (sqlite3_bind_parameter_name), which made a
    /// statement of thousands of them spend two thirds of the provisioning's time there.
    Anonymous,
}

/// `INSERT INTO name (a, b) VALUES ($1, $2), ($3, $4)…` (or `(?, ?), (?, ?)…`) for `rows`
/// rows.
fn insert_statement(name: &str, columns: &[&str], rows: usize, style: Placeholders) -> String {
    let mut sql = format!("INSERT INTO {name} ({}) VALUES ", columns.join(", "));
    let mut parameter = 0;
    for row in 0..rows {
        if row > 0 {
            sql.push_str(", ");
        }
        sql.push('(');
        for column in 0..columns.len() {
            if column > 0 {
                sql.push_str(", ");
            }
            parameter += 1;
            match style {
                Placeholders::Numbered => sql.push_str(&format!("${parameter}")),
                Placeholders::Anonymous => sql.push('?'),
            }
        }
        sql.push(')');
    }
    sql
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_statement_numbers_its_parameters_row_by_row() {
        assert_eq!(
            insert_statement("t", &["a", "b"], 2, Placeholders::Numbered),
            "INSERT INTO t (a, b) VALUES ($1, $2), ($3, $4)"
        );
        assert_eq!(
            insert_statement("t", &["a", "b"], 2, Placeholders::Anonymous),
            "INSERT INTO t (a, b) VALUES (?, ?), (?, ?)"
        );
    }
}
