//! The one source of randomness for secrets: codes, tokens, client secrets, CSRF values.

use aws_lc_rs::rand::{SecureRandom, SystemRandom};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

use crate::error::OAuthError;

/// A source of cryptographically secure bytes. Production uses [`OsRandom`]; tests may
/// install a predictable source of their own.
pub trait RandomSource: Send + Sync + std::fmt::Debug {
    fn fill(&self, dest: &mut [u8]) -> Result<(), OAuthError>;

    /// 256 random bits as base64url without padding: 43 characters.
    fn token(&self) -> Result<String, OAuthError> {
        let mut bytes = [0u8; 32];
        self.fill(&mut bytes)?;
        Ok(URL_SAFE_NO_PAD.encode(bytes))
    }
}

/// The operating system's CSPRNG, through aws-lc.
#[derive(Debug, Default)]
pub struct OsRandom(SystemRandom);

impl OsRandom {
    pub fn new() -> OsRandom {
        OsRandom(SystemRandom::new())
    }
}

impl RandomSource for OsRandom {
    fn fill(&self, dest: &mut [u8]) -> Result<(), OAuthError> {
        self.0.fill(dest).map_err(|_| OAuthError::Randomness)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_43_url_safe_characters_and_differ() {
        let random = OsRandom::new();
        let a = random.token().unwrap();
        let b = random.token().unwrap();
        assert_eq!(a.len(), 43);
        assert!(a
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_'));
        assert_ne!(a, b);
    }
}
