//! DPoP proofs (RFC 9449 §4): a JWT the client signs with a key it holds and sends in the
//! `DPoP` header of one HTTP request. [`verify_proof`] makes the checks of §4.3 that need
//! nothing but the request: syntax, `typ`, `alg`, the signature by the embedded `jwk`, `htm`,
//! `htu`, `iat` within the window and, beside an access token, `ath`. What needs state is the
//! caller's: that the `jti` was not seen before ([`Proof::replay_key`]) and, where the server
//! asks for one, the `nonce`.

mod key;
mod resource;

use aws_lc_rs::digest::{digest, SHA256};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::{Map, Value};

pub use key::DPOP_ALGORITHMS;
pub use resource::{challenge, check_presentation, presented_token, BindingError, Scheme};

use crate::verify::{decode_part, is_json_object, media_type_eq, numeric_date, split};
use crate::{JoseError, UnixTime};

/// A proof is accepted this many seconds either side of its `iat` (§11.1: a short window).
pub const PROOF_WINDOW: i64 = 60;

/// Longest `DPoP` header accepted: a proof with an RSA-8192 `jwk` fits.
const MAX_PROOF_LEN: usize = 8 * 1024;

/// Longest `jti` accepted (a UUID or 32 random bytes are far under).
const MAX_JTI_LEN: usize = 256;

/// The request a proof must match.
#[derive(Clone, Copy, Debug)]
pub struct ProofRequest<'a> {
    /// The HTTP method, compared exactly (`htm`).
    pub method: &'a str,
    /// The URL the server publishes for this endpoint (`htu` is compared with it, query and
    /// fragment left out, after RFC 3986 §6 normalization of both).
    pub url: &'a str,
    /// The access token sent with the proof, whose hash `ath` must be (§4.3 item 11).
    pub access_token: Option<&'a str>,
    pub now: UnixTime,
}

/// A proof that passed every stateless check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Proof {
    /// RFC 7638 SHA-256 thumbprint of the proof's key: what a bound token's `cnf.jkt` holds.
    pub jkt: String,
    pub jti: String,
    pub iat: UnixTime,
    /// The server-provided nonce, when the proof carries one (§8, §9).
    pub nonce: Option<String>,
}

impl Proof {
    /// What a replay cache keeps of this proof: SHA-256 over the key's thumbprint and the
    /// `jti`, so one client's identifiers can never collide with another's.
    pub fn replay_key(&self) -> [u8; 32] {
        let mut input = Vec::with_capacity(self.jkt.len() + 1 + self.jti.len());
        input.extend_from_slice(self.jkt.as_bytes());
        input.push(0);
        input.extend_from_slice(self.jti.as_bytes());
        let mut key = [0u8; 32];
        key.copy_from_slice(digest(&SHA256, &input).as_ref());
        key
    }

    /// Until when a replay cache must remember it: after that its `iat` is out of the window.
    pub fn remember_until(&self) -> UnixTime {
        self.iat.saturating_add(PROOF_WINDOW + 1)
    }
}

#[derive(Deserialize)]
struct ProofHeader {
    typ: Option<String>,
    alg: String,
    jwk: Option<Map<String, Value>>,
    #[serde(default)]
    crit: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct ProofClaims {
    jti: Option<String>,
    htm: Option<String>,
    htu: Option<String>,
    iat: Option<serde_json::Number>,
    ath: Option<String>,
    nonce: Option<String>,
}

/// The checks of RFC 9449 §4.3 that need no state, in its order.
pub fn verify_proof(proof: &str, request: &ProofRequest) -> Result<Proof, JoseError> {
    let invalid = JoseError::InvalidProof;
    if proof.len() > MAX_PROOF_LEN {
        return Err(invalid("the proof is too long"));
    }
    let parts = split(proof).map_err(|_| invalid("the proof is not a compact JWS"))?;
    let header_json = decode_part(parts.header, "").map_err(|_| invalid("malformed header"))?;
    if !is_json_object(&header_json) {
        return Err(invalid("malformed header"));
    }
    let header: ProofHeader =
        serde_json::from_slice(&header_json).map_err(|_| invalid("malformed header"))?;
    if !header
        .typ
        .as_deref()
        .is_some_and(|typ| media_type_eq(typ, "dpop+jwt"))
    {
        return Err(invalid("typ must be dpop+jwt"));
    }
    if !DPOP_ALGORITHMS.contains(&header.alg.as_str()) {
        return Err(invalid("unsupported alg"));
    }
    if header.crit.is_some() {
        return Err(invalid("critical header extension not understood"));
    }
    let jwk = header.jwk.ok_or(invalid("the header has no jwk"))?;
    let key = key::ProofKey::from_jwk(&jwk, &header.alg)?;
    let signature = decode_part(parts.signature, "").map_err(|_| invalid("malformed signature"))?;
    key.verify(parts.signing_input.as_bytes(), &signature)?;

    let payload = decode_part(parts.payload, "").map_err(|_| invalid("malformed claims"))?;
    if !is_json_object(&payload) {
        return Err(invalid("malformed claims"));
    }
    let claims: ProofClaims =
        serde_json::from_slice(&payload).map_err(|_| invalid("malformed claims"))?;
    let jti = claims.jti.ok_or(invalid("the proof has no jti"))?;
    if jti.is_empty() || jti.len() > MAX_JTI_LEN {
        return Err(invalid("jti must have 1 to 256 characters"));
    }
    if claims.htm.as_deref() != Some(request.method) {
        return Err(invalid("htm is not this request's method"));
    }
    let htu = claims.htu.ok_or(invalid("the proof has no htu"))?;
    if !same_target(&htu, request.url) {
        return Err(invalid("htu is not this endpoint's URL"));
    }
    let iat = claims.iat.ok_or(invalid("the proof has no iat"))?;
    let iat = numeric_date(&iat, f64::floor);
    if iat.abs_diff(request.now) > PROOF_WINDOW.unsigned_abs() {
        return Err(invalid("iat is outside the accepted window"));
    }
    if let Some(token) = request.access_token {
        let expected = URL_SAFE_NO_PAD.encode(digest(&SHA256, token.as_bytes()));
        match claims.ath {
            None => return Err(invalid("the proof has no ath for the access token")),
            Some(ath) if ath != expected => {
                return Err(invalid("ath is not the hash of this access token"))
            }
            Some(_) => {}
        }
    }
    Ok(Proof {
        jkt: key.thumbprint().to_owned(),
        jti,
        iat,
        nonce: claims.nonce,
    })
}

/// §4.3 item 9: `htu` and the endpoint's URL name the same target once both are normalized
/// (RFC 3986 §6: scheme and host case, default port, dot segments), ignoring query and
/// fragment.
fn same_target(htu: &str, endpoint: &str) -> bool {
    let target = |value: &str| {
        url::Url::parse(value).ok().map(|mut url| {
            url.set_query(None);
            url.set_fragment(None);
            url
        })
    };
    match (target(htu), target(endpoint)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

#[cfg(test)]
mod tests;
