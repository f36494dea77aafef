//! Back-Channel Logout 1.0 delivery: every node runs [`deliver_logout_tokens`], which claims
//! due rows of the outbox (`backchannel_logouts`, written with each session's end), signs a
//! logout token for each (§2.4) and POSTs it to the client's `backchannel_logout_uri` (§2.5),
//! off any request's path. A failure is retried with a doubling delay a bounded number of
//! times, then given up, audited and counted.

use std::sync::Arc;
use std::time::Duration;

use jose::{LogoutEvents, LogoutTokenClaims, UnixTime};
use store::{BackchannelLogout, ClientLogout};
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::error::OAuthError;
use crate::events::Event;
use crate::state::OAuthState;
use crate::stopping::unless_stopped;

/// §2.4 leaves the lifetime to the OP; two minutes covers the POST and clock skew.
pub const LOGOUT_TOKEN_LIFETIME: UnixTime = 120;

/// Seconds a claim holds a row: longer than one delivery can take, so no other node sends it
/// meanwhile, short enough that a row claimed by a node that died is soon sent by another.
const CLAIM_LEASE: UnixTime = 60;

/// Rows claimed at once per database.
const CLAIM_BATCH: i64 = 32;

/// How deliveries are paced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackchannelSettings {
    /// How often a node looks for due rows, besides being woken by a session its own
    /// requests ended (rows written by other nodes or the CLI are found this way).
    pub poll_interval: Duration,
    /// Seconds before the first retry of a failed delivery; each next retry waits twice as
    /// long.
    pub retry_after: UnixTime,
    /// Attempts in all before a logout token is given up.
    pub max_attempts: i64,
    /// How long one POST may take, connecting included.
    pub timeout: Duration,
}

impl Default for BackchannelSettings {
    fn default() -> BackchannelSettings {
        BackchannelSettings {
            poll_interval: Duration::from_secs(5),
            retry_after: 10,
            max_attempts: 5,
            timeout: Duration::from_secs(5),
        }
    }
}

