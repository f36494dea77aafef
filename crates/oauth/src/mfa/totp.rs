//! TOTP authenticators (RFC 6238: HMAC-SHA-1, 6 digits, 30-second steps, one step of skew
//! either way): enrollment with a QR code rendered here as SVG, confirmation by a first
//! code, the check of a code at sign-in (each step accepted once), removal. The secret is
//! sealed under the KEK that seals the signing keys, bound to its tenant and user.

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use qrcode::render::svg;
use qrcode::{EcLevel, QrCode};
use store::{Store, StoreError, TenantId, UnixTime};
use totp_rs::{Algorithm, Builder, Totp};

use super::recovery_codes;
use crate::error::OAuthError;
use crate::events::Event;
use crate::sealing::{self, KeyEncryption};
use crate::state::OAuthState;

/// RFC 4226 §4 R6 recommends 160 bits; it is also what authenticator apps expect.
const SECRET_BYTES: usize = 20;
const DIGITS: u8 = 6;
/// RFC 6238 §5.2: 30 seconds, and at most one step of clock drift either way.
const STEP_SECONDS: u64 = 30;
const SKEW_STEPS: u16 = 1;

/// What the user needs to add the authenticator to an app: the key as text, the
/// `otpauth://` URI, and its QR code as SVG markup (empty if it could not be drawn: the key
/// as text still works).
#[derive(Clone)]
pub(crate) struct Enrollment {
    pub secret_base32: String,
    pub otpauth_uri: String,
    pub qr_svg: String,
}

impl std::fmt::Debug for Enrollment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Enrollment").finish_non_exhaustive()
    }
}

/// True only for a 6-digit code of the user's confirmed authenticator, of the current time
/// step or one either side, and of a step later than the last code accepted (RFC 6238 §5.2:
/// a code is accepted once). The step is taken by one conditional update, so two nodes
/// cannot both accept one code. Failures are for the caller to count and audit.
pub(crate) async fn verify(
    state: &OAuthState,
    tenant: &TenantId,
    user_id: &str,
    code: &str,
    now: UnixTime,
) -> Result<bool, OAuthError> {
    let Some(code) = normalized(code) else {
        return Ok(false);
    };
    let records = state.store.tenant(tenant);
    let Some(stored) = records.confirmed_totp_secret(user_id).await? else {
        return Ok(false);
    };
    let secret = reveal(state, tenant, user_id, &stored.secret)?;
    let Some(step) = matching_step(&secret, &code, now)? else {
        return Ok(false);
    };
    if stored.last_step.is_some_and(|last| step <= last) {
        return Ok(false);
    }
    Ok(records.accept_totp_step(user_id, step).await?)
}

/// Starts setting up an authenticator for `user`: a new random secret, stored unconfirmed
/// (it replaces one being set up, never a confirmed one: that one must be removed first),
/// and what the user needs to add it to an app.
pub(crate) async fn begin_enrollment(
    state: &OAuthState,
    tenant: &TenantId,
    user: &store::User,
    now: UnixTime,
) -> Result<Enrollment, OAuthError> {
    let records = state.store.tenant(tenant);
    let secret = new_secret(state)?;
    let sealed = state
        .signing_keys
        .encryption()
        .protect(&context(tenant, &user.user_id), &secret)
        .map_err(OAuthError::FactorSealing)?;
    if !records
        .save_totp_secret(&user.user_id, &sealed, now, false)
        .await?
    {
        return Err(OAuthError::InvalidFlow(
            "An authenticator app is already set up for this account. Remove it first to set \
             up another.",
        ));
    }
    let issuer = issuer_of(state, tenant).await?;
    enrollment(&secret, &issuer, &user.username)
}

/// The authenticator being set up for `user`, shown again (after a wrong first code, or a
/// reload of the page); `None` when none is being set up.
pub(crate) async fn pending_enrollment(
    state: &OAuthState,
    tenant: &TenantId,
    user: &store::User,
) -> Result<Option<Enrollment>, OAuthError> {
    let records = state.store.tenant(tenant);
    let Some(sealed) = records.unconfirmed_totp_secret(&user.user_id).await? else {
        return Ok(None);
    };
    let secret = reveal(state, tenant, &user.user_id, &sealed)?;
    let issuer = issuer_of(state, tenant).await?;
    enrollment(&secret, &issuer, &user.username).map(Some)
}

