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

    /// A random UUID (RFC 9562 version 4), for subjects and organization GUIDs.
    fn uuid_v4(&self) -> Result<String, OAuthError> {
        let mut b = [0u8; 16];
        self.fill(&mut b)?;
        b[6] = (b[6] & 0x0f) | 0x40; // version 4
        b[8] = (b[8] & 0x3f) | 0x80; // RFC 9562 variant
        let hex: String = b.iter().map(|byte| format!("{byte:02x}")).collect();
        Ok(format!(
            "{}-{}-{}-{}-{}",
            &hex[..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..]
        ))
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

    #[test]
    fn uuids_have_version_4_and_the_rfc_variant() {
        let id = OsRandom::new().uuid_v4().unwrap();
        let groups: Vec<&str> = id.split('-').collect();
        assert_eq!(
            groups.iter().map(|g| g.len()).collect::<Vec<_>>(),
            [8, 4, 4, 4, 12]
        );
        assert!(groups[2].starts_with('4'), "{id}");
        assert!(matches!(&groups[3][..1], "8" | "9" | "a" | "b"), "{id}");
        assert!(id
            .bytes()
            .all(|c| c == b'-' || c.is_ascii_digit() || (b'a'..=b'f').contains(&c)));
    }
}
