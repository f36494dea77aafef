//! Password links (invitations): a single-use URL on the auth server where a user sets their
//! password, handed to the platform, which delivers it by its own channel. The link is
//! `{auth_url}/account/password?token=<tenant>.<random>`: 256 random bits, of which only the
//! SHA-256 is stored; it lives 24 hours, and a new link for the same user ends the previous one.

use serde::Serialize;
use utoipa::ToSchema;

use crate::audit::{self, Change};
use crate::context::{about, Ctx};
use crate::error::AdminError;

/// How long a link can be used (seconds): a day to open the message and act on it.
pub const LINK_LIFETIME: i64 = 24 * 3600;

/// A link just issued. The URL carries the secret: it is shown once, never stored or logged.
#[derive(Clone, Serialize, ToSchema)]
pub struct PasswordLinkView {
    /// Where the user sets their password; single use.
    pub url: String,
    /// Unix seconds: the link does not work from then on.
    pub expires_at: i64,
}

impl std::fmt::Debug for PasswordLinkView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PasswordLinkView")
            .field("url", &"[redacted]")
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

/// Issues a new link for user `sub` of `tenant`, ending the user's previous link.
pub async fn issue(ctx: &Ctx<'_>, tenant: &str, sub: &str) -> Result<PasswordLinkView, AdminError> {
    let id = ctx.tenant(tenant).await?;
    let records = ctx.records(&id);
    if records.find_user(sub).await?.is_none() {
        return Err(AdminError::NotFound("user"));
    }
    let random = ctx.random.token().map_err(|error| {
        tracing::error!(%error, "no randomness for a password link");
        AdminError::Internal
    })?;
    let expires_at = ctx.now + LINK_LIFETIME;
    records
        .create_password_link(
            sub,
            &oauth::secret::hash_secret(&random),
            ctx.now,
            expires_at,
        )
        .await
        .map_err(about("user"))?;
    audit::record(
        ctx,
        &records,
        Change {
            kind: "admin.user.password_link",
            subject: Some(sub),
            what: format!("password link issued for user {sub}, usable until {expires_at}"),
            ..Change::default()
        },
    )
    .await?;
    // `<tenant>.<random>`: the prefix routes the link to its tenant's data, as for codes.
    let url = format!(
        "{}{}?token={id}.{random}",
        ctx.auth_url.trim_end_matches('/'),
        oauth::paths::ACCOUNT_PASSWORD,
    );
    Ok(PasswordLinkView { url, expires_at })
}
