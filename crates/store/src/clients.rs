//! OAuth clients of a tenant: their type, secret hash, redirect URIs, allowed scopes and the
//! web origins an operator added for the browser.

use crate::db::Store;
use crate::error::{Entity, StoreError};
use crate::revision::Revision;
use crate::tenant::{TenantId, TenantStore};
use crate::UnixTime;

/// RFC 6749 §2.1 client types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientType {
    Public,
    Confidential,
}

impl ClientType {
    fn as_str(self) -> &'static str {
        match self {
            ClientType::Public => "public",
            ClientType::Confidential => "confidential",
        }
    }

    fn parse(value: &str) -> Result<ClientType, StoreError> {
        match value {
            "public" => Ok(ClientType::Public),
            "confidential" => Ok(ClientType::Confidential),
            _ => Err(StoreError::Corrupt("client type")),
        }
    }
}

/// A client as the authorization and token endpoints need it, read in one query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Client {
    pub client_id: String,
    pub name: String,
    pub client_type: ClientType,
    /// SHA-256 of the secret; `Some` exactly for confidential clients.
    pub secret_hash: Option<Vec<u8>>,
    pub redirect_uris: Vec<String>,
    pub scopes: Vec<String>,
    pub created_at: UnixTime,
    /// Set by an admin: a disabled client is refused wherever it would be an unknown one.
    pub disabled: bool,
    /// The secret a rotation with a grace period replaced, still accepted until it ends.
    pub previous_secret: Option<PreviousSecret>,
    /// Seconds (0 to 120) during which a consumed refresh token of this client may be
    /// presented again while its successor is unused (issue 27); 0: never (spec §5.7).
    pub refresh_retry_seconds: i64,
    /// RFC 9449 §5.2 client metadata: its access tokens must be DPoP-bound.
    pub dpop_bound_access_tokens: bool,
    /// Raised by every change of the client: with `created_at`, the state that was read, so
    /// a copy kept in memory can be checked against the database inside a grant's statement
    /// ([`crate::RefreshingClient::known`]).
    pub revision: i64,
}

impl Client {
    /// The state of the client this copy was read in.
    pub fn state(&self) -> Revision {
        Revision {
            created_at: self.created_at,
            revision: self.revision,
        }
    }
}

/// A client's settings beyond its registration's URIs and scopes (issue 27); validated
/// before they get here. The default is what a client had before they existed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientSettings {
    /// 0 to 120 (the column's check): see [`Client::refresh_retry_seconds`].
    pub refresh_retry_seconds: i64,
    pub dpop_bound_access_tokens: bool,
}

/// A replaced secret's hash and the end of its grace period.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreviousSecret {
    pub hash: Vec<u8>,
    pub expires_at: UnixTime,
}

impl PreviousSecret {
    /// Whether it is still accepted at `now`.
    pub fn live_at(&self, now: UnixTime) -> bool {
        now < self.expires_at
    }
}

/// What a client registered for sign-out (RP-Initiated and Back-Channel Logout 1.0),
/// validated before it was stored.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientLogout {
    /// Where the browser may be sent after sign-out; matched exactly.
    pub post_logout_redirect_uris: Vec<String>,
    /// Where logout tokens are POSTed.
    pub backchannel_logout_uri: Option<String>,
}

/// What provisioning hands the store; values are validated before they get here.
#[derive(Clone, Debug)]
pub struct NewClient<'a> {
    pub client_id: &'a str,
    pub name: &'a str,
    pub secret_hash: Option<&'a [u8]>,
    pub redirect_uris: &'a [String],
    pub scopes: &'a [String],
}

/// A client's row as [`CLIENT_COLUMNS`] selects it.
#[derive(sqlx::FromRow)]
pub(crate) struct ClientRecord {
    client_id: String,
    name: String,
    client_type: String,
    secret_hash: Option<Vec<u8>>,
    redirect_uris: String,
    scopes: String,
    created_at: i64,
    refresh_retry_seconds: i64,
    dpop_bound_access_tokens: i64,
    revision: i64,
    disabled_at: Option<i64>,
    previous_secret_hash: Option<Vec<u8>>,
    previous_secret_expires_at: Option<i64>,
}

