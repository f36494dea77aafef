//! Field records read straight from SQLite's values, by column position.
//!
//! sqlx decodes a record by its columns' names from an `AnyRow`, which the inline
//! connection would build for each row: a copy of every value and of the statement's column
//! list, then a lookup of each name. That was a sixth of an uncached API query's CPU on
//! SQLite (docs/performance.md). The field reads know their columns' order (each record's
//! column list), so each record here reads its fields in that order from SQLite's row, with
//! rusqlite's conversions. The names are still checked, once per statement at its first row
//! ([`names_match`]), so a column list out of step with its record is an error, not a
//! field filled from another column.

use rusqlite::types::{FromSql, FromSqlError};
use rusqlite::Row;

/// A record read from the columns of a row from a position on.
pub(crate) trait Positional: Sized {
    /// How many columns it reads.
    const WIDTH: usize;

    /// Its columns' names, in the order it reads them: `WIDTH` of them, or none for a
    /// tuple, which sqlx too reads by position.
    fn names(names: &mut Vec<&'static str>);

    /// The record from the row's columns `at..at + WIDTH`.
    fn read(row: &Row<'_>, at: usize) -> Result<Self, sqlx::Error>;
}

/// One column's value as `T`, refused as sqlx refuses a value it cannot decode.
pub(crate) fn column<T: FromSql>(row: &Row<'_>, index: usize) -> Result<T, sqlx::Error> {
    row.get(index).map_err(|error| match error {
        rusqlite::Error::FromSqlConversionFailure(_, _, source) => sqlx::Error::ColumnDecode {
            index: index.to_string(),
            source,
        },
        rusqlite::Error::InvalidColumnType(_, name, kind) => sqlx::Error::ColumnDecode {
            index: index.to_string(),
            source: format!("column {name:?} holds {kind}, not the record's type").into(),
        },
        rusqlite::Error::IntegralValueOutOfRange(_, _) => sqlx::Error::ColumnDecode {
            index: index.to_string(),
            source: "an integer out of the field's range".into(),
        },
        rusqlite::Error::InvalidColumnIndex(_) => sqlx::Error::ColumnIndexOutOfBounds {
            index,
            len: row.as_ref().column_count(),
        },
        other => sqlx::Error::Decode(Box::new(other)),
    })
}

/// Whether the statement has the record's columns from `at` on, by name.
pub(crate) fn names_match<T: Positional>(statement: &rusqlite::Statement<'_>, at: usize) -> bool {
    let mut names = Vec::with_capacity(T::WIDTH);
    T::names(&mut names);
    statement.column_count() >= at + T::WIDTH
        && names
            .iter()
            .enumerate()
            .all(|(i, name)| statement.column_name(at + i).is_ok_and(|c| c == *name))
}

/// A stored word read as its enum (`TryFrom<String>`), for [`FromSql`].
pub(crate) fn stored_word<T, E>(value: rusqlite::types::ValueRef<'_>) -> Result<T, FromSqlError>
where
    T: TryFrom<String, Error = E>,
    E: std::error::Error + Send + Sync + 'static,
{
    T::try_from(value.as_str()?.to_owned()).map_err(|error| FromSqlError::Other(Box::new(error)))
}

/// `Positional` for a record whose fields are its columns in order: `field` reads the column
/// of its own name, `field = "column"` another's, `field: Record` a nested record's columns.
macro_rules! positional {
    ($record:ident { $($field:ident $(= $column:literal)? $(: $nested:ty)?),+ $(,)? }) => {
        impl $crate::field::positional::Positional for $record {
            const WIDTH: usize = 0 $(+ positional!(@width $($nested)?))+;

            fn names(names: &mut Vec<&'static str>) {
                $(positional!(@name names, $field $(= $column)? $(: $nested)?);)+
            }

            // The last field's step past its column is not read.
            #[allow(unused_assignments)]
            fn read(row: &rusqlite::Row<'_>, at: usize) -> Result<Self, sqlx::Error> {
                let mut at = at;
                // Fields are evaluated in the order written, which is the columns' order.
                Ok($record {
                    $($field: positional!(@read row, at $(: $nested)?),)+
                })
            }
        }
    };
    (@width) => { 1 };
    (@width $nested:ty) => { <$nested as $crate::field::positional::Positional>::WIDTH };
    (@name $names:ident, $field:ident) => { $names.push(stringify!($field)) };
    (@name $names:ident, $field:ident = $column:literal) => { $names.push($column) };
    (@name $names:ident, $field:ident : $nested:ty) => {
        <$nested as $crate::field::positional::Positional>::names($names)
    };
    (@read $row:ident, $at:ident) => {{
        let value = $crate::field::positional::column($row, $at)?;
        $at += 1;
        value
    }};
    (@read $row:ident, $at:ident : $nested:ty) => {{
        let value = <$nested as $crate::field::positional::Positional>::read($row, $at)?;
        $at += <$nested as $crate::field::positional::Positional>::WIDTH;
        value
    }};
}

pub(crate) use positional;

/// A count's one column.
impl Positional for (i64,) {
    const WIDTH: usize = 1;

    fn names(_: &mut Vec<&'static str>) {}

    fn read(row: &Row<'_>, at: usize) -> Result<Self, sqlx::Error> {
        Ok((column(row, at)?,))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::{Employee, EmployeeRole};

    const EMPLOYEE: &str = "CREATE TABLE employees (employee_id TEXT, name TEXT, role TEXT, \
        email TEXT, phone TEXT, created_at BIGINT); \
        INSERT INTO employees VALUES ('e1', 'Ada', 'DISPATCHER', NULL, '555', 7)";

    fn read_all<T: Positional>(conn: &rusqlite::Connection, sql: &str) -> Result<Vec<T>, String> {
        let mut statement = conn.prepare(sql).map_err(|e| e.to_string())?;
        if !names_match::<T>(&statement, 0) {
            return Err("columns".to_owned());
        }
        let mut rows = statement.raw_query();
        let mut found = Vec::new();
        while let Some(row) = rows.next().map_err(|e| e.to_string())? {
            found.push(T::read(row, 0).map_err(|e| e.to_string())?);
        }
        Ok(found)
    }

    #[test]
    fn a_record_reads_its_columns_in_order() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(EMPLOYEE).unwrap();
        let read: Vec<Employee> = read_all(
            &conn,
            "SELECT employee_id, name, role, email, phone, created_at FROM employees",
        )
        .unwrap();
        assert_eq!(
            read,
            [Employee {
                employee_id: "e1".into(),
                name: "Ada".into(),
                role: EmployeeRole::Dispatcher,
                email: None,
                phone: Some("555".into()),
                created_at: 7,
            }]
        );
    }

    #[test]
    fn columns_out_of_the_records_order_are_refused() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(EMPLOYEE).unwrap();
        for sql in [
            "SELECT employee_id, role, name, email, phone, created_at FROM employees",
            "SELECT employee_id, name, role, email, phone FROM employees",
        ] {
            assert_eq!(
                read_all::<Employee>(&conn, sql).unwrap_err(),
                "columns",
                "{sql}"
            );
        }
    }

    #[test]
    fn a_value_of_another_type_or_word_is_a_decode_error() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(EMPLOYEE).unwrap();
        conn.execute_batch("UPDATE employees SET created_at = 'soon'")
            .unwrap();
        let sql = "SELECT employee_id, name, role, email, phone, created_at FROM employees";
        let error = read_all::<Employee>(&conn, sql).unwrap_err();
        assert!(
            error.contains("error occurred while decoding column 5"),
            "{error}"
        );
        conn.execute_batch("UPDATE employees SET created_at = 7, role = 'CHIEF'")
            .unwrap();
        let error = read_all::<Employee>(&conn, sql).unwrap_err();
        assert!(
            error.contains("column 2") && error.contains("CHIEF"),
            "{error}"
        );
    }
}
