//! The account pages' CSRF token: derived from the tenant's browser cookie, never stored.
//! Before sign-in the cookie holds the browser's random value (as for a pending authorization
//! request), after it the session's; either is 256 random bits that only this browser and no
//! other site can read, so a forged cross-site form cannot carry the token, and the token
//! changes with every session.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use subtle::ConstantTimeEq;

use crate::secret::hash_secret;

/// Keeps the token apart from every other use of the cookie's value (its SHA-256 is the
/// stored session hash: the token must not be it).
const LABEL: &str = "fieldauth account form\u{1f}";

/// The token the forms of a page carry for the browser whose cookie holds `cookie_value`.
pub(crate) fn token_for(cookie_value: &str) -> String {
    URL_SAFE_NO_PAD.encode(hash_secret(&format!("{LABEL}{cookie_value}")))
}

/// True when `presented` is the token for this cookie, compared in constant time.
pub(crate) fn is_valid(presented: Option<&str>, cookie_value: Option<&str>) -> bool {
    match (presented, cookie_value) {
        (Some(presented), Some(value)) if !presented.is_empty() => {
            bool::from(presented.as_bytes().ct_eq(token_for(value).as_bytes()))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALUE: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ";

    #[test]
    fn the_token_is_bound_to_the_cookie_and_is_not_the_session_hash() {
        let token = token_for(VALUE);
        assert_eq!(token.len(), 43);
        assert!(is_valid(Some(&token), Some(VALUE)));
        assert!(!is_valid(Some(&token), Some("other-value")));
        assert!(!is_valid(Some(&token), None));
        assert!(!is_valid(None, Some(VALUE)));
        assert!(!is_valid(Some(""), Some(VALUE)));
        assert_ne!(token, URL_SAFE_NO_PAD.encode(hash_secret(VALUE)));
    }
}
