//! Issue 20: every endpoint refuses what it cannot take (control characters, a NUL that
//! PostgreSQL cannot store, percent-encoding that is not UTF-8, values over the limits,
//! repeated parameters) with its protocol's own error, on both backends, and a refused
//! request changes nothing: the flow it interrupted still completes afterwards.

mod api;
mod authorize;
mod cli;
mod forms;
mod token;

use url::form_urlencoded::byte_serialize;

/// Control characters, percent-encoded: C0 (with the NUL PostgreSQL cannot store, and the
/// tab, newline and return a form could smuggle), DEL and C1.
pub const CONTROLS: [(&str, &str); 8] = [
    ("NUL", "%00"),
    ("BEL", "%07"),
    ("ESC", "%1B"),
    ("TAB", "%09"),
    ("LF", "%0A"),
    ("CR", "%0D"),
    ("DEL", "%7F"),
    ("C1 NEL", "%C2%85"),
];

/// Percent-encoded bytes that do not decode as UTF-8.
pub const NOT_UTF8: [(&str, &str); 5] = [
    ("a lone 0xFF", "%FF"),
    ("a truncated sequence", "%C3"),
    ("a bad continuation byte", "%C3%28"),
    ("an overlong encoding of /", "%C0%AF"),
    ("a UTF-16 surrogate", "%ED%A0%80"),
];

/// A value longer than the 8 KiB the auth listener reads in a query or body.
pub const OVER_LIMIT: usize = 9 * 1024;

/// A value within the listener's limits but longer than any parameter may be.
pub const LONG: usize = 2_000;

/// What is done to one parameter of an otherwise valid request.
#[derive(Clone, Copy, Debug)]
pub enum Defect {
    /// This percent-encoded text appended to the value.
    Appended(&'static str),
    /// This raw (not percent-encoded) byte appended: only a body can carry one.
    RawByte(u8),
    /// The parameter sent twice.
    Repeated,
    /// The value replaced by this many repetitions of a character.
    Long(usize, char),
}

/// Every defect a form body can carry, with its name.
pub fn body_defects() -> Vec<(String, Defect)> {
    let mut defects = common_defects();
    defects.push(("a raw 0xFF byte".into(), Defect::RawByte(0xFF)));
    defects.push(("a raw 0xC3 byte".into(), Defect::RawByte(0xC3)));
    defects
}

/// Every defect a query can carry, with its name.
pub fn common_defects() -> Vec<(String, Defect)> {
    CONTROLS
        .iter()
        .chain(&NOT_UTF8)
        .map(|(name, encoded)| ((*name).to_owned(), Defect::Appended(encoded)))
        .chain([("repeated".to_owned(), Defect::Repeated)])
        .collect()
}

/// How a defect is expected to be refused: as a character that is not allowed, as an
/// encoding that is not UTF-8, or as the repetition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Control,
    NotUtf8,
    Repeated,
    OverLimit,
    Long,
}

impl Defect {
    pub fn kind(self) -> Kind {
        match self {
            Defect::Appended(encoded) if CONTROLS.iter().any(|(_, e)| *e == encoded) => {
                Kind::Control
            }
            Defect::Appended(_) | Defect::RawByte(_) => Kind::NotUtf8,
            Defect::Repeated => Kind::Repeated,
            Defect::Long(n, _) if n > 8 * 1024 => Kind::OverLimit,
            Defect::Long(..) => Kind::Long,
        }
    }

    /// The decoded value a server that accepted it would read (for `state`, which is echoed).
    pub fn decoded(self, value: &str) -> String {
        match self {
            Defect::Appended(encoded) => {
                let bytes: Vec<u8> = value
                    .bytes()
                    .chain(percent_encoding::percent_decode_str(encoded))
                    .collect();
                String::from_utf8_lossy(&bytes).into_owned()
            }
            Defect::Long(n, c) => c.to_string().repeat(n),
            _ => value.to_owned(),
        }
    }
}

/// `pairs` form-urlencoded.
pub fn encode(pairs: &[(&str, &str)]) -> Vec<u8> {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
        .into_bytes()
}

/// `pairs` form-urlencoded, with `defect` applied to the parameter `target`.
pub fn encode_with(pairs: &[(&str, &str)], target: &str, defect: Defect) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, value) in pairs {
        let mut add = |value: &str, suffix: &[u8]| {
            if !out.is_empty() {
                out.push(b'&');
            }
            out.extend(byte_serialize(name.as_bytes()).flat_map(str::bytes));
            out.push(b'=');
            out.extend(byte_serialize(value.as_bytes()).flat_map(str::bytes));
            out.extend_from_slice(suffix);
        };
        match (*name == target, defect) {
            (false, _) => add(value, b""),
            (true, Defect::Appended(encoded)) => add(value, encoded.as_bytes()),
            (true, Defect::RawByte(byte)) => add(value, &[byte]),
            (true, Defect::Repeated) => {
                add(value, b"");
                add(value, b"");
            }
            (true, Defect::Long(n, c)) => add(&c.to_string().repeat(n), b""),
        }
    }
    out
}

/// A form POST of a raw body.
pub async fn post_raw(client: &reqwest::Client, url: &str, body: Vec<u8>) -> reqwest::Response {
    client
        .post(url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .unwrap()
}

/// An HTML error page: this status, no redirect, and the page says `message`.
pub async fn assert_page(response: reqwest::Response, status: u16, message: &str, case: &str) {
    assert_eq!(response.status().as_u16(), status, "{case}");
    assert!(response.headers().get("location").is_none(), "{case}");
    assert_eq!(
        response.headers()["content-type"],
        "text/html; charset=utf-8",
        "{case}"
    );
    let body = response.text().await.unwrap();
    assert!(
        body.contains(message),
        "{case}: the page does not say {message:?}: {body}"
    );
}
