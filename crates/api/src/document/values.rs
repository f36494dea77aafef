//! Argument and default values: variables, numbers, strings, booleans, null, enum values,
//! lists and objects.

use async_graphql::indexmap::IndexMap;
use async_graphql::{Name, Number, Positioned};
use async_graphql_value::{ConstValue, Value};

use super::scanner::{is_name_start, Scanner};

/// Lists and objects nested deeper than this are left to async-graphql.
const MAX_NESTING: usize = 32;

pub(super) fn value(s: &mut Scanner<'_>) -> Option<Positioned<Value>> {
    let pos = s.pos()?;
    Some(Positioned::new(node(s, false, 0)?, pos))
}

/// A default value: no variable in it.
pub(super) fn const_value(s: &mut Scanner<'_>) -> Option<Positioned<ConstValue>> {
    let pos = s.pos()?;
    Some(Positioned::new(node(s, true, 0)?.into_const()?, pos))
}

fn node(s: &mut Scanner<'_>, constant: bool, depth: usize) -> Option<Value> {
    if depth > MAX_NESTING {
        return None;
    }
    Some(match s.peek()? {
        b'$' if !constant => {
            s.bump();
            s.skip_ignored();
            let word = s.word()?;
            s.skip_ignored();
            Value::Variable(Name::new(word))
        }
        b'-' | b'0'..=b'9' => Value::Number(number(s)?),
        b'"' => Value::String(string(s)?),
        b'[' => {
            s.bump();
            s.skip_ignored();
            let mut items = Vec::new();
            while !s.eat(b']') {
                items.push(node(s, constant, depth + 1)?);
            }
            Value::List(items)
        }
        b'{' => {
            s.bump();
            s.skip_ignored();
            // A key given twice keeps its first place and its last value, as collecting
            // into the map does in async-graphql.
            let mut fields = IndexMap::new();
            while !s.eat(b'}') {
                let key = s.word()?;
                s.skip_ignored();
                s.expect(b':')?;
                fields.insert(Name::new(key), node(s, constant, depth + 1)?);
            }
            Value::Object(fields)
        }
        _ => {
            let word = s.word()?;
            s.skip_ignored();
            match word {
                "true" => Value::Boolean(true),
                "false" => Value::Boolean(false),
                "null" => Value::Null,
                // async-graphql's grammar reads `nullable` as `null` then `able`.
                _ if ["true", "false", "null"]
                    .iter()
                    .any(|w| word.starts_with(w)) =>
                {
                    return None
                }
                _ => Value::Enum(Name::new(word)),
            }
        }
    })
}

/// `-`? then `0` or a digit string without a leading zero, then a fraction and an exponent,
/// each optional; no name may follow at once. Read by the same `Number` parse async-graphql
/// uses. Anything else (`1.`, `1e`, `0123`, `1.5.2`) is left to it.
fn number(s: &mut Scanner<'_>) -> Option<Number> {
    let start = s.at;
    if s.peek() == Some(b'-') {
        s.bump();
    }
    match s.peek()? {
        b'0' => {
            s.bump();
            if s.peek().is_some_and(|b| b.is_ascii_digit()) {
                return None;
            }
        }
        b'1'..=b'9' => digits(s),
        _ => return None,
    }
    if s.peek() == Some(b'.') {
        s.bump();
        if !s.peek().is_some_and(|b| b.is_ascii_digit()) {
            return None;
        }
        digits(s);
    }
    if matches!(s.peek(), Some(b'e' | b'E')) {
        s.bump();
        if matches!(s.peek(), Some(b'+' | b'-')) {
            s.bump();
        }
        if !s.peek().is_some_and(|b| b.is_ascii_digit()) {
            return None;
        }
        digits(s);
    }
    if s.peek().is_some_and(|b| is_name_start(b) || b == b'.') {
        return None;
    }
    let text = s.text(start, s.at)?;
    s.skip_ignored();
    text.parse().ok()
}

fn digits(s: &mut Scanner<'_>) {
    while s.peek().is_some_and(|b| b.is_ascii_digit()) {
        s.bump();
    }
}

/// A quoted string on one line, with its escapes. A block string (`"""`) is left to
/// async-graphql, as is a `\u` escape of a surrogate, which its grammar refuses.
fn string(s: &mut Scanner<'_>) -> Option<String> {
    if s.rest().starts_with(b"\"\"\"") {
        return None;
    }
    s.bump();
    let mut out = String::new();
    let mut run = s.at;
    loop {
        match s.peek()? {
            b'"' => {
                out.push_str(s.text(run, s.at)?);
                s.bump();
                break;
            }
            b'\\' => {
                out.push_str(s.text(run, s.at)?);
                s.bump();
                out.push(escape(s)?);
                run = s.at;
            }
            b'\n' | b'\r' => return None,
            _ => s.bump(),
        }
    }
    s.skip_ignored();
    Some(out)
}

/// The character an escape after its `\` stands for.
fn escape(s: &mut Scanner<'_>) -> Option<char> {
    let c = match s.peek()? {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\x08',
        b'f' => '\x0c',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => {
            let hex = s.rest().get(1..5)?;
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            let code = u32::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?;
            if (0xD800..=0xDFFF).contains(&code) {
                return None;
            }
            s.at += 4;
            char::from_u32(code)?
        }
        _ => return None,
    };
    s.bump();
    Some(c)
}
