//! The field-service records (employees, customers, work orders, jobs, invoices), run once on
//! SQLite and once on PostgreSQL: organizations never see each other's records, and the rules
//! the store promises (no overlapping shifts, no over-payment, final statuses, stable pages,
//! batched lookups) hold on both backends, also under concurrent writers.

use store::testing::TestDatabase;
use store::{
    Address, Backend, BillingProfile, Contact, Contract, Cursor, Customer, CustomerFilter,
    Employee, EmployeeFilter, EmployeeRole, Entity, Invoice, InvoiceFilter, InvoiceStatus, Job,
    JobFilter, JobStatus, NewCustomer, NewEmployee, NewInvoice, NewInvoiceLine, NewJob, NewPayment,
    NewWorkOrder, OrgStore, PageRequest, PaymentMethod, Property, Shift, SortKey, Store,
    StoreError, TenantId, WorkOrder, WorkOrderFilter, WorkOrderStatus,
};

/// The reads of sqlx's executor, whose rows are `AnyRow`s (an SQLite database in memory),
/// not the inline connection's: a joined page's two records share column names there too.
#[tokio::test]
async fn a_page_of_jobs_is_read_with_their_work_orders_in_memory_too() {
    let store = Store::connect("sqlite::memory:").await.unwrap();
    a_page_of_jobs_is_read_with_their_work_orders_in_one_statement(store.clone()).await;
    store.close().await;
}

on_both_backends!(run:
    organizations_never_see_or_touch_each_others_records,
    shifts_of_one_employee_never_overlap,
    concurrent_overlapping_shifts_have_one_winner,
    invoice_totals_due_dates_and_payments_follow_the_balance,
    concurrent_payments_never_exceed_the_total,
    work_orders_are_numbered_per_organization_and_final_statuses_stay,
    jobs_move_forward_only_and_assignments_are_idempotent,
    job_filters_by_status_assignee_and_window,
    employees_page_through_in_name_order_with_ties,
    cursors_of_another_list_are_refused,
    customer_search_is_case_insensitive_and_literal,
    customer_search_finds_names_beyond_ascii,
    a_lookup_of_several_ids_is_one_statement,
    children_of_several_parents_are_bounded_per_parent_in_one_statement,
    assignments_are_read_with_their_employees_in_one_statement,
    a_page_counts_its_whole_list_in_the_same_statement,
    a_page_of_jobs_is_read_with_their_work_orders_in_one_statement,
    a_page_of_jobs_is_read_with_their_crews,
    every_write_raises_its_organizations_data_version_and_no_other,
);

async fn connect(db: &TestDatabase) -> Store {
    Store::connect(&db.url).await.expect("connect and migrate")
}

/// Runs a test on its own task and closes the pool before the database is dropped. A test
/// that fails right after a refused write leaves that write's transaction open on a pooled
/// connection (its rollback waits for the connection's next use); on PostgreSQL its row locks
/// would block the `DROP SCHEMA` of the test database forever, hanging the run instead of
/// failing it.
async fn run<F, Fut>(db: &TestDatabase, test: F)
where
    F: FnOnce(Store) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let store = connect(db).await;
    let outcome = tokio::spawn(test(store.clone())).await;
    store.close().await;
    match outcome {
        Ok(()) => {}
        Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
        Err(error) => panic!("the test task did not finish: {error}"),
    }
}

const NOW: i64 = 1_800_000_000;

/// A bound on children no test reaches.
const ALL: u32 = 1_000;

/// `assert!(matches!(result, Err(pattern)))`, showing what came back instead.
macro_rules! assert_err {
    ($result:expr, $pattern:pat $(,)?) => {{
        let result = $result;
        assert!(
            matches!(result, Err($pattern)),
            "{} gave {result:?}",
            stringify!($result)
        );
    }};
}

/// Tenant `id` with organizations `orgs`.
pub(crate) async fn tenant_with_orgs(store: &Store, id: &str, orgs: &[&str]) -> TenantId {
    let t = TenantId::parse(id).unwrap();
    store.create_tenant(&t, id, NOW).await.unwrap();
    for org in orgs {
        store
            .tenant(&t)
            .create_organization(org, org, NOW)
            .await
            .unwrap();
    }
    t
}

fn ids(ids: &[&str]) -> Vec<String> {
    ids.iter().map(|id| (*id).to_owned()).collect()
}

fn first(n: u32) -> PageRequest {
    PageRequest {
        after: None,
        first: n,
        with_total: false,
    }
}

async fn employee(org: &OrgStore<'_>, id: &str, name: &str) -> Employee {
    let new = NewEmployee {
        employee_id: id,
        name,
        role: EmployeeRole::Technician,
        email: None,
        phone: None,
    };
    org.create_employee(&new, NOW).await.unwrap()
}

fn shift(id: &str, employee_id: &str, starts_at: i64, ends_at: i64) -> Shift {
    Shift {
        shift_id: id.to_owned(),
        employee_id: employee_id.to_owned(),
        starts_at,
        ends_at,
        note: None,
    }
}

fn new_customer<'a>(id: &'a str, name: &'a str, billing: &'a BillingProfile) -> NewCustomer<'a> {
    NewCustomer {
        customer_id: id,
        name,
        contacts: &[],
        billing,
    }
}

async fn customer(org: &OrgStore<'_>, id: &str, name: &str) -> Customer {
    let billing = BillingProfile::new("USD");
    org.create_customer(&new_customer(id, name, &billing), NOW)
        .await
        .unwrap()
}

fn property(id: &str, customer_id: &str) -> Property {
    Property {
        property_id: id.to_owned(),
        customer_id: customer_id.to_owned(),
        label: "Main site".to_owned(),
        address: Address {
            street: "1 Main St".to_owned(),
            city: "Springfield".to_owned(),
            region: Some("IL".to_owned()),
            postal_code: "62701".to_owned(),
            country: "US".to_owned(),
        },
        access_notes: None,
        created_at: NOW,
    }
}

fn new_work_order<'a>(id: &'a str, customer_id: &'a str) -> NewWorkOrder<'a> {
    NewWorkOrder {
        work_order_id: id,
        customer_id,
        property_id: None,
        description: "Fix the boiler",
        contract: None,
    }
}

async fn work_order(org: &OrgStore<'_>, id: &str, customer_id: &str) -> WorkOrder {
    org.create_work_order(&new_work_order(id, customer_id), NOW)
        .await
        .unwrap()
}

fn new_job<'a>(id: &'a str, work_order_id: &'a str, start: i64, end: i64) -> NewJob<'a> {
    NewJob {
        job_id: id,
        work_order_id,
        title: "Visit",
        scheduled_start: start,
        scheduled_end: end,
    }
}

async fn job(org: &OrgStore<'_>, id: &str, work_order_id: &str, start: i64, end: i64) -> Job {
    org.create_job(&new_job(id, work_order_id, start, end), NOW)
        .await
        .unwrap()
}

/// 3 × 3.33 and 1 × 10.00: subtotal 19.99, at 8.25 % tax 1.65, total 21.64.
fn lines() -> Vec<NewInvoiceLine> {
    vec![
        NewInvoiceLine {
            description: "Filter".to_owned(),
            quantity: 3,
            unit_price_cents: 333,
        },
        NewInvoiceLine {
            description: "Labour".to_owned(),
            quantity: 1,
            unit_price_cents: 1000,
        },
    ]
}

const TOTAL: i64 = 2164;

fn new_invoice<'a>(
    id: &'a str,
    customer_id: &'a str,
    lines: &'a [NewInvoiceLine],
) -> NewInvoice<'a> {
    NewInvoice {
        invoice_id: id,
        customer_id,
        work_order_id: None,
        currency: "USD",
        tax_rate_bp: 825,
        lines,
    }
}

async fn invoice(org: &OrgStore<'_>, id: &str, customer_id: &str) -> Invoice {
    org.create_invoice(&new_invoice(id, customer_id, &lines()), NOW)
        .await
        .unwrap()
}

fn payment(id: &str, amount_cents: i64) -> NewPayment<'_> {
    NewPayment {
        payment_id: id,
        amount_cents,
        currency: "USD",
        method: PaymentMethod::Card,
        reference: None,
        received_at: NOW,
    }
}

async fn one_invoice(org: &OrgStore<'_>, id: &str) -> Invoice {
    let mut found = org.invoices(&ids(&[id])).await.unwrap();
    assert_eq!(found.len(), 1, "invoice {id}");
    found.pop().unwrap()
}

async fn one_job(org: &OrgStore<'_>, id: &str) -> Job {
    let mut found = org.jobs(&ids(&[id])).await.unwrap();
    assert_eq!(found.len(), 1, "job {id}");
    found.pop().unwrap()
}

async fn one_work_order(org: &OrgStore<'_>, id: &str) -> WorkOrder {
    let mut found = org.work_orders(&ids(&[id])).await.unwrap();
    assert_eq!(found.len(), 1, "work order {id}");
    found.pop().unwrap()
}

// ---------------------------------------------------------------------------------------------
// 1. Organization isolation
// ---------------------------------------------------------------------------------------------

/// Records of org-a of tenant "acme": employee e1 with shift s1, customer c1 with a contact
/// and property p1, work order wo1 at p1, job j1 with e1 on it, invoice i1 for wo1, issued
/// and paid 100 cents.
async fn seed_org_a(a: &OrgStore<'_>) {
    employee(a, "e1", "Ada").await;
    a.schedule_shift(&shift("s1", "e1", NOW, NOW + 3600), NOW)
        .await
        .unwrap();
    let billing = BillingProfile::new("USD");
    let contacts = [Contact {
        customer_id: "c1".to_owned(),
        position: 0,
        name: "Carl".to_owned(),
        email: Some("carl@example.com".to_owned()),
        phone: None,
    }];
    a.create_customer(
        &NewCustomer {
            contacts: &contacts,
            ..new_customer("c1", "Carl's Bakery", &billing)
        },
        NOW,
    )
    .await
    .unwrap();
    a.add_property(&property("p1", "c1")).await.unwrap();
    let wo = a
        .create_work_order(
            &NewWorkOrder {
                property_id: Some("p1"),
                ..new_work_order("wo1", "c1")
            },
            NOW,
        )
        .await
        .unwrap();
    assert_eq!(wo.number, 1);
    job(a, "j1", "wo1", NOW, NOW + 3600).await;
    a.assign_job("j1", "e1", NOW).await.unwrap();
    let lines = lines();
    a.create_invoice(
        &NewInvoice {
            work_order_id: Some("wo1"),
            ..new_invoice("i1", "c1", &lines)
        },
        NOW,
    )
    .await
    .unwrap();
    a.issue_invoice("i1", None, NOW).await.unwrap();
    a.record_payment("i1", &payment("pay1", 100), NOW)
        .await
        .unwrap();
}

