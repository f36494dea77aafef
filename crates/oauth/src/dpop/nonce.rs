//! Server-provided DPoP nonces (RFC 9449 §8): the token endpoint asks for a proof made after
//! a nonce it handed out, so a proof made ahead of time, by malware that held the key for a
//! moment, is useless later.
//!
//! A nonce is a short-lived JWT (`typ: dpop-nonce+jwt`) signed with the issuer's current
//! key: every node can check any node's nonce with the keys it already holds, and no nonce is
//! stored. A node signs one nonce per [`RENEW_AFTER`] seconds and hands the same one to every
//! client until then; a nonce is accepted for [`NONCE_LIFETIME`] seconds, and no longer once
//! its key has left the JWKS.

use std::sync::{Arc, Mutex};

use jose::{UnixTime, Validation};
use serde::{Deserialize, Serialize};

use crate::error::OAuthError;
use crate::paths;
use crate::state::OAuthState;

/// How long a nonce is accepted.
pub const NONCE_LIFETIME: UnixTime = 300;
/// How old a node's nonce may get before it signs the next: the client's copy then has at
/// least `NONCE_LIFETIME - RENEW_AFTER` seconds left.
const RENEW_AFTER: UnixTime = 120;
const TYP: &str = "dpop-nonce+jwt";

#[derive(Serialize, Deserialize)]
struct NonceClaims {
    iss: String,
    /// The token endpoint's URL: a nonce is good for nothing else.
    aud: String,
    iat: UnixTime,
    exp: UnixTime,
}

/// A nonce and when it was signed.
type Signed = (Arc<str>, UnixTime);

/// The node's current nonce.
#[derive(Clone, Debug, Default)]
pub struct Nonces {
    current: Arc<Mutex<Option<Signed>>>,
}

impl Nonces {
    /// The nonce to hand out now, signed anew when the last one is older than
    /// [`RENEW_AFTER`] (or the clock went back).
    pub async fn current(&self, state: &OAuthState, now: UnixTime) -> Result<Arc<str>, OAuthError> {
        if let Some(fresh) = self.fresh(now) {
            return Ok(fresh);
        }
        let claims = NonceClaims {
            iss: state.config.issuer.as_str().to_owned(),
            aud: state.config.issuer.endpoint(paths::TOKEN),
            iat: now,
            exp: now + NONCE_LIFETIME,
        };
        let nonce: Arc<str> = state.sign_jwt(TYP, claims).await?.into();
        if let Ok(mut current) = self.current.lock() {
            *current = Some((Arc::clone(&nonce), now));
        }
        Ok(nonce)
    }

    fn fresh(&self, now: UnixTime) -> Option<Arc<str>> {
        let current = self.current.lock().ok()?;
        let (nonce, signed_at) = current.as_ref()?;
        (*signed_at <= now && now - *signed_at < RENEW_AFTER).then(|| Arc::clone(nonce))
    }

    /// Whether `nonce` is one of ours, for this endpoint, and not expired.
    pub fn accepts(state: &OAuthState, nonce: &str, now: UnixTime) -> bool {
        let keys = state.signing_keys.current();
        let audience = state.config.issuer.endpoint(paths::TOKEN);
        let validation = Validation {
            typ: TYP,
            issuer: state.config.issuer.as_str(),
            audience: &audience,
            now,
            leeway: 0,
        };
        jose::verify_jwt::<NonceClaims>(nonce, &keys.verification, &validation).is_ok()
    }
}
