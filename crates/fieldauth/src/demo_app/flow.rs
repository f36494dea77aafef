//! The demo app's part of the flow, as a client does it: make the authorization request,
//! check the callback, exchange the code, verify the ID token, and read what the tokens
//! allow; then refresh and revoke. Handlers call these and render the result.

use jose::{UnixTime, Validation, VerificationKeys};
use oauth::{paths, RandomSource};
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Map, Value};
use url::Url;

use super::oauth_client::{OAuthClient, Shown, TokenAnswer};
use super::sessions::PendingSignIn;
use super::{DemoAppConfig, DemoAppError};

/// Seconds of clock skew tolerated on `exp` and `nbf`.
const LEEWAY: UnixTime = 60;

/// A signed-in browser: its tokens (kept here, never sent to it) and what its page shows.
#[derive(Debug)]
pub struct SignedIn {
    pub access_token: SecretString,
    pub refresh_token: Option<SecretString>,
    /// The ID token's claims, verified.
    pub id_claims: Map<String, Value>,
    /// The access token's claims, verified as the API verifies them.
    pub access_claims: Map<String, Value>,
    pub userinfo: Shown,
    pub api: Shown,
    /// The grant was revoked from this page.
    pub revoked: bool,
}

impl SignedIn {
    /// A claim of the ID token as text, e.g. `preferred_username`.
    pub fn id_claim(&self, name: &str) -> Option<&str> {
        self.id_claims.get(name).and_then(Value::as_str)
    }
}

/// The parameters of the callback (RFC 6749 §4.1.2 and §4.1.2.1, RFC 9207 §2).
#[derive(Debug, Default, serde::Deserialize)]
pub struct CallbackParams {
    pub code: Option<String>,
    pub state: Option<String>,
    pub iss: Option<String>,
    pub error: Option<String>,
    pub error_description: Option<String>,
}

/// A fresh state, nonce and PKCE pair (RFC 7636 §4.1–4.2, S256), and the authorization URL
/// that carries the challenge; the verifier stays in the returned sign-in.
pub fn start_sign_in(
    config: &DemoAppConfig,
    random: &dyn RandomSource,
    login_hint: Option<&str>,
) -> Result<(PendingSignIn, Url), DemoAppError> {
    let token = || random.token().map_err(|_| DemoAppError::Randomness);
    let pending = PendingSignIn {
        state: token()?,
        nonce: token()?,
        code_verifier: SecretString::from(token()?),
    };
    let mut url = Url::parse(&config.issuer.endpoint(paths::AUTHORIZE))
        .map_err(|_| DemoAppError::UnexpectedAnswer("The issuer URL"))?;
    url.query_pairs_mut()
        .append_pair("tenant", &config.tenant)
        .append_pair("response_type", "code")
        .append_pair("client_id", &config.client_id)
        .append_pair("redirect_uri", &config.redirect_uri)
        .append_pair("scope", &config.scope)
        .append_pair(
            "code_challenge",
            &oauth::pkce::s256_challenge(pending.code_verifier.expose_secret()),
        )
        .append_pair("code_challenge_method", "S256")
        .append_pair("state", &pending.state)
        .append_pair("nonce", &pending.nonce);
    if let Some(hint) = login_hint.filter(|h| !h.is_empty()) {
        url.query_pairs_mut().append_pair("login_hint", hint);
    }
    Ok((pending, url))
}

/// The code of a callback that answers `pending`. `state` is checked first, so nothing of a
/// response this browser did not ask for is used or shown.
pub fn check_callback<'p>(
    pending: &PendingSignIn,
    params: &'p CallbackParams,
    issuer: &str,
) -> Result<&'p str, DemoAppError> {
    // RFC 6749 §10.12: the state binds the response to this browser's request.
    if params.state.as_deref() != Some(pending.state.as_str()) {
        return Err(DemoAppError::StateMismatch);
    }
    // RFC 9207 §2.4: the issuer advertises `iss` in responses, so it must be there and be it.
    if params.iss.as_deref() != Some(issuer) {
        return Err(DemoAppError::IssuerMismatch);
    }
    if let Some(error) = &params.error {
        return Err(DemoAppError::AuthorizationError {
            error: error.clone(),
            description: params.error_description.clone(),
        });
    }
    params.code.as_deref().ok_or(DemoAppError::MissingCode)
}

/// Exchanges the code with the PKCE verifier, verifies the ID token (nonce included), and
/// reads userinfo and the API with the access token.
pub async fn complete_sign_in(
    client: &OAuthClient,
    config: &DemoAppConfig,
    pending: &PendingSignIn,
    code: &str,
    now: UnixTime,
) -> Result<SignedIn, DemoAppError> {
    let answer = client.exchange_code(code, &pending.code_verifier).await?;
    let keys = client.keys().await?;
    let id_claims = verify_id_token(&keys, config, &answer, now)?;
    // OpenID Connect Core §3.1.3.7 ¶11: the nonce of this browser's request.
    if id_claims.get("nonce").and_then(Value::as_str) != Some(pending.nonce.as_str()) {
        return Err(DemoAppError::IdTokenRejected(
            "its nonce is not this sign-in's",
        ));
    }
    signed_in(client, &keys, config, answer, id_claims, now).await
}

