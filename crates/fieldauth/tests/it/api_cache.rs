//! The API's response cache: a repeated query is answered from it, and never once the data,
//! the token or the grant says otherwise: after a write through the API, after a write that
//! bypasses the API (the CLI, another node, an operator's SQL), for another token of the same
//! user and organization with other scopes, and after the grant is revoked.

use serde_json::{json, Value};
use store::testing::TestDatabase;
use store::{EmployeeRole, NewEmployee, TenantId};

use crate::api_areas::CREATE_CUSTOMER;
use crate::api_support::{gql, ok, one_error, setup, token, ALL_API};
use crate::flow::jwt_parts;
use crate::helpers::{on_both_backends, TestApp};

on_both_backends!(
    a_repeated_query_is_served_again_until_the_data_changes,
    a_cached_answer_is_never_served_to_another_token_or_a_revoked_grant,
);

const CUSTOMERS: &str = "{ customers { totalCount nodes { name } } }";
const EMPLOYEES: &str = "{ employees { totalCount nodes { name } } }";

/// The API's cache counters: (hits, misses, bypasses).
async fn lookups(app: &TestApp) -> (u64, u64, u64) {
    let text = app
        .get(&format!("{}/metrics", app.metrics_url))
        .await
        .text()
        .await
        .unwrap();
    let count = |result: &str| {
        let sample = format!("fieldauth_api_response_cache_lookups_total{{result=\"{result}\"}} ");
        text.lines()
            .find_map(|line| line.strip_prefix(&sample))
            .map_or(0, |value| value.parse().unwrap())
    };
    (count("hit"), count("miss"), count("bypass"))
}

async fn create_customer(app: &TestApp, token: &str, name: &str) {
    ok(
        app,
        token,
        CREATE_CUSTOMER,
        json!({ "input": { "name": name } }),
    )
    .await;
}

/// An employee written straight to the store, as the CLI, another node or SQL would.
async fn employee_written_elsewhere(app: &TestApp, organization: &str, id: &str, name: &str) {
    let tenant = TenantId::parse("acme").unwrap();
    let employee = NewEmployee {
        employee_id: id,
        name,
        role: EmployeeRole::Technician,
        email: None,
        phone: None,
    };
    app.store
        .tenant(&tenant)
        .organization(organization)
        .create_employee(&employee, app.clock_now())
        .await
        .unwrap();
}

fn names(data: &Value, list: &str) -> Vec<String> {
    data[list]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|node| node["name"].as_str().unwrap().to_owned())
        .collect()
}

async fn a_repeated_query_is_served_again_until_the_data_changes(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let seeded = setup(&app).await;
    let token = token(&app, &app.browser(), &seeded.alpha, ALL_API).await;
    let before = lookups(&app).await;

    let first = gql(&app, &token, CUSTOMERS, json!({})).await;
    let again = gql(&app, &token, CUSTOMERS, json!({})).await;
    assert_eq!(first, again);
    assert_eq!(first["data"]["customers"]["totalCount"], 0, "{first:#}");
    let after = lookups(&app).await;
    assert_eq!(
        (after.0 - before.0, after.1 - before.1),
        (1, 1),
        "one miss, then one hit"
    );

    // A write through the API: the next answer has it.
    create_customer(&app, &token, "Harbor View").await;
    let data = ok(&app, &token, CUSTOMERS, json!({})).await;
    assert_eq!(names(&data, "customers"), ["Harbor View"]);
    let (hits, ..) = lookups(&app).await;
    assert_eq!(hits, after.0, "the mutation and the query after it ran");

    // A write that never passes through the API (the CLI, another node, SQL).
    let employees = ok(&app, &token, EMPLOYEES, json!({})).await;
    assert_eq!(employees["employees"]["totalCount"], 0);
    assert_eq!(ok(&app, &token, EMPLOYEES, json!({})).await, employees);
    employee_written_elsewhere(&app, &seeded.alpha, "emp_direct", "Written Elsewhere").await;
    let data = ok(&app, &token, EMPLOYEES, json!({})).await;
    assert_eq!(names(&data, "employees"), ["Written Elsewhere"]);

    // A write to another organization leaves this one's answer in place.
    let (hits, ..) = lookups(&app).await;
    employee_written_elsewhere(&app, &seeded.bravo, "emp_bravo", "Of Bravo").await;
    assert_eq!(ok(&app, &token, EMPLOYEES, json!({})).await, data);
    assert_eq!(lookups(&app).await.0, hits + 1);
    app.stop().await;
}

async fn a_cached_answer_is_never_served_to_another_token_or_a_revoked_grant(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let seeded = setup(&app).await;
    let browser = app.browser();
    let everything = token(&app, &browser, &seeded.alpha, ALL_API).await;
    create_customer(&app, &everything, "Harbor View").await;
    let kept = ok(&app, &everything, CUSTOMERS, json!({})).await;
    assert_eq!(ok(&app, &everything, CUSTOMERS, json!({})).await, kept);

    // The same user and organization, without the customers scope: refused, not served.
    let jobs_only = token(&app, &browser, &seeded.alpha, "jobs").await;
    let body = gql(&app, &jobs_only, CUSTOMERS, json!({})).await;
    one_error(&body, "FORBIDDEN");
    // The same user in another organization: that organization's (empty) list.
    let bravo = token(&app, &browser, &seeded.bravo, ALL_API).await;
    let data = ok(&app, &bravo, CUSTOMERS, json!({})).await;
    assert_eq!(data["customers"]["totalCount"], 0, "{data:#}");

    // The grant revoked: the kept answer is not served, the token is refused.
    let (hits, ..) = lookups(&app).await;
    let (_, claims) = jwt_parts(&everything);
    let revoked = app
        .store
        .tenant(&TenantId::parse("acme").unwrap())
        .revoke_grant(
            claims["grant_id"].as_str().unwrap(),
            "test",
            app.clock_now(),
        )
        .await
        .unwrap();
    assert!(revoked);
    let response = app
        .http
        .post(format!("{}/api", app.api_url))
        .bearer_auth(&everything)
        .json(&json!({ "query": CUSTOMERS }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    assert_eq!(lookups(&app).await.0, hits, "no hit after the revocation");
    app.stop().await;
}
