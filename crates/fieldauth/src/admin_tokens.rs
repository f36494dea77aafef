//! `fieldauth admin-token …`: the bearer tokens of the admin API (issue 22). A token without a
//! tenant administers every tenant; one with a tenant only that tenant. The token is shown
//! once; only its SHA-256 is stored, and it is never logged.

use anyhow::Context;
use jose::UnixTime;
use oauth::RandomSource;
use secrecy::ExposeSecret;
use serde_json::json;
use store::{AdminToken, Entity, Store, StoreError, TenantId};

use crate::report::Report;

/// What every admin token starts with, so a leaked one is recognisable (secret scanners, logs
/// an operator greps) and can never be mistaken for a client secret or a refresh token.
pub const TOKEN_PREFIX: &str = "fa_admin_";

pub async fn create(
    store: &Store,
    name: &str,
    tenant: Option<&str>,
    random: &dyn RandomSource,
    now: UnixTime,
) -> anyhow::Result<Report> {
    let name = check_name(name)?;
    let tenant = match tenant {
        Some(id) => {
            let id = TenantId::parse(id).with_context(|| format!("--tenant {id:?}"))?;
            store
                .tenant(&id)
                .require()
                .await
                .with_context(|| format!("tenant {id}"))?;
            Some(id)
        }
        None => None,
    };
    let (secret, _) = oauth::secret::generate_client_secret(random)?;
    let token = secrecy::SecretString::from(format!("{TOKEN_PREFIX}{}", secret.expose_secret()));
    let hash = oauth::secret::hash_secret(token.expose_secret());
    store
        .create_admin_token(name, tenant.as_ref(), &hash, now)
        .await
        .map_err(|error| match error {
            StoreError::Conflict(Entity::AdminToken) => {
                anyhow::anyhow!(
                    "an admin token named {name:?} exists already (names are never reused)"
                )
            }
            other => anyhow::Error::new(other).context("cannot create the admin token"),
        })?;
    let scope = tenant
        .as_ref()
        .map_or("every tenant".to_owned(), |t| format!("tenant {t}"));
    Ok(Report::new(
        json!({ "name": name, "tenant": tenant.as_ref().map(TenantId::as_str), "token": token.expose_secret() }),
        format!(
            "created admin token {name} for {scope}\ntoken: {}\n(shown once: only its hash is stored)",
            token.expose_secret()
        ),
    ))
}

pub async fn list(store: &Store) -> anyhow::Result<Report> {
    let tokens = store
        .list_admin_tokens()
        .await
        .context("cannot list admin tokens")?;
    let text = tokens
        .iter()
        .map(|t| {
            format!(
                "{}\t{}\t{}\tcreated {}",
                t.name,
                t.tenant.as_ref().map_or("*", TenantId::as_str),
                status(t),
                t.created_at
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    let list: Vec<_> = tokens
        .iter()
        .map(|t| {
            json!({
                "name": t.name,
                "tenant": t.tenant.as_ref().map(TenantId::as_str),
                "status": status(t),
                "created_at": t.created_at,
                "revoked_at": t.revoked_at,
            })
        })
        .collect();
    Ok(Report::new(json!({ "admin_tokens": list }), text))
}

pub async fn revoke(store: &Store, name: &str, now: UnixTime) -> anyhow::Result<Report> {
    store
        .revoke_admin_token(name, now)
        .await
        .map_err(|error| match error {
            StoreError::NotFound(_) => {
                anyhow::anyhow!("no active admin token is named {name:?}")
            }
            other => anyhow::Error::new(other).context("cannot revoke the admin token"),
        })?;
    Ok(Report::new(
        json!({ "name": name, "status": "revoked" }),
        format!("revoked admin token {name}"),
    ))
}

fn status(token: &AdminToken) -> &'static str {
    match token.revoked_at {
        Some(_) => "revoked",
        None => "active",
    }
}

/// A token's name: what the audit trail records for each change made with it. 1 to 64
/// letters, digits and `-` `_` `.`, so it prints unambiguously in a log or a table.
fn check_name(name: &str) -> anyhow::Result<&str> {
    let valid = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    anyhow::ensure!(
        valid,
        "--name {name:?} must have 1 to 64 letters, digits, '-', '_' or '.'"
    );
    Ok(name)
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
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }
}
