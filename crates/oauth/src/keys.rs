//! The signing keys as a node holds them: parsed once, swapped whole when the table changes,
//! so a rotation made by any node or by the CLI is served here after the next reload.

use std::sync::{Arc, RwLock};

use axum::body::Bytes;
use jose::{KeyRing, SigningKey, UnixTime, VerificationKeys};
use store::Store;

use crate::error::OAuthError;

/// The key ring in use and its JWKS, already serialized for the JWKS endpoint.
#[derive(Debug)]
pub struct LoadedKeys {
    pub ring: KeyRing,
    /// The published keys, parsed for verifying our own access tokens (userinfo).
    pub verification: VerificationKeys,
    pub jwks_json: Bytes,
    /// The active kids newest first, and which of them signs: what a reload compares.
    kids: Vec<String>,
    signing: usize,
}

/// Shared, cheaply cloned handle on the current keys.
#[derive(Clone, Debug)]
pub struct SigningKeys {
    current: Arc<RwLock<Arc<LoadedKeys>>>,
}

impl SigningKeys {
    /// Loads the active keys, generating the first one when the database has none.
    pub async fn load_or_create(store: &Store, now: UnixTime) -> Result<SigningKeys, OAuthError> {
        if store.active_signing_keys().await?.is_empty() {
            // Nodes starting together on an empty database each make a key; the store keeps
            // exactly one, so all of them sign with and publish the same key.
            let generated = tokio::task::spawn_blocking(jose::generate_signing_key)
                .await
                .map_err(|_| OAuthError::Blocking)??;
            if store
                .insert_first_signing_key(&generated.kid, &generated.pkcs8_der, now)
                .await?
            {
                tracing::info!(kid = %generated.kid, "signing key created");
            }
        }
        let loaded = parse(store.active_signing_keys().await?, now).await?;
        Ok(SigningKeys {
            current: Arc::new(RwLock::new(Arc::new(loaded))),
        })
    }

    /// The keys in use now. Cheap: one read lock and an `Arc` clone.
    pub fn current(&self) -> Arc<LoadedKeys> {
        match self.current.read() {
            Ok(guard) => Arc::clone(&guard),
            // A writer cannot panic while holding the lock (it only swaps an Arc), but if
            // one ever did, the last value is still whole.
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// Reads the table and swaps in a new ring when the set of keys, or the one that signs
    /// (a new key starts signing once published long enough), changed. Returns whether it
    /// changed.
    pub async fn reload(&self, store: &Store, now: UnixTime) -> Result<bool, OAuthError> {
        let active = store.active_signing_keys().await?;
        let kids: Vec<&str> = active.iter().map(|k| k.kid.as_str()).collect();
        let current = self.current();
        if current.kids == kids && Some(current.signing) == signing_index(&active, now) {
            return Ok(false);
        }
        let loaded = Arc::new(parse(active, now).await?);
        match self.current.write() {
            Ok(mut guard) => *guard = loaded,
            Err(poisoned) => *poisoned.into_inner() = loaded,
        }
        Ok(true)
    }
}

/// Generates an RSA-2048 key on a blocking thread and stores it; it becomes the signing key
/// of every node at their next reload. Returns the new kid.
pub async fn rotate_signing_key(store: &Store, now: UnixTime) -> Result<String, OAuthError> {
    let generated = tokio::task::spawn_blocking(jose::generate_signing_key)
        .await
        .map_err(|_| OAuthError::Blocking)??;
    store
        .insert_signing_key(&generated.kid, &generated.pkcs8_der, now)
        .await?;
    tracing::info!(kid = %generated.kid, "signing key created");
    Ok(generated.kid)
}

/// Which active key signs at `now` (the lifecycle rule of `jose`).
pub fn signing_index(active: &[store::StoredSigningKey], now: UnixTime) -> Option<usize> {
    let created: Vec<UnixTime> = active.iter().map(|k| k.created_at).collect();
    jose::signing_key_index(&created, now)
}

async fn parse(
    active: Vec<store::StoredSigningKey>,
    now: UnixTime,
) -> Result<LoadedKeys, OAuthError> {
    let signing = signing_index(&active, now).ok_or(OAuthError::NoSigningKey)?;
    // Parsing an RSA private key validates it, which costs CPU: keep it off the runtime.
    tokio::task::spawn_blocking(move || {
        let mut parsed = active
            .iter()
            .map(|k| SigningKey::from_pkcs8(&k.kid, &k.private_key))
            .collect::<Result<Vec<_>, _>>()?;
        let signing_key = parsed.remove(signing);
        let others = parsed.iter().map(|k| k.public_jwk().clone()).collect();
        let ring = KeyRing::new(signing_key, others);
        let jwks_json =
            Bytes::from(serde_json::to_vec(ring.jwks()).map_err(jose::JoseError::Serialize)?);
        let verification = VerificationKeys::from_jwks(ring.jwks())?;
        let kids = active.into_iter().map(|k| k.kid).collect();
        Ok(LoadedKeys {
            ring,
            verification,
            jwks_json,
            kids,
            signing,
        })
    })
    .await
    .map_err(|_| OAuthError::Blocking)?
}
