//! `fieldauth keys …`: list, rotate and retire the issuer's signing keys.

use anyhow::Context;
use jose::UnixTime;
use serde_json::json;
use store::Store;

use crate::report::Report;

pub async fn list(store: &Store) -> anyhow::Result<Report> {
    let keys = store
        .list_signing_keys()
        .await
        .context("cannot list signing keys")?;
    // The newest key that is not retired signs; the other active ones are only published.
    let signing = keys
        .iter()
        .find(|k| k.retired_at.is_none())
        .map(|k| k.kid.clone());
    let status =
        |k: &store::StoredSigningKey| match (k.retired_at, Some(&k.kid) == signing.as_ref()) {
            (Some(_), _) => "retired",
            (None, true) => "signing",
            (None, false) => "published",
        };
    let text = keys
        .iter()
        .map(|k| {
            format!(
                "{}\t{}\t{}\tcreated {}",
                k.kid,
                k.algorithm,
                status(k),
                k.created_at
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    let list: Vec<_> = keys
        .iter()
        .map(|k| {
            json!({
                "kid": k.kid,
                "alg": k.algorithm,
                "status": status(k),
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
        format!("new signing key {kid}; nodes sign with it after their next key reload"),
    ))
}

pub async fn retire(store: &Store, kid: &str, now: UnixTime) -> anyhow::Result<Report> {
    store
        .retire_signing_key(kid, now)
        .await
        .with_context(|| format!("cannot retire key {kid:?}"))?;
    Ok(Report::new(
        json!({ "kid": kid, "retired_at": now }),
        format!("retired key {kid}; it leaves the JWKS at each node's next key reload"),
    ))
}
