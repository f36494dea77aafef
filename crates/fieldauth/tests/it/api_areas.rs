//! Each area of the GraphQL API through its queries and mutations, with tokens from the real
//! flow: what apps build on. Amounts are cents, times RFC 3339, statuses enums.

use serde_json::{json, Value};
use store::testing::TestDatabase;

use crate::api_support::{gql, ok, one_error, setup, token, ALL_API};
use crate::helpers::{on_both_backends, TestApp};

on_both_backends!(
    customers_contacts_properties_and_billing,
    employees_and_shifts_that_never_overlap,
    work_orders_with_contracts_and_statuses,
    jobs_from_scheduled_to_completed,
    invoices_totals_issue_and_payments,
    lists_are_relay_connections_of_at_most_100,
    nested_lists_answer_their_first_items_at_most_200,
);

pub const CREATE_CUSTOMER: &str = "mutation($input: CreateCustomerInput!) {
  createCustomer(input: $input) { id name } }";
pub const CREATE_EMPLOYEE: &str = "mutation($input: CreateEmployeeInput!) {
  createEmployee(input: $input) { id name role } }";
pub const CREATE_WORK_ORDER: &str = "mutation($input: CreateWorkOrderInput!) {
  createWorkOrder(input: $input) { id number status } }";
pub const CREATE_JOB: &str = "mutation($input: CreateJobInput!) {
  createJob(input: $input) { id status } }";
pub const CREATE_INVOICE: &str = "mutation($input: CreateInvoiceInput!) {
  createInvoice(input: $input) { id number status totals { total { amountCents } } } }";

/// A customer, a work order for it and an employee, made through the API: their ids.
pub struct Basics {
    pub customer: String,
    pub work_order: String,
    pub employee: String,
}

pub async fn basics(app: &TestApp, token: &str) -> Basics {
    let customer = ok(
        app,
        token,
        CREATE_CUSTOMER,
        json!({ "input": { "name": "Harbor View" } }),
    )
    .await["createCustomer"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let work_order = ok(
        app,
        token,
        CREATE_WORK_ORDER,
        json!({ "input": { "customerId": customer, "description": "Replace water heater" } }),
    )
    .await["createWorkOrder"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let employee = ok(
        app,
        token,
        CREATE_EMPLOYEE,
        json!({ "input": { "name": "Maria Lopez", "role": "TECHNICIAN" } }),
    )
    .await["createEmployee"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    Basics {
        customer,
        work_order,
        employee,
    }
}

async fn all_scopes(app: &TestApp) -> String {
    let seeded = setup(app).await;
    token(app, &app.browser(), &seeded.alpha, ALL_API).await
}

async fn customers_contacts_properties_and_billing(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let token = all_scopes(&app).await;
    let input = json!({
        "name": "  Cedar Street Bakery ",
        "contacts": [{ "name": "Tom Reyes", "email": "tom@cedar.example", "phone": "+1 555 0100" }],
        "billingProfile": { "email": "ap@cedar.example", "currency": "EUR", "paymentTermsDays": 15 },
    });
    let created = ok(&app, &token, CREATE_CUSTOMER, json!({ "input": input })).await;
    let id = created["createCustomer"]["id"].as_str().unwrap().to_owned();
    assert_eq!(created["createCustomer"]["name"], "Cedar Street Bakery");

    let added = ok(
        &app,
        &token,
        "mutation($input: AddPropertyInput!) { addProperty(input: $input) {
           properties { label address { street city region postalCode country } accessNotes } } }",
        json!({ "input": { "customerId": id, "label": "Shop", "accessNotes": "Back door",
                "address": { "street": "48 Cedar St", "city": "Portland", "region": "OR",
                             "postalCode": "97205", "country": "US" } } }),
    )
    .await;
    assert_eq!(
        added["addProperty"]["properties"],
        json!([{ "label": "Shop", "accessNotes": "Back door", "address": {
            "street": "48 Cedar St", "city": "Portland", "region": "OR",
            "postalCode": "97205", "country": "US" } }])
    );

    let updated = ok(
        &app,
        &token,
        "mutation($input: UpdateBillingProfileInput!) { updateBillingProfile(input: $input) {
           billingProfile { email currency paymentTermsDays taxId address { city } } } }",
        json!({ "input": { "customerId": id, "billingProfile": { "currency": "USD",
                "taxId": "93-1234567", "address": { "street": "1 Main", "city": "Salem",
                "postalCode": "97301", "country": "US" } } } }),
    )
    .await;
    assert_eq!(
        updated["updateBillingProfile"]["billingProfile"],
        json!({ "email": null, "currency": "USD", "paymentTermsDays": 30,
                "taxId": "93-1234567", "address": { "city": "Salem" } })
    );

    let read = ok(
        &app,
        &token,
        "query($id: ID!) { customer(id: $id) { name contacts { name email phone } createdAt } }",
        json!({ "id": id }),
    )
    .await;
    assert_eq!(
        read["customer"]["contacts"],
        json!([{ "name": "Tom Reyes", "email": "tom@cedar.example", "phone": "+1 555 0100" }])
    );
    let created_at = read["customer"]["createdAt"].as_str().unwrap();
    assert!(chrono::DateTime::parse_from_rfc3339(created_at).is_ok() && created_at.ends_with('Z'));

    ok(
        &app,
        &token,
        CREATE_CUSTOMER,
        json!({ "input": { "name": "Riverside Clinic" } }),
    )
    .await;
    let search = ok(
        &app,
        &token,
        "{ customers(search: \"BAKERY\") { totalCount nodes { name } } }",
        json!({}),
    )
    .await;
    assert_eq!(
        search["customers"],
        json!({ "totalCount": 1, "nodes": [{ "name": "Cedar Street Bakery" }] })
    );

    for (input, field) in [
        (json!({ "name": "" }), "name"),
        (
            json!({ "name": "X", "billingProfile": { "currency": "euro" } }),
            "currency",
        ),
        (
            json!({ "name": "X", "billingProfile": { "currency": "EUR", "paymentTermsDays": -1 } }),
            "paymentTermsDays",
        ),
        (
            json!({ "name": "X", "contacts": [{ "name": "A", "email": "not-an-email" }] }),
            "email",
        ),
    ] {
        let body = gql(&app, &token, CREATE_CUSTOMER, json!({ "input": input })).await;
        assert!(one_error(&body, "BAD_USER_INPUT").contains(field), "{body}");
        assert_eq!(body["data"]["createCustomer"], Value::Null);
    }
    app.stop().await;
}