/// Nothing of org-a is visible through `outsider`: not by id, not as a child, not in a list,
/// not in a count.
async fn sees_none_of_org_a(outsider: &OrgStore<'_>, who: &str) {
    let o = outsider;
    assert!(
        o.employees(&ids(&["e1"])).await.unwrap().is_empty(),
        "{who}"
    );
    assert!(
        o.customers(&ids(&["c1"])).await.unwrap().is_empty(),
        "{who}"
    );
    assert!(
        o.properties(&ids(&["p1"])).await.unwrap().is_empty(),
        "{who}"
    );
    assert!(
        o.work_orders(&ids(&["wo1"])).await.unwrap().is_empty(),
        "{who}"
    );
    assert!(o.jobs(&ids(&["j1"])).await.unwrap().is_empty(), "{who}");
    assert!(o.invoices(&ids(&["i1"])).await.unwrap().is_empty(), "{who}");

    assert!(
        o.shifts_of(&ids(&["e1"]), ALL).await.unwrap().is_empty(),
        "{who}"
    );
    assert!(
        o.contacts_of(&ids(&["c1"]), ALL).await.unwrap().is_empty(),
        "{who}"
    );
    assert!(
        o.properties_of(&ids(&["c1"]), ALL)
            .await
            .unwrap()
            .is_empty(),
        "{who}"
    );
    assert!(
        o.jobs_of(&ids(&["wo1"]), ALL).await.unwrap().is_empty(),
        "{who}"
    );
    assert!(
        o.assignments_of(&ids(&["j1"]), ALL)
            .await
            .unwrap()
            .is_empty(),
        "{who}"
    );

    assert!(
        o.lines_of(&ids(&["i1"]), ALL).await.unwrap().is_empty(),
        "{who}"
    );
    assert!(
        o.payments_of(&ids(&["i1"]), ALL).await.unwrap().is_empty(),
        "{who}"
    );

    let page = o
        .list_employees(&EmployeeFilter::default(), &first(50))
        .await
        .unwrap();
    assert!(
        page.items.is_empty() && !page.has_next_page,
        "{who}: {page:?}"
    );
    let page = o
        .list_customers(&CustomerFilter::default(), &first(50))
        .await
        .unwrap();
    assert!(
        page.items.is_empty() && !page.has_next_page,
        "{who}: {page:?}"
    );
    let page = o
        .list_work_orders(&WorkOrderFilter::default(), &first(50))
        .await
        .unwrap();
    assert!(
        page.items.is_empty() && !page.has_next_page,
        "{who}: {page:?}"
    );
    let page = o
        .list_jobs(&JobFilter::default(), &first(50))
        .await
        .unwrap();
    assert!(
        page.items.is_empty() && !page.has_next_page,
        "{who}: {page:?}"
    );
    let by_assignee = JobFilter {
        assignee_id: Some("e1".to_owned()),
        ..JobFilter::default()
    };
    let page = o.list_jobs(&by_assignee, &first(50)).await.unwrap();
    assert!(page.items.is_empty(), "{who}: {page:?}");
    let page = o
        .list_invoices(&InvoiceFilter::default(), &first(50))
        .await
        .unwrap();
    assert!(
        page.items.is_empty() && !page.has_next_page,
        "{who}: {page:?}"
    );

    assert_eq!(
        o.count_employees(&EmployeeFilter::default()).await.unwrap(),
        0,
        "{who}"
    );
    assert_eq!(
        o.count_customers(&CustomerFilter::default()).await.unwrap(),
        0,
        "{who}"
    );
    assert_eq!(
        o.count_work_orders(&WorkOrderFilter::default())
            .await
            .unwrap(),
        0,
        "{who}"
    );
    assert_eq!(
        o.count_jobs(&JobFilter::default()).await.unwrap(),
        0,
        "{who}"
    );
    assert_eq!(o.count_jobs(&by_assignee).await.unwrap(), 0, "{who}");
    assert_eq!(
        o.count_invoices(&InvoiceFilter::default()).await.unwrap(),
        0,
        "{who}"
    );
}

/// Every write through `outsider` that names a record of org-a fails with the `NotFound` of
/// that record.
async fn cannot_write_org_a(o: &OrgStore<'_>) {
    assert_err!(
        o.schedule_shift(&shift("x-s", "e1", NOW + 7200, NOW + 9000), NOW)
            .await,
        StoreError::NotFound(Entity::Employee)
    );
    assert_err!(
        o.add_property(&property("x-p", "c1")).await,
        StoreError::NotFound(Entity::Customer)
    );
    assert_err!(
        o.update_billing_profile("c1", &BillingProfile::new("EUR"))
            .await,
        StoreError::NotFound(Entity::Customer)
    );
    assert_err!(
        o.create_work_order(&new_work_order("x-wo", "c1"), NOW)
            .await,
        StoreError::NotFound(Entity::Customer)
    );
    assert_err!(
        o.update_work_order_status("wo1", WorkOrderStatus::Cancelled, NOW)
            .await,
        StoreError::NotFound(Entity::WorkOrder)
    );
    assert_err!(
        o.create_job(&new_job("x-j", "wo1", NOW, NOW + 60), NOW)
            .await,
        StoreError::NotFound(Entity::WorkOrder)
    );
    assert_err!(
        o.assign_job("j1", "e1", NOW).await,
        StoreError::NotFound(Entity::Job)
    );
    assert_err!(
        o.start_job("j1", NOW).await,
        StoreError::NotFound(Entity::Job)
    );
    assert_err!(
        o.complete_job("j1", "done", Some(5), NOW).await,
        StoreError::NotFound(Entity::Job)
    );
    assert_err!(
        o.create_invoice(&new_invoice("x-i", "c1", &lines()), NOW)
            .await,
        StoreError::NotFound(Entity::Customer)
    );
    assert_err!(
        o.issue_invoice("i1", None, NOW).await,
        StoreError::NotFound(Entity::Invoice)
    );
    assert_err!(
        o.record_payment("i1", &payment("x-pay", 100), NOW).await,
        StoreError::NotFound(Entity::Invoice)
    );
}

/// `outsider` has records of its own (ids prefixed `p`) and still cannot link them to org-a's.
async fn cannot_link_to_org_a(o: &OrgStore<'_>, p: &str) {
    let (e, c, wo, j) = (
        format!("{p}-e"),
        format!("{p}-c"),
        format!("{p}-wo"),
        format!("{p}-j"),
    );
    employee(o, &e, "Own employee").await;
    customer(o, &c, "Own customer").await;
    // The failed attempts above gave their numbers back, and org-a's count is not this one's.
    assert_eq!(work_order(o, &wo, &c).await.number, 1);
    job(o, &j, &wo, NOW, NOW + 3600).await;

    // Its own job, org-a's employee.
    assert_err!(
        o.assign_job(&j, "e1", NOW).await,
        StoreError::NotFound(Entity::Employee)
    );
    assert!(o
        .assignments_of(&ids(&[j.as_str()]), ALL)
        .await
        .unwrap()
        .is_empty());
    // Its own customer, org-a's property.
    assert_err!(
        o.create_work_order(
            &NewWorkOrder {
                property_id: Some("p1"),
                ..new_work_order(&format!("{p}-wo2"), &c)
            },
            NOW
        )
        .await,
        StoreError::NotFound(Entity::Property)
    );
    // Its own customer, org-a's work order.
    let lines = lines();
    assert_err!(
        o.create_invoice(
            &NewInvoice {
                work_order_id: Some("wo1"),
                ..new_invoice(&format!("{p}-i"), &c, &lines)
            },
            NOW
        )
        .await,
        StoreError::NotFound(Entity::WorkOrder)
    );
    assert_eq!(
        o.count_work_orders(&WorkOrderFilter::default())
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        o.count_invoices(&InvoiceFilter::default()).await.unwrap(),
        0
    );
}

async fn organizations_never_see_or_touch_each_others_records(store: Store) {
    let acme = tenant_with_orgs(&store, "acme", &["org-a", "org-b"]).await;
    // The same organization guid in another tenant.
    let other = tenant_with_orgs(&store, "other", &["org-a"]).await;
    let a = store.tenant(&acme).organization("org-a");
    seed_org_a(&a).await;

    let outsiders = [
        (
            "org-b of acme",
            store.tenant(&acme).organization("org-b"),
            "b",
        ),
        (
            "org-a of other",
            store.tenant(&other).organization("org-a"),
            "x",
        ),
    ];
    for (who, outsider, prefix) in &outsiders {
        sees_none_of_org_a(outsider, who).await;
        cannot_write_org_a(outsider).await;
        cannot_link_to_org_a(outsider, prefix).await;
    }

    // Org-a's records are exactly as they were.
    assert_eq!(a.employees(&ids(&["e1"])).await.unwrap().len(), 1);
    assert_eq!(a.shifts_of(&ids(&["e1"]), ALL).await.unwrap().len(), 1);
    let c1 = a.customers(&ids(&["c1"])).await.unwrap();
    assert_eq!(c1.len(), 1);
    assert_eq!(c1[0].billing.currency, "USD");
    assert_eq!(a.contacts_of(&ids(&["c1"]), ALL).await.unwrap().len(), 1);
    assert_eq!(a.properties_of(&ids(&["c1"]), ALL).await.unwrap().len(), 1);
    assert_eq!(
        one_work_order(&a, "wo1").await.status,
        WorkOrderStatus::Open
    );
    assert_eq!(
        a.count_work_orders(&WorkOrderFilter::default())
            .await
            .unwrap(),
        1
    );
    let j1 = one_job(&a, "j1").await;
    assert_eq!(j1.status, JobStatus::Scheduled);
    assert_eq!(j1.started_at, None);
    let on_j1: Vec<_> = a
        .assignments_of(&ids(&["j1"]), ALL)
        .await
        .unwrap()
        .into_iter()
        .map(|x| x.employee_id)
        .collect();
    assert_eq!(on_j1, ["e1"]);
    assert_eq!(a.jobs_of(&ids(&["wo1"]), ALL).await.unwrap().len(), 1);
    let i1 = one_invoice(&a, "i1").await;
    assert_eq!(
        (i1.paid_cents, i1.status),
        (100, InvoiceStatus::PartiallyPaid)
    );
    assert_eq!(a.payments_of(&ids(&["i1"]), ALL).await.unwrap().len(), 1);
    assert_eq!(
        a.count_invoices(&InvoiceFilter::default()).await.unwrap(),
        1
    );
    // And org-a, in turn, sees nothing of org-b's own records.
    assert!(a.employees(&ids(&["b-e"])).await.unwrap().is_empty());
    assert!(a.work_orders(&ids(&["b-wo"])).await.unwrap().is_empty());
    assert_eq!(
        a.count_employees(&EmployeeFilter::default()).await.unwrap(),
        1
    );

    // A guid that names no organization of the tenant has no records, and writes fail.
    let nowhere = store.tenant(&acme).organization("org-z");
    assert!(nowhere.employees(&ids(&["e1"])).await.unwrap().is_empty());
    assert_err!(
        nowhere
            .create_employee(
                &NewEmployee {
                    employee_id: "z-e",
                    name: "Zed",
                    role: EmployeeRole::Dispatcher,
                    email: None,
                    phone: None,
                },
                NOW
            )
            .await,
        StoreError::NotFound(Entity::Organization)
    );
    let billing = BillingProfile::new("USD");
    assert_err!(
        nowhere
            .create_customer(&new_customer("z-c", "Zed", &billing), NOW)
            .await,
        StoreError::NotFound(Entity::Organization)
    );
    assert_err!(
        nowhere
            .create_work_order(&new_work_order("z-wo", "c1"), NOW)
            .await,
        StoreError::NotFound(Entity::Organization)
    );
}

