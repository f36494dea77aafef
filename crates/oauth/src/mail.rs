//! Outgoing mail: the SMTP server of `--smtp-url` and the sender of `--mail-from`, checked
//! once at start. The URL may carry the server's credentials, so it is held as a secret and
//! never shown, not even in an error about it.

use std::sync::Arc;
use std::time::Duration;

use lettre::message::header::ContentType;
use lettre::message::Mailbox;
use lettre::transport::smtp::AsyncSmtpTransport;
use lettre::{Address, AsyncTransport, Message, Tokio1Executor};
use secrecy::{ExposeSecret, SecretString};
use tokio::sync::Semaphore;

use crate::error::OAuthError;

/// How long one SMTP exchange may take before it counts as failed.
const SEND_TIMEOUT: Duration = Duration::from_secs(30);

/// Messages being handed to the SMTP server at once; more wait their turn, so a burst of
/// requests cannot open connections without bound.
const CONCURRENT_SENDS: usize = 8;

/// The configured way out for mail. Clones share the transport and the bound on sends.
#[derive(Clone)]
pub struct Mailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
    sends: Arc<Semaphore>,
}

impl std::fmt::Debug for Mailer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the URL: it may hold a password.
        f.debug_struct("Mailer")
            .field("from", &self.from.to_string())
            .finish_non_exhaustive()
    }
}

/// A message ready to go: its recipient, subject and plain-text body.
pub(crate) struct Mail {
    pub to: Mailbox,
    pub subject: &'static str,
    /// Holds a password link: a secret until it leaves.
    pub text: SecretString,
}

impl Mailer {
    /// Checks `--smtp-url` and `--mail-from` and prepares the transport (no connection is
    /// made until the first message).
    ///
    /// The URL is `smtp://HOST[:PORT]` (plain), `smtp://HOST[:PORT]?tls=required`
    /// (STARTTLS, RFC 3207, refused if the server does not offer it) or
    /// `smtps://HOST[:PORT]` (TLS from the first byte, RFC 8314 §3.3), with
    /// `USER:PASSWORD@` before the host when the server wants credentials. Credentials are
    /// refused on a plain connection, where anyone on the path could read them.
    pub fn new(smtp_url: &SecretString, mail_from: &str) -> Result<Mailer, OAuthError> {
        let refuse = |why| OAuthError::InvalidMailSetting {
            flag: "--smtp-url",
            why,
        };
        let url = url::Url::parse(smtp_url.expose_secret())
            .map_err(|_| refuse("not a URL such as smtp://mail.example.com:587?tls=required"))?;
        let mut tls = match url.scheme() {
            "smtps" => true,
            "smtp" => false,
            _ => return Err(refuse("the scheme must be smtp:// or smtps://")),
        };
        if url.host_str().is_none_or(str::is_empty) {
            return Err(refuse("the URL names no host"));
        }
        if !matches!(url.path(), "" | "/") || url.fragment().is_some() {
            return Err(refuse("the URL must not have a path or a fragment"));
        }
        for (name, value) in url.query_pairs() {
            match (name.as_ref(), value.as_ref(), url.scheme()) {
                ("tls", "required", "smtp") => tls = true,
                _ => {
                    return Err(refuse(
                        "the only query allowed is ?tls=required, on smtp:// (STARTTLS)",
                    ))
                }
            }
        }
        match (url.username().is_empty(), url.password().is_some()) {
            (true, false) => {}
            (false, true) if tls => {}
            (false, true) => {
                return Err(refuse(
                    "credentials need TLS: use smtps:// or smtp://…?tls=required",
                ))
            }
            _ => return Err(refuse("credentials need both a user and a password")),
        }
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(smtp_url.expose_secret())
            .map_err(|_| refuse("the SMTP transport cannot be set up with this URL"))?
            .timeout(Some(SEND_TIMEOUT))
            .build();
        let from = mail_from
            .parse::<Mailbox>()
            .map_err(|_| OAuthError::InvalidMailSetting {
                flag: "--mail-from",
                why: "not a mailbox such as \"Fieldauth <no-reply@example.com>\"",
            })?;
        Ok(Mailer {
            transport,
            from,
            sends: Arc::new(Semaphore::new(CONCURRENT_SENDS)),
        })
    }

    /// The mailbox of a user's email address, if it is one mail can be sent to.
    pub(crate) fn recipient(email: &str) -> Option<Mailbox> {
        let address = email.trim().parse::<Address>().ok()?;
        Some(Mailbox::new(None, address))
    }

    /// Hands the message to the SMTP server, waiting for a turn among the sends in flight.
    pub(crate) async fn send(&self, mail: Mail) -> Result<(), OAuthError> {
        let message = Message::builder()
            .from(self.from.clone())
            .to(mail.to)
            .subject(mail.subject)
            .header(ContentType::TEXT_PLAIN)
            .body(mail.text.expose_secret().to_owned())
            .map_err(OAuthError::MailMessage)?;
        let _turn = self
            .sends
            .acquire()
            .await
            .map_err(|_| OAuthError::Blocking)?;
        self.transport
            .send(message)
            .await
            .map_err(OAuthError::MailDelivery)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(url: &str) -> String {
        match Mailer::new(&SecretString::from(url.to_owned()), "a@example.com") {
            Ok(_) => "accepted".to_owned(),
            Err(error) => error.to_string(),
        }
    }

    #[tokio::test]
    async fn smtp_urls_are_checked_and_never_echoed() {
        for good in [
            "smtp://127.0.0.1:2525",
            "smtp://mail.example.com:587?tls=required",
            "smtps://user:pa%20ss@mail.example.com",
        ] {
            assert_eq!(refusal(good), "accepted", "{good}");
        }
        for (bad, why) in [
            ("mail.example.com", "not a URL"),
            ("http://mail.example.com", "scheme"),
            (
                "smtp://user:secret@mail.example.com",
                "credentials need TLS",
            ),
            (
                "smtps://user@mail.example.com",
                "both a user and a password",
            ),
            ("smtps://mail.example.com?tls=required", "only query"),
            ("smtp://mail.example.com?tls=opportunistic", "only query"),
            ("smtp://mail.example.com/ehlo", "path"),
        ] {
            let message = refusal(bad);
            assert!(message.starts_with("--smtp-url: "), "{message}");
            assert!(message.contains(why), "{bad}: {message}");
            assert!(!message.contains("secret"), "{message}");
        }
    }

    #[tokio::test]
    async fn the_sender_must_be_a_mailbox() {
        let url = SecretString::from("smtp://127.0.0.1:25".to_owned());
        assert!(Mailer::new(&url, "Fieldauth <no-reply@example.com>").is_ok());
        let error = Mailer::new(&url, "no-reply").unwrap_err().to_string();
        assert!(error.starts_with("--mail-from: "), "{error}");
    }

    #[test]
    fn recipients_are_addresses() {
        assert!(Mailer::recipient("alice@example.com").is_some());
        assert!(Mailer::recipient("").is_none());
        assert!(Mailer::recipient("alice").is_none());
        assert!(Mailer::recipient("a@b.example\r\nBcc: x@y.example").is_none());
    }
}
