//! Field-service records: employees and shifts, customers with properties and billing
//! profiles, work orders with contracts, jobs with assignments and completion reports,
//! invoices with lines and payments. Each belongs to one organization of one tenant, and is
//! reached only through [`OrgStore`], so every statement names both.

mod customers;
mod employees;
mod enums;
mod invoices;
mod jobs;
mod page;
pub(crate) mod positional;
mod sql;
mod work_orders;

pub use customers::{
    Address, BillingProfile, Contact, Customer, CustomerFilter, NewCustomer, Property,
};
pub use employees::{Employee, EmployeeFilter, NewEmployee, Shift};
pub use enums::{EmployeeRole, InvoiceStatus, JobStatus, PaymentMethod, WorkOrderStatus};
pub use invoices::{
    Invoice, InvoiceFilter, InvoiceLine, NewInvoice, NewInvoiceLine, NewPayment, Payment,
};
pub use jobs::{Assignment, Job, JobFilter, NewJob, ScheduledJob, Staffed, StaffedJob};
pub use page::{Cursor, Page, PageRequest, SortKey};
pub use work_orders::{Contract, NewWorkOrder, WorkOrder, WorkOrderFilter};

use crate::error::{Entity, StoreError};
use crate::tenant::TenantStore;
use sql::IN_LIST_CHUNK;
use sqlx::any::AnyRow;

/// The field-service records of one organization of one tenant.
#[derive(Clone, Copy, Debug)]
pub struct OrgStore<'a> {
    tenant: TenantStore<'a>,
    organization_guid: &'a str,
}

impl<'a> TenantStore<'a> {
    /// The records of one organization. The organization itself is not looked up: a guid
    /// that names none simply has no records, and writes fail on its foreign key.
    pub fn organization(&self, organization_guid: &'a str) -> OrgStore<'a> {
        OrgStore {
            tenant: *self,
            organization_guid,
        }
    }
}

impl<'a> OrgStore<'a> {
    pub fn organization_guid(&self) -> &str {
        self.organization_guid
    }

    /// The leading `tenant_id = $1 AND organization_guid = $2` of every statement here.
    fn scoped(&self, select: &str) -> sql::Sql {
        let mut sql = sql::Sql::new(select);
        sql.push(" WHERE tenant_id = ")
            .bind(self.tenant.id_str())
            .push(" AND organization_guid = ")
            .bind(self.organization_guid);
        sql
    }

    /// One page of a list: `filtered` is its filter (`WHERE …`, from [`OrgStore::scoped`]
    /// with no select), read in the list's order. The list's length, when the page asks for
    /// it, is counted in the same statement (a subquery of the same filter, which both
    /// dialects run once), so a page with its `totalCount` is one trip to the database; a
    /// page past the list's end has no row to carry the count, and counts again.
    pub(crate) async fn page_of<T: Record>(
        &self,
        list: &Listed,
        filtered: sql::Sql,
        page: &PageRequest,
    ) -> Result<Page<T>, StoreError> {
        self.joined_page_of(list, None, filtered, page).await
    }

    /// [`OrgStore::page_of`], with each row's record of `joined`, when given, after the
    /// list's own columns (and before the list's length): the page is read as it is alone, as
    /// a subquery, and joined to the other table in the same statement, then put back in the
    /// list's order.
    pub(crate) async fn joined_page_of<T: Record>(
        &self,
        list: &Listed,
        joined: Option<&Joined>,
        filtered: sql::Sql,
        page: &PageRequest,
    ) -> Result<Page<T>, StoreError> {
        let (rows, total) = self.joined_rows(list, joined, None, filtered, page).await?;
        Ok(Page::from_rows(rows, page.first, total))
    }

