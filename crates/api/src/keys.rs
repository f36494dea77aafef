//! The issuer's public keys as a resource server holds them: fetched over HTTP from
//! `{auth_url}/oauth/jwks` (the same path in one process or two), cached, and fetched again
//! when a token names an unknown `kid` or the set grows old, at most once every few seconds.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jose::{Jwks, VerificationKeys};

use crate::error::ApiError;

/// Refetch a set this old even when it knows the kid, so retired keys leave.
const MAX_AGE: Duration = Duration::from_secs(300);
/// Never ask the issuer more often than this.
const MIN_INTERVAL: Duration = Duration::from_secs(2);
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Clone, Debug)]
pub struct RemoteKeys {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    jwks_url: String,
    http: reqwest::Client,
    cached: RwLock<Cached>,
    /// One fetch at a time; the others wait for its result.
    fetching: tokio::sync::Mutex<()>,
}

#[derive(Debug, Default)]
struct Cached {
    keys: Option<(Arc<VerificationKeys>, Instant)>,
    last_attempt: Option<Instant>,
}

impl RemoteKeys {
    pub fn new(jwks_url: String) -> Result<RemoteKeys, ApiError> {
        let http = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|_| ApiError::KeysUnavailable)?;
        let inner = Inner {
            jwks_url,
            http,
            cached: RwLock::default(),
            fetching: tokio::sync::Mutex::new(()),
        };
        Ok(RemoteKeys {
            inner: Arc::new(inner),
        })
    }

    /// A key set that should know `kid`. `KeysUnavailable` only when no set was ever had.
    pub async fn for_kid(&self, kid: &str) -> Result<Arc<VerificationKeys>, ApiError> {
        if let Some(keys) = self.fresh_with(kid) {
            return Ok(keys);
        }
        let _one_at_a_time = self.inner.fetching.lock().await;
        if let Some(keys) = self.fresh_with(kid) {
            return Ok(keys);
        }
        let recently_tried = self
            .read()
            .last_attempt
            .is_some_and(|t| t.elapsed() < MIN_INTERVAL);
        if !recently_tried {
            self.write().last_attempt = Some(Instant::now());
            match self.fetch().await {
                Ok(keys) => self.write().keys = Some((Arc::new(keys), Instant::now())),
                Err(reason) => {
                    tracing::warn!(url = %self.inner.jwks_url, reason, "cannot fetch the issuer's JWKS")
                }
            }
        }
        // A stale set still verifies what it knows; a token with an unknown kid fails there.
        self.read()
            .keys
            .as_ref()
            .map(|(keys, _)| Arc::clone(keys))
            .ok_or(ApiError::KeysUnavailable)
    }

    fn fresh_with(&self, kid: &str) -> Option<Arc<VerificationKeys>> {
        match &self.read().keys {
            Some((keys, fetched)) if keys.contains(kid) && fetched.elapsed() < MAX_AGE => {
                Some(Arc::clone(keys))
            }
            _ => None,
        }
    }

    async fn fetch(&self) -> Result<VerificationKeys, &'static str> {
        let response = self
            .inner
            .http
            .get(&self.inner.jwks_url)
            .send()
            .await
            .map_err(|_| "unreachable")?;
        if !response.status().is_success() {
            return Err("unexpected status");
        }
        let jwks: Jwks = response.json().await.map_err(|_| "not a JWKS")?;
        VerificationKeys::from_jwks(&jwks).map_err(|_| "unusable keys")
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Cached> {
        self.inner
            .cached
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Cached> {
        self.inner
            .cached
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
