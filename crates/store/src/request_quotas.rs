//! How many authorization requests one client address has started without a session, in
//! fixed windows, so an anonymous caller cannot make the server store requests without
//! bound. The limit belongs to the caller; the store counts atomically, for every node.

use crate::error::StoreError;
use crate::tenant::TenantStore;
use crate::UnixTime;

impl TenantStore<'_> {
    /// Takes one request from the address's quota: true if fewer than `limit` were taken in
    /// the window that began within the last `window` seconds (a window that has ended
    /// starts a new one now). A refusal writes nothing.
    pub async fn take_authorization_request_quota(
        &self,
        address: &str,
        limit: i64,
        now: UnixTime,
        window: UnixTime,
    ) -> Result<bool, StoreError> {
        let ended = "authorization_request_quotas.window_started_at <= $3 - $4";
        let taken: Option<i64> = sqlx::query_scalar(&format!(
            "INSERT INTO authorization_request_quotas (tenant_id, address, requests, \
             window_started_at) VALUES ($1, $2, 1, $3) \
             ON CONFLICT (tenant_id, address) DO UPDATE SET \
               requests = CASE WHEN {ended} THEN 1 \
                               ELSE authorization_request_quotas.requests + 1 END, \
               window_started_at = CASE WHEN {ended} THEN $3 \
                                        ELSE authorization_request_quotas.window_started_at END \
             WHERE {ended} OR authorization_request_quotas.requests < $5 \
             RETURNING requests"
        ))
        .bind(self.id_str())
        .bind(address)
        .bind(now)
        .bind(window)
        .bind(limit)
        .fetch_optional(self.pool())
        .await?;
        Ok(taken.is_some())
    }
}
