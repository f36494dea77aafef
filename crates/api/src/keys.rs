//! The issuer's public keys as a resource server holds them: fetched over HTTP from
//! `{auth_url}/oauth/jwks` (the same path in one process or two), cached, and fetched again
//! when a token names an unknown `kid` or the copy has expired, at most once every few
//! seconds. Each fetch replaces the whole set, so a key the issuer retired stops verifying at
//! the first fetch that no longer lists it. Ages are read on the API's clock, the `now` of
//! the request.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use jose::{Jwks, UnixTime, VerificationKeys};

use crate::error::ApiError;

/// Fetch a copy this old again even when it knows the kid: the issuer's JWKS says
/// `Cache-Control: max-age=60`, and docs/key-rotation.md promises that a retired key stops
/// verifying once that has passed.
const MAX_AGE: i64 = 60;
/// Never ask the issuer more often than this.
const MIN_INTERVAL: i64 = 2;
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Clone, Debug)]
pub struct RemoteKeys {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    jwks_url: String,
    http: reqwest::Client,
    cached: RwLock<Cached>,
    /// One fetch at a time; the others wait for its result.
    fetching: tokio::sync::Mutex<()>,
}

#[derive(Debug, Default)]
struct Cached {
    keys: Option<(Arc<VerificationKeys>, UnixTime)>,
    last_attempt: Option<UnixTime>,
}

/// Whether `since` lies within `window` seconds before `now`. A time after `now` (the clock
/// was set back) is not: the copy then counts as expired rather than fresh for ever.
fn within(since: UnixTime, now: UnixTime, window: i64) -> bool {
    (0..window).contains(&now.saturating_sub(since))
}

impl RemoteKeys {
    pub fn new(jwks_url: String) -> Result<RemoteKeys, ApiError> {
        // No connection is kept between fetches: they come a minute apart at most, about
        // when a server's idle timeout (ours is 60 s) closes a kept one, and a request sent
        // on a connection the issuer is closing fails (seen in a soak: "unreachable" on
        // loopback), leaving the copy stale for another MIN_INTERVAL.
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .timeout(FETCH_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|_| ApiError::KeysUnavailable)?;
        let inner = Inner {
            jwks_url,
            http,
            cached: RwLock::default(),
            fetching: tokio::sync::Mutex::new(()),
        };
        Ok(RemoteKeys {
            inner: Arc::new(inner),
        })
    }

    /// A key set that should know `kid` at `now`. `KeysUnavailable` only when no set was
    /// ever had.
    pub async fn for_kid(
        &self,
        kid: &str,
        now: UnixTime,
    ) -> Result<Arc<VerificationKeys>, ApiError> {
        if let Some(keys) = self.fresh_with(kid, now) {
            return Ok(keys);
        }
        let _one_at_a_time = self.inner.fetching.lock().await;
        if let Some(keys) = self.fresh_with(kid, now) {
            return Ok(keys);
        }
        let recently_tried = self
            .read()
            .last_attempt
            .is_some_and(|t| within(t, now, MIN_INTERVAL));
        if !recently_tried {
            self.write().last_attempt = Some(now);
            match self.fetch().await {
                // The fetched set replaces the old one whole: a kid it lacks is gone now.
                Ok(keys) => self.write().keys = Some((Arc::new(keys), now)),
                Err(reason) => {
                    tracing::warn!(url = %self.inner.jwks_url, reason, "cannot fetch the issuer's JWKS")
                }
            }
        }
        // A stale set still verifies what it knows while the issuer cannot be reached (or was
        // asked a moment ago); a token with an unknown kid fails there.
        self.read()
            .keys
            .as_ref()
            .map(|(keys, _)| Arc::clone(keys))
            .ok_or(ApiError::KeysUnavailable)
    }

    fn fresh_with(&self, kid: &str, now: UnixTime) -> Option<Arc<VerificationKeys>> {
        match &self.read().keys {
            Some((keys, fetched)) if keys.contains(kid) && within(*fetched, now, MAX_AGE) => {
                Some(Arc::clone(keys))
            }
            _ => None,
        }
    }

