//! Provisioning: the operator's commands for users and organizations (clients are the
//! `admin` crate's).
//! Each validates its input at the edge, writes one record, and returns a [`Report`].

use anyhow::Context;
use jose::UnixTime;
use oauth::{RandomSource, Username};
use secrecy::SecretString;
use serde_json::json;
use store::{NewUser, Store, TenantId, TenantStore, User};

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

pub async fn create_organization(
    store: &Store,
    tenant: &str,
    name: &str,
    random: &dyn RandomSource,
    now: UnixTime,
) -> anyhow::Result<Report> {
    let tenant_id = self::tenant(tenant)?;
    let name = non_empty(name, "--name")?;
    let tenant = store.tenant(&tenant_id);
    tenant
        .require()
        .await
        .with_context(|| format!("tenant {tenant_id}"))?;
    let guid = random.uuid_v4()?;
    tenant
        .create_organization(&guid, name, now)
        .await
        .with_context(|| format!("cannot create organization in tenant {tenant_id}"))?;
    Ok(Report::new(
        json!({ "organization_guid": guid }),
        format!("created organization {name} ({guid})"),
    ))
}

pub async fn add_member(
    store: &Store,
    tenant: &str,
    organization_guid: &str,
    username: &str,
    now: UnixTime,
) -> anyhow::Result<Report> {
    let tenant_id = self::tenant(tenant)?;
    let organization_guid = organization(organization_guid)?;
    let username = Username::parse(username)?;
    let tenant = store.tenant(&tenant_id);
    let user = existing_user(&tenant, &username).await?;
    tenant
        .add_membership(&user.user_id, organization_guid, now)
        .await
        .with_context(|| {
            format!("cannot add \"{username}\" to organization {organization_guid:?}")
        })?;
    Ok(Report::new(
        json!({ "organization_guid": organization_guid, "sub": user.user_id }),
        format!("added {username} to organization {organization_guid}"),
    ))
}

/// Ends a membership. The user's grants for the organization end with it: refresh and the
/// API refuse a grant whose membership is gone.
pub async fn remove_member(
    store: &Store,
    tenant: &str,
    organization_guid: &str,
    username: &str,
) -> anyhow::Result<Report> {
    let tenant_id = self::tenant(tenant)?;
    let organization_guid = organization(organization_guid)?;
    let username = Username::parse(username)?;
    let tenant = store.tenant(&tenant_id);
    let user = existing_user(&tenant, &username).await?;
    let removed = tenant
        .remove_membership(&user.user_id, organization_guid)
        .await?;
    anyhow::ensure!(
        removed,
        "\"{username}\" is not a member of organization {organization_guid:?}"
    );
    Ok(Report::new(
        json!({ "organization_guid": organization_guid, "sub": user.user_id }),
        format!("removed {username} from organization {organization_guid}"),
    ))
}

fn tenant(id: &str) -> anyhow::Result<TenantId> {
    TenantId::parse(id).with_context(|| format!("--tenant {id:?}"))
}

/// An organization_guid as `org create` makes them: a UUID, lowercase and hyphenated.
fn organization(guid: &str) -> anyhow::Result<&str> {
    let shaped = guid.len() == 36
        && guid.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_digit() || (b'a'..=b'f').contains(&b),
        });
    anyhow::ensure!(
        shaped,
        "--org {guid:?} is not an organization_guid (a UUID)"
    );
    Ok(guid)
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

/// The user named `username` in an existing tenant, or why not.
async fn existing_user(tenant: &TenantStore<'_>, username: &Username) -> anyhow::Result<User> {
    tenant
        .require()
        .await
        .with_context(|| format!("tenant {}", tenant.id()))?;
    tenant
        .find_user_by_username(username.as_str())
        .await?
        .with_context(|| format!("user \"{username}\" not found in tenant {}", tenant.id()))
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
    fn names_and_organization_guids_refuse_control_characters() {
        assert_eq!(non_empty("  Acme  ", "--name").unwrap(), "Acme");
        for bad in ["", "  ", "Ac\u{0}me", "Acme\u{1b}[31m", "Ac\u{85}me"] {
            assert!(non_empty(bad, "--name").is_err(), "{bad:?} was accepted");
        }
        assert!(organization("0f8fad5b-d9cb-469f-a165-70867728950e").is_ok());
        for bad in [
            "",
            "0f8fad5b-d9cb-469f-a165-70867728950",
            "0F8FAD5B-D9CB-469F-A165-70867728950E",
            "0f8fad5b-d9cb-469f-a165-70867728950\u{0}",
            "0f8fad5bd9cb-469f-a165-70867728950ee",
        ] {
            assert!(organization(bad).is_err(), "{bad:?} was accepted");
        }
    }
}
