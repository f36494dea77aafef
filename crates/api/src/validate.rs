//! Checks of client input, each failing with BAD_USER_INPUT and the field's name, before
//! anything is written.

use crate::error::ApiError;
use crate::schema::context::gql;
use crate::schema::scalars::DateTime;

/// The largest amount accepted anywhere: 100 billion in major units.
pub const MAX_CENTS: i64 = 10_000_000_000_000;

/// A check's result: a BAD_USER_INPUT GraphQL error when it fails.
pub type Checked<T> = Result<T, async_graphql::Error>;

fn bad(field: &str, why: &str) -> async_graphql::Error {
    gql(ApiError::BadUserInput(format!("{field}: {why}")))
}

/// Trimmed, non-empty, at most `max` characters, no control characters.
pub fn text(field: &str, value: &str, max: usize) -> Checked<String> {
    let value = value.trim();
    if value.is_empty() {
        return Err(bad(field, "must not be empty"));
    }
    if value.chars().count() > max {
        return Err(bad(field, &format!("must be at most {max} characters")));
    }
    if value.chars().any(|c| c.is_control() && c != '\n') {
        return Err(bad(field, "must not contain control characters"));
    }
    Ok(value.to_owned())
}

/// As [`text`], where absent or blank means none.
pub fn optional_text(field: &str, value: Option<&str>, max: usize) -> Checked<Option<String>> {
    match value.map(str::trim).filter(|v| !v.is_empty()) {
        Some(v) => text(field, v, max).map(Some),
        None => Ok(None),
    }
}

pub fn email(field: &str, value: Option<&str>) -> Checked<Option<String>> {
    let Some(value) = optional_text(field, value, 254)? else {
        return Ok(None);
    };
    let well_formed = value.split_once('@').is_some_and(|(local, domain)| {
        !local.is_empty() && domain.contains('.') && !domain.contains('@')
    }) && !value.contains(char::is_whitespace);
    match well_formed {
        true => Ok(Some(value)),
        false => Err(bad(field, "must be an email address")),
    }
}

pub fn phone(field: &str, value: Option<&str>) -> Checked<Option<String>> {
    let Some(value) = optional_text(field, value, 32)? else {
        return Ok(None);
    };
    let digits = value.chars().filter(char::is_ascii_digit).count();
    let allowed = value
        .chars()
        .all(|c| c.is_ascii_digit() || " +-().".contains(c));
    match allowed && digits >= 3 {
        true => Ok(Some(value)),
        false => Err(bad(
            field,
            "must be a phone number (digits, spaces, + - ( ) .)",
        )),
    }
}

/// ISO 4217: three capital letters.
pub fn currency(field: &str, value: &str) -> Checked<String> {
    match value.len() == 3 && value.bytes().all(|b| b.is_ascii_uppercase()) {
        true => Ok(value.to_owned()),
        false => Err(bad(field, "must be an ISO 4217 currency code such as USD")),
    }
}

/// ISO 3166-1 alpha-2: two capital letters.
pub fn country(field: &str, value: &str) -> Checked<String> {
    match value.len() == 2 && value.bytes().all(|b| b.is_ascii_uppercase()) {
        true => Ok(value.to_owned()),
        false => Err(bad(field, "must be an ISO 3166-1 country code such as US")),
    }
}

/// Cents, from zero to [`MAX_CENTS`].
pub fn amount(field: &str, cents: i64) -> Checked<i64> {
    match cents {
        c if c < 0 => Err(bad(field, "must not be negative")),
        c if c > MAX_CENTS => Err(bad(field, "is too large")),
        c => Ok(c),
    }
}

/// An integer within bounds, inclusive.
pub fn within(field: &str, value: i64, min: i64, max: i64) -> Checked<i64> {
    match (min..=max).contains(&value) {
        true => Ok(value),
        false => Err(bad(field, &format!("must be from {min} to {max}"))),
    }
}

/// A window whose end comes after its start, no longer than `max_days`.
pub fn window(field: &str, start: DateTime, end: DateTime, max_days: i64) -> Checked<(i64, i64)> {
    if end <= start {
        return Err(bad(field, "the end must come after the start"));
    }
    if end.0 - start.0 > max_days * 86_400 {
        return Err(bad(
            field,
            &format!("must not be longer than {max_days} days"),
        ));
    }
    Ok((start.0, end.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_trimmed_and_bounded() {
        assert_eq!(text("name", "  Ann  ", 10).unwrap(), "Ann");
        assert!(text("name", "   ", 10).is_err());
        assert!(text("name", "abcdefghijk", 10).is_err());
        assert!(text("name", "a\u{7}b", 10).is_err());
    }

    #[test]
    fn codes_emails_and_amounts() {
        assert!(currency("c", "USD").is_ok());
        for bad in ["usd", "US", "USDD", "U5D"] {
            assert!(currency("c", bad).is_err(), "{bad}");
        }
        assert!(country("c", "DE").is_ok() && country("c", "DEU").is_err());
        assert_eq!(
            email("e", Some(" a@b.io ")).unwrap().as_deref(),
            Some("a@b.io")
        );
        assert_eq!(email("e", Some("")).unwrap(), None);
        assert!(email("e", Some("a@b")).is_err() && email("e", Some("a b@c.io")).is_err());
        assert!(
            phone("p", Some("+1 (555) 010-2000")).is_ok() && phone("p", Some("call me")).is_err()
        );
        assert!(amount("a", -1).is_err() && amount("a", MAX_CENTS + 1).is_err());
        assert_eq!(amount("a", 0).unwrap(), 0);
    }

    #[test]
    fn windows_end_after_start() {
        assert!(window("w", DateTime(10), DateTime(10), 1).is_err());
        assert!(window("w", DateTime(10), DateTime(5), 1).is_err());
        assert!(window("w", DateTime(0), DateTime(86_401), 1).is_err());
        assert_eq!(window("w", DateTime(0), DateTime(60), 1).unwrap(), (0, 60));
    }
}
