//! What the authorization server counts (Prometheus) and what it writes to the tenant's audit
//! trail. Handlers say what happened with [`OAuthState::record`]; this file decides which
//! counter moves and which row is written. Labels are bounded sets (no tenant, client or user),
//! so a scrape stays small whatever the number of tenants.

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use store::{NewAuditEvent, SignedOut, TenantId, UnixTime};

use crate::error::OAuthError;
use crate::mfa::Factor;
use crate::state::OAuthState;

/// The counters; clones share them.
#[derive(Clone, Debug, Default)]
pub struct Metrics {
    grants: Family<GrantLabels, Counter>,
    revoked: Family<RevokedLabels, Counter>,
    signins: Family<SignInLabels, Counter>,
    second_factor_checks: Family<SecondFactorLabels, Counter>,
    locks: Counter,
    consents: Family<ConsentLabels, Counter>,
    logouts: Counter,
    backchannel: Family<BackchannelLabels, Counter>,
    recovery_requests: Family<RecoveryLabels, Counter>,
    recovery_mails: Family<RecoveryLabels, Counter>,
    account: Family<AccountLabels, Counter>,
    // Passkeys (issue 24).
    passkeys: Family<PasskeyLabels, Counter>,
    // TOTP and recovery codes (issue 24).
    mfa: Family<MfaLabels, Counter>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GrantLabels {
    grant_type: &'static str,
    result: &'static str,
    /// The RFC 6749 error code of a refusal; empty when issued.
    error: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RevokedLabels {
    reason: RevokeReason,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SignInLabels {
    result: &'static str,
}

/// A second factor at sign-in: `method` totp, recovery_code, passkey; `result` succeeded,
/// failed, refused (throttled).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SecondFactorLabels {
    method: &'static str,
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ConsentLabels {
    decision: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BackchannelLabels {
    result: BackchannelResult,
}

/// What one back-channel logout attempt came to.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)] // the label values, as Prometheus shows them
pub enum BackchannelResult {
    delivered,
    /// Failed, and will be tried again.
    retried,
    /// Given up: the last attempt failed, or the client can no longer be told.
    failed,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RecoveryLabels {
    result: &'static str,
}

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

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AccountLabels {
    action: &'static str,
}

// Passkeys (issue 24).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PasskeyLabels {
    /// registered, removed, used, failed.
    event: &'static str,
}

// TOTP and recovery codes (issue 24).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MfaLabels {
    /// `totp` or `recovery_code`.
    factor: &'static str,
    /// `enrolled`, `removed`, `failed`, `generated`, `used`.
    result: &'static str,
}

fn mfa(factor: &'static str, result: &'static str) -> MfaLabels {
    MfaLabels { factor, result }
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

impl Metrics {
    /// Adds the counters to the process's registry (`/metrics`).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "fieldauth_token_grants",
            "Token endpoint requests by grant type, issued or refused (with the error code)",
            self.grants.clone(),
        );
        registry.register(
            "fieldauth_grants_revoked",
            "Grants (token families) revoked before they expired, by reason",
            self.revoked.clone(),
        );
        registry.register(
            "fieldauth_signins",
            "Sign-in attempts: succeeded, failed (wrong username or password), refused (locked)",
            self.signins.clone(),
        );
        registry.register(
            "fieldauth_signin_locks",
            "Failed sign-ins that locked an account or a client address",
            self.locks.clone(),
        );
        registry.register(
            "fieldauth_consents",
            "Consent decisions",
            self.consents.clone(),
        );
        registry.register(
            "fieldauth_account_actions",
            "Account page actions: access_removed, signed_out_everywhere, password_changed, \
             password_check_failed (wrong current password), password_check_refused (throttled)",
            self.account.clone(),
        );
        registry.register(
            "fieldauth_recovery_requests",
            "Password-recovery requests by outcome (the person is told the same in every case)",
            self.recovery_requests.clone(),
        );
        registry.register(
            "fieldauth_recovery_mails",
            "Password-recovery mails handed to the SMTP server (sent) or not (failed)",
            self.recovery_mails.clone(),
        );
        registry.register(
            "fieldauth_second_factor_checks",
            "Second factors checked at sign-in, by method (totp, recovery_code, passkey) and \
             result (succeeded, failed, refused: throttled)",
            self.second_factor_checks.clone(),
        );
        registry.register(
            "fieldauth_logouts",
            "Browser sessions ended at the end-session endpoint (RP-Initiated Logout)",
            self.logouts.clone(),
        );
        registry.register(
            "fieldauth_backchannel_logouts",
            "Back-channel logout token deliveries: delivered, retried, failed (given up)",
            self.backchannel.clone(),
        );
        // Passkeys (issue 24).
        registry.register(
            "fieldauth_passkeys",
            "Passkey events: registered, removed, used (an assertion verified), failed (refused)",
            self.passkeys.clone(),
        );
        // TOTP and recovery codes (issue 24).
        registry.register(
            "fieldauth_mfa",
            "Second-factor events by factor (totp, recovery_code) and result (enrolled, \
             removed, failed, generated, used)",
            self.mfa.clone(),
        );
    }

    fn backchannel_result(&self, result: BackchannelResult) {
        self.backchannel
            .get_or_create(&BackchannelLabels { result })
            .inc();
    }

    /// One token request's outcome. `grant_type` is what the client sent, folded to a
    /// bounded set.
    pub(crate) fn token_request(&self, grant_type: Option<&str>, outcome: Result<(), &OAuthError>) {
        let grant_type = match grant_type {
            Some("authorization_code") => "authorization_code",
            Some("refresh_token") => "refresh_token",
            _ => "other",
        };
        let (result, error) = match outcome {
            Ok(()) => ("issued", ""),
            Err(error) => ("refused", error.code()),
        };
        self.grants
            .get_or_create(&GrantLabels {
                grant_type,
                result,
                error,
            })
            .inc();
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

impl OAuthState {
    /// Counts a back-channel logout attempt that is neither delivered nor given up (those
    /// are events with an audit row).
    pub(crate) fn record_backchannel_retry(&self) {
        self.metrics()
            .backchannel_result(BackchannelResult::retried);
    }

    /// Counts the event and writes it to the tenant's audit trail. The request it belongs to
    /// has done its work already, so a failed write is logged, not returned.
    pub(crate) async fn record(&self, tenant: &TenantId, event: Event<'_>, now: UnixTime) {
        let metrics = self.metrics();
        let audited = !matches!(
            event,
            Event::SignInRefused { audited: false, .. }
                | Event::RecoveryRequested {
                    outcome: RecoveryOutcome::Throttled { audited: false },
                    ..
                }
                | Event::PasswordCheckRefused { audited: false, .. }
        );
        let mut detail = String::new();
        let row = match event {
            Event::SignedIn {
                user_id,
                client_id,
                address,
            } => {
                metrics.signins.get_or_create(&signin("succeeded")).inc();
                NewAuditEvent {
                    client_id,
                    ..audit("signin.succeeded", now, Some(user_id), "", Some(address))
                }
            }
            Event::SignInFailed {
                username,
                client_id,
                address,
                why,
                locked,
            } => {
                metrics.signins.get_or_create(&signin("failed")).inc();
                detail.push_str(why);
                if locked {
                    metrics.locks.inc();
                    detail.push_str("; now locked");
                }
                NewAuditEvent {
                    client_id,
                    ..audit("signin.failed", now, Some(username), "", Some(address))
                }
            }
            Event::SignInRefused {
                username,
                client_id,
                address,
                audited: _,
            } => {
                metrics.signins.get_or_create(&signin("refused")).inc();
                detail.push_str("locked: the password was not checked");
                NewAuditEvent {
                    client_id,
                    ..audit("signin.refused", now, Some(username), "", Some(address))
                }
            }
            Event::SecondFactorProved {
                user_id,
                client_id,
                address,
                factor,
            } => {
                let labels = SecondFactorLabels {
                    method: factor_method(factor),
                    result: "succeeded",
                };
                metrics.second_factor_checks.get_or_create(&labels).inc();
                detail.push_str(factor_method(factor));
                NewAuditEvent {
                    client_id,
                    ..audit(
                        "signin.second_factor",
                        now,
                        Some(user_id),
                        "",
                        Some(address),
                    )
                }
            }
            Event::SecondFactorFailed {
                user_id,
                client_id,
                address,
                method,
                locked,
            } => {
                let labels = SecondFactorLabels {
                    method,
                    result: "failed",
                };
                metrics.second_factor_checks.get_or_create(&labels).inc();
                detail.push_str(method);
                if locked {
                    metrics.locks.inc();
                    detail.push_str("; now locked");
                }
                NewAuditEvent {
                    client_id,
                    ..audit(
                        "signin.second_factor_failed",
                        now,
                        Some(user_id),
                        "",
                        Some(address),
                    )
                }
            }
            Event::ConsentGiven {
                user_id,
                client_id,
                organization,
                scope,
            } => {
                metrics.consents.get_or_create(&consent("given")).inc();
                detail = format!("organization {organization}; scope {scope}");
                audit("consent.given", now, Some(user_id), client_id, None)
            }
            Event::ConsentDenied { user_id, client_id } => {
                metrics.consents.get_or_create(&consent("denied")).inc();
                audit("consent.denied", now, Some(user_id), client_id, None)
            }
            Event::GrantRevoked {
                client_id,
                grant_id,
                reason,
            } => {
                metrics
                    .revoked
                    .get_or_create(&RevokedLabels { reason })
                    .inc();
                detail = format!("grant {grant_id}: {}", reason.detail());
                audit("grant.revoked", now, None, client_id, None)
            }
            Event::SignedOut { user_id, client_id } => {
                metrics.logouts.inc();
                NewAuditEvent {
                    client_id,
                    ..audit("logout.succeeded", now, Some(user_id), "", None)
                }
            }
            Event::BackchannelLogoutDelivered { user_id, client_id } => {
                metrics.backchannel_result(BackchannelResult::delivered);
                audit(
                    "logout.backchannel_delivered",
                    now,
                    Some(user_id),
                    client_id,
                    None,
                )
            }
            Event::BackchannelLogoutFailed {
                user_id,
                client_id,
                why,
            } => {
                metrics.backchannel_result(BackchannelResult::failed);
                detail.push_str(why);
                audit(
                    "logout.backchannel_failed",
                    now,
                    Some(user_id),
                    client_id,
                    None,
                )
            }
            Event::PasswordSet {
                user_id,
                address,
                signed_out,
            } => {
                detail = format!("password set from a password link; {}", ended(signed_out));
                account_event("account.password_set", now, user_id, address)
            }
            Event::PasswordReset {
                user_id,
                address,
                signed_out,
            } => {
                detail = format!("password reset from a recovery link; {}", ended(signed_out));
                account_event("account.password_reset", now, user_id, address)
            }
            Event::RecoveryRequested {
                subject,
                address,
                outcome,
            } => {
                let result = RecoveryLabels {
                    result: outcome.label(),
                };
                metrics.recovery_requests.get_or_create(&result).inc();
                if let Some(result) = outcome.mail_result() {
                    metrics
                        .recovery_mails
                        .get_or_create(&RecoveryLabels { result })
                        .inc();
                }
                detail.push_str(outcome.detail());
                account_event("account.recovery_requested", now, subject, address)
            }
            Event::AccessRemoved {
                user_id,
                client_id,
                grant_id,
                address,
            } => {
                metrics
                    .account
                    .get_or_create(&account("access_removed"))
                    .inc();
                detail = format!("grant {grant_id}");
                audit(
                    "account.access_removed",
                    now,
                    Some(user_id),
                    client_id,
                    Some(address),
                )
            }
            Event::SignedOutEverywhere {
                user_id,
                address,
                sessions,
                grants,
            } => {
                metrics
                    .account
                    .get_or_create(&account("signed_out_everywhere"))
                    .inc();
                detail = format!("{sessions} session(s) ended, {grants} grant(s) revoked");
                account_event("account.signed_out_everywhere", now, user_id, address)
            }
            Event::PasswordChanged {
                user_id,
                address,
                sessions,
                grants,
            } => {
                metrics
                    .account
                    .get_or_create(&account("password_changed"))
                    .inc();
                detail = format!("{sessions} other session(s) ended, {grants} grant(s) revoked");
                account_event("account.password_changed", now, user_id, address)
            }
            Event::PasswordCheckFailed {
                user_id,
                address,
                why,
                locked,
            } => {
                metrics
                    .account
                    .get_or_create(&account("password_check_failed"))
                    .inc();
                detail.push_str(why);
                if locked {
                    metrics.locks.inc();
                    detail.push_str("; now locked");
                }
                account_event("account.password_check_failed", now, user_id, address)
            }
            Event::PasswordCheckRefused {
                user_id,
                address,
                audited: _,
            } => {
                metrics
                    .account
                    .get_or_create(&account("password_check_refused"))
                    .inc();
                detail.push_str("locked: the password was not checked");
                account_event("account.password_check_refused", now, user_id, address)
            }
            // Passkeys (issue 24).
            Event::PasskeyRegistered {
                user_id,
                name,
                address,
            } => {
                metrics.passkeys.get_or_create(&passkey("registered")).inc();
                detail = format!("passkey {name:?}");
                account_event("mfa.passkey.registered", now, user_id, address)
            }
            Event::PasskeyRemoved {
                user_id,
                name,
                address,
            } => {
                metrics.passkeys.get_or_create(&passkey("removed")).inc();
                detail = format!("passkey {name:?}");
                account_event("mfa.passkey.removed", now, user_id, address)
            }
            Event::PasskeyUsed {
                user_id,
                name,
                passwordless,
            } => {
                metrics.passkeys.get_or_create(&passkey("used")).inc();
                let how = match passwordless {
                    true => "passwordless sign-in",
                    false => "second factor",
                };
                detail = format!("passkey {name:?}; {how}");
                NewAuditEvent {
                    client_id: None,
                    ..audit("mfa.passkey.used", now, Some(user_id), "", None)
                }
            }
            Event::PasskeyFailed { user_id, why } => {
                metrics.passkeys.get_or_create(&passkey("failed")).inc();
                detail.push_str(why);
                NewAuditEvent {
                    client_id: None,
                    ..audit("mfa.passkey.failed", now, user_id, "", None)
                }
            }
            // TOTP and recovery codes (issue 24).
            Event::TotpEnrolled { user_id } => {
                metrics.mfa.get_or_create(&mfa("totp", "enrolled")).inc();
                detail.push_str("authenticator app set up");
                factor_event("mfa.totp.enrolled", now, user_id, None)
            }
            Event::TotpRemoved { user_id } => {
                metrics.mfa.get_or_create(&mfa("totp", "removed")).inc();
                detail.push_str("authenticator app removed");
                factor_event("mfa.totp.removed", now, user_id, None)
            }
            Event::TotpFailed {
                user_id,
                address,
                why,
            } => {
                metrics.mfa.get_or_create(&mfa("totp", "failed")).inc();
                detail.push_str(why);
                factor_event("mfa.totp.failed", now, user_id, address)
            }
            Event::RecoveryCodesGenerated { user_id, count } => {
                let labels = mfa("recovery_code", "generated");
                metrics.mfa.get_or_create(&labels).inc();
                detail = format!("{count} new recovery codes; the earlier ones no longer work");
                factor_event("mfa.recovery_codes.generated", now, user_id, None)
            }
            Event::RecoveryCodeUsed { user_id, remaining } => {
                metrics
                    .mfa
                    .get_or_create(&mfa("recovery_code", "used"))
                    .inc();
                detail = format!("{remaining} recovery code(s) left");
                factor_event("mfa.recovery_code.used", now, user_id, None)
            }
        };
        if !audited {
            return;
        }
        let row = NewAuditEvent {
            detail: &detail,
            ..row
        };
        if let Err(error) = self.store.tenant(tenant).record_audit_event(&row).await {
            tracing::warn!(error = %crate::error_chain(&error), kind = row.kind, "audit event not written");
        }
    }
}

fn audit<'a>(
    kind: &'a str,
    occurred_at: UnixTime,
    subject: Option<&'a str>,
    client_id: &'a str,
    address: Option<&'a str>,
) -> NewAuditEvent<'a> {
    NewAuditEvent {
        kind,
        occurred_at,
        subject,
        client_id: Some(client_id),
        address,
        detail: "",
    }
}

/// An event of a user's own account: no client is involved.
fn account_event<'a>(
    kind: &'a str,
    occurred_at: UnixTime,
    subject: &'a str,
    address: &'a str,
) -> NewAuditEvent<'a> {
    NewAuditEvent {
        client_id: None,
        ..audit(kind, occurred_at, Some(subject), "", Some(address))
    }
}

