//! A tenant's OAuth clients: registered (a confidential client's secret is shown once, only
//! its hash is kept), listed, read, changed, their secret rotated, disabled, enabled and
//! deleted.
//!
//! What a change does to live tokens: disabling revokes every grant of the client (so its
//! refresh tokens and access tokens stop) and it is refused at authorize, token and
//! revocation as an unknown client; enabling lets new flows start, the revoked grants stay
//! revoked. Deleting takes its grants, codes and pending requests with it. A rotation
//! without grace stops the old secret at once; with `grace_seconds` the old one is accepted
//! until the grace ends.

use serde::{Deserialize, Serialize};
use store::{ClientChanges, ClientLogout, ClientType, ManagedClient, NewClient, TenantId};
use utoipa::ToSchema;

use crate::audit::{self, Change};
use crate::context::{about, Ctx};
use crate::error::AdminError;
use crate::etag::Precondition;
use crate::page::{Page, PageRequest};
use crate::versioned::Versioned;

mod input;

pub use input::{
    refresh_retry_seconds, ClientKind, ClientPatch, NewClientRequest, SecretRotation,
    MAX_GRACE_SECONDS, MAX_REFRESH_RETRY_SECONDS,
};

/// A client as the admin API shows it: never a secret or a hash.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ClientView {
    pub client_id: String,
    pub name: String,
    #[serde(rename = "type")]
    pub client_type: ClientKind,
    pub redirect_uris: Vec<String>,
    pub scopes: Vec<String>,
    pub web_origins: Vec<String>,
    /// Where the browser may be sent after signing out (RP-Initiated Logout 1.0).
    pub post_logout_redirect_uris: Vec<String>,
    /// Where logout tokens are POSTed (Back-Channel Logout 1.0); `null` when none.
    pub backchannel_logout_uri: Option<String>,
    pub disabled: bool,
    /// How long after a refresh token was used the client may present it again while the
    /// refresh token that use issued is unused (0: never; issue 27).
    pub refresh_retry_seconds: i64,
    /// RFC 9449 §5.2: the client's access tokens must be DPoP-bound.
    pub dpop_bound_access_tokens: bool,
    /// Unix seconds.
    pub created_at: i64,
}

impl From<ManagedClient> for ClientView {
    fn from(managed: ManagedClient) -> ClientView {
        let client = managed.client;
        ClientView {
            client_id: client.client_id,
            name: client.name,
            client_type: match client.client_type {
                ClientType::Public => ClientKind::Public,
                ClientType::Confidential => ClientKind::Confidential,
            },
            redirect_uris: client.redirect_uris,
            scopes: client.scopes,
            web_origins: managed.web_origins,
            post_logout_redirect_uris: managed.logout.post_logout_redirect_uris,
            backchannel_logout_uri: managed.logout.backchannel_logout_uri,
            disabled: client.disabled,
            refresh_retry_seconds: client.refresh_retry_seconds,
            dpop_bound_access_tokens: client.dpop_bound_access_tokens,
            created_at: client.created_at,
        }
    }
}

/// A client and, once, its new secret: what creation and rotation answer.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ClientWithSecret {
    #[serde(flatten)]
    pub client: ClientView,
    /// Shown this once (only its hash is stored); absent for a public client.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
}

impl std::fmt::Debug for ClientWithSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientWithSecret")
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}

pub async fn create(
    ctx: &Ctx<'_>,
    tenant: &str,
    new: &NewClientRequest,
) -> Result<Versioned<ClientWithSecret>, AdminError> {
    let id = ctx.tenant(tenant).await?;
    let checked = new.check()?;
    let secret = match new.client_type {
        ClientKind::Confidential => Some(new_secret(ctx)?),
        ClientKind::Public => None,
    };
    let records = ctx.records(&id);
    let client_id = checked.client_id.as_str();
    let logout = ClientLogout {
        post_logout_redirect_uris: checked.post_logout_redirect_uris,
        backchannel_logout_uri: checked.backchannel_logout_uri,
    };
    records
        .register_client(
            &NewClient {
                client_id,
                name: checked.name,
                secret_hash: secret.as_ref().map(|(_, hash)| &hash[..]),
                redirect_uris: &checked.redirect_uris,
                scopes: &checked.scopes,
            },
            &checked.web_origins,
            &logout,
            checked.settings,
            ctx.now,
        )
        .await
        .map_err(about("client"))?;
    let kind = new.client_type.as_str();
    audit::record(
        ctx,
        &records,
        Change {
            kind: "admin.client.created",
            client_id: Some(client_id),
            what: format!(
                "{kind} client {client_id} created, named {:?}",
                checked.name
            ),
            ..Change::default()
        },
    )
    .await?;
    with_secret(read(ctx, &id, client_id).await?, secret)
}

