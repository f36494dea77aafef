//! The command line: one clap parser. Every setting has a `FIELDAUTH_*` environment twin;
//! provisioning arguments describe one record and have none.

use std::net::SocketAddr;

use clap::{Args, Parser, Subcommand, ValueEnum};
use secrecy::SecretString;

pub use crate::manage::clients::ClientCommand;
pub use crate::manage::grants::GrantCommand;
pub use crate::manage::orgs::OrgCommand;
pub use crate::manage::tenants::TenantCommand;
pub use crate::manage::users::UserCommand;

#[derive(Debug, Parser)]
#[command(
    name = "fieldauth",
    version,
    about = "OAuth 2.0 authorization server, OpenID provider and field-service API"
)]
pub struct Cli {
    /// Database URL: `sqlite://PATH` (created on first use) or `postgres://USER@HOST/DB`.
    #[arg(
        long,
        env = "FIELDAUTH_DATABASE_URL",
        default_value = "sqlite://fieldauth.db",
        global = true
    )]
    pub database_url: String,

    /// A TOML file placing tenants on other databases (`[shards] name = "URL"`,
    /// `[tenants] tenant = "name"`); unlisted tenants use --database-url.
    #[arg(long, env = "FIELDAUTH_SHARDS", global = true)]
    pub shards: Option<std::path::PathBuf>,

    /// Log format: `human` for people, `json` for log collectors.
    #[arg(long, env = "FIELDAUTH_LOG_FORMAT", value_enum, default_value_t = LogFormat::Human, global = true)]
    pub log_format: LogFormat,

    /// Log filter in `tracing` syntax, e.g. `info` or `info,oauth=debug`.
    #[arg(long, env = "FIELDAUTH_LOG", default_value = "info", global = true)]
    pub log: String,

    #[command(subcommand)]
    pub command: Command,
}