/// An event of a user's second factor (issue 24): no client, the address when known.
fn factor_event<'a>(
    kind: &'a str,
    occurred_at: UnixTime,
    subject: &'a str,
    address: Option<&'a str>,
) -> NewAuditEvent<'a> {
    NewAuditEvent {
        client_id: None,
        ..audit(kind, occurred_at, Some(subject), "", address)
    }
}

/// What a password change ended, for the trail.
fn ended(signed_out: SignedOut) -> String {
    format!(
        "{} browser session(s) ended, {} grant(s) revoked",
        signed_out.sessions, signed_out.grants
    )
}

fn account(action: &'static str) -> AccountLabels {
    AccountLabels { action }
}

/// The metric label and audit detail of a proved factor.
pub(crate) fn factor_method(factor: Factor) -> &'static str {
    match factor {
        Factor::Totp => "totp",
        Factor::RecoveryCode => "recovery_code",
        Factor::Passkey { .. } => "passkey",
    }
}

// Passkeys (issue 24).
fn passkey(event: &'static str) -> PasskeyLabels {
    PasskeyLabels { event }
}

fn signin(result: &'static str) -> SignInLabels {
    SignInLabels { result }
}

fn consent(decision: &'static str) -> ConsentLabels {
    ConsentLabels { decision }
}

/// Names the tenant and client on the request's span, so its log lines (the `response` line
/// included) carry them. The span declares both fields empty (`fieldauth::telemetry`).
pub(crate) fn log_context(tenant: &TenantId, client_id: &str) {
    let span = tracing::Span::current();
    span.record("tenant", tenant.as_str());
    span.record("client_id", client_id);
}
