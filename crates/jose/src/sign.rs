//! Signing: compact JWS with RS256 (RFC 7515, RFC 7518 §3.3) and the OpenID Connect `at_hash`.
//!
//! This is the hottest code of the server (an access token and an ID token per token request),
//! so a token is built in one pre-sized `String` from one JSON scratch buffer.

use aws_lc_rs::digest;
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::RSA_PKCS1_SHA256;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::Serialize;

use crate::{JoseError, SigningKey};

/// Largest RSA signature aws-lc-rs produces: an 8192-bit modulus.
const MAX_SIGNATURE_LEN: usize = 8192 / 8;

#[derive(Serialize)]
struct ProtectedHeader<'a> {
    alg: &'static str,
    typ: &'a str,
    kid: &'a str,
}

impl SigningKey {
    /// Sign `claims` as a compact JWS whose protected header is exactly
    /// `{"alg":"RS256","typ":<typ>,"kid":<kid>}`; `claims` must serialize to a JSON object
    /// (RFC 7519 §7.1). RSA work: call from a blocking thread.
    pub fn sign_jwt<C: Serialize>(&self, typ: &str, claims: &C) -> Result<String, JoseError> {
        let header = ProtectedHeader {
            alg: "RS256",
            typ,
            kid: &self.kid,
        };
        let mut json = Vec::with_capacity(512);
        serde_json::to_writer(&mut json, &header).map_err(JoseError::Serialize)?;
        let header_len = json.len();
        serde_json::to_writer(&mut json, claims).map_err(JoseError::Serialize)?;
        let (header_json, claims_json) = json.split_at(header_len);
        if claims_json.first() != Some(&b'{') {
            return Err(JoseError::Serialize(serde::ser::Error::custom(
                "JWT claims must be a JSON object",
            )));
        }

        let signature_len = self.key_pair.public_modulus_len();
        let mut token = String::with_capacity(
            encoded_len(header_json.len())
                + encoded_len(claims_json.len())
                + encoded_len(signature_len)
                + 2,
        );
        URL_SAFE_NO_PAD.encode_string(header_json, &mut token);
        token.push('.');
        URL_SAFE_NO_PAD.encode_string(claims_json, &mut token);

        let mut buffer = [0u8; MAX_SIGNATURE_LEN];
        let signature = buffer.get_mut(..signature_len).ok_or(JoseError::Signing)?;
        // RFC 7515 §5.1: the signing input is the ASCII of `header.payload`.
        self.key_pair
            .sign(
                &RSA_PKCS1_SHA256,
                &SystemRandom::new(),
                token.as_bytes(),
                signature,
            )
            .map_err(|_| JoseError::Signing)?;
        token.push('.');
        URL_SAFE_NO_PAD.encode_string(signature, &mut token);
        Ok(token)
    }
}

/// Length of unpadded base64 for `len` bytes.
fn encoded_len(len: usize) -> usize {
    (len * 4).div_ceil(3)
}

/// OpenID Connect Core 1.0 §3.1.3.6: base64url of the left half of SHA-256 over the ASCII
/// octets of the access token (the hash matching RS256).
pub fn at_hash(access_token: &str) -> String {
    let hash = digest::digest(&digest::SHA256, access_token.as_bytes());
    let (left, _) = hash.as_ref().split_at(digest::SHA256_OUTPUT_LEN / 2);
    URL_SAFE_NO_PAD.encode(left)
}

#[cfg(test)]
mod tests {
    use std::sync::OnceLock;

    use aws_lc_rs::signature::{RsaPublicKeyComponents, RSA_PKCS1_2048_8192_SHA256};
    use serde_json::json;

    use super::*;
    use crate::generate_signing_key;

    fn key() -> &'static SigningKey {
        static KEY: OnceLock<SigningKey> = OnceLock::new();
        KEY.get_or_init(|| {
            let generated = generate_signing_key().unwrap();
            SigningKey::from_pkcs8(&generated.kid, &generated.pkcs8_der).unwrap()
        })
    }

    fn b64(s: &str) -> Vec<u8> {
        URL_SAFE_NO_PAD.decode(s).unwrap()
    }

    #[test]
    fn header_is_exactly_alg_typ_kid_and_payload_is_the_claims() {
        let key = key();
        let claims = json!({"sub": "u1", "exp": 1_700_000_600});
        let token = key.sign_jwt("at+jwt", &claims).unwrap();
        let parts: Vec<&str> = token.split('.').collect();
        assert_eq!(parts.len(), 3);
        assert_eq!(
            String::from_utf8(b64(parts[0])).unwrap(),
            format!(r#"{{"alg":"RS256","typ":"at+jwt","kid":"{}"}}"#, key.kid())
        );
        assert_eq!(
            String::from_utf8(b64(parts[1])).unwrap(),
            r#"{"exp":1700000600,"sub":"u1"}"#
        );
        assert_eq!(b64(parts[2]).len(), 256);
        // Pre-sizing was exact: building the token never reallocated.
        assert_eq!(token.capacity(), token.len());
    }

    /// RFC 7518 §3.3: RSASSA-PKCS1-v1_5 with SHA-256 over `header.payload`, checked with
    /// aws-lc-rs directly rather than with our own verifier.
    #[test]
    fn signature_verifies_with_the_published_public_key() {
        let key = key();
        let token = key.sign_jwt("JWT", &json!({"a": 1})).unwrap();
        let (input, signature) = token.rsplit_once('.').unwrap();
        let public = RsaPublicKeyComponents {
            n: b64(&key.public_jwk().n),
            e: b64(&key.public_jwk().e),
        };
        public
            .verify(
                &RSA_PKCS1_2048_8192_SHA256,
                input.as_bytes(),
                &b64(signature),
            )
            .unwrap();
        assert!(public
            .verify(
                &RSA_PKCS1_2048_8192_SHA256,
                format!("{input}x").as_bytes(),
                &b64(signature)
            )
            .is_err());
    }

    /// RFC 7519 §7.1: the claims set is a JSON object.
    #[test]
    fn claims_that_are_not_an_object_are_refused() {
        assert!(matches!(
            key().sign_jwt("JWT", &"just a string"),
            Err(JoseError::Serialize(_))
        ));
        assert!(matches!(
            key().sign_jwt("JWT", &[1, 2]),
            Err(JoseError::Serialize(_))
        ));
    }

    #[test]
    fn header_values_are_json_escaped() {
        let token = key().sign_jwt("a\"b", &json!({})).unwrap();
        let header: serde_json::Value =
            serde_json::from_slice(&b64(token.split('.').next().unwrap())).unwrap();
        assert_eq!(header["typ"], "a\"b");
    }

    /// OpenID Connect Core 1.0 §3.1.3.6; expected value from
    /// `printf %s TOKEN | openssl dgst -sha256 -binary | head -c 16 | base64url`.
    #[test]
    fn at_hash_is_base64url_of_left_half_of_sha256() {
        let token = "jHkWEdUXMU1BwAsC4vtUsZwnNkU8yv3oIvA5aHpe1eQ";
        assert_eq!(at_hash(token), "94typO_qMeQDOxPtTCZcng");
        let full = digest::digest(&digest::SHA256, token.as_bytes());
        assert_eq!(at_hash(token), URL_SAFE_NO_PAD.encode(&full.as_ref()[..16]));
        assert_eq!(at_hash(token).len(), 22);
    }
}
