//! The bench's own tenant, made as an operator would: the `fieldauth` CLI for the tenant,
//! client, user and organization, then the GraphQL API's mutations for the field-service
//! records the `api` workload reads.

use std::path::PathBuf;
use std::process::Stdio;

use anyhow::{anyhow, bail, Context, Result};
use reqwest::{Client, StatusCode};
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use crate::flows::expect_status;

pub const TENANT: &str = "bench";
pub const CLIENT_ID: &str = "bench-spa";
/// The users are `bench-000`, `bench-001` and so on.
pub fn username(index: usize) -> String {
    format!("bench-{index:03}")
}
/// Nothing listens there: the flows read the redirect, they never follow it.
pub const REDIRECT_URI: &str = "http://127.0.0.1:9/callback";

/// How many records the `api` workload's query reads.
pub const JOBS: usize = 20;
const EMPLOYEES: usize = 5;
const WORK_ORDERS: usize = 4;
const ASSIGNEES_PER_JOB: usize = 2;

/// What the CLI made.
#[derive(Debug, Clone)]
pub struct Tenant {
    pub password: String,
    pub organization: String,
}

/// Runs the `fieldauth` binary against one database.
pub struct Cli {
    pub bin: PathBuf,
    pub database_url: String,
}

impl Cli {
    /// `fieldauth --database-url … ARGS --json`: the one JSON object it prints.
    async fn run(&self, args: &[&str], stdin: Option<&str>) -> Result<Value> {
        let mut child = Command::new(&self.bin)
            .arg("--database-url")
            .arg(&self.database_url)
            .args(["--log", "warn"])
            .args(args)
            .arg("--json")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("cannot run {}", self.bin.display()))?;
        let mut input = child
            .stdin
            .take()
            .ok_or_else(|| anyhow!("no stdin for the CLI"))?;
        if let Some(text) = stdin {
            input.write_all(text.as_bytes()).await?;
        }
        drop(input);
        let output = child.wait_with_output().await?;
        let command = format!("fieldauth {}", args.join(" "));
        if !output.status.success() {
            bail!(
                "`{command}` failed ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        serde_json::from_slice(&output.stdout)
            .with_context(|| format!("`{command}` did not print one JSON object"))
    }
}

/// Tenant `bench`, its public client `bench-spa` (every scope), `users` users sharing a
/// random password, and one organization they all belong to.
pub async fn tenant(cli: &Cli, users: usize) -> Result<Tenant> {
    cli.run(&["tenant", "create", TENANT, "--name", "Bench"], None)
        .await?;
    cli.run(
        &[
            "client",
            "create",
            "--tenant",
            TENANT,
            "--client-id",
            CLIENT_ID,
            "--redirect-uri",
            REDIRECT_URI,
        ],
        None,
    )
    .await?;
    let password = random_password()?;
    let org = cli
        .run(
            &["org", "create", "--tenant", TENANT, "--name", "Bench Org"],
            None,
        )
        .await?;
    let organization = org["organization_guid"]
        .as_str()
        .ok_or_else(|| anyhow!("`org create` printed no organization_guid: {org}"))?
        .to_owned();
    for index in 0..users {
        let username = username(index);
        let name = format!("Bench User {index}");
        let email = format!("{username}@example.com");
        let user = [
            "user",
            "create",
            "--tenant",
            TENANT,
            "--username",
            &username,
            "--name",
            &name,
            "--email",
            &email,
            "--password-stdin",
        ];
        cli.run(&user, Some(&password)).await?;
        let member = [
            "org",
            "add-member",
            "--tenant",
            TENANT,
            "--org",
            &organization,
            "--username",
            &username,
        ];
        cli.run(&member, None).await?;
    }
    Ok(Tenant {
        password,
        organization,
    })
}

fn random_password() -> Result<String> {
    let mut bytes = [0u8; 18];
    aws_lc_rs::rand::fill(&mut bytes).map_err(|_| anyhow!("no randomness from the OS"))?;
    use base64::Engine;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

/// The scopes a token needs to seed the records and to run the `api` query.
pub const API_SCOPE: &str = "openid jobs workOrders employees customers";

/// The `api` workload's query: a page of jobs with their work orders and assignees.
pub const JOBS_QUERY: &str = "query BenchJobs { jobs(first: 20) { totalCount nodes { id title \
    status scheduledStart scheduledEnd workOrder { id number description status } \
    assignments { assignedAt employee { id name role } } } } }";

/// Employees, customers, one work order per customer, and `JOBS` jobs spread over the work
/// orders, each with `ASSIGNEES_PER_JOB` employees. Returns the work orders' ids.
pub async fn field_records(client: &Client, api_url: &str, token: &str) -> Result<Vec<String>> {
    let graphql = GraphQl {
        client,
        url: format!("{api_url}/api"),
        token,
    };
    let mut employees = Vec::new();
    for i in 0..EMPLOYEES {
        let input = json!({ "name": format!("Technician {i:02}"), "role": "TECHNICIAN" });
        let data = graphql
            .mutate(
                "mutation($input: CreateEmployeeInput!) { createEmployee(input: $input) { id } }",
                input,
            )
            .await?;
        employees.push(id_at(&data, "createEmployee")?);
    }
    let mut work_orders = Vec::new();
    for i in 0..WORK_ORDERS {
        let input = json!({ "name": format!("Customer {i:02}") });
        let data = graphql
            .mutate(
                "mutation($input: CreateCustomerInput!) { createCustomer(input: $input) { id } }",
                input,
            )
            .await?;
        let customer = id_at(&data, "createCustomer")?;
        let input = json!({ "customerId": customer, "description": format!("Maintenance {i:02}") });
        let data = graphql
            .mutate(
                "mutation($input: CreateWorkOrderInput!) { createWorkOrder(input: $input) { id } }",
                input,
            )
            .await?;
        work_orders.push(id_at(&data, "createWorkOrder")?);
    }
    for i in 0..JOBS {
        let work_order = &work_orders[i % work_orders.len()];
        let input = json!({
            "workOrderId": work_order,
            "title": format!("Visit {i:02}"),
            "scheduledStart": format!("2030-01-{:02}T08:00:00Z", i + 1),
            "scheduledEnd": format!("2030-01-{:02}T12:00:00Z", i + 1),
        });
        let data = graphql
            .mutate(
                "mutation($input: CreateJobInput!) { createJob(input: $input) { id } }",
                input,
            )
            .await?;
        let job = id_at(&data, "createJob")?;
        for k in 0..ASSIGNEES_PER_JOB {
            let employee = &employees[(i + k) % employees.len()];
            let input = json!({ "jobId": job, "employeeId": employee });
            graphql
                .mutate(
                    "mutation($input: AssignJobInput!) { assignJob(input: $input) { id } }",
                    input,
                )
                .await?;
        }
    }
    Ok(work_orders)
}

struct GraphQl<'a> {
    client: &'a Client,
    url: String,
    token: &'a str,
}

impl GraphQl<'_> {
    /// Runs a mutation with `$input`; its `data`, or an error carrying the GraphQL errors.
    async fn mutate(&self, mutation: &str, input: Value) -> Result<Value> {
        let body = json!({ "query": mutation, "variables": { "input": input } });
        let response = self
            .client
            .post(&self.url)
            .bearer_auth(self.token)
            .json(&body)
            .send()
            .await
            .context("seeding the API")?;
        let response = expect_status(response, StatusCode::OK, "seeding the API").await?;
        let body: Value = response.json().await?;
        if let Some(errors) = body.get("errors") {
            bail!("seeding the API: {errors}");
        }
        Ok(body["data"].clone())
    }
}

fn id_at(data: &Value, field: &str) -> Result<String> {
    data[field]["id"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| anyhow!("{field} returned no id: {data}"))
}
