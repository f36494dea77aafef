//! Admin API tokens (issue 22): found by the SHA-256 of the token, never stored in clear. The
//! table is global, in the default database, like the signing keys: an admin token is the
//! operator's, whether it administers every tenant or one.

use crate::db::Store;
use crate::error::{Entity, StoreError};
use crate::tenant::TenantId;
use crate::UnixTime;

/// A stored admin token: its name, and the tenant it is limited to (`None`: every tenant).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdminToken {
    pub name: String,
    pub tenant: Option<TenantId>,
    pub created_at: UnixTime,
    pub revoked_at: Option<UnixTime>,
}

type Row = (String, Option<String>, i64, Option<i64>);

fn from_row((name, tenant, created_at, revoked_at): Row) -> Result<AdminToken, StoreError> {
    Ok(AdminToken {
        name,
        tenant: tenant.as_deref().map(TenantId::parse).transpose()?,
        created_at,
        revoked_at,
    })
}

impl Store {
    /// Stores a new token under a name no other token has (revoked ones included, so the
    /// audit trail's names stay unambiguous): `Conflict` otherwise.
    pub async fn create_admin_token(
        &self,
        name: &str,
        tenant: Option<&TenantId>,
        token_hash: &[u8; 32],
        now: UnixTime,
    ) -> Result<AdminToken, StoreError> {
        self.count_statement();
        sqlx::query(
            "INSERT INTO admin_tokens (name, tenant_id, token_hash, created_at) \
             VALUES ($1, $2, $3, $4)",
        )
        .bind(name)
        .bind(tenant.map(TenantId::as_str))
        .bind(token_hash.to_vec())
        .bind(now)
        .execute(self.pool())
        .await
        .map_err(|e| StoreError::from_sqlx(e, Entity::AdminToken))?;
        Ok(AdminToken {
            name: name.to_owned(),
            tenant: tenant.cloned(),
            created_at: now,
            revoked_at: None,
        })
    }

    /// Every token, revoked ones included, by name.
    pub async fn list_admin_tokens(&self) -> Result<Vec<AdminToken>, StoreError> {
        self.count_statement();
        let rows: Vec<Row> = sqlx::query_as(
            "SELECT name, tenant_id, created_at, revoked_at FROM admin_tokens ORDER BY name",
        )
        .fetch_all(self.pool())
        .await?;
        rows.into_iter().map(from_row).collect()
    }

    /// The unrevoked token with this hash, if any.
    pub async fn find_admin_token(
        &self,
        token_hash: &[u8; 32],
    ) -> Result<Option<AdminToken>, StoreError> {
        self.count_statement();
        let row: Option<Row> = sqlx::query_as(
            "SELECT name, tenant_id, created_at, revoked_at FROM admin_tokens \
             WHERE token_hash = $1 AND revoked_at IS NULL",
        )
        .bind(token_hash.to_vec())
        .fetch_optional(self.pool())
        .await?;
        row.map(from_row).transpose()
    }

    /// Revokes the token named `name`; `NotFound` when there is none or it is revoked already.
    pub async fn revoke_admin_token(&self, name: &str, now: UnixTime) -> Result<(), StoreError> {
        self.count_statement();
        let done = sqlx::query(
            "UPDATE admin_tokens SET revoked_at = $1 WHERE name = $2 AND revoked_at IS NULL",
        )
        .bind(now)
        .bind(name)
        .execute(self.pool())
        .await?;
        match done.rows_affected() {
            1 => Ok(()),
            _ => Err(StoreError::NotFound(Entity::AdminToken)),
        }
    }
}
