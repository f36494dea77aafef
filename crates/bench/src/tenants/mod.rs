//! `--tenants N`: other tenants beside `bench`, written straight into the database in bulk
//! (multi-row INSERTs, a transaction per few hundred tenants), so that the hot paths' indexes
//! hold as many rows as a shared server's would. Each tenant gets what `bench` has: a
//! client, users in an organization, live grants with their refresh tokens (one rotated, one
//! live), a browser session and a sign-in in the audit trail per user, and a few
//! field-service records.
//!
//! The columns are those of `crates/store/migrations/{sqlite,postgres}` (the two list the
//! same ones); a column they add later with a default needs nothing here. Secrets are stored
//! as the store stores them: 32-byte SHA-256 values (random bytes here: no one presents the
//! secrets), and the users share the Argon2id hash of `bench`'s users.

mod batch;

use std::time::Instant;

use anyhow::{anyhow, Context, Result};
use serde::Serialize;
use sqlx::{AnyConnection, Connection, Executor};

use crate::provision;
use batch::{Batch, Placeholders, Table, Value};

/// How many rows of each kind a tenant gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Shape {
    pub tenants: usize,
    /// Users per tenant, all members of its one organization, each with a browser session.
    pub users: usize,
    /// Grants per user, each with a rotated and a live refresh token.
    pub grants_per_user: usize,
    /// Jobs in the organization (one work order, one employee assigned to each).
    pub jobs: usize,
}

/// What provisioning wrote and how long it took.
#[derive(Debug, Clone, Serialize)]
pub struct Provisioned {
    pub shape: Shape,
    pub rows: u64,
    pub seconds: f64,
}

/// Tenants per transaction.
const TENANTS_PER_TRANSACTION: usize = 500;

/// Scopes of the other tenants' clients and grants.
const SCOPE: &str = "openid profile email offline_access jobs workOrders employees customers";

const DAY: i64 = 86_400;

