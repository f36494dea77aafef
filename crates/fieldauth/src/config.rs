//! Settings checked once at start: a bad value stops the process with a one-line reason.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{bail, Context};
use oauth::{Issuer, ThrottlePolicy, TrustedProxies};
use url::Url;

use crate::cli::ServeArgs;
use crate::connections::ConnectionLimits;

#[derive(Clone, Debug)]
pub struct ServeConfig {
    pub issuer: Issuer,
    /// `{api_url}` exactly as given: the access-token audience.
    pub api_url: String,
    pub auth_listen: SocketAddr,
    pub api_listen: SocketAddr,
    pub key_reload_interval: Duration,
    pub throttle: ThrottlePolicy,
    /// Bytes of answers the API's response cache may keep; 0 turns it off.
    pub api_cache_bytes: usize,
    /// The metrics listener's address; `None`: no metrics listener.
    pub metrics_listen: Option<SocketAddr>,
    /// The admin API listener's address; `None`: no admin API on this node.
    pub admin_listen: Option<SocketAddr>,
    /// Each listener's timeouts and connection cap.
    pub connections: ConnectionLimits,
    /// Seconds a grant lasts from its code exchange (`--grant-max-days`).
    pub grant_max_age: i64,
    /// Proxies whose `Forwarded` / `X-Forwarded-For` name the client (`--trusted-proxies`).
    pub trusted_proxies: TrustedProxies,
    /// Time between two clean-ups of expired records; `None`: no clean-up on this node.
    pub cleanup_interval: Option<Duration>,
    /// Seconds audit events are kept.
    pub audit_retention: i64,
    /// The KEKs that seal the signing keys; none: keys in clear.
    pub key_encryption: oauth::sealing::KeyEncryption,
    /// How back-channel logout tokens are delivered (no flag: the defaults; tests shorten
    /// the waits).
    pub backchannel: oauth::logout::backchannel::BackchannelSettings,
    /// Password-recovery mail (`--smtp-url`, `--mail-from`); none: no recovery by mail.
    pub mail: Option<oauth::Mailer>,
}

impl ServeConfig {
    pub fn from_args(args: &ServeArgs) -> anyhow::Result<ServeConfig> {
        let issuer = Issuer::parse(&args.auth_url)
            .with_context(|| format!("--auth-url {:?}", args.auth_url))?;
        check_api_url(&args.api_url).with_context(|| format!("--api-url {:?}", args.api_url))?;
        Ok(ServeConfig {
            issuer,
            api_url: args.api_url.clone(),
            auth_listen: args.auth_listen,
            api_listen: args.api_listen,
            key_reload_interval: Duration::from_secs(args.key_reload_seconds),
            throttle: ThrottlePolicy {
                max_account_failures: args.signin_max_failures,
                max_address_failures: args.signin_max_failures_per_address,
                lock_seconds: args.signin_lock_seconds,
                max_authorize_requests_per_address: args.authorize_max_requests_per_address,
            },
            api_cache_bytes: usize::try_from(args.api_cache_mib.saturating_mul(1 << 20))
                .context("--api-cache-mib is too large for this machine")?,
            metrics_listen: args.metrics_listen,
            admin_listen: match args.admin_listen.trim() {
                "" => None,
                addr => Some(addr.parse().with_context(|| {
                    format!("--admin-listen {addr:?}: not an address and port")
                })?),
            },
            connections: ConnectionLimits {
                header_read_timeout: Duration::from_secs(args.header_read_timeout_seconds),
                idle_timeout: Duration::from_secs(args.idle_timeout_seconds),
                max_connections: usize::try_from(args.max_connections)
                    .context("--max-connections is too large for this machine")?,
            },
            grant_max_age: args.grant_max_days * 86_400,
            trusted_proxies: TrustedProxies::parse(&args.trusted_proxies)
                .context("--trusted-proxies")?,
            cleanup_interval: (args.cleanup_interval_seconds > 0)
                .then(|| Duration::from_secs(args.cleanup_interval_seconds)),
            audit_retention: i64::from(args.audit_retention_days) * 86_400,
            key_encryption: crate::keys::key_encryption(&args.kek)?,
            backchannel: Default::default(),
            // clap requires both flags or neither. The error names the flag, never the URL.
            mail: match (&args.smtp_url, &args.mail_from) {
                (Some(url), Some(from)) => Some(oauth::Mailer::new(url, from)?),
                _ => None,
            },
        })
    }
}

