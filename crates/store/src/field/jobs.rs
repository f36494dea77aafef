//! Jobs: visits that carry out a work order, who is assigned, and the completion report.

use std::collections::HashMap;

use super::page::{Order, Page, PageRequest, SortKey};
use super::positional::{column, positional, read_checked, Columns};
use super::sql::Sql;
use super::work_orders::WORK_ORDER_COLUMNS;
use super::{ChildList, Employee, JobStatus, Joined, Listed, OrgStore, WorkOrder};
use crate::error::{Entity, StoreError};
use crate::UnixTime;

#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct Job {
    pub job_id: String,
    pub work_order_id: String,
    pub title: String,
    #[sqlx(try_from = "String")]
    pub status: JobStatus,
    pub scheduled_start: UnixTime,
    pub scheduled_end: UnixTime,
    pub started_at: Option<UnixTime>,
    pub completed_at: Option<UnixTime>,
    pub completion_notes: Option<String>,
    pub minutes_worked: Option<i64>,
    pub created_at: UnixTime,
}

positional!(Job {
    job_id,
    work_order_id,
    title,
    status,
    scheduled_start,
    scheduled_end,
    started_at,
    completed_at,
    completion_notes,
    minutes_worked,
    created_at,
});

const JOB_COLUMNS: &str = "job_id, work_order_id, title, status, scheduled_start, scheduled_end, \
    started_at, completed_at, completion_notes, minutes_worked, created_at";
const JOB_ORDER: Order = Order {
    key_column: "scheduled_start",
    numeric: true,
    id_column: "job_id",
};
const JOBS: Listed = Listed {
    table: "jobs",
    columns: JOB_COLUMNS,
    order: JOB_ORDER,
};

impl Job {
    pub fn cursor(&self) -> super::Cursor {
        JOB_ORDER.cursor(SortKey::Int(self.scheduled_start), &self.job_id)
    }
}

/// A job with its work order, read in one statement with a page of jobs
/// ([`OrgStore::list_scheduled_jobs`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduledJob {
    pub job: Job,
    pub work_order: WorkOrder,
}

positional!(ScheduledJob {
    job: Job,
    work_order: WorkOrder,
});

/// The two records share column names (`status`, `created_at`), which a read by name would
/// take from the job's columns for both: read by position, as every other read of it is.
impl<'r> sqlx::FromRow<'r, sqlx::any::AnyRow> for ScheduledJob {
    fn from_row(row: &'r sqlx::any::AnyRow) -> Result<Self, sqlx::Error> {
        read_checked(row)
    }
}

/// Each job's work order, joined to a page of jobs.
const WITH_WORK_ORDER: Joined = Joined {
    table: "work_orders",
    columns: WORK_ORDER_COLUMNS,
    key: "work_order_id",
};

/// A job with its work order and its first assignments with their employees, read with a
/// page of jobs ([`OrgStore::list_staffed_jobs`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaffedJob {
    pub job: Job,
    pub work_order: WorkOrder,
    /// In the order they were made, as [`OrgStore::staffing_of`] reads them.
    pub staff: Vec<Staffed>,
}

/// A row of [`OrgStore::list_staffed_jobs`]' one statement: a job of the page with its work
/// order, once for each of its first assignments, or once without one. The job and its work
/// order are read from its first row only (`None` in the others): they are most of a row's
/// columns, and were a twentieth of a schedule query's instructions read again.
struct StaffedRow {
    scheduled: Option<ScheduledJob>,
    staffed: Option<Staffed>,
}

/// The page's columns, the assignment's with its employee's, then the assignment's place in
/// its job's crew ([`super::NTH`]), which says whether the row is its job's first.
impl super::positional::Positional for StaffedRow {
    const WIDTH: usize = ScheduledJob::WIDTH + Staffed::WIDTH + 1;

    fn names(names: &mut Vec<&'static str>) {
        ScheduledJob::names(names);
        Staffed::names(names);
        names.push(super::NTH);
    }

