//! Ending a user's browser sessions and revoking their grants together: what disabling a
//! user, signing them out everywhere and changing their password have in common. Every path
//! that ends sessions comes through here, inside the caller's transaction, so whatever must
//! follow the end of a session (back-channel logout, queued here) is decided in one place.

use crate::backchannel_logouts::EndingSessions;
use crate::error::StoreError;
use crate::tenant::{TenantStore, Transaction};
use crate::UnixTime;

/// What ending a user's sessions and grants ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SignedOut {
    pub sessions: u64,
    pub grants: u64,
}

/// Why the grants of a user whose password changed were revoked.
pub const REVOKED_PASSWORD_CHANGED: &str = "password changed";

impl TenantStore<'_> {
    /// Ends every browser session of the user but `keep` (the one that asked, when the user
    /// changes their own password) and revokes every live grant with `reason`.
    pub(crate) async fn end_sessions_and_grants(
        &self,
        tx: &mut Transaction,
        user_id: &str,
        keep: Option<&[u8]>,
        reason: &str,
        now: UnixTime,
    ) -> Result<SignedOut, StoreError> {
        // Back-Channel Logout 1.0 §2.5: the clients of the sessions about to end are told,
        // queued in this transaction so the end and the telling stand or fall together.
        let ending = EndingSessions::OfUser { user_id, keep };
        self.queue_backchannel_logouts(tx, ending, now).await?;
        let sessions = match keep {
            None => {
                sqlx::query("DELETE FROM browser_sessions WHERE tenant_id = $1 AND user_id = $2")
                    .bind(self.id_str())
                    .bind(user_id)
            }
            Some(keep) => sqlx::query(
                "DELETE FROM browser_sessions WHERE tenant_id = $1 AND user_id = $2 \
                 AND session_hash <> $3",
            )
            .bind(self.id_str())
            .bind(user_id)
            .bind(keep.to_vec()),
        }
        .execute(self.in_tx(tx))
        .await?
        .rows_affected();
        let grants = sqlx::query(
            "UPDATE grants SET revoked_at = $1, revoked_reason = $2 \
             WHERE tenant_id = $3 AND user_id = $4 AND revoked_at IS NULL",
        )
        .bind(now)
        .bind(reason)
        .bind(self.id_str())
        .bind(user_id)
        .execute(self.in_tx(tx))
        .await?
        .rows_affected();
        Ok(SignedOut { sessions, grants })
    }
}
