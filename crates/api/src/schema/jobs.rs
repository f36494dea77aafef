//! The `jobs` area: visits that carry out work orders, who is assigned, completion reports.

use async_graphql::{Context, Enum, InputObject, InputType, Lookahead, Object, SimpleObject, ID};
use store::{JobFilter as StoreJobFilter, NewJob, Page, PageRequest, ScheduledJob, StaffedJob};

use super::connection::{asks_total, connection, nested_first, page_request, List, Total};
use super::context::{children, gql, new_id, now, org, require, Result};
use super::employees::Employee;
use super::held::Held;
use super::loaders::{
    AssignmentsOf, EmployeeId, JobId, Loaders, Shared, Staff, StaffOf, WorkOrderId,
};
use super::plain::{enum_name, plain_fields, Leaf, Plain};
use super::scalars::DateTime;
use super::scope::{Needs, Scope};
use super::work_orders::WorkOrder;
use crate::bearer::Caller;
use crate::validate;

/// Where a job is in its life: SCHEDULED → IN_PROGRESS → COMPLETED.
#[derive(Enum, Clone, Copy, PartialEq, Eq)]
#[graphql(remote = "store::JobStatus")]
pub enum JobStatus {
    /// Planned for its window; nobody has started.
    Scheduled,
    /// Started on site.
    InProgress,
    /// Finished, with a completion report.
    Completed,
}

/// A visit to carry out (part of) a work order, in a scheduled window.
pub struct Job(pub Held<store::Job>);

#[Object]
impl Job {
    async fn id(&self) -> ID {
        ID(self.0.job_id.clone())
    }

    /// A short description for the schedule, such as "Replace condenser fan motor".
    async fn title(&self) -> &str {
        &self.0.title
    }

    async fn status(&self) -> JobStatus {
        self.0.status.into()
    }

    /// When the visit is planned to start.
    async fn scheduled_start(&self) -> DateTime {
        DateTime(self.0.scheduled_start)
    }

    /// When the visit is planned to end.
    async fn scheduled_end(&self) -> DateTime {
        DateTime(self.0.scheduled_end)
    }

    /// The work order this job carries out. Needs the `workOrders` scope.
    #[graphql(guard = "Needs(Scope::WorkOrders)")]
    async fn work_order(&self, ctx: &Context<'_>) -> Result<Option<Plain<WorkOrder>>> {
        let order = require(ctx, WorkOrderId(self.0.work_order_id.clone()), "work order").await?;
        Ok(Some(Plain(WorkOrder(Held::Shared(order)))))
    }

    /// The employees on this job, the first ones in the order they were assigned. Needs the
    /// `employees` scope.
    #[graphql(guard = "Needs(Scope::Employees)")]
    async fn assignments(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "At most 200; 100 when not given.")] first: Option<i32>,
    ) -> Result<Option<Vec<Plain<Assignment>>>> {
        let (parent, first) = (self.0.job_id.clone(), nested_first(first)?);
        // Asked for with their employees (as a schedule is), the assignments are read with
        // them: one statement for both levels instead of one for each.
        if ctx.look_ahead().field("employee").exists() {
            let staffed = children(ctx, StaffOf { parent, first }).await?;
            return Ok(Some(
                staffed
                    .iter()
                    .map(|staff| {
                        Plain(Assignment {
                            row: Shared::clone(&staff.assignment),
                            employee: Some(Shared::clone(&staff.employee)),
                        })
                    })
                    .collect(),
            ));
        }
        let assignments = children(ctx, AssignmentsOf { parent, first }).await?;
        Ok(Some(
            assignments
                .iter()
                .map(|row| {
                    Plain(Assignment {
                        row: Shared::clone(row),
                        employee: None,
                    })
                })
                .collect(),
        ))
    }

    /// What was done, once the job is COMPLETED; null before.
    async fn completion_report(&self) -> Option<CompletionReport> {
        let job = &self.0;
        Some(CompletionReport {
            notes: job.completion_notes.clone()?,
            started_at: job.started_at.map(DateTime),
            completed_at: DateTime(job.completed_at?),
            minutes_worked: job.minutes_worked?,
        })
    }

    /// When the job was started on site; null while SCHEDULED.
    async fn started_at(&self) -> Option<DateTime> {
        self.0.started_at.map(DateTime)
    }

    async fn created_at(&self) -> DateTime {
        DateTime(self.0.created_at)
    }
}