// ---------------------------------------------------------------------------------------------
// 2. Shifts
// ---------------------------------------------------------------------------------------------

async fn shifts_of_one_employee_never_overlap(store: Store) {
    let t = tenant_with_orgs(&store, "acme", &["org-a"]).await;
    let org = store.tenant(&t).organization("org-a");
    employee(&org, "e1", "Ada").await;
    employee(&org, "e2", "Bob").await;
    let h = 3600;

    org.schedule_shift(&shift("s1", "e1", NOW + 2 * h, NOW + 4 * h), NOW)
        .await
        .unwrap();
    // Overlapping the end, the start, inside, around: all refused.
    for (id, starts, ends) in [
        ("o1", 3 * h, 5 * h),
        ("o2", h, 2 * h + 1),
        ("o3", 2 * h + 60, 4 * h - 60),
        ("o4", 0, 6 * h),
        ("o5", 2 * h, 4 * h),
    ] {
        assert_err!(
            org.schedule_shift(&shift(id, "e1", NOW + starts, NOW + ends), NOW)
                .await,
            StoreError::Refused(_)
        );
    }
    // Touching at either end is not overlapping.
    let after = shift("s2", "e1", NOW + 4 * h, NOW + 6 * h);
    assert_eq!(org.schedule_shift(&after, NOW).await.unwrap(), after);
    let before = Shift {
        note: Some("early".to_owned()),
        ..shift("s0", "e1", NOW, NOW + 2 * h)
    };
    assert_eq!(org.schedule_shift(&before, NOW).await.unwrap(), before);
    // Another employee's shifts do not count.
    org.schedule_shift(&shift("s3", "e2", NOW + 2 * h, NOW + 4 * h), NOW)
        .await
        .unwrap();

    assert_err!(
        org.schedule_shift(&shift("s9", "nobody", NOW, NOW + h), NOW)
            .await,
        StoreError::NotFound(Entity::Employee)
    );

    let of_e1: Vec<_> = org
        .shifts_of(&ids(&["e1"]), ALL)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.shift_id)
        .collect();
    assert_eq!(of_e1, ["s0", "s1", "s2"]);
    let all = org.shifts_of(&ids(&["e1", "e2"]), ALL).await.unwrap();
    assert_eq!(all.len(), 4);
    assert_eq!(all[0], before);

    // At most `first` a parent, each parent's first in order, grouped by parent: whether
    // the rows fit `first` a parent in all (2 × 2 here, with e1's third left out) or not (1
    // × 2, and 2 for e1 alone), which the store reads in two different ways.
    for (parents, first, expected) in [
        (&["e1", "e2"][..], 2, &["s0", "s1", "s3"][..]),
        (&["e1", "e2"][..], 1, &["s0", "s3"][..]),
        (&["e1"][..], 2, &["s0", "s1"][..]),
    ] {
        let found: Vec<_> = org
            .shifts_of(&ids(parents), first)
            .await
            .unwrap()
            .into_iter()
            .map(|s| s.shift_id)
            .collect();
        assert_eq!(found, expected, "{parents:?}, first {first}");
    }
}

/// The employee's row lock serializes schedulers, so of ten overlapping shifts scheduled at
/// once exactly one is written.
async fn concurrent_overlapping_shifts_have_one_winner(store: Store) {
    let t = tenant_with_orgs(&store, "acme", &["org-a"]).await;
    employee(&store.tenant(&t).organization("org-a"), "e1", "Ada").await;
    let attempts: Vec<_> = (0..10i64)
        .map(|i| {
            let (store, t) = (store.clone(), t.clone());
            tokio::spawn(async move {
                // Every pair of these overlaps.
                let s = shift(&format!("s{i}"), "e1", NOW + i * 60, NOW + 3600 + i * 60);
                store
                    .tenant(&t)
                    .organization("org-a")
                    .schedule_shift(&s, NOW)
                    .await
            })
        })
        .collect();
    let mut scheduled = 0;
    for attempt in attempts {
        match attempt.await.unwrap() {
            Ok(_) => scheduled += 1,
            Err(StoreError::Refused(_)) => {}
            Err(other) => panic!("a scheduler failed instead of being refused: {other:?}"),
        }
    }
    assert_eq!(scheduled, 1);
    let shifts = store
        .tenant(&t)
        .organization("org-a")
        .shifts_of(&ids(&["e1"]), ALL)
        .await
        .unwrap();
    assert_eq!(shifts.len(), 1, "{shifts:?}");
}

// ---------------------------------------------------------------------------------------------
// 3. Invoices and payments
// ---------------------------------------------------------------------------------------------

async fn invoice_totals_due_dates_and_payments_follow_the_balance(store: Store) {
    let t = tenant_with_orgs(&store, "acme", &["org-a"]).await;
    let org = store.tenant(&t).organization("org-a");
    let mut billing = BillingProfile::new("USD");
    billing.payment_terms_days = 30;
    org.create_customer(&new_customer("c1", "Carl", &billing), NOW)
        .await
        .unwrap();

    let draft = invoice(&org, "i1", "c1").await;
    assert_eq!(draft.number, 1);
    assert_eq!(
        (draft.subtotal_cents, draft.tax_cents, draft.total_cents),
        (1999, 165, TOTAL)
    );
    assert_eq!((draft.paid_cents, draft.status), (0, InvoiceStatus::Draft));
    assert_eq!((draft.issued_at, draft.due_on.as_deref()), (None, None));
    assert_eq!(draft.currency, "USD");
    let amounts: Vec<_> = org
        .lines_of(&ids(&["i1"]), ALL)
        .await
        .unwrap()
        .into_iter()
        .map(|l| (l.position, l.quantity, l.unit_price_cents, l.amount_cents))
        .collect();
    assert_eq!(amounts, [(0, 3, 333, 999), (1, 1, 1000, 1000)]);

    // A draft takes no payment.
    assert_err!(
        org.record_payment("i1", &payment("p0", 100), NOW).await,
        StoreError::Refused(_)
    );
    assert_eq!(one_invoice(&org, "i1").await, draft);
    assert!(org
        .payments_of(&ids(&["i1"]), ALL)
        .await
        .unwrap()
        .is_empty());

    // 2026-11-23T23:30:00Z + 30 days of terms: due on the 23rd of December.
    let issued_at = 1_795_476_600;
    let issued = org.issue_invoice("i1", None, issued_at).await.unwrap();
    assert_eq!(issued.status, InvoiceStatus::Issued);
    assert_eq!(issued.issued_at, Some(issued_at));
    assert_eq!(issued.due_on.as_deref(), Some("2026-12-23"));
    assert_eq!(one_invoice(&org, "i1").await, issued);
    assert_err!(
        org.issue_invoice("i1", None, issued_at).await,
        StoreError::Refused(_)
    );
    assert_err!(
        org.issue_invoice("nope", None, issued_at).await,
        StoreError::NotFound(Entity::Invoice)
    );

    // Wrong currency: refused, nothing recorded.
    let euros = NewPayment {
        currency: "EUR",
        ..payment("p-eur", 100)
    };
    assert_err!(
        org.record_payment("i1", &euros, NOW).await,
        StoreError::Refused(_)
    );
    assert_eq!(one_invoice(&org, "i1").await, issued);

    let paid = org
        .record_payment("i1", &payment("p1", 1000), NOW)
        .await
        .unwrap();
    assert_eq!(
        (paid.status, paid.paid_cents, paid.balance_due_cents()),
        (InvoiceStatus::PartiallyPaid, 1000, TOTAL - 1000)
    );
    // One cent more than the balance: refused, nothing changes.
    assert_err!(
        org.record_payment("i1", &payment("p-over", TOTAL - 1000 + 1), NOW)
            .await,
        StoreError::Refused(_)
    );
    assert_eq!(one_invoice(&org, "i1").await, paid);
    assert_eq!(org.payments_of(&ids(&["i1"]), ALL).await.unwrap().len(), 1);
    // Neither a zero nor a negative payment moves the balance.
    for amount in [0, -500] {
        let result = org
            .record_payment("i1", &payment(&format!("p-{amount}"), amount), NOW)
            .await;
        assert!(result.is_err(), "a payment of {amount} gave {result:?}");
        assert_eq!(one_invoice(&org, "i1").await, paid);
    }

    let paid = org
        .record_payment("i1", &payment("p2", 1000), NOW + 1)
        .await
        .unwrap();
    assert_eq!(
        (paid.status, paid.paid_cents),
        (InvoiceStatus::PartiallyPaid, 2000)
    );
    let paid = org
        .record_payment(
            "i1",
            &NewPayment {
                method: PaymentMethod::Check,
                reference: Some("chq 1234"),
                received_at: NOW + 2,
                ..payment("p3", TOTAL - 2000)
            },
            NOW + 2,
        )
        .await
        .unwrap();
    assert_eq!(
        (paid.status, paid.paid_cents, paid.balance_due_cents()),
        (InvoiceStatus::Paid, TOTAL, 0)
    );
    assert_err!(
        org.record_payment("i1", &payment("p4", 1), NOW).await,
        StoreError::Refused(_)
    );
    assert_eq!(one_invoice(&org, "i1").await, paid);
    let payments = org.payments_of(&ids(&["i1"]), ALL).await.unwrap();
    let recorded: Vec<_> = payments
        .iter()
        .map(|p| (p.payment_id.as_str(), p.amount_cents, p.method))
        .collect();
    assert_eq!(
        recorded,
        [
            ("p1", 1000, PaymentMethod::Card),
            ("p2", 1000, PaymentMethod::Card),
            ("p3", TOTAL - 2000, PaymentMethod::Check)
        ]
    );
    assert_eq!(payments[2].reference.as_deref(), Some("chq 1234"));
    assert_eq!(payments.iter().map(|p| p.amount_cents).sum::<i64>(), TOTAL);

    // The default due date follows the customer's current terms; an explicit one wins.
    billing.payment_terms_days = 10;
    org.update_billing_profile("c1", &billing).await.unwrap();
    let second = invoice(&org, "i2", "c1").await;
    assert_eq!(second.number, 2);
    let second = org.issue_invoice("i2", None, issued_at).await.unwrap();
    assert_eq!(second.due_on.as_deref(), Some("2026-12-03"));
    invoice(&org, "i3", "c1").await;
    let third = org
        .issue_invoice("i3", Some("2027-01-15"), issued_at)
        .await
        .unwrap();
    assert_eq!(third.due_on.as_deref(), Some("2027-01-15"));

    // An invoice's work order must be its customer's.
    customer(&org, "c2", "Dora").await;
    work_order(&org, "wo2", "c2").await;
    let lines = lines();
    assert_err!(
        org.create_invoice(
            &NewInvoice {
                work_order_id: Some("wo2"),
                ..new_invoice("i4", "c1", &lines)
            },
            NOW
        )
        .await,
        StoreError::Refused(_)
    );
    assert_err!(
        org.create_invoice(&new_invoice("i4", "nobody", &lines), NOW)
            .await,
        StoreError::NotFound(Entity::Customer)
    );
    let statuses = |status| InvoiceFilter {
        status: Some(status),
        ..InvoiceFilter::default()
    };
    assert_eq!(
        org.count_invoices(&statuses(InvoiceStatus::Paid))
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        org.count_invoices(&statuses(InvoiceStatus::Issued))
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        org.count_invoices(&InvoiceFilter::default()).await.unwrap(),
        3
    );
}

