//! The password policy of NIST SP 800-63B §5.1.1.2: a length floor (per tenant, 8 to 64
//! characters, 10 by default) and a ceiling of 256, no composition rules, and a refusal of
//! passwords that are the username or the email or that an estimator finds too guessable.
//! One check behind every path that sets a password: the CLI, the admin API, the password
//! link page and the account page.

use secrecy::{ExposeSecret, SecretString};
use store::TenantStore;

use crate::error::OAuthError;

/// The floor a tenant gets unless its administrator sets another.
pub const DEFAULT_MIN_LENGTH: u16 = 10;
/// The range a tenant's floor may be set in: NIST's minimum of 8, and a floor above 64 would
/// refuse passphrases people can still type.
pub const MIN_LENGTH_RANGE: std::ops::RangeInclusive<u16> = 8..=64;
/// Characters accepted at most: long enough for any passphrase (NIST asks for at least 64),
/// short enough that Argon2id and the estimator see bounded input.
pub const MAX_LENGTH: usize = 256;
/// zxcvbn's scores run 0 to 4; 3 is "safely unguessable: moderate protection from offline
/// slow-hash scenario", which is what an Argon2id hash faces once a database leaks.
const MIN_SCORE: u8 = 3;
/// The estimator's cost grows fast with the length; a prefix this long that scores well is
/// strong, and one that scores badly is not helped by what follows it often enough to matter.
const ESTIMATED_PREFIX: usize = 72;

/// A tenant's password policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PasswordPolicy {
    min_length: u16,
}

/// Why a password was refused, in words a person can act on. It never repeats the password.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PolicyRefusal(String);

impl PolicyRefusal {
    pub fn message(&self) -> &str {
        &self.0
    }
}

impl Default for PasswordPolicy {
    fn default() -> Self {
        Self {
            min_length: DEFAULT_MIN_LENGTH,
        }
    }
}

/// The tenant's policy, as its administrator set it. A floor outside the range (which the
/// admin API and the CLI refuse to store) falls back to the default, never below it.
pub async fn policy_for(records: &TenantStore<'_>) -> Result<PasswordPolicy, OAuthError> {
    let stored = records.password_min_length().await?;
    Ok(u16::try_from(stored)
        .ok()
        .and_then(PasswordPolicy::with_min_length)
        .unwrap_or_default())
}

/// Checks a new password of the user `username` (with `email`) against the tenant's policy:
/// `Ok(Err(refusal))` says why it is refused, in words for the person who typed it.
pub async fn check_for_tenant(
    records: &TenantStore<'_>,
    password: &SecretString,
    username: &str,
    email: &str,
) -> Result<Result<(), PolicyRefusal>, OAuthError> {
    Ok(policy_for(records).await?.check(password, username, email))
}

impl PasswordPolicy {
    /// The policy with this floor, or `None` outside [`MIN_LENGTH_RANGE`].
    pub fn with_min_length(min_length: u16) -> Option<Self> {
        MIN_LENGTH_RANGE
            .contains(&min_length)
            .then_some(Self { min_length })
    }

    pub fn min_length(&self) -> u16 {
        self.min_length
    }

