//! Request parameters as OAuth reads them: form-urlencoded pairs where a repeated parameter
//! is an error (RFC 6749 §3.1) and one sent without a value counts as absent. Everything here
//! runs before any authentication, so its cost is bounded by the limits below and linear in
//! the input.
//!
//! Decoding is strict (issue 20): a percent-encoded sequence that is not UTF-8 is refused
//! rather than replaced with U+FFFD, so what a handler reads is exactly what was sent. Control
//! characters are decoded, and [`Params::first_with_control`] finds them: a form refuses them
//! outright, the authorization endpoint once it knows where to redirect the error.

use std::borrow::Cow;
use std::collections::HashSet;
use std::ops::Range;

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
    /// Every name and value, decoded, one after the other: one allocation for a request's
    /// parameters, not two a pair (every token request goes through here).
    text: String,
    /// Each pair's name and value, as ranges of `text`.
    pairs: Vec<(Range<usize>, Range<usize>)>,
}

/// A parameter sent more than once.
#[derive(Debug, PartialEq, Eq)]
pub struct Repeated(pub &'static str);

/// A query or body whose percent-decoding is not UTF-8.
#[derive(Debug, PartialEq, Eq)]
pub struct NotUtf8;

impl Params {
    /// The pairs of `application/x-www-form-urlencoded` (WHATWG URL §5.1): `&`-separated, `+`
    /// for a space, empty segments skipped, a name without `=` has the empty value.
    pub fn parse(encoded: &[u8]) -> Result<Params, NotUtf8> {
        // Decoding never lengthens (`%XX` is one byte, `+` one), so neither buffer grows.
        let mut params = Params {
            text: String::with_capacity(encoded.len()),
            pairs: Vec::with_capacity(count_params(encoded)),
        };
        for pair in encoded
            .split(|b| *b == b'&')
            .filter(|pair| !pair.is_empty())
        {
            let (name, value) = match pair.iter().position(|b| *b == b'=') {
                Some(at) => (&pair[..at], &pair[at + 1..]),
                None => (pair, &b""[..]),
            };
            let name = params.push_decoded(name)?;
            let value = params.push_decoded(value)?;
            params.pairs.push((name, value));
        }
        Ok(params)
    }

    fn push_decoded(&mut self, part: &[u8]) -> Result<Range<usize>, NotUtf8> {
        let start = self.text.len();
        decode_into(part, &mut self.text)?;
        Ok(start..self.text.len())
    }

    /// The pairs, names and values, in the order they were sent.
    fn pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        // Each range is a whole decoded name or value: always within the text, on boundaries.
        let part = |range: &Range<usize>| self.text.get(range.clone()).unwrap_or_default();
        self.pairs.iter().map(move |(k, v)| (part(k), part(v)))
    }

    /// The name of the first parameter whose name or value holds a control character
    /// (Unicode Cc: C0, DEL, C1). No parameter has a use for one, PostgreSQL cannot store a
    /// NUL in text, and values are stored and echoed.
    pub fn first_with_control(&self) -> Option<&str> {
        self.pairs()
            .find(|(k, v)| has_control(k) || has_control(v))
            .map(|(k, _)| k)
    }

    /// The one value of `name`; `Ok(None)` when absent or empty, `Err` when repeated.
    pub fn single(&self, name: &'static str) -> Result<Option<&str>, Repeated> {
        let mut values = self.pairs().filter(|(k, _)| *k == name).map(|(_, v)| v);
        match (values.next(), values.next()) {
            (_, Some(_)) => Err(Repeated(name)),
            (Some(""), None) | (None, None) => Ok(None),
            (Some(value), None) => Ok(Some(value)),
        }
    }

    /// Every value of a parameter that may repeat (the consent form's `scope` checkboxes).
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.pairs()
            .filter(|(k, _)| *k == name)
            .map(|(_, v)| v)
            .collect()
    }

    /// The first parameter name that appears more than once, if any: one pass over the
    /// names, so a request with many distinct names costs linear time.
    pub fn first_repeated(&self) -> Option<&str> {
        // A token request's five or so names are compared with those before them, without
        // hashing each (SipHash); past eight, a set keeps it linear.
        if self.pairs.len() <= 8 {
            return self
                .pairs()
                .enumerate()
                .find(|(i, (name, _))| self.pairs().take(*i).any(|(seen, _)| seen == *name))
                .map(|(_, (name, _))| name);
        }
        let mut seen = HashSet::with_capacity(self.pairs.len());
        self.pairs().map(|(k, _)| k).find(|k| !seen.insert(*k))
    }
}

/// One form-urlencoded name or value: `+` is a space, `%XX` a byte, and the bytes UTF-8.
pub(crate) fn decode(part: &[u8]) -> Result<String, NotUtf8> {
    let mut decoded = String::with_capacity(part.len());
    decode_into(part, &mut decoded)?;
    Ok(decoded)
}

