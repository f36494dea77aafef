//! The demo app's calls to fieldauth over HTTP, as any client makes them: the token endpoint
//! (code and refresh grants, RFC 6749 §4.1.3 and §6), revocation (RFC 7009), the JWKS,
//! userinfo and the API. Answers are read into typed values at once; a token never goes into
//! a URL or an error.

use std::sync::Arc;
use std::time::Duration;

use axum::http::{header, StatusCode};
use jose::{Jwks, VerificationKeys};
use oauth::paths;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::{DemoAppConfig, DemoAppError};
use crate::demo::API_EXAMPLE;

const TIMEOUT: Duration = Duration::from_secs(10);
const AUTH_SERVER: &str = "The authorization server";
const TOKEN_ENDPOINT: &str = "The token endpoint";
const REVOCATION_ENDPOINT: &str = "The revocation endpoint";

/// What a page shows of an answer: the JSON, or why there is none.
pub type Shown = Result<Value, String>;

#[derive(Clone, Debug)]
pub struct OAuthClient {
    config: Arc<DemoAppConfig>,
    http: reqwest::Client,
}

/// RFC 6749 §5.1, the tokens held as secrets.
#[derive(Debug)]
pub struct TokenAnswer {
    pub access_token: SecretString,
    pub id_token: Option<SecretString>,
    pub refresh_token: Option<SecretString>,
}

/// The wire form. No `Debug`: it holds the raw tokens.
#[derive(Deserialize)]
struct RawTokenAnswer {
    access_token: String,
    token_type: String,
    #[serde(default)]
    id_token: Option<String>,
    #[serde(default)]
    refresh_token: Option<String>,
}

/// RFC 6749 §5.2.
#[derive(Deserialize)]
struct ErrorAnswer {
    error: String,
    #[serde(default)]
    error_description: Option<String>,
}

impl OAuthClient {
    pub fn new(config: Arc<DemoAppConfig>) -> Result<OAuthClient, DemoAppError> {
        let http = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|_| DemoAppError::Unreachable(AUTH_SERVER))?;
        Ok(OAuthClient { config, http })
    }

    /// RFC 6749 §4.1.3 with RFC 7636 §4.5: a public client sends its `client_id` and the
    /// PKCE verifier.
    pub async fn exchange_code(
        &self,
        code: &str,
        code_verifier: &SecretString,
    ) -> Result<TokenAnswer, DemoAppError> {
        let form = [
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", &self.config.redirect_uri),
            ("client_id", &self.config.client_id),
            ("code_verifier", code_verifier.expose_secret()),
        ];
        self.token_request(&form).await
    }

    /// RFC 6749 §6: the refresh token is rotated, so the answer carries the next one.
    pub async fn refresh(&self, refresh_token: &SecretString) -> Result<TokenAnswer, DemoAppError> {
        let form = [
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token.expose_secret()),
            ("client_id", &self.config.client_id),
        ];
        self.token_request(&form).await
    }

    /// RFC 7009 §2.1: revoking the refresh token ends the whole grant.
    pub async fn revoke(&self, refresh_token: &SecretString) -> Result<(), DemoAppError> {
        let form = [
            ("token", refresh_token.expose_secret()),
            ("token_type_hint", "refresh_token"),
            ("client_id", &self.config.client_id),
        ];
        let response = self
            .http
            .post(self.config.issuer.endpoint(paths::REVOKE))
            .form(&form)
            .send()
            .await
            .map_err(|_| DemoAppError::Unreachable(AUTH_SERVER))?;
        match response.status() {
            StatusCode::OK => Ok(()),
            _ => Err(refusal(response, REVOCATION_ENDPOINT).await),
        }
    }

    /// The issuer's public keys, fetched for each verification (the demo verifies a few
    /// tokens a minute).
    pub async fn keys(&self) -> Result<VerificationKeys, DemoAppError> {
        const JWKS: &str = "The JWKS endpoint";
        let response = self
            .http
            .get(self.config.issuer.endpoint(paths::JWKS))
            .send()
            .await
            .map_err(|_| DemoAppError::Unreachable(AUTH_SERVER))?;
        if response.status() != StatusCode::OK {
            return Err(DemoAppError::UnexpectedAnswer(JWKS));
        }
        let jwks: Jwks = response
            .json()
            .await
            .map_err(|_| DemoAppError::UnexpectedAnswer(JWKS))?;
        VerificationKeys::from_jwks(&jwks).map_err(|_| DemoAppError::UnexpectedAnswer(JWKS))
    }

    /// OpenID Connect Core §5.3: the claims about the user, with the access token.
    pub async fn userinfo(&self, access_token: &SecretString) -> Shown {
        let request = self
            .http
            .get(self.config.issuer.endpoint(paths::USERINFO))
            .bearer_auth(access_token.expose_secret());
        shown(request.send().await, "userinfo").await
    }

    /// The walkthrough's GraphQL query, against `{api_url}/api` with the access token.
    pub async fn api_example(&self, access_token: &SecretString) -> Shown {
        let url = format!("{}/api", self.config.api_url.trim_end_matches('/'));
        let request = self
            .http
            .post(url)
            .bearer_auth(access_token.expose_secret())
            .json(&json!({ "query": API_EXAMPLE }));
        shown(request.send().await, "the API").await
    }

    async fn token_request(&self, form: &[(&str, &str)]) -> Result<TokenAnswer, DemoAppError> {
        let response = self
            .http
            .post(self.config.issuer.endpoint(paths::TOKEN))
            .form(form)
            .send()
            .await
            .map_err(|_| DemoAppError::Unreachable(AUTH_SERVER))?;
        if response.status() != StatusCode::OK {
            return Err(refusal(response, TOKEN_ENDPOINT).await);
        }
        let raw: RawTokenAnswer = response
            .json()
            .await
            .map_err(|_| DemoAppError::UnexpectedAnswer(TOKEN_ENDPOINT))?;
        // RFC 6749 §7.1: the client must understand the token type.
        if !raw.token_type.eq_ignore_ascii_case("bearer") {
            return Err(DemoAppError::UnexpectedAnswer(TOKEN_ENDPOINT));
        }
        Ok(TokenAnswer {
            access_token: SecretString::from(raw.access_token),
            id_token: raw.id_token.map(SecretString::from),
            refresh_token: raw.refresh_token.map(SecretString::from),
        })
    }
}

/// An RFC 6749 §5.2 error answer as a refusal; anything else is unexpected.
async fn refusal(response: reqwest::Response, endpoint: &'static str) -> DemoAppError {
    match response.json::<ErrorAnswer>().await {
        Ok(answer) => DemoAppError::Refused {
            endpoint,
            error: answer.error,
            description: answer.error_description,
        },
        Err(_) => DemoAppError::UnexpectedAnswer(endpoint),
    }
}

/// A JSON answer, or a line saying why there is none: the status and, for a bearer refusal,
/// the RFC 6750 §3 `WWW-Authenticate` challenge (it names the error, never the token).
async fn shown(sent: Result<reqwest::Response, reqwest::Error>, what: &str) -> Shown {
    let response = sent.map_err(|_| format!("{what} did not answer"))?;
    let status = response.status();
    let challenge = response
        .headers()
        .get(header::WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if status != StatusCode::OK {
        return Err(match challenge {
            Some(challenge) => format!("{what} answered {status}: {challenge}"),
            None => format!("{what} answered {status}"),
        });
    }
    let body: Map<String, Value> = response
        .json()
        .await
        .map_err(|_| format!("{what} answered something other than a JSON object"))?;
    Ok(Value::Object(body))
}