impl Job {
    fn leaf(&self, name: &str) -> Option<Leaf<'_>> {
        let job = &self.0;
        Some(match name {
            "id" => Leaf::Text(&job.job_id),
            "title" => Leaf::Text(&job.title),
            "status" => Leaf::Text(enum_name(JobStatus::from(job.status))?),
            "scheduledStart" => Leaf::instant(job.scheduled_start),
            "scheduledEnd" => Leaf::instant(job.scheduled_end),
            "createdAt" => Leaf::instant(job.created_at),
            _ => return None,
        })
    }
}

plain_fields!(Job {
    "id",
    "title",
    "status",
    "scheduledStart",
    "scheduledEnd",
    "startedAt",
    "createdAt",
    "completionReport",
} leaves Job::leaf);

/// An employee put on a job.
pub struct Assignment {
    row: Shared<store::Assignment>,
    /// The employee when read with the assignment; loaded by id when not.
    employee: Option<Shared<store::Employee>>,
}

#[Object]
impl Assignment {
    async fn employee(&self, ctx: &Context<'_>) -> Result<Plain<Employee>> {
        let employee = match &self.employee {
            Some(employee) => Shared::clone(employee),
            None => require(ctx, EmployeeId(self.row.employee_id.clone()), "employee").await?,
        };
        Ok(Plain(Employee(Held::Shared(employee))))
    }

    async fn assigned_at(&self) -> DateTime {
        DateTime(self.row.assigned_at)
    }
}

impl Assignment {
    fn leaf(&self, name: &str) -> Option<Leaf<'_>> {
        match name {
            "assignedAt" => Some(Leaf::instant(self.row.assigned_at)),
            _ => None,
        }
    }
}

plain_fields!(Assignment { "assignedAt" } leaves Assignment::leaf);

/// The technician's report when a job is completed.
#[derive(SimpleObject)]
pub struct CompletionReport {
    /// What was found and done.
    pub notes: String,
    pub started_at: Option<DateTime>,
    pub completed_at: DateTime,
    /// Time spent on the job, in minutes.
    pub minutes_worked: i64,
}

/// Narrows `jobs`; every given condition must hold.
#[derive(InputObject, Default)]
pub struct JobFilter {
    pub status: Option<JobStatus>,
    /// Only jobs this employee is assigned to.
    pub assignee_id: Option<ID>,
    /// Only jobs whose scheduled window ends after this instant.
    pub scheduled_from: Option<DateTime>,
    /// Only jobs whose scheduled window starts before this instant.
    pub scheduled_to: Option<DateTime>,
}

#[derive(InputObject)]
pub struct CreateJobInput {
    /// The work order to carry out; it must not be COMPLETED or CANCELLED.
    pub work_order_id: ID,
    pub title: String,
    pub scheduled_start: DateTime,
    /// After `scheduledStart`, within 14 days of it.
    pub scheduled_end: DateTime,
}

#[derive(InputObject)]
pub struct AssignJobInput {
    pub job_id: ID,
    /// An employee of the organization. Assigning someone already on the job changes nothing.
    pub employee_id: ID,
}

#[derive(InputObject)]
pub struct StartJobInput {
    /// A SCHEDULED job.
    pub id: ID,
}

#[derive(InputObject)]
pub struct CompleteJobInput {
    /// A job IN_PROGRESS.
    pub id: ID,
    /// What was found and done.
    pub notes: String,
    /// Time spent, in minutes; without it, the time since the job was started.
    pub minutes_worked: Option<i64>,
}

#[derive(Default)]
pub struct JobsQuery;