    /// The rows of [`OrgStore::joined_page_of`] (one more than the page, when there is
    /// more), and the list's length when the page asks for it. With `beside` too, each row
    /// comes once for each of its first rows of that other list, or once with nulls for
    /// them when it has none (for PostgreSQL: see [`OrgStore::list_staffed_jobs`]); `beside`
    /// is read only with `joined`.
    pub(crate) async fn joined_rows<T: Record>(
        &self,
        list: &Listed,
        joined: Option<&Joined>,
        beside: Option<&Beside>,
        filtered: sql::Sql,
        page: &PageRequest,
    ) -> Result<(Vec<T>, Option<i64>), StoreError> {
        let Listed {
            table,
            columns,
            order,
        } = list;
        let total = match page.with_total {
            true => format!(
                ", (SELECT COUNT(*) FROM {table}{filter}) AS \"{TOTAL}\"",
                filter = filtered.text()
            ),
            false => String::new(),
        };
        let select = match (joined, beside) {
            (Some(joined), None) => joined_select(list, joined, &total),
            _ => format!("SELECT {columns}{total} FROM {table}"),
        };
        let counted = page.with_total.then(|| filtered.clone());
        let mut sql = filtered.prepend(&select);
        page::page_clause(&mut sql, *order, page)?;
        if let (Some(joined), Some(beside)) = (joined, beside) {
            sql = self.join_to_page(sql, list, joined, beside, page.with_total);
        }
        let pool = self.tenant.pool();
        let (rows, total) = match by_position(pool, &sql, counted.is_some()).await? {
            Some(page) => page,
            None => decoded(&sql.query().fetch_all(pool).await?, counted.is_some())?,
        };
        let total = match (counted, total) {
            (Some(filtered), None) => {
                let count = filtered.prepend(&format!("SELECT COUNT(*) FROM {table}"));
                Some(self.count_of(count).await?)
            }
            (_, total) => total,
        };
        Ok((rows, total))
    }

    /// A page's statement as `p` (`WITH`) of one that joins it to `joined`'s table `w` and
    /// to `beside`'s rows `s`, in the page's organization, keeping its order: `s`'s columns
    /// come after `w`'s with their place among their parent's ([`NTH`]), before the list's
    /// length, a page row once for each of its `s` rows (in their order) or once without.
    /// Every row of the page has its joined row (a foreign key names it), so the inner join
    /// drops none.
    fn join_to_page(
        &self,
        page: sql::Sql,
        list: &Listed,
        joined: &Joined,
        beside: &Beside,
        counted: bool,
    ) -> sql::Sql {
        let Joined {
            table,
            columns,
            key,
        } = joined;
        let total = match counted {
            true => format!(", p.\"{TOTAL}\""),
            false => String::new(),
        };
        let select = format!(
            "SELECT {}, {}, {}, s.\"{NTH}\"{total} FROM p",
            qualified("p", list.columns),
            qualified("w", columns),
            qualified("s", beside.columns)
        );
        let mut sql = page.prepend("WITH p AS (");
        sql.push(&format!(
            ") {select} JOIN {table} w ON w.{key} = p.{key} AND w.tenant_id = "
        ))
        .bind(self.tenant.id_str())
        .push(" AND w.organization_guid = ")
        .bind(self.organization_guid);
        self.beside_page(&mut sql, beside);
        sql.push(&format!(
            " ORDER BY p.{}, p.{}, {}",
            list.order.key_column,
            list.order.id_column,
            qualified("s", beside.order)
        ));
        sql
    }

    /// The `LEFT JOIN` of each page row's first children `s` ([`Beside`]), numbered in their
    /// order among the page's children. Not `LATERAL` (a subquery for each row of the page):
    /// that cost PostgreSQL a third more than the page and the children read apart, this
    /// about what they cost together (docs/performance.md).
    fn beside_page(&self, sql: &mut sql::Sql, beside: &Beside) {
        let Beside {
            table,
            columns,
            parent_column,
            order,
            first,
        } = beside;
        sql.push(&format!(
            " LEFT JOIN (SELECT {columns}, ROW_NUMBER() OVER (PARTITION BY {parent_column} \
             ORDER BY {order}) AS \"{NTH}\" FROM {table}"
        ))
        .push(" WHERE tenant_id = ")
        .bind(self.tenant.id_str())
        .push(" AND organization_guid = ")
        .bind(self.organization_guid)
        .push(&format!(
            " AND {parent_column} IN (SELECT {parent_column} FROM p)) s \
             ON s.{parent_column} = p.{parent_column} AND s.\"{NTH}\" <= "
        ))
        .bind(i64::from(*first));
    }

