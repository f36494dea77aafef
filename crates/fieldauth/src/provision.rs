//! Provisioning: the operator's command for users (clients and organizations are the
//! `admin` crate's).
//! Each validates its input at the edge, writes one record, and returns a [`Report`].

use anyhow::Context;
use jose::UnixTime;
use oauth::{RandomSource, Username};
use secrecy::SecretString;
use serde_json::json;
use store::{NewUser, Store, TenantId};

use crate::report::Report;

#[derive(Debug)]
pub struct UserRequest<'a> {
    pub tenant: &'a str,
    pub username: &'a str,
    pub name: &'a str,
    pub email: &'a str,
}

pub async fn create_user(
    store: &Store,
    request: &UserRequest<'_>,
    password: SecretString,
    random: &dyn RandomSource,
    now: UnixTime,
) -> anyhow::Result<Report> {
    let tenant_id = tenant(request.tenant)?;
    let username = Username::parse(request.username)?;
    let name = non_empty(request.name, "--name")?;
    let email = check_email(request.email)?;
    oauth::password::check_new_password(&password)?;
    let tenant = store.tenant(&tenant_id);
    tenant
        .require()
        .await
        .with_context(|| format!("tenant {tenant_id}"))?;
    let sub = random.uuid_v4()?;
    let password_hash = oauth::password::hash_password(password, random).await?;
    let new = NewUser {
        user_id: &sub,
        username: username.as_str(),
        password_hash: &password_hash,
        name,
        email,
    };
    tenant
        .create_user(&new, now)
        .await
        .with_context(|| format!("cannot create user \"{username}\" in tenant {tenant_id}"))?;
    Ok(Report::new(
        json!({ "sub": sub }),
        format!("created user {username} (sub {sub})"),
    ))
}

fn tenant(id: &str) -> anyhow::Result<TenantId> {
    TenantId::parse(id).with_context(|| format!("--tenant {id:?}"))
}

/// Names: trimmed, 1 to 200 characters, no control characters (nothing prints them, and
/// PostgreSQL cannot store a NUL).
fn non_empty<'a>(value: &'a str, flag: &str) -> anyhow::Result<&'a str> {
    let value = value.trim();
    anyhow::ensure!(!value.is_empty(), "{flag} must not be empty");
    anyhow::ensure!(
        !value.contains(char::is_control),
        "{flag} must not contain control characters"
    );
    anyhow::ensure!(
        value.chars().count() <= 200,
        "{flag} must have at most 200 characters"
    );
    Ok(value)
}

/// A plausibility check, not RFC 5322: one `@` between non-empty parts, no spaces.
fn check_email(email: &str) -> anyhow::Result<&str> {
    let email = email.trim();
    let valid = match email.split_once('@') {
        Some((local, domain)) => {
            !local.is_empty()
                && domain.contains('.')
                && !domain.contains('@')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
        }
        None => false,
    };
    anyhow::ensure!(
        valid
            && email.len() <= 254
            && !email.contains(|c: char| c.is_whitespace() || c.is_control()),
        "--email {email:?} is not an email address"
    );
    Ok(email)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn email_plausibility() {
        assert!(check_email("alice@example.com").is_ok());
        for bad in [
            "alice",
            "@example.com",
            "alice@localhost",
            "a b@example.com",
            "a@b@c.com",
            "a@.com",
            "a\u{0}@example.com",
            "a@exam\u{7}ple.com",
        ] {
            assert!(check_email(bad).is_err(), "{bad} was accepted");
        }
    }

    #[test]
    fn names_refuse_control_characters() {
        assert_eq!(non_empty("  Acme  ", "--name").unwrap(), "Acme");
        for bad in ["", "  ", "Ac\u{0}me", "Acme\u{1b}[31m", "Ac\u{85}me"] {
            assert!(non_empty(bad, "--name").is_err(), "{bad:?} was accepted");
        }
    }
}
