//! What each event does: the counter it moves and the audit row it writes.

use store::{NewAuditEvent, SignedOut, TenantId, UnixTime};

use super::metrics::*;
use super::{factor_method, BackchannelResult, Event, RecoveryOutcome};
use crate::state::OAuthState;

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
            Event::RefreshRetried {
                client_id,
                grant_id,
                user_id,
            } => {
                metrics.refresh_retries.inc();
                detail = format!(
                    "grant {grant_id}: a consumed refresh token was presented again within \
                     the client's retry window; its unused successor is ended"
                );
                audit("refresh.retried", now, Some(user_id), client_id, None)
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
