//! Password hashing with Argon2id (RFC 9106), parameters per the OWASP recommendation:
//! 19 MiB of memory, 2 passes, 1 lane. Hashes are stored as PHC strings, so the parameters
//! can be raised later and old hashes still verify.

use std::sync::Arc;

use argon2::password_hash::{Output, PasswordHash, PasswordHasher, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use secrecy::{ExposeSecret, SecretString};

use crate::argon2_memory::Argon2Memory;
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

/// True when the password matches the stored PHC hash, with memory allocated for this one
/// hash; the server verifies with [`verify_password_in`].
pub fn verify_password(password: &SecretString, phc: &str) -> Result<bool, OAuthError> {
    let once = Arc::new(Argon2Memory::with_idle(std::time::Duration::ZERO));
    verify_password_in(password, phc, &once)
}

/// True when the password matches the stored PHC hash, hashing in memory kept between
/// hashes. The algorithm, version and parameters are the stored hash's own, so hashes made
/// with older parameters still verify (as `argon2`'s `PasswordVerifier`, which allocates
/// each time); the outputs are compared in constant time (`Output`'s equality). A PHC
/// string that is not Argon2 or lacks a salt or an output matches no password.
pub fn verify_password_in(
    password: &SecretString,
    phc: &str,
    memory: &Arc<Argon2Memory>,
) -> Result<bool, OAuthError> {
    let parsed = PasswordHash::new(phc).map_err(|_| OAuthError::PasswordHash)?;
    let computed = (|| {
        let (salt, expected) = parsed.salt.zip(parsed.hash)?;
        let algorithm = Algorithm::try_from(parsed.algorithm).ok()?;
        let version = match parsed.version {
            Some(version) => Version::try_from(version).ok()?,
            None => Version::default(),
        };
        let params = Params::try_from(&parsed).ok()?;
        let mut salt_bytes = [0u8; 64];
        let salt = salt.decode_b64(&mut salt_bytes).ok()?;
        let argon2 = Argon2::new(algorithm, version, params.clone());
        let computed = memory.with_blocks(params.block_count(), |blocks| {
            Output::init_with(expected.len(), |out| {
                argon2
                    .hash_password_into_with_memory(
                        password.expose_secret().as_bytes(),
                        salt,
                        out,
                        blocks,
                    )
                    .map_err(|_| argon2::password_hash::Error::Password)
            })
        });
        Some((computed.ok()?, expected))
    })();
    Ok(computed.is_some_and(|(computed, expected)| computed == expected))
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

    /// The kept memory verifies exactly as the `argon2` crate's own verifier, for hashes of
    /// the current parameters and of others (an older, smaller hash; Argon2i).
    #[test]
    fn kept_memory_verifies_as_the_crates_verifier_does() {
        use argon2::password_hash::PasswordVerifier;
        let memory = Arc::new(Argon2Memory::default());
        let current = hash_password_with_salt(&secret("correct horse"), &[7; 16]).unwrap();
        let salt = SaltString::encode_b64(&[9; 16]).unwrap();
        let older = Argon2::new(
            Algorithm::Argon2i,
            Version::V0x10,
            Params::new(4096, 3, 1, Some(16)).unwrap(),
        )
        .hash_password(b"correct horse", &salt)
        .unwrap()
        .to_string();
        for phc in [&current, &older] {
            let parsed = PasswordHash::new(phc).unwrap();
            for (password, matches) in [("correct horse", true), ("correct horsf", false)] {
                let crate_says = Argon2::default()
                    .verify_password(password.as_bytes(), &parsed)
                    .is_ok();
                assert_eq!(crate_says, matches, "{phc}");
                let kept = verify_password_in(&secret(password), phc, &memory).unwrap();
                assert_eq!(kept, matches, "{phc} with {password}");
            }
        }
        // Two sizes of memory, each kept once.
        assert_eq!(memory.kept(), 2);
        // Not Argon2, or no output: no password matches.
        let no_output = "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0";
        assert!(!verify_password_in(&secret("x"), no_output, &memory).unwrap());
        let pbkdf2 = "$pbkdf2-sha256$i=1000$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNo";
        assert!(!verify_password_in(&secret("x"), pbkdf2, &memory).unwrap());
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