#[Object]
impl JobsQuery {
    /// The organization's jobs by scheduled start. Needs the `jobs` scope.
    #[graphql(guard = "Needs(Scope::Jobs)")]
    async fn jobs(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "At most 100; 20 when not given.")] first: Option<i32>,
        #[graphql(desc = "The `endCursor` of the previous page.")] after: Option<String>,
        filter: Option<JobFilter>,
    ) -> Result<Option<List<Plain<Job>>>> {
        let page = page_request(first, after, asks_total(ctx))?;
        let filter = filter.unwrap_or_default();
        if let (Some(from), Some(to)) = (filter.scheduled_from, filter.scheduled_to) {
            validate::window("filter", from, to, 3_660)?;
        }
        let filter = StoreJobFilter {
            status: filter.status.map(Into::into),
            assignee_id: filter.assignee_id.map(|id| id.0),
            scheduled_from: filter.scheduled_from.map(|t| t.0),
            scheduled_to: filter.scheduled_to.map(|t| t.0),
        };
        let rows = match asks_work_orders(ctx)? {
            true => match asks_crews(ctx)? {
                Some(first) => staffed_jobs(ctx, &filter, &page, first).await?,
                None => scheduled_jobs(ctx, &filter, &page).await?,
            },
            false => org(ctx)?.list_jobs(&filter, &page).await.map_err(gql)?,
        };
        let total = Total::Jobs(filter);
        Ok(Some(connection(
            rows,
            page.after.is_some(),
            total,
            store::Job::cursor,
            |row| Plain(Job(Held::Own(row))),
        )))
    }

    /// One job of the organization. Needs the `jobs` scope.
    #[graphql(guard = "Needs(Scope::Jobs)")]
    async fn job(&self, ctx: &Context<'_>, id: ID) -> Result<Option<Plain<Job>>> {
        let job = require(ctx, JobId(id.0), "job").await?;
        Ok(Some(Plain(Job(Held::Shared(job)))))
    }
}

/// Whether the page's jobs are asked for with their work orders, and the token may read
/// them (without the scope the field is refused, and nothing is read for it).
fn asks_work_orders(ctx: &Context<'_>) -> Result<bool> {
    let may_read = ctx.data::<Caller>()?.scopes.has(Scope::WorkOrders);
    let list = ctx.look_ahead();
    let asked = list.field("nodes").field("workOrder").exists()
        || list
            .field("edges")
            .field("node")
            .field("workOrder")
            .exists();
    Ok(may_read && asked)
}

/// The bound (`first`) of the page's jobs' assignments when they are asked for with their
/// employees (a schedule with its crews, which `Job.assignments` reads through `StaffOf`)
/// and the token may read them. `None` when they are not, or are asked for twice with two
/// bounds, or with a bound the field refuses: the loaders then read them as asked.
fn asks_crews(ctx: &Context<'_>) -> Result<Option<u32>> {
    if !ctx.data::<Caller>()?.scopes.has(Scope::Employees) {
        return Ok(None);
    }
    let list = ctx.look_ahead();
    let mut asked = list.field("nodes").field("assignments").selection_fields();
    asked.extend(
        list.field("edges")
            .field("node")
            .field("assignments")
            .selection_fields(),
    );
    let mut bound = None;
    for field in asked {
        if !Lookahead::from(field).field("employee").exists() {
            continue;
        }
        let Ok(arguments) = field.arguments() else {
            return Ok(None);
        };
        // Parsed as the resolver's own argument is, then bounded as the resolver bounds it.
        let given = arguments
            .into_iter()
            .find_map(|(name, value)| (name.as_str() == "first").then_some(value));
        let Ok(first) = <Option<i32> as InputType>::parse(given) else {
            return Ok(None);
        };
        let Ok(first) = nested_first(first) else {
            return Ok(None);
        };
        if bound.is_some_and(|bound| bound != first) {
            return Ok(None);
        }
        bound = Some(first);
    }
    Ok(bound)
}

/// A page of jobs read with their work orders and crews ([`asks_crews`]): one statement
/// on PostgreSQL. Each work order and each job's crew (an empty one too) is given to the
/// request's loaders, where `Job.workOrder` and `Job.assignments` find them without a
/// statement of their own.
async fn staffed_jobs(
    ctx: &Context<'_>,
    filter: &StoreJobFilter,
    page: &PageRequest,
    first: u32,
) -> Result<Page<store::Job>> {
    let read = org(ctx)?
        .list_staffed_jobs(filter, page, first)
        .await
        .map_err(gql)?;
    let loaders = ctx.data::<Loaders>()?;
    let items = read.items.into_iter().map(|row| {
        let StaffedJob {
            job,
            work_order,
            staff,
        } = row;
        let key = WorkOrderId(work_order.work_order_id.clone());
        loaders.prime(key, Shared::new(work_order));
        let crew: Vec<Staff> = staff.into_iter().map(Staff::from).collect();
        let key = StaffOf {
            parent: job.job_id.clone(),
            first,
        };
        loaders.prime(key, Shared::new(crew));
        job
    });
    Ok(Page {
        items: items.collect(),
        has_next_page: read.has_next_page,
        total: read.total,
    })
}

