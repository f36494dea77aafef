//! Checks of the free text an admin sends (names, emails), shared by every resource, so the
//! admin API and the CLI refuse the same input with the same words.

use crate::error::AdminError;

/// The longest display name kept.
pub const MAX_NAME_CHARS: usize = 200;

/// A display name: trimmed, not empty, at most [`MAX_NAME_CHARS`], no control characters
/// (which PostgreSQL may refuse to store, and which no name needs).
pub fn display_name<'a>(value: &'a str, field: &str) -> Result<&'a str, AdminError> {
    let value = value.trim();
    if value.is_empty() {
        return Err(AdminError::Invalid(format!("{field} must not be empty")));
    }
    if value.chars().count() > MAX_NAME_CHARS {
        return Err(AdminError::Invalid(format!(
            "{field} must have at most {MAX_NAME_CHARS} characters"
        )));
    }
    if value.chars().any(char::is_control) {
        return Err(AdminError::Invalid(format!(
            "{field} must not contain control characters"
        )));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_trimmed_and_refused_when_empty_long_or_controlled() {
        assert_eq!(display_name("  Acme  ", "name").unwrap(), "Acme");
        for bad in ["", "   ", "a\u{0}b", "a\nb", &"x".repeat(201)] {
            let Err(AdminError::Invalid(why)) = display_name(bad, "name") else {
                panic!("{bad:?} was accepted");
            };
            assert!(why.starts_with("name must "), "{why}");
        }
    }
}
