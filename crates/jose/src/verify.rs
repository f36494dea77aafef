//! Verification: RS256 compact JWS against a JWKS, then the registered claims (RFC 7519 §4.1),
//! following the JWT best current practices of RFC 8725.

use std::borrow::Cow;
use std::fmt;

use aws_lc_rs::signature::{ParsedPublicKey, RsaPublicKeyComponents, RSA_PKCS1_2048_8192_SHA256};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::de::{DeserializeOwned, IgnoredAny};
use serde::Deserialize;

use crate::{JoseError, Jwks, UnixTime};

/// RFC 7518 §3.3: RS256 keys of 2048 bits or more.
const MIN_MODULUS_BITS: usize = 2048;

/// Public keys parsed once from a JWKS, looked up by `kid`.
#[derive(Clone)]
pub struct VerificationKeys {
    keys: Vec<(String, ParsedPublicKey)>,
}

impl VerificationKeys {
    /// Parse every key of `jwks`. A key that is not an RSA `sig` key for RS256, not valid
    /// base64url, or under 2048 bits fails the whole set; of two keys sharing a `kid` the first
    /// wins.
    pub fn from_jwks(jwks: &Jwks) -> Result<Self, JoseError> {
        let mut keys: Vec<(String, ParsedPublicKey)> = Vec::with_capacity(jwks.keys.len());
        for jwk in &jwks.keys {
            if jwk.kty != "RSA" || jwk.use_ != "sig" || jwk.alg != "RS256" {
                return Err(JoseError::InvalidKey("not an RSA key for RS256 signatures"));
            }
            if keys.iter().any(|(kid, _)| *kid == jwk.kid) {
                continue;
            }
            let n = URL_SAFE_NO_PAD
                .decode(&jwk.n)
                .map_err(|_| JoseError::InvalidKey("modulus is not base64url"))?;
            let e = URL_SAFE_NO_PAD
                .decode(&jwk.e)
                .map_err(|_| JoseError::InvalidKey("exponent is not base64url"))?;
            if modulus_bits(&n) < MIN_MODULUS_BITS {
                return Err(JoseError::InvalidKey("RSA modulus under 2048 bits"));
            }
            let parsed = RsaPublicKeyComponents { n, e }
                .to_parsed_public_key(&RSA_PKCS1_2048_8192_SHA256)
                .map_err(|_| JoseError::InvalidKey("not a valid RSA public key"))?;
            keys.push((jwk.kid.clone(), parsed));
        }
        Ok(VerificationKeys { keys })
    }

    /// Whether a key with this `kid` is known.
    pub fn contains(&self, kid: &str) -> bool {
        self.find(kid).is_some()
    }

    fn find(&self, kid: &str) -> Option<&ParsedPublicKey> {
        // A JWKS holds a handful of keys: a scan beats hashing.
        self.keys
            .iter()
            .find(|(known, _)| known == kid)
            .map(|(_, key)| key)
    }
}

impl fmt::Debug for VerificationKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.keys.iter().map(|(kid, _)| kid))
            .finish()
    }
}

/// Significant bits of a big-endian unsigned integer.
pub(crate) fn modulus_bits(n: &[u8]) -> usize {
    match n.iter().position(|&b| b != 0) {
        Some(i) => (n.len() - i) * 8 - n.get(i).map_or(0, |b| b.leading_zeros() as usize),
        None => 0,
    }
}

/// What a token must satisfy besides its signature.
#[derive(Clone, Copy, Debug)]
pub struct Validation<'a> {
    /// Expected `typ` header, e.g. `at+jwt` (RFC 9068 §4) or `JWT`.
    pub typ: &'a str,
    /// Expected `iss`, exactly.
    pub issuer: &'a str,
    /// A value `aud` must equal or, when an array, contain.
    pub audience: &'a str,
    /// The current time, read once by the caller.
    pub now: UnixTime,
    /// Seconds of clock skew tolerated on `exp` and `nbf`.
    pub leeway: i64,
}

/// The JOSE header of a token, decoded but not verified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub alg: String,
    pub typ: Option<String>,
    pub kid: Option<String>,
}