/// RFC 6749 §6: trades the refresh token for new tokens (the old one is then spent) and
/// reads everything again.
pub async fn refresh(
    client: &OAuthClient,
    config: &DemoAppConfig,
    current: &SignedIn,
    now: UnixTime,
) -> Result<SignedIn, DemoAppError> {
    let refresh_token = current
        .refresh_token
        .as_ref()
        .ok_or(DemoAppError::NotSignedIn)?;
    let answer = client.refresh(refresh_token).await?;
    let keys = client.keys().await?;
    let id_claims = verify_id_token(&keys, config, &answer, now)?;
    // OpenID Connect Core §12.2: a refreshed ID token is about the same person.
    if id_claims.get("sub") != current.id_claims.get("sub") {
        return Err(DemoAppError::IdTokenRejected("its sub changed on refresh"));
    }
    signed_in(client, &keys, config, answer, id_claims, now).await
}

/// RFC 7009: revokes the grant through its refresh token, then asks the API again, which
/// now refuses the access token. The spent refresh token is kept, so a refresh shows the
/// refusal.
pub async fn revoke(client: &OAuthClient, current: &mut SignedIn) -> Result<(), DemoAppError> {
    let refresh_token = current
        .refresh_token
        .as_ref()
        .ok_or(DemoAppError::NotSignedIn)?;
    client.revoke(refresh_token).await?;
    current.revoked = true;
    current.api = client.api_example(&current.access_token).await;
    Ok(())
}

async fn signed_in(
    client: &OAuthClient,
    keys: &VerificationKeys,
    config: &DemoAppConfig,
    answer: TokenAnswer,
    id_claims: Map<String, Value>,
    now: UnixTime,
) -> Result<SignedIn, DemoAppError> {
    // RFC 9068 §4: verified as the API verifies it, to show what the API will read.
    let validation = Validation {
        typ: "at+jwt",
        issuer: config.issuer.as_str(),
        audience: &config.api_url,
        now,
        leeway: LEEWAY,
    };
    let access_claims = jose::verify_jwt(answer.access_token.expose_secret(), keys, &validation)
        .map_err(|e| DemoAppError::TokenRejected("access token", e))?;
    let (userinfo, api) = tokio::join!(
        client.userinfo(&answer.access_token),
        client.api_example(&answer.access_token)
    );
    Ok(SignedIn {
        access_token: answer.access_token,
        refresh_token: answer.refresh_token,
        id_claims,
        access_claims,
        userinfo,
        api,
        revoked: false,
    })
}

/// OpenID Connect Core §3.1.3.7: signature by the issuer's key, `iss`, `aud` (our
/// client_id), `exp`; `azp` when present; and §3.1.3.8 `at_hash`, binding the access token.
fn verify_id_token(
    keys: &VerificationKeys,
    config: &DemoAppConfig,
    answer: &TokenAnswer,
    now: UnixTime,
) -> Result<Map<String, Value>, DemoAppError> {
    let id_token = answer
        .id_token
        .as_ref()
        .ok_or(DemoAppError::IdTokenRejected("the answer has none"))?;
    let validation = Validation {
        typ: "JWT",
        issuer: config.issuer.as_str(),
        audience: &config.client_id,
        now,
        leeway: LEEWAY,
    };
    let claims: Map<String, Value> = jose::verify_jwt(id_token.expose_secret(), keys, &validation)
        .map_err(|e| DemoAppError::TokenRejected("ID token", e))?;
    if claims
        .get("azp")
        .is_some_and(|azp| azp.as_str() != Some(&config.client_id))
    {
        return Err(DemoAppError::IdTokenRejected("azp is another client"));
    }
    let at_hash = jose::at_hash(answer.access_token.expose_secret());
    if claims
        .get("at_hash")
        .is_some_and(|h| h.as_str() != Some(&at_hash))
    {
        return Err(DemoAppError::IdTokenRejected(
            "at_hash does not match the access token",
        ));
    }
    Ok(claims)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending() -> PendingSignIn {
        PendingSignIn {
            state: "s1".into(),
            nonce: "n1".into(),
            code_verifier: SecretString::from("v".to_owned()),
        }
    }

    fn params(pairs: &[(&str, &str)]) -> CallbackParams {
        let get = |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        };
        CallbackParams {
            code: get("code"),
            state: get("state"),
            iss: get("iss"),
            error: get("error"),
            error_description: get("error_description"),
        }
    }

    const ISS: &str = "http://127.0.0.1:8080";

    #[test]
    fn a_callback_gives_its_code_only_with_this_state_and_issuer() {
        let ok = params(&[("code", "c"), ("state", "s1"), ("iss", ISS)]);
        assert_eq!(check_callback(&pending(), &ok, ISS).unwrap(), "c");
        let cases = [
            (
                params(&[("code", "c"), ("state", "s2"), ("iss", ISS)]),
                "StateMismatch",
            ),
            (params(&[("code", "c"), ("iss", ISS)]), "StateMismatch"),
            (
                params(&[("code", "c"), ("state", "s1"), ("iss", "http://evil")]),
                "IssuerMismatch",
            ),
            (params(&[("code", "c"), ("state", "s1")]), "IssuerMismatch"),
            (params(&[("state", "s1"), ("iss", ISS)]), "MissingCode"),
            (
                params(&[("error", "access_denied"), ("state", "s1"), ("iss", ISS)]),
                "AuthorizationError",
            ),
            // An error of a response this browser did not ask for is not shown.
            (
                params(&[("error", "access_denied"), ("state", "s2"), ("iss", ISS)]),
                "StateMismatch",
            ),
        ];
        for (params, expected) in cases {
            let error = check_callback(&pending(), &params, ISS).unwrap_err();
            assert!(format!("{error:?}").starts_with(expected), "{error:?}");
        }
    }
}
