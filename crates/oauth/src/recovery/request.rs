//! What a recovery request does: count it against the client address at once, then, off the
//! request path, find the account, count it against the account, issue a recovery link
//! (replacing the user's previous link) and mail it. Each request ends in one audit event
//! (`account.recovery_requested`), except the throttled ones past the first of a window.

use std::net::IpAddr;

use jose::UnixTime;
use secrecy::{ExposeSecret, SecretString};
use store::{RecoveryQuota, RecoverySubject, TenantId};
use tracing::Instrument;

use crate::error::{error_chain, OAuthError};
use crate::events::{Event, RecoveryOutcome};
use crate::mail::{Mail, Mailer};
use crate::paths;
use crate::secret::hash_secret;
use crate::state::OAuthState;
use crate::throttle;
use crate::username::Username;

/// Recovery mails one account may be sent per window: enough for a lost message or two.
pub const RECOVERY_MAX_PER_ACCOUNT: i64 = 3;
/// Recovery requests one client address (an IPv6 address by its /64) may make per window,
/// across usernames.
pub const RECOVERY_MAX_PER_ADDRESS: i64 = 10;
/// The quotas' window (seconds).
pub const RECOVERY_QUOTA_WINDOW: UnixTime = 3600;
/// How long a recovery link can be used (seconds). An admin's link lives a day; one the
/// user asked for is used at once or not at all, and a mailbox is a place links leak from.
pub const RECOVERY_LINK_LIFETIME: UnixTime = 3600;

/// Counts the request against the client address and, within its quota, sets off the rest
/// on a task of its own: the answer does not wait for the database or the mail server, so
/// it takes the same time whether or not the account exists.
pub(super) async fn request_recovery(
    state: &OAuthState,
    mailer: &Mailer,
    tenant: &TenantId,
    typed_username: &str,
    address: IpAddr,
    now: UnixTime,
) -> Result<(), OAuthError> {
    // Only a valid username can name an account; anything else is told apart in the trail.
    let username = Username::parse(typed_username).ok();
    let shown_address = address.to_string();
    let quota = state
        .store
        .tenant(tenant)
        .take_recovery_quota(
            RecoverySubject::Address(&throttle::address_key(address)),
            RECOVERY_MAX_PER_ADDRESS,
            now,
            RECOVERY_QUOTA_WINDOW,
        )
        .await?;
    if let RecoveryQuota::Refused { first } = quota {
        tracing::warn!(%tenant, "password recovery refused: the address's quota is used up");
        let event = Event::RecoveryRequested {
            subject: username.as_ref().map_or(NOT_A_USERNAME, Username::as_str),
            address: &shown_address,
            outcome: RecoveryOutcome::Throttled { audited: first },
        };
        state.record(tenant, event, now).await;
        return Ok(());
    }
    let task = Recovery {
        state: state.clone(),
        mailer: mailer.clone(),
        tenant: tenant.clone(),
        username,
        address: shown_address,
        now,
    };
    let span = tracing::info_span!("password_recovery", tenant = %tenant);
    tokio::spawn(task.run().instrument(span));
    Ok(())
}

/// What the trail names when the typed text cannot be a username.
const NOT_A_USERNAME: &str = "(not a valid username)";

/// The part of a request that runs after the answer.
struct Recovery {
    state: OAuthState,
    mailer: Mailer,
    tenant: TenantId,
    username: Option<Username>,
    address: String,
    now: UnixTime,
}

impl Recovery {
    async fn run(self) {
        if let Err(error) = self.mail_link().await {
            tracing::error!(error = %error_chain(&error), "password recovery failed");
        }
    }

    async fn mail_link(&self) -> Result<(), OAuthError> {
        let records = self.state.store.tenant(&self.tenant);
        let found = match &self.username {
            Some(username) => {
                records
                    .find_admin_user_by_username(username.as_str())
                    .await?
            }
            None => None,
        };
        let typed = self
            .username
            .as_ref()
            .map_or(NOT_A_USERNAME, Username::as_str);
        // Whatever the reason nothing is sent, the person was told the same; the trail says
        // why.
        let (subject, outcome) = match &found {
            None => (typed, RecoveryOutcome::UnknownUser),
            Some(user) if user.disabled_at.is_some() => {
                (user.user.user_id.as_str(), RecoveryOutcome::Disabled)
            }
            Some(user) => {
                let user = &user.user;
                let outcome = match Mailer::recipient(&user.email) {
                    None => RecoveryOutcome::NoEmail,
                    Some(to) => self.mail_within_quota(user, to).await?,
                };
                (user.user_id.as_str(), outcome)
            }
        };
        let event = Event::RecoveryRequested {
            subject,
            address: &self.address,
            outcome,
        };
        self.state.record(&self.tenant, event, self.now).await;
        Ok(())
    }

    /// Counts the request against the account, then issues the link and sends it.
    async fn mail_within_quota(
        &self,
        user: &store::User,
        to: lettre::message::Mailbox,
    ) -> Result<RecoveryOutcome, OAuthError> {
        let records = self.state.store.tenant(&self.tenant);
        let quota = records
            .take_recovery_quota(
                RecoverySubject::Account(&user.user_id),
                RECOVERY_MAX_PER_ACCOUNT,
                self.now,
                RECOVERY_QUOTA_WINDOW,
            )
            .await?;
        if let RecoveryQuota::Refused { first } = quota {
            tracing::warn!(sub = %user.user_id, "password recovery refused: the account's quota is used up");
            return Ok(RecoveryOutcome::Throttled { audited: first });
        }
        let random = SecretString::from(self.state.random.token()?);
        records
            .create_recovery_link(
                &user.user_id,
                &hash_secret(random.expose_secret()),
                self.now,
                self.now + RECOVERY_LINK_LIFETIME,
            )
            .await?;
        // `<tenant>.<random>`: the prefix routes the link to its tenant's data, as for codes.
        let link = SecretString::from(format!(
            "{}{}?token={}.{}",
            self.state.config.issuer.as_str().trim_end_matches('/'),
            paths::ACCOUNT_PASSWORD,
            self.tenant,
            random.expose_secret()
        ));
        let mail = Mail {
            to,
            subject: super::message::SUBJECT,
            text: super::message::text(user, &self.state.config.issuer, &link),
        };
        Ok(match self.mailer.send(mail).await {
            Ok(()) => {
                tracing::info!(sub = %user.user_id, "password recovery link sent");
                RecoveryOutcome::Sent
            }
            Err(error) => {
                // The error names the server's reply, never the message or its link.
                tracing::error!(sub = %user.user_id, error = %error_chain(&error), "password recovery mail not sent");
                RecoveryOutcome::MailFailed
            }
        })
    }
}
