//! (filled by the recovery_codes work of issue 24)
