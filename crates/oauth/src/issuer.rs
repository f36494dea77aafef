//! The issuer identifier: `{auth_url}` exactly as configured, and the endpoint URLs built on it.

use std::fmt;

use url::Url;

use crate::error::OAuthError;

/// OpenID Connect Discovery §3 / RFC 8414 §2: an https (or, for development, http) URL with
/// no query or fragment. It is kept exactly as given, because relying parties compare `iss`
/// as a string: no trailing slash is added or removed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issuer {
    raw: String,
    url: Url,
}

impl Issuer {
    pub fn parse(value: &str) -> Result<Issuer, OAuthError> {
        let url =
            Url::parse(value).map_err(|_| OAuthError::InvalidIssuer("not an absolute URL"))?;
        if !matches!(url.scheme(), "https" | "http") {
            return Err(OAuthError::InvalidIssuer(
                "the scheme must be https or http",
            ));
        }
        if url.host_str().is_none() {
            return Err(OAuthError::InvalidIssuer("it has no host"));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(OAuthError::InvalidIssuer(
                "it must not have a query or fragment",
            ));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(OAuthError::InvalidIssuer("it must not carry credentials"));
        }
        // Endpoints are served at the root of the listener; an issuer path would advertise
        // URLs nothing answers. A reverse proxy may still publish the server under its own
        // host name.
        if url.path() != "/" {
            return Err(OAuthError::InvalidIssuer("it must not have a path"));
        }
        Ok(Issuer {
            raw: value.to_owned(),
            url,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.raw
    }

    /// True for https issuers, whose cookies must be `Secure`.
    pub fn is_https(&self) -> bool {
        self.url.scheme() == "https"
    }

    /// The absolute URL of an endpoint path under the issuer.
    pub fn endpoint(&self, path: &str) -> String {
        format!("{}{path}", self.raw.trim_end_matches('/'))
    }
}

impl fmt::Display for Issuer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_issuer_exactly_as_given() {
        assert_eq!(
            Issuer::parse("http://127.0.0.1:8080").unwrap().as_str(),
            "http://127.0.0.1:8080"
        );
        assert_eq!(
            Issuer::parse("https://id.example.com/").unwrap().as_str(),
            "https://id.example.com/"
        );
    }

    #[test]
    fn endpoints_join_without_a_double_slash() {
        let plain = Issuer::parse("https://id.example.com").unwrap();
        assert_eq!(
            plain.endpoint("/oauth/jwks"),
            "https://id.example.com/oauth/jwks"
        );
        let slashed = Issuer::parse("https://id.example.com/").unwrap();
        assert_eq!(
            slashed.endpoint("/oauth/jwks"),
            "https://id.example.com/oauth/jwks"
        );
    }

    #[test]
    fn refuses_relative_foreign_scheme_query_fragment_credentials_and_paths() {
        for bad in [
            "/oauth",
            "ftp://id.example.com",
            "https://id.example.com/?a=b",
            "https://id.example.com/#x",
            "https://user:pw@id.example.com",
            "https://id.example.com/auth",
        ] {
            assert!(Issuer::parse(bad).is_err(), "{bad} was accepted");
        }
    }
}