    /// The number of rows a `SELECT COUNT(*)` with filters finds.
    pub(crate) async fn count_of(&self, sql: sql::Sql) -> Result<i64, StoreError> {
        let counted: Vec<(i64,)> = self.records(&sql).await?;
        let (count,) = counted.first().copied().ok_or(sqlx::Error::RowNotFound)?;
        Ok(count)
    }

    /// A statement's records, read by position ([`by_position`]) or from `AnyRow`s.
    async fn records<T: Record>(&self, sql: &sql::Sql) -> Result<Vec<T>, StoreError> {
        let pool = self.tenant.pool();
        match by_position(pool, sql, false).await? {
            Some((records, _)) => Ok(records),
            None => Ok(sql.query_as::<T>().fetch_all(pool).await?),
        }
    }

    /// Rows of `table` whose `id_column` is one of `ids`, in batches.
    pub(crate) async fn by_ids<T>(
        &self,
        table: &str,
        columns: &str,
        id_column: &str,
        ids: &[String],
    ) -> Result<Vec<T>, StoreError>
    where
        T: Record,
    {
        let mut found = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(IN_LIST_CHUNK) {
            let mut sql = self.scoped(&format!("SELECT {columns} FROM {table}"));
            sql.push(&format!(" AND {id_column} IN ")).bind_list(chunk);
            found.extend(self.records::<T>(&sql).await?);
        }
        Ok(found)
    }

    /// At most `first` rows of `list` for each parent in `parent_ids`, each parent's first in
    /// the list's order, in batches of parents; the rows come back grouped by parent, each
    /// group in its order.
    ///
    /// Most parents have fewer than `first` children, so a batch is first read whole, in order,
    /// with a limit of `first` rows a parent: when fewer come back, that was every row, and each
    /// parent's beyond its `first` are dropped here. Only when the limit is reached (some parent
    /// has more) is the batch read again with `ROW_NUMBER()` numbering each parent's rows (both
    /// dialects have window functions), so a parent with thousands of children still sends
    /// `first` of them. The plain read is the cheaper one: SQLite copies each partition of a
    /// window into a table of its own, which was two thirds of the statement's cost for the
    /// assignments of an API page of jobs (docs/performance.md).
    pub(crate) async fn children<T>(
        &self,
        list: &ChildList<T>,
        parent_ids: &[String],
        first: u32,
    ) -> Result<Vec<T>, StoreError>
    where
        T: Record,
    {
        let ChildList {
            table,
            columns,
            parent_column,
            order,
            parent_of,
        } = list;
        let mut found = Vec::new();
        if first == 0 {
            return Ok(found);
        }
        for chunk in parent_ids.chunks(IN_LIST_CHUNK) {
            let bound = i64::from(first).saturating_mul(chunk.len() as i64);
            let mut sql = self.scoped(&format!("SELECT {columns} FROM {table}"));
            sql.push(&format!(" AND {parent_column} IN "))
                .bind_list(chunk)
                .push(&format!(" ORDER BY {parent_column}, {order} LIMIT "))
                .bind(bound.saturating_add(1));
            let rows: Vec<T> = self.records(&sql).await?;
            if (rows.len() as i64) <= bound {
                found.extend(first_of_each(rows, first, *parent_of));
                continue;
            }
            let mut sql = self.scoped(&format!(
                "SELECT {columns} FROM (SELECT {columns}, ROW_NUMBER() OVER \
                 (PARTITION BY {parent_column} ORDER BY {order}) AS nth FROM {table}"
            ));
            sql.push(&format!(" AND {parent_column} IN "))
                .bind_list(chunk)
                .push(") numbered WHERE nth <= ")
                .bind(i64::from(first))
                .push(&format!(" ORDER BY {parent_column}, {order}"));
            found.extend(self.records::<T>(&sql).await?);
        }
        Ok(found)
    }
}

/// A record the field reads decode: by column position from sqlx's PostgreSQL rows and an
/// SQLite file's ([`positional`]), from `AnyRow`s by name otherwise (SQLite in memory, or a
/// read that waits for another process's lock).
pub(crate) trait Record:
    for<'r> sqlx::FromRow<'r, AnyRow> + positional::Positional + Send + Unpin
{
}

impl<T> Record for T where
    T: for<'r> sqlx::FromRow<'r, AnyRow> + positional::Positional + Send + Unpin
{
}

/// A statement's records and, when `counted`, the list's length after their columns, read
/// by position: from sqlx's own PostgreSQL rows (not converted into `AnyRow`s,
/// [`crate::pool::Pool::postgres_rows`]) or straight from an SQLite file's
/// ([`crate::pool::Pool::sqlite_rows`]). `None` when they must be read from `AnyRow`s.
async fn by_position<T: Record>(
    pool: &crate::pool::Pool,
    sql: &sql::Sql,
    counted: bool,
) -> Result<Option<(Vec<T>, Option<i64>)>, sqlx::Error> {
    let mut reader = Reader::<T>::new(counted);
    let records = match pool.is_postgres() {
        true => {
            let rows = pool
                .postgres_rows(sql.text(), sql.postgres_arguments()?)
                .await?;
            // Sized first: collecting through `Result` would grow the records (large, for a
            // joined page) by doubling, moving them each time.
            let mut records = Vec::with_capacity(rows.len());
            for row in &rows {
                records.push(reader.read(row)?);
            }
            Some(records)
        }
        false => {
            let values = sql.sqlite_values();
            let read = |row: &rusqlite::Row<'_>| reader.read(row);
            pool.sqlite_rows(sql.text(), &values, read).await?
        }
    };
    Ok(records.map(|records| (records, reader.total)))
}

/// Reads a statement's rows as `T`s by position, its columns checked against `T`'s at the
/// first row (and the list's length read there, when it was counted).
struct Reader<T> {
    counted: bool,
    checked: bool,
    total: Option<i64>,
    record: std::marker::PhantomData<fn() -> T>,
}

impl<T: Record> Reader<T> {
    fn new(counted: bool) -> Reader<T> {
        Reader {
            counted,
            checked: false,
            total: None,
            record: std::marker::PhantomData,
        }
    }

