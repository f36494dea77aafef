//! Passkeys (WebAuthn Level 2, through webauthn-rs): registration from the account page
//! (`registration.rs`), and authentication, either as the second factor after a password or
//! passwordless with a discoverable credential. The relying party is the issuer: its host is
//! the RP ID and its origin the only origin accepted, so a passkey works for every tenant of
//! this server and for no other site.
//!
//! Each ceremony's server state (its challenge included) waits in the database under the
//! SHA-256 of a random handle that only the browser holds, taken at most once and for five
//! minutes at most, so any node finishes what another began and no challenge is answered
//! twice.

use jose::UnixTime;
use serde_json::Value;
use store::{CeremonyKind, NewCeremony, StoredPasskey, TenantId, TenantStore};
use url::Url;
use webauthn_rs::prelude::{
    DiscoverableAuthentication, DiscoverableKey, Passkey, PasskeyAuthentication,
    PublicKeyCredential, Uuid, WebauthnError,
};
use webauthn_rs::{Webauthn, WebauthnBuilder};

use crate::error::OAuthError;
use crate::events::Event;
use crate::mfa::Factor;
use crate::secret::hash_secret;
use crate::state::OAuthState;

mod registration;

pub(crate) use registration::{
    finish_registration, start_registration, NewPasskeyForm, Registration,
};

/// How long a ceremony may take, from its options to the browser's answer: as long as the
/// authenticator's own timeout, which webauthn-rs sets to five minutes.
pub(crate) const CEREMONY_LIFETIME: UnixTime = 300;

/// What the browser needs to run a ceremony: the handle it sends back with its answer, and
/// the options for `navigator.credentials` (`{ "publicKey": … }`, binary fields base64url).
#[derive(Clone, Debug)]
pub(crate) struct Challenge {
    pub ceremony: String,
    pub options: Value,
}

/// An assertion that verified: whose passkey it was, and what it proves (RFC 8176: `hwk`
/// when the key cannot leave its authenticator, `swk` for a synced one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Verified {
    pub user_id: String,
    pub factor: Factor,
}

/// The relying party: RP ID the issuer's host, origin the issuer's origin. Built per
/// ceremony, which costs a few allocations, so the issuer stays the only configuration.
pub(crate) fn relying_party(state: &OAuthState) -> Result<Webauthn, OAuthError> {
    let issuer = Url::parse(state.config.issuer.as_str())
        .map_err(|_| OAuthError::InvalidIssuer("not an absolute URL"))?;
    // WebAuthn §5.1.4.1: an RP ID is a domain; browsers refuse an IP address.
    let Some(host) = issuer.domain() else {
        return Err(OAuthError::Passkey(
            "the issuer's host is an IP address, which cannot be a WebAuthn RP ID",
        ));
    };
    let origin = Url::parse(&issuer.origin().ascii_serialization())
        .map_err(|_| OAuthError::InvalidIssuer("no origin"))?;
    WebauthnBuilder::new(host, &origin)
        .and_then(|builder| builder.rp_name("fieldauth").build())
        .map_err(|_| OAuthError::Passkey("the issuer is not a valid WebAuthn relying party"))
}

/// Keeps a ceremony's state and returns the handle that finds it again.
pub(crate) async fn keep_ceremony(
    state: &OAuthState,
    records: &TenantStore<'_>,
    kind: CeremonyKind,
    user_id: Option<&str>,
    ceremony_state: &impl serde::Serialize,
    now: UnixTime,
) -> Result<String, OAuthError> {
    let serialized = serde_json::to_string(ceremony_state)
        .map_err(|_| OAuthError::Passkey("ceremony state not serializable"))?;
    let handle = state.random.token()?;
    let new = NewCeremony {
        ceremony_hash: &hash_secret(&handle),
        kind,
        user_id,
        state: &serialized,
        expires_at: now + CEREMONY_LIFETIME,
    };
    records.create_webauthn_ceremony(&new).await?;
    Ok(handle)
}

/// Options as JSON for the script.
pub(crate) fn options_json(options: &impl serde::Serialize) -> Result<Value, OAuthError> {
    serde_json::to_value(options).map_err(|_| OAuthError::Passkey("options not serializable"))
}

