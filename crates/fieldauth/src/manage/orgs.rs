//! `fieldauth org …`: the CLI front end of [`admin::organizations`].

use admin::organizations::{self, Added, OrganizationName, OrganizationView};
use admin::page::{PageQuery, PageRequest, MAX_LIMIT};
use admin::{AdminError, Ctx, Versioned};
use clap::{Args, Subcommand};
use serde_json::json;

use super::{all_pages, failed, if_match, Outcome, Shell};
use crate::report::Report;

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
    /// List a tenant's organizations, by name.
    List {
        #[arg(long)]
        tenant: String,
        /// Only those whose name contains this (case-insensitive).
        #[arg(long)]
        q: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Show an organization, with its ETag.
    Show {
        #[command(flatten)]
        org: OrgRef,
        #[arg(long)]
        json: bool,
    },
    /// Rename an organization.
    Rename {
        #[command(flatten)]
        org: OrgRef,
        #[arg(long)]
        name: String,
        /// Apply only if the organization is still at this ETag (as `show` printed it).
        #[arg(long)]
        if_match: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Delete an organization with its records and memberships; its grants end at once.
    Delete {
        #[command(flatten)]
        org: OrgRef,
        #[arg(long)]
        json: bool,
    },
    /// List an organization's members, by username.
    Members {
        #[command(flatten)]
        org: OrgRef,
        #[arg(long)]
        json: bool,
    },
    /// Make a user a member of an organization.
    AddMember {
        #[command(flatten)]
        org: OrgRef,
        #[command(flatten)]
        user: UserRef,
        #[arg(long)]
        json: bool,
    },
    /// End a user's membership of an organization; their grants for it end at once.
    RemoveMember {
        #[command(flatten)]
        org: OrgRef,
        #[command(flatten)]
        user: UserRef,
        #[arg(long)]
        json: bool,
    },
}

/// An organization of a tenant.
#[derive(Debug, Args)]
pub struct OrgRef {
    #[arg(long)]
    tenant: String,
    /// The organization_guid.
    #[arg(long)]
    org: String,
}

/// A user, by username or by sub.
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub struct UserRef {
    #[arg(long)]
    username: Option<String>,
    #[arg(long)]
    sub: Option<String>,
}

pub async fn run(command: OrgCommand, shell: &Shell<'_>) -> anyhow::Result<Outcome> {
    let ctx = shell.ctx("");
    Ok(match command {
        OrgCommand::Create { tenant, name, json } => {
            let made = organizations::create(&ctx, &tenant, &OrganizationName { name })
                .await
                .map_err(failed("create the organization"))?;
            let text = format!(
                "created organization {} ({})",
                made.value.name, made.value.organization_guid
            );
            (shown(&made, text), json)
        }
        OrgCommand::List { tenant, q, json } => {
            let all = all_pages(|cursor| {
                let query = PageQuery {
                    cursor,
                    limit: Some(MAX_LIMIT),
                    q: q.clone(),
                };
                let (ctx, tenant) = (&ctx, &tenant);
                async move { organizations::list(ctx, tenant, &PageRequest::parse(&query)?).await }
            })
            .await
            .map_err(failed("list organizations"))?;
            let text = lines(
                all.iter()
                    .map(|o| format!("{}\t{}", o.organization_guid, o.name)),
            );
            (Report::new(json!({ "organizations": all }), text), json)
        }
        OrgCommand::Show { org, json } => {
            let guid = checked(&org)?;
            let found = organizations::get(&ctx, &org.tenant, guid)
                .await
                .map_err(failed("show the organization"))?;
            let text = format!(
                "organization {}\nname: {}\ncreated: {}\netag: {}",
                found.value.organization_guid,
                found.value.name,
                found.value.created_at,
                found.etag()
            );
            (shown(&found, text), json)
        }
        OrgCommand::Rename {
            org,
            name,
            if_match: tag,
            json,
        } => {
            let guid = checked(&org)?;
            let precondition = if_match(tag.as_deref())?;
            let changes = OrganizationName { name };
            let renamed = organizations::rename(&ctx, &org.tenant, guid, &changes, precondition)
                .await
                .map_err(failed("rename the organization"))?;
            let text = format!(
                "renamed organization {} to {:?}",
                renamed.value.organization_guid, renamed.value.name
            );
            (shown(&renamed, text), json)
        }
        OrgCommand::Delete { org, json } => {
            let guid = checked(&org)?;
            organizations::delete(&ctx, &org.tenant, guid)
                .await
                .map_err(failed("delete the organization"))?;
            let text = format!("deleted organization {guid}; its grants are revoked");
            (
                Report::new(json!({ "organization_guid": guid, "deleted": true }), text),
                json,
            )
        }
        OrgCommand::Members { org, json } => {
            let guid = checked(&org)?;
            let all = all_pages(|cursor| {
                let query = PageQuery {
                    cursor,
                    limit: Some(MAX_LIMIT),
                    q: None,
                };
                let (ctx, tenant) = (&ctx, &org.tenant);
                async move {
                    organizations::members(ctx, tenant, guid, &PageRequest::parse(&query)?).await
                }
            })
            .await
            .map_err(failed("list the members"))?;
            let text = lines(
                all.iter()
                    .map(|m| format!("{}\t{}\t{}\t{}", m.sub, m.username, m.name, m.email)),
            );
            (Report::new(json!({ "members": all }), text), json)
        }
        OrgCommand::AddMember { org, user, json } => {
            let guid = checked(&org)?;
            let (sub, who) = member(&ctx, &org.tenant, &user, "add the member").await?;
            let added = organizations::add_member(&ctx, &org.tenant, guid, &sub)
                .await
                .map_err(failed("add the member"))?;
            anyhow::ensure!(
                added == Added::Added,
                "cannot add {who} to organization {guid}: membership already exists"
            );
            let text = format!("added {who} to organization {guid}");
            (membership(guid, &sub, text), json)
        }
        OrgCommand::RemoveMember { org, user, json } => {
            let guid = checked(&org)?;
            let (sub, who) = member(&ctx, &org.tenant, &user, "remove the member").await?;
            match organizations::remove_member(&ctx, &org.tenant, guid, &sub).await {
                Ok(()) => {}
                Err(AdminError::NotFound("membership")) => {
                    anyhow::bail!("{who} is not a member of organization {guid:?}")
                }
                Err(other) => return Err(failed("remove the member")(other)),
            }
            let text =
                format!("removed {who} from organization {guid}; their grants for it are revoked");
            (membership(guid, &sub, text), json)
        }
    })
}

/// `--org`, refused at once when it cannot be an organization_guid (the admin API says only
/// "not found"; at the shell, a typo deserves its own words).
fn checked(org: &OrgRef) -> anyhow::Result<&str> {
    anyhow::ensure!(
        organizations::is_organization_guid(&org.org),
        "--org {:?} is not an organization_guid (a UUID)",
        org.org
    );
    Ok(&org.org)
}

/// The member's sub, and how to name them in messages.
async fn member(
    ctx: &Ctx<'_>,
    tenant: &str,
    user: &UserRef,
    doing: &str,
) -> anyhow::Result<(String, String)> {
    match (&user.username, &user.sub) {
        (Some(username), _) => {
            let sub = organizations::sub_of_username(ctx, tenant, username)
                .await
                .map_err(failed(doing))?;
            match sub {
                Some(sub) => Ok((sub, format!("{username:?}"))),
                None => anyhow::bail!("user {username:?} not found in tenant {tenant}"),
            }
        }
        (None, Some(sub)) => Ok((sub.clone(), format!("user {sub}"))),
        (None, None) => anyhow::bail!("give --username or --sub"),
    }
}

fn membership(guid: &str, sub: &str, text: String) -> Report {
    Report::new(json!({ "organization_guid": guid, "sub": sub }), text)
}

fn lines(items: impl Iterator<Item = String>) -> String {
    items.collect::<Vec<_>>().join("\n")
}

/// An organization as `--json` prints it: the admin API's body, and its ETag.
fn shown(organization: &Versioned<OrganizationView>, text: String) -> Report {
    let mut body = serde_json::to_value(&organization.value).unwrap_or_default();
    body["etag"] = json!(organization.etag());
    Report::new(body, text)
}
