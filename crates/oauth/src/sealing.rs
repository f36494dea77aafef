//! Secrets at rest that must be read back (the signing keys' private halves, later TOTP
//! seeds): sealed with AES-256-GCM under a key encryption key (KEK) the operator keeps out of
//! the database, so a copy of the database alone signs nothing.
//!
//! The sealed form is an envelope (docs/decisions.md):
//! `"FAS" 0x01 | KEK id (8 bytes) | nonce (12 bytes) | ciphertext | tag (16 bytes)`.
//! The KEK id is the first 8 bytes of SHA-256 over a label and the KEK: it tells which KEK
//! sealed a value without revealing it. The associated data is the envelope's header followed
//! by the caller's context (a signing key's `kid`), so a sealed value moved to another row,
//! or relabelled with another KEK id, does not open. A PKCS#8 DER key starts with `0x30`,
//! so the magic tells a sealed value from one stored in clear.

use std::fmt;
use std::sync::Arc;

use aws_lc_rs::aead::{Aad, Nonce, RandomizedNonceKey, AES_256_GCM, NONCE_LEN};
use aws_lc_rs::digest::{digest, SHA256};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;

const MAGIC: &[u8; 4] = b"FAS\x01";
const KEK_ID_LEN: usize = 8;
const HEADER_LEN: usize = MAGIC.len() + KEK_ID_LEN;
const TAG_LEN: usize = 16;
const KEK_LEN: usize = 32;
/// Domain separation for the KEK id: the hash of the bare KEK is never published.
const KEK_ID_LABEL: &[u8] = b"fieldauth key encryption key id\0";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    #[error("a key encryption key file holds exactly 32 bytes, or the 43 base64url characters (and a newline) that `fieldauth keys new-kek` writes")]
    InvalidKek,
    #[error("sealed by the key encryption key {0}, which was not given")]
    KekMissing(KekId),
    #[error(
        "does not open with the key encryption key {0}: altered, or moved from another record"
    )]
    NotAuthentic(KekId),
    #[error("sealed in an unknown format")]
    UnknownFormat,
    #[error("encryption failed")]
    Encryption,
}

/// Which KEK sealed a value: shown as 16 hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct KekId([u8; KEK_ID_LEN]);

impl fmt::Display for KekId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Debug for KekId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KekId({self})")
    }
}

/// A key encryption key. Debug shows its id only.
pub struct Kek {
    id: KekId,
    key: RandomizedNonceKey,
}

impl fmt::Debug for Kek {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kek")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Kek {
    /// A KEK from a file's contents: exactly 32 raw bytes, or the text `keys new-kek` writes
    /// (32 bytes in base64url without padding, optionally ending in a newline).
    pub fn parse(contents: &[u8]) -> Result<Kek, SealError> {
        let decoded;
        let raw = match contents.len() {
            KEK_LEN => contents,
            _ => {
                let text = contents.strip_suffix(b"\n").unwrap_or(contents);
                let text = text.strip_suffix(b"\r").unwrap_or(text);
                decoded = URL_SAFE_NO_PAD
                    .decode(text)
                    .map_err(|_| SealError::InvalidKek)?;
                decoded.as_slice()
            }
        };
        Kek::from_bytes(raw)
    }

    fn from_bytes(raw: &[u8]) -> Result<Kek, SealError> {
        if raw.len() != KEK_LEN {
            return Err(SealError::InvalidKek);
        }
        let key = RandomizedNonceKey::new(&AES_256_GCM, raw).map_err(|_| SealError::InvalidKek)?;
        let mut labelled = KEK_ID_LABEL.to_vec();
        labelled.extend_from_slice(raw);
        let mut id = [0u8; KEK_ID_LEN];
        id.copy_from_slice(&digest(&SHA256, &labelled).as_ref()[..KEK_ID_LEN]);
        labelled.fill(0);
        Ok(Kek { id: KekId(id), key })
    }

    pub fn id(&self) -> KekId {
        self.id
    }
}

