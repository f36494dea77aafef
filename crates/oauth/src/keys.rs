//! The signing keys as a node holds them: parsed once, swapped whole when the table changes,
//! so a rotation made by any node or by the CLI is served here after the next reload. With a
//! key encryption key, private keys are sealed in the table (`sealing.rs`).

use std::sync::{Arc, RwLock};

use axum::body::Bytes;
use jose::{KeyRing, SigningKey, UnixTime, VerificationKeys};
use store::{PrivateKeyChange, Store, StoredSigningKey};

use crate::error::OAuthError;
use crate::sealing::KeyEncryption;

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
    encryption: KeyEncryption,
}

impl SigningKeys {
    /// Seals the keys stored in clear when a KEK is given, then loads the active keys,
    /// generating the first one when the database has none. A key sealed by a KEK the node
    /// was not given stops the start.
    pub async fn load_or_create(
        store: &Store,
        now: UnixTime,
        encryption: KeyEncryption,
    ) -> Result<SigningKeys, OAuthError> {
        seal_stored_keys(store, &encryption).await?;
        if store.active_signing_keys().await?.is_empty() {
            // Nodes starting together on an empty database each make a key; the store keeps
            // exactly one, so all of them sign with and publish the same key.
            let generated = tokio::task::spawn_blocking(jose::generate_signing_key)
                .await
                .map_err(|_| OAuthError::Blocking)??;
            let private_key = protect(&encryption, &generated)?;
            if store
                .insert_first_signing_key(&generated.kid, &private_key, now)
                .await?
            {
                tracing::info!(kid = %generated.kid, "signing key created");
            }
        }
        let loaded = parse(store.active_signing_keys().await?, now, encryption.clone()).await?;
        Ok(SigningKeys {
            current: Arc::new(RwLock::new(Arc::new(loaded))),
            encryption,
        })
    }

    /// The KEKs of this node, which also seal other secrets read back (TOTP secrets).
    pub(crate) fn encryption(&self) -> &KeyEncryption {
        &self.encryption
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
        let mut active = store.active_signing_keys().await?;
        if active
            .iter()
            .any(|k| self.encryption.needs_sealing(&k.private_key))
        {
            // A key added in clear meanwhile (a `keys rotate` without the KEK racing this
            // node's start): sealed as at start.
            seal_stored_keys(store, &self.encryption).await?;
            active = store.active_signing_keys().await?;
        }
        let kids: Vec<&str> = active.iter().map(|k| k.kid.as_str()).collect();
        let current = self.current();
        if current.kids == kids && Some(current.signing) == signing_index(&active, now) {
            return Ok(false);
        }
        let loaded = Arc::new(parse(active, now, self.encryption.clone()).await?);
        match self.current.write() {
            Ok(mut guard) => *guard = loaded,
            Err(poisoned) => *poisoned.into_inner() = loaded,
        }
        Ok(true)
    }
}

/// Generates an RSA-2048 key on a blocking thread and stores it, sealed with the KEK if one is
/// given; it becomes the signing key of every node at their next reload. Returns the new kid.
/// Refused when a stored key does not open with the KEKs given: the nodes, which hold the
/// same KEKs, could not open the new key either.
pub async fn rotate_signing_key(
    store: &Store,
    now: UnixTime,
    encryption: &KeyEncryption,
) -> Result<String, OAuthError> {
    check_keys_open(&store.list_signing_keys().await?, encryption)?;
    let generated = tokio::task::spawn_blocking(jose::generate_signing_key)
        .await
        .map_err(|_| OAuthError::Blocking)??;
    let private_key = protect(encryption, &generated)?;
    store
        .insert_signing_key(&generated.kid, &private_key, now)
        .await?;
    tracing::info!(kid = %generated.kid, "signing key created");
    Ok(generated.kid)
}

/// Which active key signs at `now` (the lifecycle rule of `jose`).
pub fn signing_index(active: &[StoredSigningKey], now: UnixTime) -> Option<usize> {
    let created: Vec<UnixTime> = active.iter().map(|k| k.created_at).collect();
    jose::signing_key_index(&created, now)
}

