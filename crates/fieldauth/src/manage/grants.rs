//! `fieldauth grant …`: the CLI front end of [`admin::grants`].

use admin::grants::{self, GrantFilter};
use admin::page::{PageQuery, PageRequest, MAX_LIMIT};
use clap::{ArgGroup, Subcommand};
use serde_json::json;

use super::{all_pages, failed, Outcome, Shell};
use crate::report::Report;

#[derive(Debug, Subcommand)]
pub enum GrantCommand {
    /// List the grants of a user or of a client, newest first.
    #[command(group(ArgGroup::new("of").required(true).args(["sub", "client_id"])))]
    List {
        #[arg(long)]
        tenant: String,
        /// The user's sub.
        #[arg(long)]
        sub: Option<String>,
        #[arg(long)]
        client_id: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Revoke a grant: every token it issued stops working at once.
    Revoke {
        #[arg(long)]
        tenant: String,
        grant_id: String,
        #[arg(long)]
        json: bool,
    },
}

pub async fn run(command: GrantCommand, shell: &Shell<'_>) -> anyhow::Result<Outcome> {
    let ctx = shell.ctx("");
    Ok(match command {
        GrantCommand::List {
            tenant,
            sub,
            client_id,
            json,
        } => {
            let filter = GrantFilter { client_id, sub };
            let all = all_pages(|cursor| {
                let query = PageQuery {
                    cursor,
                    limit: Some(MAX_LIMIT),
                    q: None,
                };
                let (ctx, tenant, filter) = (&ctx, &tenant, &filter);
                async move { grants::list(ctx, tenant, filter, &PageRequest::parse(&query)?).await }
            })
            .await
            .map_err(failed("list grants"))?;
            let text = all
                .iter()
                .map(|g| {
                    format!(
                        "{}\tclient {}\tsub {}\torg {}\t{}\tcreated {}{}",
                        g.grant_id,
                        g.client_id,
                        g.sub,
                        g.organization_guid,
                        g.scopes.join(" "),
                        g.created_at,
                        if g.revoked { "\trevoked" } else { "" }
                    )
                })
                .collect::<Vec<_>>()
                .join("\n");
            (Report::new(json!({ "grants": all }), text), json)
        }
        GrantCommand::Revoke {
            tenant,
            grant_id,
            json,
        } => {
            grants::revoke(&ctx, &tenant, &grant_id)
                .await
                .map_err(failed("revoke the grant"))?;
            let text = format!("revoked grant {grant_id}; its tokens no longer work");
            (
                Report::new(json!({ "grant_id": grant_id, "revoked": true }), text),
                json,
            )
        }
    })
}
