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
        Ok(hyphenated(&b))
    }

    /// A UUID ordered by time (RFC 9562 version 7: `unix_ms`, then 74 random bits), for
    /// grants: a database's index of them then grows at its end, where consecutive grants
    /// share its last page (docs/decisions.md).
    fn uuid_v7(&self, unix_ms: u64) -> Result<String, OAuthError> {
        let mut b = [0u8; 16];
        self.fill(&mut b[6..])?;
        b[..6].copy_from_slice(&unix_ms.to_be_bytes()[2..]);
        b[6] = (b[6] & 0x0f) | 0x70; // version 7
        b[8] = (b[8] & 0x3f) | 0x80; // RFC 9562 variant
        Ok(hyphenated(&b))
    }
}

/// A UUID's 8-4-4-4-12 form in lower-case hex, written digit by digit: a `format!` per byte
/// was 8,500 instructions a code exchange (docs/performance.md).
fn hyphenated(b: &[u8; 16]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut id = String::with_capacity(36);
    for (i, byte) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            id.push('-');
        }
        id.push(char::from(HEX[usize::from(byte >> 4)]));
        id.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    id
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

    /// RFC 9562 §5.7: 48 bits of Unix milliseconds, big-endian, then the version (7), 12
    /// random bits, the variant and 62 more; ids of later milliseconds sort after, as text
    /// too (what a database's index of them orders by).
    #[test]
    fn a_v7_uuid_leads_with_its_milliseconds_and_sorts_by_them() {
        assert_eq!(
            Counting(0x00).uuid_v7(0x0123_4567_89ab).unwrap(),
            "01234567-89ab-7001-8203-040506070809"
        );
        let random = OsRandom::new();
        for ms in [0, 1_800_000_000_000, (1 << 48) - 2] {
            let (earlier, later) = (random.uuid_v7(ms).unwrap(), random.uuid_v7(ms + 1).unwrap());
            assert!(earlier < later, "{earlier} {later}");
            assert_eq!(&earlier[14..15], "7");
            assert!(
                matches!(&earlier[19..20], "8" | "9" | "a" | "b"),
                "{earlier}"
            );
        }
    }

    /// Bytes counting up from the one it holds, the same each time.
    #[derive(Debug)]
    struct Counting(u8);

    impl RandomSource for Counting {
        fn fill(&self, dest: &mut [u8]) -> Result<(), OAuthError> {
            for (byte, n) in dest.iter_mut().zip(self.0..) {
                *byte = n;
            }
            Ok(())
        }
    }

    #[test]
    fn a_uuid_spells_its_bytes_in_lowercase_hex_with_its_version_and_variant_set() {
        assert_eq!(
            Counting(0x00).uuid_v4().unwrap(),
            "00010203-0405-4607-8809-0a0b0c0d0e0f"
        );
        assert_eq!(
            Counting(0xa0).uuid_v4().unwrap(),
            "a0a1a2a3-a4a5-46a7-a8a9-aaabacadaeaf"
        );
    }
}
