//! What the authorization server counts (Prometheus) and what it writes to the tenant's audit
//! trail. Handlers say what happened with [`OAuthState::record`]: this file names the events,
//! `record.rs` decides which counter moves and which row is written, `metrics.rs` holds the
//! counters.

use prometheus_client::encoding::EncodeLabelValue;
use store::{SignedOut, TenantId};

use crate::mfa::Factor;

mod metrics;
mod record;

pub use metrics::{BackchannelResult, Metrics};

/// How a password-recovery request ended. The person was told the same in every case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RecoveryOutcome {
    Sent,
    /// The SMTP server could not be reached or refused the message.
    MailFailed,
    /// Over the account's or the address's quota. `audited`: the first refusal of the
    /// window; later ones are only counted, so nobody can make the server write rows.
    Throttled {
        audited: bool,
    },
    UnknownUser,
    Disabled,
    NoEmail,
}

impl RecoveryOutcome {
    fn label(self) -> &'static str {
        match self {
            RecoveryOutcome::Sent => "sent",
            RecoveryOutcome::MailFailed => "mail_failed",
            RecoveryOutcome::Throttled { .. } => "throttled",
            RecoveryOutcome::UnknownUser => "unknown_user",
            RecoveryOutcome::Disabled => "disabled",
            RecoveryOutcome::NoEmail => "no_email",
        }
    }

    fn detail(self) -> &'static str {
        match self {
            RecoveryOutcome::Sent => "link sent",
            RecoveryOutcome::MailFailed => "mail not delivered",
            RecoveryOutcome::Throttled { .. } => "throttled: nothing sent",
            RecoveryOutcome::UnknownUser => "unknown user: nothing sent",
            RecoveryOutcome::Disabled => "account disabled: nothing sent",
            RecoveryOutcome::NoEmail => "no email address: nothing sent",
        }
    }

    /// What the mail counter records, when a mail was attempted.
    fn mail_result(self) -> Option<&'static str> {
        match self {
            RecoveryOutcome::Sent => Some("sent"),
            RecoveryOutcome::MailFailed => Some("failed"),
            RecoveryOutcome::Throttled { .. }
            | RecoveryOutcome::UnknownUser
            | RecoveryOutcome::Disabled
            | RecoveryOutcome::NoEmail => None,
        }
    }
}

/// Why a grant (a token family) ended early.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)] // the label values, as Prometheus shows them
pub enum RevokeReason {
    refresh_reuse,
    code_replay,
    client_revocation,
}

impl RevokeReason {
    fn detail(self) -> &'static str {
        match self {
            RevokeReason::refresh_reuse => "a consumed refresh token was presented again",
            RevokeReason::code_replay => "an authorization code was redeemed twice",
            RevokeReason::client_revocation => "the client revoked its refresh token",
        }
    }
}