/// Seals `plaintext` under `kek`, bound to `context` (what the value belongs to).
pub fn seal(kek: &Kek, context: &[u8], plaintext: &[u8]) -> Result<Vec<u8>, SealError> {
    let mut header = Vec::with_capacity(HEADER_LEN);
    header.extend_from_slice(MAGIC);
    header.extend_from_slice(&kek.id.0);
    let mut in_out = plaintext.to_vec();
    let nonce = kek
        .key
        .seal_in_place_append_tag(Aad::from(associated_data(&header, context)), &mut in_out)
        .map_err(|_| SealError::Encryption)?;
    let mut sealed = header;
    sealed.extend_from_slice(nonce.as_ref());
    sealed.append(&mut in_out);
    Ok(sealed)
}

/// Opens a value sealed by [`seal`] under `kek` for the same `context`.
pub fn open(kek: &Kek, context: &[u8], sealed: &[u8]) -> Result<Vec<u8>, SealError> {
    let id = sealed_by(sealed).ok_or(SealError::UnknownFormat)?;
    if id != kek.id {
        return Err(SealError::KekMissing(id));
    }
    let (header, rest) = sealed.split_at(HEADER_LEN);
    if rest.len() < NONCE_LEN + TAG_LEN {
        return Err(SealError::NotAuthentic(id));
    }
    let (nonce, ciphertext) = rest.split_at(NONCE_LEN);
    let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| SealError::NotAuthentic(id))?;
    let mut in_out = ciphertext.to_vec();
    let plaintext = kek
        .key
        .open_in_place(
            nonce,
            Aad::from(associated_data(header, context)),
            &mut in_out,
        )
        .map_err(|_| SealError::NotAuthentic(id))?;
    Ok(plaintext.to_vec())
}

/// The KEK that sealed `stored`, or `None` when it is not sealed (stored in clear).
pub fn sealed_by(stored: &[u8]) -> Option<KekId> {
    let rest = stored.strip_prefix(MAGIC)?;
    let id: [u8; KEK_ID_LEN] = rest.get(..KEK_ID_LEN)?.try_into().ok()?;
    Some(KekId(id))
}

fn associated_data(header: &[u8], context: &[u8]) -> Vec<u8> {
    [header, context].concat()
}

/// The KEKs a node holds: the one that seals, and one more that only opens, for the time a
/// change of KEK takes (docs/key-rotation.md). None: secrets are stored in clear.
#[derive(Clone, Debug, Default)]
pub struct KeyEncryption {
    seal_with: Option<Arc<Kek>>,
    also_open: Option<Arc<Kek>>,
}

impl KeyEncryption {
    pub fn new(seal_with: Option<Kek>, also_open: Option<Kek>) -> KeyEncryption {
        KeyEncryption {
            seal_with: seal_with.map(Arc::new),
            also_open: also_open.map(Arc::new),
        }
    }

    /// The KEK new values are sealed with; `None` stores them in clear.
    pub fn sealing_kek(&self) -> Option<&Kek> {
        self.seal_with.as_deref()
    }

    /// `plaintext` sealed with the sealing KEK, or as it is when there is none.
    pub fn protect(&self, context: &[u8], plaintext: &[u8]) -> Result<Vec<u8>, SealError> {
        match self.sealing_kek() {
            Some(kek) => seal(kek, context, plaintext),
            None => Ok(plaintext.to_vec()),
        }
    }

    /// The plaintext of a stored value: a value in clear as it is, a sealed one opened with
    /// whichever of the KEKs sealed it.
    pub fn reveal(&self, context: &[u8], stored: &[u8]) -> Result<Vec<u8>, SealError> {
        let Some(id) = sealed_by(stored) else {
            return Ok(stored.to_vec());
        };
        let kek = [&self.seal_with, &self.also_open]
            .into_iter()
            .flatten()
            .find(|kek| kek.id == id)
            .ok_or(SealError::KekMissing(id))?;
        open(kek, context, stored)
    }

    /// Whether `stored` is in clear while there is a KEK to seal it with.
    pub fn needs_sealing(&self, stored: &[u8]) -> bool {
        self.sealing_kek().is_some() && sealed_by(stored).is_none()
    }

