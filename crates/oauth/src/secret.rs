//! Client secrets: 256 random bits shown once, stored as SHA-256, compared in constant time.

use aws_lc_rs::digest::{digest, SHA256};
use secrecy::{ExposeSecret, SecretString};
use subtle::ConstantTimeEq;

use crate::error::OAuthError;
use crate::random::RandomSource;

/// SHA-256 of a secret's text. The secrets are 256-bit random values, so a fast hash is
/// enough: there is nothing to brute-force (unlike passwords, which use Argon2id).
pub fn hash_secret(secret: &str) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(digest(&SHA256, secret.as_bytes()).as_ref());
    out
}

/// A new client secret and the hash to store.
pub fn generate_client_secret(
    random: &dyn RandomSource,
) -> Result<(SecretString, [u8; 32]), OAuthError> {
    let secret = random.token()?;
    let hash = hash_secret(&secret);
    Ok((SecretString::from(secret), hash))
}

/// Compares a presented secret with the stored hash without leaking timing.
pub fn verify_secret(presented: &SecretString, stored_hash: &[u8]) -> bool {
    hash_secret(presented.expose_secret())
        .ct_eq(stored_hash)
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::OsRandom;

    #[test]
    fn a_generated_secret_verifies_and_another_does_not() {
        let (secret, hash) = generate_client_secret(&OsRandom::new()).unwrap();
        assert!(verify_secret(&secret, &hash));
        assert!(!verify_secret(
            &SecretString::from("guess".to_owned()),
            &hash
        ));
        assert!(!verify_secret(&secret, &hash[..31]));
    }
}
