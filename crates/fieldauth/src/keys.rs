//! `fieldauth keys …`: list, rotate and retire the issuer's signing keys.

use anyhow::Context;
use jose::UnixTime;
use serde_json::json;
use store::Store;

use crate::report::Report;

pub async fn list(store: &Store, now: UnixTime) -> anyhow::Result<Report> {
    let keys = store
        .list_signing_keys()
        .await
        .context("cannot list signing keys")?;
    let signing = signing_kid(store, now).await?;
    // Newest first: active keys before the signing one are published but not signing yet.
    let mut before_signing = true;
    let statuses: Vec<&str> = keys
        .iter()
        .map(|k| {
            if k.retired_at.is_some() {
                "retired"
            } else if Some(&k.kid) == signing.as_ref() {
                before_signing = false;
                "signing"
            } else if before_signing {
                "pending"
            } else {
                "published"
            }
        })
        .collect();
    let text = keys
        .iter()
        .zip(&statuses)
        .map(|(k, status)| {
            format!(
                "{}\t{}\t{status}\tcreated {}",
                k.kid, k.algorithm, k.created_at
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    let list: Vec<_> = keys
        .iter()
        .zip(&statuses)
        .map(|(k, status)| {
            json!({
                "kid": k.kid,
                "alg": k.algorithm,
                "status": status,
                "created_at": k.created_at,
                "retired_at": k.retired_at,
            })
        })
        .collect();
    Ok(Report::new(json!({ "keys": list }), text))
}

pub async fn rotate(store: &Store, now: UnixTime) -> anyhow::Result<Report> {
    let kid = oauth::rotate_signing_key(store, now)
        .await
        .context("cannot rotate the signing key")?;
    Ok(Report::new(
        json!({ "kid": kid }),
        format!(
            "new signing key {kid}: published at each node's next key reload, signing after {} s",
            jose::PUBLISH_BEFORE_SIGNING
        ),
    ))
}

pub async fn retire(store: &Store, kid: &str, now: UnixTime) -> anyhow::Result<Report> {
    if signing_kid(store, now).await?.as_deref() == Some(kid) {
        anyhow::bail!(
            "cannot retire key {kid:?}: it signs tokens now; rotate first and retire it once the new key signs (keys list)"
        );
    }
    store
        .retire_signing_key(kid, now)
        .await
        .with_context(|| format!("cannot retire key {kid:?}"))?;
    Ok(Report::new(
        json!({ "kid": kid, "retired_at": now }),
        format!("retired key {kid}; it leaves the JWKS at each node's next key reload"),
    ))
}

async fn signing_kid(store: &Store, now: UnixTime) -> anyhow::Result<Option<String>> {
    let active = store
        .active_signing_keys()
        .await
        .context("cannot read signing keys")?;
    Ok(oauth::signing_index(&active, now).map(|i| active[i].kid.clone()))
}
