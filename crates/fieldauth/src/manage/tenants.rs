//! `fieldauth tenant …`: the CLI front end of [`admin::tenants`].

use admin::etag::Precondition;
use admin::page::{PageQuery, PageRequest};
use admin::tenants::{self, MfaPolicyView, NewTenant, TenantChanges, TenantView};
use admin::Versioned;
use clap::Subcommand;
use serde_json::json;

use super::{all_pages, failed, if_match, Outcome, Shell};
use crate::report::Report;

#[derive(Debug, Subcommand)]
pub enum TenantCommand {
    /// Create a tenant. Its id is 1 to 63 characters of a-z, 0-9 and '-'.
    Create {
        tenant: String,
        /// Display name (defaults to the id).
        #[arg(long)]
        name: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// List the tenants, by id.
    List {
        /// Only those whose id or name contains this (case-insensitive).
        #[arg(long)]
        q: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Show a tenant, with its ETag.
    Show {
        tenant: String,
        #[arg(long)]
        json: bool,
    },
    /// Rename a tenant.
    Rename {
        tenant: String,
        #[arg(long)]
        name: String,
        /// Apply only if the tenant is still at this ETag (as `show` printed it).
        #[arg(long)]
        if_match: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Change a tenant's name, password policy or second-factor policy (what is given
    /// changes, the rest stays).
    Update {
        tenant: String,
        #[arg(long)]
        name: Option<String>,
        /// The fewest characters a new password may have, 8 to 64 (NIST SP 800-63B). Applies
        /// to passwords set from now on.
        #[arg(long)]
        password_min_length: Option<i64>,
        /// `off`, `optional` (users may enroll a second factor) or `required` (every user
        /// must have one). Applies from the next sign-in.
        #[arg(long, value_enum)]
        mfa: Option<MfaArg>,
        /// Apply only if the tenant is still at this ETag (as `show` printed it).
        #[arg(long)]
        if_match: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Delete a tenant and every record it has; its tokens stop working at once, and the
    /// admin tokens limited to it are revoked.
    Delete {
        tenant: String,
        #[arg(long)]
        json: bool,
    },
}

pub async fn run(command: TenantCommand, shell: &Shell<'_>) -> anyhow::Result<Outcome> {
    let ctx = shell.ctx("");
    Ok(match command {
        TenantCommand::Create { tenant, name, json } => {
            let new = NewTenant { tenant, name };
            let made = tenants::create(&ctx, &new)
                .await
                .map_err(failed("create the tenant"))?;
            let text = format!("created tenant {}", made.value.tenant);
            (shown(&made, text), json)
        }
        TenantCommand::List { q, json } => {
            let all = all_pages(|cursor| {
                let query = PageQuery {
                    cursor,
                    limit: Some(admin::page::MAX_LIMIT),
                    q: q.clone(),
                };
                let ctx = &ctx;
                async move { tenants::list(ctx, &PageRequest::parse(&query)?).await }
            })
            .await
            .map_err(failed("list tenants"))?;
            let text = all
                .iter()
                .map(|t| format!("{}\t{}", t.tenant, t.name))
                .collect::<Vec<_>>()
                .join("\n");
            (Report::new(json!({ "tenants": all }), text), json)
        }
        TenantCommand::Show { tenant, json } => {
            let found = tenants::get(&ctx, &tenant)
                .await
                .map_err(failed("show the tenant"))?;
            let text = format!(
                "tenant {}\nname: {}\ncreated: {}\npassword minimum length: {}\nsecond factor: {}\netag: {}",
                found.value.tenant,
                found.value.name,
                found.value.created_at,
                found.value.password_min_length,
                mfa_text(found.value.mfa_policy),
                found.etag()
            );
            (shown(&found, text), json)
        }
        TenantCommand::Rename {
            tenant,
            name,
            if_match: tag,
            json,
        } => {
            let precondition: Precondition = if_match(tag.as_deref())?;
            let changes = TenantChanges {
                name: Some(name),
                ..TenantChanges::default()
            };
            let renamed = tenants::update(&ctx, &tenant, &changes, precondition)
                .await
                .map_err(failed("rename the tenant"))?;
            let text = format!(
                "renamed tenant {} to {:?}",
                renamed.value.tenant, renamed.value.name
            );
            (shown(&renamed, text), json)
        }
        TenantCommand::Update {
            tenant,
            name,
            password_min_length,
            mfa,
            if_match: tag,
            json,
        } => {
            let precondition: Precondition = if_match(tag.as_deref())?;
            let changes = TenantChanges {
                name,
                password_min_length,
                mfa_policy: mfa.map(MfaArg::view),
            };
            let updated = tenants::update(&ctx, &tenant, &changes, precondition)
                .await
                .map_err(failed("update the tenant"))?;
            let text = format!(
                "updated tenant {}: name {:?}, passwords of at least {} characters, second factor {}",
                updated.value.tenant,
                updated.value.name,
                updated.value.password_min_length,
                mfa_text(updated.value.mfa_policy)
            );
            (shown(&updated, text), json)
        }
        TenantCommand::Delete { tenant, json } => {
            tenants::delete(&ctx, &tenant)
                .await
                .map_err(failed("delete the tenant"))?;
            let text = format!("deleted tenant {tenant} and all its records");
            (
                Report::new(json!({ "tenant": tenant, "deleted": true }), text),
                json,
            )
        }
    })
}

/// A tenant as `--json` prints it: the admin API's body, and its ETag.
fn shown(tenant: &Versioned<TenantView>, text: String) -> Report {
    let mut body = serde_json::to_value(&tenant.value).unwrap_or_default();
    body["etag"] = json!(tenant.etag());
    Report::new(body, text)
}

/// `--mfa`: the tenant's second-factor policy.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum MfaArg {
    Off,
    Optional,
    Required,
}

impl MfaArg {
    fn view(self) -> MfaPolicyView {
        match self {
            MfaArg::Off => MfaPolicyView::Off,
            MfaArg::Optional => MfaPolicyView::Optional,
            MfaArg::Required => MfaPolicyView::Required,
        }
    }
}

fn mfa_text(policy: MfaPolicyView) -> &'static str {
    match policy {
        MfaPolicyView::Off => "off",
        MfaPolicyView::Optional => "optional",
        MfaPolicyView::Required => "required",
    }
}
