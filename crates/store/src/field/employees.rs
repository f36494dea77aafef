//! Staff rosters and schedules: employees and their shifts.

use super::page::{Order, Page, PageRequest, SortKey};
use super::positional::positional;
use super::sql::Sql;
use super::{organization_missing_or, ChildList, EmployeeRole, Listed, OrgStore};
use crate::error::{Entity, StoreError};
use crate::UnixTime;

#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct Employee {
    pub employee_id: String,
    pub name: String,
    #[sqlx(try_from = "String")]
    pub role: EmployeeRole,
    pub email: Option<String>,
    pub phone: Option<String>,
    pub created_at: UnixTime,
}

positional!(Employee {
    employee_id,
    name,
    role,
    email,
    phone,
    created_at
});

const EMPLOYEE_COLUMNS: &str = "employee_id, name, role, email, phone, created_at";
const EMPLOYEE_ORDER: Order = Order {
    key_column: "name",
    numeric: false,
    id_column: "employee_id",
};
const EMPLOYEES: Listed = Listed {
    table: "employees",
    columns: EMPLOYEE_COLUMNS,
    order: EMPLOYEE_ORDER,
};

impl Employee {
    pub fn cursor(&self) -> super::Cursor {
        EMPLOYEE_ORDER.cursor(SortKey::Text(self.name.clone()), &self.employee_id)
    }
}

#[derive(Clone, Debug)]
pub struct NewEmployee<'a> {
    pub employee_id: &'a str,
    pub name: &'a str,
    pub role: EmployeeRole,
    pub email: Option<&'a str>,
    pub phone: Option<&'a str>,
}

#[derive(Clone, Debug, Default)]
pub struct EmployeeFilter {
    pub role: Option<EmployeeRole>,
}

/// A scheduled stretch of work; an employee's shifts never overlap.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct Shift {
    pub shift_id: String,
    pub employee_id: String,
    pub starts_at: UnixTime,
    pub ends_at: UnixTime,
    pub note: Option<String>,
}

positional!(Shift {
    shift_id,
    employee_id,
    starts_at,
    ends_at,
    note
});

const SHIFT_COLUMNS: &str = "shift_id, employee_id, starts_at, ends_at, note";

impl OrgStore<'_> {
    pub async fn create_employee(
        &self,
        new: &NewEmployee<'_>,
        now: UnixTime,
    ) -> Result<Employee, StoreError> {
        sqlx::query(
            "INSERT INTO employees (tenant_id, employee_id, organization_guid, name, role, email, \
             phone, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(self.tenant.id_str())
        .bind(new.employee_id)
        .bind(self.organization_guid)
        .bind(new.name)
        .bind(new.role.as_str())
        .bind(new.email)
        .bind(new.phone)
        .bind(now)
        .execute(self.tenant.pool())
        .await
        .map_err(|e| organization_missing_or(e, Entity::Employee))?;
        Ok(Employee {
            employee_id: new.employee_id.to_owned(),
            name: new.name.to_owned(),
            role: new.role,
            email: new.email.map(str::to_owned),
            phone: new.phone.map(str::to_owned),
            created_at: now,
        })
    }

    /// The employees with these ids, in no particular order; unknown ids are left out.
    pub async fn employees(&self, ids: &[String]) -> Result<Vec<Employee>, StoreError> {
        self.by_ids("employees", EMPLOYEE_COLUMNS, "employee_id", ids)
            .await
    }

    pub async fn list_employees(
        &self,
        filter: &EmployeeFilter,
        page: &PageRequest,
    ) -> Result<Page<Employee>, StoreError> {
        self.page_of(&EMPLOYEES, self.employee_filter("", filter), page)
            .await
    }

    pub async fn count_employees(&self, filter: &EmployeeFilter) -> Result<i64, StoreError> {
        self.count_of(self.employee_filter("SELECT COUNT(*) FROM employees", filter))
            .await
    }

    fn employee_filter(&self, select: &str, filter: &EmployeeFilter) -> Sql {
        let mut sql = self.scoped(select);
        if let Some(role) = filter.role {
            sql.push(" AND role = ").bind(role.as_str());
        }
        sql
    }

    /// Adds a shift unless it overlaps one the employee already has. The employee's row is
    /// updated first, which serializes concurrent schedulers of one employee (PostgreSQL row
    /// lock, SQLite write lock), so two overlapping shifts can never both be written.
    pub async fn schedule_shift(&self, shift: &Shift, now: UnixTime) -> Result<Shift, StoreError> {
        let mut tx = self.tenant.begin().await?;
        let locked = sqlx::query(
            "UPDATE employees SET name = name \
             WHERE tenant_id = $1 AND organization_guid = $2 AND employee_id = $3",
        )
        .bind(self.tenant.id_str())
        .bind(self.organization_guid)
        .bind(&shift.employee_id)
        .execute(self.tenant.in_tx(&mut tx))
        .await?;
        if locked.rows_affected() == 0 {
            return Err(StoreError::NotFound(Entity::Employee));
        }
        let inserted = sqlx::query(
            "INSERT INTO shifts (tenant_id, shift_id, organization_guid, employee_id, starts_at, \
             ends_at, note, created_at) \
             SELECT $1, $2, $3, $4, $5, $6, $7, $8 WHERE NOT EXISTS ( \
               SELECT 1 FROM shifts WHERE tenant_id = $1 AND employee_id = $4 \
                 AND starts_at < $6 AND ends_at > $5)",
        )
        .bind(self.tenant.id_str())
        .bind(&shift.shift_id)
        .bind(self.organization_guid)
        .bind(&shift.employee_id)
        .bind(shift.starts_at)
        .bind(shift.ends_at)
        .bind(shift.note.as_deref())
        .bind(now)
        .execute(self.tenant.in_tx(&mut tx))
        .await?;
        if inserted.rows_affected() == 0 {
            return Err(StoreError::Refused(
                "the shift overlaps another shift of this employee".into(),
            ));
        }
        self.tenant.commit(tx).await?;
        Ok(shift.clone())
    }

    /// The first `first` shifts of each of these employees, each employee's in order of start.
    pub async fn shifts_of(
        &self,
        employee_ids: &[String],
        first: u32,
    ) -> Result<Vec<Shift>, StoreError> {
        self.children(
            &ChildList {
                table: "shifts",
                columns: SHIFT_COLUMNS,
                parent_column: "employee_id",
                order: "starts_at, shift_id",
                parent_of: |shift: &Shift| &shift.employee_id,
            },
            employee_ids,
            first,
        )
        .await
    }
}