impl ClientRecord {
    pub(crate) fn into_client(self) -> Result<Client, StoreError> {
        let redirect_uris: Vec<String> = serde_json::from_str(&self.redirect_uris)
            .map_err(|_| StoreError::Corrupt("redirect URIs"))?;
        let previous_secret = match (self.previous_secret_hash, self.previous_secret_expires_at) {
            (Some(hash), Some(expires_at)) => Some(PreviousSecret { hash, expires_at }),
            _ => None,
        };
        Ok(Client {
            client_id: self.client_id,
            name: self.name,
            client_type: ClientType::parse(&self.client_type)?,
            secret_hash: self.secret_hash,
            redirect_uris,
            scopes: self.scopes.split_whitespace().map(str::to_owned).collect(),
            created_at: self.created_at,
            disabled: self.disabled_at.is_some(),
            previous_secret,
            refresh_retry_seconds: self.refresh_retry_seconds,
            dpop_bound_access_tokens: self.dpop_bound_access_tokens != 0,
            revision: self.revision,
        })
    }
}

pub(crate) const CLIENT_COLUMNS: &str =
    "client_id, name, client_type, secret_hash, redirect_uris, scopes, created_at, \
     refresh_retry_seconds, dpop_bound_access_tokens, revision, disabled_at, \
     previous_secret_hash, previous_secret_expires_at";

/// What a client's registration says about the browser pages that may call the endpoints
/// single-page apps use: its redirect URIs and the web origins an operator added.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientOrigins {
    pub tenant_id: TenantId,
    pub client_id: String,
    pub redirect_uris: Vec<String>,
    /// Origins (`scheme://host[:port]`), validated and serialized before they were stored.
    pub web_origins: Vec<String>,
}

impl Store {
    /// Every database's mark of its clients (migration 0019), the default database's first,
    /// then the shards' by name: a mark changes with every change of any client of its database, so while the
    /// marks stand, [`Store::list_client_origins`] would answer as it did. One read each.
    pub async fn client_changes(&self) -> Result<Vec<i64>, StoreError> {
        let mut marks = Vec::new();
        for database in self.databases() {
            self.count_statement();
            let (mark,): (i64,) = sqlx::query_as("SELECT mark FROM client_changes WHERE id = 1")
                .fetch_one(database.pool())
                .await?;
            marks.push(mark);
        }
        Ok(marks)
    }

    /// The redirect URIs and web origins of every client of every tenant, from every
    /// database: each tenant's from the database the shard map places it in (a copy left in
    /// another database after a move is not read). For the CORS allow-list, which must be
    /// known before a request names its tenant. A disabled client's pages get no CORS: it
    /// could not use what they would call.
    pub async fn list_client_origins(&self) -> Result<Vec<ClientOrigins>, StoreError> {
        let mut clients = Vec::new();
        for database in self.databases() {
            self.count_statement();
            let rows: Vec<(String, String, String, String)> = sqlx::query_as(
                "SELECT tenant_id, client_id, redirect_uris, web_origins FROM clients \
                 WHERE disabled_at IS NULL",
            )
            .fetch_all(database.pool())
            .await?;
            for (tenant_id, client_id, redirect_uris, web_origins) in rows {
                let tenant_id =
                    TenantId::parse(&tenant_id).map_err(|_| StoreError::Corrupt("tenant id"))?;
                if !self.routes_to(&tenant_id, database) {
                    continue;
                }
                clients.push(ClientOrigins {
                    tenant_id,
                    client_id,
                    redirect_uris: json_list(&redirect_uris, "redirect URIs")?,
                    web_origins: json_list(&web_origins, "web origins")?,
                });
            }
        }
        Ok(clients)
    }
}

pub(crate) fn json_list(text: &str, what: &'static str) -> Result<Vec<String>, StoreError> {
    serde_json::from_str(text).map_err(|_| StoreError::Corrupt(what))
}