/// A stored passkey's credential, as the library reads it.
pub(crate) fn parse_passkey(stored: &StoredPasskey) -> Result<Passkey, OAuthError> {
    serde_json::from_str(&stored.credential)
        .map_err(|_| OAuthError::Passkey("a stored passkey cannot be read"))
}

/// Starts an authentication. `user_id` `None`: any discoverable passkey, whose user the
/// authenticator names (passwordless sign-in). `Some`: one of that user's passkeys (the
/// second factor); a user without any gets an error page. Both require user verification.
pub(crate) async fn start_authentication(
    state: &OAuthState,
    tenant: &TenantId,
    user_id: Option<&str>,
    now: UnixTime,
) -> Result<Challenge, OAuthError> {
    let rp = relying_party(state)?;
    let records = state.store.tenant(tenant);
    let Some(user_id) = user_id else {
        let (options, ceremony_state) = rp
            .start_discoverable_authentication()
            .map_err(|_| OAuthError::Passkey("a discoverable authentication did not start"))?;
        let mut options = options_json(&options)?;
        // The library asks for conditional mediation (passkeys offered in the username
        // field's autofill); our button asks outright, so the browser shows its own dialog.
        if let Some(object) = options.as_object_mut() {
            object.remove("mediation");
        }
        let ceremony = keep_ceremony(
            state,
            &records,
            CeremonyKind::Discover,
            None,
            &ceremony_state,
            now,
        )
        .await?;
        return Ok(Challenge { ceremony, options });
    };
    let passkeys = records
        .list_passkeys(user_id)
        .await?
        .iter()
        .map(parse_passkey)
        .collect::<Result<Vec<_>, _>>()?;
    if passkeys.is_empty() {
        return Err(OAuthError::InvalidFlow(
            "Your account has no passkey. Use another way to sign in.",
        ));
    }
    let (options, ceremony_state) = rp
        .start_passkey_authentication(&passkeys)
        .map_err(|_| OAuthError::Passkey("an authentication did not start"))?;
    let ceremony = keep_ceremony(
        state,
        &records,
        CeremonyKind::Authenticate,
        Some(user_id),
        &ceremony_state,
        now,
    )
    .await?;
    Ok(Challenge {
        ceremony,
        options: options_json(&options)?,
    })
}

/// Finishes an authentication: the passkey's user and what it proves, or `None` for any
/// assertion that does not verify (unknown, used or expired ceremony; wrong challenge,
/// origin or signature; unknown credential; a user handle that is not the credential's
/// owner; a signature counter that went back; a user other than `expected_user`). Every
/// refusal is audited with why; the caller shows one and the same message for all.
/// `expected_user` `None` is passwordless sign-in, which only a discoverable ceremony
/// serves. The passkey's counter and last use are updated.
pub(crate) async fn finish_authentication(
    state: &OAuthState,
    tenant: &TenantId,
    ceremony: &str,
    credential_json: &str,
    expected_user: Option<&str>,
    now: UnixTime,
) -> Result<Option<Verified>, OAuthError> {
    let records = state.store.tenant(tenant);
    match verify_assertion(
        state,
        &records,
        ceremony,
        credential_json,
        expected_user,
        now,
    )
    .await?
    {
        Ok(used) => {
            let event = Event::PasskeyUsed {
                user_id: &used.verified.user_id,
                name: &used.name,
                passwordless: expected_user.is_none(),
            };
            state.record(tenant, event, now).await;
            Ok(Some(used.verified))
        }
        Err(refused) => {
            tracing::warn!(tenant = %tenant, why = refused.why, "passkey assertion refused");
            let event = Event::PasskeyFailed {
                user_id: refused.user_id.as_deref(),
                why: refused.why,
            };
            state.record(tenant, event, now).await;
            Ok(None)
        }
    }
}

/// A verified assertion and the passkey's name, for the audit trail.
struct Used {
    verified: Verified,
    name: String,
}

/// Why an assertion was refused, and whose passkey it named when that is known.
#[derive(Debug)]
struct Refused {
    why: &'static str,
    user_id: Option<String>,
}

fn refused(why: &'static str, user_id: Option<&str>) -> Result<Result<Used, Refused>, OAuthError> {
    Ok(Err(Refused {
        why,
        user_id: user_id.map(str::to_owned),
    }))
}

