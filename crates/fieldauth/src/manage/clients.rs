//! `fieldauth client …`: the CLI front end of [`admin::clients`].

use admin::clients::{self, ClientKind, ClientPatch, ClientView, NewClientRequest, SecretRotation};
use admin::page::{PageQuery, PageRequest};
use admin::Versioned;
use clap::{Args, Subcommand};
use serde::Serialize;
use serde_json::json;

use super::{all_pages, failed, if_match, Outcome, Shell};
use crate::report::Report;

/// The client a command is about.
#[derive(Debug, Args)]
pub struct Target {
    #[arg(long)]
    tenant: String,
    #[arg(long)]
    client_id: String,
    #[arg(long)]
    json: bool,
}

/// A client's settings (issue 27), on `create` (absent: the defaults) and `update` (absent:
/// unchanged).
#[derive(Debug, Args)]
pub struct Settings {
    /// Seconds (0 to 120) during which a refresh token the client used may be presented
    /// again, while the one that use issued is unused, and answered instead of revoking the
    /// grant (for apps that lose answers on bad networks); 0 (the default) turns it off.
    #[arg(long, value_parser = retry_seconds, allow_negative_numbers = true)]
    refresh_retry_seconds: Option<i64>,
    /// RFC 9449: the client's access tokens must be DPoP-bound (`--dpop-bound-access-tokens`
    /// alone means true).
    #[arg(long, num_args = 0..=1, default_missing_value = "true")]
    dpop_bound_access_tokens: Option<bool>,
}

/// The admin API's check of the window, as clap's parser, so the CLI refuses a bad value
/// with clap's usage error before anything runs.
fn retry_seconds(value: &str) -> Result<i64, String> {
    let seconds: i64 = value.parse().map_err(|e| format!("{e}"))?;
    clients::refresh_retry_seconds(seconds).map_err(|e| e.to_string())
}