/// Seals every stored key that is in clear (retired ones too: they are still private keys),
/// and returns how many it sealed. Keys sealed by another KEK stay as they are: only
/// [`rewrap_stored_keys`] moves them, so nodes still given the old KEK alone keep opening
/// them while the KEK changes.
pub async fn seal_stored_keys(
    store: &Store,
    encryption: &KeyEncryption,
) -> Result<usize, OAuthError> {
    reseal(store, encryption, KeyEncryption::needs_sealing).await
}

/// Seals every stored key that is in clear or under another KEK than the sealing one (which
/// the encryption's other KEK opens) with the sealing KEK, in one transaction.
pub async fn rewrap_stored_keys(
    store: &Store,
    encryption: &KeyEncryption,
) -> Result<usize, OAuthError> {
    reseal(store, encryption, KeyEncryption::needs_rewrap).await
}

/// Several nodes may start together: each change is conditional on the bytes read, all of
/// them commit or none, and the one that lost the race reads the keys again (and finds
/// them sealed). A key that does not open fails before anything is written.
async fn reseal(
    store: &Store,
    encryption: &KeyEncryption,
    selected: fn(&KeyEncryption, &[u8]) -> bool,
) -> Result<usize, OAuthError> {
    if encryption.sealing_kek().is_none() {
        return Ok(0);
    }
    const ATTEMPTS: usize = 3;
    for _ in 0..ATTEMPTS {
        let keys = store.list_signing_keys().await?;
        let changes = keys
            .iter()
            .filter(|k| selected(encryption, &k.private_key))
            .map(|k| {
                let plain = reveal(encryption, k)?;
                let to = encryption
                    .protect(k.kid.as_bytes(), &plain)
                    .map_err(|error| key_error(k, error))?;
                Ok(PrivateKeyChange {
                    kid: k.kid.clone(),
                    from: k.private_key.clone(),
                    to,
                })
            })
            .collect::<Result<Vec<_>, OAuthError>>()?;
        if changes.is_empty() || store.replace_private_keys(&changes).await? {
            if !changes.is_empty() {
                tracing::info!(keys = changes.len(), "signing keys sealed");
            }
            // The authenticator secrets are sealed under the same KEK (issue 24): they
            // follow it, so the old KEK can be dropped after a rewrap.
            crate::mfa::totp::reseal_secrets(store, encryption, selected).await?;
            return Ok(changes.len());
        }
    }
    Err(OAuthError::KeysChanging)
}

/// Fails, naming the first key, unless every stored key opens with the KEKs given.
pub fn check_keys_open(
    keys: &[StoredSigningKey],
    encryption: &KeyEncryption,
) -> Result<(), OAuthError> {
    keys.iter()
        .try_for_each(|k| reveal(encryption, k).map(|_| ()))
}

fn reveal(encryption: &KeyEncryption, key: &StoredSigningKey) -> Result<Vec<u8>, OAuthError> {
    encryption
        .reveal(key.kid.as_bytes(), &key.private_key)
        .map_err(|error| key_error(key, error))
}

fn protect(
    encryption: &KeyEncryption,
    generated: &jose::GeneratedKey,
) -> Result<Vec<u8>, OAuthError> {
    encryption
        .protect(generated.kid.as_bytes(), &generated.pkcs8_der)
        .map_err(|error| OAuthError::KeySealing {
            kid: generated.kid.clone(),
            error,
        })
}

fn key_error(key: &StoredSigningKey, error: crate::sealing::SealError) -> OAuthError {
    OAuthError::KeySealing {
        kid: key.kid.clone(),
        error,
    }
}

async fn parse(
    active: Vec<StoredSigningKey>,
    now: UnixTime,
    encryption: KeyEncryption,
) -> Result<LoadedKeys, OAuthError> {
    let signing = signing_index(&active, now).ok_or(OAuthError::NoSigningKey)?;
    // Opening and parsing an RSA private key (which validates it) costs CPU: keep it off the
    // runtime.
    tokio::task::spawn_blocking(move || {
        let mut parsed = active
            .iter()
            .map(|k| {
                let der = reveal(&encryption, k)?;
                Ok(SigningKey::from_pkcs8(&k.kid, &der)?)
            })
            .collect::<Result<Vec<_>, OAuthError>>()?;
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
