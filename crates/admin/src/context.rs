//! What every administrative operation is given: the store, who is asking, the time, a source
//! of randomness and the auth server's URL (for the links it hands out). The admin API builds
//! one per request from its token; the CLI builds one for the operator at the shell.

use oauth::RandomSource;
use store::{Store, StoreError, TenantId, TenantStore, UnixTime};

use crate::auth::{Admin, AdminScope};
use crate::error::AdminError;

pub struct Ctx<'a> {
    pub store: &'a Store,
    pub admin: &'a Admin,
    pub now: UnixTime,
    pub random: &'a dyn RandomSource,
    /// The auth server's base URL, without a trailing `/` (the issuer).
    pub auth_url: &'a str,
}

impl std::fmt::Debug for Ctx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ctx")
            .field("admin", &self.admin.name)
            .field("now", &self.now)
            .finish_non_exhaustive()
    }
}

/// The operator at the shell: the CLI's admin, of every tenant. The audit trail names it so.
pub fn cli_admin() -> Admin {
    Admin {
        name: "cli".to_owned(),
        scope: AdminScope::Every,
    }
}

impl<'a> Ctx<'a> {
    /// The tenant `id`, if this admin may administer it and it exists. Any other tenant is
    /// `NotFound`, exactly as a tenant that does not exist: a tenant token learns nothing of
    /// other tenants, not even their ids.
    pub async fn tenant(&self, id: &str) -> Result<TenantId, AdminError> {
        let tenant = TenantId::parse(id).map_err(|_| AdminError::NotFound("tenant"))?;
        if !self.admin.may_administer(&tenant) {
            return Err(AdminError::NotFound("tenant"));
        }
        match self.store.tenant(&tenant).find().await? {
            Some(_) => Ok(tenant),
            None => Err(AdminError::NotFound("tenant")),
        }
    }

    /// The tenant-scoped store of a tenant [`Ctx::tenant`] returned.
    pub fn records(&self, tenant: &'a TenantId) -> TenantStore<'a> {
        self.store.tenant(tenant)
    }

    /// `Unauthorized`-free refusal of what only an every-tenant token may do (create or
    /// delete tenants, list them all): a tenant token is told the resource is not there.
    pub fn require_every_tenant(&self, what: &'static str) -> Result<(), AdminError> {
        match self.admin.scope {
            AdminScope::Every => Ok(()),
            AdminScope::Tenant(_) => Err(AdminError::Forbidden(what)),
        }
    }
}

/// Maps a store error for an operation on `entity`: not found and conflicts become the admin
/// API's 404 and 409; everything else is the store's.
pub fn about(entity: &'static str) -> impl Fn(StoreError) -> AdminError {
    move |error| match error {
        StoreError::NotFound(what) => AdminError::NotFound(entity_name(what, entity)),
        StoreError::Conflict(what) => {
            AdminError::Conflict(format!("{} already exists", entity_name(what, entity)))
        }
        StoreError::Changed(what) => AdminError::PreconditionFailed(entity_name(what, entity)),
        StoreError::Refused(why) => AdminError::Conflict(why),
        other => other.into(),
    }
}

fn entity_name(what: store::Entity, fallback: &'static str) -> &'static str {
    use store::Entity;
    match what {
        Entity::Tenant => "tenant",
        Entity::Client => "client",
        Entity::User => "user",
        Entity::Organization => "organization",
        Entity::Membership => "membership",
        Entity::AdminToken => "admin token",
        _ => fallback,
    }
}
