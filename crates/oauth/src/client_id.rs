//! Client identifiers. RFC 6749 allows any visible ASCII; we register only unreserved URL
//! characters, so an id never needs escaping in a query, a form or a Basic header.

use std::fmt;

use crate::error::OAuthError;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientId(String);

impl ClientId {
    pub fn parse(value: &str) -> Result<ClientId, OAuthError> {
        if value.is_empty() || value.len() > 128 {
            return Err(OAuthError::InvalidClientId(
                "it must have 1 to 128 characters",
            ));
        }
        if !value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
        {
            return Err(OAuthError::InvalidClientId(
                "only letters, digits and - . _ ~ are allowed",
            ));
        }
        Ok(ClientId(value.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ClientId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_unreserved_characters_only() {
        assert!(ClientId::parse("demo-spa_1.x~").is_ok());
        for bad in ["", "a b", "a:b", "a/b", "é", &"a".repeat(129)] {
            assert!(ClientId::parse(bad).is_err(), "{bad:?} was accepted");
        }
    }
}