/// The tenant's clients by client id; `q` matches the id or the name.
pub async fn list(
    ctx: &Ctx<'_>,
    tenant: &str,
    request: &PageRequest<String>,
) -> Result<Page<ClientView>, AdminError> {
    let id = ctx.tenant(tenant).await?;
    let rows = ctx
        .records(&id)
        .list_clients_page(
            request.after.as_deref(),
            request.search.as_deref(),
            request.fetch(),
        )
        .await?;
    Ok(Page::from_rows(
        rows,
        request,
        |c| c.client.client_id.clone(),
        ClientView::from,
    ))
}

pub async fn get(
    ctx: &Ctx<'_>,
    tenant: &str,
    client_id: &str,
) -> Result<Versioned<ClientView>, AdminError> {
    let id = ctx.tenant(tenant).await?;
    read(ctx, &id, client_id).await
}

/// Changes the name, redirect URIs, allowed scopes, sign-out registration or settings.
/// Tokens already issued keep the scope they were granted; new requests are checked against
/// the new registration. A new retry window applies to the next refresh, whenever its token
/// was consumed.
pub async fn update(
    ctx: &Ctx<'_>,
    tenant: &str,
    client_id: &str,
    patch: &ClientPatch,
    precondition: Precondition,
) -> Result<Versioned<ClientView>, AdminError> {
    let id = ctx.tenant(tenant).await?;
    let client_id = known_id(client_id)?;
    let checked = patch.check()?;
    let records = ctx.records(&id);
    records
        .update_client(
            client_id,
            &ClientChanges {
                name: checked.name,
                redirect_uris: checked.redirect_uris.as_deref(),
                scopes: checked.scopes.as_deref(),
                post_logout_redirect_uris: checked.post_logout_redirect_uris.as_deref(),
                backchannel_logout_uri: checked
                    .backchannel_logout_uri
                    .as_ref()
                    .map(Option::as_deref),
                refresh_retry_seconds: checked.refresh_retry_seconds,
                dpop_bound_access_tokens: checked.dpop_bound_access_tokens,
            },
            precondition.expected(),
        )
        .await
        .map_err(about("client"))?;
    audit::record(
        ctx,
        &records,
        Change {
            kind: "admin.client.updated",
            client_id: Some(client_id),
            what: format!("client {client_id} updated: {}", checked.fields.join(", ")),
            ..Change::default()
        },
    )
    .await?;
    read(ctx, &id, client_id).await
}

/// Gives a confidential client a new secret, shown once.
pub async fn rotate_secret(
    ctx: &Ctx<'_>,
    tenant: &str,
    client_id: &str,
    rotation: &SecretRotation,
) -> Result<Versioned<ClientWithSecret>, AdminError> {
    let id = ctx.tenant(tenant).await?;
    let grace = rotation.grace()?;
    let current = read(ctx, &id, client_id).await?;
    let client_id = current.value.client_id.as_str();
    if current.value.client_type == ClientKind::Public {
        return Err(AdminError::Conflict(format!(
            "client {client_id} is public: it has no secret to rotate"
        )));
    }
    let secret = new_secret(ctx)?;
    let records = ctx.records(&id);
    records
        .rotate_client_secret(client_id, &secret.1, grace.map(|g| ctx.now + g))
        .await
        .map_err(about("client"))?;
    let what = match grace {
        Some(seconds) => format!(
            "client {client_id} secret rotated; the previous one is accepted for {seconds} s"
        ),
        None => format!("client {client_id} secret rotated; the previous one stopped at once"),
    };
    audit::record(
        ctx,
        &records,
        Change {
            kind: "admin.client.secret_rotated",
            client_id: Some(client_id),
            what,
            ..Change::default()
        },
    )
    .await?;
    with_secret(read(ctx, &id, client_id).await?, Some(secret))
}

