//! One sign-in attempt's places in the throttle's counts: reserved, per account and per
//! client address, before the password is checked, and ended after. However many attempts
//! arrive at once, on however many nodes, no more than the places left reach Argon2.

use jose::UnixTime;
use store::{AttemptEnd, FailureSubject, TenantStore};

use super::throttle_message;
use crate::error::OAuthError;
use crate::throttle::{ThrottlePolicy, Verdict};

/// A reserved attempt: it holds a place in both counts until it is ended.
pub(super) struct Attempt<'a> {
    tenant: &'a TenantStore<'a>,
    policy: ThrottlePolicy,
    account: FailureSubject<'a>,
    address: FailureSubject<'a>,
    now: UnixTime,
}

/// An attempt refused without checking its password.
pub(super) struct Refused {
    pub message: String,
    /// The first refusal since the count's last failure: the one the audit trail keeps.
    /// Later ones are counted in the metrics only, so a locked caller cannot make the server
    /// write without bound.
    pub first: bool,
}

const BUSY: &str = "Too many sign-in attempts at once: try again in a moment.";

impl<'a> Attempt<'a> {
    /// Refused when a count is locked or waiting, or has no place left for one more attempt
    /// in flight.
    pub(super) async fn reserve(
        tenant: &'a TenantStore<'a>,
        policy: ThrottlePolicy,
        account: FailureSubject<'a>,
        address: FailureSubject<'a>,
        now: UnixTime,
    ) -> Result<Result<Attempt<'a>, Refused>, OAuthError> {
        let by_account = tenant.signin_failures(account).await?;
        let by_address = tenant.signin_failures(address).await?;
        let account_verdict = policy.account_verdict(by_account, now);
        let address_verdict = policy.address_verdict(by_address, now);
        if let Some(message) = throttle_message(account_verdict.and(address_verdict)) {
            let subject = match account_verdict {
                Verdict::Allowed => address,
                _ => account,
            };
            let first = tenant.count_signin_refusal(subject).await?;
            return Ok(Err(Refused { message, first }));
        }
        let window_start = now - policy.window();
        let places = policy.account_places(by_account, now);
        if tenant
            .reserve_signin_attempt(account, places, now, window_start)
            .await?
            .is_none()
        {
            return busy(tenant, account).await;
        }
        let places = policy.address_places(by_address, now);
        let reserved = tenant
            .reserve_signin_attempt(address, places, now, window_start)
            .await;
        if !matches!(reserved, Ok(Some(_))) {
            end(tenant, account, AttemptEnd::Released, now, window_start).await;
            reserved?;
            return busy(tenant, address).await;
        }
        Ok(Ok(Attempt {
            tenant,
            policy,
            account,
            address,
            now,
        }))
    }

    /// The password was wrong: both places become failures. Returns the verdict they lead
    /// to, `Locked` when this failure locked the account or the address.
    pub(super) async fn failed(self) -> Result<Verdict, OAuthError> {
        let window_start = self.now - self.policy.window();
        let by_account = self
            .tenant
            .record_signin_failure(self.account, self.now, window_start)
            .await?;
        let by_address = self
            .tenant
            .record_signin_failure(self.address, self.now, window_start)
            .await?;
        Ok(self
            .policy
            .account_verdict(Some(by_account), self.now)
            .and(self.policy.address_verdict(Some(by_address), self.now)))
    }

    /// The password (or second factor) was right: the account's failures are forgiven when
    /// `forgive` (the sign-in is complete), attempts still in flight keep their places; the
    /// address (perhaps shared by many users) only gets its place back. A right password
    /// that still owes a second factor forgives nothing, or the password would reset the
    /// count that wrong codes build.
    pub(super) async fn succeeded(self, forgive: bool) -> Result<(), OAuthError> {
        let window_start = self.now - self.policy.window();
        let (tenant, now) = (self.tenant, self.now);
        let account_end = match forgive {
            true => AttemptEnd::Succeeded,
            false => AttemptEnd::Released,
        };
        tenant
            .end_signin_attempt(self.account, account_end, now, window_start)
            .await?;
        tenant
            .end_signin_attempt(self.address, AttemptEnd::Released, now, window_start)
            .await?;
        Ok(())
    }

    /// The check itself failed (a storage or thread error): the places are given back.
    pub(super) async fn abandon(self) {
        let window_start = self.now - self.policy.window();
        for subject in [self.account, self.address] {
            end(
                self.tenant,
                subject,
                AttemptEnd::Released,
                self.now,
                window_start,
            )
            .await;
        }
    }
}

async fn busy<'a>(
    tenant: &TenantStore<'_>,
    subject: FailureSubject<'_>,
) -> Result<Result<Attempt<'a>, Refused>, OAuthError> {
    let first = tenant.count_signin_refusal(subject).await?;
    Ok(Err(Refused {
        message: BUSY.to_owned(),
        first,
    }))
}

/// Gives a place back on a path that is already failing: an error is logged, and the place
/// is freed anyway once the count leaves the window.
async fn end(
    tenant: &TenantStore<'_>,
    subject: FailureSubject<'_>,
    end: AttemptEnd,
    now: UnixTime,
    window_start: UnixTime,
) {
    if let Err(error) = tenant
        .end_signin_attempt(subject, end, now, window_start)
        .await
    {
        tracing::warn!(error = %crate::error_chain(&error), "sign-in place not given back");
    }
}
