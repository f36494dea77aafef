//! The public key a DPoP proof carries in its `jwk` header (RFC 9449 §4.2): parsed from the
//! JWK (RFC 7517/7518), checked against the proof's `alg`, and named by its RFC 7638
//! thumbprint, which is what tokens are bound to.

use aws_lc_rs::digest::{digest, SHA256};
use aws_lc_rs::signature::{
    self, RsaPublicKeyComponents, UnparsedPublicKey, VerificationAlgorithm,
};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde_json::{Map, Value};

use crate::verify::modulus_bits;
use crate::JoseError;

/// The proof algorithms accepted, as discovery advertises them
/// (`dpop_signing_alg_values_supported`): asymmetric only (§4.2), RSA of 2048 bits or more.
pub const DPOP_ALGORITHMS: &[&str] = &["ES256", "ES384", "EdDSA", "PS256", "RS256"];

/// RFC 7517 §4 and RFC 7518 §6: members that hold private or symmetric key material. A proof
/// whose `jwk` has any of them is refused (§4.3 item 7: the key must be public).
const PRIVATE_MEMBERS: &[&str] = &["d", "p", "q", "dp", "dq", "qi", "oth", "k"];

const MIN_RSA_BITS: usize = 2048;

/// A public key from a proof's `jwk`, with the algorithm its proof is signed with.
pub(crate) struct ProofKey {
    kind: Kind,
    thumbprint: String,
}

enum Kind {
    /// The SEC1 uncompressed point `0x04 | x | y`.
    Ec {
        point: Vec<u8>,
        algorithm: &'static dyn VerificationAlgorithm,
    },
    Ed25519 {
        x: Vec<u8>,
    },
    Rsa {
        n: Vec<u8>,
        e: Vec<u8>,
        algorithm: &'static signature::RsaParameters,
    },
}

fn invalid(why: &'static str) -> JoseError {
    JoseError::InvalidProof(why)
}

fn member<'a>(jwk: &'a Map<String, Value>, name: &str) -> Result<&'a str, JoseError> {
    jwk.get(name).and_then(Value::as_str).ok_or(invalid(
        "the jwk header lacks a member its key type requires",
    ))
}

fn base64url(jwk: &Map<String, Value>, name: &str) -> Result<Vec<u8>, JoseError> {
    URL_SAFE_NO_PAD
        .decode(member(jwk, name)?)
        .map_err(|_| invalid("a jwk member is not base64url"))
}

impl ProofKey {
    /// The key of `jwk` for a proof signed with `alg`, or why not.
    pub(crate) fn from_jwk(jwk: &Map<String, Value>, alg: &str) -> Result<ProofKey, JoseError> {
        if PRIVATE_MEMBERS.iter().any(|m| jwk.contains_key(*m)) {
            return Err(invalid("the jwk header holds private key material"));
        }
        let kty = member(jwk, "kty")?;
        let (kind, canonical) = match (kty, alg) {
            ("EC", "ES256" | "ES384") => {
                let (crv, size, algorithm): (_, _, &'static dyn VerificationAlgorithm) = match alg {
                    "ES256" => ("P-256", 32, &signature::ECDSA_P256_SHA256_FIXED),
                    _ => ("P-384", 48, &signature::ECDSA_P384_SHA384_FIXED),
                };
                if member(jwk, "crv")? != crv {
                    return Err(invalid("the jwk's curve does not match alg"));
                }
                let (x, y) = (base64url(jwk, "x")?, base64url(jwk, "y")?);
                if x.len() != size || y.len() != size {
                    return Err(invalid("the jwk's coordinates have the wrong length"));
                }
                let mut point = Vec::with_capacity(1 + 2 * size);
                point.push(0x04);
                point.extend_from_slice(&x);
                point.extend_from_slice(&y);
                // RFC 7638 §3.2: the required members in lexicographic order, no whitespace.
                let canonical = format!(
                    r#"{{"crv":"{crv}","kty":"EC","x":"{}","y":"{}"}}"#,
                    URL_SAFE_NO_PAD.encode(&x),
                    URL_SAFE_NO_PAD.encode(&y)
                );
                (Kind::Ec { point, algorithm }, canonical)
            }
            ("OKP", "EdDSA") => {
                if member(jwk, "crv")? != "Ed25519" {
                    return Err(invalid("only the Ed25519 curve is accepted for EdDSA"));
                }
                let x = base64url(jwk, "x")?;
                if x.len() != 32 {
                    return Err(invalid("the jwk's key has the wrong length"));
                }
                let canonical = format!(
                    r#"{{"crv":"Ed25519","kty":"OKP","x":"{}"}}"#,
                    URL_SAFE_NO_PAD.encode(&x)
                );
                (Kind::Ed25519 { x }, canonical)
            }
            ("RSA", "RS256" | "PS256") => {
                let (n, e) = (base64url(jwk, "n")?, base64url(jwk, "e")?);
                if modulus_bits(&n) < MIN_RSA_BITS {
                    return Err(invalid("RSA keys under 2048 bits are refused"));
                }
                let algorithm = match alg {
                    "RS256" => &signature::RSA_PKCS1_2048_8192_SHA256,
                    _ => &signature::RSA_PSS_2048_8192_SHA256,
                };
                // The thumbprint is over the minimal encoding (RFC 7518 §6.3.1: no leading
                // zero octets), whatever padding the client sent.
                let canonical = format!(
                    r#"{{"e":"{}","kty":"RSA","n":"{}"}}"#,
                    URL_SAFE_NO_PAD.encode(without_leading_zeros(&e)),
                    URL_SAFE_NO_PAD.encode(without_leading_zeros(&n))
                );
                (Kind::Rsa { n, e, algorithm }, canonical)
            }
            ("EC" | "OKP" | "RSA", _) => {
                return Err(invalid("the jwk's key type does not match alg"))
            }
            _ => return Err(invalid("unsupported jwk key type")),
        };
        let thumbprint = URL_SAFE_NO_PAD.encode(digest(&SHA256, canonical.as_bytes()));
        Ok(ProofKey { kind, thumbprint })
    }

    /// RFC 7638 SHA-256 thumbprint, base64url: the `jkt` tokens are bound to.
    pub(crate) fn thumbprint(&self) -> &str {
        &self.thumbprint
    }

    pub(crate) fn verify(&self, message: &[u8], signature: &[u8]) -> Result<(), JoseError> {
        let verified = match &self.kind {
            Kind::Ec { point, algorithm } => {
                UnparsedPublicKey::new(*algorithm, point).verify(message, signature)
            }
            Kind::Ed25519 { x } => {
                UnparsedPublicKey::new(&signature::ED25519, x).verify(message, signature)
            }
            Kind::Rsa { n, e, algorithm } => {
                RsaPublicKeyComponents { n, e }.verify(algorithm, message, signature)
            }
        };
        verified.map_err(|_| invalid("the proof's signature does not verify with its jwk"))
    }
}

fn without_leading_zeros(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|&b| b != 0).unwrap_or(bytes.len());
    bytes.get(start..).unwrap_or_default()
}
