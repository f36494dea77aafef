//! Answers to repeated queries, reused while their organization's data stands still.
//!
//! An answer is kept under a digest of the exact access token and the exact request, and with
//! the organization's data version read before it was computed (store, migration 0004: every
//! write raises the version in its own transaction). It is reused only for the same token,
//! the same request and the same version, and only after the token has passed every check an
//! uncached request passes (signature, expiry, the grant still standing). So a reused answer
//! is one this token would get if the query ran again: the token fixes the tenant, the
//! organization, the subject and the scopes, and no query field depends on the clock. Only
//! queries without errors are kept; mutations never are. Each node keeps its own, bounded by
//! bytes and evicted least recently used first; the version lives in the database, so nodes
//! never serve each other's stale answers. docs/decisions.md says why this exists.

use std::sync::Mutex;

use async_graphql::parser::types::{DocumentOperations, OperationType};
use aws_lc_rs::digest::{Context, SHA256};
use axum::body::Bytes;
use lru::LruCache;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

/// A token and a request, digested: 32 bytes per entry, whatever the query's length.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub struct Key([u8; 32]);

/// What the cache did for one request.
#[derive(Debug)]
pub enum Lookup {
    /// The answer, as kept.
    Hit(Bytes),
    /// Not kept: run it, then [`ResponseCache::put`] the answer under this key and version.
    Miss(Key, i64),
    /// Run it and keep nothing.
    Bypass,
}

/// What an entry costs besides its body: the key, the bookkeeping of the map and the list.
const ENTRY_OVERHEAD: usize = 128;

/// One answer may take at most this share of the budget, so a few huge ones cannot flush
/// everything else.
const MAX_SHARE: usize = 16;

struct Entry {
    data_version: i64,
    body: Bytes,
}

struct Kept {
    entries: LruCache<Key, Entry>,
    bytes: usize,
}

/// The cache and its counters; clones share both.
#[derive(Clone)]
pub struct ResponseCache {
    kept: Option<std::sync::Arc<Mutex<Kept>>>,
    budget: usize,
    lookups: Family<LookupLabels, Counter>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LookupLabels {
    /// `hit`, `miss` (not kept, or kept at another version), or `bypass` (not a query, no
    /// version, or the cache is off).
    result: &'static str,
}

impl std::fmt::Debug for ResponseCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseCache")
            .field("budget", &self.budget)
            .finish_non_exhaustive()
    }
}

impl ResponseCache {
    /// A cache of at most `budget` bytes; 0 turns it off.
    pub fn new(budget: usize) -> ResponseCache {
        let kept = (budget > 0).then(|| {
            std::sync::Arc::new(Mutex::new(Kept {
                entries: LruCache::unbounded(),
                bytes: 0,
            }))
        });
        ResponseCache {
            kept,
            budget,
            lookups: Family::default(),
        }
    }

    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "fieldauth_api_response_cache_lookups",
            "API requests by what the response cache did: hit, miss, or bypass",
            self.lookups.clone(),
        );
    }

    /// What the cache holds for this request. A request may be kept when it runs a query (not
    /// a mutation) and its organization has a data version; any other simply runs.
    pub fn lookup(
        &self,
        token: &str,
        request: &mut async_graphql::Request,
        data_version: Option<i64>,
    ) -> Lookup {
        let Some(data_version) = data_version else {
            self.count("bypass");
            return Lookup::Bypass;
        };
        if self.kept.is_none() || !is_query(request) {
            self.count("bypass");
            return Lookup::Bypass;
        }
        let Some(key) = key(token, request) else {
            self.count("bypass");
            return Lookup::Bypass;
        };
        match self.get(&key, data_version) {
            Some(body) => {
                self.count("hit");
                Lookup::Hit(body)
            }
            None => {
                self.count("miss");
                Lookup::Miss(key, data_version)
            }
        }
    }

    /// The answer kept for this key at this data version. One kept at another version is
    /// dropped: the data changed since.
    fn get(&self, key: &Key, data_version: i64) -> Option<Bytes> {
        let mut kept = self.lock()?;
        match kept.entries.get(key) {
            Some(entry) if entry.data_version == data_version => Some(entry.body.clone()),
            Some(_) => {
                if let Some(stale) = kept.entries.pop(key) {
                    kept.bytes -= cost(&stale.body);
                }
                None
            }
            None => None,
        }
    }

    /// Keeps an answer computed after `data_version` was read.
    pub fn put(&self, key: Key, data_version: i64, body: Bytes) {
        let size = cost(&body);
        if size > self.budget / MAX_SHARE {
            return;
        }
        let Some(mut kept) = self.lock() else {
            return;
        };
        if let Some(old) = kept.entries.put(key, Entry { data_version, body }) {
            kept.bytes -= cost(&old.body);
        }
        kept.bytes += size;
        while kept.bytes > self.budget {
            match kept.entries.pop_lru() {
                Some((_, evicted)) => kept.bytes -= cost(&evicted.body),
                None => break,
            }
        }
    }

    /// The bytes kept now.
    pub fn bytes(&self) -> usize {
        self.lock().map_or(0, |kept| kept.bytes)
    }

    fn lock(&self) -> Option<std::sync::MutexGuard<'_, Kept>> {
        // A panic while holding the lock cannot leave an entry half-written (each change is
        // one call on the map and one on the count), so a poisoned lock is still sound.
        self.kept
            .as_ref()
            .map(|kept| kept.lock().unwrap_or_else(|poisoned| poisoned.into_inner()))
    }

    fn count(&self, result: &'static str) {
        self.lookups.get_or_create(&LookupLabels { result }).inc();
    }
}