/// Writes `shape.tenants` tenants `load-000001`… into the database at `url`, which the CLI
/// has migrated and given the tenant `bench`; their times are `bench`'s creation time.
pub async fn provision(url: &str, shape: Shape) -> Result<Provisioned> {
    sqlx::any::install_default_drivers();
    let started = Instant::now();
    let mut connection = AnyConnection::connect(url)
        .await
        .context("connect to the database to provision the tenants")?;
    let postgres = url.starts_with("postgres");
    let style = match postgres {
        true => Placeholders::Numbered,
        false => Placeholders::Anonymous,
    };
    // Bench data: losing it to a crash costs a rerun, so commits need not wait for the disk.
    // SQLite's default page cache (2 MiB) would thrash on indexes of random keys that grow
    // past it: this connection gets 256 MiB.
    let settings: &[&str] = match postgres {
        true => &["SET synchronous_commit = off"],
        false => &["PRAGMA synchronous = OFF", "PRAGMA cache_size = -262144"],
    };
    for setting in settings {
        connection.execute(*setting).await?;
    }
    let now: i64 = sqlx::query_scalar("SELECT created_at FROM tenants WHERE tenant_id = $1")
        .bind(provision::TENANT)
        .fetch_optional(&mut connection)
        .await?
        .ok_or_else(|| anyhow!("no tenant {} to provision beside", provision::TENANT))?;
    let password_hash: String =
        sqlx::query_scalar("SELECT password_hash FROM users WHERE tenant_id = $1 LIMIT 1")
            .bind(provision::TENANT)
            .fetch_optional(&mut connection)
            .await?
            .ok_or_else(|| {
                anyhow!(
                    "no user in tenant {} to copy a hash from",
                    provision::TENANT
                )
            })?;
    let width = shape.tenants.to_string().len().max(6);
    let mut rows = 0;
    let mut next_report = shape.tenants / 10;
    let mut first = 1;
    while first <= shape.tenants {
        let last = (first + TENANTS_PER_TRANSACTION - 1).min(shape.tenants);
        let mut batch = Batch::new();
        for number in first..=last {
            let tenant = format!("load-{number:0width$}");
            add_tenant(&mut batch, &tenant, &shape, &password_hash, now)?;
        }
        let mut transaction = connection.begin().await?;
        rows += batch.write(&mut transaction, style).await?;
        transaction.commit().await?;
        if last >= next_report && last < shape.tenants {
            eprintln!(
                "tenants: {last} of {} written ({rows} rows, {:.0} s)",
                shape.tenants,
                started.elapsed().as_secs_f64()
            );
            next_report += shape.tenants / 10;
        }
        first = last + 1;
    }
    if postgres {
        connection.execute("ANALYZE").await.context("ANALYZE")?;
    }
    connection.close().await?;
    Ok(Provisioned {
        shape,
        rows,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// The rows of one tenant, into `batch` in an order the foreign keys accept.
fn add_tenant(
    batch: &mut Batch,
    tenant: &str,
    shape: &Shape,
    password_hash: &str,
    now: i64,
) -> Result<()> {
    let t = || Value::Text(tenant.to_owned());
    let text = |s: &str| Value::Text(s.to_owned());
    let client = "app";
    batch.add(
        Table::Tenants,
        [t(), text(&format!("Tenant {tenant}")), Value::Int(now)],
    );
    batch.add(
        Table::Clients,
        [
            t(),
            text(client),
            text("Field app"),
            text("confidential"),
            Value::Blob(random_bytes::<32>()?.to_vec()),
            text(&format!(r#"["https://{tenant}.example.com/callback"]"#)),
            text(SCOPE),
            Value::Int(now),
        ],
    );
    let organization = uuid_v4()?;
    batch.add(
        Table::Organizations,
        [
            t(),
            text(&organization),
            text("Main office"),
            Value::Int(now),
        ],
    );
    for index in 0..shape.users {
        let user = uuid_v4()?;
        let username = format!("user-{index:02}");
        batch.add(
            Table::Users,
            [
                t(),
                text(&user),
                text(&username),
                text(password_hash),
                text(&format!("User {index} of {tenant}")),
                text(&format!("{username}@{tenant}.example.com")),
                Value::Int(now),
            ],
        );
        batch.add(
            Table::Memberships,
            [t(), text(&user), text(&organization), Value::Int(now)],
        );
        // The sign-in that made the session, as the audit trail records it.
        batch.add(
            Table::AuditEvents,
            [
                t(),
                Value::Int(now),
                text("signin.succeeded"),
                text(&user),
                text("203.0.113.7"),
                text(""),
            ],
        );
        let sid = hex(&random_bytes::<16>()?);
        batch.add(
            Table::BrowserSessions,
            [
                t(),
                Value::Blob(random_bytes::<32>()?.to_vec()),
                text(&user),
                Value::Int(now),
                Value::Int(now),
                Value::Int(now + DAY / 2),
                text(&sid),
            ],
        );
        for _ in 0..shape.grants_per_user {
            let grant = uuid_v4()?;
            batch.add(
                Table::Grants,
                [
                    t(),
                    text(&grant),
                    text(client),
                    text(&user),
                    text(&organization),
                    text(SCOPE),
                    Value::Int(now),
                    Value::Int(now),
                    text(&sid),
                    text("pwd"),
                ],
            );
            // The chain's first token, rotated, and its live successor.
            for consumed in [Some(now), None] {
                batch.add(
                    Table::RefreshTokens,
                    [
                        t(),
                        Value::Blob(random_bytes::<32>()?.to_vec()),
                        text(&grant),
                        Value::Int(now),
                        Value::Int(now + 30 * DAY),
                        consumed.map_or(Value::Null, Value::Int),
                    ],
                );
            }
        }
    }
    if shape.jobs > 0 {
        add_field_records(batch, tenant, &organization, shape.jobs, now)?;
    }
    Ok(())
}

/// An employee, a customer with one work order, and `jobs` jobs of it, each assigned to the
/// employee.
fn add_field_records(
    batch: &mut Batch,
    tenant: &str,
    organization: &str,
    jobs: usize,
    now: i64,
) -> Result<()> {
    let t = || Value::Text(tenant.to_owned());
    let org = || Value::Text(organization.to_owned());
    let text = |s: &str| Value::Text(s.to_owned());
    let employee = format!("emp_{}", hex(&random_bytes::<16>()?));
    let customer = format!("cus_{}", hex(&random_bytes::<16>()?));
    let work_order = format!("wo_{}", hex(&random_bytes::<16>()?));
    batch.add(
        Table::Employees,
        [
            t(),
            text(&employee),
            org(),
            text("Technician 00"),
            text("TECHNICIAN"),
            Value::Int(now),
        ],
    );
    batch.add(
        Table::Customers,
        [
            t(),
            text(&customer),
            org(),
            text("Customer 00"),
            text("customer 00"),
            text("USD"),
            Value::Int(30),
            Value::Int(now),
        ],
    );
    batch.add(
        Table::RecordNumbers,
        [t(), org(), text("work_order"), Value::Int(1)],
    );
    batch.add(
        Table::WorkOrders,
        [
            t(),
            text(&work_order),
            org(),
            Value::Int(1),
            text(&customer),
            text("Maintenance 00"),
            text("OPEN"),
            Value::Int(now),
            Value::Int(now),
        ],
    );
    for index in 0..jobs {
        let job = format!("job_{}", hex(&random_bytes::<16>()?));
        let start = now + (index as i64 + 1) * DAY;
        batch.add(
            Table::Jobs,
            [
                t(),
                text(&job),
                org(),
                text(&work_order),
                text(&format!("Visit {index:02}")),
                text("SCHEDULED"),
                Value::Int(start),
                Value::Int(start + 4 * 3600),
                Value::Int(now),
            ],
        );
        batch.add(
            Table::JobAssignments,
            [t(), text(&job), text(&employee), org(), Value::Int(now)],
        );
    }
    Ok(())
}

fn random_bytes<const N: usize>() -> Result<[u8; N]> {
    let mut bytes = [0u8; N];
    aws_lc_rs::rand::fill(&mut bytes).map_err(|_| anyhow!("no randomness from the OS"))?;
    Ok(bytes)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A random (version 4) UUID in its hyphenated form, as the server makes user ids, grant ids
/// and organization GUIDs.
fn uuid_v4() -> Result<String> {
    let mut bytes = random_bytes::<16>()?;
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let h = hex(&bytes);
    Ok(format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uuid_is_version_4_and_hyphenated() {
        let id = uuid_v4().unwrap();
        assert_eq!(id.len(), 36);
        let parts: Vec<&str> = id.split('-').collect();
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            [8, 4, 4, 4, 12]
        );
        assert!(parts[2].starts_with('4'), "{id}");
        assert!("89ab".contains(&parts[3][..1]), "{id}");
        assert_ne!(uuid_v4().unwrap(), id);
    }

    #[test]
    fn every_row_has_its_table_s_columns() {
        let shape = Shape {
            tenants: 1,
            users: 3,
            grants_per_user: 2,
            jobs: 2,
        };
        let mut batch = Batch::new();
        add_tenant(
            &mut batch,
            "load-000001",
            &shape,
            "$argon2id$x",
            1_700_000_000,
        )
        .unwrap();
        let rows: Vec<usize> = Table::ALL
            .iter()
            .zip(&batch.tables)
            .map(|(table, values)| {
                let columns = table.head().1.len();
                assert_eq!(values.len() % columns, 0, "{table:?}");
                values.len() / columns
            })
            .collect();
        // tenants, clients, organizations, users, memberships, sessions, audit events,
        // grants, refresh tokens, employees, customers, record numbers, work orders, jobs,
        // assignments.
        assert_eq!(rows, [1, 1, 1, 3, 3, 3, 3, 6, 12, 1, 1, 1, 1, 2, 2]);
    }
}