    fn read(row: &impl Columns, at: usize) -> Result<Self, sqlx::Error> {
        let staffed_at = at + ScheduledJob::WIDTH;
        let nth: Option<i64> = column(row, staffed_at + Staffed::WIDTH)?;
        let scheduled = match nth {
            Some(nth) if nth > 1 => None,
            _ => Some(ScheduledJob::read(row, at)?),
        };
        Ok(StaffedRow {
            scheduled,
            staffed: Option::<Staffed>::read(row, staffed_at)?,
        })
    }
}

impl<'r> sqlx::FromRow<'r, sqlx::any::AnyRow> for StaffedRow {
    fn from_row(row: &'r sqlx::any::AnyRow) -> Result<Self, sqlx::Error> {
        read_checked(row)
    }
}

/// The jobs of [`StaffedRow`]s in their order, each with the assignments of its rows. A row
/// that is not its job's first comes after that job's first (the statement's order).
fn staffed_jobs(rows: Vec<StaffedRow>) -> Result<Vec<StaffedJob>, sqlx::Error> {
    let mut jobs: Vec<StaffedJob> = Vec::new();
    for StaffedRow { scheduled, staffed } in rows {
        if let Some(ScheduledJob { job, work_order }) = scheduled {
            jobs.push(StaffedJob {
                job,
                work_order,
                staff: Vec::new(),
            });
        }
        let Some(staffed) = staffed else {
            continue;
        };
        match jobs.last_mut() {
            Some(last) if last.job.job_id == staffed.assignment.job_id => last.staff.push(staffed),
            _ => {
                return Err(sqlx::Error::Protocol(
                    "a job's crew came apart from its job".to_owned(),
                ))
            }
        }
    }
    Ok(jobs)
}

/// Assignments with their employees, as [`OrgStore::staffing_of`] reads them.
const STAFFING: ChildList<Staffed> = ChildList {
    // USING merges the shared columns, so the filters' unqualified `tenant_id`,
    // `organization_guid` and `employee_id` name one column each.
    table: "job_assignments JOIN employees USING (tenant_id, organization_guid, employee_id)",
    columns: "job_id, employee_id, assigned_at, name, role, email, phone, created_at",
    parent_column: "job_id",
    order: "assigned_at, employee_id",
    parent_of: |staffed: &Staffed| &staffed.assignment.job_id,
};

/// An employee on a job.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct Assignment {
    pub job_id: String,
    pub employee_id: String,
    pub assigned_at: UnixTime,
}

positional!(Assignment {
    job_id,
    employee_id,
    assigned_at
});

/// An assignment with its employee, read in one statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Staffed {
    pub assignment: Assignment,
    pub employee: Employee,
}

/// A joined row holds both records' columns under their own names (the two tables share only
/// the join's columns), so each record's own decoder reads it.
impl<'r, R: sqlx::Row> sqlx::FromRow<'r, R> for Staffed
where
    Assignment: sqlx::FromRow<'r, R>,
    Employee: sqlx::FromRow<'r, R>,
{
    fn from_row(row: &'r R) -> Result<Self, sqlx::Error> {
        Ok(Staffed {
            assignment: Assignment::from_row(row)?,
            employee: Employee::from_row(row)?,
        })
    }
}

/// By position, the row [`OrgStore::staffing_of`] reads: the assignment's columns, then the
/// employee's but its `employee_id`, which the join shares.
impl super::positional::Positional for Staffed {
    const WIDTH: usize = 8;

    fn names(names: &mut Vec<&'static str>) {
        names.extend([
            "job_id",
            "employee_id",
            "assigned_at",
            "name",
            "role",
            "email",
            "phone",
            "created_at",
        ]);
    }

    fn read(row: &impl super::positional::Columns, at: usize) -> Result<Self, sqlx::Error> {
        use super::positional::column;
        let assignment = Assignment {
            job_id: column(row, at)?,
            employee_id: column(row, at + 1)?,
            assigned_at: column(row, at + 2)?,
        };
        let employee = Employee {
            employee_id: assignment.employee_id.clone(),
            name: column(row, at + 3)?,
            role: column(row, at + 4)?,
            email: column(row, at + 5)?,
            phone: column(row, at + 6)?,
            created_at: column(row, at + 7)?,
        };
        Ok(Staffed {
            assignment,
            employee,
        })
    }
}