    fn read(&mut self, row: &impl positional::Columns) -> Result<T, sqlx::Error> {
        if !self.checked {
            let total_follows = !self.counted || row.column_name(T::WIDTH) == Some(TOTAL);
            if !(positional::names_match::<T>(row, 0) && total_follows) {
                return Err(positional::not_its_columns::<T>());
            }
            if self.counted {
                self.total = Some(positional::column(row, T::WIDTH)?);
            }
            self.checked = true;
        }
        T::read(row, 0)
    }
}

/// A page's records, and the list's length from its first row when it was counted with them
/// (`None` when there is no row to read it from).
fn decoded<'r, R, T>(rows: &'r [R], counted: bool) -> Result<(Vec<T>, Option<i64>), sqlx::Error>
where
    R: sqlx::Row,
    T: sqlx::FromRow<'r, R>,
    &'static str: sqlx::ColumnIndex<R>,
    i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    let total = match (counted, rows.first()) {
        (true, Some(row)) => Some(row.try_get::<i64, _>(TOTAL)?),
        _ => None,
    };
    let records = rows.iter().map(T::from_row).collect::<Result<_, _>>()?;
    Ok((records, total))
}

/// A list read in pages: its table, the columns of its records, and its order.
pub(crate) struct Listed {
    pub table: &'static str,
    pub columns: &'static str,
    pub order: page::Order,
}

/// A record joined to each row of a page ([`OrgStore::joined_page_of`]): its table, its
/// columns, and the column of both tables that names it.
pub(crate) struct Joined {
    pub table: &'static str,
    pub columns: &'static str,
    pub key: &'static str,
}

