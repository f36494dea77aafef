//! Field records read straight from a row's values, by column position.
//!
//! sqlx decodes a record by its columns' names: from an `AnyRow`, which the inline SQLite
//! connection would build for each row (a copy of every value and of the statement's column
//! list), or from a `PgRow`, looking up each name. That was a sixth of an uncached API
//! query's CPU on SQLite (docs/performance.md). The field reads know their columns' order
//! (each record's column list), so each record here reads its fields in that order, from
//! SQLite's row (rusqlite's) or PostgreSQL's (sqlx's). The names are still checked, once per
//! statement at its first row ([`names_match`]), so a column list out of step with its
//! record is an error, not a field filled from another column.

use sqlx::any::AnyRow;
use sqlx::error::UnexpectedNullError;
use sqlx::postgres::PgRow;
use sqlx::{Decode, Postgres, Row as _, TypeInfo as _, ValueRef as _};

/// A row whose columns are read by position: SQLite's or PostgreSQL's.
pub(crate) trait Columns {
    fn column_count(&self) -> usize;

    fn column_name(&self, index: usize) -> Option<&str>;

    /// A text column's value; `None` for NULL.
    fn text(&self, index: usize) -> Result<Option<&str>, sqlx::Error>;

    /// An integer column's value; `None` for NULL.
    fn int(&self, index: usize) -> Result<Option<i64>, sqlx::Error>;

    /// Whether a column's value is NULL, whatever its type.
    fn is_null(&self, index: usize) -> Result<bool, sqlx::Error>;
}

/// A record read from the columns of a row from a position on.
pub(crate) trait Positional: Sized {
    /// How many columns it reads.
    const WIDTH: usize;

    /// Its columns' names, in the order it reads them: `WIDTH` of them, or none for a
    /// tuple, which sqlx too reads by position.
    fn names(names: &mut Vec<&'static str>);

    /// The record from the row's columns `at..at + WIDTH`.
    fn read(row: &impl Columns, at: usize) -> Result<Self, sqlx::Error>;
}

/// A field's value from one column.
pub(crate) trait Column: Sized {
    fn read(row: &impl Columns, index: usize) -> Result<Self, sqlx::Error>;
}

/// One column's value as `T`.
pub(crate) fn column<T: Column>(row: &impl Columns, index: usize) -> Result<T, sqlx::Error> {
    T::read(row, index)
}

impl Column for Option<String> {
    fn read(row: &impl Columns, index: usize) -> Result<Self, sqlx::Error> {
        Ok(row.text(index)?.map(str::to_owned))
    }
}

impl Column for String {
    fn read(row: &impl Columns, index: usize) -> Result<Self, sqlx::Error> {
        Option::<String>::read(row, index)?.ok_or_else(|| unexpected_null(index))
    }
}

impl Column for Option<i64> {
    fn read(row: &impl Columns, index: usize) -> Result<Self, sqlx::Error> {
        row.int(index)
    }
}

impl Column for i64 {
    fn read(row: &impl Columns, index: usize) -> Result<Self, sqlx::Error> {
        row.int(index)?.ok_or_else(|| unexpected_null(index))
    }
}

/// A stored word read as the enum value it names, read in place: no `String` a row.
pub(crate) fn stored_word<T, E>(
    row: &impl Columns,
    index: usize,
    from_word: fn(&str) -> Result<T, E>,
) -> Result<T, sqlx::Error>
where
    E: std::error::Error + Send + Sync + 'static,
{
    let word = row.text(index)?.ok_or_else(|| unexpected_null(index))?;
    from_word(word).map_err(|error| decode_error(index, error))
}

/// Whether the row has the record's columns from `at` on, by name.
pub(crate) fn names_match<T: Positional>(row: &impl Columns, at: usize) -> bool {
    let mut names = Vec::with_capacity(T::WIDTH);
    T::names(&mut names);
    row.column_count() >= at + T::WIDTH
        && names
            .iter()
            .enumerate()
            .all(|(i, name)| row.column_name(at + i) == Some(*name))
}

/// A record from a row's first columns, checked by name first: for a record whose row holds
/// columns of the same name twice (two joined records'), which sqlx's reads by name would take
/// from the first of them.
pub(crate) fn read_checked<T: Positional>(row: &impl Columns) -> Result<T, sqlx::Error> {
    if !names_match::<T>(row, 0) {
        return Err(not_its_columns::<T>());
    }
    T::read(row, 0)
}

/// The error of a statement whose columns are not a `T`'s.
pub(crate) fn not_its_columns<T>() -> sqlx::Error {
    sqlx::Error::Protocol(format!(
        "the statement's columns are not those of a {}",
        std::any::type_name::<T>()
    ))
}

fn decode_error(
    index: usize,
    source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
) -> sqlx::Error {
    sqlx::Error::ColumnDecode {
        index: index.to_string(),
        source: source.into(),
    }
}

fn unexpected_null(index: usize) -> sqlx::Error {
    decode_error(index, UnexpectedNullError)
}

fn out_of_bounds(index: usize, len: usize) -> sqlx::Error {
    sqlx::Error::ColumnIndexOutOfBounds { index, len }
}

impl Columns for rusqlite::Row<'_> {
    fn column_count(&self) -> usize {
        self.as_ref().column_count()
    }

