//! Registering a passkey for a signed-in user (the account page): options that ask for a
//! discoverable credential with user verification, then the browser's answer verified and
//! stored under the name the user chose.

use jose::UnixTime;
use store::{CeremonyKind, NewPasskey, StoreError, TenantId};
use webauthn_rs::prelude::{PasskeyRegistration, RegisterPublicKeyCredential, Uuid};

use super::{keep_ceremony, options_json, parse_passkey, relying_party, Challenge};
use crate::error::OAuthError;
use crate::events::Event;
use crate::secret::hash_secret;
use crate::state::OAuthState;

/// The longest passkey name kept, in characters.
pub(crate) const NAME_MAX_CHARS: usize = 64;

/// What a registration came to.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Registration {
    /// Stored under this name.
    Added(String),
    /// Not stored; the message says why, in the user's words.
    Refused(&'static str),
}

/// Starts registering a passkey for `user`: their WebAuthn user handle (a random UUID made
/// at their first registration, never their user id), and their passkeys excluded so one
/// authenticator is not registered twice.
pub(crate) async fn start_registration(
    state: &OAuthState,
    tenant: &TenantId,
    user: &store::User,
    now: UnixTime,
) -> Result<Challenge, OAuthError> {
    let rp = relying_party(state)?;
    let records = state.store.tenant(tenant);
    let handle = records
        .webauthn_user_handle(&user.user_id, &state.random.uuid_v4()?)
        .await?;
    let handle = Uuid::parse_str(&handle)
        .map_err(|_| OAuthError::Passkey("a stored user handle is not a UUID"))?;
    let mut exclude = Vec::new();
    for stored in records.list_passkeys(&user.user_id).await? {
        exclude.push(parse_passkey(&stored)?.cred_id().clone());
    }
    let display_name = match user.name.is_empty() {
        true => &user.username,
        false => &user.name,
    };
    let (options, ceremony_state) = rp
        .start_passkey_registration(handle, &user.username, display_name, Some(exclude))
        .map_err(|_| OAuthError::Passkey("a registration did not start"))?;
    let mut options = options_json(&options)?;
    // Passwordless sign-in finds the passkey without a username, so the authenticator must
    // keep it (WebAuthn §5.4.6 residentKey "required"): a passkey is a discoverable
    // credential. The library's own default asks for the opposite.
    if let Some(selection) = options
        .pointer_mut("/publicKey/authenticatorSelection")
        .and_then(|s| s.as_object_mut())
    {
        selection.insert("residentKey".to_owned(), "required".into());
        selection.insert("requireResidentKey".to_owned(), true.into());
    }
    let ceremony = keep_ceremony(
        state,
        &records,
        CeremonyKind::Register,
        Some(&user.user_id),
        &ceremony_state,
        now,
    )
    .await?;
    Ok(Challenge { ceremony, options })
}

/// The browser's answer to a registration: the ceremony's handle, the new credential (JSON,
/// binary fields base64url) and the name the user gave it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct NewPasskeyForm<'a> {
    pub ceremony: &'a str,
    pub credential_json: &'a str,
    pub name: &'a str,
}

/// Finishes a registration begun by [`start_registration`] for the same user, and stores
/// the passkey under its name. Audited either way.
pub(crate) async fn finish_registration(
    state: &OAuthState,
    tenant: &TenantId,
    user_id: &str,
    form: NewPasskeyForm<'_>,
    address: &str,
    now: UnixTime,
) -> Result<Registration, OAuthError> {
    let outcome = register(state, tenant, user_id, form, now).await?;
    let event = match &outcome {
        Ok(name) => Event::PasskeyRegistered {
            user_id,
            name,
            address,
        },
        Err((why, _)) => Event::PasskeyFailed {
            user_id: Some(user_id),
            why,
        },
    };
    state.record(tenant, event, now).await;
    Ok(match outcome {
        Ok(name) => Registration::Added(name),
        Err((_, message)) => Registration::Refused(message),
    })
}

/// The stored name, or why not: (for the audit trail, for the user).
async fn register(
    state: &OAuthState,
    tenant: &TenantId,
    user_id: &str,
    form: NewPasskeyForm<'_>,
    now: UnixTime,
) -> Result<Result<String, (&'static str, &'static str)>, OAuthError> {
    const RETRY: &str = "The passkey was not added. Try again.";
    let name = form.name.trim();
    if name.is_empty()
        || name.chars().count() > NAME_MAX_CHARS
        || name.chars().any(char::is_control)
    {
        return Ok(Err((
            "bad name",
            "Give the passkey a name of 1 to 64 characters.",
        )));
    }
    let records = state.store.tenant(tenant);
    let taken = records
        .take_webauthn_ceremony(&hash_secret(form.ceremony), now)
        .await?;
    let Some(taken) =
        taken.filter(|t| t.kind == CeremonyKind::Register && t.user_id.as_deref() == Some(user_id))
    else {
        return Ok(Err((
            "registration ceremony unknown, used or expired",
            RETRY,
        )));
    };
    let (Ok(credential), Ok(ceremony_state)) = (
        serde_json::from_str::<RegisterPublicKeyCredential>(form.credential_json),
        serde_json::from_str::<PasskeyRegistration>(&taken.state),
    ) else {
        return Ok(Err(("malformed registration", RETRY)));
    };
    let passkey =
        match relying_party(state)?.finish_passkey_registration(&credential, &ceremony_state) {
            Ok(passkey) => passkey,
            Err(error) => return Ok(Err((super::why_refused(&error), RETRY))),
        };
    let serialized = serde_json::to_string(&passkey)
        .map_err(|_| OAuthError::Passkey("a passkey cannot be serialized"))?;
    let new = NewPasskey {
        credential_id: passkey.cred_id().as_ref(),
        user_id,
        name,
        credential: &serialized,
        created_at: now,
    };
    match records.add_passkey(&new).await {
        Ok(()) => Ok(Ok(name.to_owned())),
        Err(StoreError::Conflict(_)) => Ok(Err((
            "credential already registered",
            "This passkey is registered already.",
        ))),
        Err(error) => Err(error.into()),
    }
}
