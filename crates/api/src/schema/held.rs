//! How a resolver holds its record: its own, or shared with the request's loader.
//!
//! A loader keeps each key's answer for the rest of the request (a key is read once per
//! request), and every asker took a deep copy of it: a job's work order, its assignments and
//! their employees (copied twice), about 180 allocations and 2% of an uncached 20-job query
//! (docs/performance.md). The loaders answer with reference-counted records (`loaders.rs`);
//! a record read for one resolver alone (a page's row, a mutation's result) is held without
//! a count.

use std::ops::Deref;
use std::sync::Arc;

/// A record, owned or shared; reads as `&T` either way.
pub enum Held<T> {
    Own(T),
    Shared(Arc<T>),
}

impl<T> Deref for Held<T> {
    type Target = T;

    fn deref(&self) -> &T {
        match self {
            Held::Own(record) => record,
            Held::Shared(record) => record,
        }
    }
}
