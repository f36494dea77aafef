//! Documents that passed async-graphql's full validation, so that the same request runs after
//! that with its short one.
//!
//! async-graphql checks every request against some twenty rules before it runs it (unknown
//! fields, argument types, fragments, variables) and measures its depth and complexity: 5% of
//! an uncached query's CPU, the same work for the same document every time
//! (docs/performance.md). The rules read the schema, the document, the operation's name and
//! the variables' values, nothing else, so a request without variables that passed them once
//! passes them again. Such a request runs on a second schema, the same but for its
//! `ValidationMode::Fast`, which still checks the depth, the complexity and fragment cycles
//! (a limit is never skipped) but not the rules. A request with variables is always checked
//! in full: their values decide whether it is valid. A document is only learned from an
//! answer without any error, so nothing that failed validation is ever run unchecked.

use std::collections::HashMap;
use std::sync::Mutex;

/// The bytes of documents kept; past this they are all forgotten and learned again.
const BUDGET_BYTES: usize = 1 << 20;
/// What an entry costs beside its text: the map's slot, the list of operations, an operation.
const ENTRY_OVERHEAD: usize = 96;

/// Documents known valid without variables, with the operations that were run from each.
#[derive(Default)]
pub struct KnownDocuments {
    known: Mutex<Known>,
}

#[derive(Default)]
struct Known {
    /// The query's text, then each operation name it was run with (`None`: unnamed).
    documents: HashMap<Box<str>, Vec<Option<Box<str>>>, foldhash::fast::RandomState>,
    bytes: usize,
}

impl KnownDocuments {
    /// Whether this request passed the full validation before: the same text and operation,
    /// and no variables now.
    pub fn knows(&self, request: &async_graphql::Request) -> bool {
        if !request.variables.is_empty() {
            return false;
        }
        let known = self.lock();
        known
            .documents
            .get(request.query.as_str())
            .is_some_and(|operations| {
                operations
                    .iter()
                    .any(|name| name.as_deref() == request.operation_name.as_deref())
            })
    }

    /// Notes a request without variables whose answer held no error, so it was valid.
    pub fn learn(&self, query: &str, operation_name: Option<&str>) {
        let mut known = self.lock();
        let cost = query.len() + operation_name.map_or(0, str::len) + ENTRY_OVERHEAD;
        if known.bytes + cost > BUDGET_BYTES {
            known.documents.clear();
            known.bytes = 0;
            if cost > BUDGET_BYTES {
                return;
            }
        }
        let operations = known.documents.entry(Box::from(query)).or_default();
        if operations
            .iter()
            .any(|name| name.as_deref() == operation_name)
        {
            return;
        }
        operations.push(operation_name.map(Box::from));
        known.bytes += cost;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Known> {
        // Every change leaves the map whole (an insert, a clear), so a poisoned lock is sound.
        self.known
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl std::fmt::Debug for KnownDocuments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KnownDocuments").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_graphql::{Name, Request, Value, Variables};

    #[test]
    fn a_document_is_known_for_the_operation_it_ran_and_without_variables() {
        let known = KnownDocuments::default();
        let query = "query A { jobs { id } } query B { jobs { title } }";
        assert!(!known.knows(&Request::new(query).operation_name("A")));
        known.learn(query, Some("A"));
        assert!(known.knows(&Request::new(query).operation_name("A")));
        assert!(!known.knows(&Request::new(query).operation_name("B")));
        assert!(!known.knows(&Request::new(query)));
        assert!(!known.knows(&Request::new("{ jobs { id } }")));
        let mut variables = Variables::default();
        variables.insert(Name::new("n"), Value::from(1));
        let with_variables = Request::new(query).operation_name("A").variables(variables);
        assert!(!known.knows(&with_variables));
    }

    #[test]
    fn past_the_budget_every_document_is_forgotten() {
        let known = KnownDocuments::default();
        let big = "x".repeat(BUDGET_BYTES / 2 - ENTRY_OVERHEAD);
        known.learn(&big, None);
        known.learn("{ a }", None);
        assert!(known.knows(&Request::new(big.as_str())));
        let other = "y".repeat(BUDGET_BYTES / 2 - ENTRY_OVERHEAD);
        known.learn(&other, None);
        assert!(known.knows(&Request::new(other.as_str())));
        assert!(!known.knows(&Request::new(big.as_str())));
        assert!(!known.knows(&Request::new("{ a }")));
        known.learn(&"z".repeat(BUDGET_BYTES + 1), None);
        assert!(!known.knows(&Request::new("z".repeat(BUDGET_BYTES + 1))));
    }
}
