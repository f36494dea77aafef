//! Admin tokens: made, listed and revoked here for the CLI (`fieldauth admin-token`), and
//! checked in [`crate::auth`] for the admin API. A token is [`TOKEN_PREFIX`] and 256 random
//! bits; it is shown once, and only its SHA-256 is stored.

use oauth::RandomSource;
use secrecy::{ExposeSecret, SecretString};
use store::{AdminToken, Entity, Store, StoreError, TenantId, UnixTime};

use crate::error::AdminError;

/// What every admin token starts with, so a leaked one is recognisable (secret scanners, logs
/// an operator greps) and never mistaken for a client secret or a refresh token.
pub const TOKEN_PREFIX: &str = "fa_admin_";

/// A token just made: the stored record and the token itself, to be shown once.
#[derive(Debug)]
pub struct NewToken {
    pub record: AdminToken,
    pub token: SecretString,
}

/// Makes a token named `name`, for `tenant` alone or (`None`) for every tenant.
pub async fn create(
    store: &Store,
    random: &dyn RandomSource,
    name: &str,
    tenant: Option<&str>,
    now: UnixTime,
) -> Result<NewToken, AdminError> {
    let name = check_name(name)?;
    let tenant = match tenant {
        Some(id) => {
            let id =
                TenantId::parse(id).map_err(|e| AdminError::Invalid(format!("tenant: {e}")))?;
            store
                .tenant(&id)
                .require()
                .await
                .map_err(|error| match error {
                    StoreError::NotFound(_) => AdminError::NotFound("tenant"),
                    other => other.into(),
                })?;
            Some(id)
        }
        None => None,
    };
    let (secret, _) =
        oauth::secret::generate_client_secret(random).map_err(|_| AdminError::Internal)?;
    let token = SecretString::from(format!("{TOKEN_PREFIX}{}", secret.expose_secret()));
    let hash = oauth::secret::hash_secret(token.expose_secret());
    let record = store
        .create_admin_token(name, tenant.as_ref(), &hash, now)
        .await
        .map_err(|error| match error {
            StoreError::Conflict(Entity::AdminToken) => AdminError::Conflict(format!(
                "an admin token named {name:?} exists already (names are never reused)"
            )),
            other => other.into(),
        })?;
    Ok(NewToken { record, token })
}

/// Every token, revoked ones included, by name; never their values.
pub async fn list(store: &Store) -> Result<Vec<AdminToken>, AdminError> {
    Ok(store.list_admin_tokens().await?)
}

/// Ends the token named `name` at once.
pub async fn revoke(store: &Store, name: &str, now: UnixTime) -> Result<(), AdminError> {
    store
        .revoke_admin_token(name, now)
        .await
        .map_err(|error| match error {
            StoreError::NotFound(_) => AdminError::NotFound("active admin token"),
            other => other.into(),
        })
}

/// A token's name: what the audit trail records for each change made with it. 1 to 64
/// letters, digits and `-` `_` `.`, so it prints unambiguously in a log or a table.
fn check_name(name: &str) -> Result<&str, AdminError> {
    let valid = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    match valid {
        true => Ok(name),
        false => Err(AdminError::Invalid(format!(
            "name {name:?} must have 1 to 64 letters, digits, '-', '_' or '.'"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_short_and_plain() {
        for good in ["back-office", "ops_2026", "a", "acme.billing"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "two words",
            "tab\there",
            "nul\u{0}",
            "é",
            &"x".repeat(65),
        ] {
            assert!(
                matches!(check_name(bad), Err(AdminError::Invalid(_))),
                "{bad:?}"
            );
        }
    }
}
