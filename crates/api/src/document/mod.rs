//! GraphQL documents parsed in one pass over their bytes, into async-graphql's own tree.
//!
//! async-graphql parses a document with a PEG grammar (pest) and then walks pest's pairs to
//! build its tree: for the API's uncached query that was 8.6% of the server's CPU
//! (docs/performance.md). [`parse`] builds the same tree, every position included, and the
//! request then carries it (`Request::set_parsed_query`), so async-graphql does not parse.
//!
//! It reads what clients send: operations, fragments, variables, directives, aliases,
//! arguments, comments. Anything else returns `None` and async-graphql parses the document
//! as before: a syntax error (whose message is then async-graphql's), a block string, two
//! operations of one name, a construct its grammar reads in a way of its own (`nullable` as
//! `null` then `able`, `0123` as two numbers). So this parser can only spare a parse, never
//! change what a document means or which error it gets; the tests hold it to async-graphql's
//! tree, positions included, over generated and damaged documents.

mod grammar;
mod scanner;
mod values;

#[cfg(test)]
mod tests;

use std::collections::HashMap;

use async_graphql::parser::types::{
    DocumentOperations, ExecutableDocument, FragmentDefinition, OperationDefinition, OperationType,
};
use async_graphql::Positioned;

use grammar::{directives, selection_set, type_condition, variable_definitions, MAX_DEPTH};
use scanner::Scanner;

/// The document as async-graphql's `parse_query` would return it, or `None` where that
/// parse is left to async-graphql (see the module's documentation).
pub fn parse(source: &str) -> Option<ExecutableDocument> {
    let mut s = Scanner::new(source);
    s.skip_ignored();
    let mut operations: Option<DocumentOperations> = None;
    let mut fragments = HashMap::new();
    while !s.at_end() {
        let pos = s.pos()?;
        if s.peek() == Some(b'{') {
            // A query in short hand: no name, no variables.
            let operation = OperationDefinition {
                ty: OperationType::Query,
                variable_definitions: Vec::new(),
                directives: Vec::new(),
                selection_set: selection_set(&mut s, MAX_DEPTH)?,
            };
            if operations.is_some() {
                return None;
            }
            operations = Some(DocumentOperations::Single(Positioned::new(operation, pos)));
            continue;
        }
        let ty = match s.word()? {
            "query" => OperationType::Query,
            "mutation" => OperationType::Mutation,
            "subscription" => OperationType::Subscription,
            "fragment" => {
                s.skip_ignored();
                let name = s.name()?.node;
                let fragment = FragmentDefinition {
                    type_condition: type_condition(&mut s)?,
                    directives: directives(&mut s)?,
                    selection_set: selection_set(&mut s, MAX_DEPTH)?,
                };
                if fragments
                    .insert(name, Positioned::new(fragment, pos))
                    .is_some()
                {
                    return None;
                }
                continue;
            }
            _ => return None,
        };
        s.skip_ignored();
        let name = if s.at_name() {
            Some(s.name()?.node)
        } else {
            None
        };
        let operation = Positioned::new(
            OperationDefinition {
                ty,
                variable_definitions: variable_definitions(&mut s)?,
                directives: directives(&mut s)?,
                selection_set: selection_set(&mut s, MAX_DEPTH)?,
            },
            pos,
        );
        match (name, &mut operations) {
            (None, None) => operations = Some(DocumentOperations::Single(operation)),
            (Some(name), None) => {
                operations = Some(DocumentOperations::Multiple(HashMap::from([(
                    name, operation,
                )])))
            }
            (Some(name), Some(DocumentOperations::Multiple(named))) => {
                if named.insert(name, operation).is_some() {
                    return None;
                }
            }
            // An operation without a name must be the document's only one.
            (None, Some(_)) | (Some(_), Some(DocumentOperations::Single(_))) => return None,
        }
    }
    Some(ExecutableDocument {
        operations: operations?,
        fragments,
    })
}
