//! The one error type of the crate. Messages are fixed sentences: they never carry token, claim or
//! key material, so a caller may log them (and map them to the wire) without redacting.

/// Everything that can go wrong while generating keys, signing or verifying a JWT.
#[derive(Debug, thiserror::Error)]
pub enum JoseError {
    /// The RSA key pair could not be generated or serialized.
    #[error("signing key generation failed")]
    KeyGeneration,
    /// A key (PKCS#8 private key or JWK public key) was refused; the reason is a fixed phrase.
    #[error("invalid key: {0}")]
    InvalidKey(&'static str),
    /// The RSA signature operation failed.
    #[error("signing failed")]
    Signing,
    /// The claims could not be serialized to JSON.
    #[error("claims could not be serialized")]
    Serialize(#[source] serde_json::Error),
    /// The token is not three base64url parts of JSON objects of the expected shape; the reason is
    /// a fixed phrase (the parser's own message may quote the input, so it is dropped).
    #[error("malformed token: {0}")]
    Malformed(&'static str),
    /// The header's `alg` is anything but `RS256` (RFC 8725 §3.1: `none`, HS256, …).
    #[error("unsupported signature algorithm")]
    UnsupportedAlgorithm,
    /// The header's `typ` is missing or not the one expected (RFC 8725 §3.11).
    #[error("unexpected token type")]
    UnexpectedType,
    /// The header has no `kid`, or a `kid` that is not in the key set.
    #[error("unknown signing key")]
    UnknownKey,
    /// The signature does not verify with the key named by `kid`.
    #[error("bad signature")]
    BadSignature,
    /// `now` is at or past `exp` (plus leeway), RFC 7519 §4.1.4.
    #[error("token expired")]
    Expired,
    /// `now` is before `nbf` (minus leeway), RFC 7519 §4.1.5.
    #[error("token not yet valid")]
    NotYetValid,
    /// `iss` differs from the expected issuer.
    #[error("unexpected issuer")]
    InvalidIssuer,
    /// `aud` neither equals nor contains the expected audience.
    #[error("token not intended for this audience")]
    InvalidAudience,
    /// A required claim is absent; the name is the claim's wire name.
    #[error("missing claim: {0}")]
    MissingClaim(&'static str),
    /// A DPoP proof (RFC 9449 §4.3) failed a check; the reason is a fixed phrase a client
    /// may be shown (`error_description` of `invalid_dpop_proof`).
    #[error("invalid DPoP proof: {0}")]
    InvalidProof(&'static str),
}