/// Ten payments of a quarter of the total plus a cent, at once: three fit, and the balance
/// never goes below zero.
async fn concurrent_payments_never_exceed_the_total(store: Store) {
    let t = tenant_with_orgs(&store, "acme", &["org-a"]).await;
    let org = store.tenant(&t).organization("org-a");
    customer(&org, "c1", "Carl").await;
    invoice(&org, "i1", "c1").await;
    org.issue_invoice("i1", None, NOW).await.unwrap();
    let amount = TOTAL / 4 + 1;

    let attempts: Vec<_> = (0..10)
        .map(|i| {
            let (store, t) = (store.clone(), t.clone());
            tokio::spawn(async move {
                store
                    .tenant(&t)
                    .organization("org-a")
                    .record_payment("i1", &payment(&format!("p{i}"), amount), NOW)
                    .await
            })
        })
        .collect();
    let mut recorded = 0;
    for attempt in attempts {
        match attempt.await.unwrap() {
            Ok(invoice) => {
                assert!(invoice.paid_cents <= TOTAL, "{invoice:?}");
                recorded += 1;
            }
            Err(StoreError::Refused(_)) => {}
            Err(other) => panic!("a payment failed instead of being refused: {other:?}"),
        }
    }
    assert!(recorded <= 3, "{recorded} payments of {amount} on {TOTAL}");
    // Every refusal was for want of balance, so as many as fit were taken.
    assert_eq!(recorded, 3);
    let invoice = one_invoice(&org, "i1").await;
    let payments = org.payments_of(&ids(&["i1"]), ALL).await.unwrap();
    assert_eq!(payments.len(), recorded);
    assert!(invoice.paid_cents <= invoice.total_cents);
    assert_eq!(
        invoice.paid_cents,
        payments.iter().map(|p| p.amount_cents).sum::<i64>()
    );
    assert_eq!(invoice.paid_cents, 3 * amount);
    assert_eq!(invoice.status, InvoiceStatus::PartiallyPaid);
}

// ---------------------------------------------------------------------------------------------
// 4. Work orders
// ---------------------------------------------------------------------------------------------

async fn work_orders_are_numbered_per_organization_and_final_statuses_stay(store: Store) {
    let t = tenant_with_orgs(&store, "acme", &["org-a", "org-b"]).await;
    let a = store.tenant(&t).organization("org-a");
    let b = store.tenant(&t).organization("org-b");
    customer(&a, "c1", "Carl").await;
    customer(&a, "c2", "Dora").await;
    customer(&b, "c3", "Eve").await;
    a.add_property(&property("p1", "c1")).await.unwrap();
    a.add_property(&property("p2", "c2")).await.unwrap();

    let contract = Contract {
        terms: "Annual maintenance".to_owned(),
        value_cents: 120_000,
        currency: "USD".to_owned(),
        starts_on: "2027-01-01".to_owned(),
        ends_on: "2027-12-31".to_owned(),
    };
    let first_a = a
        .create_work_order(
            &NewWorkOrder {
                property_id: Some("p1"),
                contract: Some(&contract),
                ..new_work_order("wo1", "c1")
            },
            NOW,
        )
        .await
        .unwrap();
    assert_eq!(first_a.number, 1);
    assert_eq!(first_a.status, WorkOrderStatus::Open);
    assert_eq!(first_a.property_id.as_deref(), Some("p1"));
    assert_eq!(first_a.contract(), Some(contract));
    assert_eq!((first_a.created_at, first_a.updated_at), (NOW, NOW));
    assert_eq!(one_work_order(&a, "wo1").await, first_a);
    assert_eq!(work_order(&a, "wo2", "c2").await.contract(), None);
    assert_eq!(work_order(&b, "wb1", "c3").await.number, 1);
    assert_eq!(work_order(&a, "wo3", "c1").await.number, 3);
    assert_eq!(work_order(&b, "wb2", "c3").await.number, 2);

    // The property must be the customer's, the customer must exist; a refused order takes
    // no number.
    assert_err!(
        a.create_work_order(
            &NewWorkOrder {
                property_id: Some("p2"),
                ..new_work_order("wo-x", "c1")
            },
            NOW
        )
        .await,
        StoreError::NotFound(Entity::Property)
    );
    assert_err!(
        a.create_work_order(
            &NewWorkOrder {
                property_id: Some("nowhere"),
                ..new_work_order("wo-y", "c1")
            },
            NOW
        )
        .await,
        StoreError::NotFound(Entity::Property)
    );
    assert_err!(
        a.create_work_order(&new_work_order("wo-z", "nobody"), NOW)
            .await,
        StoreError::NotFound(Entity::Customer)
    );
    assert_err!(
        a.create_work_order(&new_work_order("wo-w", "c3"), NOW)
            .await,
        StoreError::NotFound(Entity::Customer)
    );
    assert!(a
        .work_orders(&ids(&["wo-x", "wo-y", "wo-z", "wo-w"]))
        .await
        .unwrap()
        .is_empty());
    assert_eq!(work_order(&a, "wo4", "c2").await.number, 4);
    assert_eq!(work_order(&a, "wo5", "c2").await.number, 5);

    // Pages by number.
    let mut numbers = Vec::new();
    let mut request = first(2);
    loop {
        let page = a
            .list_work_orders(&WorkOrderFilter::default(), &request)
            .await
            .unwrap();
        numbers.push(page.items.iter().map(|w| w.number).collect::<Vec<_>>());
        match (page.has_next_page, page.items.last()) {
            (true, Some(last)) => request.after = Some(last.cursor()),
            _ => break,
        }
    }
    assert_eq!(numbers, [vec![1, 2], vec![3, 4], vec![5]]);
    let of_c2 = WorkOrderFilter {
        customer_id: Some("c2".to_owned()),
        ..WorkOrderFilter::default()
    };
    let of_c2_numbers: Vec<_> = a
        .list_work_orders(&of_c2, &first(10))
        .await
        .unwrap()
        .items
        .iter()
        .map(|w| w.number)
        .collect();
    assert_eq!(of_c2_numbers, [2, 4, 5]);
    assert_eq!(a.count_work_orders(&of_c2).await.unwrap(), 3);

    // Status moves until COMPLETED or CANCELLED, which are final.
    for status in [
        WorkOrderStatus::InProgress,
        WorkOrderStatus::OnHold,
        WorkOrderStatus::InProgress,
        WorkOrderStatus::Completed,
    ] {
        let moved = a
            .update_work_order_status("wo1", status, NOW + 10)
            .await
            .unwrap();
        assert_eq!((moved.status, moved.updated_at), (status, NOW + 10));
    }
    let completed = one_work_order(&a, "wo1").await;
    for status in [
        WorkOrderStatus::Open,
        WorkOrderStatus::InProgress,
        WorkOrderStatus::Cancelled,
    ] {
        assert_err!(
            a.update_work_order_status("wo1", status, NOW + 20).await,
            StoreError::Refused(_)
        );
    }
    assert_eq!(one_work_order(&a, "wo1").await, completed);
    a.update_work_order_status("wo2", WorkOrderStatus::Cancelled, NOW + 10)
        .await
        .unwrap();
    assert_err!(
        a.update_work_order_status("wo2", WorkOrderStatus::Open, NOW + 20)
            .await,
        StoreError::Refused(_)
    );
    assert_err!(
        a.update_work_order_status("nowhere", WorkOrderStatus::Open, NOW)
            .await,
        StoreError::NotFound(Entity::WorkOrder)
    );
    let open = WorkOrderFilter {
        status: Some(WorkOrderStatus::Open),
        ..WorkOrderFilter::default()
    };
    assert_eq!(a.count_work_orders(&open).await.unwrap(), 3);

    // No new jobs on a final work order.
    assert_err!(
        a.create_job(&new_job("j1", "wo2", NOW, NOW + 60), NOW)
            .await,
        StoreError::Refused(_)
    );
    assert_err!(
        a.create_job(&new_job("j2", "wo1", NOW, NOW + 60), NOW)
            .await,
        StoreError::Refused(_)
    );
    assert_err!(
        a.create_job(&new_job("j3", "nowhere", NOW, NOW + 60), NOW)
            .await,
        StoreError::NotFound(Entity::WorkOrder)
    );
    assert!(a
        .jobs_of(&ids(&["wo1", "wo2"]), ALL)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        job(&a, "j4", "wo3", NOW, NOW + 60).await.status,
        JobStatus::Scheduled
    );
}

