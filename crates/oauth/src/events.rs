//! What the authorization server counts (Prometheus) and what it writes to the tenant's audit
//! trail. Handlers say what happened with [`OAuthState::record`]; this file decides which
//! counter moves and which row is written. Labels are bounded sets (no tenant, client or user),
//! so a scrape stays small whatever the number of tenants.

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use store::{NewAuditEvent, TenantId, UnixTime};

use crate::error::OAuthError;
use crate::state::OAuthState;

/// The counters; clones share them.
#[derive(Clone, Debug, Default)]
pub struct Metrics {
    grants: Family<GrantLabels, Counter>,
    revoked: Family<RevokedLabels, Counter>,
    signins: Family<SignInLabels, Counter>,
    locks: Counter,
    consents: Family<ConsentLabels, Counter>,
    account: Family<AccountLabels, Counter>,
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

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ConsentLabels {
    decision: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AccountLabels {
    action: &'static str,
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
    /// A user set their password from a password link (the link is spent).
    PasswordSet { user_id: &'a str, address: &'a str },
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
}

impl OAuthState {
    /// Counts the event and writes it to the tenant's audit trail. The request it belongs to
    /// has done its work already, so a failed write is logged, not returned.
    pub(crate) async fn record(&self, tenant: &TenantId, event: Event<'_>, now: UnixTime) {
        let metrics = self.metrics();
        let audited = !matches!(
            event,
            Event::SignInRefused { audited: false, .. }
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
            Event::PasswordSet { user_id, address } => {
                detail.push_str("password set from a password link");
                NewAuditEvent {
                    client_id: None,
                    ..audit(
                        "account.password_set",
                        now,
                        Some(user_id),
                        "",
                        Some(address),
                    )
                }
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
                account_audit("account.signed_out_everywhere", now, user_id, address)
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
                account_audit("account.password_changed", now, user_id, address)
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
                account_audit("account.password_check_failed", now, user_id, address)
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
                account_audit("account.password_check_refused", now, user_id, address)
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

/// A row of the account page: the user acted on their own account, through no client.
fn account_audit<'a>(
    kind: &'a str,
    occurred_at: UnixTime,
    user_id: &'a str,
    address: &'a str,
) -> NewAuditEvent<'a> {
    NewAuditEvent {
        client_id: None,
        ..audit(kind, occurred_at, Some(user_id), "", Some(address))
    }
}

fn account(action: &'static str) -> AccountLabels {
    AccountLabels { action }
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
