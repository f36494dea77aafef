//! `fieldauth user …`: the CLI front end of [`admin::users`]. A user is named by `--sub`,
//! as in the admin API's paths (`user list --q` finds it); `--username` is always the
//! username itself, never a way to pick the user.

use admin::page::{PageQuery, PageRequest};
use admin::users::{self, NewUserRequest, Password, UserChanges, UserView};
use admin::Versioned;
use clap::Subcommand;
use serde_json::json;

use super::{all_pages, failed, if_match, Outcome, Shell};
use crate::report::Report;

#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Create a user, with a password read from standard input, or with none (`--no-password`:
    /// the user cannot sign in until a password is set).
    Create {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        username: String,
        /// Full name (the `name` claim).
        #[arg(long)]
        name: String,
        #[arg(long)]
        email: String,
        /// Read the password from standard input (passwords never go in argv).
        #[arg(long, required_unless_present = "no_password")]
        password_stdin: bool,
        /// Create the user without a password.
        #[arg(long, conflicts_with = "password_stdin")]
        no_password: bool,
        #[arg(long)]
        json: bool,
    },
    /// List a tenant's users, by username.
    List {
        #[arg(long)]
        tenant: String,
        /// Only those whose username, name or email contains this (case-insensitive).
        #[arg(long)]
        q: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Show a user, with its ETag.
    Show {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        sub: String,
        #[arg(long)]
        json: bool,
    },
    /// Change a user's username, name or email.
    Update {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        sub: String,
        /// The new username.
        #[arg(long)]
        username: Option<String>,
        #[arg(long)]
        name: Option<String>,
        #[arg(long)]
        email: Option<String>,
        /// Apply only if the user is still at this ETag (as `show` printed it).
        #[arg(long)]
        if_match: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Set a user's password, read from standard input. Their sessions and tokens stay.
    SetPassword {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        sub: String,
        /// Read the password from standard input (required: passwords never go in argv).
        #[arg(long, required = true)]
        password_stdin: bool,
        #[arg(long)]
        json: bool,
    },
    /// Disable a user: no sign-in, and every session and token they hold ends at once.
    Disable {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        sub: String,
        #[arg(long)]
        json: bool,
    },
    /// Enable a disabled user; the tokens ended by the disabling stay ended.
    Enable {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        sub: String,
        #[arg(long)]
        json: bool,
    },
    /// Delete a user with their grants, sessions and memberships.
    Delete {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        sub: String,
        #[arg(long)]
        json: bool,
    },
    /// End every browser session of a user and revoke every grant.
    SignOut {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        sub: String,
        #[arg(long)]
        json: bool,
    },
    /// Remove every second factor of a user (authenticator app, recovery codes, passkeys),
    /// after a lost device: they enroll again at their next sign-in if the tenant requires
    /// one. Sessions and tokens stay (`sign-out` ends them).
    ResetSecondFactors {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        sub: String,
        #[arg(long)]
        json: bool,
    },
    /// Issue a single-use link (24 hours) where the user sets a password; it ends the
    /// user's previous link. Deliver it to the user yourself.
    PasswordLink(super::password_links::PasswordLinkArgs),
}

pub async fn run(command: UserCommand, shell: &Shell<'_>) -> anyhow::Result<Outcome> {
    let ctx = shell.ctx("");
    Ok(match command {
        UserCommand::Create {
            tenant,
            username,
            name,
            email,
            password_stdin,
            no_password: _,
            json,
        } => {
            let password = match password_stdin {
                true => Some(Password(crate::read_password_from_stdin()?)),
                false => None,
            };
            let new = NewUserRequest {
                username,
                name,
                email,
                password,
            };
            let made = users::create(&ctx, &tenant, new)
                .await
                .map_err(failed("create the user"))?;
            let text = format!(
                "created user {} (sub {})",
                made.value.username, made.value.sub
            );
            (shown(&made, text), json)
        }
        UserCommand::List { tenant, q, json } => {
            let all = all_pages(|cursor| {
                let query = PageQuery {
                    cursor,
                    limit: Some(admin::page::MAX_LIMIT),
                    q: q.clone(),
                };
                let (ctx, tenant) = (&ctx, &tenant);
                async move { users::list(ctx, tenant, &PageRequest::parse(&query)?).await }
            })
            .await
            .map_err(failed("list users"))?;
            let text = all
                .iter()
                .map(|u| {
                    let disabled = if u.disabled { "\tdisabled" } else { "" };
                    format!(
                        "{}\t{}\t{}\t{}{disabled}",
                        u.sub, u.username, u.name, u.email
                    )
                })
                .collect::<Vec<_>>()
                .join("\n");
            (Report::new(json!({ "users": all }), text), json)
        }
        UserCommand::Show { tenant, sub, json } => {
            let found = users::get(&ctx, &tenant, &sub)
                .await
                .map_err(failed("show the user"))?;
            let user = &found.value;
            let text = format!(
                "user {}\nusername: {}\nname: {}\nemail: {}\ndisabled: {}\ncreated: {}\netag: {}",
                user.sub,
                user.username,
                user.name,
                user.email,
                user.disabled,
                user.created_at,
                found.etag()
            );
            (shown(&found, text), json)
        }
        UserCommand::Update {
            tenant,
            sub,
            username,
            name,
            email,
            if_match: tag,
            json,
        } => {
            let precondition = if_match(tag.as_deref())?;
            let changes = UserChanges {
                username,
                name,
                email,
            };
            let updated = users::update(&ctx, &tenant, &sub, &changes, precondition)
                .await
                .map_err(failed("update the user"))?;
            let text = format!("updated user {}", updated.value.sub);
            (shown(&updated, text), json)
        }
        UserCommand::SetPassword {
            tenant,
            sub,
            password_stdin: _,
            json,
        } => {
            let password = crate::read_password_from_stdin()?;
            users::set_password(&ctx, &tenant, &sub, password)
                .await
                .map_err(failed("set the password"))?;
            let body = json!({ "sub": sub, "password_set": true });
            (
                Report::new(body, format!("set the password of user {sub}")),
                json,
            )
        }
        UserCommand::Disable { tenant, sub, json } => {
            let user = users::disable(&ctx, &tenant, &sub)
                .await
                .map_err(failed("disable the user"))?;
            let text = format!("disabled user {sub}: its sessions and tokens have ended");
            (shown(&user, text), json)
        }
        UserCommand::Enable { tenant, sub, json } => {
            let user = users::enable(&ctx, &tenant, &sub)
                .await
                .map_err(failed("enable the user"))?;
            (shown(&user, format!("enabled user {sub}")), json)
        }
        UserCommand::Delete { tenant, sub, json } => {
            users::delete(&ctx, &tenant, &sub)
                .await
                .map_err(failed("delete the user"))?;
            let body = json!({ "sub": sub, "deleted": true });
            (Report::new(body, format!("deleted user {sub}")), json)
        }
        UserCommand::SignOut { tenant, sub, json } => {
            let ended = users::sign_out(&ctx, &tenant, &sub)
                .await
                .map_err(failed("sign the user out"))?;
            let text = format!(
                "signed user {sub} out everywhere: {} session(s) ended, {} grant(s) revoked",
                ended.sessions_ended, ended.grants_revoked
            );
            let body = serde_json::to_value(&ended).unwrap_or_default();
            (Report::new(body, text), json)
        }
        UserCommand::ResetSecondFactors { tenant, sub, json } => {
            let reset = users::reset_second_factors(&ctx, &tenant, &sub)
                .await
                .map_err(failed("reset the user's second factors"))?;
            let text = match reset.removed {
                true => format!("removed every second factor of user {sub}"),
                false => format!("user {sub} had no second factor"),
            };
            let body = serde_json::to_value(&reset).unwrap_or_default();
            (Report::new(body, text), json)
        }
        UserCommand::PasswordLink(args) => super::password_links::run(args, shell).await?,
    })
}

/// A user as `--json` prints it: the admin API's body, and its ETag.
fn shown(user: &Versioned<UserView>, text: String) -> Report {
    let mut body = serde_json::to_value(&user.value).unwrap_or_default();
    body["etag"] = json!(user.etag());
    Report::new(body, text)
}