/// Disables a client and revokes every live grant of it.
pub async fn disable(
    ctx: &Ctx<'_>,
    tenant: &str,
    client_id: &str,
) -> Result<Versioned<ClientView>, AdminError> {
    let id = ctx.tenant(tenant).await?;
    let client_id = known_id(client_id)?;
    let records = ctx.records(&id);
    let (_, revoked) = records
        .disable_client(client_id, ctx.now)
        .await
        .map_err(about("client"))?;
    audit::record(
        ctx,
        &records,
        Change {
            kind: "admin.client.disabled",
            client_id: Some(client_id),
            what: format!("client {client_id} disabled; {revoked} live grant(s) revoked"),
            ..Change::default()
        },
    )
    .await?;
    read(ctx, &id, client_id).await
}

/// Enables a client again; the grants disabling revoked stay revoked.
pub async fn enable(
    ctx: &Ctx<'_>,
    tenant: &str,
    client_id: &str,
) -> Result<Versioned<ClientView>, AdminError> {
    let id = ctx.tenant(tenant).await?;
    let client_id = known_id(client_id)?;
    let records = ctx.records(&id);
    records
        .enable_client(client_id)
        .await
        .map_err(about("client"))?;
    audit::record(
        ctx,
        &records,
        Change {
            kind: "admin.client.enabled",
            client_id: Some(client_id),
            what: format!("client {client_id} enabled"),
            ..Change::default()
        },
    )
    .await?;
    read(ctx, &id, client_id).await
}

/// Deletes a client with its grants, codes and pending requests.
pub async fn delete(ctx: &Ctx<'_>, tenant: &str, client_id: &str) -> Result<(), AdminError> {
    let id = ctx.tenant(tenant).await?;
    let client_id = known_id(client_id)?;
    let records = ctx.records(&id);
    records
        .delete_client(client_id)
        .await
        .map_err(about("client"))?;
    audit::record(
        ctx,
        &records,
        Change {
            kind: "admin.client.deleted",
            client_id: Some(client_id),
            what: format!("client {client_id} deleted, with its grants"),
            ..Change::default()
        },
    )
    .await
}

/// A client id from a path: one outside the registration rules was never registered.
fn known_id(client_id: &str) -> Result<&str, AdminError> {
    oauth::ClientId::parse(client_id).map_err(|_| AdminError::NotFound("client"))?;
    Ok(client_id)
}

async fn read(
    ctx: &Ctx<'_>,
    tenant: &TenantId,
    client_id: &str,
) -> Result<Versioned<ClientView>, AdminError> {
    let client_id = known_id(client_id)?;
    let managed = ctx
        .records(tenant)
        .find_managed_client(client_id)
        .await?
        .ok_or(AdminError::NotFound("client"))?;
    let revision = managed.revision;
    Ok(Versioned {
        value: ClientView::from(managed),
        revision,
    })
}

type NewSecret = (secrecy::SecretString, [u8; 32]);

fn new_secret(ctx: &Ctx<'_>) -> Result<NewSecret, AdminError> {
    oauth::secret::generate_client_secret(ctx.random).map_err(|error| {
        tracing::error!(%error, "no randomness for a client secret");
        AdminError::Internal
    })
}

fn with_secret(
    client: Versioned<ClientView>,
    secret: Option<NewSecret>,
) -> Result<Versioned<ClientWithSecret>, AdminError> {
    use secrecy::ExposeSecret;
    Ok(Versioned {
        value: ClientWithSecret {
            client: client.value,
            client_secret: secret.map(|(secret, _)| secret.expose_secret().to_owned()),
        },
        revision: client.revision,
    })
}
