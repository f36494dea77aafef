//! The clients a node authenticated at its token endpoint lately, kept in memory so that a
//! refresh is one statement (the rotation) rather than two, and a code exchange one trip
//! (the redemption, which then also makes the code's checks) rather than two.
//!
//! A kept copy is only a guess: the rotation's statement and the redemption's require the
//! client to be enabled and still in the state the copy was read in (`created_at` and
//! `revision`, which every change of a client raises, on any node), and a refusal finds a
//! changed client before it decides anything. So a disabled client, a rotated secret or a changed setting takes
//! effect at the next request, on every node, as if nothing were kept. Only clients that
//! authenticated are kept: an unknown id or a wrong secret is looked up every time.

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex, PoisonError};

use lru::LruCache;
use store::{Client, TenantId};

/// Clients kept per node, least recently used out first: about 0.5 KiB each.
const KEPT: NonZeroUsize = match NonZeroUsize::new(4096) {
    Some(n) => n,
    None => NonZeroUsize::MIN,
};

type Key = (TenantId, String);

/// Clones share the clients kept.
#[derive(Clone)]
pub struct KnownClients {
    kept: Arc<Mutex<LruCache<Key, Arc<Client>>>>,
}

impl Default for KnownClients {
    fn default() -> KnownClients {
        KnownClients {
            kept: Arc::new(Mutex::new(LruCache::new(KEPT))),
        }
    }
}

impl std::fmt::Debug for KnownClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KnownClients").finish_non_exhaustive()
    }
}

impl KnownClients {
    /// The copy kept of this tenant's client, if any.
    pub fn get(&self, tenant: &TenantId, client_id: &str) -> Option<Arc<Client>> {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        // The key is owned; building one per lookup costs two small allocations, no I/O.
        kept.get(&(tenant.clone(), client_id.to_owned())).cloned()
    }

    /// Keeps a copy of a client that just authenticated with what the database holds.
    pub fn keep(&self, tenant: &TenantId, client: &Client) {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.put(
            (tenant.clone(), client.client_id.clone()),
            Arc::new(client.clone()),
        );
    }

    /// Drops the copy of a client found changed.
    pub fn forget(&self, tenant: &TenantId, client_id: &str) {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.pop(&(tenant.clone(), client_id.to_owned()));
    }
}