/// The longest lock `--signin-lock-seconds` allows: `maintenance cleanup`, which does not know
/// the servers' setting, keeps sign-in failure counts at least this long.
pub const MAX_SIGNIN_LOCK_SECONDS: i64 = 86_400;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Human,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the authorization server and the API, each on its own listener.
    Serve(ServeArgs),
    /// Serve, after seeding the demo tenant, with a demo app to sign in to; prints how to try it.
    Demo(DemoArgs),
    /// Tenants: the top-level isolation unit.
    #[command(subcommand)]
    Tenant(TenantCommand),
    /// OAuth clients of a tenant.
    #[command(subcommand)]
    Client(ClientCommand),
    /// Users of a tenant.
    #[command(subcommand)]
    User(UserCommand),
    /// Organizations of a tenant and their members.
    #[command(subcommand)]
    Org(OrgCommand),
    /// Grants of a tenant's users: list by user or client, revoke one.
    #[command(subcommand)]
    Grant(GrantCommand),
    /// Token signing keys (global to the issuer).
    #[command(subcommand)]
    Keys(KeysCommand),
    /// The GraphQL API.
    #[command(subcommand)]
    Api(ApiCommand),
    /// The audit trail: sign-ins, consents, revoked grants and signing-key events.
    #[command(subcommand)]
    Audit(AuditCommand),
    /// Upkeep of the databases.
    #[command(subcommand)]
    Maintenance(MaintenanceCommand),
    /// Bearer tokens of the admin API.
    #[command(subcommand)]
    AdminToken(AdminTokenCommand),
    /// The admin API's contract.
    #[command(subcommand)]
    AdminApi(AdminApiCommand),
    /// Copy the live SQLite database (--database-url) to a new file, while the server runs.
    Backup {
        /// The copy to create: a file that does not exist yet (created with mode 0600).
        #[arg(long)]
        to: std::path::PathBuf,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum AdminTokenCommand {
    /// Create a token and print it, once. Without --tenant it administers every tenant.
    Create {
        /// What the audit trail calls changes made with it: 1 to 64 letters, digits, - _ .
        #[arg(long)]
        name: String,
        /// The one tenant it may see and change.
        #[arg(long)]
        tenant: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// List the tokens (never their values).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Revoke a token by name; requests with it are refused at once.
    Revoke {
        name: String,
        #[arg(long)]
        json: bool,
    },
}

/// The key encryption keys (KEK) that seal the signing keys in the database
/// (docs/deployment.md, Encryption of keys at rest).
#[derive(Clone, Debug, Default, Args)]
pub struct KekArgs {
    /// A file holding the key encryption key that seals the signing keys: 32 random bytes,
    /// or the file `fieldauth keys new-kek` writes. Keys stored in clear are sealed at start.
    #[arg(long, env = "FIELDAUTH_KEY_ENCRYPTION_KEY_FILE")]
    pub key_encryption_key_file: Option<std::path::PathBuf>,

    /// While the KEK changes: the previous KEK's file, to open keys it still seals.
    #[arg(
        long,
        env = "FIELDAUTH_PREVIOUS_KEY_ENCRYPTION_KEY_FILE",
        requires = "key_encryption_key_file"
    )]
    pub previous_key_encryption_key_file: Option<std::path::PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum AdminApiCommand {
    /// Print the admin API's OpenAPI 3.1 document (the repository keeps it as
    /// admin-openapi.json; the admin listener serves it at /admin/v1/openapi.json).
    Openapi,
}

#[derive(Debug, Subcommand)]
pub enum ApiCommand {
    /// Print the API's schema in GraphQL SDL (the repository keeps it as schema.graphql).
    Schema,
}

#[derive(Clone, Debug, Args)]
pub struct ServeArgs {
    /// The issuer `{auth_url}`, exactly as relying parties will see it in `iss`.
    #[arg(
        long,
        env = "FIELDAUTH_AUTH_URL",
        default_value = "http://127.0.0.1:8080"
    )]
    pub auth_url: String,

    /// The API base `{api_url}`: the audience of access tokens.
    #[arg(
        long,
        env = "FIELDAUTH_API_URL",
        default_value = "http://127.0.0.1:8081"
    )]
    pub api_url: String,

    /// Address the authorization server listens on.
    #[arg(long, env = "FIELDAUTH_AUTH_LISTEN", default_value = "127.0.0.1:8080")]
    pub auth_listen: SocketAddr,

    /// Address the API listens on.
    #[arg(long, env = "FIELDAUTH_API_LISTEN", default_value = "127.0.0.1:8081")]
    pub api_listen: SocketAddr,

    /// Seconds between reloads of the signing keys and of the clients' CORS origins, so a
    /// rotation or a client made elsewhere is served (1 to 60).
    #[arg(long, env = "FIELDAUTH_KEY_RELOAD_SECONDS", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..=60))]
    pub key_reload_seconds: u64,

    /// Failed sign-ins on one username (within 15 minutes) before it is locked; each failure
    /// before that doubles the wait before the next attempt (1, 2, 4 … s).
    #[arg(long, env = "FIELDAUTH_SIGNIN_MAX_FAILURES", default_value_t = 5,
          value_parser = clap::value_parser!(i64).range(1..=1000))]
    pub signin_max_failures: i64,

    /// Failed sign-ins from one client address, across usernames, before it is locked.
    #[arg(long, env = "FIELDAUTH_SIGNIN_MAX_FAILURES_PER_ADDRESS", default_value_t = 50,
          value_parser = clap::value_parser!(i64).range(1..=100000))]
    pub signin_max_failures_per_address: i64,

    /// Seconds a locked username or address stays locked.
    #[arg(long, env = "FIELDAUTH_SIGNIN_LOCK_SECONDS", default_value_t = 300,
          value_parser = clap::value_parser!(i64).range(1..=MAX_SIGNIN_LOCK_SECONDS))]
    pub signin_lock_seconds: i64,

    /// Authorization requests one client address (an IPv6 address by its /64) may start
    /// without a session, per tenant, in 10 minutes: each is stored until it expires. Past
    /// it the request is answered `temporarily_unavailable`.
    #[arg(long, env = "FIELDAUTH_AUTHORIZE_MAX_REQUESTS_PER_ADDRESS", default_value_t = 600,
          value_parser = clap::value_parser!(i64).range(1..=1_000_000))]
    pub authorize_max_requests_per_address: i64,

    /// MiB of API answers kept per node for repeated queries, reused while the
    /// organization's data is unchanged (0 turns the cache off).
    #[arg(long, env = "FIELDAUTH_API_CACHE_MIB", default_value_t = 64,
          value_parser = clap::value_parser!(u64).range(0..=65536))]
    pub api_cache_mib: u64,

    /// Days a grant lasts from its sign-in, however often it is refreshed (1 to 3650); then
    /// refresh answers `invalid_grant` and the user signs in again.
    #[arg(long, env = "FIELDAUTH_GRANT_MAX_DAYS", default_value_t = 90,
          value_parser = clap::value_parser!(i64).range(1..=3650))]
    pub grant_max_days: i64,

    /// Address of a listener serving `/metrics` (with `/healthz` and `/readyz`), kept off the
    /// public listeners, which answer `/metrics` with 404. Unset: no metrics are served.
    #[arg(long, env = "FIELDAUTH_METRICS_LISTEN")]
    pub metrics_listen: Option<SocketAddr>,

    /// Address of the admin API's listener (`/admin/v1/`, with `/healthz`, `/readyz` and
    /// `/metrics`), never the auth or API listener's. Keep it on loopback or a private
    /// network. Empty: no admin API on this node.
    #[arg(long, env = "FIELDAUTH_ADMIN_LISTEN", default_value = "127.0.0.1:8082")]
    pub admin_listen: String,

    /// Seconds a client has to send a request's line and headers, counted from the
    /// connection's start or from the request's first byte; a slower client is disconnected
    /// (1 to 300).
    #[arg(long, env = "FIELDAUTH_HEADER_READ_TIMEOUT_SECONDS", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..=300))]
    pub header_read_timeout_seconds: u64,

    /// Seconds a kept-alive connection may wait for its next request before it is closed
    /// (1 to 3600).
    #[arg(long, env = "FIELDAUTH_IDLE_TIMEOUT_SECONDS", default_value_t = 60,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub idle_timeout_seconds: u64,

    /// Open connections per listener; further clients wait in the kernel's accept queue until
    /// one closes (1 to 1000000).
    #[arg(long, env = "FIELDAUTH_MAX_CONNECTIONS", default_value_t = 4096,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub max_connections: u32,

    /// Addresses and CIDR networks of the proxies in front (comma-separated, such as
    /// `10.0.0.0/8,fd00::/8`). A request from one of them is from the address it forwards in
    /// `Forwarded` or `X-Forwarded-For`, read from the right past every trusted hop; from
    /// anyone else, those headers are ignored. Empty: none is trusted.
    #[arg(long, env = "FIELDAUTH_TRUSTED_PROXIES", default_value = "")]
    pub trusted_proxies: String,
    /// Seconds between two clean-ups of expired records on this node (0 turns it off).
    #[arg(long, env = "FIELDAUTH_CLEANUP_INTERVAL_SECONDS", default_value_t = 300,
          value_parser = clap::value_parser!(u64).range(0..=86400))]
    pub cleanup_interval_seconds: u64,

    /// Days audit events are kept (1 to 36500); the clean-up deletes older ones.
    #[arg(long, env = "FIELDAUTH_AUDIT_RETENTION_DAYS", default_value_t = 365,
          value_parser = clap::value_parser!(u16).range(1..=36500))]
    pub audit_retention_days: u16,

    #[command(flatten)]
    pub kek: KekArgs,

    /// The SMTP server that password-recovery mail goes through: `smtp://HOST:PORT` (plain),
    /// `smtp://HOST:PORT?tls=required` (STARTTLS) or `smtps://HOST:PORT` (TLS), with
    /// `USER:PASSWORD@` before the host (only over TLS). Never logged. Unset: no recovery by
    /// mail, and the sign-in page has no "Forgot your password?" link.
    #[arg(long, env = "FIELDAUTH_SMTP_URL", hide_env_values = true,
          requires = "mail_from", value_parser = secret)]
    pub smtp_url: Option<SecretString>,

    /// The sender of that mail: a mailbox such as `Fieldauth <no-reply@example.com>`.
    #[arg(long, env = "FIELDAUTH_MAIL_FROM", requires = "smtp_url")]
    pub mail_from: Option<String>,
}

