//! Password hashing with Argon2id (RFC 9106), parameters per the OWASP recommendation:
//! 19 MiB of memory, 2 passes, 1 lane. Hashes are stored as PHC strings, so the parameters
//! can be raised later and old hashes still verify.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use secrecy::{ExposeSecret, SecretString};

use crate::error::OAuthError;
use crate::random::RandomSource;

const MEMORY_KIB: u32 = 19 * 1024;
const PASSES: u32 = 2;
const LANES: u32 = 1;

fn argon2() -> Result<Argon2<'static>, OAuthError> {
    let params =
        Params::new(MEMORY_KIB, PASSES, LANES, None).map_err(|_| OAuthError::PasswordHash)?;
    Ok(Argon2::new(Algorithm::Argon2id, Version::V0x13, params))
}

/// Hashes a password with a fresh 128-bit salt, on a blocking thread: Argon2id holds a core
/// for tens of milliseconds, which must not stall the async runtime.
pub async fn hash_password(
    password: SecretString,
    random: &dyn RandomSource,
) -> Result<String, OAuthError> {
    let mut salt = [0u8; 16];
    random.fill(&mut salt)?;
    let span = tracing::Span::current();
    tokio::task::spawn_blocking(move || span.in_scope(|| hash_password_with_salt(&password, &salt)))
        .await
        .map_err(|_| OAuthError::Blocking)?
}

fn hash_password_with_salt(password: &SecretString, salt: &[u8; 16]) -> Result<String, OAuthError> {
    let salt = SaltString::encode_b64(salt).map_err(|_| OAuthError::PasswordHash)?;
    let hash = argon2()?
        .hash_password(password.expose_secret().as_bytes(), &salt)
        .map_err(|_| OAuthError::PasswordHash)?;
    Ok(hash.to_string())
}

/// What a user created without a password has instead of a hash: not a PHC string, so no
/// password can ever match it (the `!` follows the convention of `/etc/shadow`).
pub const NO_PASSWORD: &str = "!no password set";

/// True when `phc` is a hash a password could match: false for [`NO_PASSWORD`] and for
/// anything else that is not a PHC string, which sign-in then refuses as a wrong password.
pub fn is_usable(phc: &str) -> bool {
    PasswordHash::new(phc).is_ok()
}

/// True when the password matches the stored PHC hash; constant-time inside argon2.
pub fn verify_password(password: &SecretString, phc: &str) -> Result<bool, OAuthError> {
    let parsed = PasswordHash::new(phc).map_err(|_| OAuthError::PasswordHash)?;
    Ok(argon2()?
        .verify_password(password.expose_secret().as_bytes(), &parsed)
        .is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::OsRandom;

    fn secret(s: &str) -> SecretString {
        SecretString::from(s.to_owned())
    }

    #[tokio::test]
    async fn hash_is_argon2id_and_verifies_only_the_right_password() {
        let hash = hash_password(secret("correct horse"), &OsRandom::new())
            .await
            .unwrap();
        assert!(
            hash.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"),
            "{hash}"
        );
        assert!(verify_password(&secret("correct horse"), &hash).unwrap());
        assert!(!verify_password(&secret("correct horsf"), &hash).unwrap());
    }

    #[test]
    fn no_password_is_unusable_and_a_hash_is_usable() {
        assert!(!is_usable(NO_PASSWORD));
        assert!(!is_usable(""));
        assert!(verify_password(&secret("x"), NO_PASSWORD).is_err());
        let hash = hash_password_with_salt(&secret("correct horse"), &[7; 16]).unwrap();
        assert!(is_usable(&hash));
    }
}