#[derive(Clone, Debug)]
pub struct NewJob<'a> {
    pub job_id: &'a str,
    pub work_order_id: &'a str,
    pub title: &'a str,
    pub scheduled_start: UnixTime,
    pub scheduled_end: UnixTime,
}

#[derive(Clone, Debug, Default)]
pub struct JobFilter {
    pub status: Option<JobStatus>,
    pub assignee_id: Option<String>,
    /// Jobs whose scheduled window overlaps `[from, to)`.
    pub scheduled_from: Option<UnixTime>,
    pub scheduled_to: Option<UnixTime>,
}

impl OrgStore<'_> {
    /// A SCHEDULED job on a work order that is not COMPLETED or CANCELLED.
    pub async fn create_job(&self, new: &NewJob<'_>, now: UnixTime) -> Result<Job, StoreError> {
        let created: Option<Job> = sqlx::query_as(&format!(
            "INSERT INTO jobs (tenant_id, organization_guid, job_id, work_order_id, title, status, \
             scheduled_start, scheduled_end, created_at) \
             SELECT tenant_id, organization_guid, $3, work_order_id, $4, 'SCHEDULED', $5, $6, $7 \
             FROM work_orders WHERE tenant_id = $1 AND organization_guid = $2 \
               AND work_order_id = $8 AND status NOT IN ('COMPLETED', 'CANCELLED') \
             RETURNING {JOB_COLUMNS}"
        ))
        .bind(self.tenant.id_str())
        .bind(self.organization_guid)
        .bind(new.job_id)
        .bind(new.title)
        .bind(new.scheduled_start)
        .bind(new.scheduled_end)
        .bind(now)
        .bind(new.work_order_id)
        .fetch_optional(self.tenant.pool())
        .await
        .map_err(|e| StoreError::from_sqlx(e, Entity::Job))?;
        if let Some(job) = created {
            return Ok(job);
        }
        match self
            .work_orders(&[new.work_order_id.to_owned()])
            .await?
            .pop()
        {
            None => Err(StoreError::NotFound(Entity::WorkOrder)),
            Some(order) => Err(StoreError::Refused(format!(
                "the work order is {}; no new jobs can be added to it",
                order.status
            ))),
        }
    }

    pub async fn jobs(&self, ids: &[String]) -> Result<Vec<Job>, StoreError> {
        self.by_ids("jobs", JOB_COLUMNS, "job_id", ids).await
    }

    /// The first `first` jobs of each of these work orders, each order's by scheduled start.
    pub async fn jobs_of(
        &self,
        work_order_ids: &[String],
        first: u32,
    ) -> Result<Vec<Job>, StoreError> {
        self.children(
            &ChildList {
                table: "jobs",
                columns: JOB_COLUMNS,
                parent_column: "work_order_id",
                order: "scheduled_start, job_id",
                parent_of: |job: &Job| &job.work_order_id,
            },
            work_order_ids,
            first,
        )
        .await
    }

    pub async fn list_jobs(
        &self,
        filter: &JobFilter,
        page: &PageRequest,
    ) -> Result<Page<Job>, StoreError> {
        self.page_of(&JOBS, self.job_filter("", filter), page).await
    }

    /// [`OrgStore::list_jobs`] with each job's work order, in the same statement: for a
    /// reader that asks for both (a schedule), one trip to the database instead of two.
    pub async fn list_scheduled_jobs(
        &self,
        filter: &JobFilter,
        page: &PageRequest,
    ) -> Result<Page<ScheduledJob>, StoreError> {
        let filtered = self.job_filter("", filter);
        self.joined_page_of(&JOBS, Some(&WITH_WORK_ORDER), filtered, page)
            .await
    }

    /// [`OrgStore::list_scheduled_jobs`] with each job's first `first` assignments and their
    /// employees (a schedule with its crews). On PostgreSQL one statement (the crews joined
    /// to the page, a job's row repeated for each of its crew), where a trip to the database
    /// is much of a read's cost; on SQLite, whose trips stay in the process and whose window
    /// functions copy each partition into a table of their own, the page and then
    /// [`OrgStore::staffing_of`] for its jobs.
    pub async fn list_staffed_jobs(
        &self,
        filter: &JobFilter,
        page: &PageRequest,
        first: u32,
    ) -> Result<Page<StaffedJob>, StoreError> {
        if self.tenant.backend() != crate::db::Backend::Postgres {
            let read = self.list_scheduled_jobs(filter, page).await?;
            let ids: Vec<String> = read.items.iter().map(|r| r.job.job_id.clone()).collect();
            // Each crew goes to its job's place on the page, found by the job's id: no copy
            // of the id per row.
            let place: HashMap<&str, usize> = ids
                .iter()
                .enumerate()
                .map(|(i, id)| (id.as_str(), i))
                .collect();
            let mut crews: Vec<Vec<Staffed>> = ids.iter().map(|_| Vec::new()).collect();
            for staffed in self.staffing_of(&ids, first).await? {
                let crew = place.get(staffed.assignment.job_id.as_str());
                if let Some(crew) = crew.and_then(|&i| crews.get_mut(i)) {
                    crew.push(staffed);
                }
            }
            let items = read.items.into_iter().zip(crews).map(
                |(ScheduledJob { job, work_order }, staff)| StaffedJob {
                    staff,
                    job,
                    work_order,
                },
            );
            return Ok(Page {
                items: items.collect(),
                has_next_page: read.has_next_page,
                total: read.total,
            });
        }
        let beside = STAFFING.beside(first);
        let filtered = self.job_filter("", filter);
        let (rows, total) = self
            .joined_rows::<StaffedRow>(&JOBS, Some(&WITH_WORK_ORDER), Some(&beside), filtered, page)
            .await?;
        Ok(Page::from_rows(staffed_jobs(rows)?, page.first, total))
    }

    pub async fn count_jobs(&self, filter: &JobFilter) -> Result<i64, StoreError> {
        self.count_of(self.job_filter("SELECT COUNT(*) FROM jobs", filter))
            .await
    }

    fn job_filter(&self, select: &str, filter: &JobFilter) -> Sql {
        let mut sql = self.scoped(select);
        if let Some(status) = filter.status {
            sql.push(" AND status = ").bind(status.as_str());
        }
        if let Some(assignee) = &filter.assignee_id {
            sql.push(
                " AND job_id IN (SELECT a.job_id FROM job_assignments a \
                 WHERE a.tenant_id = jobs.tenant_id AND a.employee_id = ",
            )
            .bind(assignee.as_str())
            .push(")");
        }
        if let Some(from) = filter.scheduled_from {
            sql.push(" AND scheduled_end > ").bind(from);
        }
        if let Some(to) = filter.scheduled_to {
            sql.push(" AND scheduled_start < ").bind(to);
        }
        sql
    }

    /// Puts an employee on a job that is not yet COMPLETED. Assigning someone already on the
    /// job changes nothing.
    pub async fn assign_job(
        &self,
        job_id: &str,
        employee_id: &str,
        now: UnixTime,
    ) -> Result<Job, StoreError> {
        let inserted = sqlx::query(
            "INSERT INTO job_assignments (tenant_id, job_id, employee_id, organization_guid, \
             assigned_at) \
             SELECT j.tenant_id, j.job_id, e.employee_id, j.organization_guid, $5 \
             FROM jobs j JOIN employees e \
               ON e.tenant_id = j.tenant_id AND e.organization_guid = j.organization_guid \
             WHERE j.tenant_id = $1 AND j.organization_guid = $2 AND j.job_id = $3 \
               AND e.employee_id = $4 AND j.status <> 'COMPLETED' \
             ON CONFLICT (tenant_id, job_id, employee_id) DO NOTHING",
        )
        .bind(self.tenant.id_str())
        .bind(self.organization_guid)
        .bind(job_id)
        .bind(employee_id)
        .bind(now)
        .execute(self.tenant.pool())
        .await?;
        let job = self
            .jobs(&[job_id.to_owned()])
            .await?
            .pop()
            .ok_or(StoreError::NotFound(Entity::Job))?;
        if inserted.rows_affected() == 0 {
            if self.employees(&[employee_id.to_owned()]).await?.is_empty() {
                return Err(StoreError::NotFound(Entity::Employee));
            }
            if job.status == JobStatus::Completed {
                return Err(StoreError::Refused(
                    "the job is COMPLETED; its assignments can no longer change".into(),
                ));
            }
        }
        Ok(job)
    }

    /// The first `first` assignments of each of these jobs, each job's in the order they were
    /// made.
    pub async fn assignments_of(
        &self,
        job_ids: &[String],
        first: u32,
    ) -> Result<Vec<Assignment>, StoreError> {
        self.children(
            &ChildList {
                table: "job_assignments",
                columns: "job_id, employee_id, assigned_at",
                parent_column: "job_id",
                order: "assigned_at, employee_id",
                parent_of: |assignment: &Assignment| &assignment.job_id,
            },
            job_ids,
            first,
        )
        .await
    }

    /// [`OrgStore::assignments_of`] with each assignment's employee, in the same statement:
    /// for a reader that asks for both, one trip to the database instead of two. Every
    /// assignment has its employee (a foreign key that cascades), so the join drops none.
    pub async fn staffing_of(
        &self,
        job_ids: &[String],
        first: u32,
    ) -> Result<Vec<Staffed>, StoreError> {
        self.children(&STAFFING, job_ids, first).await
    }

    /// SCHEDULED → IN_PROGRESS.
    pub async fn start_job(&self, job_id: &str, now: UnixTime) -> Result<Job, StoreError> {
        let mut sql = Sql::new("UPDATE jobs SET status = 'IN_PROGRESS', started_at = ");
        sql.bind(now);
        self.move_job(sql, job_id, JobStatus::Scheduled, "started")
            .await
    }

    /// IN_PROGRESS → COMPLETED with the report. Without `minutes_worked`, the time from
    /// start to now is recorded.
    pub async fn complete_job(
        &self,
        job_id: &str,
        notes: &str,
        minutes_worked: Option<i64>,
        now: UnixTime,
    ) -> Result<Job, StoreError> {
        let mut sql = Sql::new("UPDATE jobs SET status = 'COMPLETED', completed_at = ");
        sql.bind(now)
            .push(", completion_notes = ")
            .bind(notes)
            .push(", minutes_worked = COALESCE(")
            .bind(minutes_worked)
            .push(", (")
            .bind(now)
            .push(" - started_at) / 60)");
        self.move_job(sql, job_id, JobStatus::InProgress, "completed")
            .await
    }

    /// Runs a status change that applies only from `from`, and explains a refusal.
    async fn move_job(
        &self,
        mut sql: Sql,
        job_id: &str,
        from: JobStatus,
        verb: &str,
    ) -> Result<Job, StoreError> {
        sql.push(" WHERE tenant_id = ")
            .bind(self.tenant.id_str())
            .push(" AND organization_guid = ")
            .bind(self.organization_guid)
            .push(" AND job_id = ")
            .bind(job_id)
            .push(" AND status = ")
            .bind(from.as_str())
            .push(&format!(" RETURNING {JOB_COLUMNS}"));
        if let Some(job) = sql.query_as().fetch_optional(self.tenant.pool()).await? {
            return Ok(job);
        }
        match self.jobs(&[job_id.to_owned()]).await?.pop() {
            None => Err(StoreError::NotFound(Entity::Job)),
            Some(job) => Err(StoreError::Refused(format!(
                "the job is {}; only a {} job can be {verb}",
                job.status, from
            ))),
        }
    }
}