#[derive(Debug, Subcommand)]
pub enum ClientCommand {
    /// Register a client. Confidential clients get a secret, shown once.
    Create {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        client_id: String,
        /// A redirect URI, matched exactly; repeat for several.
        #[arg(long = "redirect-uri", required = true)]
        redirect_uris: Vec<String>,
        /// A client that can keep a secret (server-side web app).
        #[arg(long)]
        confidential: bool,
        /// Name shown on the consent screen (defaults to the client id).
        #[arg(long)]
        name: Option<String>,
        /// A scope the client may request; repeat for several (default: every scope).
        #[arg(long = "scope")]
        scopes: Vec<String>,
        /// An origin (scheme://host[:port]) whose pages may call the token, userinfo,
        /// revocation, discovery, JWKS and API endpoints, besides the origins of the
        /// redirect URIs; repeat for several.
        #[arg(long = "web-origin")]
        web_origins: Vec<String>,
        /// Where the browser may be sent after signing out (RP-Initiated Logout), matched
        /// exactly; repeat for several.
        #[arg(long = "post-logout-redirect-uri")]
        post_logout_redirect_uris: Vec<String>,
        /// Where logout tokens are POSTed (Back-Channel Logout): https, or http to loopback.
        #[arg(long)]
        backchannel_logout_uri: Option<String>,
        #[command(flatten)]
        settings: Settings,
        #[arg(long)]
        json: bool,
    },
    /// List a tenant's clients, by client id.
    List {
        #[arg(long)]
        tenant: String,
        /// Only those whose id or name contains this (case-insensitive).
        #[arg(long)]
        q: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Show a client, with its ETag.
    Show {
        #[command(flatten)]
        target: Target,
    },
    /// Change a client's name, redirect URIs, allowed scopes, sign-out URIs or settings
    /// (those given replace).
    Update {
        #[command(flatten)]
        target: Target,
        #[arg(long)]
        name: Option<String>,
        /// Replaces every redirect URI; repeat for several.
        #[arg(long = "redirect-uri")]
        redirect_uris: Vec<String>,
        /// Replaces the allowed scopes; repeat for several.
        #[arg(long = "scope")]
        scopes: Vec<String>,
        /// Replaces every post-logout redirect URI; repeat for several.
        #[arg(long = "post-logout-redirect-uri")]
        post_logout_redirect_uris: Vec<String>,
        /// Removes every post-logout redirect URI.
        #[arg(long, conflicts_with = "post_logout_redirect_uris")]
        clear_post_logout_redirect_uris: bool,
        /// Replaces the back-channel logout URI.
        #[arg(long)]
        backchannel_logout_uri: Option<String>,
        /// Removes the back-channel logout URI.
        #[arg(long, conflicts_with = "backchannel_logout_uri")]
        clear_backchannel_logout_uri: bool,
        #[command(flatten)]
        settings: Settings,
        /// Apply only if the client is still at this ETag (as `show` printed it).
        #[arg(long)]
        if_match: Option<String>,
    },
    /// Give a confidential client a new secret, shown once.
    RotateSecret {
        #[command(flatten)]
        target: Target,
        /// Keep accepting the previous secret this long (1 to 86400); without it, the
        /// previous secret stops at once.
        #[arg(long)]
        grace_seconds: Option<i64>,
    },
    /// Disable a client: its grants are revoked, and it is refused until enabled.
    Disable {
        #[command(flatten)]
        target: Target,
    },
    /// Enable a client again (its revoked grants stay revoked).
    Enable {
        #[command(flatten)]
        target: Target,
    },
    /// Delete a client with its grants.
    Delete {
        #[command(flatten)]
        target: Target,
    },
}

pub async fn run(command: ClientCommand, shell: &Shell<'_>) -> anyhow::Result<Outcome> {
    let ctx = shell.ctx("");
    Ok(match command {
        ClientCommand::Create {
            tenant,
            client_id,
            redirect_uris,
            confidential,
            name,
            scopes,
            web_origins,
            post_logout_redirect_uris,
            backchannel_logout_uri,
            settings,
            json,
        } => {
            let new = NewClientRequest {
                client_id,
                client_type: match confidential {
                    true => ClientKind::Confidential,
                    false => ClientKind::Public,
                },
                name,
                redirect_uris,
                scopes: (!scopes.is_empty()).then_some(scopes),
                web_origins,
                post_logout_redirect_uris,
                backchannel_logout_uri,
                refresh_retry_seconds: settings.refresh_retry_seconds.unwrap_or_default(),
                dpop_bound_access_tokens: settings.dpop_bound_access_tokens.unwrap_or_default(),
            };
            let made = clients::create(&ctx, &tenant, &new)
                .await
                .map_err(failed("create the client"))?;
            let id = &made.value.client.client_id;
            let text = match &made.value.client_secret {
                Some(secret) => format!(
                    "created confidential client {id}\nclient_secret: {secret}\n(shown once: only its hash is stored)"
                ),
                None => format!("created public client {id}"),
            };
            (shown(&made, text), json)
        }
        ClientCommand::List { tenant, q, json } => {
            let all = all_pages(|cursor| {
                let query = PageQuery {
                    cursor,
                    limit: Some(admin::page::MAX_LIMIT),
                    q: q.clone(),
                };
                let (ctx, tenant) = (&ctx, &tenant);
                async move { clients::list(ctx, tenant, &PageRequest::parse(&query)?).await }
            })
            .await
            .map_err(failed("list clients"))?;
            let text = all
                .iter()
                .map(|c| {
                    let state = if c.disabled { "\tdisabled" } else { "" };
                    format!(
                        "{}\t{}\t{}{state}",
                        c.client_id,
                        c.client_type.as_str(),
                        c.name
                    )
                })
                .collect::<Vec<_>>()
                .join("\n");
            (Report::new(json!({ "clients": all }), text), json)
        }
        ClientCommand::Show { target } => {
            let found = clients::get(&ctx, &target.tenant, &target.client_id)
                .await
                .map_err(failed("show the client"))?;
            let text = described(&found);
            (shown(&found, text), target.json)
        }
        ClientCommand::Update {
            target,
            name,
            redirect_uris,
            scopes,
            post_logout_redirect_uris,
            clear_post_logout_redirect_uris,
            backchannel_logout_uri,
            clear_backchannel_logout_uri,
            settings,
            if_match: tag,
        } => {
            let patch = ClientPatch {
                name,
                redirect_uris: (!redirect_uris.is_empty()).then_some(redirect_uris),
                scopes: (!scopes.is_empty()).then_some(scopes),
                post_logout_redirect_uris: (clear_post_logout_redirect_uris
                    || !post_logout_redirect_uris.is_empty())
                .then_some(post_logout_redirect_uris),
                backchannel_logout_uri: match clear_backchannel_logout_uri {
                    true => Some(None),
                    false => backchannel_logout_uri.map(Some),
                },
                refresh_retry_seconds: settings.refresh_retry_seconds,
                dpop_bound_access_tokens: settings.dpop_bound_access_tokens,
            };
            let precondition = if_match(tag.as_deref())?;
            let updated = clients::update(
                &ctx,
                &target.tenant,
                &target.client_id,
                &patch,
                precondition,
            )
            .await
            .map_err(failed("update the client"))?;
            let text = described(&updated);
            (shown(&updated, text), target.json)
        }
        ClientCommand::RotateSecret {
            target,
            grace_seconds,
        } => {
            let rotation = SecretRotation { grace_seconds };
            let rotated =
                clients::rotate_secret(&ctx, &target.tenant, &target.client_id, &rotation)
                    .await
                    .map_err(failed("rotate the client's secret"))?;
            let secret = rotated.value.client_secret.as_deref().unwrap_or_default();
            let previous = match grace_seconds {
                Some(seconds) => format!("the previous secret is accepted for {seconds} s more"),
                None => "the previous secret no longer works".to_owned(),
            };
            let text = format!(
                "new secret for client {}\nclient_secret: {secret}\n(shown once: only its hash is stored; {previous})",
                target.client_id
            );
            (shown(&rotated, text), target.json)
        }
        ClientCommand::Disable { target } => {
            let disabled = clients::disable(&ctx, &target.tenant, &target.client_id)
                .await
                .map_err(failed("disable the client"))?;
            let text = format!(
                "disabled client {} (its grants are revoked)",
                target.client_id
            );
            (shown(&disabled, text), target.json)
        }
        ClientCommand::Enable { target } => {
            let enabled = clients::enable(&ctx, &target.tenant, &target.client_id)
                .await
                .map_err(failed("enable the client"))?;
            let text = format!("enabled client {}", target.client_id);
            (shown(&enabled, text), target.json)
        }
        ClientCommand::Delete { target } => {
            clients::delete(&ctx, &target.tenant, &target.client_id)
                .await
                .map_err(failed("delete the client"))?;
            let text = format!("deleted client {}", target.client_id);
            let body = json!({ "client_id": target.client_id, "deleted": true });
            (Report::new(body, text), target.json)
        }
    })
}

fn described(client: &Versioned<ClientView>) -> String {
    let c = &client.value;
    format!(
        "client {}\nname: {}\ntype: {}\nredirect_uris: {}\nscopes: {}\nweb_origins: {}\npost_logout_redirect_uris: {}\nbackchannel_logout_uri: {}\nrefresh_retry_seconds: {}\ndpop_bound_access_tokens: {}\ndisabled: {}\ncreated: {}\netag: {}",
        c.client_id,
        c.name,
        c.client_type.as_str(),
        c.redirect_uris.join(" "),
        c.scopes.join(" "),
        c.web_origins.join(" "),
        c.post_logout_redirect_uris.join(" "),
        c.backchannel_logout_uri.as_deref().unwrap_or(""),
        c.refresh_retry_seconds,
        c.dpop_bound_access_tokens,
        c.disabled,
        c.created_at,
        client.etag()
    )
}

/// A client as `--json` prints it: the admin API's body, and its ETag.
fn shown<T: Serialize>(client: &Versioned<T>, text: String) -> Report {
    let mut body = serde_json::to_value(&client.value).unwrap_or_default();
    body["etag"] = json!(client.etag());
    Report::new(body, text)
}