    async fn fetch(&self) -> Result<VerificationKeys, &'static str> {
        let response = self
            .inner
            .http
            .get(&self.inner.jwks_url)
            .send()
            .await
            .map_err(|error| {
                if error.is_timeout() {
                    "timed out"
                } else if error.is_connect() {
                    "unreachable"
                } else {
                    "connection lost"
                }
            })?;
        if !response.status().is_success() {
            return Err("unexpected status");
        }
        let jwks: Jwks = response.json().await.map_err(|_| "not a JWKS")?;
        VerificationKeys::from_jwks(&jwks).map_err(|_| "unusable keys")
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Cached> {
        self.inner
            .cached
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Cached> {
        self.inner
            .cached
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    use jose::Jwk;

    use super::*;

    fn public_key() -> Jwk {
        let generated = jose::generate_signing_key().unwrap();
        let key = jose::SigningKey::from_pkcs8(&generated.kid, &generated.pkcs8_der).unwrap();
        key.public_jwk().clone()
    }

    /// An issuer whose JWKS the test changes, counting the fetches.
    struct Issuer {
        published: Arc<Mutex<Vec<Jwk>>>,
        fetches: Arc<AtomicUsize>,
        jwks_url: String,
    }

    impl Issuer {
        async fn start(keys: &[&Jwk]) -> Issuer {
            let published: Arc<Mutex<Vec<Jwk>>> =
                Arc::new(Mutex::new(keys.iter().map(|k| (*k).clone()).collect()));
            let fetches = Arc::new(AtomicUsize::new(0));
            let (serve, count) = (Arc::clone(&published), Arc::clone(&fetches));
            let jwks = axum::routing::get(move || {
                count.fetch_add(1, Ordering::SeqCst);
                let keys = serve.lock().unwrap().clone();
                async move { axum::Json(Jwks { keys }) }
            });
            let router = axum::Router::new().route("/oauth/jwks", jwks);
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let jwks_url = format!("http://{}/oauth/jwks", listener.local_addr().unwrap());
            tokio::spawn(async move { axum::serve(listener, router).await });
            Issuer {
                published,
                fetches,
                jwks_url,
            }
        }

        fn publish(&self, keys: &[&Jwk]) {
            *self.published.lock().unwrap() = keys.iter().map(|k| (*k).clone()).collect();
        }

        fn fetches(&self) -> usize {
            self.fetches.load(Ordering::SeqCst)
        }
    }

    /// Whether the set the cache hands out for `kid` at `now` verifies `known`.
    async fn knows(keys: &RemoteKeys, kid: &Jwk, now: UnixTime, known: &Jwk) -> bool {
        keys.for_kid(&kid.kid, now)
            .await
            .unwrap()
            .contains(&known.kid)
    }

    /// An issuer that answers one request per connection and closes the connection when
    /// another comes on it: a server whose idle timeout ends a kept-alive connection as a
    /// request arrives (ours closes them after 60 s, the interval of the API's fetches).
    async fn one_request_per_connection(keys: Vec<Jwk>) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let jwks_url = format!("http://{}/oauth/jwks", listener.local_addr().unwrap());
        let body = serde_json::to_vec(&Jwks { keys }).unwrap();
        tokio::spawn(async move {
            loop {
                let (mut socket, _) = listener.accept().await.unwrap();
                let body = body.clone();
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut byte = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") {
                        if socket.read(&mut byte).await.unwrap_or(0) == 0 {
                            return;
                        }
                        head.push(byte[0]);
                    }
                    let response = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                         content-length: {}\r\n\r\n",
                        body.len()
                    );
                    socket.write_all(response.as_bytes()).await.unwrap();
                    socket.write_all(&body).await.unwrap();
                    // The next request on this connection is read, then the connection
                    // closed without an answer.
                    let _ = socket.read(&mut byte).await;
                });
            }
        });
        jwks_url
    }

    #[tokio::test]
    async fn each_fetch_has_a_connection_of_its_own() {
        let (a, b) = (public_key(), public_key());
        let keys =
            RemoteKeys::new(one_request_per_connection(vec![a.clone(), b.clone()]).await).unwrap();
        let t = 1_800_000_000;
        assert!(knows(&keys, &a, t, &a).await);
        // A minute later the copy has expired: the fetch must not reuse the first one's
        // connection, which the issuer closes as the request comes.
        let later = t + MAX_AGE;
        keys.for_kid(&b.kid, later).await.unwrap();
        assert_eq!(
            keys.read().keys.as_ref().map(|(_, fetched)| *fetched),
            Some(later),
            "the second fetch failed"
        );
    }

    #[tokio::test]
    async fn a_key_missing_from_a_fetch_stops_verifying_at_once_and_fetches_stay_rare() {
        let (a, b, c) = (public_key(), public_key(), public_key());
        let issuer = Issuer::start(&[&a, &b]).await;
        let keys = RemoteKeys::new(issuer.jwks_url.clone()).unwrap();
        let t = 1_800_000_000;
        assert!(knows(&keys, &a, t, &b).await);
        assert_eq!(issuer.fetches(), 1);

        // The issuer retires b. Within the copy's max-age a known kid needs no fetch.
        issuer.publish(&[&a]);
        assert!(knows(&keys, &b, t + MAX_AGE - 1, &b).await);
        assert_eq!(issuer.fetches(), 1);
        // An unknown kid fetches again, but not within MIN_INTERVAL of the last fetch.
        assert!(!knows(&keys, &c, t + MIN_INTERVAL - 1, &c).await);
        assert_eq!(issuer.fetches(), 1);
        assert!(!knows(&keys, &c, t + MIN_INTERVAL, &b).await);
        assert_eq!(issuer.fetches(), 2);
        // That fetch replaced the copy: b is gone at once, with no further fetch.
        assert!(!knows(&keys, &b, t + MIN_INTERVAL, &b).await);
        assert_eq!(issuer.fetches(), 2);

        // A copy past its max-age is fetched again even for a kid it knows.
        issuer.publish(&[&a, &c]);
        let expired = t + MIN_INTERVAL + MAX_AGE;
        assert!(knows(&keys, &a, expired - 1, &a).await);
        assert_eq!(issuer.fetches(), 2);
        assert!(knows(&keys, &a, expired, &c).await);
        assert_eq!(issuer.fetches(), 3);
        // A clock set back makes the copy expired, not fresh for ever.
        assert!(knows(&keys, &a, t, &a).await);
        assert_eq!(issuer.fetches(), 4);
    }
}