fn cost(body: &Bytes) -> usize {
    body.len() + ENTRY_OVERHEAD
}

/// Whether the operation the request runs is a query. A document that does not parse, or
/// names no operation it holds, is not: it runs and gets its error uncached. The parse is
/// kept in the request for the schema.
fn is_query(request: &mut async_graphql::Request) -> bool {
    let name = request.operation_name.clone();
    let Ok(document) = request.parsed_query() else {
        return false;
    };
    let operation = match (&document.operations, name.as_deref()) {
        (DocumentOperations::Single(operation), None) => Some(operation),
        (DocumentOperations::Single(_), Some(_)) => None,
        (DocumentOperations::Multiple(operations), Some(name)) => operations.get(name),
        // One named operation runs without being named, as async-graphql does.
        (DocumentOperations::Multiple(operations), None) if operations.len() == 1 => {
            operations.values().next()
        }
        (DocumentOperations::Multiple(_), None) => None,
    };
    operation.is_some_and(|operation| operation.node.ty == OperationType::Query)
}

/// The digest of a token and a request; `None` if the variables do not serialize.
fn key(token: &str, request: &async_graphql::Request) -> Option<Key> {
    let variables = serde_json::to_vec(&request.variables).ok()?;
    let mut digest = Context::new(&SHA256);
    // Each part length-prefixed, so no two different requests digest the same bytes.
    for part in [
        token.as_bytes(),
        request.query.as_bytes(),
        request.operation_name.as_deref().unwrap_or("").as_bytes(),
        &[u8::from(request.operation_name.is_some())],
        &variables,
    ] {
        digest.update(&(part.len() as u64).to_be_bytes());
        digest.update(part);
    }
    let mut key = [0; 32];
    key.copy_from_slice(digest.finish().as_ref());
    Some(Key(key))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn request(query: &str) -> async_graphql::Request {
        async_graphql::Request::new(query)
    }

    fn hit(lookup: &Lookup) -> Option<&[u8]> {
        match lookup {
            Lookup::Hit(body) => Some(body),
            _ => None,
        }
    }

    /// Looks up, and on a miss keeps `answer`; returns what the lookup found.
    fn serve(cache: &ResponseCache, token: &str, r: &mut async_graphql::Request, v: i64) -> Lookup {
        let lookup = cache.lookup(token, r, Some(v));
        if let Lookup::Miss(key, version) = &lookup {
            cache.put(
                *key,
                *version,
                Bytes::from(format!("{token}:{}:{v}", r.query)),
            );
        }
        lookup
    }

    #[test]
    fn only_queries_are_kept() {
        for (query, operation, kept) in [
            ("{ viewer { subject } }", None, true),
            ("query { viewer { subject } }", None, true),
            ("query Jobs { viewer { subject } }", None, true),
            ("query A { a } query B { b }", Some("B"), true),
            ("query A { a } mutation B { b }", Some("B"), false),
            ("query A { a } query B { b }", None, false),
            ("query A { a }", Some("C"), false),
            ("{ a }", Some("A"), false),
            ("mutation { createJob(input: {}) { id } }", None, false),
            ("subscription { a }", None, false),
            ("{ not closed", None, false),
        ] {
            let mut r = request(query);
            if let Some(name) = operation {
                r = r.operation_name(name);
            }
            assert_eq!(is_query(&mut r), kept, "{query} / {operation:?}");
        }
    }

    #[test]
    fn an_answer_is_reused_for_the_same_token_request_and_version_only() {
        let cache = ResponseCache::new(1 << 20);
        let mut jobs = request("{ jobs { id } }");
        assert!(matches!(
            serve(&cache, "t1", &mut jobs, 7),
            Lookup::Miss(..)
        ));
        assert_eq!(
            hit(&serve(&cache, "t1", &mut jobs, 7)),
            Some(&b"t1:{ jobs { id } }:7"[..])
        );
        // Another token (another grant, scope or organization) never shares it.
        assert!(matches!(
            serve(&cache, "t2", &mut jobs, 7),
            Lookup::Miss(..)
        ));
        // Nor another query, operation or variables.
        let mut other = request("{ jobs { id title } }");
        assert!(matches!(
            serve(&cache, "t1", &mut other, 7),
            Lookup::Miss(..)
        ));
        let mut with_variables = request("{ jobs { id } }").variables(
            async_graphql::Variables::from_json(serde_json::json!({ "first": 2 })),
        );
        assert!(matches!(
            serve(&cache, "t1", &mut with_variables, 7),
            Lookup::Miss(..)
        ));
        // A write raised the version: the old answer is gone, not just passed over.
        assert!(matches!(
            serve(&cache, "t1", &mut jobs, 8),
            Lookup::Miss(..)
        ));
        assert!(matches!(
            serve(&cache, "t1", &mut jobs, 7),
            Lookup::Miss(..)
        ));
    }

    #[test]
    fn no_version_or_no_budget_keeps_nothing() {
        let cache = ResponseCache::new(1 << 20);
        assert!(matches!(
            cache.lookup("t", &mut request("{ a }"), None),
            Lookup::Bypass
        ));
        let off = ResponseCache::new(0);
        assert!(matches!(
            off.lookup("t", &mut request("{ a }"), Some(1)),
            Lookup::Bypass
        ));
        off.put(key("t", &request("{ a }")).unwrap(), 1, Bytes::from("x"));
        assert_eq!(off.bytes(), 0);
    }

    #[test]
    fn the_budget_evicts_the_least_recently_used_and_refuses_the_huge() {
        let body = Bytes::from(vec![b'x'; 1000]);
        // Room for exactly MAX_SHARE answers of this size.
        let budget = cost(&body) * MAX_SHARE;
        let cache = ResponseCache::new(budget);
        let keys: Vec<Key> = (0..=MAX_SHARE)
            .map(|i| key("t", &request(&format!("{{ a{i} }}"))).unwrap())
            .collect();
        for k in &keys[..MAX_SHARE] {
            cache.put(*k, 1, body.clone());
        }
        assert_eq!(cache.bytes(), budget);
        // Touch the first, so the second is the least recently used.
        assert!(cache.get(&keys[0], 1).is_some());
        cache.put(keys[MAX_SHARE], 1, body.clone());
        assert_eq!(cache.bytes(), budget);
        assert!(cache.get(&keys[1], 1).is_none(), "evicted");
        for k in keys.iter().filter(|k| **k != keys[1]) {
            assert!(cache.get(k, 1).is_some());
        }
        // More than a sixteenth of the budget is never kept.
        let small = ResponseCache::new(cost(&body) * MAX_SHARE - 1);
        small.put(keys[0], 1, body);
        assert_eq!(small.bytes(), 0);
    }
}
