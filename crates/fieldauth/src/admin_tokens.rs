//! `fieldauth admin-token …`: the CLI front end of [`admin::tokens`], which the admin API's
//! authentication shares.

use jose::UnixTime;
use oauth::RandomSource;
use secrecy::ExposeSecret;
use serde_json::json;
use store::{AdminToken, Store, TenantId};

use crate::report::Report;

pub async fn create(
    store: &Store,
    name: &str,
    tenant: Option<&str>,
    random: &dyn RandomSource,
    now: UnixTime,
) -> anyhow::Result<Report> {
    let made = admin::tokens::create(store, random, name, tenant, now)
        .await
        .map_err(|e| anyhow::anyhow!("cannot create the admin token: {e}"))?;
    let tenant = made.record.tenant.as_ref();
    let scope = tenant.map_or("every tenant".to_owned(), |t| format!("tenant {t}"));
    let token = made.token.expose_secret();
    Ok(Report::new(
        json!({ "name": name, "tenant": tenant.map(TenantId::as_str), "token": token }),
        format!(
            "created admin token {name} for {scope}\ntoken: {token}\n(shown once: only its hash is stored)"
        ),
    ))
}

pub async fn list(store: &Store) -> anyhow::Result<Report> {
    let tokens = admin::tokens::list(store)
        .await
        .map_err(|e| anyhow::anyhow!("cannot list admin tokens: {e}"))?;
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
    admin::tokens::revoke(store, name, now)
        .await
        .map_err(|e| anyhow::anyhow!("cannot revoke admin token {name:?}: {e}"))?;
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
