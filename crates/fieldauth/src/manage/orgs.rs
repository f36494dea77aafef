//! `fieldauth org …`: the CLI front end of the organizations' administration.

use clap::Subcommand;

use super::{Outcome, Shell};
use crate::provision;

#[derive(Debug, Subcommand)]
pub enum OrgCommand {
    /// Create an organization; prints its organization_guid.
    Create {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Make a user a member of an organization.
    AddMember {
        #[arg(long)]
        tenant: String,
        /// The organization_guid.
        #[arg(long)]
        org: String,
        #[arg(long)]
        username: String,
        #[arg(long)]
        json: bool,
    },
    /// End a user's membership of an organization; their grants for it end at once.
    RemoveMember {
        #[arg(long)]
        tenant: String,
        /// The organization_guid.
        #[arg(long)]
        org: String,
        #[arg(long)]
        username: String,
        #[arg(long)]
        json: bool,
    },
}

pub async fn run(command: OrgCommand, shell: &Shell<'_>) -> anyhow::Result<Outcome> {
    let (store, now) = (shell.store, shell.now);
    Ok(match command {
        OrgCommand::Create { tenant, name, json } => (
            provision::create_organization(store, &tenant, &name, shell.random, now).await?,
            json,
        ),
        OrgCommand::AddMember {
            tenant,
            org,
            username,
            json,
        } => (
            provision::add_member(store, &tenant, &org, &username, now).await?,
            json,
        ),
        OrgCommand::RemoveMember {
            tenant,
            org,
            username,
            json,
        } => (
            provision::remove_member(store, &tenant, &org, &username).await?,
            json,
        ),
    })
}
