//! The authorization server's one error type, and the one place its JSON form (token,
//! revoke, userinfo, discovery) meets the wire. Pages render it in `pages.rs`.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    /// The tenant, client or redirect URI cannot be trusted: shown, never redirected
    /// (RFC 6749 §4.1.2.1).
    #[error("untrusted authorization request: {0}")]
    UntrustedRequest(&'static str),
    /// An authorization error for a verified redirect URI.
    #[error("authorization error {}", .0.error.as_str())]
    Redirect(Box<crate::authorize::redirect::ErrorRedirect>),
    /// A sign-in or consent form that cannot continue: expired, replayed, altered, from
    /// another browser.
    #[error("authorization flow refused: {0}")]
    InvalidFlow(&'static str),
    /// RFC 6749 §5.2 `invalid_request`.
    #[error("malformed request: {0}")]
    InvalidForm(&'static str),
    /// RFC 6749 §5.2 `invalid_client`: 401 with a `WWW-Authenticate` challenge.
    #[error("client authentication failed: {0}")]
    InvalidClient(&'static str),
    /// RFC 6749 §5.2 `invalid_grant`.
    #[error("invalid grant: {0}")]
    InvalidGrant(&'static str),
    #[error("unsupported grant type")]
    UnsupportedGrantType,
    /// RFC 6749 §5.2 `invalid_scope`.
    #[error("invalid scope: {0}")]
    InvalidScope(&'static str),
    /// RFC 7009 §2.2.1.
    #[error("unsupported token type")]
    UnsupportedTokenType,
    /// RFC 6750 §3.1 `invalid_token`.
    #[error("invalid access token: {0}")]
    InvalidToken(&'static str),
    /// RFC 9449 §5 `invalid_dpop_proof` at the token endpoint (400).
    #[error("invalid DPoP proof: {0}")]
    InvalidDpopProof(&'static str),
    /// RFC 9449 §8 `use_dpop_nonce`: the token request's proof must carry a nonce we handed
    /// out; the response's `DPoP-Nonce` header has one.
    #[error("a DPoP nonce is required")]
    UseDpopNonce,
    /// RFC 9449 §7.1 `invalid_token` for a token presented with the `DPoP` scheme (401 with
    /// a DPoP challenge).
    #[error("invalid DPoP-bound access token: {0}")]
    DpopInvalidToken(&'static str),
    /// RFC 9449 §7.1 `invalid_dpop_proof` at a protected resource (401 with a DPoP
    /// challenge).
    #[error("invalid DPoP proof: {0}")]
    DpopInvalidProof(&'static str),
    /// RFC 6750 §3.1 `insufficient_scope`; the scope that is needed.
    #[error("insufficient scope: {0} is needed")]
    InsufficientScope(&'static str),
    #[error("invalid issuer URL: {0}")]
    InvalidIssuer(&'static str),
    #[error("invalid redirect URI: {0}")]
    InvalidRedirectUri(&'static str),
    #[error("invalid web origin: {0}")]
    InvalidWebOrigin(&'static str),
    #[error("invalid username: {0}")]
    InvalidUsername(&'static str),
    #[error("invalid client_id: {0}")]
    InvalidClientId(&'static str),
    #[error("unknown scope")]
    UnknownScope,
    #[error("password hashing failed")]
    PasswordHash,
    #[error("the system random generator failed")]
    Randomness,
    #[error("a blocking task failed")]
    Blocking,
    #[error("no signing key is available")]
    NoSigningKey,
    /// The stored keys kept changing while this node sealed them.
    #[error("the signing keys changed while they were being sealed; try again")]
    KeysChanging,
    /// A signing key's private half could not be sealed or opened (`sealing.rs`).
    #[error("signing key {kid}")]
    KeySealing {
        kid: String,
        #[source]
        error: crate::sealing::SealError,
    },
    #[error("signing or key handling failed")]
    Jose(#[from] jose::JoseError),
    #[error("storage failure")]
    Store(#[from] store::StoreError),
    /// The binary's request deadline passed (a database that stopped answering mid-request).
    #[error("the request deadline passed")]
    TimedOut,
    /// `--smtp-url` or `--mail-from` cannot be used; the reason never repeats the URL.
    #[error("{flag}: {why}")]
    InvalidMailSetting {
        flag: &'static str,
        why: &'static str,
    },
    #[error("the mail message could not be built")]
    MailMessage(#[source] lettre::error::Error),
    /// The SMTP server could not be reached or refused the message.
    #[error("the mail server did not take the message")]
    MailDelivery(#[source] lettre::transport::smtp::Error),
    /// The WebAuthn library could not start a ceremony or serialize its state (passkeys).
    #[error("passkeys: {0}")]
    Passkey(&'static str),
    /// A TOTP secret could not be sealed or opened with the KEKs given (issue 24).
    #[error("a second factor's secret could not be sealed or opened")]
    FactorSealing(#[source] crate::sealing::SealError),
}

/// How an error goes out as JSON: status, RFC error code, description, challenge.
struct Wire {
    status: StatusCode,
    code: &'static str,
    description: Option<String>,
    challenge: Option<String>,
}

impl OAuthError {
    /// The RFC error code this error goes out with.
    pub fn code(&self) -> &'static str {
        self.wire().code
    }

    fn wire(&self) -> Wire {
        let client = |status, code, description: &str| Wire {
            status,
            code,
            description: Some(description.to_owned()),
            challenge: None,
        };
        let server = |status, code| Wire {
            status,
            code,
            description: None,
            challenge: None,
        };
        match self {
            OAuthError::InvalidForm(d)
            | OAuthError::UntrustedRequest(d)
            | OAuthError::InvalidFlow(d) => client(StatusCode::BAD_REQUEST, "invalid_request", d),
            OAuthError::Redirect(r) => {
                client(StatusCode::BAD_REQUEST, "invalid_request", r.description)
            }
            OAuthError::InvalidClient(d) => Wire {
                challenge: Some(r#"Basic realm="fieldauth""#.to_owned()),
                ..client(StatusCode::UNAUTHORIZED, "invalid_client", d)
            },
            OAuthError::InvalidGrant(d) => client(StatusCode::BAD_REQUEST, "invalid_grant", d),
            OAuthError::UnsupportedGrantType => client(
                StatusCode::BAD_REQUEST,
                "unsupported_grant_type",
                "only authorization_code and refresh_token are supported",
            ),
            OAuthError::InvalidScope(d) => client(StatusCode::BAD_REQUEST, "invalid_scope", d),
            OAuthError::UnsupportedTokenType => client(
                StatusCode::BAD_REQUEST,
                "unsupported_token_type",
                "only refresh tokens can be revoked; access tokens expire within the hour",
            ),
            OAuthError::InvalidToken(d) => Wire {
                challenge: Some(format!(
                    r#"Bearer error="invalid_token", error_description="{d}""#
                )),
                ..client(StatusCode::UNAUTHORIZED, "invalid_token", d)
            },
            OAuthError::InvalidDpopProof(d) => {
                client(StatusCode::BAD_REQUEST, "invalid_dpop_proof", d)
            }
            OAuthError::UseDpopNonce => client(
                StatusCode::BAD_REQUEST,
                "use_dpop_nonce",
                "make the DPoP proof again with the nonce of the DPoP-Nonce header",
            ),
            OAuthError::DpopInvalidToken(d) => Wire {
                challenge: Some(jose::dpop_challenge("invalid_token", d)),
                ..client(StatusCode::UNAUTHORIZED, "invalid_token", d)
            },
            OAuthError::DpopInvalidProof(d) => Wire {
                challenge: Some(jose::dpop_challenge("invalid_dpop_proof", d)),
                ..client(StatusCode::UNAUTHORIZED, "invalid_dpop_proof", d)
            },
            OAuthError::InsufficientScope(scope) => Wire {
                challenge: Some(format!(
                    r#"Bearer error="insufficient_scope", scope="{scope}""#
                )),
                ..client(
                    StatusCode::FORBIDDEN,
                    "insufficient_scope",
                    &format!("the {scope} scope is needed"),
                )
            },
            OAuthError::Store(store::StoreError::Unavailable(_)) | OAuthError::TimedOut => {
                server(StatusCode::SERVICE_UNAVAILABLE, "temporarily_unavailable")
            }
            OAuthError::InvalidIssuer(_)
            | OAuthError::InvalidRedirectUri(_)
            | OAuthError::InvalidWebOrigin(_)
            | OAuthError::InvalidUsername(_)
            | OAuthError::InvalidClientId(_)
            | OAuthError::UnknownScope
            | OAuthError::PasswordHash
            | OAuthError::Randomness
            | OAuthError::Blocking
            | OAuthError::NoSigningKey
            | OAuthError::KeySealing { .. }
            | OAuthError::KeysChanging
            | OAuthError::Jose(_)
            | OAuthError::InvalidMailSetting { .. }
            | OAuthError::MailMessage(_)
            | OAuthError::MailDelivery(_)
            | OAuthError::Passkey(_)
            | OAuthError::FactorSealing(_)
            | OAuthError::Store(_) => server(StatusCode::INTERNAL_SERVER_ERROR, "server_error"),
        }
    }
}

impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        let wire = self.wire();
        // The detail is logged once, here; a client learns the RFC error code and our own
        // fixed description, never a library's message.
        match wire.status.is_server_error() {
            true => tracing::error!(error = %error_chain(&self), "request failed"),
            false => tracing::debug!(error = %self, "request refused"),
        }
        let body = match &wire.description {
            Some(description) => json!({ "error": wire.code, "error_description": description }),
            None => json!({ "error": wire.code }),
        };
        let mut response = (wire.status, body.to_string()).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
        if let Some(challenge) = wire.challenge.and_then(|c| HeaderValue::from_str(&c).ok()) {
            headers.insert(header::WWW_AUTHENTICATE, challenge);
        }
        response
    }
}

/// The error and its sources on one line, for the log.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