/// What one attempt came to.
#[derive(Debug, PartialEq, Eq)]
enum Attempt {
    Delivered,
    /// Worth trying again: the receiver failed or could not be reached.
    Failed(String),
    /// Not worth trying again: the client is gone, disabled or has no URI any more.
    Pointless(&'static str),
}

/// Delivers logout tokens until `stopped` turns true: woken at once when a session of this
/// process ends, and every `poll_interval` for the rest.
pub async fn deliver_logout_tokens(
    state: OAuthState,
    settings: BackchannelSettings,
    mut stopped: watch::Receiver<bool>,
) {
    // §2.5: no redirect is followed; the receiver answers at the registered URI or fails.
    let http = match reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(settings.timeout)
        .build()
    {
        Ok(http) => http,
        Err(error) => {
            tracing::error!(%error, "back-channel logout disabled: no HTTP client");
            return;
        }
    };
    let wake = state.store.backchannel_queued();
    let settings = Arc::new(settings);
    loop {
        // A stop does not wait for slow receivers: what was claimed and not delivered is due
        // again when its lease ends, on whichever node looks next (at least once: a receiver
        // may see a token twice, and §2.6 has it check the `jti` for that).
        if unless_stopped(&mut stopped, deliver_due(&state, &http, &settings))
            .await
            .is_none()
        {
            return;
        }
        tokio::select! {
            _ = wake.notified() => {}
            _ = tokio::time::sleep(settings.poll_interval) => {}
            _ = stopped.changed() => return,
        }
    }
}

/// Claims what is due and delivers it, concurrently, until nothing is left due.
async fn deliver_due(
    state: &OAuthState,
    http: &reqwest::Client,
    settings: &Arc<BackchannelSettings>,
) {
    loop {
        let now = state.clock.now();
        let claimed = match state
            .store
            .claim_backchannel_logouts(now, now + CLAIM_LEASE, CLAIM_BATCH)
            .await
        {
            Ok(claimed) => claimed,
            Err(error) => {
                tracing::warn!(error = %crate::error_chain(&error), "back-channel logouts not claimed");
                return;
            }
        };
        if claimed.is_empty() {
            return;
        }
        let mut deliveries = JoinSet::new();
        for logout in claimed {
            let (state, http, settings) = (state.clone(), http.clone(), Arc::clone(settings));
            deliveries.spawn(async move { deliver(&state, &http, &settings, logout).await });
        }
        while deliveries.join_next().await.is_some() {}
    }
}

#[tracing::instrument(skip_all, fields(tenant = %logout.tenant_id, client_id = %logout.client_id, attempt = logout.attempts))]
async fn deliver(
    state: &OAuthState,
    http: &reqwest::Client,
    settings: &BackchannelSettings,
    logout: BackchannelLogout,
) {
    let records = state.store.tenant(&logout.tenant_id);
    let attempt = match records.find_client_logout(&logout.client_id).await {
        Ok(Some(ClientLogout {
            backchannel_logout_uri: Some(uri),
            ..
        })) => send(state, http, &logout, &uri).await,
        Ok(_) => {
            Attempt::Pointless("the client is gone, disabled, or has no back-channel logout URI")
        }
        // The claim's lease runs out and the row is tried again.
        Err(error) => {
            tracing::warn!(error = %crate::error_chain(&error), "back-channel logout client not read");
            return;
        }
    };
    let now = state.clock.now();
    let (user_id, client_id) = (logout.user_id.as_str(), logout.client_id.as_str());
    let done = match &attempt {
        Attempt::Failed(why) if logout.attempts < settings.max_attempts => {
            let wait = retry_delay(settings.retry_after, logout.attempts);
            tracing::info!(%why, wait, "back-channel logout failed; will retry");
            state.record_backchannel_retry();
            records
                .retry_backchannel_logout(&logout.delivery_id, now + wait)
                .await
        }
        Attempt::Delivered => {
            tracing::info!("back-channel logout delivered");
            let event = Event::BackchannelLogoutDelivered { user_id, client_id };
            state.record(&logout.tenant_id, event, now).await;
            records.delete_backchannel_logout(&logout.delivery_id).await
        }
        Attempt::Failed(why) => {
            tracing::warn!(%why, "back-channel logout given up");
            let why = format!("{why}; given up after {} attempt(s)", logout.attempts);
            let event = Event::BackchannelLogoutFailed {
                user_id,
                client_id,
                why: &why,
            };
            state.record(&logout.tenant_id, event, now).await;
            records.delete_backchannel_logout(&logout.delivery_id).await
        }
        Attempt::Pointless(why) => {
            tracing::info!(%why, "back-channel logout dropped");
            let event = Event::BackchannelLogoutFailed {
                user_id,
                client_id,
                why,
            };
            state.record(&logout.tenant_id, event, now).await;
            records.delete_backchannel_logout(&logout.delivery_id).await
        }
    };
    if let Err(error) = done {
        tracing::warn!(error = %crate::error_chain(&error), "back-channel logout outcome not stored");
    }
}

/// The wait before attempt `attempts + 1`: `retry_after`, doubled for each attempt after the
/// first, bounded at a day.
fn retry_delay(retry_after: UnixTime, attempts: i64) -> UnixTime {
    let doublings = u32::try_from(attempts.saturating_sub(1).clamp(0, 16)).unwrap_or(16);
    retry_after.saturating_mul(1_i64 << doublings).min(86_400)
}

/// Signs the logout token and POSTs it (§2.5: `application/x-www-form-urlencoded`,
/// `logout_token=…`); 200 is success, and 204 too (§2.8 notes frameworks send it for 200).
async fn send(
    state: &OAuthState,
    http: &reqwest::Client,
    logout: &BackchannelLogout,
    uri: &str,
) -> Attempt {
    let token = match sign(state, logout).await {
        Ok(token) => token,
        Err(error) => {
            return Attempt::Failed(format!("not signed: {}", crate::error_chain(&error)));
        }
    };
    let response = http
        .post(uri)
        .header(reqwest::header::CACHE_CONTROL, "no-store")
        .form(&[("logout_token", token.as_str())])
        .send()
        .await;
    match response {
        Ok(response) if matches!(response.status().as_u16(), 200 | 204) => Attempt::Delivered,
        Ok(response) => Attempt::Failed(format!(
            "the receiver answered HTTP {}",
            response.status().as_u16()
        )),
        Err(error) if error.is_timeout() => {
            Attempt::Failed("the receiver did not answer in time".to_owned())
        }
        Err(_) => Attempt::Failed("the receiver could not be reached".to_owned()),
    }
}

/// §2.4: `iss`, `aud` (the client), `iat`, `exp`, `jti`, `sub`, `sid` and the back-channel
/// logout event; never a `nonce` (§2.4 forbids it, so a logout token is never taken for an ID
/// token), and `typ: logout+jwt` (§2.4, RFC 8725 §3.11). Signed with the current key on a
/// blocking thread, one per core at a time, as token responses are.
async fn sign(state: &OAuthState, logout: &BackchannelLogout) -> Result<String, OAuthError> {
    let now = state.clock.now();
    let claims = LogoutTokenClaims {
        iss: state.config.issuer.as_str().to_owned(),
        aud: logout.client_id.clone(),
        iat: now,
        exp: now + LOGOUT_TOKEN_LIFETIME,
        jti: state.random.token()?,
        sub: logout.user_id.clone(),
        sid: logout.sid.clone(),
        events: LogoutEvents::default(),
    };
    state.sign_jwt("logout+jwt", claims).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_wait_twice_as_long_each_time_up_to_a_day() {
        assert_eq!(retry_delay(10, 1), 10);
        assert_eq!(retry_delay(10, 2), 20);
        assert_eq!(retry_delay(10, 4), 80);
        assert_eq!(retry_delay(10, 40), 86_400);
        assert_eq!(retry_delay(0, 3), 0);
    }
}
