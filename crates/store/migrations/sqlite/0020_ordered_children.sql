-- The API reads the first assignments of many jobs at once (`OrgStore::children`), numbering
-- each job's rows in their order with ROW_NUMBER(). With only the primary key (job, then
-- employee) SQLite read each row from the table and sorted them before numbering; with an
-- index in exactly the list's order that holds every column, the rows arrive in order and
-- the table is not read. That statement's share of an uncached 20-job API query fell from
-- 14% to 9% of the server's CPU (docs/performance.md). PostgreSQL plans this statement as a
-- sort in memory at these sizes whatever the indexes, so it has no such migration.
CREATE INDEX job_assignments_in_order
    ON job_assignments (tenant_id, job_id, assigned_at, employee_id, organization_guid);
