//! What second factors a user has, the tenant's policy for them, and an administrator's
//! reset. The factors' own records are in `totp_credentials.rs`, `recovery_codes.rs` and
//! `passkeys.rs`.

use crate::error::{Entity, StoreError};
use crate::tenant::TenantStore;
use crate::tenants::MfaPolicy;

/// The second factors a user can prove.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SecondFactors {
    /// A confirmed TOTP authenticator.
    pub totp: bool,
    /// Registered passkeys.
    pub passkeys: i64,
}

impl SecondFactors {
    pub fn any(&self) -> bool {
        self.totp || self.passkeys > 0
    }
}

/// Where sign-in stands for a user: the tenant's policy and the user's factors, read in one
/// trip because every password sign-in needs both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SecondFactorStanding {
    pub policy: MfaPolicy,
    pub factors: SecondFactors,
}

impl TenantStore<'_> {
    /// The tenant's policy and the user's second factors; `NotFound(Tenant)` when the tenant
    /// is gone.
    pub async fn second_factor_standing(
        &self,
        user_id: &str,
    ) -> Result<SecondFactorStanding, StoreError> {
        let row: Option<(String, i64, i64)> = sqlx::query_as(
            "SELECT t.mfa_policy, \
               (SELECT COUNT(*) FROM totp_credentials c \
                 WHERE c.tenant_id = t.tenant_id AND c.user_id = $2 \
                   AND c.confirmed_at IS NOT NULL), \
               (SELECT COUNT(*) FROM passkeys p \
                 WHERE p.tenant_id = t.tenant_id AND p.user_id = $2) \
             FROM tenants t WHERE t.tenant_id = $1",
        )
        .bind(self.id_str())
        .bind(user_id)
        .fetch_optional(self.pool())
        .await?;
        let (policy, totp, passkeys) = row.ok_or(StoreError::NotFound(Entity::Tenant))?;
        Ok(SecondFactorStanding {
            policy: MfaPolicy::parse(&policy).ok_or(StoreError::Corrupt("tenant mfa_policy"))?,
            factors: SecondFactors {
                totp: totp > 0,
                passkeys,
            },
        })
    }

    /// The tenant's second-factor policy; `NotFound(Tenant)` when the tenant is gone.
    pub async fn mfa_policy(&self) -> Result<MfaPolicy, StoreError> {
        let policy: String =
            sqlx::query_scalar("SELECT mfa_policy FROM tenants WHERE tenant_id = $1")
                .bind(self.id_str())
                .fetch_optional(self.pool())
                .await?
                .ok_or(StoreError::NotFound(Entity::Tenant))?;
        MfaPolicy::parse(&policy).ok_or(StoreError::Corrupt("tenant mfa_policy"))
    }

    /// Removes every second factor of a user (authenticator, recovery codes, passkeys) in one
    /// transaction, for an administrator's reset after a lost device. Returns whether the
    /// user had any; `NotFound(User)` when there is no such user.
    pub async fn reset_second_factors(&self, user_id: &str) -> Result<bool, StoreError> {
        let mut tx = self.begin().await?;
        let exists: Option<i64> =
            sqlx::query_scalar("SELECT 1 FROM users WHERE tenant_id = $1 AND user_id = $2")
                .bind(self.id_str())
                .bind(user_id)
                .fetch_optional(self.in_tx(&mut tx))
                .await?;
        if exists.is_none() {
            return Err(StoreError::NotFound(Entity::User));
        }
        let mut removed = 0;
        for table in ["totp_credentials", "recovery_codes", "passkeys"] {
            removed += sqlx::query(&format!(
                "DELETE FROM {table} WHERE tenant_id = $1 AND user_id = $2"
            ))
            .bind(self.id_str())
            .bind(user_id)
            .execute(self.in_tx(&mut tx))
            .await?
            .rows_affected();
        }
        self.commit(tx).await?;
        Ok(removed > 0)
    }
}