#[derive(Deserialize)]
struct RawHeader<'a> {
    #[serde(borrow)]
    alg: Cow<'a, str>,
    #[serde(borrow, default)]
    typ: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    kid: Option<Cow<'a, str>>,
    #[serde(default)]
    crit: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct RegisteredClaims<'a> {
    #[serde(borrow, default)]
    iss: Option<Cow<'a, str>>,
    #[serde(default)]
    aud: Option<Audience>,
    #[serde(default)]
    exp: Option<serde_json::Number>,
    #[serde(default)]
    nbf: Option<serde_json::Number>,
}

/// RFC 7519 §4.1.3: a single string or an array of strings.
#[derive(Deserialize)]
#[serde(untagged)]
enum Audience {
    One(String),
    Many(Vec<String>),
}

impl Audience {
    fn contains(&self, audience: &str) -> bool {
        match self {
            Audience::One(one) => one == audience,
            Audience::Many(many) => many.iter().any(|a| a == audience),
        }
    }
}

pub(crate) struct Parts<'t> {
    pub(crate) signing_input: &'t str,
    pub(crate) header: &'t str,
    pub(crate) payload: &'t str,
    pub(crate) signature: &'t str,
}

/// RFC 7515 §7.1: exactly three base64url parts separated by dots.
pub(crate) fn split(token: &str) -> Result<Parts<'_>, JoseError> {
    let mut parts = token.split('.');
    let (Some(header), Some(payload), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(JoseError::Malformed("not three dot-separated parts"));
    };
    let signing_input = token
        .get(..header.len() + 1 + payload.len())
        .ok_or(JoseError::Malformed("not three dot-separated parts"))?;
    Ok(Parts {
        signing_input,
        header,
        payload,
        signature,
    })
}

pub(crate) fn decode_part(part: &str, what: &'static str) -> Result<Vec<u8>, JoseError> {
    URL_SAFE_NO_PAD
        .decode(part)
        .map_err(|_| JoseError::Malformed(what))
}

fn parse_header(json: &[u8]) -> Result<RawHeader<'_>, JoseError> {
    if !is_json_object(json) {
        return Err(JoseError::Malformed("header is not a JSON object"));
    }
    serde_json::from_slice(json).map_err(|_| JoseError::Malformed("header is not a JOSE header"))
}

/// RFC 7515 §4 and RFC 7519 §7.2: header and claims are JSON objects. Derived `Deserialize`
/// would also accept an array, filling fields by position, so look before parsing.
pub(crate) fn is_json_object(json: &[u8]) -> bool {
    json.trim_ascii_start().first() == Some(&b'{')
}

/// Decode the header without verifying anything, e.g. to pick a key set by `kid`.
pub fn decode_header(token: &str) -> Result<Header, JoseError> {
    let parts = split(token)?;
    let json = decode_part(parts.header, "header is not base64url")?;
    let raw = parse_header(&json)?;
    Ok(Header {
        alg: raw.alg.into_owned(),
        typ: raw.typ.map(Cow::into_owned),
        kid: raw.kid.map(Cow::into_owned),
    })
}