    /// Whether `stored` is in clear or under another KEK than the sealing one (what a change
    /// of KEK re-seals). Always false without a sealing KEK.
    pub fn needs_rewrap(&self, stored: &[u8]) -> bool {
        match self.sealing_kek() {
            Some(kek) => sealed_by(stored) != Some(kek.id),
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kek(byte: u8) -> Kek {
        Kek::parse(&[byte; 32]).unwrap()
    }

    #[test]
    fn a_sealed_value_opens_with_its_kek_and_context() {
        let sealed = seal(&kek(1), b"kid-1", b"secret").unwrap();
        assert_eq!(open(&kek(1), b"kid-1", &sealed).unwrap(), b"secret");
        assert_eq!(sealed_by(&sealed), Some(kek(1).id()));
        assert_eq!(&sealed[..4], b"FAS\x01");
        assert_eq!(sealed.len(), 4 + 8 + 12 + 6 + 16);
        // A random nonce each time: the same secret never seals to the same bytes.
        assert_ne!(sealed, seal(&kek(1), b"kid-1", b"secret").unwrap());
    }

    #[test]
    fn another_kek_another_context_or_a_changed_byte_does_not_open() {
        let sealed = seal(&kek(1), b"kid-1", b"secret").unwrap();
        let one = kek(1).id();
        assert_eq!(
            open(&kek(2), b"kid-1", &sealed),
            Err(SealError::KekMissing(one))
        );
        assert_eq!(
            open(&kek(1), b"kid-2", &sealed),
            Err(SealError::NotAuthentic(one))
        );
        for i in HEADER_LEN..sealed.len() {
            let mut tampered = sealed.clone();
            tampered[i] ^= 0x01;
            assert_eq!(
                open(&kek(1), b"kid-1", &tampered),
                Err(SealError::NotAuthentic(one)),
                "byte {i}"
            );
        }
        assert_eq!(
            open(&kek(1), b"kid-1", &sealed[..HEADER_LEN + 12]),
            Err(SealError::NotAuthentic(one))
        );
        // A header relabelled with another KEK's id is refused by that KEK too (the header
        // is authenticated).
        let mut relabelled = sealed.clone();
        relabelled[4..12].copy_from_slice(&kek(2).id().0);
        assert_eq!(
            open(&kek(2), b"kid-1", &relabelled),
            Err(SealError::NotAuthentic(kek(2).id()))
        );
    }

    #[test]
    fn a_kek_file_is_32_bytes_or_their_base64url_text() {
        let text = URL_SAFE_NO_PAD.encode([7u8; 32]);
        for contents in [text.clone(), format!("{text}\n"), format!("{text}\r\n")] {
            assert_eq!(Kek::parse(contents.as_bytes()).unwrap().id(), kek(7).id());
        }
        for bad in [
            &b""[..],
            &[7u8; 31],
            &[7u8; 33],
            format!("{text}\n\n").as_bytes(),
            URL_SAFE_NO_PAD.encode([7u8; 31]).as_bytes(),
            URL_SAFE_NO_PAD.encode([7u8; 33]).as_bytes(),
            format!("{text}=").as_bytes(),
        ] {
            assert_eq!(Kek::parse(bad).unwrap_err(), SealError::InvalidKek);
        }
        assert_eq!(kek(7).id().to_string().len(), 16);
        assert!(!format!("{:?}", kek(7)).contains("07"));
    }

    #[test]
    fn key_encryption_reveals_clear_values_and_values_of_either_kek() {
        let old = seal(&kek(1), b"k", b"old").unwrap();
        let new = seal(&kek(2), b"k", b"new").unwrap();
        let both = KeyEncryption::new(Some(kek(2)), Some(kek(1)));
        assert_eq!(both.reveal(b"k", &old).unwrap(), b"old");
        assert_eq!(both.reveal(b"k", &new).unwrap(), b"new");
        assert_eq!(both.reveal(b"k", b"\x30clear").unwrap(), b"\x30clear");
        assert!(both.needs_sealing(b"\x30clear"));
        assert!(!both.needs_sealing(&old) && !both.needs_sealing(&new));
        assert!(both.needs_rewrap(&old) && both.needs_rewrap(b"\x30clear"));
        assert!(!both.needs_rewrap(&new));
        let none = KeyEncryption::default();
        assert_eq!(
            none.reveal(b"k", &new),
            Err(SealError::KekMissing(kek(2).id()))
        );
        assert_eq!(none.protect(b"k", b"clear").unwrap(), b"clear");
        assert!(!none.needs_sealing(b"clear"));
        let sealed = both.protect(b"k", b"x").unwrap();
        assert_eq!(sealed_by(&sealed), Some(kek(2).id()));
    }
}