/// A page of jobs read with their work orders in one statement; each work order is given to
/// the request's loader, where `Job.workOrder` finds it without a statement of its own.
async fn scheduled_jobs(
    ctx: &Context<'_>,
    filter: &StoreJobFilter,
    page: &PageRequest,
) -> Result<Page<store::Job>> {
    let read = org(ctx)?
        .list_scheduled_jobs(filter, page)
        .await
        .map_err(gql)?;
    let loaders = ctx.data::<Loaders>()?;
    let items = read.items.into_iter().map(|row| {
        let ScheduledJob { job, work_order } = row;
        let key = WorkOrderId(work_order.work_order_id.clone());
        loaders.prime(key, Shared::new(work_order));
        job
    });
    Ok(Page {
        items: items.collect(),
        has_next_page: read.has_next_page,
        total: read.total,
    })
}

#[derive(Default)]
pub struct JobsMutation;

#[Object]
impl JobsMutation {
    /// Schedules a job on a work order. Needs the `jobs` scope.
    #[graphql(guard = "Needs(Scope::Jobs)")]
    async fn create_job(
        &self,
        ctx: &Context<'_>,
        input: CreateJobInput,
    ) -> Result<Option<Plain<Job>>> {
        let title = validate::text("title", &input.title, 200)?;
        let (start, end) = validate::window(
            "scheduledEnd",
            input.scheduled_start,
            input.scheduled_end,
            14,
        )?;
        let job_id = new_id("job");
        let new = NewJob {
            job_id: &job_id,
            work_order_id: &input.work_order_id,
            title: &title,
            scheduled_start: start,
            scheduled_end: end,
        };
        let job = org(ctx)?.create_job(&new, now(ctx)?).await.map_err(gql)?;
        Ok(Some(Plain(Job(Held::Own(job)))))
    }

    /// Puts an employee on a job that is not COMPLETED. Needs the `jobs` scope.
    #[graphql(guard = "Needs(Scope::Jobs)")]
    async fn assign_job(
        &self,
        ctx: &Context<'_>,
        input: AssignJobInput,
    ) -> Result<Option<Plain<Job>>> {
        let job = org(ctx)?
            .assign_job(&input.job_id, &input.employee_id, now(ctx)?)
            .await
            .map_err(gql)?;
        Ok(Some(Plain(Job(Held::Own(job)))))
    }

    /// SCHEDULED → IN_PROGRESS. Needs the `jobs` scope.
    #[graphql(guard = "Needs(Scope::Jobs)")]
    async fn start_job(
        &self,
        ctx: &Context<'_>,
        input: StartJobInput,
    ) -> Result<Option<Plain<Job>>> {
        let job = org(ctx)?
            .start_job(&input.id, now(ctx)?)
            .await
            .map_err(gql)?;
        Ok(Some(Plain(Job(Held::Own(job)))))
    }

    /// IN_PROGRESS → COMPLETED, with the completion report. Needs the `jobs` scope.
    #[graphql(guard = "Needs(Scope::Jobs)")]
    async fn complete_job(
        &self,
        ctx: &Context<'_>,
        input: CompleteJobInput,
    ) -> Result<Option<Plain<Job>>> {
        let notes = validate::text("notes", &input.notes, 4_000)?;
        let minutes = input
            .minutes_worked
            .map(|m| validate::within("minutesWorked", m, 0, 100_000))
            .transpose()?;
        let job = org(ctx)?
            .complete_job(&input.id, &notes, minutes, now(ctx)?)
            .await
            .map_err(gql)?;
        Ok(Some(Plain(Job(Held::Own(job)))))
    }
}