/// Checks the first code against the authenticator being set up; when right, confirms it,
/// records that code's step as used, and gives the user 10 new recovery codes in place of
/// any earlier ones, returned in clear to be shown once. `None` for a wrong code, or when no
/// authenticator is being set up (audited as a failure).
pub(crate) async fn confirm_enrollment(
    state: &OAuthState,
    tenant: &TenantId,
    user_id: &str,
    code: &str,
    now: UnixTime,
) -> Result<Option<Vec<String>>, OAuthError> {
    let records = state.store.tenant(tenant);
    let Some(sealed) = records.unconfirmed_totp_secret(user_id).await? else {
        enrollment_failed(state, tenant, user_id, "no authenticator being set up", now).await;
        return Ok(None);
    };
    let secret = reveal(state, tenant, user_id, &sealed)?;
    let step = match normalized(code) {
        Some(code) => matching_step(&secret, &code, now)?,
        None => None,
    };
    let Some(step) = step else {
        enrollment_failed(state, tenant, user_id, "wrong first code", now).await;
        return Ok(None);
    };
    let (codes, hashes) = recovery_codes::generate(state, tenant, user_id)?;
    if !records
        .confirm_totp(user_id, &sealed, step, &hashes, now)
        .await?
    {
        // Set up again, or confirmed, in another tab meanwhile.
        enrollment_failed(state, tenant, user_id, "set up again meanwhile", now).await;
        return Ok(None);
    }
    tracing::info!(tenant = %tenant, sub = %user_id, "totp: authenticator confirmed");
    state
        .record(tenant, Event::TotpEnrolled { user_id }, now)
        .await;
    let generated = Event::RecoveryCodesGenerated {
        user_id,
        count: codes.len(),
    };
    state.record(tenant, generated, now).await;
    Ok(Some(codes))
}

/// Removes the user's authenticator (and their recovery codes when no passkey is left).
/// Returns whether there was one; a removal is audited.
pub(crate) async fn remove(
    state: &OAuthState,
    tenant: &TenantId,
    user_id: &str,
    now: UnixTime,
) -> Result<bool, OAuthError> {
    let removed = state.store.tenant(tenant).remove_totp(user_id).await?;
    if removed {
        tracing::info!(tenant = %tenant, sub = %user_id, "totp: authenticator removed");
        state
            .record(tenant, Event::TotpRemoved { user_id }, now)
            .await;
    }
    Ok(removed)
}

async fn enrollment_failed(
    state: &OAuthState,
    tenant: &TenantId,
    user_id: &str,
    why: &str,
    now: UnixTime,
) {
    tracing::warn!(tenant = %tenant, sub = %user_id, why, "totp: authenticator not confirmed");
    let event = Event::TotpFailed {
        user_id,
        address: None,
        why,
    };
    state.record(tenant, event, now).await;
}

/// The TOTP of a secret, with this server's parameters.
fn authenticator(secret: &[u8]) -> Result<Totp, OAuthError> {
    Builder::new()
        .with_algorithm(Algorithm::SHA1)
        .with_digits(DIGITS)
        .with_step_duration(STEP_SECONDS)
        .with_skew(SKEW_STEPS)
        .with_secret(secret.to_vec())
        .build()
        // Only a secret under 128 bits is refused, which we never store.
        .map_err(|_| OAuthError::Store(StoreError::Corrupt("TOTP secret too short")))
}

/// The time step (RFC 6238 §4.2 `T`) of `code` within one step of `now`, if it matches.
fn matching_step(secret: &[u8], code: &str, now: UnixTime) -> Result<Option<i64>, OAuthError> {
    let Ok(time) = u64::try_from(now) else {
        return Ok(None);
    };
    let step = authenticator(secret)?.check(code, time);
    Ok(step.and_then(|step| i64::try_from(step).ok()))
}

/// The code as typed, without surrounding spaces or the space some apps show in the
/// middle ("123 456"): six ASCII digits, or nothing.
fn normalized(code: &str) -> Option<String> {
    let code: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    match code.len() == usize::from(DIGITS) && code.bytes().all(|b| b.is_ascii_digit()) {
        true => Some(code),
        false => None,
    }
}

