//! Access tokens whose signature and claims this node has already checked.
//!
//! An app sends the same access token with every request for the token's life, and each
//! request checked its RS256 signature again: a public-key operation and the base64 and JSON
//! of its parts, about a twentieth of an uncached API query's CPU (docs/performance.md).
//! What that check proves depends only on the token's bytes, the issuer's key set and this
//! API's configuration, so its result is kept here, under a SHA-256 digest of the exact
//! token, with the key set that verified it. It is reused only while that same key set is
//! the one the API holds (a new fetch of the JWKS, such as a rotation or a retired key, means
//! checking again), only while the token has not expired by the same rule and leeway, and
//! only on or after the second it was checked (a clock set back checks again). Everything
//! else about the request is still checked every time: the grant standing, the DPoP proof,
//! the scopes. Each node keeps its own, bounded and least recently used first; nothing is
//! shared, so nothing here outlives a key set or a token's expiry.

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex, PoisonError};

use aws_lc_rs::digest::{digest, SHA256};
use jose::{AccessTokenClaims, UnixTime, VerificationKeys};
use lru::LruCache;

/// Tokens kept: one per app session calling the API within a key set's minute, each a few
/// hundred bytes of claims. Past this the least recently used are checked again.
const KEPT: usize = 4096;

/// A token, digested: what it is kept under (the token itself is never kept).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub struct TokenDigest([u8; 32]);

impl TokenDigest {
    pub fn of(token: &str) -> TokenDigest {
        let mut bytes = [0u8; 32];
        bytes.copy_from_slice(digest(&SHA256, token.as_bytes()).as_ref());
        TokenDigest(bytes)
    }
}

/// A check that passed: the claims, the `kid` and the key set that verified them, and when.
#[derive(Clone)]
pub struct Verified {
    pub claims: Arc<AccessTokenClaims>,
    pub kid: Arc<str>,
    pub keys: Arc<VerificationKeys>,
    pub checked_at: UnixTime,
}

impl Verified {
    /// Whether this check still holds at `now` with `current` keys and `leeway` seconds past
    /// `exp`: the rule of `jose::verify_jwt` (valid strictly before `exp` + leeway).
    pub fn holds(&self, current: &Arc<VerificationKeys>, now: UnixTime, leeway: i64) -> bool {
        Arc::ptr_eq(&self.keys, current)
            && now >= self.checked_at
            && now < self.claims.exp.saturating_add(leeway)
    }
}

/// The checks kept on this node; clones share them.
#[derive(Clone)]
pub struct VerifiedTokens {
    kept: Arc<Mutex<LruCache<TokenDigest, Verified>>>,
}

impl std::fmt::Debug for VerifiedTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerifiedTokens").finish_non_exhaustive()
    }
}

impl Default for VerifiedTokens {
    fn default() -> Self {
        VerifiedTokens::with_capacity(KEPT)
    }
}

impl VerifiedTokens {
    fn with_capacity(capacity: usize) -> VerifiedTokens {
        let capacity = NonZeroUsize::new(capacity).unwrap_or(NonZeroUsize::MIN);
        VerifiedTokens {
            kept: Arc::new(Mutex::new(LruCache::new(capacity))),
        }
    }

    /// The check kept for this token, if any; whether it still holds is the caller's to ask
    /// ([`Verified::holds`]), with the keys it holds now.
    pub fn get(&self, token: &TokenDigest) -> Option<Verified> {
        self.lock().get(token).cloned()
    }

    pub fn put(&self, token: TokenDigest, verified: Verified) {
        self.lock().put(token, verified);
    }

    /// Forgets a check that no longer holds, so that it is not found again.
    pub fn forget(&self, token: &TokenDigest) {
        self.lock().pop(token);
    }

    /// A panic while the lock was held left at worst an entry missing or kept: each entry is
    /// whole, so the map is still usable.
    fn lock(&self) -> std::sync::MutexGuard<'_, LruCache<TokenDigest, Verified>> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(exp: UnixTime) -> AccessTokenClaims {
        AccessTokenClaims {
            iss: "https://auth.example".into(),
            sub: "user_1".into(),
            aud: "https://api.example".into(),
            exp,
            iat: exp - 300,
            jti: "at_1".into(),
            client_id: "app".into(),
            scope: "openid jobs".into(),
            tenant: "acme".into(),
            organization_guid: "org_1".into(),
            auth_time: exp - 300,
            grant_id: "grant_1".into(),
            acr: None,
            cnf: None,
        }
    }

    fn keys() -> Arc<VerificationKeys> {
        let empty = jose::Jwks { keys: Vec::new() };
        Arc::new(VerificationKeys::from_jwks(&empty).unwrap())
    }

    fn verified(keys: &Arc<VerificationKeys>, exp: UnixTime, checked_at: UnixTime) -> Verified {
        Verified {
            claims: Arc::new(claims(exp)),
            kid: "k1".into(),
            keys: keys.clone(),
            checked_at,
        }
    }

    #[test]
    fn a_check_holds_only_with_the_same_keys_before_expiry_and_not_before_it_was_made() {
        let keys = keys();
        let check = verified(&keys, 1_000, 500);
        assert!(check.holds(&keys, 500, 60));
        assert!(check.holds(&keys, 1_059, 60));
        // The rule of verify_jwt: valid strictly before exp + leeway.
        assert!(!check.holds(&keys, 1_060, 60));
        assert!(!check.holds(&keys, 1_000, 0));
        // A clock set back before the check checks again.
        assert!(!check.holds(&keys, 499, 60));
        // Another key set (a new fetch of the JWKS), even with the same keys in it.
        assert!(!check.holds(&self::keys(), 600, 60));
    }

    #[test]
    fn tokens_are_kept_by_their_exact_bytes_and_the_least_recently_used_go_first() {
        let keys = keys();
        let kept = VerifiedTokens::with_capacity(2);
        let (a, b, c) = (
            TokenDigest::of("a.b.c"),
            TokenDigest::of("a.b.d"),
            TokenDigest::of("a.b.e"),
        );
        assert_ne!(a, b);
        kept.put(a, verified(&keys, 1_000, 1));
        kept.put(b, verified(&keys, 1_000, 2));
        assert_eq!(kept.get(&a).map(|v| v.checked_at), Some(1));
        kept.put(c, verified(&keys, 1_000, 3));
        assert!(kept.get(&b).is_none(), "b was the least recently used");
        assert!(kept.get(&a).is_some() && kept.get(&c).is_some());
        kept.forget(&a);
        assert!(kept.get(&a).is_none());
    }
}
