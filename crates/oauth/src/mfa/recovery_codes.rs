//! Recovery codes: 10 single-use codes that stand in for the second factor when its device
//! is lost. Each holds 50 random bits written as `xxxxx-xxxxx` in Crockford's base32 (digits
//! and lowercase letters without i, l, o and u, so nothing reads as something else), shown
//! once, and stored only as a SHA-256 bound to its tenant and user.

use store::{TenantId, UnixTime};

use crate::error::OAuthError;
use crate::events::Event;
use crate::secret::hash_secret;
use crate::state::OAuthState;

/// How many codes a user is given at a time.
pub(crate) const CODES_PER_SET: usize = 10;
/// Characters of a code (without the dash): 10 × 5 = 50 random bits.
const CODE_CHARS: usize = 10;
const ALPHABET: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";

/// Spends one of the user's unused codes: true once per code, and audited then. The input
/// is forgiving: spaces around, any case, the dash or spaces inside or not, and the letters
/// Crockford's base32 reads as digits (o as 0, i and l as 1).
pub(crate) async fn redeem(
    state: &OAuthState,
    tenant: &TenantId,
    user_id: &str,
    code: &str,
    now: UnixTime,
) -> Result<bool, OAuthError> {
    let Some(code) = normalized(code) else {
        return Ok(false);
    };
    let records = state.store.tenant(tenant);
    let hash = code_hash(tenant, user_id, &code);
    if !records.redeem_recovery_code(user_id, &hash, now).await? {
        return Ok(false);
    }
    let remaining = records.remaining_recovery_codes(user_id).await?;
    tracing::info!(tenant = %tenant, sub = %user_id, remaining, "recovery code used");
    let event = Event::RecoveryCodeUsed { user_id, remaining };
    state.record(tenant, event, now).await;
    Ok(true)
}

/// A new set of codes for the user, in place of every earlier one (used or not), returned in
/// clear to be shown once.
pub(crate) async fn regenerate(
    state: &OAuthState,
    tenant: &TenantId,
    user_id: &str,
    now: UnixTime,
) -> Result<Vec<String>, OAuthError> {
    let (codes, hashes) = generate(state, tenant, user_id)?;
    state
        .store
        .tenant(tenant)
        .replace_recovery_codes(user_id, &hashes, now)
        .await?;
    tracing::info!(tenant = %tenant, sub = %user_id, "recovery codes generated");
    let event = Event::RecoveryCodesGenerated {
        user_id,
        count: codes.len(),
    };
    state.record(tenant, event, now).await;
    Ok(codes)
}

/// How many of the user's codes are still unused.
pub(crate) async fn remaining(
    state: &OAuthState,
    tenant: &TenantId,
    user_id: &str,
) -> Result<i64, OAuthError> {
    Ok(state
        .store
        .tenant(tenant)
        .remaining_recovery_codes(user_id)
        .await?)
}

/// A set of codes, as shown, and the hashes to store.
pub(super) fn generate(
    state: &OAuthState,
    tenant: &TenantId,
    user_id: &str,
) -> Result<(Vec<String>, Vec<[u8; 32]>), OAuthError> {
    let mut codes = Vec::with_capacity(CODES_PER_SET);
    let mut hashes = Vec::with_capacity(CODES_PER_SET);
    for _ in 0..CODES_PER_SET {
        let mut random = [0u8; 8];
        state.random.fill(&mut random)?;
        let plain = encode(u64::from_be_bytes(random));
        hashes.push(code_hash(tenant, user_id, &plain));
        codes.push(format!("{}-{}", &plain[..5], &plain[5..]));
    }
    Ok((codes, hashes))
}

/// The low 50 bits of `bits` as 10 characters of the alphabet.
fn encode(bits: u64) -> String {
    (0..CODE_CHARS)
        .rev()
        .map(|i| char::from(ALPHABET[((bits >> (5 * i)) & 0x1f) as usize]))
        .collect()
}

/// The code in its stored form, or `None` when it cannot be one.
fn normalized(code: &str) -> Option<String> {
    let code: String = code
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .map(|c| match c.to_ascii_lowercase() {
            'o' => '0',
            'i' | 'l' => '1',
            c => c,
        })
        .collect();
    let valid = code.len() == CODE_CHARS && code.bytes().all(|b| ALPHABET.contains(&b));
    valid.then_some(code)
}

/// The stored hash: SHA-256 over the code and whose it is, so one table of precomputed
/// hashes does not serve for every user.
fn code_hash(tenant: &TenantId, user_id: &str, code: &str) -> [u8; 32] {
    hash_secret(&format!("recovery code\0{tenant}\0{user_id}\0{code}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_ten_unambiguous_characters_in_two_groups() {
        assert_eq!(encode(0), "0000000000");
        assert_eq!(encode((1 << 50) - 1), "zzzzzzzzzz");
        // Only the low 50 bits count.
        assert_eq!(encode(u64::MAX), "zzzzzzzzzz");
        assert_eq!(encode(31 << 45 | 1), "z000000001");
        for letter in [b'i', b'l', b'o', b'u'] {
            assert!(!ALPHABET.contains(&letter));
        }
    }

    #[test]
    fn input_is_trimmed_lowercased_and_dashes_or_spaces_are_optional() {
        let stored = Some("abcde12345".to_owned());
        for typed in [
            "abcde-12345",
            "  ABCDE-12345 ",
            "abcde12345",
            "abcde 12345",
            "AbCdE-I2345",
            "abcde-l2345",
        ] {
            assert_eq!(normalized(typed), stored, "{typed:?}");
        }
        assert_eq!(normalized("ab0de-12345"), normalized("abode-12345"));
        for bad in [
            "abcde-1234",
            "abcde-123456",
            "abcde-1234u",
            "abcde_12345",
            "",
        ] {
            assert_eq!(normalized(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_hash_is_bound_to_tenant_and_user() {
        let acme = TenantId::parse("acme").unwrap();
        let other = TenantId::parse("other").unwrap();
        let code = "abcde12345";
        assert_eq!(code_hash(&acme, "u1", code), code_hash(&acme, "u1", code));
        assert_ne!(code_hash(&acme, "u1", code), code_hash(&acme, "u2", code));
        assert_ne!(code_hash(&acme, "u1", code), code_hash(&other, "u1", code));
    }
}
