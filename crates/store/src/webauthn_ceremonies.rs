//! WebAuthn ceremonies under way: the server's state of a registration or an authentication
//! (its challenge included) between the request that starts it and the one that finishes
//! it. Found by the SHA-256 of a random handle that only the browser holds, taken at most
//! once, and only before it expires, so any node can finish a ceremony another began and no
//! challenge is answered twice.

use crate::error::StoreError;
use crate::tenant::TenantStore;
use crate::UnixTime;

/// What a ceremony is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CeremonyKind {
    /// Registering a new passkey for a signed-in user.
    Register,
    /// Proving one of a known user's passkeys (the second factor).
    Authenticate,
    /// Proving any discoverable passkey, whose user the authenticator names (passwordless).
    Discover,
}

impl CeremonyKind {
    fn as_str(self) -> &'static str {
        match self {
            CeremonyKind::Register => "register",
            CeremonyKind::Authenticate => "authenticate",
            CeremonyKind::Discover => "discover",
        }
    }

    fn parse(stored: &str) -> Option<CeremonyKind> {
        match stored {
            "register" => Some(CeremonyKind::Register),
            "authenticate" => Some(CeremonyKind::Authenticate),
            "discover" => Some(CeremonyKind::Discover),
            _ => None,
        }
    }
}

/// A ceremony to keep until it is finished or expires.
#[derive(Clone, Copy, Debug)]
pub struct NewCeremony<'a> {
    pub ceremony_hash: &'a [u8],
    pub kind: CeremonyKind,
    /// The user it is for; none for a discoverable authentication.
    pub user_id: Option<&'a str>,
    /// The library's serialized state.
    pub state: &'a str,
    pub expires_at: UnixTime,
}

/// A ceremony just taken: it is no longer stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ceremony {
    pub kind: CeremonyKind,
    pub user_id: Option<String>,
    pub state: String,
}

impl TenantStore<'_> {
    pub async fn create_webauthn_ceremony(&self, new: &NewCeremony<'_>) -> Result<(), StoreError> {
        let _turn = self.write_turn().await;
        sqlx::query(
            "INSERT INTO webauthn_ceremonies (tenant_id, ceremony_hash, kind, user_id, state, \
             expires_at) VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(self.id_str())
        .bind(new.ceremony_hash)
        .bind(new.kind.as_str())
        .bind(new.user_id)
        .bind(new.state)
        .bind(new.expires_at)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Takes the live ceremony with this hash: deleted and returned in one statement, so of
    /// two finishes at once only one gets it. `None` when it is unknown, taken or expired.
    pub async fn take_webauthn_ceremony(
        &self,
        ceremony_hash: &[u8],
        now: UnixTime,
    ) -> Result<Option<Ceremony>, StoreError> {
        let _turn = self.write_turn().await;
        let row: Option<(String, Option<String>, String)> = sqlx::query_as(
            "DELETE FROM webauthn_ceremonies \
             WHERE tenant_id = $1 AND ceremony_hash = $2 AND expires_at > $3 \
             RETURNING kind, user_id, state",
        )
        .bind(self.id_str())
        .bind(ceremony_hash)
        .bind(now)
        .fetch_optional(self.pool())
        .await?;
        Ok(row.and_then(|(kind, user_id, state)| {
            // The column's CHECK allows only the three kinds.
            CeremonyKind::parse(&kind).map(|kind| Ceremony {
                kind,
                user_id,
                state,
            })
        }))
    }
}
