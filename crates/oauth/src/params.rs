//! Request parameters as OAuth reads them: form-urlencoded pairs where a repeated parameter
//! is an error (RFC 6749 §3.1) and one sent without a value counts as absent. Everything here
//! runs before any authentication, so its cost is bounded by the limits below and linear in
//! the input.

use std::collections::HashSet;

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::header;

use crate::error::OAuthError;

/// The largest form body the auth listener reads (the router sets it as the body limit). A
/// token request is a few hundred bytes; a consent form with every scope about one KiB.
pub const MAX_BODY_BYTES: usize = 8 * 1024;

/// The longest query string the auth listener accepts: an authorization request with a
/// long `redirect_uri`, `state`, `nonce` and every scope stays well under it.
pub const MAX_QUERY_BYTES: usize = 8 * 1024;

/// The most parameters one request may carry, in its query or its body. Every endpoint reads
/// fewer than twenty; the consent form repeats `scope` once per scope.
pub const MAX_PARAMS: usize = 64;

#[derive(Debug, Default)]
pub struct Params {
    pairs: Vec<(String, String)>,
}

/// A parameter sent more than once.
#[derive(Debug, PartialEq, Eq)]
pub struct Repeated(pub &'static str);

impl Params {
    pub fn parse(encoded: &[u8]) -> Params {
        Params {
            pairs: url::form_urlencoded::parse(encoded).into_owned().collect(),
        }
    }

    /// The one value of `name`; `Ok(None)` when absent or empty, `Err` when repeated.
    pub fn single(&self, name: &'static str) -> Result<Option<&str>, Repeated> {
        let mut values = self
            .pairs
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str());
        match (values.next(), values.next()) {
            (_, Some(_)) => Err(Repeated(name)),
            (Some(""), None) | (None, None) => Ok(None),
            (Some(value), None) => Ok(Some(value)),
        }
    }

    /// Every value of a parameter that may repeat (the consent form's `scope` checkboxes).
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.pairs
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// The first parameter name that appears more than once, if any: one pass over the
    /// names, so a request with many distinct names costs linear time.
    pub fn first_repeated(&self) -> Option<&str> {
        let mut seen = HashSet::with_capacity(self.pairs.len());
        self.pairs
            .iter()
            .map(|(k, _)| k.as_str())
            .find(|k| !seen.insert(*k))
    }
}

/// Whether a raw query string is within the listener's limits of length and count, checked
/// before it is decoded.
pub fn query_within_limits(query: &str) -> bool {
    query.len() <= MAX_QUERY_BYTES && count_params(query.as_bytes()) <= MAX_PARAMS
}

/// The pairs a form parser would find: empty segments (`a=1&&b=2`) are none.
fn count_params(encoded: &[u8]) -> usize {
    encoded
        .split(|b| *b == b'&')
        .filter(|pair| !pair.is_empty())
        .count()
}

/// A form-urlencoded POST body. Anything else is refused as `invalid_request`.
#[derive(Debug)]
pub struct FormParams(pub Params);

impl<S: Send + Sync> FromRequest<S> for FormParams {
    type Rejection = OAuthError;

    async fn from_request(request: Request, state: &S) -> Result<FormParams, OAuthError> {
        let is_form = request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|v| {
                v.trim()
                    .eq_ignore_ascii_case("application/x-www-form-urlencoded")
            });
        if !is_form {
            return Err(OAuthError::InvalidForm(
                "the body must be application/x-www-form-urlencoded",
            ));
        }
        // The router's `DefaultBodyLimit` makes this refuse anything over `MAX_BODY_BYTES`.
        let body =
            Bytes::from_request(request, state)
                .await
                .map_err(|rejection| match rejection.status() {
                    axum::http::StatusCode::PAYLOAD_TOO_LARGE => {
                        OAuthError::InvalidForm("the body is larger than 8 KiB")
                    }
                    _ => OAuthError::InvalidForm("the body could not be read"),
                })?;
        if count_params(&body) > MAX_PARAMS {
            return Err(OAuthError::InvalidForm("too many parameters"));
        }
        Ok(FormParams(Params::parse(&body)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_values_empty_means_absent_and_repeats_are_errors() {
        let params = Params::parse(b"a=1&b=&c=x%20y&d=1&d=2&s=jobs&s=email");
        assert_eq!(params.single("a"), Ok(Some("1")));
        assert_eq!(params.single("b"), Ok(None));
        assert_eq!(params.single("c"), Ok(Some("x y")));
        assert_eq!(params.single("missing"), Ok(None));
        assert_eq!(params.single("d"), Err(Repeated("d")));
        assert_eq!(params.all("s"), ["jobs", "email"]);
        assert_eq!(params.first_repeated(), Some("d"));
        assert_eq!(Params::parse(b"a=1&b=2").first_repeated(), None);
        assert_eq!(
            Params::parse(b"a=1&b=2&c=3&b=4&a=5").first_repeated(),
            Some("b")
        );
    }

    #[test]
    fn queries_over_the_length_or_count_limit_are_refused() {
        assert!(query_within_limits("a=1&b=2"));
        assert!(query_within_limits(&"a".repeat(MAX_QUERY_BYTES)));
        assert!(!query_within_limits(&"a".repeat(MAX_QUERY_BYTES + 1)));
        let many = (0..=MAX_PARAMS)
            .map(|i| format!("k{i}=v"))
            .collect::<Vec<_>>();
        assert!(query_within_limits(&format!(
            "{}&&",
            many[..MAX_PARAMS].join("&")
        )));
        assert!(query_within_limits(&many[..MAX_PARAMS].join("&")));
        assert!(!query_within_limits(&many.join("&")));
    }
}