impl TenantStore<'_> {
    /// Registers a client. A confidential client is one with a secret hash.
    pub async fn create_client(
        &self,
        client: &NewClient<'_>,
        now: UnixTime,
    ) -> Result<Client, StoreError> {
        self.create_client_with_web_origins(client, &[], now).await
    }

    /// Registers a client whose web origins (validated and serialized by the caller) are
    /// allowed to call it from the browser besides the origins of its redirect URIs.
    pub async fn create_client_with_web_origins(
        &self,
        client: &NewClient<'_>,
        web_origins: &[String],
        now: UnixTime,
    ) -> Result<Client, StoreError> {
        let logout = ClientLogout::default();
        let settings = ClientSettings::default();
        self.register_client(client, web_origins, &logout, settings, now)
            .await
    }

    /// Registers a client with its web origins, its sign-out registration and its settings.
    pub async fn register_client(
        &self,
        client: &NewClient<'_>,
        web_origins: &[String],
        logout: &ClientLogout,
        settings: ClientSettings,
        now: UnixTime,
    ) -> Result<Client, StoreError> {
        let post_logout_redirect_uris = serde_json::to_string(&logout.post_logout_redirect_uris)
            .map_err(|_| StoreError::Corrupt("post-logout redirect URIs"))?;
        let client_type = match client.secret_hash {
            Some(_) => ClientType::Confidential,
            None => ClientType::Public,
        };
        let redirect_uris = serde_json::to_string(client.redirect_uris)
            .map_err(|_| StoreError::Corrupt("redirect URIs"))?;
        let web_origins =
            serde_json::to_string(web_origins).map_err(|_| StoreError::Corrupt("web origins"))?;
        let scopes = client.scopes.join(" ");
        sqlx::query(
            "INSERT INTO clients (tenant_id, client_id, name, client_type, secret_hash, \
             redirect_uris, scopes, created_at, web_origins, post_logout_redirect_uris, \
             backchannel_logout_uri, refresh_retry_seconds, dpop_bound_access_tokens) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
        )
        .bind(self.id_str())
        .bind(client.client_id)
        .bind(client.name)
        .bind(client_type.as_str())
        .bind(client.secret_hash.map(<[u8]>::to_vec))
        .bind(&redirect_uris)
        .bind(&scopes)
        .bind(now)
        .bind(&web_origins)
        .bind(&post_logout_redirect_uris)
        .bind(logout.backchannel_logout_uri.as_deref())
        .bind(settings.refresh_retry_seconds)
        .bind(i64::from(settings.dpop_bound_access_tokens))
        .execute(self.pool())
        .await
        .map_err(|e| match StoreError::is_foreign_key_violation(&e) {
            true => StoreError::NotFound(Entity::Tenant),
            false => StoreError::from_sqlx(e, Entity::Client),
        })?;
        Ok(Client {
            client_id: client.client_id.to_owned(),
            name: client.name.to_owned(),
            client_type,
            secret_hash: client.secret_hash.map(<[u8]>::to_vec),
            redirect_uris: client.redirect_uris.to_vec(),
            scopes: client.scopes.to_vec(),
            created_at: now,
            disabled: false,
            previous_secret: None,
            refresh_retry_seconds: settings.refresh_retry_seconds,
            dpop_bound_access_tokens: settings.dpop_bound_access_tokens,
            // The column's default (migration 0011).
            revision: 1,
        })
    }

    pub async fn find_client(&self, client_id: &str) -> Result<Option<Client>, StoreError> {
        let row: Option<ClientRecord> = sqlx::query_as(&format!(
            "SELECT {CLIENT_COLUMNS} FROM clients WHERE tenant_id = $1 AND client_id = $2"
        ))
        .bind(self.id_str())
        .bind(client_id)
        .fetch_optional(self.pool())
        .await?;
        row.map(ClientRecord::into_client).transpose()
    }

    /// Whether the client is still enabled and in `state` (nothing changed it since a copy
    /// in that state was read).
    pub async fn client_is_in_state(
        &self,
        client_id: &str,
        state: Revision,
    ) -> Result<bool, StoreError> {
        let row: Option<(i64,)> = sqlx::query_as(
            "SELECT 1 FROM clients WHERE tenant_id = $1 AND client_id = $2 \
               AND created_at = $3 AND revision = $4 AND disabled_at IS NULL",
        )
        .bind(self.id_str())
        .bind(client_id)
        .bind(state.created_at)
        .bind(state.revision)
        .fetch_optional(self.pool())
        .await?;
        Ok(row.is_some())
    }

    /// An enabled client's sign-out registration; `None` for an unknown or disabled client
    /// (a disabled client is refused wherever it would be an unknown one).
    pub async fn find_client_logout(
        &self,
        client_id: &str,
    ) -> Result<Option<ClientLogout>, StoreError> {
        let row: Option<(String, Option<String>)> = sqlx::query_as(
            "SELECT post_logout_redirect_uris, backchannel_logout_uri FROM clients \
             WHERE tenant_id = $1 AND client_id = $2 AND disabled_at IS NULL",
        )
        .bind(self.id_str())
        .bind(client_id)
        .fetch_optional(self.pool())
        .await?;
        row.map(|(uris, backchannel_logout_uri)| {
            Ok(ClientLogout {
                post_logout_redirect_uris: json_list(&uris, "post-logout redirect URIs")?,
                backchannel_logout_uri,
            })
        })
        .transpose()
    }

    /// The web origins an operator added to a client; `None` for an unknown client.
    pub async fn find_client_web_origins(
        &self,
        client_id: &str,
    ) -> Result<Option<Vec<String>>, StoreError> {
        let row: Option<(String,)> = sqlx::query_as(
            "SELECT web_origins FROM clients WHERE tenant_id = $1 AND client_id = $2",
        )
        .bind(self.id_str())
        .bind(client_id)
        .fetch_optional(self.pool())
        .await?;
        row.map(|(text,)| json_list(&text, "web origins"))
            .transpose()
    }

    pub async fn list_clients(&self) -> Result<Vec<Client>, StoreError> {
        let rows: Vec<ClientRecord> = sqlx::query_as(&format!(
            "SELECT {CLIENT_COLUMNS} FROM clients WHERE tenant_id = $1 ORDER BY client_id"
        ))
        .bind(self.id_str())
        .fetch_all(self.pool())
        .await?;
        rows.into_iter().map(ClientRecord::into_client).collect()
    }

    /// Replaces a confidential client's secret hash; `NotFound(Client)` for an unknown or
    /// public client (a public client never gets a secret).
    pub async fn set_client_secret_hash(
        &self,
        client_id: &str,
        secret_hash: &[u8],
    ) -> Result<(), StoreError> {
        let done = sqlx::query(
            "UPDATE clients SET secret_hash = $1, revision = revision + 1 \
             WHERE tenant_id = $2 AND client_id = $3 AND client_type = 'confidential'",
        )
        .bind(secret_hash.to_vec())
        .bind(self.id_str())
        .bind(client_id)
        .execute(self.pool())
        .await?;
        match done.rows_affected() {
            1 => Ok(()),
            _ => Err(StoreError::NotFound(Entity::Client)),
        }
    }

    /// Replaces a client's redirect URIs; `NotFound(Client)` for an unknown client. The demo
    /// moves its public client's callback to wherever its app listens.
    pub async fn set_client_redirect_uris(
        &self,
        client_id: &str,
        redirect_uris: &[String],
    ) -> Result<(), StoreError> {
        let redirect_uris = serde_json::to_string(redirect_uris)
            .map_err(|_| StoreError::Corrupt("redirect URIs"))?;
        let done = sqlx::query(
            "UPDATE clients SET redirect_uris = $1, revision = revision + 1 \
             WHERE tenant_id = $2 AND client_id = $3",
        )
        .bind(&redirect_uris)
        .bind(self.id_str())
        .bind(client_id)
        .execute(self.pool())
        .await?;
        match done.rows_affected() {
            1 => Ok(()),
            _ => Err(StoreError::NotFound(Entity::Client)),
        }
    }
}