    fn column_name(&self, index: usize) -> Option<&str> {
        self.as_ref().column_name(index).ok()
    }

    fn text(&self, index: usize) -> Result<Option<&str>, sqlx::Error> {
        use rusqlite::types::ValueRef;
        match self.get_ref(index) {
            Ok(ValueRef::Null) => Ok(None),
            Ok(ValueRef::Text(bytes)) => std::str::from_utf8(bytes)
                .map(Some)
                .map_err(|error| decode_error(index, error)),
            Ok(other) => Err(decode_error(
                index,
                format!("the column holds {}, not text", other.data_type()),
            )),
            Err(_) => Err(out_of_bounds(index, Columns::column_count(self))),
        }
    }

    fn int(&self, index: usize) -> Result<Option<i64>, sqlx::Error> {
        use rusqlite::types::ValueRef;
        match self.get_ref(index) {
            Ok(ValueRef::Null) => Ok(None),
            Ok(ValueRef::Integer(int)) => Ok(Some(int)),
            Ok(other) => Err(decode_error(
                index,
                format!("the column holds {}, not an integer", other.data_type()),
            )),
            Err(_) => Err(out_of_bounds(index, Columns::column_count(self))),
        }
    }

    fn is_null(&self, index: usize) -> Result<bool, sqlx::Error> {
        match self.get_ref(index) {
            Ok(value) => Ok(matches!(value, rusqlite::types::ValueRef::Null)),
            Err(_) => Err(out_of_bounds(index, Columns::column_count(self))),
        }
    }
}

impl Columns for PgRow {
    fn column_count(&self) -> usize {
        self.len()
    }

    fn column_name(&self, index: usize) -> Option<&str> {
        use sqlx::Column as _;
        self.columns().get(index).map(|column| column.name())
    }

    fn text(&self, index: usize) -> Result<Option<&str>, sqlx::Error> {
        pg_value::<&str>(self, index, PG_TEXT, "text")
    }

    fn int(&self, index: usize) -> Result<Option<i64>, sqlx::Error> {
        pg_value::<i64>(self, index, PG_INT8, "bigint")
    }

    fn is_null(&self, index: usize) -> Result<bool, sqlx::Error> {
        Ok(self.try_get_raw(index)?.is_null())
    }
}

/// sqlx's rows of any database: those of the reads that go through its executor (an SQLite
/// database in memory, or a read that waits for another process's lock).
impl Columns for AnyRow {
    fn column_count(&self) -> usize {
        self.len()
    }

