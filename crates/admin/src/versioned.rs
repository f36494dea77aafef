//! A record and its revision: what a read or an update of one resource returns, so the
//! admin API can send the `ETag` beside the body and the CLI can print it.

use store::Revision;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Versioned<T> {
    pub value: T,
    pub revision: Revision,
}

impl<T> Versioned<T> {
    /// The record's ETag, as the admin API sends it.
    pub fn etag(&self) -> String {
        crate::etag::etag(self.revision)
    }
}
