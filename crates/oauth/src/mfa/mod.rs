//! A second factor after the password: TOTP authenticators (`totp.rs`), single-use recovery
//! codes (`recovery_codes.rs`) and passkeys (`passkeys.rs`), and what proving one makes of a
//! session's `amr` (RFC 8176) and `acr`.

pub(crate) mod passkeys;
pub(crate) mod recovery_codes;
pub(crate) mod totp;

/// The `acr` of a session signed in by password alone.
pub const ACR_PASSWORD: &str = "urn:fieldauth:acr:pwd";
/// The `acr` of a session where two factors were proved.
pub const ACR_MFA: &str = "urn:fieldauth:acr:mfa";

/// A second factor proved by the user.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Factor {
    /// A TOTP code (RFC 6238).
    Totp,
    /// One of the user's single-use recovery codes: a one-time code, as far as RFC 8176 goes.
    RecoveryCode,
    /// A WebAuthn assertion. `hardware`: the credential cannot leave its authenticator (not
    /// backup-eligible), RFC 8176 `hwk`; a synced passkey is `swk`.
    Passkey { hardware: bool },
}

impl Factor {
    /// The RFC 8176 §2 `amr` value of this factor.
    pub fn amr(self) -> &'static str {
        match self {
            Factor::Totp | Factor::RecoveryCode => "otp",
            Factor::Passkey { hardware: true } => "hwk",
            Factor::Passkey { hardware: false } => "swk",
        }
    }
}

/// The `amr` of a session after `factor` was proved in it: what it had, the factor's value,
/// and `mfa` (RFC 8176 §2: more than one factor was used). A passkey used without a password
/// is two factors by itself: possession of the key and the user verification (PIN or
/// biometric) the authenticator performed, so it is `mfa` too (NIST SP 800-63B §5.1.9).
pub fn amr_with(before: &str, factor: Factor) -> String {
    let mut values: Vec<&str> = before
        .split(' ')
        .filter(|v| !v.is_empty() && *v != "mfa")
        .collect();
    if !values.contains(&factor.amr()) {
        values.push(factor.amr());
    }
    values.push("mfa");
    values.join(" ")
}

/// The `acr` that an `amr` amounts to.
pub fn acr_of(amr: &str) -> &'static str {
    match amr.split(' ').any(|v| v == "mfa") {
        true => ACR_MFA,
        false => ACR_PASSWORD,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_factor_adds_its_value_and_mfa_once() {
        assert_eq!(amr_with("pwd", Factor::Totp), "pwd otp mfa");
        assert_eq!(amr_with("pwd otp mfa", Factor::RecoveryCode), "pwd otp mfa");
        assert_eq!(
            amr_with("pwd otp mfa", Factor::Passkey { hardware: true }),
            "pwd otp hwk mfa"
        );
        assert_eq!(amr_with("", Factor::Passkey { hardware: false }), "swk mfa");
        assert_eq!(acr_of("pwd"), ACR_PASSWORD);
        assert_eq!(acr_of("pwd otp mfa"), ACR_MFA);
    }
}