async fn employees_and_shifts_that_never_overlap(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let token = all_scopes(&app).await;
    let b = basics(&app, &token).await;
    ok(
        &app,
        &token,
        CREATE_EMPLOYEE,
        json!({ "input": { "name": "Sam O'Neill", "role": "DISPATCHER",
        "email": "sam@crew.example", "phone": "+1 555 0101" } }),
    )
    .await;
    const SHIFT: &str = "mutation($input: ScheduleShiftInput!) { scheduleShift(input: $input) {
        name shifts { startsAt endsAt note } } }";
    let shift = |start: &str, end: &str| json!({ "input": { "employeeId": b.employee, "startsAt": start, "endsAt": end, "note": "On call" } });
    let first = ok(
        &app,
        &token,
        SHIFT,
        shift("2026-12-01T08:00:00Z", "2026-12-01T16:00:00Z"),
    )
    .await;
    assert_eq!(
        first["scheduleShift"]["shifts"],
        json!([{ "startsAt": "2026-12-01T08:00:00Z", "endsAt": "2026-12-01T16:00:00Z", "note": "On call" }])
    );
    // Offsets are accepted and shown in UTC; a shift may start when the previous one ends.
    let second = ok(
        &app,
        &token,
        SHIFT,
        shift("2026-12-01T09:00:00-07:00", "2026-12-01T20:00:00-07:00"),
    )
    .await;
    assert_eq!(
        second["scheduleShift"]["shifts"][1]["startsAt"],
        "2026-12-01T16:00:00Z"
    );

    let overlap = gql(
        &app,
        &token,
        SHIFT,
        shift("2026-12-01T15:00:00Z", "2026-12-01T17:00:00Z"),
    )
    .await;
    assert!(one_error(&overlap, "BAD_USER_INPUT").contains("overlaps"));
    let backwards = gql(
        &app,
        &token,
        SHIFT,
        shift("2026-12-02T10:00:00Z", "2026-12-02T09:00:00Z"),
    )
    .await;
    assert!(one_error(&backwards, "BAD_USER_INPUT").contains("after the start"));
    let not_a_time = gql(
        &app,
        &token,
        SHIFT,
        shift("tomorrow", "2026-12-02T09:00:00Z"),
    )
    .await;
    one_error(&not_a_time, "BAD_USER_INPUT");

    let list = ok(
        &app,
        &token,
        "{ all: employees { totalCount nodes { name role email } }
           technicians: employees(filter: { role: TECHNICIAN }) { nodes { name } } }",
        json!({}),
    )
    .await;
    assert_eq!(
        list["all"],
        json!({ "totalCount": 2, "nodes": [
            { "name": "Maria Lopez", "role": "TECHNICIAN", "email": null },
            { "name": "Sam O'Neill", "role": "DISPATCHER", "email": "sam@crew.example" } ] })
    );
    assert_eq!(
        list["technicians"]["nodes"],
        json!([{ "name": "Maria Lopez" }])
    );
    let bad_role = gql(
        &app,
        &token,
        CREATE_EMPLOYEE,
        json!({ "input": { "name": "X", "role": "WIZARD" } }),
    )
    .await;
    one_error(&bad_role, "BAD_USER_INPUT");
    app.stop().await;
}