/// 160 random bits. Without a KEK the secret is stored as it is, and a stored value that
/// starts like a sealed one would be taken for one: such a secret (one in 2^32) is drawn
/// again.
fn new_secret(state: &OAuthState) -> Result<[u8; SECRET_BYTES], OAuthError> {
    for _ in 0..4 {
        let mut secret = [0u8; SECRET_BYTES];
        state.random.fill(&mut secret)?;
        if sealing::sealed_by(&secret).is_none() {
            return Ok(secret);
        }
    }
    Err(OAuthError::Randomness)
}

/// What a sealed secret is bound to: moved to another user's or tenant's row, it does not
/// open.
fn context(tenant: &TenantId, user_id: &str) -> Vec<u8> {
    [
        b"totp\0",
        tenant.as_str().as_bytes(),
        b"\0",
        user_id.as_bytes(),
    ]
    .concat()
}

fn reveal(
    state: &OAuthState,
    tenant: &TenantId,
    user_id: &str,
    stored: &[u8],
) -> Result<Vec<u8>, OAuthError> {
    state
        .signing_keys
        .encryption()
        .reveal(&context(tenant, user_id), stored)
        .map_err(OAuthError::FactorSealing)
}

/// Seals anew, with the sealing KEK, every tenant's authenticator secret that `selected`
/// picks (in clear, or under the other KEK): what a change of KEK does for the signing keys,
/// so the old KEK can go. Each row is replaced only while it holds what was read; a secret
/// that does not open fails before its row is written. Returns how many were sealed.
pub(crate) async fn reseal_secrets(
    store: &Store,
    encryption: &KeyEncryption,
    selected: fn(&KeyEncryption, &[u8]) -> bool,
) -> Result<usize, OAuthError> {
    if encryption.sealing_kek().is_none() {
        return Ok(0);
    }
    let mut sealed = 0;
    for tenant in store.list_tenants().await? {
        let records = store.tenant(&tenant.tenant_id);
        for (user_id, stored) in records.totp_secrets().await? {
            if !selected(encryption, &stored) {
                continue;
            }
            let context = context(&tenant.tenant_id, &user_id);
            let secret = encryption
                .reveal(&context, &stored)
                .map_err(OAuthError::FactorSealing)?;
            let resealed = encryption
                .protect(&context, &secret)
                .map_err(OAuthError::FactorSealing)?;
            if records
                .replace_totp_secret(&user_id, &stored, &resealed)
                .await?
            {
                sealed += 1;
            }
        }
    }
    if sealed > 0 {
        tracing::info!(secrets = sealed, "authenticator secrets sealed");
    }
    Ok(sealed)
}

/// The name apps show above the codes: the tenant's name, else its id.
async fn issuer_of(state: &OAuthState, tenant: &TenantId) -> Result<String, OAuthError> {
    let record = state.store.tenant(tenant).require().await?;
    Ok(match record.name.trim().is_empty() {
        true => tenant.as_str().to_owned(),
        false => record.name,
    })
}

/// Everything but RFC 3986's unreserved characters is percent-encoded, `:` included, so a
/// name with a colon cannot move the issuer/account split of the label.
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

fn enrollment(secret: &[u8], issuer: &str, account: &str) -> Result<Enrollment, OAuthError> {
    let secret_base32 = authenticator(secret)?.secret().to_base32();
    let issuer = utf8_percent_encode(issuer, COMPONENT).to_string();
    let account = utf8_percent_encode(account, COMPONENT).to_string();
    // The Key URI format of authenticator apps: the issuer both in the label and as a
    // parameter, the defaults spelled out.
    let otpauth_uri = format!(
        "otpauth://totp/{issuer}:{account}?secret={secret_base32}&issuer={issuer}\
         &algorithm=SHA1&digits={DIGITS}&period={STEP_SECONDS}"
    );
    let qr_svg = qr_svg(&otpauth_uri);
    Ok(Enrollment {
        secret_base32,
        otpauth_uri,
        qr_svg,
    })
}