    fn column_name(&self, index: usize) -> Option<&str> {
        use sqlx::Column as _;
        self.columns().get(index).map(|column| column.name())
    }

    fn text(&self, index: usize) -> Result<Option<&str>, sqlx::Error> {
        self.try_get(index)
    }

    fn int(&self, index: usize) -> Result<Option<i64>, sqlx::Error> {
        self.try_get(index)
    }

    fn is_null(&self, index: usize) -> Result<bool, sqlx::Error> {
        Ok(self.try_get_raw(index)?.is_null())
    }
}

/// The built-in types (their OIDs, `pg_type.dat`) a text field is read from: `text`,
/// `varchar`, `bpchar` and `name`, those of sqlx's `&str` but `unknown` (a literal never cast)
/// and `citext` (an extension's, none of our columns).
const PG_TEXT: &[u32] = &[25, 1043, 1042, 19];
/// `bigint`, the one type of sqlx's `i64`.
const PG_INT8: &[u32] = &[20];

/// A PostgreSQL value as `T`, its type checked first as sqlx's `try_get` checks it (a value
/// of another type would decode to nonsense from its binary form), by the column's OID: sqlx's
/// own check compares its type with each accepted type's description in turn, which was a
/// third of what reading a text value cost (docs/performance.md).
fn pg_value<'r, T>(
    row: &'r PgRow,
    index: usize,
    accepted: &[u32],
    wanted: &str,
) -> Result<Option<T>, sqlx::Error>
where
    T: Decode<'r, Postgres>,
{
    let value = row.try_get_raw(index)?;
    if value.is_null() {
        return Ok(None);
    }
    let kind = value.type_info();
    if !kind.oid().is_some_and(|oid| accepted.contains(&oid.0)) {
        let message = format!("the column holds {}, not {wanted}", kind.name());
        return Err(decode_error(index, message));
    }
    T::decode(value)
        .map(Some)
        .map_err(|error| decode_error(index, error))
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
            fn read(
                row: &impl $crate::field::positional::Columns,
                at: usize,
            ) -> Result<Self, sqlx::Error> {
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

/// The record of a `LEFT JOIN`'s other side: none when the join found no row, which leaves
/// every column of it NULL. Its first column is its key, NULL in no row of its own.
impl<T: Positional> Positional for Option<T> {
    const WIDTH: usize = T::WIDTH;

    fn names(names: &mut Vec<&'static str>) {
        T::names(names);
    }

    fn read(row: &impl Columns, at: usize) -> Result<Self, sqlx::Error> {
        match row.is_null(at)? {
            true => Ok(None),
            false => T::read(row, at).map(Some),
        }
    }
}

/// A count's one column.
impl Positional for (i64,) {
    const WIDTH: usize = 1;

    fn names(_: &mut Vec<&'static str>) {}

    fn read(row: &impl Columns, at: usize) -> Result<Self, sqlx::Error> {
        Ok((column(row, at)?,))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::{Employee, EmployeeRole};
    use sqlx::postgres::PgRow;

    const EMPLOYEE: &str = "CREATE TABLE employees (employee_id TEXT, name TEXT, role TEXT, \
        email TEXT, phone TEXT, created_at BIGINT); \
        INSERT INTO employees VALUES ('e1', 'Ada', 'DISPATCHER', NULL, '555', 7)";

    /// The one employee both tables' rows hold.
    fn ada() -> Employee {
        Employee {
            employee_id: "e1".into(),
            name: "Ada".into(),
            role: EmployeeRole::Dispatcher,
            email: None,
            phone: Some("555".into()),
            created_at: 7,
        }
    }

    fn read_all<T: Positional>(conn: &rusqlite::Connection, sql: &str) -> Result<Vec<T>, String> {
        let mut statement = conn.prepare(sql).map_err(|e| e.to_string())?;
        let mut rows = statement.raw_query();
        let mut found = Vec::new();
        while let Some(row) = rows.next().map_err(|e| e.to_string())? {
            if found.is_empty() && !names_match::<T>(row, 0) {
                return Err("columns".to_owned());
            }
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
        assert_eq!(read, [ada()]);
    }

    /// A `LEFT JOIN`'s record: none where the join found no row (every column NULL), the
    /// record where it found one, even with NULLs among its other columns.
    #[test]
    fn an_optional_record_is_none_where_its_key_is_null() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(EMPLOYEE).unwrap();
        let sql = "SELECT e.employee_id, e.name, e.role, e.email, e.phone, e.created_at \
            FROM (SELECT 'e1' AS id UNION ALL SELECT 'e2') k \
            LEFT JOIN employees e ON e.employee_id = k.id ORDER BY k.id";
        let read: Vec<Option<Employee>> = read_all(&conn, sql).unwrap();
        assert_eq!(read, [Some(ada()), None]);
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

    /// PostgreSQL's values come in their binary form, so a value of another type must be
    /// refused by its type, not decoded: eight bytes of text would make an integer.
    #[tokio::test]
    async fn a_postgres_row_is_read_by_position_and_each_type_checked() {
        use sqlx::Connection as _;
        let Some(db) = crate::testing::TestDatabase::postgres().await else {
            return;
        };
        let mut conn = sqlx::PgConnection::connect(&db.url).await.unwrap();
        let select = |created_at: &str, role: &str| {
            format!(
                "SELECT 'e1'::text AS employee_id, 'Ada'::text AS name, {role} AS role, \
                 NULL::text AS email, '555'::text AS phone, {created_at} AS created_at"
            )
        };
        let read = |rows: Vec<PgRow>| -> Result<Vec<Employee>, String> {
            if !rows
                .first()
                .is_some_and(|row| names_match::<Employee>(row, 0))
            {
                return Err("columns".to_owned());
            }
            let read = rows.iter().map(|row| Employee::read(row, 0));
            read.collect::<Result<_, _>>().map_err(|e| e.to_string())
        };
        let sql = select("7::bigint", "'DISPATCHER'");
        let employees = read(sqlx::query(&sql).fetch_all(&mut conn).await.unwrap());
        assert_eq!(employees.unwrap(), [ada()]);
        // Text of any built-in character type: `varchar`, `bpchar` (its padding kept), `name`.
        for (role, phone) in [
            ("'DISPATCHER'::varchar", "'555'::varchar"),
            ("'DISPATCHER'::name", "'555 '::char(4)"),
        ] {
            let sql = select("7::bigint", role).replace("'555'::text", phone);
            let rows = sqlx::query(&sql).fetch_all(&mut conn).await.unwrap();
            let employee = read(rows).unwrap().remove(0);
            assert_eq!(employee.role, EmployeeRole::Dispatcher, "{role}");
            assert!(employee.phone.unwrap().starts_with("555"), "{phone}");
        }
        for (created_at, role, refused) in [
            ("'12345678'::text", "'DISPATCHER'", "column 5"),
            ("7::integer", "'DISPATCHER'", "column 5"),
            ("7::bigint", "42::bigint", "column 2"),
        ] {
            let sql = select(created_at, role);
            let rows = sqlx::query(&sql).fetch_all(&mut conn).await.unwrap();
            let error = read(rows).unwrap_err();
            assert!(error.contains(refused), "{created_at} {role}: {error}");
        }
        let swapped = "SELECT 'e1'::text AS employee_id, 'DISPATCHER'::text AS role, \
                       'Ada'::text AS name, NULL::text AS email, NULL::text AS phone, \
                       7::bigint AS created_at";
        let rows = sqlx::query(swapped).fetch_all(&mut conn).await.unwrap();
        let error = read(rows).unwrap_err();
        assert_eq!(error, "columns");
        conn.close().await.unwrap();
        drop(db);
    }
}
