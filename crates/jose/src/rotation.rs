//! Signing keys: generating them, loading them once, and the immutable key ring the server swaps
//! as a whole when keys rotate.

use std::fmt;
use std::sync::Arc;

use aws_lc_rs::encoding::AsDer as _;
use aws_lc_rs::rsa::{KeyPair, KeySize};
use aws_lc_rs::signature::KeyPair as _;

use crate::jwks::{rsa_thumbprint, Jwk, Jwks};
use crate::{JoseError, UnixTime};

/// RFC 7518 §3.3: RS256 keys of 2048 bits or more.
const MIN_MODULUS_BITS: usize = 2048;

/// A freshly generated private key, ready to be stored.
pub struct GeneratedKey {
    /// The RFC 7638 thumbprint of the public key.
    pub kid: String,
    /// The private key, PKCS#8 v1 DER.
    pub pkcs8_der: Vec<u8>,
}

impl fmt::Debug for GeneratedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GeneratedKey")
            .field("kid", &self.kid)
            .field("pkcs8_der", &"[redacted]")
            .finish()
    }
}

/// A new RSA-2048 signing key whose `kid` is its RFC 7638 JWK thumbprint.
///
/// Slow (tens of milliseconds, far more in debug builds): run it on a blocking thread.
pub fn generate_signing_key() -> Result<GeneratedKey, JoseError> {
    let key_pair = KeyPair::generate(KeySize::Rsa2048).map_err(|_| JoseError::KeyGeneration)?;
    let pkcs8 = key_pair.as_der().map_err(|_| JoseError::KeyGeneration)?;
    let jwk = public_jwk(String::new(), &key_pair);
    Ok(GeneratedKey {
        kid: rsa_thumbprint(&jwk.n, &jwk.e),
        pkcs8_der: pkcs8.as_ref().to_vec(),
    })
}

/// A private key parsed once, with its `kid` and public JWK; signs tokens (see `sign.rs`).
pub struct SigningKey {
    pub(crate) kid: String,
    pub(crate) key_pair: KeyPair,
    pub(crate) jwk: Jwk,
}

impl SigningKey {
    /// Parse a PKCS#8 DER RSA private key published under `kid`.
    pub fn from_pkcs8(kid: &str, der: &[u8]) -> Result<SigningKey, JoseError> {
        if kid.is_empty() {
            return Err(JoseError::InvalidKey("empty kid"));
        }
        let key_pair = KeyPair::from_pkcs8(der).map_err(|_| {
            JoseError::InvalidKey("not a PKCS#8 RSA private key of 2048 to 8192 bits")
        })?;
        // aws-lc-rs refuses small keys today; RFC 7518 §3.3 makes it our rule, so check it here.
        if key_pair.public_modulus_len() * 8 < MIN_MODULUS_BITS {
            return Err(JoseError::InvalidKey("RSA modulus under 2048 bits"));
        }
        let jwk = public_jwk(kid.to_owned(), &key_pair);
        Ok(SigningKey {
            kid: kid.to_owned(),
            key_pair,
            jwk,
        })
    }

    /// The `kid` placed in the header of every token this key signs.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The public half, as published in the JWKS.
    pub fn public_jwk(&self) -> &Jwk {
        &self.jwk
    }
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("kid", &self.kid)
            .field("modulus_bits", &(self.key_pair.public_modulus_len() * 8))
            .finish_non_exhaustive()
    }
}

fn public_jwk(kid: String, key_pair: &KeyPair) -> Jwk {
    let public = key_pair.public_key();
    Jwk::rsa_signing(
        kid,
        public.modulus().big_endian_without_leading_zero(),
        public.exponent().big_endian_without_leading_zero(),
    )
}

/// The key that signs now and the keys published for verification. Immutable: a rotation builds
/// a new ring and swaps it in whole, so a reader never sees a half-updated set.
#[derive(Clone, Debug)]
pub struct KeyRing {
    signing: Arc<SigningKey>,
    published: Jwks,
}

