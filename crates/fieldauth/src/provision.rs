//! Provisioning: the operator's commands for clients and organizations (users are
//! created through `admin::users`).
//! Each validates its input at the edge, writes one record, and returns a [`Report`].

use anyhow::Context;
use jose::UnixTime;
use oauth::cors::WebOrigin;
use oauth::{ClientId, RandomSource, RedirectUri, Scope, Username};
use secrecy::ExposeSecret;
use serde_json::json;
use store::{NewClient, Store, TenantId, TenantStore, User};

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