fn check_api_url(value: &str) -> anyhow::Result<()> {
    let url = Url::parse(value).context("not an absolute URL")?;
    if !matches!(url.scheme(), "https" | "http") || url.host_str().is_none() {
        bail!("must be an http or https URL with a host");
    }
    if url.query().is_some() || url.fragment().is_some() {
        bail!("must not have a query or fragment");
    }
    if !url.username().is_empty() || url.password().is_some() {
        bail!("must not carry credentials");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(auth: &str, api: &str) -> ServeArgs {
        ServeArgs {
            auth_url: auth.into(),
            api_url: api.into(),
            auth_listen: "127.0.0.1:0".parse().unwrap(),
            api_listen: "127.0.0.1:0".parse().unwrap(),
            key_reload_seconds: 30,
            signin_max_failures: 5,
            signin_max_failures_per_address: 50,
            signin_lock_seconds: 300,
            authorize_max_requests_per_address: 600,
            api_cache_mib: 64,
            metrics_listen: None,
            admin_listen: "127.0.0.1:0".into(),
            header_read_timeout_seconds: 10,
            idle_timeout_seconds: 60,
            max_connections: 4096,
            grant_max_days: 90,
            trusted_proxies: String::new(),
            cleanup_interval_seconds: 300,
            audit_retention_days: 365,
            kek: Default::default(),
            smtp_url: None,
            mail_from: None,
        }
    }

    #[test]
    fn trusted_proxies_are_networks_or_addresses() {
        let mut given = args("https://id.example.com", "https://api.example.com");
        given.trusted_proxies = "10.0.0.0/8, 192.0.2.1".into();
        assert!(!ServeConfig::from_args(&given)
            .unwrap()
            .trusted_proxies
            .is_empty());
        given.trusted_proxies = "10.0.0.0/8,lb.internal".into();
        let err = ServeConfig::from_args(&given).unwrap_err();
        assert_eq!(
            format!("{err:#}"),
            "--trusted-proxies: \"lb.internal\" is not an IP address or CIDR network (such as 10.0.0.0/8 or fd00::/8)"
        );
    }

    #[test]
    fn urls_are_kept_exactly_as_given() {
        let config =
            ServeConfig::from_args(&args("https://id.example.com/", "https://api.example.com"))
                .unwrap();
        assert_eq!(config.issuer.as_str(), "https://id.example.com/");
        assert_eq!(config.api_url, "https://api.example.com");
        assert_eq!(config.grant_max_age, 90 * 86_400);
    }

    #[test]
    fn mail_settings_are_checked_at_start_without_showing_the_url() {
        let mut given = args("https://id.example.com", "https://api.example.com");
        assert!(ServeConfig::from_args(&given).unwrap().mail.is_none());
        given.smtp_url = Some("smtps://relay:s3cret@mail.example.com".to_owned().into());
        given.mail_from = Some("Fieldauth <no-reply@example.com>".into());
        assert!(ServeConfig::from_args(&given).unwrap().mail.is_some());
        given.smtp_url = Some("smtp://relay:s3cret@mail.example.com".to_owned().into());
        let err = format!("{:#}", ServeConfig::from_args(&given).unwrap_err());
        assert!(err.starts_with("--smtp-url: credentials need TLS"), "{err}");
        assert!(!err.contains("s3cret"), "{err}");
        given.smtp_url = Some("smtp://127.0.0.1:25".to_owned().into());
        given.mail_from = Some("nobody".into());
        let err = format!("{:#}", ServeConfig::from_args(&given).unwrap_err());
        assert!(err.starts_with("--mail-from: "), "{err}");
    }

    #[test]
    fn bad_urls_name_the_flag() {
        let err =
            ServeConfig::from_args(&args("not a url", "https://api.example.com")).unwrap_err();
        assert!(
            format!("{err:#}").starts_with("--auth-url \"not a url\": "),
            "{err:#}"
        );
        let err = ServeConfig::from_args(&args(
            "https://id.example.com",
            "https://u:p@api.example.com",
        ))
        .unwrap_err();
        assert!(
            format!("{err:#}").ends_with("must not carry credentials"),
            "{err:#}"
        );
        let err = ServeConfig::from_args(&args("https://id.example.com", "ftp://x")).unwrap_err();
        assert!(
            format!("{err:#}").starts_with("--api-url \"ftp://x\": "),
            "{err:#}"
        );
    }
}