// ---------------------------------------------------------------------------------------------
// 5. Jobs
// ---------------------------------------------------------------------------------------------

async fn jobs_move_forward_only_and_assignments_are_idempotent(store: Store) {
    let t = tenant_with_orgs(&store, "acme", &["org-a"]).await;
    let org = store.tenant(&t).organization("org-a");
    employee(&org, "e1", "Ada").await;
    employee(&org, "e2", "Bob").await;
    customer(&org, "c1", "Carl").await;
    work_order(&org, "wo1", "c1").await;
    let j1 = job(&org, "j1", "wo1", NOW, NOW + 7200).await;
    assert_eq!(j1.status, JobStatus::Scheduled);
    assert_eq!(
        (j1.started_at, j1.completed_at, j1.minutes_worked),
        (None, None, None)
    );
    job(&org, "j2", "wo1", NOW, NOW + 7200).await;

    // Only a SCHEDULED job starts, only an IN_PROGRESS job completes.
    assert_err!(
        org.complete_job("j1", "done", None, NOW).await,
        StoreError::Refused(_)
    );
    assert_eq!(one_job(&org, "j1").await, j1);
    let started = org.start_job("j1", NOW + 100).await.unwrap();
    assert_eq!(
        (started.status, started.started_at),
        (JobStatus::InProgress, Some(NOW + 100))
    );
    assert_err!(org.start_job("j1", NOW + 200).await, StoreError::Refused(_));
    assert_eq!(one_job(&org, "j1").await, started);
    // 90 minutes and 59 seconds after the start: 90 whole minutes.
    let done_at = NOW + 100 + 90 * 60 + 59;
    let done = org
        .complete_job("j1", "Replaced the valve", None, done_at)
        .await
        .unwrap();
    assert_eq!(done.status, JobStatus::Completed);
    assert_eq!(done.completed_at, Some(done_at));
    assert_eq!(done.completion_notes.as_deref(), Some("Replaced the valve"));
    assert_eq!(done.minutes_worked, Some(90));
    assert_eq!(done.started_at, Some(NOW + 100));
    assert_err!(
        org.complete_job("j1", "again", Some(1), done_at + 60).await,
        StoreError::Refused(_)
    );
    assert_err!(
        org.start_job("j1", done_at + 60).await,
        StoreError::Refused(_)
    );
    assert_eq!(one_job(&org, "j1").await, done);
    // Minutes given are kept as given.
    org.start_job("j2", NOW).await.unwrap();
    let j2 = org
        .complete_job("j2", "ok", Some(42), NOW + 7200)
        .await
        .unwrap();
    assert_eq!(j2.minutes_worked, Some(42));
    assert_err!(
        org.start_job("nope", NOW).await,
        StoreError::NotFound(Entity::Job)
    );
    assert_err!(
        org.complete_job("nope", "x", None, NOW).await,
        StoreError::NotFound(Entity::Job)
    );

    // Assigning twice changes nothing.
    job(&org, "j3", "wo1", NOW + 7200, NOW + 9000).await;
    let assigned = org.assign_job("j3", "e1", NOW + 1).await.unwrap();
    assert_eq!(assigned.job_id, "j3");
    org.assign_job("j3", "e1", NOW + 5).await.unwrap();
    let on_j3 = org.assignments_of(&ids(&["j3"]), ALL).await.unwrap();
    assert_eq!(on_j3.len(), 1, "{on_j3:?}");
    assert_eq!(
        (on_j3[0].employee_id.as_str(), on_j3[0].assigned_at),
        ("e1", NOW + 1)
    );
    org.assign_job("j3", "e2", NOW + 2).await.unwrap();
    let on_j3: Vec<_> = org
        .assignments_of(&ids(&["j3"]), ALL)
        .await
        .unwrap()
        .into_iter()
        .map(|a| a.employee_id)
        .collect();
    assert_eq!(on_j3, ["e1", "e2"]);
    // An in-progress job still takes people; a completed one does not.
    org.start_job("j3", NOW + 7200).await.unwrap();
    org.assign_job("j3", "e1", NOW + 7201).await.unwrap();
    assert_eq!(
        org.assignments_of(&ids(&["j3"]), ALL).await.unwrap().len(),
        2
    );
    assert_err!(
        org.assign_job("j1", "e1", NOW).await,
        StoreError::Refused(_)
    );
    assert!(org
        .assignments_of(&ids(&["j1"]), ALL)
        .await
        .unwrap()
        .is_empty());
    assert_err!(
        org.assign_job("j3", "nobody", NOW).await,
        StoreError::NotFound(Entity::Employee)
    );
    assert_err!(
        org.assign_job("nope", "e1", NOW).await,
        StoreError::NotFound(Entity::Job)
    );
}

async fn job_filters_by_status_assignee_and_window(store: Store) {
    let t = tenant_with_orgs(&store, "acme", &["org-a"]).await;
    let org = store.tenant(&t).organization("org-a");
    employee(&org, "e1", "Ada").await;
    employee(&org, "e2", "Bob").await;
    employee(&org, "e3", "Cy").await;
    customer(&org, "c1", "Carl").await;
    work_order(&org, "wo1", "c1").await;
    job(&org, "ja", "wo1", NOW + 1000, NOW + 2000).await;
    job(&org, "jb", "wo1", NOW + 2000, NOW + 3000).await;
    job(&org, "jc", "wo1", NOW + 3000, NOW + 4000).await;
    job(&org, "jd", "wo1", NOW + 500, NOW + 5000).await;
    org.assign_job("ja", "e1", NOW).await.unwrap();
    org.assign_job("jb", "e1", NOW).await.unwrap();
    org.assign_job("jb", "e2", NOW).await.unwrap();
    org.assign_job("jc", "e2", NOW).await.unwrap();
    org.start_job("jb", NOW + 2000).await.unwrap();

    let found = |filter: JobFilter| {
        let org = &org;
        async move {
            let page = org.list_jobs(&filter, &first(50)).await.unwrap();
            assert!(!page.has_next_page);
            let count = org.count_jobs(&filter).await.unwrap();
            let ids: Vec<String> = page.items.into_iter().map(|j| j.job_id).collect();
            assert_eq!(count, ids.len() as i64, "{filter:?}");
            ids
        }
    };
    let all = JobFilter::default();
    assert_eq!(found(all.clone()).await, ["jd", "ja", "jb", "jc"]);
    let status = |s| JobFilter {
        status: Some(s),
        ..JobFilter::default()
    };
    assert_eq!(
        found(status(JobStatus::Scheduled)).await,
        ["jd", "ja", "jc"]
    );
    assert_eq!(found(status(JobStatus::InProgress)).await, ["jb"]);
    assert!(found(status(JobStatus::Completed)).await.is_empty());
    let assignee = |e: &str| JobFilter {
        assignee_id: Some(e.to_owned()),
        ..JobFilter::default()
    };
    assert_eq!(found(assignee("e1")).await, ["ja", "jb"]);
    assert_eq!(found(assignee("e2")).await, ["jb", "jc"]);
    assert!(found(assignee("e3")).await.is_empty());
    assert!(found(assignee("nobody")).await.is_empty());
    let window = |from: Option<i64>, to: Option<i64>| JobFilter {
        scheduled_from: from.map(|f| NOW + f),
        scheduled_to: to.map(|t| NOW + t),
        ..JobFilter::default()
    };
    // Windows are half-open: a job ending at `from` or starting at `to` is outside.
    assert_eq!(found(window(Some(2000), Some(3000))).await, ["jd", "jb"]);
    assert_eq!(
        found(window(Some(1999), Some(3001))).await,
        ["jd", "ja", "jb", "jc"]
    );
    assert_eq!(found(window(Some(3500), None)).await, ["jd", "jc"]);
    assert_eq!(found(window(None, Some(1000))).await, ["jd"]);
    assert!(found(window(Some(5000), None)).await.is_empty());
    assert!(found(window(None, Some(500))).await.is_empty());
    let combined = JobFilter {
        status: Some(JobStatus::Scheduled),
        assignee_id: Some("e2".to_owned()),
        scheduled_from: Some(NOW + 1000),
        scheduled_to: Some(NOW + 5000),
    };
    assert_eq!(found(combined).await, ["jc"]);
    let combined = JobFilter {
        assignee_id: Some("e1".to_owned()),
        ..window(Some(2500), None)
    };
    assert_eq!(found(combined).await, ["jb"]);

    // Pages of the filtered list follow the job cursor.
    let page = org.list_jobs(&all, &first(3)).await.unwrap();
    assert!(page.has_next_page);
    let after = page.items.last().unwrap().cursor();
    assert_eq!(after.key, SortKey::Int(NOW + 2000));
    let rest = org
        .list_jobs(
            &all,
            &PageRequest {
                after: Some(after),
                first: 3,
                with_total: false,
            },
        )
        .await
        .unwrap();
    assert!(!rest.has_next_page);
    let rest: Vec<_> = rest.items.into_iter().map(|j| j.job_id).collect();
    assert_eq!(rest, ["jc"]);
}

// ---------------------------------------------------------------------------------------------
// 6. Pagination and search
// ---------------------------------------------------------------------------------------------

