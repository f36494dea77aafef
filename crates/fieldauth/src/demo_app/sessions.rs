//! The browsers' sessions with the demo app, in memory only: the sign-in in progress (state,
//! nonce, PKCE verifier), the tokens, and what the page shows. A session is found by an
//! HttpOnly cookie of the app, whose value is 256 random bits.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use axum::http::{header, HeaderMap, HeaderValue};
use secrecy::SecretString;

use super::flow::SignedIn;

/// Not the auth server's `fieldauth-<tenant>`: cookies are not kept apart by port, so both
/// reach both listeners on 127.0.0.1, and each must find its own.
pub const COOKIE: &str = "fieldauth-demo-app";

/// The most sessions kept; past that the oldest goes. The demo serves one person, but
/// nothing a browser sends may grow memory without bound.
const MAX_SESSIONS: usize = 256;

#[derive(Clone, Debug, Default)]
pub struct Sessions {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug, Default)]
struct Inner {
    created: u64,
    by_cookie: HashMap<String, Session>,
}

#[derive(Debug)]
pub struct Session {
    /// When it was created, in creation order: the oldest is evicted first.
    order: u64,
    /// The token every form of this session carries.
    pub csrf: String,
    pub pending: Option<PendingSignIn>,
    pub signed_in: Option<SignedIn>,
    /// A line for the next page, such as "Tokens refreshed".
    pub notice: Option<String>,
}

/// A sign-in sent to the authorization endpoint and not yet back.
#[derive(Debug)]
pub struct PendingSignIn {
    pub state: String,
    pub nonce: String,
    /// RFC 7636 §4.1: sent only to the token endpoint, never in a URL.
    pub code_verifier: SecretString,
}

impl Sessions {
    /// Runs `f` on the session of this cookie value, if there is one.
    pub fn with<R>(&self, cookie: &str, f: impl FnOnce(&mut Session) -> R) -> Option<R> {
        self.lock().by_cookie.get_mut(cookie).map(f)
    }

    /// Starts a session under a fresh cookie value.
    pub fn create(&self, cookie: String, csrf: String) {
        let mut inner = self.lock();
        inner.created += 1;
        let session = Session {
            order: inner.created,
            csrf,
            pending: None,
            signed_in: None,
            notice: None,
        };
        inner.by_cookie.insert(cookie, session);
        if inner.by_cookie.len() > MAX_SESSIONS {
            let oldest = inner
                .by_cookie
                .iter()
                .min_by_key(|(_, s)| s.order)
                .map(|(cookie, _)| cookie.clone());
            if let Some(oldest) = oldest {
                inner.by_cookie.remove(&oldest);
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Nothing is left half-done under the lock, so a poisoned one is still consistent.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The app's cookie value, when the request carries one of the right shape (43 base64url
/// characters).
pub fn read_cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value)
        .filter(|value| {
            value.len() == 43
                && value
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

/// HttpOnly, so no script can read it; SameSite=Lax, so it comes back on the top-level
/// redirect from the authorization server to the callback. Plain http on loopback: no
/// `Secure`.
pub fn set_cookie(value: &str) -> Option<HeaderValue> {
    HeaderValue::from_str(&format!("{COOKIE}={value}; Path=/; HttpOnly; SameSite=Lax")).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALUE: &str = "abcdefghijklmnopqrstuvwxyz0123456789-_ABCDE";

    #[test]
    fn the_cookie_is_found_among_others_and_only_with_its_shape() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_str(&format!("fieldauth-demo=x; {COOKIE}={VALUE}")).unwrap(),
        );
        assert_eq!(read_cookie(&headers), Some(VALUE));
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("fieldauth-demo-app=short"),
        );
        assert_eq!(read_cookie(&headers), None);
    }

    #[test]
    fn past_the_limit_the_oldest_session_goes() {
        let sessions = Sessions::default();
        for i in 0..=MAX_SESSIONS {
            sessions.create(format!("cookie-{i}"), String::new());
        }
        assert!(sessions.with("cookie-0", |_| ()).is_none());
        assert!(sessions.with("cookie-1", |_| ()).is_some());
        assert!(sessions
            .with(&format!("cookie-{MAX_SESSIONS}"), |_| ())
            .is_some());
    }
}
