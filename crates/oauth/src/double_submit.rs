//! Double-submit CSRF cookies, for the forms a browser reaches without a session (the
//! password link's page, the "Forgot your password?" page): the page sets a random value in
//! a cookie and in the form, and a submission must carry both. No other site can read the
//! cookie to copy it into a forged form, and `SameSite=Strict` keeps it off cross-site posts
//! altogether.

use axum::http::{HeaderMap, HeaderValue};
use subtle::ConstantTimeEq;

use crate::error::OAuthError;
use crate::state::OAuthState;

/// How long a form's cookie lives: long enough to fill the form in.
const LIFETIME_SECONDS: i64 = 3600;

/// One form's cookie, by name.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DoubleSubmit(pub &'static str);

impl DoubleSubmit {
    /// On https the `__Host-` prefix: set only by this host, for the whole site, Secure.
    fn cookie_name(self, state: &OAuthState) -> String {
        match state.config.issuer.is_https() {
            true => format!("__Host-{}", self.0),
            false => self.0.to_owned(),
        }
    }

    /// The `Set-Cookie` value that pairs with the form's hidden `value`.
    pub(crate) fn set_cookie(
        self,
        state: &OAuthState,
        value: &str,
    ) -> Result<HeaderValue, OAuthError> {
        let secure = if state.config.issuer.is_https() {
            "; Secure"
        } else {
            ""
        };
        HeaderValue::from_str(&format!(
            "{}={value}; Path=/; Max-Age={LIFETIME_SECONDS}; HttpOnly; SameSite=Strict{secure}",
            self.cookie_name(state)
        ))
        .map_err(|_| OAuthError::InvalidForm("cookie"))
    }

    /// True when the form's value is present and equals the cookie's, compared in constant
    /// time.
    pub(crate) fn holds(self, state: &OAuthState, headers: &HeaderMap, submitted: &str) -> bool {
        let cookie = crate::session::read_cookie(headers, &self.cookie_name(state));
        !submitted.is_empty()
            && cookie.is_some_and(|c| bool::from(c.as_bytes().ct_eq(submitted.as_bytes())))
    }
}