/// The select of a page of `list` with each row's record of `joined` after its own columns
/// (and `total` after those), the page's filter and order to follow: the joined table's
/// columns renamed inside (`"w.status"`), so that the filter's unqualified names (`status`,
/// `tenant_id`) still name the list's, and named as the record's outside. One level, not
/// the page as a subquery joined after: SQLite copied that subquery's rows into a table and
/// sorted them again in another, which was a third of the statement (docs/performance.md).
/// The joined record's columns are neither `tenant_id` nor `organization_guid`, which the
/// join renames for itself.
fn joined_select(list: &Listed, joined: &Joined, total: &str) -> String {
    let Listed { table, columns, .. } = list;
    let Joined {
        table: other,
        columns: other_columns,
        key,
    } = joined;
    let mut inside =
        String::from("tenant_id AS \"w.tenant_id\", organization_guid AS \"w.organization_guid\"");
    let mut outside = String::new();
    // Pushed piece by piece, as `qualified` is.
    for column in other_columns.split(',').map(str::trim) {
        for piece in [", ", column, " AS \"w.", column, "\""] {
            inside.push_str(piece);
        }
        for piece in [", w.\"w.", column, "\" AS ", column] {
            outside.push_str(piece);
        }
    }
    format!(
        "SELECT {}{outside}{total} FROM {table} JOIN (SELECT {inside} FROM {other}) w \
         ON w.\"w.tenant_id\" = {table}.tenant_id \
         AND w.\"w.organization_guid\" = {table}.organization_guid \
         AND w.\"w.{key}\" = {table}.{key}",
        qualified(table, columns)
    )
}

/// Children of each row of a page, read with it ([`OrgStore::joined_rows`]): at most
/// `first` rows of a [`ChildList`] a page row ([`ChildList::beside`]).
pub(crate) struct Beside {
    table: &'static str,
    columns: &'static str,
    parent_column: &'static str,
    order: &'static str,
    first: u32,
}

/// `a, b` as `alias.a, alias.b`; a column keeps its own name in the result. Pushed piece by
/// piece: a `format!` per column and a join were 1.7% of an uncached API query on
/// PostgreSQL (docs/performance.md).
fn qualified(alias: &str, columns: &str) -> String {
    let mut out = String::with_capacity(2 * columns.len() + alias.len() + 1);
    for (i, column) in columns.split(',').enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(alias);
        out.push('.');
        out.push_str(column.trim());
    }
    out
}

/// What the list's length is called in a page's rows when it is counted with them: quoted,
/// with a dot, so no column of a record is taken for it.
const TOTAL: &str = "listed.total";

/// A child's place among its parent's in a page read with its children ([`Beside`]): quoted,
/// with a dot, so no column of a record is taken for it.
pub(crate) const NTH: &str = "beside.nth";

/// A list of records under a parent record, as [`OrgStore::children`] reads it.
pub(crate) struct ChildList<T> {
    pub table: &'static str,
    pub columns: &'static str,
    /// The column naming the parent.
    pub parent_column: &'static str,
    /// The list's order within a parent, ending in a unique column.
    pub order: &'static str,
    /// A row's parent, as read from `parent_column`.
    pub parent_of: fn(&T) -> &str,
}

impl<T> ChildList<T> {
    /// This list's first `first` rows of each row of a page, read with the page.
    pub(crate) fn beside(&self, first: u32) -> Beside {
        Beside {
            table: self.table,
            columns: self.columns,
            parent_column: self.parent_column,
            order: self.order,
            first,
        }
    }
}

/// The first `first` rows of each parent, from rows grouped by parent.
fn first_of_each<T>(rows: Vec<T>, first: u32, parent_of: fn(&T) -> &str) -> Vec<T> {
    let first = first as usize;
    let mut kept: Vec<T> = Vec::with_capacity(rows.len());
    let mut run = 0;
    for row in rows {
        let same_parent = kept
            .last()
            .is_some_and(|last| parent_of(last) == parent_of(&row));
        run = if same_parent { run + 1 } else { 1 };
        if run <= first {
            kept.push(row);
        }
    }
    kept
}

/// An insert that names the organization fails on its foreign key when the organization does
/// not exist; any other failure is about the record itself.
pub(crate) fn organization_missing_or(error: sqlx::Error, entity: Entity) -> StoreError {
    match StoreError::is_foreign_key_violation(&error) {
        true => StoreError::NotFound(Entity::Organization),
        false => StoreError::from_sqlx(error, entity),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_names_each_column_under_its_alias_in_order() {
        assert_eq!(qualified("w", "a"), "w.a");
        assert_eq!(
            qualified("p", "job_id, title,\n    status"),
            "p.job_id, p.title, p.status"
        );
    }
}
