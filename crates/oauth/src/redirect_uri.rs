//! Registered redirect URIs. Compared by exact string match (OAuth 2.1 §2.3.1), so a URI is
//! stored exactly as registered once it has passed these rules.

use std::fmt;
use std::net::IpAddr;

use url::{Host, Url};

use crate::error::OAuthError;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedirectUri(String);

impl RedirectUri {
    /// Accepts https URLs, http only to a loopback host (RFC 8252 §7.3), and private-use
    /// schemes in reverse-domain form such as `com.example.app:/cb` (RFC 8252 §7.1).
    /// Refuses relative URIs and fragments (RFC 6749 §3.1.2) and embedded credentials.
    pub fn parse(value: &str) -> Result<RedirectUri, OAuthError> {
        // The URL parser drops tabs and newlines and escapes other controls, but the URI is
        // stored and compared as written: refuse what it would have to change.
        if value.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err(OAuthError::InvalidRedirectUri(
                "it contains a space or control character",
            ));
        }
        let url = Url::parse(value)
            .map_err(|_| OAuthError::InvalidRedirectUri("it is not an absolute URI"))?;
        if url.fragment().is_some() || value.contains('#') {
            return Err(OAuthError::InvalidRedirectUri("it has a fragment"));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(OAuthError::InvalidRedirectUri("it carries credentials"));
        }
        match url.scheme() {
            "https" => {
                if url.host().is_none() {
                    return Err(OAuthError::InvalidRedirectUri("it has no host"));
                }
            }
            "http" => {
                if !is_loopback(url.host()) {
                    return Err(OAuthError::InvalidRedirectUri(
                        "plain http is allowed only to a loopback host (127.0.0.1, [::1], localhost)",
                    ));
                }
            }
            scheme if scheme.contains('.') => {}
            _ => {
                return Err(OAuthError::InvalidRedirectUri(
                    "the scheme must be https, http to loopback, or a private-use scheme such as com.example.app",
                ))
            }
        }
        Ok(RedirectUri(value.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

pub(crate) fn is_loopback(host: Option<Host<&str>>) -> bool {
    match host {
        Some(Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        Some(Host::Domain(domain)) => domain.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

impl fmt::Display for RedirectUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_https_loopback_http_and_private_use_schemes_verbatim() {
        for good in [
            "https://app.example.com/callback",
            "https://app.example.com/cb?x=1",
            "http://127.0.0.1:8400/callback",
            "http://[::1]:8400/callback",
            "http://localhost:3000/cb",
            "com.example.app:/cb",
        ] {
            assert_eq!(RedirectUri::parse(good).unwrap().as_str(), good);
        }
    }

    #[test]
    fn refuses_relative_fragment_remote_http_credentials_and_bare_schemes() {
        for bad in [
            "/callback",
            "app.example.com/cb",
            "https://app.example.com/cb#frag",
            "https://app.example.com/cb#",
            "http://app.example.com/cb",
            "http://10.0.0.1/cb",
            "https://user:pw@app.example.com/cb",
            "javascript:alert(1)",
            "myapp:/cb",
            "file:///etc/passwd",
            "https://app.example.com/c\tb",
            "https://app.example.com/cb\n",
            "https://app.example.com/c\0b",
            "https://app.example.com/c b",
        ] {
            assert!(RedirectUri::parse(bad).is_err(), "{bad} was accepted");
        }
    }
}
