//! The OAuth 2.0 authorization server and OpenID provider: discovery, JWKS, and (in later
//! modules) authorization, token, userinfo and revocation.

mod account;
mod account_password;
pub mod argon2_memory;
pub mod authorize;
mod bearer;
mod client_address;
mod client_id;
mod consent;
pub mod cors;
mod discovery;
mod double_submit;
pub mod dpop;
mod error;
mod events;
mod issuer;
mod jwks;
mod keys;
pub mod logout;
mod mail;
pub mod mfa;
mod pages;
mod params;
pub mod password;
pub mod password_policy;
pub mod paths;
// Passkeys at sign-in (issue 24).
mod passkey_signin;
pub mod pkce;
mod random;
mod recovery;
mod redirect_uri;
mod revoke;
mod scope;
pub mod sealing;
mod second_factor;
pub mod secret;
mod session;
mod signer;
mod signin;
mod state;
pub mod stopping;
mod throttle;
pub mod token;
mod userinfo;
mod username;

use axum::extract::{DefaultBodyLimit, Request};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;

pub use client_address::{ClientAddress, InvalidProxy, TrustedProxies};
pub use client_id::ClientId;
pub use discovery::metadata;
pub use error::{error_chain, OAuthError};
pub use events::{Metrics, RevokeReason};
pub use issuer::Issuer;
pub use keys::{
    check_keys_open, rewrap_stored_keys, rotate_signing_key, seal_stored_keys, signing_index,
    LoadedKeys, SigningKeys,
};
pub use mail::Mailer;
pub use random::{OsRandom, RandomSource};
pub use recovery::RECOVERY_QUOTA_WINDOW;
pub use redirect_uri::RedirectUri;
pub use scope::Scope;
pub use state::{OAuthConfig, OAuthState, SignInSettings};
pub use throttle::{ThrottlePolicy, REQUEST_QUOTA_WINDOW};
pub use username::Username;

/// The answer to a request of the auth listener that ran out of time: the error page on the
/// pages a person sees, RFC 6749's `temporarily_unavailable` everywhere else.
pub fn timed_out(path: &str) -> Response {
    match path {
        paths::AUTHORIZE
        | paths::SIGNIN
        | paths::ACCOUNT_PASSWORD
        | paths::LOGOUT
        | paths::ACCOUNT_RECOVER
        | paths::ACCOUNT
        | paths::ACCOUNT_REMOVE_ACCESS
        | paths::ACCOUNT_CHANGE_PASSWORD
        | paths::ACCOUNT_SIGN_OUT_EVERYWHERE
        | paths::SIGNIN_PASSKEY
        | paths::ACCOUNT_PASSKEY_ADD
        | paths::ACCOUNT_PASSKEY_REMOVE
        | paths::ACCOUNT_TOTP_SETUP
        | paths::ACCOUNT_TOTP_CONFIRM
        | paths::ACCOUNT_TOTP_REMOVE
        | paths::ACCOUNT_RECOVERY_CODES => pages::PageError(OAuthError::TimedOut).into_response(),
        _ => OAuthError::TimedOut.into_response(),
    }
}

/// Refuses a query string over the listener's limits before any handler decodes it. An
/// authorization request is not trusted yet, so it gets the error page, never a redirect
/// (RFC 6749 §4.1.2.1); the other endpoints answer `invalid_request`.
async fn limit_query(request: Request, next: Next) -> Response {
    const TOO_LONG: &str = "The query string is too long or has too many parameters.";
    match (request.uri().query(), request.uri().path()) {
        (Some(query), path) if !params::query_within_limits(query) => match path {
            paths::AUTHORIZE
            | paths::SIGNIN
            | paths::ACCOUNT_PASSWORD
            | paths::LOGOUT
            | paths::ACCOUNT_RECOVER => {
                pages::PageError(OAuthError::UntrustedRequest(TOO_LONG)).into_response()
            }
            paths::ACCOUNT
            | paths::ACCOUNT_REMOVE_ACCESS
            | paths::ACCOUNT_CHANGE_PASSWORD
            | paths::ACCOUNT_SIGN_OUT_EVERYWHERE
            | paths::ACCOUNT_TOTP_SETUP
            | paths::ACCOUNT_TOTP_CONFIRM
            | paths::ACCOUNT_TOTP_REMOVE
            | paths::ACCOUNT_RECOVERY_CODES => {
                pages::PageError(OAuthError::UntrustedRequest(TOO_LONG)).into_response()
            }
            _ => OAuthError::InvalidForm(TOO_LONG).into_response(),
        },
        _ => next.run(request).await,
    }
}

