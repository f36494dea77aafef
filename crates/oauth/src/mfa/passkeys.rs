//! (filled by the passkeys work of issue 24)
