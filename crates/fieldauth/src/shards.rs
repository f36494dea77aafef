//! `--shards FILE`: which tenants live in which database. The file is TOML:
//!
//! ```toml
//! [shards]
//! east = "postgres://fieldauth@db-east/fieldauth"
//!
//! [tenants]
//! acme = "east"
//! ```
//!
//! Tenants that are not listed live in the `--database-url` database. Errors name the file
//! and the place, never a URL, which may carry a password.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context};
use serde::Deserialize;
use store::{ShardMap, TenantId};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ShardFile {
    #[serde(default)]
    shards: BTreeMap<String, String>,
    #[serde(default)]
    tenants: BTreeMap<String, String>,
}

pub fn load(path: &Path) -> anyhow::Result<ShardMap> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--shards {}: cannot read the file", path.display()))?;
    parse(&text).with_context(|| format!("--shards {}", path.display()))
}

fn parse(text: &str) -> anyhow::Result<ShardMap> {
    let file: ShardFile = toml::from_str(text).map_err(|e| {
        // The message only: toml's full report quotes the line, which may hold a URL.
        let line = e
            .span()
            .map(|span| text[..span.start.min(text.len())].lines().count().max(1));
        match line {
            Some(line) => anyhow::anyhow!("line {line}: {}", e.message()),
            None => anyhow::anyhow!("{}", e.message()),
        }
    })?;
    for (name, url) in &file.shards {
        if name.is_empty() || name == "default" {
            bail!("shard name {name:?} is reserved or empty");
        }
        if store::Backend::from_url(url).is_err() {
            bail!("shard {name:?}: the URL must start with sqlite:// or postgres://");
        }
    }
    let mut tenants = BTreeMap::new();
    for (tenant, shard) in file.tenants {
        let id = TenantId::parse(&tenant).with_context(|| format!("tenant {tenant:?}"))?;
        if !file.shards.contains_key(&shard) {
            bail!("tenant {tenant:?} is placed on shard {shard:?}, which [shards] does not define");
        }
        tenants.insert(id, shard);
    }
    Ok(ShardMap {
        shards: file.shards,
        tenants,
    })
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn maps_tenants_to_named_shards() {
        let map = parse(
            "[shards]\neast = \"postgres://u:pw@db/x\"\n[tenants]\nacme = \"east\"\nglobex = \"east\"\n",
        )
        .unwrap();
        assert_eq!(map.shards.len(), 1);
        assert_eq!(map.tenants.len(), 2);
    }

    #[test]
    fn refusals_never_quote_a_url() {
        for (text, why) in [
            ("[tenants]\nacme = \"west\"\n", "does not define"),
            (
                "[shards]\neast = \"mysql://u:pw@db\"\n",
                "sqlite:// or postgres://",
            ),
            ("[shards]\ndefault = \"postgres://u:pw@db\"\n", "reserved"),
            (
                "[shards]\neast = \"postgres://u:pw@db\"\n[tenants]\nAcme = \"east\"\n",
                "tenant \"Acme\"",
            ),
            ("[shards]\neast = postgres://u:pw@db\n", "line 2"),
            ("[shard]\neast = \"postgres://u:pw@db\"\n", "unknown field"),
        ] {
            let error = format!("{:#}", parse(text).unwrap_err());
            assert!(error.contains(why), "{text:?}: {error}");
            assert!(!error.contains("pw@"), "{text:?} leaked the URL: {error}");
        }
    }
}