/// [`decode`], appended to `out`; `out` is as it was when the part is refused.
fn decode_into(part: &[u8], out: &mut String) -> Result<(), NotUtf8> {
    // Most names and values hold neither: copied as they are once they are UTF-8.
    if !part.contains(&b'%') && !part.contains(&b'+') {
        out.push_str(std::str::from_utf8(part).map_err(|_| NotUtf8)?);
        return Ok(());
    }
    let spaced: Cow<[u8]> = match part.contains(&b'+') {
        true => Cow::Owned(
            part.iter()
                .map(|b| if *b == b'+' { b' ' } else { *b })
                .collect(),
        ),
        false => Cow::Borrowed(part),
    };
    let decoded = percent_encoding::percent_decode(&spaced)
        .decode_utf8()
        .map_err(|_| NotUtf8)?;
    out.push_str(&decoded);
    Ok(())
}

fn has_control(value: &str) -> bool {
    // C0 and DEL by byte, over the whole value (which the compiler vectorises); C1
    // (U+0080 to U+009F) can only be in a value that is not ASCII.
    let c0_or_del = value
        .bytes()
        .fold(false, |found, b| found | (b < 0x20) | (b == 0x7f));
    c0_or_del || (!value.is_ascii() && value.chars().any(char::is_control))
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
        let params = Params::parse(&body).map_err(|NotUtf8| {
            OAuthError::InvalidForm("the body's percent-encoding is not UTF-8")
        })?;
        if params.first_with_control().is_some() {
            return Err(OAuthError::InvalidForm(
                "a parameter contains a control character",
            ));
        }
        Ok(FormParams(params))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_values_empty_means_absent_and_repeats_are_errors() {
        let params = Params::parse(b"a=1&b=&c=x%20y&d=1&d=2&s=jobs&s=email").unwrap();
        assert_eq!(params.single("a"), Ok(Some("1")));
        assert_eq!(params.single("b"), Ok(None));
        assert_eq!(params.single("c"), Ok(Some("x y")));
        assert_eq!(params.single("missing"), Ok(None));
        assert_eq!(params.single("d"), Err(Repeated("d")));
        assert_eq!(params.all("s"), ["jobs", "email"]);
        assert_eq!(params.first_repeated(), Some("d"));
        assert_eq!(Params::parse(b"a=1&b=2").unwrap().first_repeated(), None);
        assert_eq!(
            Params::parse(b"a=1&b=2&c=3&b=4&a=5")
                .unwrap()
                .first_repeated(),
            Some("b")
        );
        // Past eight pairs, the same answers.
        let many = |tail: &str| {
            let mut encoded = (0..10).map(|i| format!("k{i}=v")).collect::<Vec<_>>();
            encoded.push(tail.to_owned());
            Params::parse(encoded.join("&").as_bytes()).unwrap()
        };
        assert_eq!(many("k10=v").first_repeated(), None);
        assert_eq!(many("k9=w").first_repeated(), Some("k9"));
        assert_eq!(many("k0=w").first_repeated(), Some("k0"));
    }

    #[test]
    fn decoding_follows_the_form_encoding() {
        let params = Params::parse(b"&a+b=c+d%2B&&flag&e=%C3%A9t%C3%A9&=x&n=%00").unwrap();
        assert_eq!(params.single("a b"), Ok(Some("c d+")));
        assert_eq!(params.single("flag"), Ok(None));
        assert_eq!(params.single("e"), Ok(Some("\u{e9}t\u{e9}")));
        assert_eq!(params.single(""), Ok(Some("x")));
        assert_eq!(params.single("n"), Ok(Some("\0")));
        // A `%` that does not start an escape stays as it is, as browsers send it.
        let params = Params::parse(b"p=100%&q=%zz").unwrap();
        assert_eq!(params.single("p"), Ok(Some("100%")));
        assert_eq!(params.single("q"), Ok(Some("%zz")));
    }

    #[test]
    fn percent_encoded_bytes_that_are_not_utf8_are_refused() {
        for encoded in [
            &b"a=%FF"[..],
            b"a=%C3",
            b"a=%C3%28",
            b"%80=1",
            b"a=%ED%A0%80",
            b"a=\xff",
        ] {
            assert_eq!(Params::parse(encoded).unwrap_err(), NotUtf8, "{encoded:?}");
        }
    }

    #[test]
    fn control_characters_are_found_in_names_and_values() {
        let find = |encoded: &[u8]| {
            Params::parse(encoded)
                .unwrap()
                .first_with_control()
                .map(str::to_owned)
        };
        assert_eq!(find(b"a=1&b=x%00y"), Some("b".into()));
        assert_eq!(find(b"a=%0A&b=%00"), Some("a".into()));
        assert_eq!(find(b"a%07=1"), Some("a\u{7}".into()));
        assert_eq!(find(b"a=%7F"), Some("a".into()));
        assert_eq!(find(b"a=%C2%85"), Some("a".into()));
        assert_eq!(find(b"a=%09"), Some("a".into()));
        assert_eq!(find(b"a=x+y&b=%C3%A9%E2%80%8B"), None);
        // Sent as they are, not percent-encoded.
        assert_eq!(find(b"a=1&b=x\x01y"), Some("b".into()));
        assert_eq!(find(b"a=\x7f"), Some("a".into()));
        assert_eq!(find(b"a=1&b=\xc2\x9f"), Some("b".into()));
        assert_eq!(find(b"a=\xc3\xa9&b=\xc2\xa0"), None);
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