async fn employees_page_through_in_name_order_with_ties(store: Store) {
    let t = tenant_with_orgs(&store, "acme", &["org-a", "org-b"]).await;
    let org = store.tenant(&t).organization("org-a");
    // 25 employees; k=10 shares its name with k=9 and k=20 with k=19, so two ties straddle
    // page boundaries and the id must break them. Ids (a permutation) and the order of
    // creation are unrelated to the name order.
    let name_of = |k: usize| {
        let n = match k {
            10 => 9,
            20 => 19,
            other => other,
        };
        format!("Tech {n:02}")
    };
    let id_of = |k: usize| format!("emp-{:02}", (k * 7) % 25);
    for step in 0..25 {
        let k = (step * 11) % 25;
        let role = match k % 3 {
            0 => EmployeeRole::Dispatcher,
            _ => EmployeeRole::Technician,
        };
        let (id, name) = (id_of(k), name_of(k));
        org.create_employee(
            &NewEmployee {
                employee_id: &id,
                name: &name,
                role,
                email: None,
                phone: None,
            },
            NOW,
        )
        .await
        .unwrap();
    }
    // Someone in another organization is never on these pages.
    employee(&store.tenant(&t).organization("org-b"), "emp-zz", "Tech 05").await;
    let mut expected: Vec<(String, String)> = (0..25).map(|k| (name_of(k), id_of(k))).collect();
    expected.sort();

    let mut request = first(10);
    let (mut sizes, mut more, mut seen) = (Vec::new(), Vec::new(), Vec::new());
    loop {
        let page = org
            .list_employees(&EmployeeFilter::default(), &request)
            .await
            .unwrap();
        sizes.push(page.items.len());
        more.push(page.has_next_page);
        seen.extend(
            page.items
                .iter()
                .map(|e| (e.name.clone(), e.employee_id.clone())),
        );
        request.after = page.items.last().map(Employee::cursor);
        if !page.has_next_page || sizes.len() > 5 {
            break;
        }
    }
    assert_eq!(sizes, [10, 10, 5]);
    assert_eq!(more, [true, true, false]);
    assert_eq!(seen, expected);
    let mut unique: Vec<_> = seen.iter().map(|(_, id)| id.clone()).collect();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 25);
    // After the last row, nothing.
    let past = org
        .list_employees(&EmployeeFilter::default(), &request)
        .await
        .unwrap();
    assert!(past.items.is_empty() && !past.has_next_page);
    assert_eq!(
        org.count_employees(&EmployeeFilter::default())
            .await
            .unwrap(),
        25
    );

    // The role filter pages the same way.
    let dispatchers = EmployeeFilter {
        role: Some(EmployeeRole::Dispatcher),
    };
    let expected: Vec<String> = {
        let mut d: Vec<(String, String)> = (0..25)
            .filter(|k| k % 3 == 0)
            .map(|k| (name_of(k), id_of(k)))
            .collect();
        d.sort();
        d.into_iter().map(|(_, id)| id).collect()
    };
    let page = org.list_employees(&dispatchers, &first(5)).await.unwrap();
    assert!(page.has_next_page);
    let rest = org
        .list_employees(
            &dispatchers,
            &PageRequest {
                after: page.items.last().map(Employee::cursor),
                first: 50,
                with_total: false,
            },
        )
        .await
        .unwrap();
    assert!(!rest.has_next_page);
    let got: Vec<String> = page
        .items
        .iter()
        .chain(&rest.items)
        .map(|e| e.employee_id.clone())
        .collect();
    assert_eq!(got, expected);
    assert!(got.len() > 5);
    assert_eq!(
        org.count_employees(&dispatchers).await.unwrap(),
        expected.len() as i64
    );
}

async fn cursors_of_another_list_are_refused(store: Store) {
    let t = tenant_with_orgs(&store, "acme", &["org-a"]).await;
    let org = store.tenant(&t).organization("org-a");
    let ada = employee(&org, "e1", "Ada").await;
    customer(&org, "c1", "Carl").await;
    work_order(&org, "wo1", "c1").await;
    let j1 = job(&org, "j1", "wo1", NOW, NOW + 60).await;
    let int_cursor = PageRequest {
        after: Some(j1.cursor()),
        first: 10,
        with_total: false,
    };
    let text_cursor = PageRequest {
        after: Some(ada.cursor()),
        first: 10,
        with_total: false,
    };
    assert_err!(
        org.list_employees(&EmployeeFilter::default(), &int_cursor)
            .await,
        StoreError::Refused(_)
    );
    assert_err!(
        org.list_customers(&CustomerFilter::default(), &int_cursor)
            .await,
        StoreError::Refused(_)
    );
    assert_err!(
        org.list_jobs(&JobFilter::default(), &text_cursor).await,
        StoreError::Refused(_)
    );
    assert_err!(
        org.list_work_orders(&WorkOrderFilter::default(), &text_cursor)
            .await,
        StoreError::Refused(_)
    );
    assert_err!(
        org.list_invoices(&InvoiceFilter::default(), &text_cursor)
            .await,
        StoreError::Refused(_)
    );
    // A cursor of the right kind is accepted even for a row that does not exist.
    let made_up = PageRequest {
        after: Some(Cursor {
            key: SortKey::Text("A".to_owned()),
            id: "zzz".to_owned(),
        }),
        first: 10,
        with_total: false,
    };
    let page = org
        .list_employees(&EmployeeFilter::default(), &made_up)
        .await
        .unwrap();
    assert_eq!(page.items, [ada]);
}

