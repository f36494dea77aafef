//! The `employees` area: staff rosters and their shifts.

use async_graphql::{Context, Enum, InputObject, Object, SimpleObject, ID};
use store::{EmployeeFilter as StoreEmployeeFilter, NewEmployee};

use super::connection::{asks_total, connection, nested_first, page_request, List, Total};
use super::context::{children, gql, new_id, now, org, require, Result};
use super::held::Held;
use super::loaders::{EmployeeId, ShiftsOf};
use super::plain::{enum_name, plain_fields, Leaf, Plain};
use super::scalars::DateTime;
use super::scope::{Needs, Scope};
use crate::validate;

#[derive(Enum, Clone, Copy, PartialEq, Eq)]
#[graphql(remote = "store::EmployeeRole")]
pub enum EmployeeRole {
    /// Works on site.
    Technician,
    /// Plans the schedule.
    Dispatcher,
    Supervisor,
    Administrator,
}

/// A member of staff.
pub struct Employee(pub Held<store::Employee>);

#[Object]
impl Employee {
    async fn id(&self) -> ID {
        ID(self.0.employee_id.clone())
    }

    async fn name(&self) -> &str {
        &self.0.name
    }

    async fn role(&self) -> EmployeeRole {
        self.0.role.into()
    }

    async fn email(&self) -> Option<&str> {
        self.0.email.as_deref()
    }

    async fn phone(&self) -> Option<&str> {
        self.0.phone.as_deref()
    }

    /// Scheduled shifts, the first ones by start; they never overlap.
    async fn shifts(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "At most 200; 100 when not given.")] first: Option<i32>,
    ) -> Result<Vec<Shift>> {
        let key = ShiftsOf {
            parent: self.0.employee_id.clone(),
            first: nested_first(first)?,
        };
        let shifts = children(ctx, key).await?;
        Ok(shifts
            .iter()
            .map(|s| Shift {
                id: ID(s.shift_id.clone()),
                starts_at: DateTime(s.starts_at),
                ends_at: DateTime(s.ends_at),
                note: s.note.clone(),
            })
            .collect())
    }

    async fn created_at(&self) -> DateTime {
        DateTime(self.0.created_at)
    }
}

impl Employee {
    fn leaf(&self, name: &str) -> Option<Leaf<'_>> {
        let employee = &self.0;
        Some(match name {
            "id" => Leaf::Text(&employee.employee_id),
            "name" => Leaf::Text(&employee.name),
            "role" => Leaf::Text(enum_name(EmployeeRole::from(employee.role))?),
            "email" => employee.email.as_deref().map_or(Leaf::Null, Leaf::Text),
            "phone" => employee.phone.as_deref().map_or(Leaf::Null, Leaf::Text),
            "createdAt" => Leaf::instant(employee.created_at),
            _ => return None,
        })
    }
}

plain_fields!(Employee {
    "id",
    "name",
    "role",
    "email",
    "phone",
    "createdAt",
} leaves Employee::leaf);

/// A stretch of scheduled work.
#[derive(SimpleObject)]
pub struct Shift {
    pub id: ID,
    pub starts_at: DateTime,
    pub ends_at: DateTime,
    pub note: Option<String>,
}

#[derive(InputObject, Default)]
pub struct EmployeeFilter {
    pub role: Option<EmployeeRole>,
}

#[derive(InputObject)]
pub struct CreateEmployeeInput {
    pub name: String,
    pub role: EmployeeRole,
    pub email: Option<String>,
    pub phone: Option<String>,
}

#[derive(InputObject)]
pub struct ScheduleShiftInput {
    pub employee_id: ID,
    pub starts_at: DateTime,
    /// After `startsAt`, at most 24 hours later; must not overlap another shift.
    pub ends_at: DateTime,
    pub note: Option<String>,
}

#[derive(Default)]
pub struct EmployeesQuery;

#[Object]
impl EmployeesQuery {
    /// The organization's employees by name. Needs the `employees` scope.
    #[graphql(guard = "Needs(Scope::Employees)")]
    async fn employees(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "At most 100; 20 when not given.")] first: Option<i32>,
        #[graphql(desc = "The `endCursor` of the previous page.")] after: Option<String>,
        filter: Option<EmployeeFilter>,
    ) -> Result<Option<List<Plain<Employee>>>> {
        let page = page_request(first, after, asks_total(ctx))?;
        let filter = StoreEmployeeFilter {
            role: filter.unwrap_or_default().role.map(Into::into),
        };
        let rows = org(ctx)?
            .list_employees(&filter, &page)
            .await
            .map_err(gql)?;
        let total = Total::Employees(filter);
        Ok(Some(connection(
            rows,
            page.after.is_some(),
            total,
            store::Employee::cursor,
            |row| Plain(Employee(Held::Own(row))),
        )))
    }

    /// One employee of the organization. Needs the `employees` scope.
    #[graphql(guard = "Needs(Scope::Employees)")]
    async fn employee(&self, ctx: &Context<'_>, id: ID) -> Result<Option<Plain<Employee>>> {
        Ok(Some(Plain(Employee(Held::Shared(
            require(ctx, EmployeeId(id.0), "employee").await?,
        )))))
    }
}

#[derive(Default)]
pub struct EmployeesMutation;

#[Object]
impl EmployeesMutation {
    /// Adds an employee to the roster. Needs the `employees` scope.
    #[graphql(guard = "Needs(Scope::Employees)")]
    async fn create_employee(
        &self,
        ctx: &Context<'_>,
        input: CreateEmployeeInput,
    ) -> Result<Option<Plain<Employee>>> {
        let name = validate::text("name", &input.name, 200)?;
        let email = validate::email("email", input.email.as_deref())?;
        let phone = validate::phone("phone", input.phone.as_deref())?;
        let employee_id = new_id("emp");
        let new = NewEmployee {
            employee_id: &employee_id,
            name: &name,
            role: input.role.into(),
            email: email.as_deref(),
            phone: phone.as_deref(),
        };
        let employee = org(ctx)?
            .create_employee(&new, now(ctx)?)
            .await
            .map_err(gql)?;
        Ok(Some(Plain(Employee(Held::Own(employee)))))
    }

    /// Adds a shift to an employee's schedule, and returns the employee. A shift that
    /// overlaps another of theirs is refused. Needs the `employees` scope.
    #[graphql(guard = "Needs(Scope::Employees)")]
    async fn schedule_shift(
        &self,
        ctx: &Context<'_>,
        input: ScheduleShiftInput,
    ) -> Result<Option<Plain<Employee>>> {
        let (starts_at, ends_at) = validate::window("endsAt", input.starts_at, input.ends_at, 1)?;
        let shift = store::Shift {
            shift_id: new_id("shift"),
            employee_id: input.employee_id.0.clone(),
            starts_at,
            ends_at,
            note: validate::optional_text("note", input.note.as_deref(), 500)?,
        };
        let org = org(ctx)?;
        org.schedule_shift(&shift, now(ctx)?).await.map_err(gql)?;
        Ok(Some(Plain(Employee(Held::Shared(
            require(ctx, EmployeeId(input.employee_id.0), "employee").await?,
        )))))
    }
}
