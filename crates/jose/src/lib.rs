//! JOSE for fieldauth: RS256 JWT signing and verification, JWKS, the signing-key lifecycle,
//! and DPoP proofs (RFC 9449).
//!
//! The crate does no I/O and reads no clock of its own: callers pass `now` (from a [`Clock`])
//! and keys (from the store) in. Every error is a [`JoseError`] whose message carries no token
//! or key material.

mod claims;
mod clock;
mod dpop;
mod error;
mod json_string;
mod jwks;
mod rotation;
mod sign;
mod verify;

pub use claims::{
    AccessTokenClaims, BackchannelLogoutEvent, Confirmation, IdTokenClaims, LogoutEvents,
    LogoutTokenClaims,
};
pub use clock::{Clock, ManualClock, SystemClock, UnixTime};
pub use dpop::{
    challenge as dpop_challenge, check_presentation, presented_token, verify_proof, BindingError,
    Proof, ProofRequest, Scheme, DPOP_ALGORITHMS, PROOF_WINDOW,
};
pub use error::JoseError;
pub use json_string::write_json_string;
pub use jwks::{Jwk, Jwks};
pub use rotation::{
    generate_signing_key, signing_key_index, GeneratedKey, KeyRing, SigningKey,
    PUBLISH_BEFORE_SIGNING,
};
pub use sign::at_hash;
pub use verify::{bearer_token, decode_header, verify_jwt, Header, Validation, VerificationKeys};