async fn work_orders_with_contracts_and_statuses(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let token = all_scopes(&app).await;
    let b = basics(&app, &token).await;
    let property = ok(
        &app,
        &token,
        "mutation($input: AddPropertyInput!) { addProperty(input: $input) { properties { id } } }",
        json!({ "input": { "customerId": b.customer, "label": "Boiler room", "address": {
            "street": "120 Harbor Way", "city": "Portland", "postalCode": "97201", "country": "US" } } }),
    )
    .await["addProperty"]["properties"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let input = json!({ "customerId": b.customer, "propertyId": property,
        "description": "Quarterly backflow testing",
        "contract": { "terms": "Net 30", "value": { "amountCents": 480000, "currency": "USD" },
                      "startsOn": "2026-12-01", "endsOn": "2027-11-30" } });
    let created = ok(&app, &token, CREATE_WORK_ORDER, json!({ "input": input })).await;
    assert_eq!(created["createWorkOrder"]["number"], "WO-000002");
    assert_eq!(created["createWorkOrder"]["status"], "OPEN");
    let id = created["createWorkOrder"]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    let job = ok(
        &app,
        &token,
        CREATE_JOB,
        json!({ "input": { "workOrderId": id, "title": "Test assemblies",
        "scheduledStart": "2026-12-02T09:00:00Z", "scheduledEnd": "2026-12-02T11:00:00Z" } }),
    )
    .await;
    assert_eq!(job["createJob"]["status"], "SCHEDULED");

    let read = ok(
        &app,
        &token,
        "query($id: ID!) { workOrder(id: $id) { number description customer { name }
           property { label } contract { terms value { amountCents currency } startsOn endsOn }
           jobs { title } } }",
        json!({ "id": id }),
    )
    .await;
    assert_eq!(
        read["workOrder"],
        json!({ "number": "WO-000002", "description": "Quarterly backflow testing",
                "customer": { "name": "Harbor View" }, "property": { "label": "Boiler room" },
                "contract": { "terms": "Net 30", "value": { "amountCents": 480000, "currency": "USD" },
                              "startsOn": "2026-12-01", "endsOn": "2027-11-30" },
                "jobs": [{ "title": "Test assemblies" }] })
    );

    const STATUS: &str = "mutation($input: UpdateWorkOrderStatusInput!) {
        updateWorkOrderStatus(input: $input) { status } }";
    for status in ["IN_PROGRESS", "ON_HOLD", "CANCELLED"] {
        let moved = ok(
            &app,
            &token,
            STATUS,
            json!({ "input": { "id": id, "status": status } }),
        )
        .await;
        assert_eq!(moved["updateWorkOrderStatus"]["status"], status);
    }
    let final_ = gql(
        &app,
        &token,
        STATUS,
        json!({ "input": { "id": id, "status": "OPEN" } }),
    )
    .await;
    assert!(one_error(&final_, "BAD_USER_INPUT").contains("CANCELLED"));
    let no_jobs = gql(
        &app,
        &token,
        CREATE_JOB,
        json!({ "input": { "workOrderId": id, "title": "More",
        "scheduledStart": "2026-12-03T09:00:00Z", "scheduledEnd": "2026-12-03T10:00:00Z" } }),
    )
    .await;
    one_error(&no_jobs, "BAD_USER_INPUT");
    let unknown = gql(
        &app,
        &token,
        STATUS,
        json!({ "input": { "id": id, "status": "DONE" } }),
    )
    .await;
    one_error(&unknown, "BAD_USER_INPUT");

    let filtered = ok(
        &app,
        &token,
        "{ open: workOrders(filter: { status: OPEN }) { nodes { number } }
           cancelled: workOrders(filter: { status: CANCELLED }) { nodes { number } } }",
        json!({}),
    )
    .await;
    assert_eq!(
        filtered["open"]["nodes"],
        json!([{ "number": "WO-000001" }])
    );
    assert_eq!(
        filtered["cancelled"]["nodes"],
        json!([{ "number": "WO-000002" }])
    );

    for (contract, why) in [
        (
            json!({ "terms": "x", "value": { "amountCents": -1, "currency": "USD" }, "startsOn": "2026-12-01", "endsOn": "2026-12-02" }),
            "negative",
        ),
        (
            json!({ "terms": "x", "value": { "amountCents": 1, "currency": "USD" }, "startsOn": "2026-12-02", "endsOn": "2026-12-01" }),
            "endsOn",
        ),
    ] {
        let body = gql(
            &app,
            &token,
            CREATE_WORK_ORDER,
            json!({ "input": { "customerId": b.customer,
            "description": "x", "contract": contract } }),
        )
        .await;
        assert!(one_error(&body, "BAD_USER_INPUT").contains(why), "{body}");
    }
    let bad_date = gql(&app, &token, CREATE_WORK_ORDER, json!({ "input": { "customerId": b.customer,
        "description": "x", "contract": { "terms": "x", "value": { "amountCents": 1, "currency": "USD" },
        "startsOn": "2026-02-30", "endsOn": "2026-03-01" } } })).await;
    one_error(&bad_date, "BAD_USER_INPUT");
    app.stop().await;
}