/// The QR code of `uri` as inline SVG markup (no XML declaration), or empty when the URI
/// does not fit a QR code (a tenant name of thousands of characters).
fn qr_svg(uri: &str) -> String {
    let code = match QrCode::with_error_correction_level(uri.as_bytes(), EcLevel::M) {
        Ok(code) => code,
        Err(error) => {
            tracing::warn!(%error, "totp: no QR code for this key");
            return String::new();
        }
    };
    let image = code
        .render::<svg::Color>()
        .min_dimensions(220, 220)
        .quiet_zone(true)
        .build();
    let markup = match image.find("<svg") {
        Some(start) => &image[start..],
        None => image.as_str(),
    };
    markup.replacen(
        "<svg ",
        "<svg role=\"img\" aria-label=\"QR code of the key\" class=\"qr\" ",
        1,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6238 Appendix B: the SHA-1 seed, ASCII "12345678901234567890".
    const RFC_SEED: &[u8] = b"12345678901234567890";

    /// RFC 6238 Appendix B, SHA-1 column: time, 8-digit TOTP.
    const RFC_VECTORS: [(u64, &str); 6] = [
        (59, "94287082"),
        (1_111_111_109, "07081804"),
        (1_111_111_111, "14050471"),
        (1_234_567_890, "89005924"),
        (2_000_000_000, "69279037"),
        (20_000_000_000, "65353130"),
    ];

    #[test]
    fn the_rfc_6238_sha1_vectors_come_out_of_this_configuration() {
        // Our configuration with the Appendix's 8 digits: the same algorithm and step.
        let eight = Builder::new()
            .with_algorithm(Algorithm::SHA1)
            .with_digits(8)
            .with_step_duration(STEP_SECONDS)
            .with_secret(RFC_SEED.to_vec())
            .build()
            .unwrap();
        let ours = authenticator(RFC_SEED).unwrap();
        for (time, expected) in RFC_VECTORS {
            assert_eq!(eight.generate(time).to_string(), expected, "at {time}");
            // Six digits are the last six of the same truncation (RFC 4226 §5.3).
            assert_eq!(ours.generate(time).to_string(), expected[2..], "at {time}");
        }
    }

    #[test]
    fn a_code_matches_its_step_and_one_either_side_but_not_two() {
        let now: i64 = 1_800_000_015; // inside step 60_000_000
        let step = now / 30;
        let ours = authenticator(RFC_SEED).unwrap();
        let code_at = |s: i64| ours.generate((s * 30) as u64).to_string();
        for offset in [-1, 0, 1] {
            assert_eq!(
                matching_step(RFC_SEED, &code_at(step + offset), now).unwrap(),
                Some(step + offset),
                "offset {offset}"
            );
        }
        for offset in [-2, 2] {
            assert_eq!(
                matching_step(RFC_SEED, &code_at(step + offset), now).unwrap(),
                None,
                "offset {offset}"
            );
        }
        assert_eq!(matching_step(RFC_SEED, &code_at(step), -1).unwrap(), None);
    }

    #[test]
    fn codes_are_six_digits_with_spaces_allowed() {
        assert_eq!(normalized(" 123 456 ").as_deref(), Some("123456"));
        for bad in ["12345", "1234567", "12345a", "+12345", "１２３４５６", ""] {
            assert_eq!(normalized(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_uri_names_issuer_and_account_and_the_qr_is_inline_svg() {
        let made = enrollment(RFC_SEED, "Acme: Field & Co", "bob:smith@corp").unwrap();
        assert_eq!(made.secret_base32, "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ");
        assert_eq!(
            made.otpauth_uri,
            "otpauth://totp/Acme%3A%20Field%20%26%20Co:bob%3Asmith%40corp\
             ?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ&issuer=Acme%3A%20Field%20%26%20Co\
             &algorithm=SHA1&digits=6&period=30"
        );
        assert!(
            made.qr_svg.starts_with("<svg role=\"img\""),
            "{}",
            made.qr_svg
        );
        assert!(made.qr_svg.ends_with("</svg>"));
        assert!(!made.qr_svg.contains("<?xml"));
        assert!(!made.qr_svg.contains("script"));
        // Debug never shows the key.
        assert!(!format!("{made:?}").contains("GEZ"));
    }

    #[test]
    fn a_sealed_secret_opens_only_for_its_tenant_and_user() {
        let kek = sealing::Kek::parse(&[9u8; 32]).unwrap();
        let encryption = sealing::KeyEncryption::new(Some(kek), None);
        let acme = TenantId::parse("acme").unwrap();
        let other = TenantId::parse("other").unwrap();
        let sealed = encryption.protect(&context(&acme, "u1"), RFC_SEED).unwrap();
        assert_eq!(
            encryption.reveal(&context(&acme, "u1"), &sealed).unwrap(),
            RFC_SEED
        );
        assert!(encryption.reveal(&context(&acme, "u2"), &sealed).is_err());
        assert!(encryption.reveal(&context(&other, "u1"), &sealed).is_err());
    }
}