async fn customer_search_is_case_insensitive_and_literal(store: Store) {
    let t = tenant_with_orgs(&store, "acme", &["org-a", "org-b"]).await;
    let org = store.tenant(&t).organization("org-a");
    for (id, name) in [
        ("c1", "Acme Plumbing"),
        ("c2", "ACME Roofing"),
        ("c3", "100% Pure"),
        ("c4", "100 Percent"),
        ("c5", "snake_case Ltd"),
        ("c6", "snakeXcase Ltd"),
        ("c7", r"Back\slash"),
        ("c8", "Backslash"),
    ] {
        customer(&org, id, name).await;
    }
    customer(
        &store.tenant(&t).organization("org-b"),
        "c9",
        "Acme Elsewhere",
    )
    .await;

    let search = |part: &str| {
        let org = &org;
        let filter = CustomerFilter {
            name_contains: Some(part.to_owned()),
        };
        async move {
            let page = org.list_customers(&filter, &first(50)).await.unwrap();
            let count = org.count_customers(&filter).await.unwrap();
            let mut names: Vec<String> = page.items.into_iter().map(|c| c.name).collect();
            assert_eq!(count, names.len() as i64, "{filter:?}");
            // By bytes, whatever the database's collation.
            names.sort();
            names
        }
    };
    assert_eq!(search("acme").await, ["ACME Roofing", "Acme Plumbing"]);
    assert_eq!(search("ACME").await, ["ACME Roofing", "Acme Plumbing"]);
    assert_eq!(search("aCmE r").await, ["ACME Roofing"]);
    assert_eq!(search("PLUMB").await, ["Acme Plumbing"]);
    // `%` and `_` are themselves, not wildcards.
    assert_eq!(search("100%").await, ["100% Pure"]);
    assert_eq!(search("%").await, ["100% Pure"]);
    assert_eq!(search("0% p").await, ["100% Pure"]);
    assert_eq!(search("e_c").await, ["snake_case Ltd"]);
    assert_eq!(search("_").await, ["snake_case Ltd"]);
    assert!(search("%%").await.is_empty());
    assert!(search("acme_").await.is_empty());
    // So is the escape character.
    assert_eq!(search(r"\").await, [r"Back\slash"]);
    assert_eq!(search(r"k\s").await, [r"Back\slash"]);
    assert!(search("nothing like it").await.is_empty());
    assert_eq!(search("").await.len(), 8);
}

/// SQLite's `LOWER` lowers ASCII letters only, so the search compares a lowercased copy of the
/// name that the store writes (Unicode-aware) with the lowercased search text.
async fn customer_search_finds_names_beyond_ascii(store: Store) {
    let t = tenant_with_orgs(&store, "acme", &["org-a"]).await;
    let org = store.tenant(&t).organization("org-a");
    customer(&org, "c1", "Émile Zola").await;
    customer(&org, "c2", "Ödön Horváth").await;
    for part in [
        "Émile", "émile", "ÉMILE", "zola", "ÖDÖN", "horváth", "HORVÁTH",
    ] {
        let filter = CustomerFilter {
            name_contains: Some(part.to_owned()),
        };
        let names: Vec<String> = org
            .list_customers(&filter, &first(10))
            .await
            .unwrap()
            .items
            .into_iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(names.len(), 1, "searching {part:?} found {names:?}");
        assert_eq!(org.count_customers(&filter).await.unwrap(), 1, "{part:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// 7. Batching
// ---------------------------------------------------------------------------------------------

async fn a_lookup_of_several_ids_is_one_statement(store: Store) {
    let t = tenant_with_orgs(&store, "acme", &["org-a"]).await;
    let org = store.tenant(&t).organization("org-a");
    for (id, name) in [("e1", "Ada"), ("e2", "Bob"), ("e3", "Cy")] {
        employee(&org, id, name).await;
    }
    let before = store.statements_executed();
    let mut found: Vec<String> = org
        .employees(&ids(&["e3", "e1", "e2"]))
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.employee_id)
        .collect();
    assert_eq!(store.statements_executed() - before, 1);
    found.sort();
    assert_eq!(found, ["e1", "e2", "e3"]);

    // Unknown ids are left out, still in one statement; so are the shifts of several.
    let before = store.statements_executed();
    let found = org.employees(&ids(&["e1", "nobody", "e2"])).await.unwrap();
    assert_eq!(found.len(), 2);
    org.shifts_of(&ids(&["e1", "e2", "e3"]), ALL).await.unwrap();
    assert_eq!(store.statements_executed() - before, 2);
}

/// A nested list of the API reads the first children of every parent of a page at once: each
/// parent gets at most `first` rows, its first ones in the list's order, and a parent with
/// many children takes nothing from the others.
async fn children_of_several_parents_are_bounded_per_parent_in_one_statement(store: Store) {
    let t = tenant_with_orgs(&store, "acme", &["org-a"]).await;
    let org = store.tenant(&t).organization("org-a");
    for (id, name) in [("e1", "Ada"), ("e2", "Bob"), ("e3", "Cy")] {
        employee(&org, id, name).await;
    }
    let h = 3600;
    // Scheduled latest first, so the first by start are not the first written.
    for k in (0..6).rev() {
        let s = shift(&format!("a{k}"), "e1", NOW + k * h, NOW + (k + 1) * h);
        org.schedule_shift(&s, NOW).await.unwrap();
    }
    for k in 0..2 {
        let s = shift(&format!("b{k}"), "e2", NOW + k * h, NOW + (k + 1) * h);
        org.schedule_shift(&s, NOW).await.unwrap();
    }

    let before = store.statements_executed();
    let found: Vec<(String, String)> = org
        .shifts_of(&ids(&["e3", "e2", "e1"]), 3)
        .await
        .unwrap()
        .into_iter()
        .map(|s| (s.employee_id, s.shift_id))
        .collect();
    assert_eq!(store.statements_executed() - before, 1);
    let expected: Vec<(String, String)> = [
        ("e1", "a0"),
        ("e1", "a1"),
        ("e1", "a2"),
        ("e2", "b0"),
        ("e2", "b1"),
    ]
    .iter()
    .map(|(e, s)| ((*e).to_owned(), (*s).to_owned()))
    .collect();
    assert_eq!(found, expected);

    let one: Vec<String> = org
        .shifts_of(&ids(&["e1", "e2"]), 1)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.shift_id)
        .collect();
    assert_eq!(one, ["a0", "b0"]);
    assert!(org.shifts_of(&ids(&["e1"]), 0).await.unwrap().is_empty());

    // The same bound on another kind of child: an invoice's lines, in their order.
    let billing = BillingProfile::new("USD");
    org.create_customer(&new_customer("c1", "Carl", &billing), NOW)
        .await
        .unwrap();
    invoice(&org, "i1", "c1").await;
    invoice(&org, "i2", "c1").await;
    let lines: Vec<(String, String)> = org
        .lines_of(&ids(&["i1", "i2"]), 1)
        .await
        .unwrap()
        .into_iter()
        .map(|l| (l.invoice_id, l.description))
        .collect();
    assert_eq!(
        lines,
        [
            ("i1".to_owned(), "Filter".to_owned()),
            ("i2".to_owned(), "Filter".to_owned())
        ]
    );
}

/// A page of jobs asked for with their assignees reads the assignments and the employees in
/// one statement: each assignment comes with its own employee (the same record a lookup by id
/// gives), each job's first in assignment order, and only the organization's.
async fn assignments_are_read_with_their_employees_in_one_statement(store: Store) {
    let t = tenant_with_orgs(&store, "acme", &["org-a", "org-b"]).await;
    let org = store.tenant(&t).organization("org-a");
    let other = store.tenant(&t).organization("org-b");
    for (id, name) in [("e1", "Ada"), ("e2", "Bob"), ("e3", "Cy")] {
        employee(&org, id, name).await;
    }
    employee(&other, "e9", "Zed").await;
    customer(&org, "c1", "Carl").await;
    work_order(&org, "wo1", "c1").await;
    job(&org, "j1", "wo1", NOW + 3600, NOW + 7200).await;
    job(&org, "j2", "wo1", NOW + 3600, NOW + 7200).await;
    for (employee_id, at) in [("e2", 1), ("e1", 2), ("e3", 3)] {
        org.assign_job("j1", employee_id, NOW + at).await.unwrap();
    }
    org.assign_job("j2", "e1", NOW + 1).await.unwrap();
    // Another organization's job and employee are not reached through this one.
    customer(&other, "c9", "Nina").await;
    work_order(&other, "wo9", "c9").await;
    job(&other, "j9", "wo9", NOW + 3600, NOW + 7200).await;
    other.assign_job("j9", "e9", NOW).await.unwrap();

    let by_id = org.employees(&ids(&["e1", "e2", "e3"])).await.unwrap();
    let employee_of = |id: &str| by_id.iter().find(|e| e.employee_id == id).unwrap().clone();
    let before = store.statements_executed();
    let staffed = org
        .staffing_of(&ids(&["j2", "j1", "j9"]), ALL)
        .await
        .unwrap();
    assert_eq!(store.statements_executed() - before, 1);
    let expected = [
        ("j1", "e2", 1),
        ("j1", "e1", 2),
        ("j1", "e3", 3),
        ("j2", "e1", 1),
    ];
    assert_eq!(staffed.len(), expected.len(), "{staffed:?}");
    for (row, (job_id, employee_id, at)) in staffed.iter().zip(expected) {
        assert_eq!(
            (
                row.assignment.job_id.as_str(),
                row.assignment.employee_id.as_str()
            ),
            (job_id, employee_id)
        );
        assert_eq!(row.assignment.assigned_at, NOW + at);
        assert_eq!(row.employee, employee_of(employee_id));
    }
    let plain = org.assignments_of(&ids(&["j1", "j2"]), ALL).await.unwrap();
    let joined: Vec<_> = staffed.into_iter().map(|s| s.assignment).collect();
    assert_eq!(joined, plain);

    // Bounded per job: one each, j1's first (the window's read, as j1 has more).
    let first: Vec<(String, String)> = org
        .staffing_of(&ids(&["j1", "j2"]), 1)
        .await
        .unwrap()
        .into_iter()
        .map(|s| (s.assignment.job_id, s.employee.name))
        .collect();
    assert_eq!(
        first,
        [
            ("j1".to_owned(), "Bob".to_owned()),
            ("j2".to_owned(), "Ada".to_owned())
        ]
    );
}

/// `totalCount` with a page: the whole filtered list (not what follows the cursor), counted
/// in the page's own statement; a page past the end has no row to carry it and counts again.
async fn a_page_counts_its_whole_list_in_the_same_statement(store: Store) {
    let t = tenant_with_orgs(&store, "acme", &["org-a", "org-b"]).await;
    let org = store.tenant(&t).organization("org-a");
    employee(&org, "e1", "Ada").await;
    employee(&org, "e2", "Bob").await;
    customer(&org, "c1", "Carl").await;
    work_order(&org, "wo1", "c1").await;
    for (id, start) in [("ja", 1000), ("jb", 2000), ("jc", 3000), ("jd", 4000)] {
        job(&org, id, "wo1", NOW + start, NOW + start + 500).await;
    }
    org.assign_job("jb", "e1", NOW).await.unwrap();
    org.assign_job("jc", "e1", NOW).await.unwrap();
    org.assign_job("jc", "e2", NOW).await.unwrap();
    // Another organization's jobs are never counted.
    let other = store.tenant(&t).organization("org-b");
    customer(&other, "c9", "Dee").await;
    work_order(&other, "wo9", "c9").await;
    job(&other, "jz", "wo9", NOW, NOW + 500).await;

    let counted = |first: u32, after: Option<Cursor>| PageRequest {
        after,
        first,
        with_total: true,
    };
    let e1 = JobFilter {
        assignee_id: Some("e1".to_owned()),
        ..JobFilter::default()
    };
    for (filter, all) in [(JobFilter::default(), 4), (e1, 2)] {
        let before = store.statements_executed();
        let page = org.list_jobs(&filter, &counted(1, None)).await.unwrap();
        assert_eq!(store.statements_executed() - before, 1, "{filter:?}");
        assert_eq!(page.total, Some(all), "{filter:?}");
        assert_eq!(page.items.len(), 1);
        assert_eq!(org.count_jobs(&filter).await.unwrap(), all);

        // After a cursor, the count is still of the whole list.
        let after = page.items[0].cursor();
        let rest = org
            .list_jobs(&filter, &counted(10, Some(after)))
            .await
            .unwrap();
        assert_eq!(rest.items.len() as i64, all - 1, "{filter:?}");
        assert_eq!(rest.total, Some(all), "{filter:?}");

        // Past the end: no rows, and the count from a statement of its own.
        let last = rest.items.last().unwrap().cursor();
        let before = store.statements_executed();
        let past = org
            .list_jobs(&filter, &counted(10, Some(last)))
            .await
            .unwrap();
        assert!(past.items.is_empty());
        assert_eq!(past.total, Some(all), "{filter:?}");
        assert_eq!(store.statements_executed() - before, 2);
    }
    // Not asked for, not counted; and the same on a list in text order.
    let page = org
        .list_jobs(&JobFilter::default(), &first(2))
        .await
        .unwrap();
    assert_eq!(page.total, None);
    let employees = org
        .list_employees(&EmployeeFilter::default(), &counted(1, None))
        .await
        .unwrap();
    assert_eq!(employees.total, Some(2));
    assert_eq!(employees.items[0].employee_id, "e1");
    let none = other
        .list_employees(&EmployeeFilter::default(), &counted(5, None))
        .await
        .unwrap();
    assert!(none.items.is_empty());
    assert_eq!(none.total, Some(0));
}

/// A page of jobs asked for with their work orders (an API schedule) is one statement: each
/// job as the page alone reads it, with its own work order as a lookup by id gives it (the
/// two tables share column names: `status`, `created_at`), in the page's order and count, and
/// only the organization's.
async fn a_page_of_jobs_is_read_with_their_work_orders_in_one_statement(store: Store) {
    let t = tenant_with_orgs(&store, "acme", &["org-a", "org-b"]).await;
    let org = store.tenant(&t).organization("org-a");
    employee(&org, "e1", "Ada").await;
    customer(&org, "c1", "Carl").await;
    customer(&org, "c2", "Dora").await;
    for (id, customer_id) in [("wo1", "c1"), ("wo2", "c2")] {
        let new = new_work_order(id, customer_id);
        org.create_work_order(&new, NOW - 100).await.unwrap();
    }
    for (id, wo, start) in [
        ("ja", "wo2", 3000),
        ("jb", "wo1", 1000),
        ("jc", "wo1", 2000),
    ] {
        job(&org, id, wo, NOW + start, NOW + start + 500).await;
    }
    org.assign_job("jc", "e1", NOW).await.unwrap();
    let other = store.tenant(&t).organization("org-b");
    customer(&other, "c9", "Nina").await;
    work_order(&other, "wo9", "c9").await;
    job(&other, "jz", "wo9", NOW, NOW + 500).await;

    let by_id = org.work_orders(&ids(&["wo1", "wo2"])).await.unwrap();
    let order_of = |id: &str| {
        by_id
            .iter()
            .find(|o| o.work_order_id == id)
            .unwrap()
            .clone()
    };
    let request = |first: u32, after: Option<Cursor>, with_total: bool| PageRequest {
        after,
        first,
        with_total,
    };
    let all = JobFilter::default();
    for with_total in [true, false] {
        let before = store.statements_executed();
        let page = org
            .list_scheduled_jobs(&all, &request(2, None, with_total))
            .await
            .unwrap();
        assert_eq!(store.statements_executed() - before, 1, "one statement");
        let alone = org
            .list_jobs(&all, &request(2, None, with_total))
            .await
            .unwrap();
        let jobs: Vec<Job> = page.items.iter().map(|row| row.job.clone()).collect();
        assert_eq!(jobs, alone.items);
        assert_eq!(
            jobs.iter().map(|j| j.job_id.as_str()).collect::<Vec<_>>(),
            ["jb", "jc"]
        );
        for row in &page.items {
            assert_eq!(row.work_order, order_of(&row.job.work_order_id));
        }
        assert!(page.has_next_page);
        assert_eq!(page.total, with_total.then_some(3));

        let after = Some(page.items[1].job.cursor());
        let rest = org
            .list_scheduled_jobs(&all, &request(5, after, with_total))
            .await
            .unwrap();
        let rest: Vec<(&str, &str)> = rest
            .items
            .iter()
            .map(|r| (r.job.job_id.as_str(), r.work_order.work_order_id.as_str()))
            .collect();
        assert_eq!(rest, [("ja", "wo2")]);
    }
    // Filtered, and past the end (the count then from a statement of its own).
    let of_e1 = JobFilter {
        assignee_id: Some("e1".to_owned()),
        ..JobFilter::default()
    };
    let page = org
        .list_scheduled_jobs(&of_e1, &request(5, None, true))
        .await
        .unwrap();
    assert_eq!(page.items.len(), 1);
    assert_eq!(page.items[0].work_order, order_of("wo1"));
    let last = Some(page.items[0].job.cursor());
    let past = org
        .list_scheduled_jobs(&of_e1, &request(5, last, true))
        .await
        .unwrap();
    assert!(past.items.is_empty() && !past.has_next_page);
    assert_eq!(past.total, Some(1));
    // Filtered by a column both tables have (`status`): the job's.
    org.start_job("jc", NOW).await.unwrap();
    for status in [JobStatus::Scheduled, JobStatus::InProgress] {
        let filter = JobFilter {
            status: Some(status),
            ..JobFilter::default()
        };
        let page = org
            .list_scheduled_jobs(&filter, &request(5, None, true))
            .await
            .unwrap();
        let alone = org
            .list_jobs(&filter, &request(5, None, true))
            .await
            .unwrap();
        let jobs: Vec<Job> = page.items.iter().map(|row| row.job.clone()).collect();
        assert_eq!(jobs, alone.items, "{status:?}");
        assert_eq!(page.total, alone.total, "{status:?}");
        assert!(!jobs.is_empty() && jobs.iter().all(|job| job.status == status));
    }
    // The other organization sees its own job only.
    let theirs = other
        .list_scheduled_jobs(&all, &request(5, None, true))
        .await
        .unwrap();
    assert_eq!(theirs.items.len(), 1);
    assert_eq!(theirs.items[0].work_order.work_order_id, "wo9");
    assert_eq!(theirs.total, Some(1));
}

/// A page of jobs asked for with their work orders and their crews (an API schedule with
/// who is on each job): each job as the page with its work orders reads it, each with the
/// first assignments and employees that [`OrgStore::staffing_of`] gives it (none for a job
/// without), in the page's order and count, and only the organization's; on PostgreSQL in
/// one statement, on SQLite in two.
async fn a_page_of_jobs_is_read_with_their_crews(store: Store) {
    let t = tenant_with_orgs(&store, "acme", &["org-a", "org-b"]).await;
    let org = store.tenant(&t).organization("org-a");
    for (id, name) in [("e1", "Ada"), ("e2", "Bob"), ("e3", "Cy")] {
        employee(&org, id, name).await;
    }
    customer(&org, "c1", "Carl").await;
    work_order(&org, "wo1", "c1").await;
    for (id, start) in [("ja", 3000), ("jb", 1000), ("jc", 2000), ("jd", 4000)] {
        job(&org, id, "wo1", NOW + start, NOW + start + 500).await;
    }
    // jb: three, assigned out of their ids' order; jc: one; ja: none; jd: one.
    for (job_id, employee_id, at) in [
        ("jb", "e3", 1),
        ("jb", "e1", 2),
        ("jb", "e2", 3),
        ("jc", "e2", 1),
        ("jd", "e1", 1),
    ] {
        org.assign_job(job_id, employee_id, NOW + at).await.unwrap();
    }
    let other = store.tenant(&t).organization("org-b");
    employee(&other, "e9", "Zed").await;
    customer(&other, "c9", "Nina").await;
    work_order(&other, "wo9", "c9").await;
    job(&other, "jz", "wo9", NOW, NOW + 500).await;
    other.assign_job("jz", "e9", NOW).await.unwrap();

    let all = JobFilter::default();
    for with_total in [true, false] {
        for (size, after) in [(2, None), (3, None), (5, None), (2, Some("jb"))] {
            let request = |after: Option<Cursor>| PageRequest {
                after,
                first: size,
                with_total,
            };
            let scheduled = org.list_scheduled_jobs(&all, &request(None)).await.unwrap();
            let after = after.map(|id| {
                let job = scheduled.items.iter().find(|r| r.job.job_id == id).unwrap();
                job.job.cursor()
            });
            let alone = org
                .list_scheduled_jobs(&all, &request(after.clone()))
                .await
                .unwrap();
            for crew_size in [0, 2, ALL] {
                let before = store.statements_executed();
                let page = org
                    .list_staffed_jobs(&all, &request(after.clone()), crew_size)
                    .await
                    .unwrap();
                // SQLite reads no crews of none.
                let statements = match store.backend() {
                    Backend::Sqlite if crew_size > 0 => 2,
                    _ => 1,
                };
                assert_eq!(store.statements_executed() - before, statements);
                let what = format!("size {size}, total {with_total}, crews of {crew_size}");
                assert_eq!(page.has_next_page, alone.has_next_page, "{what}");
                assert_eq!(page.total, alone.total, "{what}");
                assert_eq!(page.items.len(), alone.items.len(), "{what}");
                for (staffed, scheduled) in page.items.iter().zip(&alone.items) {
                    assert_eq!(staffed.job, scheduled.job, "{what}");
                    assert_eq!(staffed.work_order, scheduled.work_order, "{what}");
                    let crew = org
                        .staffing_of(&ids(&[&staffed.job.job_id]), crew_size)
                        .await
                        .unwrap();
                    assert_eq!(staffed.staff, crew, "{what}, {}", staffed.job.job_id);
                }
            }
        }
    }
    // What the statement reads, spelled out once: jb's crew in the order it was assigned.
    let page = org.list_staffed_jobs(&all, &first(1), 2).await.unwrap();
    let crew: Vec<(&str, &str, i64)> = page.items[0]
        .staff
        .iter()
        .map(|s| {
            let a = &s.assignment;
            (a.job_id.as_str(), s.employee.name.as_str(), a.assigned_at)
        })
        .collect();
    assert_eq!(crew, [("jb", "Cy", NOW + 1), ("jb", "Ada", NOW + 2)]);
    assert!(page.has_next_page);
    // The other organization's page holds its own job and crew only.
    let theirs = other.list_staffed_jobs(&all, &first(5), ALL).await.unwrap();
    assert_eq!(theirs.items.len(), 1);
    let names: Vec<&str> = theirs.items[0]
        .staff
        .iter()
        .map(|s| s.employee.name.as_str())
        .collect();
    assert_eq!(names, ["Zed"]);
}

async fn data_version(store: &Store, t: &TenantId, org: &str) -> i64 {
    store
        .tenant(t)
        .data_version(org)
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("{org} keeps a data version"))
}

/// The API's response cache reuses an answer only while the organization's data version
/// stands still (migration 0004's triggers), so every kind of write must raise it, and only
/// for its own organization.
async fn every_write_raises_its_organizations_data_version_and_no_other(store: Store) {
    let t = tenant_with_orgs(&store, "acme", &["org-a", "org-b"]).await;
    let a = store.tenant(&t).organization("org-a");
    let b_version = data_version(&store, &t, "org-b").await;
    let mut last = data_version(&store, &t, "org-a").await;
    let mut raised = |label: &'static str, now: i64| {
        assert!(
            now > last,
            "{label} raised org-a's version ({last} → {now})"
        );
        last = now;
    };

    customer(&a, "c1", "Carl").await;
    raised("a customer", data_version(&store, &t, "org-a").await);
    a.update_billing_profile("c1", &BillingProfile::new("EUR"))
        .await
        .unwrap();
    raised("a billing profile", data_version(&store, &t, "org-a").await);
    a.add_property(&property("p1", "c1")).await.unwrap();
    raised("a property", data_version(&store, &t, "org-a").await);
    work_order(&a, "w1", "c1").await;
    raised("a work order", data_version(&store, &t, "org-a").await);
    a.update_work_order_status("w1", WorkOrderStatus::InProgress, NOW)
        .await
        .unwrap();
    raised(
        "a work order's status",
        data_version(&store, &t, "org-a").await,
    );
    job(&a, "j1", "w1", NOW + 3600, NOW + 7200).await;
    raised("a job", data_version(&store, &t, "org-a").await);
    employee(&a, "e1", "Ada").await;
    raised("an employee", data_version(&store, &t, "org-a").await);
    a.assign_job("j1", "e1", NOW).await.unwrap();
    raised("an assignment", data_version(&store, &t, "org-a").await);
    a.schedule_shift(&shift("s1", "e1", NOW, NOW + 3600), NOW)
        .await
        .unwrap();
    raised("a shift", data_version(&store, &t, "org-a").await);
    a.start_job("j1", NOW).await.unwrap();
    raised("a job started", data_version(&store, &t, "org-a").await);
    a.create_invoice(&new_invoice("i1", "c1", &lines()), NOW)
        .await
        .unwrap();
    raised("an invoice", data_version(&store, &t, "org-a").await);
    a.issue_invoice("i1", None, NOW).await.unwrap();
    raised("an invoice issued", data_version(&store, &t, "org-a").await);
    a.record_payment("i1", &payment("pay1", 100), NOW)
        .await
        .unwrap();
    raised("a payment", data_version(&store, &t, "org-a").await);

    // Reads and refused writes change nothing.
    a.list_jobs(&JobFilter::default(), &first(10))
        .await
        .unwrap();
    assert_err!(
        a.assign_job("j1", "nobody", NOW).await,
        StoreError::NotFound(_)
    );
    assert_eq!(data_version(&store, &t, "org-a").await, last);
    assert_eq!(data_version(&store, &t, "org-b").await, b_version);
    assert_eq!(
        store.tenant(&t).data_version("no-such-org").await.unwrap(),
        None
    );
}
