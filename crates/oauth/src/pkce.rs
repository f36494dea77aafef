//! PKCE (RFC 7636), S256 only.

use aws_lc_rs::digest::{digest, SHA256};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

/// RFC 7636 §4.2: `BASE64URL-ENCODE(SHA256(ASCII(code_verifier)))`.
pub fn s256_challenge(code_verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(digest(&SHA256, code_verifier.as_bytes()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn matches_the_rfc_7636_appendix_b_example() {
        assert_eq!(
            super::s256_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }
}
