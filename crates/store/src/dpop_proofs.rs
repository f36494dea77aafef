//! The DPoP replay cache (RFC 9449 §11.1): every proof is accepted once, on every node, for
//! as long as its `iat` keeps it acceptable. The clean-up deletes rows past `expires_at`.

use crate::error::StoreError;
use crate::tenant::TenantStore;
use crate::UnixTime;

impl TenantStore<'_> {
    /// Remembers a proof until `expires_at`: true the first time, false when it was seen
    /// before (a replay). `proof_hash` names the proof by its key and `jti`. A row past its expiry counts as unseen, so a
    /// clean-up that has not run yet refuses nothing.
    pub async fn remember_dpop_proof(
        &self,
        proof_hash: &[u8],
        expires_at: UnixTime,
        now: UnixTime,
    ) -> Result<bool, StoreError> {
        let _turn = self.write_turn().await;
        let done = sqlx::query(
            "INSERT INTO dpop_proofs (tenant_id, proof_hash, expires_at) VALUES ($1, $2, $3) \
             ON CONFLICT (tenant_id, proof_hash) DO UPDATE SET expires_at = $3 \
             WHERE dpop_proofs.expires_at <= $4",
        )
        .bind(self.id_str())
        .bind(proof_hash.to_vec())
        .bind(expires_at)
        .bind(now)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }
}
