//! A GraphQL response's body, written value by value.
//!
//! Most of a query's answer is strings (ids, names, dates) that need no escaping, and
//! serde_json looks each of their bytes up to see whether they do: 111,000 instructions of
//! an uncached 20-job query, 6% of it (docs/performance.md). An answer without errors or
//! extensions (`{"data":…}`) is written here, a string as it is when none of its bytes needs
//! escaping ([`jose::write_json_string`]); the bytes are serde_json's either way, which a
//! test compares. Anything else goes through serde_json.

use async_graphql::{Response, Value};

/// The JSON `serde_json::to_vec` gives for `response`.
pub fn to_json(response: &Response) -> Result<Vec<u8>, serde_json::Error> {
    if !response.errors.is_empty() || !response.extensions.is_empty() {
        return serde_json::to_vec(response);
    }
    let mut out = Vec::with_capacity(4096);
    out.extend_from_slice(b"{\"data\":");
    value(&mut out, &response.data)?;
    out.push(b'}');
    Ok(out)
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
        // Numbers in serde_json's own form; bytes (never in this schema) as serde writes them.
        Value::Number(_) | Value::Binary(_) => serde_json::to_writer(&mut *out, value_)?,
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
}