/// The routes of the auth listener. Health, logging and request ids are added by the binary.
pub fn router(state: OAuthState) -> Router {
    Router::new()
        .route(paths::OPENID_CONFIGURATION, get(discovery::serve_metadata))
        .route(
            paths::AUTHORIZATION_SERVER_METADATA,
            get(discovery::serve_metadata),
        )
        .route(paths::JWKS, get(jwks::serve_jwks))
        .route(
            paths::AUTHORIZE,
            get(authorize::get_authorize).post(consent::post_consent),
        )
        .route(paths::SIGNIN, post(signin::post_signin))
        .route(
            paths::SECOND_FACTOR,
            post(second_factor::post_second_factor),
        )
        .route(
            paths::LOGOUT,
            get(logout::get_logout).post(logout::post_logout),
        )
        .route(
            paths::ACCOUNT_PASSWORD,
            get(account_password::get_password_page).post(account_password::post_password),
        )
        .route(
            paths::ACCOUNT_RECOVER,
            get(recovery::get_recover_page).post(recovery::post_recover),
        )
        .route(paths::ACCOUNT, get(account::get_account))
        .route(
            paths::ACCOUNT_REMOVE_ACCESS,
            post(account::post_remove_access),
        )
        .route(
            paths::ACCOUNT_CHANGE_PASSWORD,
            post(account::post_change_password),
        )
        .route(
            paths::ACCOUNT_SIGN_OUT_EVERYWHERE,
            post(account::post_sign_out_everywhere),
        )
        // TOTP and recovery codes (issue 24).
        .route(
            paths::ACCOUNT_TOTP_SETUP,
            get(account::get_totp_setup).post(account::post_totp_setup),
        )
        .route(
            paths::ACCOUNT_TOTP_CONFIRM,
            post(account::post_totp_confirm),
        )
        .route(paths::ACCOUNT_TOTP_REMOVE, post(account::post_totp_remove))
        .route(
            paths::ACCOUNT_RECOVERY_CODES,
            post(account::post_recovery_codes),
        )
        .route(paths::TOKEN, post(token::post_token))
        .route(
            paths::USERINFO,
            get(userinfo::userinfo).post(userinfo::userinfo),
        )
        .route(paths::REVOKE, post(revoke::revoke))
        .route(paths::STYLESHEET, get(pages::serve_stylesheet))
        // Passkeys (issue 24).
        .route(paths::PASSKEY_SCRIPT, get(pages::serve_passkey_script))
        .route(
            paths::SIGNIN_PASSKEY_START,
            post(passkey_signin::post_signin_passkey_start),
        )
        .route(
            paths::SIGNIN_PASSKEY,
            post(passkey_signin::post_signin_passkey),
        )
        .route(
            paths::SECOND_FACTOR_PASSKEY_START,
            post(passkey_signin::post_second_factor_passkey_start),
        )
        .route(
            paths::ACCOUNT_PASSKEY_START,
            post(account::post_passkey_start),
        )
        .route(paths::ACCOUNT_PASSKEY_ADD, post(account::post_passkey_add))
        .route(
            paths::ACCOUNT_PASSKEY_REMOVE,
            post(account::post_passkey_remove),
        )
        // Every parameter arrives before authentication: bound what one request may send.
        .layer(
            tower::ServiceBuilder::new()
                .layer(axum::middleware::from_fn(limit_query))
                .layer(DefaultBodyLimit::max(params::MAX_BODY_BYTES)),
        )
        .with_state(state)
}