impl KeyRing {
    /// A ring signing with `signing` and publishing its JWK first, then `also_published` (keys
    /// retired or not yet active, so tokens they signed still verify), skipping repeated `kid`s.
    pub fn new(signing: SigningKey, also_published: Vec<Jwk>) -> KeyRing {
        let mut keys = Vec::with_capacity(also_published.len() + 1);
        keys.push(signing.public_jwk().clone());
        for jwk in also_published {
            if !keys.iter().any(|k: &Jwk| k.kid == jwk.kid) {
                keys.push(jwk);
            }
        }
        KeyRing {
            signing: Arc::new(signing),
            published: Jwks { keys },
        }
    }

    /// The key that signs new tokens.
    pub fn signing_key(&self) -> &Arc<SigningKey> {
        &self.signing
    }

    /// The document served at the JWKS endpoint.
    pub fn jwks(&self) -> &Jwks {
        &self.published
    }
}

#[cfg(test)]
mod tests {
    use std::sync::OnceLock;

    use base64::engine::general_purpose::STANDARD;
    use base64::Engine as _;

    use super::*;

    /// RSA generation is slow in debug builds: one key for the whole module.
    fn generated() -> &'static GeneratedKey {
        static KEY: OnceLock<GeneratedKey> = OnceLock::new();
        KEY.get_or_init(|| generate_signing_key().unwrap())
    }

    /// A throwaway 1024-bit RSA key, PKCS#8 DER (`openssl genpkey … rsa_keygen_bits:1024`).
    const RSA_1024_PKCS8: &str = "MIICdgIBADANBgkqhkiG9w0BAQEFAASCAmAwggJcAgEAAoGBALPFTv2E55SgdCYTojuHGMEsoA+bmCgmv9XHMA+MnH6WUFDuwSpB4NBiYWI1YuE0S1KqONaNvIXYKwOID1mE3btRVOUTFuzB1bc6nuD8A4kWwMIgbISTAM1D/eIysRTz9wAVrD5L+8W0tcseWOPqflGgxeMZO9SHeWMt6elML8ItAgMBAAECgYB+CvNNMWglfzKwl8eBsUEcACvhhZhzXmfWfagm3tHCt6VseVoaRMJZmQDqmL/RYpcFSLA9TndF6MCP40/P1iaXx1XOm1SMoEHkEGyEP73p13crkhysF2xX/I+oUh7MgK0gwfddHzJqvWccAX4oZOhWDLg4bn4913m5RSHIYZpSgQJBAOuA6Qa6ZrPy+zrDZC6U5cCpevSWn48VQSP08nKC8/XqJOyLHiiXivxg2618ZxgnOqARQbqeZOStMSdIY0YHVtECQQDDaqeGlrXUOFoWkAme2v2PmmXRNjtemIFYYn7SfgdSqFp92HKicP/EDfjDib5g4fnywOzg7zhyzyIFO3XkoESdAkA0TXXzW5SRpIYtP9XRDpqUFk/LYGRhZ6wG61CpI/JAjFbU/fSduUJR2MURG47d62B2yj5ZzvHDY7+F5Oq/U8PxAkEAnJsXoIOdOnLit5w9KYKkm/YHTM+iap/bYKKmsjfv1G05AAt7avUV89+ikcoMuQXAUqwL6gOsgE3BHOJXC57o/QJAZL9gBULtRUPB2hS/5hTdaC7pUDFMlNOIPlqlys+IMOdzw2YE8Wt0DByPcFzWk+yGvVHNhe23uCKGLMxcYs0NPQ==";

    #[test]
    fn generated_key_loads_and_its_kid_is_the_rfc7638_thumbprint() {
        let generated = generated();
        let key = SigningKey::from_pkcs8(&generated.kid, &generated.pkcs8_der).unwrap();
        assert_eq!(key.kid(), generated.kid);
        assert_eq!(key.public_jwk().kid, generated.kid);
        assert_eq!(key.public_jwk().thumbprint(), generated.kid);
        // SHA-256 is 32 bytes: 43 base64url characters.
        assert_eq!(generated.kid.len(), 43);
        assert_eq!(key.public_jwk().e, "AQAB");
        // 2048-bit modulus, 256 bytes, 342 base64url characters, no leading zero byte.
        assert_eq!(key.public_jwk().n.len(), 342);
    }

    /// RFC 7518 §3.3: a key of 2048 bits or larger MUST be used with RS256.
    #[test]
    fn key_under_2048_bits_is_refused() {
        let der = STANDARD.decode(RSA_1024_PKCS8).unwrap();
        assert!(matches!(
            SigningKey::from_pkcs8("small", &der),
            Err(JoseError::InvalidKey(_))
        ));
    }

    #[test]
    fn garbage_and_empty_kid_are_refused() {
        assert!(matches!(
            SigningKey::from_pkcs8("k", b"not der"),
            Err(JoseError::InvalidKey(_))
        ));
        let generated = generated();
        assert!(matches!(
            SigningKey::from_pkcs8("", &generated.pkcs8_der),
            Err(JoseError::InvalidKey("empty kid"))
        ));
    }

    #[test]
    fn debug_output_carries_no_key_material() {
        let generated = generated();
        let key = SigningKey::from_pkcs8(&generated.kid, &generated.pkcs8_der).unwrap();
        let printed = format!("{generated:?} {key:?}");
        assert!(printed.contains(&generated.kid));
        assert!(printed.contains("[redacted]"));
        assert!(printed.contains("2048"));
        assert!(!printed.contains(&key.public_jwk().n));
        assert!(!printed.contains(&format!("{:?}", &generated.pkcs8_der[..8])));
    }

    /// The ring sits in server state shared across request tasks.
    #[test]
    fn keys_are_shareable_across_threads() {
        fn shareable<T: Send + Sync + 'static>() {}
        shareable::<KeyRing>();
        shareable::<crate::VerificationKeys>();
    }

    #[test]
    fn key_ring_publishes_signing_key_first_without_duplicate_kids() {
        let generated = generated();
        let key = SigningKey::from_pkcs8(&generated.kid, &generated.pkcs8_der).unwrap();
        let signing_jwk = key.public_jwk().clone();
        let mut old = signing_jwk.clone();
        old.kid = "old".into();
        let mut same_kid = old.clone();
        same_kid.n = "AQAB".into();
        let ring = KeyRing::new(
            key,
            vec![old.clone(), signing_jwk.clone(), same_kid.clone()],
        );
        assert_eq!(ring.signing_key().kid(), generated.kid);
        assert_eq!(ring.jwks().keys, vec![signing_jwk, old]);
    }
}

