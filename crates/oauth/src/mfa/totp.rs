//! (filled by the totp work of issue 24)