    /// Accepts the password for this user, or says why not. `username` and `email` are the
    /// account's own (after the change, when both change at once).
    pub fn check(
        &self,
        password: &SecretString,
        username: &str,
        email: &str,
    ) -> Result<(), PolicyRefusal> {
        let password = password.expose_secret();
        // NIST counts each Unicode code point as one character.
        let length = password.chars().count();
        if length < usize::from(self.min_length) {
            return Err(PolicyRefusal(format!(
                "The password must have at least {} characters.",
                self.min_length
            )));
        }
        if length > MAX_LENGTH {
            return Err(PolicyRefusal(format!(
                "The password must have at most {MAX_LENGTH} characters."
            )));
        }
        // The sign-in form refuses control characters, so such a password could never be used.
        if password.contains(char::is_control) {
            return Err(PolicyRefusal(
                "The password must not contain control characters.".to_owned(),
            ));
        }
        let same_as =
            |other: &str| !other.is_empty() && password.to_lowercase() == other.to_lowercase();
        if same_as(username) {
            return Err(PolicyRefusal(
                "The password must not be the username.".to_owned(),
            ));
        }
        if same_as(email) {
            return Err(PolicyRefusal(
                "The password must not be the email address.".to_owned(),
            ));
        }
        let prefix: String = password.chars().take(ESTIMATED_PREFIX).collect();
        let estimate = zxcvbn::zxcvbn(&prefix, &[username, email]);
        if u8::from(estimate.score()) < MIN_SCORE {
            let why = estimate
                .feedback()
                .and_then(|feedback| feedback.warning())
                .map(|warning| format!(" {warning}"))
                .unwrap_or_default();
            return Err(PolicyRefusal(format!(
                "The password is too easy to guess.{why} A few uncommon words together make a \
                 strong one."
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(policy: PasswordPolicy, password: &str) -> Result<(), PolicyRefusal> {
        policy.check(
            &SecretString::from(password.to_owned()),
            "ada",
            "ada.lovelace@example.com",
        )
    }

    #[test]
    fn the_floor_is_per_tenant_within_nist_range() {
        assert_eq!(PasswordPolicy::default().min_length(), 10);
        assert!(PasswordPolicy::with_min_length(7).is_none());
        assert!(PasswordPolicy::with_min_length(65).is_none());
        let twelve = PasswordPolicy::with_min_length(12).unwrap();
        let refused = check(twelve, "tX9#qLmv2!z").unwrap_err();
        assert_eq!(
            refused.message(),
            "The password must have at least 12 characters."
        );
        assert!(check(twelve, "tX9#qLmv2!zQ").is_ok());
    }

    #[test]
    fn characters_are_code_points_not_bytes() {
        // Ten code points, twenty bytes: long enough.
        let policy = PasswordPolicy::default();
        assert!(check(policy, "ðæþßøåœŋħĸ").is_ok());
        assert!(check(policy, "ðæþßøåœŋħ").is_err());
    }

    #[test]
    fn the_ceiling_is_256() {
        let policy = PasswordPolicy::default();
        let long = "correct horse battery staple ".repeat(9);
        assert!(check(policy, &long[..256]).is_ok());
        let refused = check(policy, &long[..257]).unwrap_err();
        assert_eq!(
            refused.message(),
            "The password must have at most 256 characters."
        );
    }

    #[test]
    fn control_characters_are_refused() {
        let refused = check(PasswordPolicy::default(), "marmalade\ttugboat ceiling").unwrap_err();
        assert_eq!(
            refused.message(),
            "The password must not contain control characters."
        );
    }

    #[test]
    fn the_username_and_email_are_refused_in_any_case() {
        let policy = PasswordPolicy::with_min_length(8).unwrap();
        let refused = policy
            .check(
                &SecretString::from("Technician7".to_owned()),
                "technician7",
                "t@example.com",
            )
            .unwrap_err();
        assert_eq!(refused.message(), "The password must not be the username.");
        let refused = check(policy, "ADA.LOVELACE@example.com").unwrap_err();
        assert_eq!(
            refused.message(),
            "The password must not be the email address."
        );
    }

    #[test]
    fn guessable_passwords_are_refused_without_composition_rules() {
        let policy = PasswordPolicy::default();
        for weak in [
            "password123",
            "qwertyuiop",
            "aaaaaaaaaaaa",
            "Ada.Lovelace",
            "lovelace1234",
        ] {
            let Err(refused) = check(policy, weak) else {
                panic!("{weak} accepted")
            };
            assert!(
                refused
                    .message()
                    .starts_with("The password is too easy to guess."),
                "{weak}: {refused}"
            );
        }
        // Lower case only, no digits or symbols: accepted, as NIST asks.
        assert!(check(policy, "marmalade tugboat ceiling").is_ok());
    }
}
