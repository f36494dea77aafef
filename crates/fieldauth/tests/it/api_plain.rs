//! Records answer their plain fields in place (`api::schema::plain`), not as a future each.
//! What that path answers must be what async-graphql's own resolution answers: every field of
//! every record, guards and errors included, with keys in the selection's order (GraphQL,
//! "Serialized Map Ordering"). A selection inside an inline fragment takes async-graphql's own
//! path, so each query here is asked both ways and the answers compared.

use serde_json::{json, Value};
use store::testing::TestDatabase;

use crate::api_areas::{basics, CREATE_INVOICE, CREATE_JOB};
use crate::api_support::{gql, ok, setup, token, ALL_API};
use crate::flow::Seeded;
use crate::helpers::{on_both_backends, TestApp};

on_both_backends!(
    every_record_answers_as_async_graphql_does,
    keys_come_in_the_order_they_were_selected,
    a_guarded_field_is_refused_beside_the_plain_ones,
    answers_of_a_key_selected_twice_are_merged,
);

/// Every field of the records that have plain ones, and their nested records, as
/// `{ ...fields }`; `wrap` puts a selection in a fragment or leaves it as it is.
fn everything(wrap: impl Fn(&str, &str) -> String) -> String {
    let employee = wrap("Employee", "id name role email phone createdAt __typename");
    let customer = wrap(
        "Customer",
        "id name createdAt billingProfile { email currency paymentTermsDays }
         properties { id label accessNotes address { street city region postalCode country } }
         contacts { name email phone }",
    );
    let work_order = wrap(
        "WorkOrder",
        &format!(
            "id number description status createdAt updatedAt customer {customer}
             contract {{ terms value {{ amountCents currency }} startsOn endsOn }}"
        ),
    );
    let job = wrap(
        "Job",
        &format!(
            "id title status scheduledStart scheduledEnd startedAt createdAt
             completionReport {{ notes startedAt completedAt minutesWorked }}
             workOrder {work_order}
             assignments {{ assignedAt employee {employee} }}
             renamed: title again: workOrder {{ number }}"
        ),
    );
    let invoice = wrap(
        "Invoice",
        "id number status currency issuedAt dueOn createdAt
         totals { total { amountCents } balanceDue { amountCents } }
         customer { name } workOrder { id }",
    );
    format!(
        "{{ jobs {{ nodes {job} }} invoices {{ nodes {invoice} }}
            employees {{ nodes {employee} }} customers {{ nodes {customer} }} }}"
    )
}

fn plain(_: &str, fields: &str) -> String {
    format!("{{ {fields} }}")
}

fn in_fragment(on: &str, fields: &str) -> String {
    format!("{{ ... on {on} {{ {fields} }} }}")
}

/// Two jobs on one work order with a contract, one assigned, started and completed, an
/// employee with a phone and none, a property, an issued invoice.
async fn records(app: &TestApp, token: &str) {
    let b = basics(app, token).await;
    ok(
        app,
        token,
        "mutation($input: CreateEmployeeInput!) { createEmployee(input: $input) { id } }",
        json!({ "input": { "name": "Sam Okafor", "role": "SUPERVISOR",
            "email": "sam@acme.example", "phone": "+1 555 0199" } }),
    )
    .await;
    ok(
        app,
        token,
        "mutation($input: AddPropertyInput!) { addProperty(input: $input) { id } }",
        json!({ "input": { "customerId": b.customer, "label": "Boiler room",
            "accessNotes": "Ring twice", "address": { "street": "120 Harbor Way",
            "city": "Portland", "postalCode": "97201", "country": "US" } } }),
    )
    .await;
    let order = ok(
        app,
        token,
        "mutation($input: CreateWorkOrderInput!) { createWorkOrder(input: $input) { id } }",
        json!({ "input": { "customerId": b.customer, "description": "Backflow testing",
            "contract": { "terms": "Net 30", "value": { "amountCents": 480000, "currency": "USD" },
                          "startsOn": "2026-12-01", "endsOn": "2027-11-30" } } }),
    )
    .await["createWorkOrder"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut jobs = Vec::new();
    for (day, title) in [(2, "Test the valve"), (3, "Write the report")] {
        let created = ok(
            app,
            token,
            CREATE_JOB,
            json!({ "input": { "workOrderId": order, "title": title,
                "scheduledStart": format!("2026-12-0{day}T09:00:00Z"),
                "scheduledEnd": format!("2026-12-0{day}T11:00:00Z") } }),
        )
        .await;
        jobs.push(created["createJob"]["id"].as_str().unwrap().to_owned());
    }
    for mutation in [
        "mutation($id: ID!, $employee: ID!) {
           assignJob(input: { jobId: $id, employeeId: $employee }) { id } }",
        "mutation($id: ID!) { startJob(input: { id: $id }) { id } }",
        "mutation($id: ID!) { completeJob(input: { id: $id, notes: \"Passed\",
           minutesWorked: 45 }) { id } }",
    ] {
        ok(
            app,
            token,
            mutation,
            json!({ "id": jobs[0], "employee": b.employee }),
        )
        .await;
    }
    let invoice = ok(
        app,
        token,
        CREATE_INVOICE,
        json!({ "input": { "customerId": b.customer, "workOrderId": order,
            "taxRateBasisPoints": 825,
            "lines": [{ "description": "Labor", "quantity": 2, "unitPriceCents": 9000 }] } }),
    )
    .await["createInvoice"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    ok(
        app,
        token,
        "mutation($id: ID!) { issueInvoice(input: { id: $id, dueOn: \"2027-01-15\" }) { id } }",
        json!({ "id": invoice }),
    )
    .await;
}

