//! Request parameters as OAuth reads them: form-urlencoded pairs where a repeated parameter
//! is an error (RFC 6749 §3.1) and one sent without a value counts as absent.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::header;

use crate::error::OAuthError;

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

    /// The first parameter name that appears more than once, if any.
    pub fn first_repeated(&self) -> Option<&str> {
        self.pairs
            .iter()
            .enumerate()
            .find(|(i, (k, _))| self.pairs[..*i].iter().any(|(seen, _)| seen == k))
            .map(|(_, (k, _))| k.as_str())
    }
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
        let body = Bytes::from_request(request, state)
            .await
            .map_err(|_| OAuthError::InvalidForm("the body could not be read"))?;
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
    }
}