async fn jobs_from_scheduled_to_completed(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let token = all_scopes(&app).await;
    let b = basics(&app, &token).await;
    let mut ids = Vec::new();
    for (day, title) in [(2, "Remove old heater"), (3, "Install new heater")] {
        let start = format!("2026-12-0{day}T09:00:00Z");
        let end = format!("2026-12-0{day}T11:30:00Z");
        let created = ok(
            &app,
            &token,
            CREATE_JOB,
            json!({ "input": { "workOrderId": b.work_order,
            "title": title, "scheduledStart": start, "scheduledEnd": end } }),
        )
        .await;
        ids.push(created["createJob"]["id"].as_str().unwrap().to_owned());
    }
    const ASSIGN: &str = "mutation($input: AssignJobInput!) { assignJob(input: $input) {
        assignments { employee { name } assignedAt } } }";
    let assign = json!({ "input": { "jobId": ids[0], "employeeId": b.employee } });
    ok(&app, &token, ASSIGN, assign.clone()).await;
    let again = ok(&app, &token, ASSIGN, assign).await;
    assert_eq!(
        again["assignJob"]["assignments"].as_array().unwrap().len(),
        1
    );
    assert_eq!(
        again["assignJob"]["assignments"][0]["employee"]["name"],
        "Maria Lopez"
    );

    const START: &str =
        "mutation($input: StartJobInput!) { startJob(input: $input) { status startedAt } }";
    const COMPLETE: &str = "mutation($input: CompleteJobInput!) { completeJob(input: $input) {
        status completionReport { notes minutesWorked completedAt } } }";
    let early = gql(
        &app,
        &token,
        COMPLETE,
        json!({ "input": { "id": ids[0], "notes": "x" } }),
    )
    .await;
    assert!(one_error(&early, "BAD_USER_INPUT").contains("SCHEDULED"));
    let started = ok(&app, &token, START, json!({ "input": { "id": ids[0] } })).await;
    assert_eq!(started["startJob"]["status"], "IN_PROGRESS");
    let twice = gql(&app, &token, START, json!({ "input": { "id": ids[0] } })).await;
    one_error(&twice, "BAD_USER_INPUT");
    let negative = gql(
        &app,
        &token,
        COMPLETE,
        json!({ "input": { "id": ids[0], "notes": "x", "minutesWorked": -5 } }),
    )
    .await;
    one_error(&negative, "BAD_USER_INPUT");
    let done = ok(
        &app,
        &token,
        COMPLETE,
        json!({ "input": { "id": ids[0],
        "notes": "Heater removed", "minutesWorked": 140 } }),
    )
    .await;
    assert_eq!(done["completeJob"]["status"], "COMPLETED");
    assert_eq!(
        done["completeJob"]["completionReport"]["notes"],
        "Heater removed"
    );
    assert_eq!(
        done["completeJob"]["completionReport"]["minutesWorked"],
        140
    );
    let late = gql(
        &app,
        &token,
        ASSIGN,
        json!({ "input": { "jobId": ids[0], "employeeId": b.employee } }),
    )
    .await;
    one_error(&late, "BAD_USER_INPUT");

    let lists = ok(
        &app,
        &token,
        "query($who: ID!) {
           all: jobs { totalCount nodes { title status scheduledStart scheduledEnd workOrder { description } } }
           completed: jobs(filter: { status: COMPLETED }) { nodes { title completionReport { notes } } }
           mine: jobs(filter: { assigneeId: $who }) { nodes { title } }
           day3: jobs(filter: { scheduledFrom: \"2026-12-03T00:00:00Z\", scheduledTo: \"2026-12-04T00:00:00Z\" }) { nodes { title } } }",
        json!({ "who": b.employee }),
    )
    .await;
    assert_eq!(lists["all"]["totalCount"], 2);
    assert_eq!(
        lists["all"]["nodes"][1],
        json!({ "title": "Install new heater", "status": "SCHEDULED",
                "scheduledStart": "2026-12-03T09:00:00Z", "scheduledEnd": "2026-12-03T11:30:00Z",
                "workOrder": { "description": "Replace water heater" } })
    );
    assert_eq!(
        lists["completed"]["nodes"],
        json!([{ "title": "Remove old heater", "completionReport": { "notes": "Heater removed" } }])
    );
    assert_eq!(
        lists["mine"]["nodes"],
        json!([{ "title": "Remove old heater" }])
    );
    assert_eq!(
        lists["day3"]["nodes"],
        json!([{ "title": "Install new heater" }])
    );

    let backwards = gql(
        &app,
        &token,
        CREATE_JOB,
        json!({ "input": { "workOrderId": b.work_order, "title": "x",
        "scheduledStart": "2026-12-05T10:00:00Z", "scheduledEnd": "2026-12-05T09:00:00Z" } }),
    )
    .await;
    assert!(one_error(&backwards, "BAD_USER_INPUT").contains("after the start"));
    let missing = gql(
        &app,
        &token,
        "query($id: ID!) { job(id: $id) { title } }",
        json!({ "id": "job_nope" }),
    )
    .await;
    one_error(&missing, "NOT_FOUND");
    assert_eq!(missing["data"]["job"], Value::Null);
    app.stop().await;
}

async fn invoices_totals_issue_and_payments(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let token = all_scopes(&app).await;
    let b = basics(&app, &token).await;
    let input = json!({ "customerId": b.customer, "workOrderId": b.work_order,
        "taxRateBasisPoints": 825, "lines": [
            { "description": "Labor (hours)", "quantity": 3, "unitPriceCents": 333 },
            { "description": "Parts", "quantity": 1, "unitPriceCents": 1000 } ] });
    let created = ok(&app, &token, CREATE_INVOICE, json!({ "input": input })).await;
    let invoice = &created["createInvoice"];
    assert_eq!(invoice["number"], "INV-000001");
    assert_eq!(invoice["status"], "DRAFT");
    // 1999 + 8.25 % (164.9175 → 165) = 2164.
    assert_eq!(invoice["totals"]["total"]["amountCents"], 2164);
    let id = invoice["id"].as_str().unwrap().to_owned();

    const PAY: &str = "mutation($input: RecordPaymentInput!) { recordPayment(input: $input) {
        status totals { paid { amountCents } balanceDue { amountCents } } payments { amount { amountCents } method reference } } }";
    let pay = |cents: i64, currency: &str| {
        json!({ "input": { "invoiceId": id, "amount": { "amountCents": cents, "currency": currency },
                "method": "CARD", "reference": "AUTH-1" } })
    };
    let draft = gql(&app, &token, PAY, pay(100, "USD")).await;
    assert!(one_error(&draft, "BAD_USER_INPUT").contains("DRAFT"));

    let issued = ok(
        &app,
        &token,
        "mutation($input: IssueInvoiceInput!) { issueInvoice(input: $input) { status issuedAt dueOn } }",
        json!({ "input": { "id": id, "dueOn": "2027-01-15" } }),
    )
    .await;
    assert_eq!(issued["issueInvoice"]["status"], "ISSUED");
    assert_eq!(issued["issueInvoice"]["dueOn"], "2027-01-15");

    for (cents, currency, why) in [
        (-5, "USD", "negative"),
        (0, "USD", "more than zero"),
        (100, "EUR", "EUR"),
        (2165, "USD", "exceeds"),
    ] {
        let body = gql(&app, &token, PAY, pay(cents, currency)).await;
        assert!(one_error(&body, "BAD_USER_INPUT").contains(why), "{body}");
    }
    let part = ok(&app, &token, PAY, pay(1000, "USD")).await;
    assert_eq!(part["recordPayment"]["status"], "PARTIALLY_PAID");
    assert_eq!(
        part["recordPayment"]["totals"]["balanceDue"]["amountCents"],
        1164
    );
    let over = gql(&app, &token, PAY, pay(1165, "USD")).await;
    assert!(one_error(&over, "BAD_USER_INPUT").contains("1164"));
    app.clock.advance(60);
    let rest = ok(&app, &token, PAY, pay(1164, "USD")).await;
    assert_eq!(
        rest["recordPayment"],
        json!({ "status": "PAID", "totals": { "paid": { "amountCents": 2164 }, "balanceDue": { "amountCents": 0 } },
                "payments": [
                    { "amount": { "amountCents": 1000 }, "method": "CARD", "reference": "AUTH-1" },
                    { "amount": { "amountCents": 1164 }, "method": "CARD", "reference": "AUTH-1" } ] })
    );

    let read = ok(
        &app,
        &token,
        "query($id: ID!) { invoice(id: $id) { currency customer { name } workOrder { number }
           lines { description quantity unitPrice { amountCents currency } amount { amountCents } }
           totals { subtotal { amountCents } taxRateBasisPoints tax { amountCents } } }
           drafts: invoices(filter: { status: DRAFT }) { totalCount }
           paid: invoices(filter: { status: PAID }) { totalCount } }",
        json!({ "id": id }),
    )
    .await;
    assert_eq!(
        read["invoice"],
        json!({ "currency": "USD", "customer": { "name": "Harbor View" }, "workOrder": { "number": "WO-000001" },
                "lines": [
                    { "description": "Labor (hours)", "quantity": 3, "unitPrice": { "amountCents": 333, "currency": "USD" }, "amount": { "amountCents": 999 } },
                    { "description": "Parts", "quantity": 1, "unitPrice": { "amountCents": 1000, "currency": "USD" }, "amount": { "amountCents": 1000 } } ],
                "totals": { "subtotal": { "amountCents": 1999 }, "taxRateBasisPoints": 825, "tax": { "amountCents": 165 } } })
    );
    assert_eq!(
        (
            read["drafts"]["totalCount"].clone(),
            read["paid"]["totalCount"].clone()
        ),
        (json!(0), json!(1))
    );

    // Without a due date, the customer's payment terms (30 days by default) set it.
    let second = ok(
        &app,
        &token,
        CREATE_INVOICE,
        json!({ "input": { "customerId": b.customer,
        "lines": [{ "description": "Call-out", "quantity": 1, "unitPriceCents": 9500 }] } }),
    )
    .await;
    let second_id = second["createInvoice"]["id"].as_str().unwrap();
    let issued = ok(
        &app,
        &token,
        "mutation($id: ID!) { issueInvoice(input: { id: $id }) { issuedAt dueOn } }",
        json!({ "id": second_id }),
    )
    .await;
    let issued_at =
        chrono::DateTime::parse_from_rfc3339(issued["issueInvoice"]["issuedAt"].as_str().unwrap())
            .unwrap();
    let due = (issued_at.date_naive() + chrono::Days::new(30)).to_string();
    assert_eq!(issued["issueInvoice"]["dueOn"], due.as_str());

    for (lines, why) in [
        (json!([]), "lines"),
        (
            json!([{ "description": "x", "quantity": 0, "unitPriceCents": 1 }]),
            "quantity",
        ),
        (
            json!([{ "description": "x", "quantity": 1, "unitPriceCents": -1 }]),
            "negative",
        ),
    ] {
        let body = gql(
            &app,
            &token,
            CREATE_INVOICE,
            json!({ "input": { "customerId": b.customer, "lines": lines } }),
        )
        .await;
        assert!(one_error(&body, "BAD_USER_INPUT").contains(why), "{body}");
    }
    app.stop().await;
}