/// Something the audit trail keeps.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Event<'a> {
    SignedIn {
        user_id: &'a str,
        /// The application signed in to; `None` on the account page.
        client_id: Option<&'a str>,
        address: &'a str,
    },
    SignInFailed {
        username: &'a str,
        client_id: Option<&'a str>,
        address: &'a str,
        /// Why, for the trail only: "wrong username or password", "account disabled"…
        why: &'a str,
        /// This failure locked the account or the address.
        locked: bool,
    },
    /// Refused without checking the password: the account or the address is locked.
    SignInRefused {
        username: &'a str,
        client_id: Option<&'a str>,
        address: &'a str,
        /// Written to the audit trail: the first refusal since the last failure. Later
        /// ones are only counted, so a locked caller cannot make the server write rows.
        audited: bool,
    },
    /// A second factor proved at sign-in (or for a request's `acr_values`).
    SecondFactorProved {
        user_id: &'a str,
        client_id: Option<&'a str>,
        address: &'a str,
        factor: Factor,
    },
    /// A wrong second factor at sign-in: a failed sign-in of the account.
    SecondFactorFailed {
        user_id: &'a str,
        client_id: Option<&'a str>,
        address: &'a str,
        /// totp, recovery_code or passkey.
        method: &'static str,
        /// This failure locked the account or the address.
        locked: bool,
    },
    ConsentGiven {
        user_id: &'a str,
        client_id: &'a str,
        organization: &'a str,
        scope: &'a str,
    },
    ConsentDenied {
        user_id: &'a str,
        client_id: &'a str,
    },
    GrantRevoked {
        client_id: &'a str,
        grant_id: &'a str,
        reason: RevokeReason,
    },
    /// A consumed refresh token presented again within its client's retry window (issue
    /// 27) and answered: the successor its rotation issued, never used, is ended.
    RefreshRetried {
        client_id: &'a str,
        grant_id: &'a str,
        user_id: &'a str,
    },
    /// A user set their password from an admin's password link (the link is spent, the
    /// user's sessions and grants ended).
    PasswordSet {
        user_id: &'a str,
        address: &'a str,
        signed_out: SignedOut,
    },
    /// A user set their password from a recovery link they asked for (the link is spent, the
    /// user's sessions and grants ended).
    PasswordReset {
        user_id: &'a str,
        address: &'a str,
        signed_out: SignedOut,
    },
    /// Someone asked for a recovery link on the "Forgot your password?" page.
    RecoveryRequested {
        /// The account's `sub` when one has the username, else the username as typed.
        subject: &'a str,
        address: &'a str,
        outcome: RecoveryOutcome,
    },
    /// A browser session ended at the end-session endpoint.
    SignedOut {
        user_id: &'a str,
        /// The client that sent the browser, when it said (`client_id` or the hint).
        client_id: Option<&'a str>,
    },
    BackchannelLogoutDelivered {
        user_id: &'a str,
        client_id: &'a str,
    },
    /// A logout token given up on; why, for the trail.
    BackchannelLogoutFailed {
        user_id: &'a str,
        client_id: &'a str,
        why: &'a str,
    },
    /// A user removed an app's access on the account page: its grant is revoked.
    AccessRemoved {
        user_id: &'a str,
        client_id: &'a str,
        grant_id: &'a str,
        address: &'a str,
    },
    /// A user signed out everywhere on the account page.
    SignedOutEverywhere {
        user_id: &'a str,
        address: &'a str,
        sessions: u64,
        grants: u64,
    },
    /// A user changed their password on the account page; their other sessions ended and
    /// their grants were revoked.
    PasswordChanged {
        user_id: &'a str,
        address: &'a str,
        sessions: u64,
        grants: u64,
    },
    /// The current password given on the account page was wrong.
    PasswordCheckFailed {
        user_id: &'a str,
        address: &'a str,
        /// Why, for the trail only.
        why: &'a str,
        /// This failure locked the account or the address.
        locked: bool,
    },
    /// The current password was not checked: the account or the address is locked. Audited
    /// like `SignInRefused`: the first refusal since the last failure only.
    PasswordCheckRefused {
        user_id: &'a str,
        address: &'a str,
        audited: bool,
    },
    // Passkeys (issue 24). Never a credential, a challenge or a ceremony handle.
    /// A user registered a passkey on the account page.
    PasskeyRegistered {
        user_id: &'a str,
        name: &'a str,
        address: &'a str,
    },
    /// A user removed one of their passkeys on the account page.
    PasskeyRemoved {
        user_id: &'a str,
        name: &'a str,
        address: &'a str,
    },
    /// A passkey assertion verified: as the second factor, or passwordless.
    PasskeyUsed {
        user_id: &'a str,
        name: &'a str,
        passwordless: bool,
    },
    /// A passkey assertion or registration refused; `user_id` when it is known.
    PasskeyFailed {
        user_id: Option<&'a str>,
        /// Why, for the trail only: "wrong origin", "counter went back"...
        why: &'a str,
    },
    // TOTP and recovery codes (issue 24). No code or secret is ever part of an event.
    /// An authenticator app was set up and confirmed by a first code.
    TotpEnrolled {
        user_id: &'a str,
    },
    TotpRemoved {
        user_id: &'a str,
    },
    /// A TOTP code was refused: the first code of a set-up, or (recorded by sign-in) a code
    /// at sign-in.
    TotpFailed {
        user_id: &'a str,
        address: Option<&'a str>,
        /// Why, for the trail only.
        why: &'a str,
    },
    /// A new set of recovery codes replaced the user's earlier ones.
    RecoveryCodesGenerated {
        user_id: &'a str,
        count: usize,
    },
    /// A recovery code was spent.
    RecoveryCodeUsed {
        user_id: &'a str,
        remaining: i64,
    },
}

/// The metric label and audit detail of a proved factor.
pub(crate) fn factor_method(factor: Factor) -> &'static str {
    match factor {
        Factor::Totp => "totp",
        Factor::RecoveryCode => "recovery_code",
        Factor::Passkey { .. } => "passkey",
    }
}

/// Names the tenant and client on the request's span, so its log lines (the `response` line
/// included) carry them. The span declares both fields empty (`fieldauth::telemetry`).
pub(crate) fn log_context(tenant: &TenantId, client_id: &str) {
    let span = tracing::Span::current();
    span.record("tenant", tenant.as_str());
    span.record("client_id", client_id);
}