/// A server with the records of [`records`], and a token of tenant alpha for every area.
async fn with_records(db: TestDatabase) -> (TestApp, Seeded, String) {
    let app = TestApp::spawn(db).await;
    let seeded = setup(&app).await;
    let token = token(&app, &app.browser(), &seeded.alpha, ALL_API).await;
    records(&app, &token).await;
    (app, seeded, token)
}

async fn every_record_answers_as_async_graphql_does(db: TestDatabase) {
    let (app, _, token) = with_records(db).await;

    let direct = ok(&app, &token, &everything(plain), json!({})).await;
    let standard = ok(&app, &token, &everything(in_fragment), json!({})).await;
    assert_eq!(direct, standard);
    // What both read: the records as written, so the comparison compared something.
    let jobs = direct["jobs"]["nodes"].as_array().unwrap();
    assert_eq!(jobs.len(), 2);
    let done = &jobs[0];
    assert_eq!(done["title"], "Test the valve");
    assert_eq!(done["renamed"], "Test the valve");
    assert_eq!(done["status"], "COMPLETED");
    assert_eq!(done["scheduledStart"], "2026-12-02T09:00:00Z");
    assert_eq!(done["completionReport"]["minutesWorked"], 45);
    assert_eq!(done["workOrder"]["contract"]["terms"], "Net 30");
    assert_eq!(done["workOrder"]["customer"]["name"], "Harbor View");
    assert_eq!(
        done["workOrder"]["customer"]["properties"][0]["accessNotes"],
        "Ring twice"
    );
    assert_eq!(done["again"]["number"], "WO-000002");
    assert_eq!(done["assignments"][0]["employee"]["name"], "Maria Lopez");
    assert_eq!(done["assignments"][0]["employee"]["__typename"], "Employee");
    assert_eq!(jobs[1]["startedAt"], Value::Null);
    assert_eq!(jobs[1]["completionReport"], Value::Null);
    let invoice = &direct["invoices"]["nodes"][0];
    assert_eq!(invoice["status"], "ISSUED");
    assert_eq!(invoice["dueOn"], "2027-01-15");
    assert_eq!(invoice["totals"]["total"]["amountCents"], 19485);
    let employees = direct["employees"]["nodes"].as_array().unwrap();
    assert_eq!(employees.len(), 2);
    assert!(employees
        .iter()
        .any(|e| e["phone"] == "+1 555 0199" && e["role"] == "SUPERVISOR"));
    assert!(employees.iter().any(|e| e["phone"] == Value::Null));
    app.stop().await;
}

