//! A GraphQL response's body, written value by value.
//!
//! Most of a query's answer is strings (ids, names, dates) that need no escaping, and
//! serde_json looks each of their bytes up to see whether they do: 111,000 instructions of
//! an uncached 20-job query, 6% of it (docs/performance.md). The data is written here, a
//! string as it is when none of its bytes needs escaping ([`jose::write_json_string`]); the
//! bytes are serde_json's either way, which a test compares. Errors and extensions follow,
//! written by serde_json.
//!
//! A plain record's answer may be its JSON already ([`WrittenObject`], for requests whose
//! answers are never merged, `schema::plain`): it travels through async-graphql as bytes,
//! which this schema has no other use for, and is written here as it is.

use async_graphql::{Response, Value};
use axum::body::Bytes;

/// The first byte of an answer written by [`WrittenObject`]: bytes that are not JSON (no
/// JSON text starts with it) and that nothing else in this schema makes.
const WRITTEN: u8 = 0xff;

/// The JSON `serde_json::to_vec` gives for `response`, with answers written already in
/// their place.
pub fn to_json(response: &Response) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = Vec::with_capacity(4096);
    out.extend_from_slice(b"{\"data\":");
    value(&mut out, &response.data)?;
    // In async-graphql's order and with its rules: each only when it has something.
    if !response.extensions.is_empty() {
        out.extend_from_slice(b",\"extensions\":");
        serde_json::to_writer(&mut out, &response.extensions)?;
    }
    if !response.errors.is_empty() {
        out.extend_from_slice(b",\"errors\":");
        serde_json::to_writer(&mut out, &response.errors)?;
    }
    out.push(b'}');
    Ok(out)
}

/// An object's JSON, written field by field in its keys' order as the answers come, as
/// [`to_json`] would write the object; [`to_json`] writes it where it stands in the
/// response.
pub struct WrittenObject<'k> {
    out: Vec<u8>,
    /// The place of the next field to write; fields answered before it are held.
    next: usize,
    fields: usize,
    held: Vec<(usize, &'k str, Option<Value>)>,
    error: Option<serde_json::Error>,
}

impl<'k> WrittenObject<'k> {
    /// An object of `fields` fields, all to be given to [`WrittenObject::field`].
    pub fn new(fields: usize) -> WrittenObject<'k> {
        // Room for most answers' fields (an id, a name, a time, a nested record): a growing
        // object is moved each time it outgrows its allocation.
        let mut out = Vec::with_capacity(64 + 64 * fields);
        out.extend_from_slice(&[WRITTEN, b'{']);
        WrittenObject {
            out,
            next: 0,
            fields: 0,
            held: Vec::new(),
            error: None,
        }
    }

    /// The answer of the field at place `i`, `None` to leave it out (it failed).
    pub fn field(&mut self, i: usize, name: &'k str, answer: Option<Value>) {
        if i != self.next {
            self.held.push((i, name, answer));
            return;
        }
        self.write(name, answer);
        self.write_held();
    }

    /// The answer of the field at place `i`, a string or null, written from where it is
    /// when its turn has come (else held as a value).
    pub fn text(&mut self, i: usize, name: &'k str, text: Option<&str>) {
        if i != self.next {
            let answer = text.map_or(Value::Null, |text| Value::String(text.to_owned()));
            self.held.push((i, name, Some(answer)));
            return;
        }
        self.next += 1;
        self.key(name);
        let written = match text {
            Some(text) => jose::write_json_string(&mut self.out, text),
            None => {
                self.out.extend_from_slice(b"null");
                Ok(())
            }
        };
        if let Err(error) = written {
            self.error.get_or_insert(error);
        }
        self.write_held();
    }

    /// The held answers whose turn has come.
    fn write_held(&mut self) {
        while let Some(at) = self.held.iter().position(|(i, ..)| *i == self.next) {
            let (_, name, answer) = self.held.swap_remove(at);
            self.write(name, answer);
        }
    }

    /// A field's key and its colon, after a comma when it is not the first.
    fn key(&mut self, name: &str) {
        if self.fields > 0 {
            self.out.push(b',');
        }
        self.fields += 1;
        if let Err(error) = jose::write_json_string(&mut self.out, name) {
            self.error.get_or_insert(error);
        }
        self.out.push(b':');
    }

    fn write(&mut self, name: &str, answer: Option<Value>) {
        self.next += 1;
        let Some(answer) = answer else {
            return;
        };
        self.key(name);
        if let Err(error) = value(&mut self.out, &answer) {
            self.error.get_or_insert(error);
        }
    }

    /// The object, or null when every field was left out (as async-graphql answers it).
    pub fn finish(mut self) -> Result<Value, serde_json::Error> {
        // Fields never given (none, when used as told) are written in their order.
        if !self.held.is_empty() {
            self.held.sort_unstable_by_key(|(i, ..)| *i);
            for (_, name, answer) in std::mem::take(&mut self.held) {
                self.write(name, answer);
            }
        }
        if let Some(error) = self.error {
            return Err(error);
        }
        if self.fields == 0 {
            return Ok(Value::Null);
        }
        self.out.push(b'}');
        // A boxed slice becomes `Bytes` without another allocation, which a `Vec` with room
        // to spare needs; mimalloc shrinks an allocation in place down to half its size, and
        // moves it below that.
        let bytes = match self.out.len() * 2 > self.out.capacity() {
            true => Bytes::from(self.out.into_boxed_slice()),
            false => Bytes::from(self.out),
        };
        Ok(Value::Binary(bytes))
    }
}

