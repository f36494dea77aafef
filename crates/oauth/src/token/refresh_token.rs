//! A refresh token's random part, and the key the database finds it by.
//!
//! A token is `<tenant>.<64 base64url characters>`: 48 bytes, of which the first 16 are its
//! selector (6 bytes of Unix milliseconds, then 80 random bits) and the other 32 its secret
//! (256 random bits). It is stored under its key: the selector, then SHA-256 of the whole
//! random part. The database's index of refresh tokens then grows at its end, where the
//! tokens issued together share its last page, instead of taking a page a token at a place
//! its hash picks (docs/decisions.md). The secret is never stored, and a lookup still needs
//! the hash of the whole random part, exactly as before.
//!
//! Tokens of the earlier form (43 characters: 256 random bits, no selector) are stored under
//! SHA-256 alone and keep working until they are rotated or expire.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

use crate::error::OAuthError;
use crate::random::RandomSource;
use crate::secret::hash_secret;
use crate::state::OAuthState;

/// Characters of a refresh token's random part (48 bytes).
pub(super) const RANDOM_PART_LENGTH: usize = 64;
const SELECTOR: usize = 16;
const BYTES: usize = 48;

/// A new refresh token's random part, its selector led by the state's clock.
pub(super) fn issue_random_part(state: &OAuthState) -> Result<String, OAuthError> {
    let unix_ms = u64::try_from(state.clock.now_millis()).unwrap_or(0);
    new_random_part(&*state.random, unix_ms)
}

/// A new refresh token's random part, its selector led by `unix_ms`.
fn new_random_part(random: &dyn RandomSource, unix_ms: u64) -> Result<String, OAuthError> {
    let mut bytes = [0u8; BYTES];
    random.fill(&mut bytes[6..])?;
    bytes[..6].copy_from_slice(&unix_ms.to_be_bytes()[2..]);
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

/// What a refresh token is stored and looked up under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RefreshTokenKey {
    bytes: [u8; SELECTOR + 32],
    len: usize,
}

impl RefreshTokenKey {
    /// The key of a presented or new token's random part: its selector and SHA-256 of it
    /// all, or SHA-256 alone for a token of the earlier form (or any other text, which then
    /// finds nothing).
    pub fn of(random_part: &str) -> RefreshTokenKey {
        let hash = hash_secret(random_part);
        let mut bytes = [0u8; SELECTOR + 32];
        let mut decoded = [0u8; BYTES];
        let selector = random_part.len() == RANDOM_PART_LENGTH
            && URL_SAFE_NO_PAD.decode_slice(random_part, &mut decoded) == Ok(BYTES);
        if !selector {
            bytes[..32].copy_from_slice(&hash);
            return RefreshTokenKey { bytes, len: 32 };
        }
        bytes[..SELECTOR].copy_from_slice(&decoded[..SELECTOR]);
        bytes[SELECTOR..].copy_from_slice(&hash);
        RefreshTokenKey {
            bytes,
            len: SELECTOR + 32,
        }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::OsRandom;

    #[test]
    fn a_random_part_is_64_url_safe_characters_led_by_its_milliseconds() {
        let random = OsRandom::new();
        let part = new_random_part(&random, 0x0123_4567_89ab).unwrap();
        assert_eq!(part.len(), RANDOM_PART_LENGTH);
        assert!(part
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_'));
        let bytes = URL_SAFE_NO_PAD.decode(&part).unwrap();
        assert_eq!(bytes[..6], [0x01, 0x23, 0x45, 0x67, 0x89, 0xab]);
        // 336 random bits: two parts of one millisecond differ.
        assert_ne!(part, new_random_part(&random, 0x0123_4567_89ab).unwrap());
    }

    /// The key is the selector and SHA-256 of the whole part: nothing of the secret's own
    /// 32 bytes is in it.
    #[test]
    fn the_key_is_the_selector_then_the_hash_of_the_whole_part() {
        let part = new_random_part(&OsRandom::new(), 1_800_000_000_000).unwrap();
        let bytes = URL_SAFE_NO_PAD.decode(&part).unwrap();
        let key = RefreshTokenKey::of(&part);
        assert_eq!(key.as_bytes().len(), 48);
        assert_eq!(key.as_bytes()[..16], bytes[..16]);
        assert_eq!(key.as_bytes()[16..], hash_secret(&part));
        assert!(!key
            .as_bytes()
            .windows(8)
            .any(|w| bytes[16..].windows(8).any(|s| s == w)));
    }

    /// What the index orders by: the keys of later milliseconds sort after.
    #[test]
    fn keys_of_later_milliseconds_sort_after() {
        let random = OsRandom::new();
        for ms in [0, 1_800_000_000_000, (1 << 48) - 2] {
            let earlier = RefreshTokenKey::of(&new_random_part(&random, ms).unwrap());
            let later = RefreshTokenKey::of(&new_random_part(&random, ms + 1).unwrap());
            assert!(earlier.as_bytes() < later.as_bytes(), "{ms}");
        }
    }

    /// Tokens issued before the selector keep their key: SHA-256 of the 43 characters. So
    /// does any other text, which then finds nothing.
    #[test]
    fn an_earlier_token_and_other_text_are_keyed_by_their_hash_alone() {
        let earlier = OsRandom::new().token().unwrap();
        assert_eq!(
            RefreshTokenKey::of(&earlier).as_bytes(),
            hash_secret(&earlier)
        );
        let not_base64 = "*".repeat(RANDOM_PART_LENGTH);
        assert_eq!(
            RefreshTokenKey::of(&not_base64).as_bytes(),
            hash_secret(&not_base64)
        );
    }
}
