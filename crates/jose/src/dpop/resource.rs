//! A protected resource's side of DPoP (RFC 9449 §7): how an access token was presented,
//! and whether that presentation fits the token's binding. Shared by userinfo and the API,
//! which each add the replay check (state) and their own error form.

use super::{verify_proof, Proof, ProofRequest};
use crate::{JoseError, UnixTime};

/// The `Authorization` scheme an access token came with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// RFC 6750 §2.1.
    Bearer,
    /// RFC 9449 §7.1.
    Dpop,
}

/// The scheme and token of an `Authorization` value (schemes are case-insensitive, RFC 9110
/// §11.1); `None` for any other scheme or an empty token.
pub fn presented_token(authorization: &str) -> Option<(Scheme, &str)> {
    let (scheme, token) = authorization.split_once(' ')?;
    let token = token.trim();
    let scheme = if scheme.eq_ignore_ascii_case("bearer") {
        Scheme::Bearer
    } else if scheme.eq_ignore_ascii_case("dpop") {
        Scheme::Dpop
    } else {
        return None;
    };
    (!token.is_empty()).then_some((scheme, token))
}

/// Why a presentation does not fit: RFC 9449 §7.1's two error codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BindingError {
    /// `invalid_token`: the token was presented with the wrong scheme for its binding.
    InvalidToken(&'static str),
    /// `invalid_dpop_proof`: the proof is missing, invalid, or by another key.
    InvalidProof(&'static str),
}

/// The presentation of a verified access token (`jkt`: its `cnf.jkt`), checked against its
/// binding: a bound token only with the DPoP scheme and one valid proof by its key (§7.1), an
/// unbound one only as a Bearer token. `request.access_token` is set from `token`. Returns
/// the proof, whose replay the caller must still rule out.
pub fn check_presentation(
    scheme: Scheme,
    token: &str,
    jkt: Option<&str>,
    proofs: &[&str],
    method: &str,
    url: &str,
    now: UnixTime,
) -> Result<Option<Proof>, BindingError> {
    let Some(jkt) = jkt else {
        return match scheme {
            Scheme::Bearer => Ok(None),
            Scheme::Dpop => Err(BindingError::InvalidToken(
                "the access token is not bound to a DPoP key: present it as a Bearer token",
            )),
        };
    };
    if scheme == Scheme::Bearer {
        return Err(BindingError::InvalidToken(
            "the access token is bound to a DPoP key: present it with the DPoP scheme and a proof",
        ));
    }
    let [proof] = proofs else {
        return Err(BindingError::InvalidProof(
            "exactly one DPoP header is required",
        ));
    };
    let request = ProofRequest {
        method,
        url,
        access_token: Some(token),
        now,
    };
    let proof = verify_proof(proof, &request).map_err(|error| match error {
        JoseError::InvalidProof(why) => BindingError::InvalidProof(why),
        _ => BindingError::InvalidProof("the proof could not be checked"),
    })?;
    if proof.jkt != jkt {
        return Err(BindingError::InvalidProof(
            "the proof is not signed by the key the access token is bound to",
        ));
    }
    Ok(Some(proof))
}

/// The `WWW-Authenticate` value of a refusal (§7.1): the error, its description, and the
/// proof algorithms accepted. `description` is one of our fixed phrases (no quotes).
pub fn challenge(error: &str, description: &str) -> String {
    format!(
        r#"DPoP error="{error}", error_description="{description}", algs="{}""#,
        super::DPOP_ALGORITHMS.join(" ")
    )
}