fn value(out: &mut Vec<u8>, value_: &Value) -> Result<(), serde_json::Error> {
    match value_ {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Boolean(true) => out.extend_from_slice(b"true"),
        Value::Boolean(false) => out.extend_from_slice(b"false"),
        Value::String(text) => jose::write_json_string(out, text)?,
        Value::Enum(name) => jose::write_json_string(out, name)?,
        Value::List(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                value(out, item)?;
            }
            out.push(b']');
        }
        Value::Object(fields) => {
            out.push(b'{');
            for (i, (name, field)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                jose::write_json_string(out, name)?;
                out.push(b':');
                value(out, field)?;
            }
            out.push(b'}');
        }
        Value::Binary(bytes) => match bytes.split_first() {
            Some((&WRITTEN, json)) => out.extend_from_slice(json),
            // Bytes of some other origin (none in this schema) as serde writes them.
            _ => serde_json::to_writer(&mut *out, value_)?,
        },
        // Numbers in serde_json's own form.
        Value::Number(_) => serde_json::to_writer(&mut *out, value_)?,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use async_graphql::indexmap::IndexMap;
    use async_graphql::{Name, Number, ServerError};

    use super::*;

    fn object(fields: Vec<(&str, Value)>) -> Value {
        Value::Object(
            fields
                .into_iter()
                .map(|(name, value)| (Name::new(name), value))
                .collect::<IndexMap<_, _>>(),
        )
    }

    fn data() -> Value {
        object(vec![(
            "jobs",
            object(vec![
                (
                    "nodes",
                    Value::List(vec![
                        object(vec![
                            ("id", Value::String("job_01J8Z".into())),
                            ("title", Value::String("Fix the \"boiler\"\n\tnow".into())),
                            ("status", Value::Enum(Name::new("SCHEDULED"))),
                            ("notes", Value::Null),
                            ("city", Value::String("Zürich \u{1}\u{7f}\u{2028}".into())),
                        ]),
                        object(vec![
                            ("done", Value::Boolean(true)),
                            ("late", Value::Boolean(false)),
                            ("count", Value::Number(Number::from(-42))),
                            ("big", Value::Number(Number::from(u64::MAX))),
                            ("ratio", Value::Number(Number::from_f64(0.1).unwrap())),
                            ("bytes", Value::Binary(vec![0, 255].into())),
                        ]),
                    ]),
                ),
                ("empty", Value::List(Vec::new())),
                ("nothing", object(Vec::new())),
                ("back\\slash \"key\"", Value::String(String::new())),
            ]),
        )])
    }

    #[test]
    fn the_body_is_serde_jsons_for_every_kind_of_value() {
        for data in [data(), Value::Null, object(Vec::new())] {
            let response = Response::new(data);
            assert_eq!(
                String::from_utf8(to_json(&response).unwrap()).unwrap(),
                serde_json::to_string(&response).unwrap()
            );
        }
    }

    #[test]
    fn errors_and_extensions_go_through_serde_json() {
        let mut with_error = Response::new(data());
        with_error.errors.push(ServerError::new("refused", None));
        let mut with_extension = Response::new(data());
        with_extension
            .extensions
            .insert("cost".to_owned(), Value::Number(Number::from(3)));
        for response in [with_error, with_extension] {
            assert_eq!(
                to_json(&response).unwrap(),
                serde_json::to_vec(&response).unwrap()
            );
        }
    }

    /// Fields given out of order, one left out, a written object inside a list: the bytes
    /// of the same object built as async-graphql's.
    #[test]
    fn a_written_object_is_the_objects_json() {
        let written = |fields: Vec<(usize, &'static str, Option<Value>)>| {
            let mut object = WrittenObject::new(fields.len());
            for (i, name, answer) in fields {
                object.field(i, name, answer);
            }
            object.finish().unwrap()
        };
        let inner = written(vec![
            (1, "name", Some(Value::String("Zürich \"9\"".into()))),
            (0, "id", Some(Value::String("e_1".into()))),
        ]);
        assert!(matches!(inner, Value::Binary(_)));
        let outer = written(vec![
            (2, "kids", Some(Value::List(vec![inner, Value::Null]))),
            (0, "n", Some(Value::Number(Number::from(7)))),
            (1, "odd", None),
            (3, "status", Some(Value::Enum(Name::new("DONE")))),
        ]);
        let expected = object(vec![
            ("n", Value::Number(Number::from(7))),
            (
                "kids",
                Value::List(vec![
                    object(vec![
                        ("id", Value::String("e_1".into())),
                        ("name", Value::String("Zürich \"9\"".into())),
                    ]),
                    Value::Null,
                ]),
            ),
            ("status", Value::Enum(Name::new("DONE"))),
        ]);
        let mut with_error = Response::new(outer);
        with_error.errors.push(ServerError::new("refused", None));
        let mut objects = Response::new(expected);
        objects.errors.push(ServerError::new("refused", None));
        assert_eq!(
            String::from_utf8(to_json(&with_error).unwrap()).unwrap(),
            serde_json::to_string(&objects).unwrap()
        );
        assert_eq!(written(vec![(0, "odd", None)]), Value::Null);
    }
}