/// How long a new key is published in the JWKS before it signs: longer than a node's key
/// reload (at most 60 s) plus the JWKS cache lifetime (60 s), so every verifier can know a
/// key before it meets a token signed with it.
pub const PUBLISH_BEFORE_SIGNING: UnixTime = 120;

/// Which of the active keys signs at `now`, given their creation times newest first: the
/// newest key published for at least [`PUBLISH_BEFORE_SIGNING`], or, while none is, the
/// oldest (the longest published, and on a fresh install the only one). `None` for no keys.
pub fn signing_key_index(created_newest_first: &[UnixTime], now: UnixTime) -> Option<usize> {
    created_newest_first
        .iter()
        .position(|created| now - created >= PUBLISH_BEFORE_SIGNING)
        .or_else(|| created_newest_first.len().checked_sub(1))
}

#[cfg(test)]
mod lifecycle_tests {
    use super::*;

    #[test]
    fn a_new_key_signs_only_after_it_has_been_published_long_enough() {
        let now = 10_000;
        assert_eq!(signing_key_index(&[], now), None);
        assert_eq!(
            signing_key_index(&[now], now),
            Some(0),
            "a fresh install signs at once"
        );
        let old = now - 86_400;
        assert_eq!(
            signing_key_index(&[now, old], now),
            Some(1),
            "just rotated: the old key signs"
        );
        assert_eq!(signing_key_index(&[now - 119, old], now), Some(1));
        assert_eq!(signing_key_index(&[now - 120, old], now), Some(0));
        assert_eq!(
            signing_key_index(&[now, now - 60], now),
            Some(1),
            "none ready: the oldest"
        );
    }
}
