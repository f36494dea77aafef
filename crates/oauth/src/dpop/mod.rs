//! DPoP (RFC 9449) at the authorization server: the proof of a token request (§5), the
//! nonces it asks for (§8), and the check of a bound access token at userinfo (§7).

mod nonce;

use axum::http::HeaderMap;
use jose::{BindingError, Proof, ProofRequest, Scheme, UnixTime};
use store::{Client, TenantStore};

pub use nonce::Nonces;

use crate::error::OAuthError;
use crate::paths;
use crate::state::OAuthState;

/// The `DPoP` request header (§4.1).
pub const DPOP: &str = "dpop";
/// The response header that hands out a nonce (§8.1).
pub const DPOP_NONCE: &str = "dpop-nonce";

/// The values of the request's `DPoP` headers; one that is not visible ASCII counts as a
/// malformed proof.
pub fn proof_headers(headers: &HeaderMap) -> Result<Vec<&str>, &'static str> {
    headers
        .get_all(DPOP)
        .iter()
        .map(|value| value.to_str().map_err(|_| "the DPoP header is not a JWT"))
        .collect()
}

/// The proof of a token request, checked as §4.3 and §5 ask: none when the request has no
/// `DPoP` header; else exactly one proof of this request, made after one of our nonces
/// (`use_dpop_nonce` until it is), and never seen before in `tenant`. `tenant` is `None`
/// when the request names no tenant: it then fails as a grant before anything is issued.
pub async fn token_request_proof(
    state: &OAuthState,
    headers: &HeaderMap,
    tenant: Option<TenantStore<'_>>,
    now: UnixTime,
) -> Result<Option<Proof>, OAuthError> {
    let proofs = proof_headers(headers).map_err(OAuthError::InvalidDpopProof)?;
    let proof = match proofs.as_slice() {
        [] => return Ok(None),
        [proof] => *proof,
        _ => {
            return Err(OAuthError::InvalidDpopProof(
                "exactly one DPoP header is allowed",
            ))
        }
    };
    let url = state.config.issuer.endpoint(paths::TOKEN);
    let request = ProofRequest {
        method: "POST",
        url: &url,
        access_token: None,
        now,
    };
    let proof = jose::verify_proof(proof, &request).map_err(proof_error)?;
    let nonce_ok = proof
        .nonce
        .as_deref()
        .is_some_and(|nonce| Nonces::accepts(state, nonce, now));
    if !nonce_ok {
        return Err(OAuthError::UseDpopNonce);
    }
    if let Some(tenant) = tenant {
        remember(&tenant, &proof, now, OAuthError::InvalidDpopProof).await?;
    }
    Ok(Some(proof))
}

/// RFC 9449 §5.2: a client registered with `dpop_bound_access_tokens` gets no tokens
/// without a proof.
pub fn require_proof(client: &Client, proof: Option<&Proof>) -> Result<(), OAuthError> {
    match (client.dpop_bound_access_tokens, proof) {
        (true, None) => Err(OAuthError::InvalidDpopProof(
            "this client must send a DPoP proof with every token request",
        )),
        _ => Ok(()),
    }
}

/// A bound access token at a resource of this server (userinfo), checked as §7.1 asks.
pub async fn check_presentation(
    state: &OAuthState,
    headers: &HeaderMap,
    presented: (Scheme, &str),
    jkt: Option<&str>,
    tenant: &TenantStore<'_>,
    (method, path): (&str, &str),
    now: UnixTime,
) -> Result<(), OAuthError> {
    let (scheme, token) = presented;
    let proofs = proof_headers(headers).map_err(OAuthError::DpopInvalidProof)?;
    let url = state.config.issuer.endpoint(path);
    let checked = jose::check_presentation(scheme, token, jkt, &proofs, method, &url, now);
    match checked {
        Ok(None) => Ok(()),
        Ok(Some(proof)) => remember(tenant, &proof, now, OAuthError::DpopInvalidProof).await,
        Err(BindingError::InvalidToken(why)) if scheme == Scheme::Bearer => {
            Err(OAuthError::InvalidToken(why))
        }
        Err(BindingError::InvalidToken(why)) => Err(OAuthError::DpopInvalidToken(why)),
        Err(BindingError::InvalidProof(why)) => Err(OAuthError::DpopInvalidProof(why)),
    }
}

/// §11.1: a proof is accepted once, on every node, for as long as its `iat` is acceptable.
async fn remember(
    tenant: &TenantStore<'_>,
    proof: &Proof,
    now: UnixTime,
    refused: fn(&'static str) -> OAuthError,
) -> Result<(), OAuthError> {
    let fresh = tenant
        .remember_dpop_proof(&proof.replay_key(), proof.remember_until(), now)
        .await?;
    match fresh {
        true => Ok(()),
        false => Err(refused("the proof was already used")),
    }
}

fn proof_error(error: jose::JoseError) -> OAuthError {
    match error {
        jose::JoseError::InvalidProof(why) => OAuthError::InvalidDpopProof(why),
        _ => OAuthError::InvalidDpopProof("the proof could not be checked"),
    }
}
