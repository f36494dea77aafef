//! JSON Web Keys for RS256 signature keys (RFC 7517, RFC 7518 §6.3) and the JWKS document that
//! the server publishes and resource servers fetch.

use aws_lc_rs::digest;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::{Deserialize, Deserializer, Serialize};

/// An RSA public key for RS256 signatures, as published in the JWKS.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Jwk {
    /// Always `RSA`.
    pub kty: String,
    pub kid: String,
    /// Always `sig`.
    #[serde(rename = "use")]
    pub use_: String,
    /// Always `RS256`.
    pub alg: String,
    /// The modulus, base64url of the unsigned big-endian bytes (RFC 7518 §6.3.1.1).
    pub n: String,
    /// The public exponent, encoded like `n` (RFC 7518 §6.3.1.2).
    pub e: String,
}

impl Jwk {
    /// The JWK of an RS256 signature key from its raw big-endian modulus and exponent.
    pub fn rsa_signing(kid: impl Into<String>, n: &[u8], e: &[u8]) -> Jwk {
        Jwk {
            kty: "RSA".to_owned(),
            kid: kid.into(),
            use_: "sig".to_owned(),
            alg: "RS256".to_owned(),
            n: encode_unsigned(n),
            e: encode_unsigned(e),
        }
    }

    /// The RFC 7638 JWK thumbprint (SHA-256) of this key, base64url without padding.
    pub fn thumbprint(&self) -> String {
        rsa_thumbprint(&self.n, &self.e)
    }

    /// Whether this JWK declares itself an RSA key for RS256 signatures.
    fn is_rs256_signing_key(&self) -> bool {
        self.kty == "RSA" && self.use_ == "sig" && self.alg == "RS256"
    }
}

/// RFC 7638 §3.2: SHA-256 over the required members in lexicographic order, no whitespace.
pub(crate) fn rsa_thumbprint(n: &str, e: &str) -> String {
    // Field order is the serialization order, which serde_json keeps; it also escapes for us.
    #[derive(Serialize)]
    struct Required<'a> {
        e: &'a str,
        kty: &'a str,
        n: &'a str,
    }
    let mut json = Vec::with_capacity(n.len() + e.len() + 32);
    // Serializing three strings into a Vec cannot fail; fall back to nothing rather than panic.
    let _ = serde_json::to_writer(&mut json, &Required { e, kty: "RSA", n });
    URL_SAFE_NO_PAD.encode(digest::digest(&digest::SHA256, &json))
}

/// RFC 7518 §6.3.1.1: the minimum number of octets, so no leading zero bytes (zero stays `AA`).
fn encode_unsigned(bytes: &[u8]) -> String {
    let start = bytes
        .iter()
        .position(|&b| b != 0)
        .unwrap_or(bytes.len().saturating_sub(1));
    URL_SAFE_NO_PAD.encode(bytes.get(start..).unwrap_or_default())
}

/// A JWK Set, `{"keys":[…]}` (RFC 7517 §5).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Jwks {
    pub keys: Vec<Jwk>,
}

impl Jwks {
    /// The key with this `kid`, if published.
    pub fn find(&self, kid: &str) -> Option<&Jwk> {
        self.keys.iter().find(|k| k.kid == kid)
    }
}

impl<'de> Deserialize<'de> for Jwks {
    /// RFC 7517 §5: members and keys we do not understand are ignored, not fatal. A key that is
    /// not an RSA `sig` key for RS256 (EC, `oct`, `enc`, PS256, no `kid`, …) is skipped.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Raw {
            keys: Vec<serde_json::Value>,
        }
        let raw = Raw::deserialize(deserializer)?;
        let keys = raw
            .keys
            .into_iter()
            .filter_map(|value| serde_json::from_value::<Jwk>(value).ok())
            .filter(Jwk::is_rs256_signing_key)
            .collect();
        Ok(Jwks { keys })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7638 §3.1, the example RSA key.
    const RFC7638_N: &str = "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw";

    fn jwk(kid: &str) -> Jwk {
        Jwk {
            kty: "RSA".into(),
            kid: kid.into(),
            use_: "sig".into(),
            alg: "RS256".into(),
            n: RFC7638_N.into(),
            e: "AQAB".into(),
        }
    }

    /// RFC 7638 §3.1: the worked example's thumbprint.
    #[test]
    fn thumbprint_matches_rfc7638_example() {
        assert_eq!(
            jwk("2011-04-29").thumbprint(),
            "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"
        );
    }

    /// RFC 7518 §6.3.1.1: no leading zero octets in `n` or `e`.
    #[test]
    fn rsa_signing_strips_leading_zero_bytes() {
        let key = Jwk::rsa_signing("k1", &[0, 0, 0xd2, 0xfc], &[0, 1, 0, 1]);
        assert_eq!(key.n, "0vw");
        assert_eq!(key.e, "AQAB");
        assert_eq!(
            (key.kty.as_str(), key.use_.as_str(), key.alg.as_str()),
            ("RSA", "sig", "RS256")
        );
        assert_eq!(Jwk::rsa_signing("z", &[0, 0], &[1]).n, "AA");
    }

    #[test]
    fn jwks_serializes_as_keys_array_with_use_member() {
        let set = Jwks {
            keys: vec![Jwk::rsa_signing("k1", &[0xd2, 0xfc], &[1, 0, 1])],
        };
        assert_eq!(
            serde_json::to_string(&set).unwrap(),
            r#"{"keys":[{"kty":"RSA","kid":"k1","use":"sig","alg":"RS256","n":"0vw","e":"AQAB"}]}"#
        );
    }

    /// RFC 7517 §5: unknown members are ignored and keys we cannot use are skipped.
    #[test]
    fn jwks_deserialization_skips_foreign_keys_and_ignores_unknown_members() {
        let doc = format!(
            r#"{{"keys":[
                {{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0","kid":"ec","use":"sig","alg":"ES256"}},
                {{"kty":"oct","k":"c2VjcmV0","kid":"hmac","alg":"HS256"}},
                {{"kty":"RSA","kid":"enc","use":"enc","alg":"RSA-OAEP","n":"{RFC7638_N}","e":"AQAB"}},
                {{"kty":"RSA","kid":"enc-rs","use":"enc","alg":"RS256","n":"{RFC7638_N}","e":"AQAB"}},
                {{"kty":"RSA","kid":"pss","use":"sig","alg":"PS256","n":"{RFC7638_N}","e":"AQAB"}},
                {{"kty":"RSA","use":"sig","alg":"RS256","n":"{RFC7638_N}","e":"AQAB"}},
                {{"kty":"RSA","kid":7,"use":"sig","alg":"RS256","n":"{RFC7638_N}","e":"AQAB"}},
                "not a key",
                {{"kty":"RSA","kid":"good","use":"sig","alg":"RS256","n":"{RFC7638_N}","e":"AQAB","x5t#S256":"ignored","key_ops":["verify"]}}
            ],"extra":true}}"#
        );
        let set: Jwks = serde_json::from_str(&doc).unwrap();
        assert_eq!(set.keys, vec![jwk("good")]);
        assert_eq!(set.find("good"), Some(&jwk("good")));
        assert_eq!(set.find("ec"), None);
    }

    #[test]
    fn jwks_without_keys_member_is_refused() {
        assert!(serde_json::from_str::<Jwks>(r#"{"other":[]}"#).is_err());
    }

    #[test]
    fn jwks_round_trips() {
        let set = Jwks {
            keys: vec![jwk("a"), jwk("b")],
        };
        let back: Jwks = serde_json::from_str(&serde_json::to_string(&set).unwrap()).unwrap();
        assert_eq!(back, set);
    }
}
