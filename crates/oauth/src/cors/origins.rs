//! Which browser origins may call the endpoints single-page apps use: the origin of every
//! http(s) redirect URI of every client of every tenant, and the web origins operators added.

use std::collections::HashSet;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use store::{ClientOrigins, Store};
use tokio::sync::watch;
use url::Url;

use crate::error::{error_chain, OAuthError};
use crate::redirect_uri::is_loopback;
use crate::stopping::run_every;

/// An origin an operator allows for a client with `--web-origin`: `scheme://host[:port]` and
/// nothing else; https, or http to a loopback host only, as for redirect URIs (RFC 8252
/// §7.3). Kept as browsers serialize it in `Origin` (RFC 6454 §6.2: lowercase host, no
/// default port), so the allow-list compares strings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebOrigin(String);

impl WebOrigin {
    pub fn parse(value: &str) -> Result<WebOrigin, OAuthError> {
        // The URL parser would drop a tab or newline silently; refuse them instead.
        if value.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err(OAuthError::InvalidWebOrigin(
                "it contains a space or control character",
            ));
        }
        // An origin has no path, query, fragment or credentials (RFC 6454 §6.2), not even a
        // trailing `/`: what follows `scheme://` must be the host and port alone.
        let Some((_, authority)) = value.split_once("://") else {
            return Err(OAuthError::InvalidWebOrigin(
                "it must be scheme://host[:port]",
            ));
        };
        if authority.contains(['/', '?', '#', '@', '\\']) {
            return Err(OAuthError::InvalidWebOrigin(
                "it must be scheme://host[:port] with nothing after it",
            ));
        }
        let url = Url::parse(value)
            .map_err(|_| OAuthError::InvalidWebOrigin("it is not scheme://host[:port]"))?;
        match url.scheme() {
            "https" if url.host().is_some() => {}
            "http" if is_loopback(url.host()) => {}
            "http" => {
                return Err(OAuthError::InvalidWebOrigin(
                    "plain http is allowed only to a loopback host (127.0.0.1, [::1], localhost)",
                ))
            }
            _ => {
                return Err(OAuthError::InvalidWebOrigin(
                    "the scheme must be https, or http to a loopback host",
                ))
            }
        }
        Ok(WebOrigin(url.origin().ascii_serialization()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

/// The origin a page at this redirect URI sends in `Origin`; `None` for a private-use scheme
/// (a native app, which has no web origin).
fn origin_of_redirect_uri(redirect_uri: &str) -> Option<String> {
    let url = Url::parse(redirect_uri).ok()?;
    match url.scheme() {
        "https" | "http" => Some(url.origin().ascii_serialization()),
        _ => None,
    }
}

fn allow_list(clients: Vec<ClientOrigins>) -> HashSet<String> {
    let mut origins = HashSet::new();
    for client in clients {
        origins.extend(
            client
                .redirect_uris
                .iter()
                .filter_map(|uri| origin_of_redirect_uri(uri)),
        );
        origins.extend(client.web_origins);
    }
    origins
}

/// The allow-list, in memory: a preflight names no tenant and carries no token, so the
/// origins of all tenants are read at start, and again whenever a client changed (each
/// database's mark of its clients' changes, polled). Clones share it.
#[derive(Clone, Debug, Default)]
pub struct AllowedOrigins(Arc<RwLock<Kept>>);

#[derive(Debug, Default)]
struct Kept {
    origins: HashSet<String>,
    /// The databases' marks when `origins` was read; `None` before the first read.
    marks: Option<Vec<i64>>,
}

impl AllowedOrigins {
    pub async fn load(store: &Store) -> Result<AllowedOrigins, OAuthError> {
        let origins = AllowedOrigins::default();
        origins.reload(store).await?;
        Ok(origins)
    }

    /// Re-reads every client if any changed since the last read; `true` when the list
    /// changed. One statement per database when nothing did.
    pub async fn reload(&self, store: &Store) -> Result<bool, OAuthError> {
        // Read before the clients: a change made during their read changes the mark after
        // it, and the next poll reads them again.
        let marks = store.client_changes().await?;
        if self.read().marks.as_ref() == Some(&marks) {
            return Ok(false);
        }
        let fresh = allow_list(store.list_client_origins().await?);
        // A panic elsewhere while holding the lock cannot leave the set half-written: it is
        // only ever replaced whole.
        let mut kept = self.0.write().unwrap_or_else(PoisonError::into_inner);
        kept.marks = Some(marks);
        if kept.origins == fresh {
            return Ok(false);
        }
        kept.origins = fresh;
        Ok(true)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Kept> {
        self.0.read().unwrap_or_else(PoisonError::into_inner)
    }

    #[cfg(test)]
    pub(super) fn of(origins: &[&str]) -> AllowedOrigins {
        let origins = origins.iter().map(|o| (*o).to_owned()).collect();
        AllowedOrigins(Arc::new(RwLock::new(Kept {
            origins,
            marks: None,
        })))
    }

    /// Whether `origin`, exactly as the browser sent it, is allowed.
    pub fn allows(&self, origin: &[u8]) -> bool {
        let Ok(origin) = std::str::from_utf8(origin) else {
            return false;
        };
        self.read().origins.contains(origin)
    }

    /// Polls the clients' marks every `every` until `stopped`, so clients registered by the
    /// CLI or on another node are allowed without a restart.
    pub async fn reload_every(self, store: Store, every: Duration, stopped: watch::Receiver<bool>) {
        run_every(every, stopped, || {
            let (origins, store) = (self.clone(), store.clone());
            async move {
                match origins.reload(&store).await {
                    Ok(true) => tracing::info!("CORS origins reloaded"),
                    Ok(false) => {}
                    Err(error) => {
                        tracing::warn!(error = %error_chain(&error), "CORS origins not reloaded")
                    }
                }
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use store::TenantId;

    #[test]
    fn web_origins_are_serialized_as_browsers_send_them() {
        for (given, kept) in [
            ("https://app.example.com", "https://app.example.com"),
            ("https://App.Example.COM", "https://app.example.com"),
            ("https://app.example.com:443", "https://app.example.com"),
            (
                "https://app.example.com:8443",
                "https://app.example.com:8443",
            ),
            ("http://127.0.0.1:8400", "http://127.0.0.1:8400"),
            ("http://localhost:3000", "http://localhost:3000"),
            ("http://[::1]:3000", "http://[::1]:3000"),
            ("https://bücher.example", "https://xn--bcher-kva.example"),
        ] {
            assert_eq!(WebOrigin::parse(given).unwrap().as_str(), kept, "{given}");
        }
    }

    #[test]
    fn web_origins_refuse_paths_remote_http_credentials_and_other_schemes() {
        for bad in [
            "app.example.com",
            "https://app.example.com/",
            "https://app.example.com/app",
            "https://app.example.com?x=1",
            "https://app.example.com#x",
            "https://user@app.example.com",
            "https:app.example.com",
            "http://app.example.com",
            "http://10.0.0.1",
            "ftp://app.example.com",
            "com.example.app://cb",
            "null",
            "https://",
            "https://app.exa\tmple.com",
            "https://app.example.com\n",
            "https://app.example.com\0",
        ] {
            assert!(
                matches!(WebOrigin::parse(bad), Err(OAuthError::InvalidWebOrigin(_))),
                "{bad} was accepted"
            );
        }
    }

    #[test]
    fn the_list_holds_redirect_uri_origins_and_web_origins_not_native_schemes() {
        let client = ClientOrigins {
            tenant_id: TenantId::parse("acme").unwrap(),
            client_id: "spa".into(),
            redirect_uris: vec![
                "https://App.example.com:443/cb?x=1".into(),
                "http://127.0.0.1:8400/callback".into(),
                "com.example.app:/cb".into(),
            ],
            web_origins: vec!["https://admin.example.com".into()],
        };
        let mut list: Vec<String> = allow_list(vec![client]).into_iter().collect();
        list.sort();
        assert_eq!(
            list,
            [
                "http://127.0.0.1:8400",
                "https://admin.example.com",
                "https://app.example.com"
            ]
        );
    }
}
