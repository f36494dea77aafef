//! `fieldauth client …`: the CLI front end of the clients' administration.

use clap::Subcommand;

use super::{Outcome, Shell};
use crate::provision::{self, ClientRequest};

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
        #[arg(long)]
        json: bool,
    },
}

pub async fn run(command: ClientCommand, shell: &Shell<'_>) -> anyhow::Result<Outcome> {
    Ok(match command {
        ClientCommand::Create {
            tenant,
            client_id,
            redirect_uris,
            confidential,
            name,
            scopes,
            web_origins,
            json,
        } => {
            let request = ClientRequest {
                tenant: &tenant,
                client_id: &client_id,
                redirect_uris: &redirect_uris,
                confidential,
                name: name.as_deref(),
                scopes: &scopes,
                web_origins: &web_origins,
            };
            (
                provision::create_client(shell.store, &request, shell.random, shell.now).await?,
                json,
            )
        }
    })
}
