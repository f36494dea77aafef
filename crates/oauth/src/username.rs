//! Usernames: compared case-insensitively, so `Alice` and `alice` are one account and cannot
//! be registered twice to impersonate each other. Stored and matched in lowercase.

use std::fmt;

use crate::error::OAuthError;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Username(String);

impl Username {
    pub fn parse(value: &str) -> Result<Username, OAuthError> {
        let value = value.trim();
        if value.is_empty() {
            return Err(OAuthError::InvalidUsername("it is empty"));
        }
        if value.chars().count() > 64 {
            return Err(OAuthError::InvalidUsername(
                "it is longer than 64 characters",
            ));
        }
        if value.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(OAuthError::InvalidUsername(
                "it contains a space or control character",
            ));
        }
        Ok(Username(value.to_lowercase()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Username {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usernames_are_trimmed_and_lowercased() {
        assert_eq!(Username::parse(" Alice ").unwrap().as_str(), "alice");
        assert_eq!(
            Username::parse("bob.smith@corp").unwrap().as_str(),
            "bob.smith@corp"
        );
    }

    #[test]
    fn refuses_empty_long_and_inner_whitespace() {
        for bad in ["", "   ", "a b", "a\tb", "a\u{0}b", &"x".repeat(65)] {
            assert!(Username::parse(bad).is_err(), "{bad:?} was accepted");
        }
    }
}
