//! The counters the authorization server exposes on `/metrics` (Prometheus). Labels are
//! bounded sets (no tenant, client or user), so a scrape stays small whatever the number of
//! tenants. `record.rs` decides which counter an event moves.

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

use super::RevokeReason;
use crate::error::OAuthError;

/// The counters; clones share them.
#[derive(Clone, Debug, Default)]
pub struct Metrics {
    pub(super) grants: Family<GrantLabels, Counter>,
    pub(super) revoked: Family<RevokedLabels, Counter>,
    pub(super) refresh_retries: Counter,
    pub(super) signins: Family<SignInLabels, Counter>,
    pub(super) second_factor_checks: Family<SecondFactorLabels, Counter>,
    pub(super) locks: Counter,
    pub(super) consents: Family<ConsentLabels, Counter>,
    pub(super) logouts: Counter,
    pub(super) backchannel: Family<BackchannelLabels, Counter>,
    pub(super) recovery_requests: Family<RecoveryLabels, Counter>,
    pub(super) recovery_mails: Family<RecoveryLabels, Counter>,
    pub(super) account: Family<AccountLabels, Counter>,
    // Passkeys (issue 24).
    pub(super) passkeys: Family<PasskeyLabels, Counter>,
    // TOTP and recovery codes (issue 24).
    pub(super) mfa: Family<MfaLabels, Counter>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct GrantLabels {
    pub(super) grant_type: &'static str,
    pub(super) result: &'static str,
    /// The RFC 6749 error code of a refusal; empty when issued.
    pub(super) error: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct RevokedLabels {
    pub(super) reason: RevokeReason,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct SignInLabels {
    pub(super) result: &'static str,
}

/// A second factor at sign-in: `method` totp, recovery_code, passkey; `result` succeeded,
/// failed, refused (throttled).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct SecondFactorLabels {
    pub(super) method: &'static str,
    pub(super) result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct ConsentLabels {
    pub(super) decision: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct BackchannelLabels {
    pub(super) result: BackchannelResult,
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
pub(super) struct RecoveryLabels {
    pub(super) result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct AccountLabels {
    pub(super) action: &'static str,
}

// Passkeys (issue 24).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct PasskeyLabels {
    /// registered, removed, used, failed.
    pub(super) event: &'static str,
}

// TOTP and recovery codes (issue 24).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct MfaLabels {
    /// `totp` or `recovery_code`.
    pub(super) factor: &'static str,
    /// `enrolled`, `removed`, `failed`, `generated`, `used`.
    pub(super) result: &'static str,
}

pub(super) fn mfa(factor: &'static str, result: &'static str) -> MfaLabels {
    MfaLabels { factor, result }
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
            "fieldauth_refresh_retries",
            "Consumed refresh tokens presented again within their client's retry window and \
             answered (their unused successor ended)",
            self.refresh_retries.clone(),
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

    pub(super) fn backchannel_result(&self, result: BackchannelResult) {
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

pub(super) fn account(action: &'static str) -> AccountLabels {
    AccountLabels { action }
}

// Passkeys (issue 24).
pub(super) fn passkey(event: &'static str) -> PasskeyLabels {
    PasskeyLabels { event }
}

pub(super) fn signin(result: &'static str) -> SignInLabels {
    SignInLabels { result }
}

pub(super) fn consent(decision: &'static str) -> ConsentLabels {
    ConsentLabels { decision }
}