/// A value held as a secret from the moment it is parsed, so no `Debug` can show it.
fn secret(value: &str) -> Result<SecretString, std::convert::Infallible> {
    Ok(SecretString::from(value.to_owned()))
}

/// `demo` takes every `serve` flag, and the demo app's address.
#[derive(Clone, Debug, Args)]
pub struct DemoArgs {
    #[command(flatten)]
    pub serve: ServeArgs,

    /// Address the demo app (the demo-spa client's back end) listens on: a loopback address,
    /// since its redirect URI is plain http. Port 0 picks a free port.
    #[arg(
        long,
        env = "FIELDAUTH_DEMO_APP_LISTEN",
        default_value = "127.0.0.1:8400"
    )]
    pub demo_app_listen: SocketAddr,
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// List the signing keys, newest first.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Create a new RSA-2048 key; it signs from the next reload of each node.
    Rotate {
        #[command(flatten)]
        kek: KekArgs,
        #[arg(long)]
        json: bool,
    },
    /// Write a new key encryption key (32 random bytes, base64url) to a new file, mode 0600.
    NewKek {
        /// The file to create; an existing file is never overwritten.
        #[arg(long)]
        out: std::path::PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Seal every signing key under a new key encryption key, in one transaction.
    Rewrap {
        /// The KEK that seals the keys now (omit it when they are stored in clear).
        #[arg(long, env = "FIELDAUTH_KEY_ENCRYPTION_KEY_FILE")]
        key_encryption_key_file: Option<std::path::PathBuf>,
        /// The KEK to seal them with from now on.
        #[arg(long)]
        new_key_encryption_key_file: std::path::PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Remove a key from the JWKS (not the one signing now).
    Retire {
        /// A kid is base64url, so it may begin with '-'; it is still the kid, not a flag.
        #[arg(allow_hyphen_values = true)]
        kid: String,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// List a tenant's newest events, oldest first, with the issuer's signing-key events
    /// (the keys sign every tenant's tokens).
    List {
        #[arg(long)]
        tenant: String,
        /// How many events, at most: the newest ones (1 to 10000).
        #[arg(long, default_value_t = 100,
              value_parser = clap::value_parser!(u16).range(1..=10000))]
        limit: u16,
        /// Only events of this kind (`signin.failed`, `admin.user.password_link`).
        #[arg(long)]
        kind: Option<String>,
        /// Only events at or after this time: Unix seconds or RFC 3339.
        #[arg(long)]
        since: Option<String>,
        /// Only events before this time: Unix seconds or RFC 3339.
        #[arg(long)]
        until: Option<String>,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum MaintenanceCommand {
    /// Delete expired records now, as each server does every --cleanup-interval-seconds, and
    /// print how many rows went from each table.
    Cleanup {
        /// Days audit events are kept (1 to 36500).
        #[arg(long, env = "FIELDAUTH_AUDIT_RETENTION_DAYS", default_value_t = 365,
              value_parser = clap::value_parser!(u16).range(1..=36500))]
        audit_retention_days: u16,
        #[arg(long)]
        json: bool,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kid_that_begins_with_a_dash_is_a_kid() {
        let cli = Cli::try_parse_from(["fieldauth", "keys", "retire", "-pQ2x_k", "--json"]);
        match cli.map(|c| c.command) {
            Ok(Command::Keys(KeysCommand::Retire { kid, json })) => {
                assert_eq!((kid.as_str(), json), ("-pQ2x_k", true));
            }
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn a_previous_kek_needs_a_current_one() {
        let previous = ["--previous-key-encryption-key-file", "old.kek"];
        let alone = Cli::try_parse_from([&["fieldauth", "serve"][..], &previous].concat());
        assert_eq!(
            alone.map(|_| ()).unwrap_err().kind(),
            clap::error::ErrorKind::MissingRequiredArgument
        );
        let both = Cli::try_parse_from(
            [
                &["fieldauth", "keys", "rotate"][..],
                &previous,
                &["--key-encryption-key-file", "new.kek"],
            ]
            .concat(),
        );
        match both.map(|c| c.command) {
            Ok(Command::Keys(KeysCommand::Rotate { kek, .. })) => {
                assert_eq!(kek.key_encryption_key_file, Some("new.kek".into()));
                assert_eq!(kek.previous_key_encryption_key_file, Some("old.kek".into()));
            }
            other => panic!("parsed as {other:?}"),
        }
    }
}
