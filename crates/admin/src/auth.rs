//! How an admin API request proves its token: `Authorization: Bearer <token>` (RFC 6750
//! §2.1). Missing, malformed, unknown and revoked tokens are all the same 401, so a caller
//! learns nothing about which tokens exist. The token is never logged.

use axum::http::HeaderValue;
use store::{Store, TenantId};

use crate::error::AdminError;
use crate::tokens::TOKEN_PREFIX;

/// What a token may administer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AdminScope {
    /// Every tenant, and the tenants themselves (create, delete).
    Every,
    /// This tenant alone: any other tenant's resource is 404 to it.
    Tenant(TenantId),
}

/// The caller of an admin request: the token's name (what the audit trail records) and scope.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Admin {
    pub name: String,
    pub scope: AdminScope,
}

impl Admin {
    /// Whether this admin may see and change `tenant`.
    pub fn may_administer(&self, tenant: &TenantId) -> bool {
        match &self.scope {
            AdminScope::Every => true,
            AdminScope::Tenant(own) => own == tenant,
        }
    }
}

/// The admin behind an `Authorization` header, or `Unauthorized`.
///
/// The token is looked up by its SHA-256: comparing hashes of 256-bit random values leaks
/// nothing about a token through timing (a guess's hash says nothing of the token's), as for
/// the other hashed secrets (docs/decisions.md).
pub async fn authenticate(
    store: &Store,
    authorization: Option<&HeaderValue>,
) -> Result<Admin, AdminError> {
    let token = bearer_token(authorization).ok_or(AdminError::Unauthorized)?;
    let hash = oauth::secret::hash_secret(token);
    let record = store
        .find_admin_token(&hash)
        .await?
        .ok_or(AdminError::Unauthorized)?;
    Ok(Admin {
        name: record.name,
        scope: match record.tenant {
            Some(tenant) => AdminScope::Tenant(tenant),
            None => AdminScope::Every,
        },
    })
}

/// The token of a `Bearer` header that could be an admin token at all: the scheme is
/// case-insensitive, the token ours by its prefix and of the base64url alphabet.
fn bearer_token(authorization: Option<&HeaderValue>) -> Option<&str> {
    let value = authorization?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    let ours = scheme.eq_ignore_ascii_case("bearer")
        && token.strip_prefix(TOKEN_PREFIX).is_some_and(|random| {
            random.len() == 43
                && random
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        });
    ours.then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens;
    use store::testing::TestDatabase;

    fn header(value: &str) -> HeaderValue {
        HeaderValue::from_str(value).unwrap()
    }

    #[tokio::test]
    async fn a_bearer_token_is_its_admin_until_revoked() {
        let db = TestDatabase::sqlite();
        let store = Store::connect(&db.url).await.unwrap();
        let acme = TenantId::parse("acme").unwrap();
        store.create_tenant(&acme, "Acme", 1).await.unwrap();
        let random = oauth::OsRandom::new();
        let every = tokens::create(&store, &random, "ops", None, 1)
            .await
            .unwrap();
        let office = tokens::create(&store, &random, "office", Some("acme"), 1)
            .await
            .unwrap();
        let bearer = |t: &tokens::NewToken| {
            header(&format!(
                "Bearer {}",
                secrecy::ExposeSecret::expose_secret(&t.token)
            ))
        };

        let ops = authenticate(&store, Some(&bearer(&every))).await.unwrap();
        assert_eq!(ops.scope, AdminScope::Every);
        assert!(ops.may_administer(&acme));
        let admin = authenticate(&store, Some(&bearer(&office))).await.unwrap();
        assert_eq!(
            admin,
            Admin {
                name: "office".into(),
                scope: AdminScope::Tenant(acme.clone())
            }
        );
        assert!(admin.may_administer(&acme));
        assert!(!admin.may_administer(&TenantId::parse("globex").unwrap()));

        // Lower-case scheme is the same scheme (RFC 7235 §2.1).
        let token = secrecy::ExposeSecret::expose_secret(&every.token).to_owned();
        let lower = header(&format!("bearer {token}"));
        assert!(authenticate(&store, Some(&lower)).await.is_ok());

        tokens::revoke(&store, "ops", 2).await.unwrap();
        // Refused below: the live token of another scheme or of no scheme, and the revoked one.
        let live = secrecy::ExposeSecret::expose_secret(&office.token).to_owned();
        let unknown = format!("Bearer {TOKEN_PREFIX}{}", "A".repeat(43));
        for refused in [
            None,
            Some(bearer(&every)),
            Some(header(&unknown)),
            Some(header(&format!("Basic {live}"))),
            Some(header(&live)),
            Some(header(&format!("Bearer {live} extra"))),
            Some(header("Bearer ")),
            Some(header(&format!("Bearer {}", &token[TOKEN_PREFIX.len()..]))),
        ] {
            let result = authenticate(&store, refused.as_ref()).await;
            assert!(
                matches!(result, Err(AdminError::Unauthorized)),
                "{refused:?}: {result:?}"
            );
        }
        store.close().await;
    }
}
