//! The authorization server's state, built once in `fieldauth serve` and shared by handlers.

use std::sync::Arc;

use axum::body::Bytes;
use jose::{Clock, UnixTime};
use secrecy::SecretString;
use serde::Serialize;
use store::Store;
use tokio::sync::Semaphore;

use crate::argon2_memory::Argon2Memory;
use crate::discovery;
use crate::dpop::Nonces;
use crate::error::OAuthError;
use crate::events::Metrics;
use crate::issuer::Issuer;
use crate::keys::SigningKeys;
use crate::mail::Mailer;
use crate::password;
use crate::random::RandomSource;
use crate::signer::Signer;
use crate::throttle::ThrottlePolicy;
use crate::token::KnownClients;

/// What the deployment decides.
#[derive(Clone, Debug)]
pub struct OAuthConfig {
    pub issuer: Issuer,
    /// `{api_url}`: the `aud` of access tokens.
    pub api_audience: String,
    pub throttle: ThrottlePolicy,
    /// Seconds a grant lasts from its code exchange, however often it is refreshed
    /// (`--grant-max-days`); then its user signs in again.
    pub grant_max_age: UnixTime,
}

/// What sign-in needs beyond the store.
#[derive(Clone, Debug)]
pub struct SignInSettings {
    pub throttle: ThrottlePolicy,
    /// Argon2id runs at most this many at once (one per core): each holds 19 MiB and a core.
    pub password_permits: Arc<Semaphore>,
    /// Argon2id's memory, kept between the hashes of sign-ins (at most one buffer per permit
    /// in use) and freed after ten idle seconds.
    pub password_memory: Arc<Argon2Memory>,
    /// A hash of a random password, verified against when the username is unknown, so an
    /// unknown user costs the same time as a wrong password.
    pub dummy_hash: Arc<str>,
}

/// The handlers' state: one reference-counted value, because axum clones a route's state
/// for every request (the `State` extractor and each middleware given it), and a clone of
/// the fields themselves was some 40 reference counts up and down per token response.
#[derive(Clone, Debug)]
pub struct OAuthState(pub(crate) Arc<Shared>);

impl std::ops::Deref for OAuthState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// What [`OAuthState`] holds.
#[derive(Clone, Debug)]
pub struct Shared {
    pub config: Arc<OAuthConfig>,
    pub store: Store,
    pub signing_keys: SigningKeys,
    pub clock: Arc<dyn Clock>,
    pub random: Arc<dyn RandomSource>,
    pub signin: SignInSettings,
    /// RS256 signing's threads, one per core. More would only time-slice the cores: every
    /// token response of a burst would finish late instead of the first ones finishing early,
    /// and the switches cost CPU of their own.
    pub(crate) signer: Signer,
    /// Where password-recovery mail goes (`--smtp-url`); none: no recovery by mail.
    pub mailer: Option<Mailer>,
    /// The DPoP nonce this node hands out (RFC 9449 §8).
    pub dpop_nonces: Nonces,
    /// Clients this node authenticated at its token endpoint lately.
    pub known_clients: KnownClients,
    metrics: Metrics,
    discovery_json: Bytes,
}

impl OAuthState {
    pub async fn new(
        config: OAuthConfig,
        store: Store,
        signing_keys: SigningKeys,
        clock: Arc<dyn Clock>,
        random: Arc<dyn RandomSource>,
    ) -> Result<OAuthState, OAuthError> {
        let discovery_json = Bytes::from(discovery::metadata(&config.issuer).to_string());
        let dummy_password = SecretString::from(random.token()?);
        let dummy_hash = password::hash_password(dummy_password, random.as_ref()).await?;
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let signin = SignInSettings {
            throttle: config.throttle,
            password_permits: Arc::new(Semaphore::new(cores)),
            password_memory: Arc::default(),
            dummy_hash: Arc::from(dummy_hash),
        };
        Ok(OAuthState(Arc::new(Shared {
            config: Arc::new(config),
            store,
            signing_keys,
            clock,
            random,
            signin,
            signer: Signer::start(cores)?,
            mailer: None,
            dpop_nonces: Nonces::default(),
            known_clients: KnownClients::default(),
            metrics: Metrics::default(),
            discovery_json,
        })))
    }

    /// Signs `claims` as a JWT of type `typ` with the current key, on a signing thread, in the
    /// caller's span.
    pub(crate) async fn sign_jwt<C: Serialize + Send + 'static>(
        &self,
        typ: &'static str,
        claims: C,
    ) -> Result<String, OAuthError> {
        let key = Arc::clone(self.signing_keys.current().ring.signing_key());
        self.signer
            .run(move || key.sign_jwt(typ, &claims))
            .await?
            .map_err(OAuthError::from)
    }

    /// The counters, for the process's `/metrics`.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    pub(crate) fn discovery_json(&self) -> Bytes {
        self.discovery_json.clone()
    }
}