/// The body as sent, so the order of its keys can be read.
async fn raw(app: &TestApp, token: &str, query: &str) -> String {
    let response = app
        .http
        .post(format!("{}/api", app.api_url))
        .bearer_auth(token)
        .json(&json!({ "query": query }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response.text().await.unwrap()
}

/// Where each key first appears in `body`.
fn positions(body: &str, keys: &[&str]) -> Vec<usize> {
    keys.iter()
        .map(|key| {
            body.find(&format!("\"{key}\":"))
                .unwrap_or_else(|| panic!("{key} in {body}"))
        })
        .collect()
}

async fn keys_come_in_the_order_they_were_selected(db: TestDatabase) {
    let (app, _, token) = with_records(db).await;
    // A loaded field (answered after the batch) first, then plain ones, an alias, a nested
    // list whose plain field follows its loaded one.
    let body = raw(
        &app,
        &token,
        "{ jobs(first: 1) { nodes { workOrder { number id } title first: id
           assignments { employee { name } assignedAt } status } } }",
    )
    .await;
    let keys = [
        "workOrder",
        "number",
        "id",
        "title",
        "first",
        "assignments",
        "employee",
        "name",
        "assignedAt",
        "status",
    ];
    let found = positions(&body, &keys);
    assert!(
        found.windows(2).all(|w| w[0] < w[1]),
        "keys out of order: {body}"
    );
    app.stop().await;
}

async fn a_guarded_field_is_refused_beside_the_plain_ones(db: TestDatabase) {
    let (app, seeded, _) = with_records(db).await;
    // Without `customers`, a work order's customer is refused; its plain fields still answer.
    let narrow = token(&app, &app.browser(), &seeded.alpha, "jobs workOrders").await;
    let query = |wrap: fn(&str, &str) -> String| {
        format!(
            "{{ workOrders {{ nodes {} }} }}",
            wrap("WorkOrder", "id number customer { name } status")
        )
    };
    let direct = gql(&app, &narrow, &query(plain), json!({})).await;
    let standard = gql(&app, &narrow, &query(in_fragment), json!({})).await;
    // The same but for where the field stands in each query's text.
    let at = |body: &Value| -> Vec<Value> {
        body["errors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["locations"][0]["column"].clone())
            .collect()
    };
    assert_eq!(at(&direct), [json!(34), json!(34)]);
    assert_eq!(at(&standard), [json!(53), json!(53)]);
    let mut moved = direct.clone();
    for error in moved["errors"].as_array_mut().unwrap() {
        error["locations"][0]["column"] = json!(53);
    }
    assert_eq!(moved, standard);
    let nodes = direct["data"]["workOrders"]["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 2);
    for node in nodes {
        assert!(node["number"].as_str().unwrap().starts_with("WO-"));
        assert!(node["status"].is_string());
        // async-graphql leaves a failed field out (both ways), where GraphQL has it null.
        assert!(node.get("customer").is_none(), "{node}");
    }
    let errors = direct["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 2, "{direct:#}");
    for error in errors {
        assert_eq!(error["extensions"]["code"], "FORBIDDEN", "{error}");
        assert_eq!(error["path"][0], "workOrders");
        assert_eq!(error["path"][3], "customer");
    }
    app.stop().await;
}

/// A key selected twice answers once, the two selections merged (GraphQL, "Field
/// Collection"), whether the second comes directly or in a fragment: such a request's
/// records are not written as they are answered (`api::schema::plain::Written`), whose JSON
/// could not be merged.
async fn answers_of_a_key_selected_twice_are_merged(db: TestDatabase) {
    let (app, _, token) = with_records(db).await;
    let once = ok(
        &app,
        &token,
        "{ jobs { nodes { title workOrder { id number customer { name createdAt } } } } }",
        json!({}),
    )
    .await;
    assert_eq!(once["jobs"]["nodes"][0]["workOrder"]["number"], "WO-000002");
    for twice in [
        "{ jobs { nodes { title workOrder { id customer { name } }
           workOrder { number customer { createdAt } } } } }",
        "{ jobs { nodes { title workOrder { id customer { name } }
           ... on Job { workOrder { number customer { createdAt } } } } } }",
        "{ jobs { nodes { title workOrder { id customer { name } } } }
           jobs { nodes { workOrder { number customer { createdAt } } } } }",
    ] {
        assert_eq!(ok(&app, &token, twice, json!({})).await, once, "{twice}");
    }
    app.stop().await;
}
