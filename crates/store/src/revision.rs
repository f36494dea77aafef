//! The revision of an administered record (tenant, client, user, organization): raised by
//! every administrative change, so an update can require the record to be as it was read
//! (the admin API's ETags and `If-Match`).

use crate::UnixTime;

/// A record's creation time and revision: together they name one state of one record, even
/// across a delete and a re-creation under the same id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Revision {
    pub created_at: UnixTime,
    pub revision: i64,
}

/// The condition an update adds for an expected revision: binds `$n` and `$n+1` (both NULL
/// when any revision will do). Written once so every conditional update reads alike.
pub(crate) fn matches_revision(created_at: usize, revision: usize) -> String {
    format!("(${created_at} IS NULL OR (created_at = ${created_at} AND revision = ${revision}))")
}

/// The two values [`matches_revision`] binds.
pub(crate) fn expected_values(expected: Option<Revision>) -> (Option<i64>, Option<i64>) {
    match expected {
        Some(r) => (Some(r.created_at), Some(r.revision)),
        None => (None, None),
    }
}