async fn lists_are_relay_connections_of_at_most_100(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let token = all_scopes(&app).await;
    for i in 0..25 {
        ok(
            &app,
            &token,
            CREATE_CUSTOMER,
            json!({ "input": { "name": format!("Customer {i:02}") } }),
        )
        .await;
    }
    const PAGE: &str = "query($after: String) { customers(first: 10, after: $after) {
        totalCount edges { cursor node { name } } nodes { name } pageInfo { hasNextPage endCursor } } }";
    let mut after = Value::Null;
    let mut names = Vec::new();
    let mut pages = Vec::new();
    loop {
        let page = ok(&app, &token, PAGE, json!({ "after": after })).await["customers"].clone();
        assert_eq!(page["totalCount"], 25);
        let edges = page["edges"].as_array().unwrap();
        assert_eq!(page["nodes"].as_array().unwrap().len(), edges.len());
        assert_eq!(
            page["pageInfo"]["endCursor"],
            edges.last().unwrap()["cursor"]
        );
        names.extend(
            edges
                .iter()
                .map(|e| e["node"]["name"].as_str().unwrap().to_owned()),
        );
        pages.push(edges.len());
        if page["pageInfo"]["hasNextPage"] == false {
            break;
        }
        after = page["pageInfo"]["endCursor"].clone();
    }
    assert_eq!(pages, [10, 10, 5]);
    let expected: Vec<String> = (0..25).map(|i| format!("Customer {i:02}")).collect();
    assert_eq!(names, expected);

    let body = gql(
        &app,
        &token,
        "{ viewer { subject } customers(first: 101) { totalCount } }",
        json!({}),
    )
    .await;
    assert!(one_error(&body, "BAD_USER_INPUT").contains("100"));
    assert_eq!(body["data"]["customers"], Value::Null);
    assert!(
        body["data"]["viewer"]["subject"].is_string(),
        "the rest still answers"
    );
    let hundred = ok(
        &app,
        &token,
        "{ customers(first: 100) { nodes { name } } }",
        json!({}),
    )
    .await;
    assert_eq!(hundred["customers"]["nodes"].as_array().unwrap().len(), 25);
    for cursor in ["garbage", "aTox"] {
        let body = gql(
            &app,
            &token,
            "query($c: String) { customers(after: $c) { totalCount } }",
            json!({ "c": cursor }),
        )
        .await;
        one_error(&body, "BAD_USER_INPUT");
    }
    // A cursor of another list is refused, not compared.
    let job_cursor = base64_cursor("i:5:job_x");
    let body = gql(
        &app,
        &token,
        "query($c: String) { customers(after: $c) { totalCount } }",
        json!({ "c": job_cursor }),
    )
    .await;
    one_error(&body, "BAD_USER_INPUT");
    app.stop().await;
}

