//! Selection sets, fields, fragments, directives, arguments, variable definitions and types.

use async_graphql::parser::types::{
    Directive, Field, FragmentSpread, InlineFragment, Selection, SelectionSet, Type, TypeCondition,
    VariableDefinition,
};
use async_graphql::{Name, Pos, Positioned};
use async_graphql_value::Value;

use super::scanner::Scanner;
use super::values::{const_value, value};

/// Selection sets nested deeper than async-graphql allows (it refuses the document).
pub(super) const MAX_DEPTH: usize = 64;
/// List types nested deeper than this are left to async-graphql.
const MAX_TYPE_NESTING: usize = 32;

/// `{`, one selection or more, `}`. `depth` counts down to async-graphql's limit.
pub(super) fn selection_set(s: &mut Scanner<'_>, depth: usize) -> Option<Positioned<SelectionSet>> {
    let pos = s.pos()?;
    s.expect(b'{')?;
    let mut items = Vec::new();
    loop {
        items.push(selection(s, depth)?);
        if s.eat(b'}') {
            return Some(Positioned::new(SelectionSet { items }, pos));
        }
    }
}

/// A nested selection set, one level further down.
fn nested(s: &mut Scanner<'_>, depth: usize) -> Option<Positioned<SelectionSet>> {
    selection_set(s, depth.checked_sub(1)?)
}

fn selection(s: &mut Scanner<'_>, depth: usize) -> Option<Positioned<Selection>> {
    let pos = s.pos()?;
    let selection = if s.rest().starts_with(b"...") {
        s.at += 3;
        s.skip_ignored();
        fragment(s, depth, pos)?
    } else {
        Selection::Field(field(s, depth, pos)?)
    };
    Some(Positioned::new(selection, pos))
}

fn field(s: &mut Scanner<'_>, depth: usize, pos: Pos) -> Option<Positioned<Field>> {
    let first = s.name()?;
    let (alias, name) = if s.eat(b':') {
        (Some(first), s.name()?)
    } else {
        (None, first)
    };
    let arguments = arguments(s)?;
    let directives = directives(s)?;
    let selection_set = if s.peek() == Some(b'{') {
        nested(s, depth)?
    } else {
        Positioned::default()
    };
    Some(Positioned::new(
        Field {
            alias,
            name,
            arguments,
            directives,
            selection_set,
        },
        pos,
    ))
}

/// After `...`: an inline fragment (a type condition, directives or a selection set next)
/// or a fragment spread (a name). A spread of a fragment named `on` is left to async-graphql,
/// whose grammar tells it from a type condition by what follows.
fn fragment(s: &mut Scanner<'_>, depth: usize, pos: Pos) -> Option<Selection> {
    let inline = |s: &mut Scanner<'_>, type_condition| {
        let directives = directives(s)?;
        let selection_set = nested(s, depth)?;
        Some(Selection::InlineFragment(Positioned::new(
            InlineFragment {
                type_condition,
                directives,
                selection_set,
            },
            pos,
        )))
    };
    if s.at_type_condition() {
        let type_condition = type_condition(s)?;
        return inline(s, Some(type_condition));
    }
    match s.peek()? {
        b'{' | b'@' => inline(s, None),
        _ => {
            let fragment_name = s.name()?;
            if fragment_name.node.as_str() == "on" {
                return None;
            }
            let directives = directives(s)?;
            Some(Selection::FragmentSpread(Positioned::new(
                FragmentSpread {
                    fragment_name,
                    directives,
                },
                pos,
            )))
        }
    }
}

/// `on`, spaces, a type's name; only where `Scanner::at_type_condition` says one starts.
pub(super) fn type_condition(s: &mut Scanner<'_>) -> Option<Positioned<TypeCondition>> {
    if !s.at_type_condition() {
        return None;
    }
    let pos = s.pos()?;
    s.skip_on();
    let on = s.name()?;
    Some(Positioned::new(TypeCondition { on }, pos))
}

/// `@name(arguments)`, as many as there are.
pub(super) fn directives(s: &mut Scanner<'_>) -> Option<Vec<Positioned<Directive>>> {
    let mut directives = Vec::new();
    while s.peek() == Some(b'@') {
        let pos = s.pos()?;
        s.bump();
        s.skip_ignored();
        let name = s.name()?;
        let arguments = arguments(s)?;
        directives.push(Positioned::new(Directive { name, arguments }, pos));
    }
    Some(directives)
}

/// `(name: value, ...)`, at least one, or nothing when no `(` follows.
fn arguments(s: &mut Scanner<'_>) -> Option<Vec<(Positioned<Name>, Positioned<Value>)>> {
    let mut arguments = Vec::new();
    if !s.eat(b'(') {
        return Some(arguments);
    }
    loop {
        let name = s.name()?;
        s.expect(b':')?;
        arguments.push((name, value(s)?));
        if s.eat(b')') {
            return Some(arguments);
        }
    }
}

/// `($name: Type @directives = default, ...)`, possibly empty.
pub(super) fn variable_definitions(
    s: &mut Scanner<'_>,
) -> Option<Vec<Positioned<VariableDefinition>>> {
    let mut definitions = Vec::new();
    if !s.eat(b'(') {
        return Some(definitions);
    }
    while !s.eat(b')') {
        let pos = s.pos()?;
        s.expect(b'$')?;
        let name = s.name()?;
        s.expect(b':')?;
        let var_type = var_type(s)?;
        let directives = directives(s)?;
        let default_value = if s.eat(b'=') {
            Some(const_value(s)?)
        } else {
            None
        };
        definitions.push(Positioned::new(
            VariableDefinition {
                name,
                var_type,
                directives,
                default_value,
            },
            pos,
        ));
    }
    Some(definitions)
}

/// A type with no space inside it (`[Int!]!`), read by async-graphql's own `Type::new`.
fn var_type(s: &mut Scanner<'_>) -> Option<Positioned<Type>> {
    let pos = s.pos()?;
    let start = s.at;
    type_text(s, 0)?;
    let ty = Type::new(s.text(start, s.at)?)?;
    s.skip_ignored();
    Some(Positioned::new(ty, pos))
}

fn type_text(s: &mut Scanner<'_>, nesting: usize) -> Option<()> {
    if s.peek() == Some(b'[') {
        if nesting >= MAX_TYPE_NESTING {
            return None;
        }
        s.bump();
        type_text(s, nesting + 1)?;
        if s.peek() != Some(b']') {
            return None;
        }
        s.bump();
    } else {
        s.word()?;
    }
    if s.peek() == Some(b'!') {
        s.bump();
    }
    Some(())
}
