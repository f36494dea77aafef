//! `fieldauth user password-link`: the CLI front end of [`admin::password_links`].

use anyhow::Context;
use clap::Args;
use serde_json::json;

use super::{failed, Outcome, Shell};
use crate::report::Report;

#[derive(Debug, Args)]
pub struct PasswordLinkArgs {
    #[arg(long)]
    tenant: String,
    /// The user's `sub`.
    #[arg(long)]
    sub: String,
    /// The auth server's URL (the issuer), which the link points to: as `serve` is given it.
    #[arg(
        long,
        env = "FIELDAUTH_AUTH_URL",
        default_value = "http://127.0.0.1:8080"
    )]
    auth_url: String,
    #[arg(long)]
    json: bool,
}

pub async fn run(args: PasswordLinkArgs, shell: &Shell<'_>) -> anyhow::Result<Outcome> {
    let issuer = oauth::Issuer::parse(&args.auth_url)
        .with_context(|| format!("--auth-url {:?}", args.auth_url))?;
    let ctx = shell.ctx(issuer.as_str());
    let link = admin::password_links::issue(&ctx, &args.tenant, &args.sub)
        .await
        .map_err(failed("issue a password link"))?;
    let until = chrono::DateTime::from_timestamp(link.expires_at, 0)
        .map_or_else(|| link.expires_at.to_string(), |t| t.to_rfc3339());
    let text = format!(
        "password link for user {} (single use, until {until}; the previous link no longer works):\n{}",
        args.sub, link.url
    );
    let report = Report::new(
        json!({ "url": link.url, "expires_at": link.expires_at }),
        text,
    );
    Ok((report, args.json))
}
