//! Statements assembled at run time (filters, `IN` lists, pages) with numbered placeholders,
//! which both dialects accept, and every value bound, never spliced into the text.

use std::borrow::Cow;
use std::fmt::Write;

use sqlx::any::{AnyArguments, AnyRow};
use sqlx::postgres::PgArguments;
use sqlx::query::{Query, QueryAs};
use sqlx::Arguments;
use sqlx::{Any, FromRow};
use sqlx_core::any::{AnyTypeInfoKind, AnyValueKind};

#[derive(Clone, Debug)]
pub(crate) enum Value {
    Text(Option<String>),
    Int(Option<i64>),
}

impl From<&str> for Value {
    fn from(value: &str) -> Value {
        Value::Text(Some(value.to_owned()))
    }
}

impl From<String> for Value {
    fn from(value: String) -> Value {
        Value::Text(Some(value))
    }
}

impl From<Option<&str>> for Value {
    fn from(value: Option<&str>) -> Value {
        Value::Text(value.map(str::to_owned))
    }
}

impl From<i64> for Value {
    fn from(value: i64) -> Value {
        Value::Int(Some(value))
    }
}

impl From<Option<i64>> for Value {
    fn from(value: Option<i64>) -> Value {
        Value::Int(value)
    }
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Sql {
    text: String,
    values: Vec<Value>,
}

impl Sql {
    pub(crate) fn new(text: &str) -> Sql {
        Sql {
            text: text.to_owned(),
            values: Vec::new(),
        }
    }

    /// `text` before the statement so far (a select before its filter, a statement around
    /// another as its subquery); the values stay as they are numbered.
    pub(crate) fn prepend(mut self, text: &str) -> Sql {
        self.text.insert_str(0, text);
        self
    }

    pub(crate) fn push(&mut self, text: &str) -> &mut Sql {
        self.text.push_str(text);
        self
    }

    pub(crate) fn bind(&mut self, value: impl Into<Value>) -> &mut Sql {
        self.values.push(value.into());
        // Writing to a String cannot fail.
        let _ = write!(self.text, "${}", self.values.len());
        self
    }

    /// `($n, $n+1, …)` for an `IN` list; callers never pass an empty list.
    pub(crate) fn bind_list(&mut self, values: &[String]) -> &mut Sql {
        self.text.push('(');
        for (i, value) in values.iter().enumerate() {
            if i > 0 {
                self.text.push_str(", ");
            }
            self.bind(value.as_str());
        }
        self.text.push(')');
        self
    }

    /// The text so far, and its values: another statement may repeat a part of it with the
    /// same numbered placeholders (a count of the same filter), since both dialects bind a
    /// number used twice once.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    pub(crate) fn query_as<T>(&self) -> QueryAs<'_, Any, T, AnyArguments<'_>>
    where
        T: for<'r> FromRow<'r, AnyRow>,
    {
        self.values
            .iter()
            .fold(sqlx::query_as(&self.text), |query, value| match value {
                Value::Text(v) => query.bind(v.clone()),
                Value::Int(v) => query.bind(*v),
            })
    }

    /// The values as sqlx's PostgreSQL driver takes them ([`crate::pool::Pool::postgres_rows`]).
    pub(crate) fn postgres_arguments(&self) -> Result<PgArguments, sqlx::Error> {
        let mut arguments = PgArguments::default();
        for value in &self.values {
            match value {
                Value::Text(v) => arguments.add(v.clone()),
                Value::Int(v) => arguments.add(*v),
            }
            .map_err(sqlx::Error::Encode)?;
        }
        Ok(arguments)
    }

    /// The values as the inline SQLite connection binds them
    /// ([`crate::pool::Pool::sqlite_rows`]), borrowed.
    pub(crate) fn sqlite_values(&self) -> Vec<AnyValueKind<'_>> {
        self.values
            .iter()
            .map(|value| match value {
                Value::Text(Some(text)) => AnyValueKind::Text(Cow::Borrowed(text)),
                Value::Text(None) => AnyValueKind::Null(AnyTypeInfoKind::Text),
                Value::Int(Some(int)) => AnyValueKind::BigInt(*int),
                Value::Int(None) => AnyValueKind::Null(AnyTypeInfoKind::BigInt),
            })
            .collect()
    }

    /// The statement's rows as they come, for rows that hold more than one record.
    pub(crate) fn query(&self) -> Query<'_, Any, AnyArguments<'_>> {
        self.values
            .iter()
            .fold(sqlx::query(&self.text), |query, value| match value {
                Value::Text(v) => query.bind(v.clone()),
                Value::Int(v) => query.bind(*v),
            })
    }
}

/// Batches of ids for `IN` lists, kept well under SQLite's limit on bound values.
pub(crate) const IN_LIST_CHUNK: usize = 500;