/// The checks of an assertion, in order; see [`finish_authentication`].
async fn verify_assertion(
    state: &OAuthState,
    records: &TenantStore<'_>,
    ceremony: &str,
    credential_json: &str,
    expected_user: Option<&str>,
    now: UnixTime,
) -> Result<Result<Used, Refused>, OAuthError> {
    let Some(taken) = records
        .take_webauthn_ceremony(&hash_secret(ceremony), now)
        .await?
    else {
        return refused("ceremony unknown, already used or expired", expected_user);
    };
    let Ok(credential) = serde_json::from_str::<PublicKeyCredential>(credential_json) else {
        return refused("malformed assertion", expected_user);
    };
    let rp = relying_party(state)?;
    let found = records.find_passkey(credential.raw_id.as_ref()).await?;
    let Some(stored) = found else {
        return refused("unknown credential", expected_user);
    };
    let owner = Some(stored.user_id.as_str());
    if expected_user.is_some_and(|expected| expected != stored.user_id) {
        return refused("the passkey is another user's", expected_user);
    }
    // WebAuthn §7.2 step 6: a user handle, when the authenticator returns one (always, for
    // a discoverable credential), must be the handle of the credential's owner.
    let handle = records.find_webauthn_user_handle(&stored.user_id).await?;
    let presented = credential
        .response
        .user_handle
        .as_ref()
        .map(|h| Uuid::from_slice(h.as_ref()).map(|u| u.to_string()));
    match (&presented, &handle) {
        (Some(Ok(presented)), Some(handle)) if presented == handle => {}
        (None, _) if taken.kind == CeremonyKind::Authenticate => {}
        _ => return refused("user handle is not the credential owner's", owner),
    }
    let mut passkey = parse_passkey(&stored)?;
    let outcome = match (taken.kind, expected_user) {
        (CeremonyKind::Discover, _) => {
            let Ok(ceremony_state) =
                serde_json::from_str::<DiscoverableAuthentication>(&taken.state)
            else {
                return refused("ceremony state unreadable", owner);
            };
            let key = DiscoverableKey::from(&passkey);
            rp.finish_discoverable_authentication(&credential, ceremony_state, &[key])
        }
        // A second-factor ceremony serves only the user it was started for.
        (CeremonyKind::Authenticate, Some(expected))
            if taken.user_id.as_deref() == Some(expected) =>
        {
            let Ok(ceremony_state) = serde_json::from_str::<PasskeyAuthentication>(&taken.state)
            else {
                return refused("ceremony state unreadable", owner);
            };
            rp.finish_passkey_authentication(&credential, &ceremony_state)
        }
        _ => return refused("ceremony of another kind or user", owner),
    };
    let result = match outcome {
        Ok(result) => result,
        Err(error) => return refused(why_refused(&error), owner),
    };
    // Both ceremonies ask for user verification and the library enforces it; checked again
    // because a passwordless sign-in rests on it.
    if !result.user_verified() {
        return refused("user not verified", owner);
    }
    passkey.update_credential(&result);
    let updated = serde_json::to_string(&passkey)
        .map_err(|_| OAuthError::Passkey("a passkey cannot be serialized"))?;
    if !records
        .record_passkey_use(&stored.credential_id, &stored.credential, &updated, now)
        .await?
    {
        return refused("the passkey was used at the same moment elsewhere", owner);
    }
    Ok(Ok(Used {
        verified: Verified {
            user_id: stored.user_id,
            factor: Factor::Passkey {
                hardware: !result.backup_eligible(),
            },
        },
        name: stored.name,
    }))
}

/// The audit trail's words for the library's refusal.
fn why_refused(error: &WebauthnError) -> &'static str {
    match error {
        WebauthnError::CredentialPossibleCompromise => {
            "signature counter went back: a cloned authenticator?"
        }
        WebauthnError::InvalidRPOrigin => "wrong origin",
        WebauthnError::MismatchedChallenge => "wrong challenge",
        WebauthnError::InvalidRPIDHash => "wrong relying party id",
        WebauthnError::UserNotVerified | WebauthnError::UserNotPresent => {
            "user not present or not verified"
        }
        WebauthnError::CredentialNotFound => "credential not allowed in this ceremony",
        WebauthnError::InvalidClientDataType => "wrong client data type",
        _ => "assertion did not verify",
    }
}
