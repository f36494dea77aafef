//! Provisioning: the operator's commands for clients and users.
//! Each validates its input at the edge, writes one record, and returns a [`Report`].

use anyhow::Context;
use jose::UnixTime;
use oauth::cors::WebOrigin;
use oauth::{ClientId, RandomSource, RedirectUri, Scope, Username};
use secrecy::{ExposeSecret, SecretString};
use serde_json::json;
use store::{NewClient, NewUser, Store, TenantId};

use crate::report::Report;

/// What `client create` was asked for, before validation.
#[derive(Debug)]
pub struct ClientRequest<'a> {
    pub tenant: &'a str,
    pub client_id: &'a str,
    pub redirect_uris: &'a [String],
    pub confidential: bool,
    pub name: Option<&'a str>,
    pub scopes: &'a [String],
    pub web_origins: &'a [String],
}

pub async fn create_client(
    store: &Store,
    request: &ClientRequest<'_>,
    random: &dyn RandomSource,
    now: UnixTime,
) -> anyhow::Result<Report> {
    let tenant_id = tenant(request.tenant)?;
    let client_id = ClientId::parse(request.client_id)?;
    let redirect_uris = request
        .redirect_uris
        .iter()
        .map(|uri| {
            RedirectUri::parse(uri)
                .map(RedirectUri::into_string)
                .with_context(|| format!("--redirect-uri {uri:?}"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut web_origins = Vec::new();
    for origin in request.web_origins {
        let origin = WebOrigin::parse(origin)
            .with_context(|| format!("--web-origin {origin:?}"))?
            .into_string();
        if !web_origins.contains(&origin) {
            web_origins.push(origin);
        }
    }
    let scopes = match request.scopes {
        [] => Scope::ALL.iter().map(|s| s.as_str().to_owned()).collect(),
        given => given
            .iter()
            .map(|s| {
                Scope::parse(s)
                    .map(|s| s.as_str().to_owned())
                    .with_context(|| format!("--scope {s:?}"))
            })
            .collect::<anyhow::Result<Vec<_>>>()?,
    };
    let mut seen = std::collections::HashSet::new();
    let scopes: Vec<String> = scopes
        .into_iter()
        .filter(|s| seen.insert(s.clone()))
        .collect();
    let name = non_empty(request.name.unwrap_or(client_id.as_str()), "--name")?;
    let secret = match request.confidential {
        true => Some(oauth::secret::generate_client_secret(random)?),
        false => None,
    };
    let tenant = store.tenant(&tenant_id);
    tenant
        .require()
        .await
        .with_context(|| format!("tenant {tenant_id}"))?;
    let new = NewClient {
        client_id: client_id.as_str(),
        name,
        secret_hash: secret.as_ref().map(|(_, hash)| &hash[..]),
        redirect_uris: &redirect_uris,
        scopes: &scopes,
    };
    tenant
        .create_client_with_web_origins(&new, &web_origins, now)
        .await
        .with_context(|| format!("cannot create client \"{client_id}\" in tenant {tenant_id}"))?;
    Ok(match secret {
        Some((secret, _)) => Report::new(
            json!({ "client_id": client_id.as_str(), "client_secret": secret.expose_secret(), "web_origins": web_origins }),
            format!(
                "created confidential client {client_id}\nclient_secret: {}\n(shown once: only its hash is stored)",
                secret.expose_secret()
            ),
        ),
        None => Report::new(json!({ "client_id": client_id.as_str(), "web_origins": web_origins }), format!("created public client {client_id}")),
    })
}

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