/// A nested list answers its first items: 100 when `first` is not given, `first` when it is,
/// and a `first` above 200 is BAD_USER_INPUT while the rest of the query answers.
async fn nested_lists_answer_their_first_items_at_most_200(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let seeded = setup(&app).await;
    let token = token(&app, &app.browser(), &seeded.alpha, ALL_API).await;
    let b = basics(&app, &token).await;
    // Written straight to the store: the requests under test are the reads.
    let tenant = store::TenantId::parse("acme").unwrap();
    let org = app.store.tenant(&tenant).organization(&seeded.alpha);
    let now = app.clock_now();
    for i in 0..201i64 {
        let shift = store::Shift {
            shift_id: format!("shift_{i:03}"),
            employee_id: b.employee.clone(),
            starts_at: now + i * 3_600,
            ends_at: now + i * 3_600 + 1_800,
            note: None,
        };
        org.schedule_shift(&shift, now).await.unwrap();
    }
    let second = ok(
        &app,
        &token,
        CREATE_EMPLOYEE,
        json!({ "input": { "name": "Sam Ortiz", "role": "TECHNICIAN" } }),
    )
    .await["createEmployee"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for i in 0..2i64 {
        let (id, title) = (format!("job_{i}"), format!("Visit {i}"));
        let new = store::NewJob {
            job_id: &id,
            work_order_id: &b.work_order,
            title: &title,
            scheduled_start: now + i * 3_600,
            scheduled_end: now + i * 3_600 + 1_800,
        };
        org.create_job(&new, now).await.unwrap();
    }
    org.assign_job("job_0", &b.employee, now).await.unwrap();
    org.assign_job("job_0", &second, now + 1).await.unwrap();
    for label in ["Shop", "Warehouse"] {
        ok(
            &app,
            &token,
            "mutation($input: AddPropertyInput!) { addProperty(input: $input) { id } }",
            json!({ "input": { "customerId": b.customer, "label": label, "address": {
                "street": "1 Main St", "city": "Portland", "postalCode": "97201", "country": "US" } } }),
        )
        .await;
        // Properties are listed as added: a second apart, so the order is not left to ids.
        app.clock.advance(1);
    }
    let invoice = ok(
        &app,
        &token,
        CREATE_INVOICE,
        json!({ "input": { "customerId": b.customer, "lines": [
            { "description": "Labor", "quantity": 1, "unitPriceCents": 5000 },
            { "description": "Parts", "quantity": 1, "unitPriceCents": 1000 } ] } }),
    )
    .await["createInvoice"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    ok(
        &app,
        &token,
        "mutation($input: IssueInvoiceInput!) { issueInvoice(input: $input) { status } }",
        json!({ "input": { "id": invoice } }),
    )
    .await;
    for cents in [100, 200] {
        ok(
            &app,
            &token,
            "mutation($input: RecordPaymentInput!) { recordPayment(input: $input) { status } }",
            json!({ "input": { "invoiceId": invoice, "method": "CASH",
                    "amount": { "amountCents": cents, "currency": "USD" } } }),
        )
        .await;
        app.clock.advance(60);
    }

    let read = ok(
        &app,
        &token,
        "query($e: ID!, $w: ID!, $c: ID!, $i: ID!) {
           unbounded: employee(id: $e) { shifts { id } }
           three: employee(id: $e) { shifts(first: 3) { id } }
           most: employee(id: $e) { shifts(first: 200) { id } }
           none: employee(id: $e) { shifts(first: 0) { id } }
           workOrder(id: $w) { jobs(first: 1) { title assignments(first: 1) { employee { name } } } }
           customer(id: $c) { properties(first: 1) { label } }
           invoice(id: $i) { lines(first: 1) { description } payments(first: 1) { amount { amountCents } } } }",
        json!({ "e": b.employee, "w": b.work_order, "c": b.customer, "i": invoice }),
    )
    .await;
    let shift_ids = |alias: &str| -> Vec<String> {
        read[alias]["shifts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let expected = |n: usize| -> Vec<String> { (0..n).map(|i| format!("shift_{i:03}")).collect() };
    assert_eq!(shift_ids("unbounded"), expected(100));
    assert_eq!(shift_ids("three"), expected(3));
    assert_eq!(shift_ids("most"), expected(200));
    assert_eq!(shift_ids("none"), expected(0));
    assert_eq!(
        read["workOrder"],
        json!({ "jobs": [{ "title": "Visit 0", "assignments": [{ "employee": { "name": "Maria Lopez" } }] }] })
    );
    assert_eq!(
        read["customer"],
        json!({ "properties": [{ "label": "Shop" }] })
    );
    assert_eq!(
        read["invoice"],
        json!({ "lines": [{ "description": "Labor" }], "payments": [{ "amount": { "amountCents": 100 } }] })
    );

    for first in [201, -1] {
        let body = gql(
            &app,
            &token,
            "query($e: ID!, $n: Int) { viewer { subject } employee(id: $e) { shifts(first: $n) { id } } }",
            json!({ "e": b.employee, "n": first }),
        )
        .await;
        assert_eq!(
            one_error(&body, "BAD_USER_INPUT"),
            "first: must be from 0 to 200"
        );
        assert_eq!(body["data"]["employee"], Value::Null);
        assert!(
            body["data"]["viewer"]["subject"].is_string(),
            "the rest still answers"
        );
    }
    app.stop().await;
}

fn base64_cursor(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(text)
}