/// Verify an RS256 token's header, signature and registered claims, then deserialize its claims.
/// The claims are not looked at by `C` until every check has passed.
pub fn verify_jwt<C: DeserializeOwned>(
    token: &str,
    keys: &VerificationKeys,
    validation: &Validation,
) -> Result<C, JoseError> {
    let parts = split(token)?;
    let header_json = decode_part(parts.header, "header is not base64url")?;
    let header = parse_header(&header_json)?;
    // RFC 8725 §3.1: one algorithm, fixed by us, checked before the key or signature is used;
    // this refuses `none` and HS256-signed-with-the-public-key.
    if header.alg != "RS256" {
        return Err(JoseError::UnsupportedAlgorithm);
    }
    // RFC 7515 §4.1.11: we understand no extension, so any `crit` header is refused.
    if header.crit.is_some() {
        return Err(JoseError::Malformed(
            "critical header extension not understood",
        ));
    }
    // RFC 8725 §3.11: explicit typing keeps one kind of token from passing as another.
    if !header
        .typ
        .as_deref()
        .is_some_and(|typ| media_type_eq(typ, validation.typ))
    {
        return Err(JoseError::UnexpectedType);
    }
    let key = header
        .kid
        .as_deref()
        .and_then(|kid| keys.find(kid))
        .ok_or(JoseError::UnknownKey)?;
    let signature = decode_part(parts.signature, "signature is not base64url")?;
    key.verify_sig(parts.signing_input.as_bytes(), &signature)
        .map_err(|_| JoseError::BadSignature)?;

    let payload = decode_part(parts.payload, "payload is not base64url")?;
    if !is_json_object(&payload) {
        return Err(JoseError::Malformed("payload is not a JSON object"));
    }
    let claims: RegisteredClaims = serde_json::from_slice(&payload)
        .map_err(|_| JoseError::Malformed("payload is not a JWT claims set"))?;
    check_claims(&claims, validation)?;
    serde_json::from_slice(&payload)
        .map_err(|_| JoseError::Malformed("claims do not have the expected shape"))
}

fn check_claims(claims: &RegisteredClaims, validation: &Validation) -> Result<(), JoseError> {
    // RFC 7519 §4.1.1, RFC 9068 §4: the issuer must match exactly.
    match claims.iss.as_deref() {
        None => return Err(JoseError::MissingClaim("iss")),
        Some(iss) if iss != validation.issuer => return Err(JoseError::InvalidIssuer),
        Some(_) => {}
    }
    // RFC 7519 §4.1.3: refuse a token whose `aud` does not name us.
    match &claims.aud {
        None => return Err(JoseError::MissingClaim("aud")),
        Some(aud) if !aud.contains(validation.audience) => return Err(JoseError::InvalidAudience),
        Some(_) => {}
    }
    // RFC 7519 §4.1.4: valid strictly before `exp`; round a fractional date down.
    let exp = claims.exp.as_ref().ok_or(JoseError::MissingClaim("exp"))?;
    let exp = numeric_date(exp, f64::floor);
    if validation.now >= exp.saturating_add(validation.leeway) {
        return Err(JoseError::Expired);
    }
    // RFC 7519 §4.1.5: valid on or after `nbf`; round a fractional date up.
    if let Some(nbf) = &claims.nbf {
        let nbf = numeric_date(nbf, f64::ceil);
        if validation.now < nbf.saturating_sub(validation.leeway) {
            return Err(JoseError::NotYetValid);
        }
    }
    Ok(())
}

/// RFC 7519 §2 NumericDate: integer seconds, or a non-integer rounded by `round`.
pub(crate) fn numeric_date(value: &serde_json::Number, round: fn(f64) -> f64) -> UnixTime {
    if let Some(seconds) = value.as_i64() {
        seconds
    } else if value.as_u64().is_some() {
        i64::MAX
    } else {
        // `as` saturates: a date beyond i64 is the end of time, not a wrap-around.
        value.as_f64().map_or(i64::MAX, |f| round(f) as i64)
    }
}

/// RFC 7515 §4.1.9: media types compare case-insensitively and `application/` may be omitted.
pub(crate) fn media_type_eq(actual: &str, expected: &str) -> bool {
    without_application(actual).eq_ignore_ascii_case(without_application(expected))
}

fn without_application(media_type: &str) -> &str {
    const PREFIX: &str = "application/";
    match media_type.get(..PREFIX.len()) {
        Some(prefix) if prefix.eq_ignore_ascii_case(PREFIX) => {
            media_type.get(PREFIX.len()..).unwrap_or(media_type)
        }
        _ => media_type,
    }
}

#[cfg(test)]
mod tests;

/// The token of an RFC 6750 §2.1 `Authorization: Bearer <token>` value (the scheme is
/// case-insensitive); `None` for any other scheme or an empty token.
pub fn bearer_token(authorization: &str) -> Option<&str> {
    let (scheme, token) = authorization.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}
