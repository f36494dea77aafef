//! `fieldauth keys …`: list, rotate and retire the issuer's signing keys, and the key
//! encryption keys (KEK) that seal them: reading KEK files, making one, re-sealing under one.

use std::path::Path;

use anyhow::Context;
use jose::UnixTime;
use oauth::sealing::{Kek, KeyEncryption};
use oauth::RandomSource;
use serde_json::json;
use store::Store;

use crate::cli::KekArgs;
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

pub async fn rotate(store: &Store, kek: &KekArgs, now: UnixTime) -> anyhow::Result<Report> {
    let encryption = key_encryption(kek)?;
    let kid = oauth::rotate_signing_key(store, now, &encryption)
        .await
        .map_err(|e| naming_the_kek(e, "cannot rotate the signing key"))?;
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

/// `what` failed; a key that does not open names the flag that gives its KEK.
pub fn naming_the_kek(error: oauth::OAuthError, what: &'static str) -> anyhow::Error {
    let sealing = matches!(error, oauth::OAuthError::KeySealing { .. });
    let error = anyhow::Error::from(error);
    match sealing {
        true => error.context(format!("{what} (--key-encryption-key-file)")),
        false => error.context(what),
    }
}

/// The KEKs named by the flags, each file checked (a bad one names its flag).
pub fn key_encryption(args: &KekArgs) -> anyhow::Result<KeyEncryption> {
    let read = |path: &Option<std::path::PathBuf>, flag| {
        path.as_deref().map(|p| read_kek(p, flag)).transpose()
    };
    Ok(KeyEncryption::new(
        read(&args.key_encryption_key_file, "--key-encryption-key-file")?,
        read(
            &args.previous_key_encryption_key_file,
            "--previous-key-encryption-key-file",
        )?,
    ))
}

/// Reads a KEK file. One that other users may read is used, with a warning: refusing it
/// would stop a node over a mode that secret stores (Kubernetes' default 0644) often set.
pub fn read_kek(path: &Path, flag: &str) -> anyhow::Result<Kek> {
    let contents = std::fs::read(path).with_context(|| format!("{flag} {path:?}"))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(path)
            .with_context(|| format!("{flag} {path:?}"))?
            .permissions()
            .mode();
        if mode & 0o077 != 0 {
            tracing::warn!(file = ?path, mode = format!("{:o}", mode & 0o777), "{flag}: the key encryption key file is readable by other users; chmod 600 it");
        }
    }
    Kek::parse(&contents).with_context(|| format!("{flag} {path:?}"))
}

/// `keys new-kek`: 32 random bytes, base64url, written to a new file only its owner reads.
pub fn new_kek(out: &Path) -> anyhow::Result<Report> {
    use std::io::Write as _;
    let text = oauth::OsRandom::new()
        .token()
        .context("cannot draw a random key")?;
    let kek = Kek::parse(text.as_bytes()).context("cannot make a key encryption key")?;
    let mut file = std::fs::OpenOptions::new();
    file.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut file, 0o600);
    let mut file = file
        .open(out)
        .with_context(|| format!("cannot create --out {out:?}"))?;
    file.write_all(format!("{text}\n").as_bytes())
        .and_then(|()| file.sync_all())
        .with_context(|| format!("cannot write --out {out:?}"))?;
    let id = kek.id().to_string();
    Ok(Report::new(
        json!({ "file": out, "kek_id": id }),
        format!("new key encryption key {id} written to {}", out.display()),
    ))
}

/// `keys rewrap`: every key (retired ones too) sealed under the new KEK, in one transaction;
/// nodes that hold both KEKs keep opening them throughout.
pub async fn rewrap(store: &Store, current: Option<&Path>, new: &Path) -> anyhow::Result<Report> {
    let current = current
        .map(|p| read_kek(p, "--key-encryption-key-file"))
        .transpose()?;
    let new = read_kek(new, "--new-key-encryption-key-file")?;
    let id = new.id().to_string();
    let encryption = KeyEncryption::new(Some(new), current);
    let sealed = oauth::rewrap_stored_keys(store, &encryption)
        .await
        .map_err(|e| naming_the_kek(e, "cannot re-seal the signing keys"))?;
    Ok(Report::new(
        json!({ "kek_id": id, "keys_sealed": sealed }),
        format!("{sealed} signing keys sealed anew under the key encryption key {id}"),
    ))
}

async fn signing_kid(store: &Store, now: UnixTime) -> anyhow::Result<Option<String>> {
    let active = store
        .active_signing_keys()
        .await
        .context("cannot read signing keys")?;
    Ok(oauth::signing_index(&active, now).map(|i| active[i].kid.clone()))
}
