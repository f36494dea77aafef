//! `fieldauth user …`: the CLI front end of the users' administration.

use clap::Subcommand;

use super::{Outcome, Shell};
use crate::provision::{self, UserRequest};

#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Create a user; the password is read from standard input.
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
        /// Read the password from standard input (required: passwords never go in argv).
        #[arg(long, required = true)]
        password_stdin: bool,
        #[arg(long)]
        json: bool,
    },
    /// Issue a single-use link (24 hours) where the user sets a password; it ends the
    /// user's previous link. Deliver it to the user yourself.
    PasswordLink(super::password_links::PasswordLinkArgs),
}

pub async fn run(command: UserCommand, shell: &Shell<'_>) -> anyhow::Result<Outcome> {
    Ok(match command {
        UserCommand::Create {
            tenant,
            username,
            name,
            email,
            password_stdin: _,
            json,
        } => {
            let password = crate::read_password_from_stdin()?;
            let request = UserRequest {
                tenant: &tenant,
                username: &username,
                name: &name,
                email: &email,
            };
            (
                provision::create_user(shell.store, &request, password, shell.random, shell.now)
                    .await?,
                json,
            )
        }
        UserCommand::PasswordLink(args) => super::password_links::run(args, shell).await?,
    })
}
