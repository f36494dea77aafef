//! One check at the edge for every string a request carries, in its variables or written in
//! the document (issue 20): none may hold a control character other than a newline. No field
//! has a use for one, PostgreSQL cannot store a NUL in text, and ids and filters reach the
//! database without passing [`crate::validate::text`]. Checked once the document is parsed and
//! before anything runs, so a refused request reads and writes nothing.
//!
//! It runs before the schema, not as an async-graphql extension: a schema with any extension
//! sends every field it resolves through the extensions' chain (a boxed future, two registry
//! lookups by name per field), which cost a query of 420 fields a third of its CPU
//! (docs/performance.md).

use async_graphql::parser::types::{ExecutableDocument, Selection, SelectionSet};
use async_graphql::{Positioned, Request, ServerError, ServerResult};
use async_graphql_value::{ConstValue, Value};

/// Refuses a request whose variables or document hold a control character:
/// `BAD_USER_INPUT`, naming the argument or variable that holds one. The document is parsed
/// into the request, where the schema finds it; one that does not parse is left to the
/// schema, which answers with the parse error.
pub fn check(request: &mut Request) -> ServerResult<()> {
    if request.parsed_query().is_err() {
        return Ok(());
    }
    for (name, value) in request.variables.iter() {
        if const_has_control(value) {
            return Err(refused(&format!("variable ${name}"), None));
        }
    }
    match request.parsed_query() {
        Ok(document) => check_document(document),
        Err(_) => Ok(()),
    }
}

fn refused(what: &str, at: Option<async_graphql::Pos>) -> ServerError {
    let mut error = ServerError::new(format!("{what}: a string contains a control character"), at);
    let mut extensions = async_graphql::ErrorExtensionValues::default();
    extensions.set("code", "BAD_USER_INPUT");
    error.extensions = Some(extensions);
    error
}

fn check_document(document: &ExecutableDocument) -> ServerResult<()> {
    for (_, operation) in document.operations.iter() {
        for variable in &operation.node.variable_definitions {
            if let Some(default) = &variable.node.default_value {
                if const_has_control(&default.node) {
                    let what = format!("variable ${}", variable.node.name.node);
                    return Err(refused(&what, Some(default.pos)));
                }
            }
        }
        check_directives(&operation.node.directives)?;
        check_selections(&operation.node.selection_set)?;
    }
    for fragment in document.fragments.values() {
        check_directives(&fragment.node.directives)?;
        check_selections(&fragment.node.selection_set)?;
    }
    Ok(())
}

fn check_selections(set: &Positioned<SelectionSet>) -> ServerResult<()> {
    for selection in &set.node.items {
        match &selection.node {
            Selection::Field(field) => {
                check_arguments(&field.node.arguments)?;
                check_directives(&field.node.directives)?;
                check_selections(&field.node.selection_set)?;
            }
            Selection::FragmentSpread(spread) => check_directives(&spread.node.directives)?,
            Selection::InlineFragment(inline) => {
                check_directives(&inline.node.directives)?;
                check_selections(&inline.node.selection_set)?;
            }
        }
    }
    Ok(())
}

fn check_directives(
    directives: &[Positioned<async_graphql::parser::types::Directive>],
) -> ServerResult<()> {
    directives
        .iter()
        .try_for_each(|directive| check_arguments(&directive.node.arguments))
}

type Arguments = [(Positioned<async_graphql::Name>, Positioned<Value>)];

fn check_arguments(arguments: &Arguments) -> ServerResult<()> {
    for (name, value) in arguments {
        if value_has_control(&value.node) {
            return Err(refused(&format!("argument {}", name.node), Some(value.pos)));
        }
    }
    Ok(())
}

fn has_control(text: &str) -> bool {
    text.chars().any(|c| c.is_control() && c != '\n')
}

fn value_has_control(value: &Value) -> bool {
    match value {
        Value::String(text) => has_control(text),
        Value::List(items) => items.iter().any(value_has_control),
        Value::Object(fields) => fields
            .iter()
            .any(|(name, value)| has_control(name) || value_has_control(value)),
        _ => false,
    }
}

fn const_has_control(value: &ConstValue) -> bool {
    match value {
        ConstValue::String(text) => has_control(text),
        ConstValue::List(items) => items.iter().any(const_has_control),
        ConstValue::Object(fields) => fields
            .iter()
            .any(|(name, value)| has_control(name) || const_has_control(value)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(query: &str) -> ExecutableDocument {
        async_graphql::parser::parse_query(query).unwrap()
    }

    #[test]
    fn strings_in_arguments_directives_fragments_and_defaults_are_checked() {
        for query in [
            r#"{ job(id: "a\u0000b") { id } }"#,
            r#"{ jobs(filter: { assigneeId: "x\u0007" }) { nodes { id } } }"#,
            r#"{ jobs(filter: { statuses: ["a", "\u001b"] }) { nodes { id } } }"#,
            r#"{ job(id: "1") @include(if: true) { ...F } } fragment F on Job { notes(x: "\t") }"#,
            r#"query Q($id: ID! = "\u007f") { job(id: $id) { id } }"#,
            r#"{ ... on Query { job(id: "\u0085") { id } } }"#,
        ] {
            let error = check_document(&parse(query)).unwrap_err();
            assert!(error.message.contains("control character"), "{query}");
        }
    }

    #[test]
    fn newlines_and_ordinary_text_pass() {
        for query in [
            r#"{ job(id: "j-1") { id } }"#,
            r#"mutation { addJobNote(input: { jobId: "j", text: "line 1\nline 2 \u00e9 \u200b" }) { id } }"#,
        ] {
            assert!(check_document(&parse(query)).is_ok(), "{query}");
        }
    }

    #[test]
    fn variables_are_checked_at_any_depth() {
        use async_graphql::Variables;
        let nested = serde_json::json!({"input": {"lines": [{"description": "ok"}, {"description": "x\u{0}"}]}});
        let variables = Variables::from_json(nested);
        assert!(variables.iter().any(|(_, v)| const_has_control(v)));
        let clean = Variables::from_json(serde_json::json!({"id": "j-1", "n": 3, "notes": "a\nb"}));
        assert!(!clean.iter().any(|(_, v)| const_has_control(v)));
    }
}
