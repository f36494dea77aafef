//! The field-service records `fieldauth demo` gives each demo organization: a roster with
//! shifts, customers with contacts and properties, work orders (some under contract), jobs
//! in every status with assignments and completion reports, and invoices in every status.
//! Seeded once per organization; later starts leave them as they are.

use jose::UnixTime;
use store::{
    Address, BillingProfile, Contact, Contract, EmployeeFilter, EmployeeRole, NewCustomer,
    NewEmployee, NewInvoice, NewInvoiceLine, NewJob, NewPayment, NewWorkOrder, OrgStore,
    PaymentMethod, Property, Shift, WorkOrderStatus,
};

/// What differs between the demo organizations: their trade.
pub struct Trade {
    pub staff: [(&'static str, EmployeeRole); 4],
    /// (customer, contact, street, city, region, postal code)
    pub customers: [(
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
    ); 3],
    /// (work order description, job titles)
    pub work: [(&'static str, [&'static str; 2]); 3],
    /// (invoice line, unit price in cents)
    pub billing: [(&'static str, i64); 2],
}

pub const PLUMBING: Trade = Trade {
    staff: [
        ("Maria Lopez", EmployeeRole::Technician),
        ("Dev Patel", EmployeeRole::Technician),
        ("Sam O'Neill", EmployeeRole::Dispatcher),
        ("Grace Kim", EmployeeRole::Supervisor),
    ],
    customers: [
        (
            "Harbor View Apartments",
            "Lena Ortiz",
            "120 Harbor Way",
            "Portland",
            "OR",
            "97201",
        ),
        (
            "Cedar Street Bakery",
            "Tom Reyes",
            "48 Cedar St",
            "Portland",
            "OR",
            "97205",
        ),
        (
            "Riverside Clinic",
            "Dr. Ana Silva",
            "900 River Rd",
            "Beaverton",
            "OR",
            "97005",
        ),
    ],
    work: [
        (
            "Replace the water heater in the boiler room",
            ["Remove old heater", "Install and test new heater"],
        ),
        (
            "Clear the recurring drain blockage in the kitchen",
            ["Camera inspection", "Hydro-jet main line"],
        ),
        (
            "Quarterly backflow preventer testing",
            ["Test backflow assemblies", "File test reports"],
        ),
    ],
    billing: [("Labor (hours)", 9_500), ("Parts and materials", 42_000)],
};

pub const ELECTRICAL: Trade = Trade {
    staff: [
        ("Noah Fischer", EmployeeRole::Technician),
        ("Aisha Bello", EmployeeRole::Technician),
        ("Chen Wei", EmployeeRole::Dispatcher),
        ("Olivia Grant", EmployeeRole::Supervisor),
    ],
    customers: [
        (
            "Summit Office Park",
            "Jordan Blake",
            "1 Summit Plaza",
            "Denver",
            "CO",
            "80202",
        ),
        (
            "Lakeside Elementary School",
            "Priya Nair",
            "300 Lake Ave",
            "Aurora",
            "CO",
            "80010",
        ),
        (
            "Mountain Brew Co.",
            "Luis Romero",
            "77 Brewery Ln",
            "Golden",
            "CO",
            "80401",
        ),
    ],
    work: [
        (
            "Upgrade the main panel to 400 A",
            ["Pull permit and shut down", "Install panel and inspect"],
        ),
        (
            "Replace parking-lot lighting with LED fixtures",
            ["Remove old fixtures", "Install LED fixtures"],
        ),
        (
            "Annual emergency-lighting inspection",
            ["Test emergency lights", "Replace failed batteries"],
        ),
    ],
    billing: [("Labor (hours)", 11_000), ("Fixtures and wire", 65_000)],
};

const HOUR: i64 = 3_600;
const DAY: i64 = 86_400;

/// Seeds the organization unless it already has employees. True when it seeded.
pub async fn seed_organization(
    org: &OrgStore<'_>,
    trade: &Trade,
    now: UnixTime,
) -> anyhow::Result<bool> {
    if org.count_employees(&EmployeeFilter::default()).await? > 0 {
        return Ok(false);
    }
    let today = now - now.rem_euclid(DAY);
    let mut employees = Vec::new();
    for (i, (name, role)) in trade.staff.iter().enumerate() {
        let id = api::record_id("emp");
        let first = name.split(' ').next().unwrap_or(name).to_lowercase();
        let email = format!("{first}@{}", "crew.example");
        let phone = format!("+1 555 010 {:04}", 1000 + i);
        let new = NewEmployee {
            employee_id: &id,
            name,
            role: *role,
            email: Some(&email),
            phone: Some(&phone),
        };
        org.create_employee(&new, now).await?;
        // Three days of 08:00–16:30 shifts, starting today.
        for day in 0..3 {
            let start = today + day * DAY + 8 * HOUR;
            let shift = Shift {
                shift_id: api::record_id("shift"),
                employee_id: id.clone(),
                starts_at: start,
                ends_at: start + 8 * HOUR + HOUR / 2,
                note: None,
            };
            org.schedule_shift(&shift, now).await?;
        }
        employees.push(id);
    }

    let mut customers = Vec::new();
    for (i, (name, contact, street, city, region, postal_code)) in
        trade.customers.iter().enumerate()
    {
        let id = api::record_id("cus");
        let mut billing = BillingProfile::new("USD");
        let domain: String = name
            .to_lowercase()
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .collect();
        billing.email = Some(format!("accounts@{domain}.example"));
        billing.payment_terms_days = [30, 15, 45][i];
        let address = Address {
            street: (*street).to_owned(),
            city: (*city).to_owned(),
            region: Some((*region).to_owned()),
            postal_code: (*postal_code).to_owned(),
            country: "US".to_owned(),
        };
        billing.set_address(Some(address.clone()));
        let contacts = [Contact {
            customer_id: id.clone(),
            position: 0,
            name: (*contact).to_owned(),
            email: Some(format!(
                "{}@{domain}.example",
                contact.rsplit(' ').next().unwrap_or(contact).to_lowercase()
            )),
            phone: Some(format!("+1 555 020 {:04}", 2000 + i)),
        }];
        let new = NewCustomer {
            customer_id: &id,
            name,
            contacts: &contacts,
            billing: &billing,
        };
        org.create_customer(&new, now).await?;
        let property = Property {
            property_id: api::record_id("prop"),
            customer_id: id.clone(),
            label: "Main site".to_owned(),
            address,
            access_notes: Some(
                "Check in at the front desk; parking behind the building.".to_owned(),
            ),
            created_at: now,
        };
        org.add_property(&property).await?;
        customers.push((id, property.property_id));
    }

    for (i, (description, titles)) in trade.work.iter().enumerate() {
        let (customer_id, property_id) = &customers[i];
        let work_order_id = api::record_id("wo");
        let contract = Contract {
            terms: "Net 30. Parts warranted for 12 months, labor for 90 days.".to_owned(),
            value_cents: 480_000 + 125_000 * i as i64,
            currency: "USD".to_owned(),
            starts_on: date(today),
            ends_on: date(today + 365 * DAY),
        };
        let new = NewWorkOrder {
            work_order_id: &work_order_id,
            customer_id,
            property_id: Some(property_id),
            description,
            contract: (i != 1).then_some(&contract),
        };
        org.create_work_order(&new, now).await?;
        for (j, title) in titles.iter().enumerate() {
            // Work order 0 is underway (one job done, one in progress); the rest are ahead.
            let offset = i as i64 * DAY + j as i64 * 3 * HOUR;
            let start = today + 9 * HOUR + offset - if i == 0 { DAY } else { 0 };
            let job_id = api::record_id("job");
            let new = NewJob {
                job_id: &job_id,
                work_order_id: &work_order_id,
                title,
                scheduled_start: start,
                scheduled_end: start + 2 * HOUR + HOUR / 2,
            };
            org.create_job(&new, now).await?;
            org.assign_job(&job_id, &employees[(i + j) % 2], now)
                .await?;
            if j == 0 {
                org.assign_job(&job_id, &employees[3], now).await?;
            }
            if i == 0 {
                org.start_job(&job_id, now).await?;
                if j == 0 {
                    org.complete_job(&job_id, "Done as planned; site left clean.", Some(150), now)
                        .await?;
                }
            }
        }
        if i == 0 {
            org.update_work_order_status(&work_order_id, WorkOrderStatus::InProgress, now)
                .await?;
            invoices(org, trade, customer_id, &work_order_id, now).await?;
        }
    }
    Ok(true)
}

/// A paid-in-part invoice, an issued one and a draft, for the first customer.
async fn invoices(
    org: &OrgStore<'_>,
    trade: &Trade,
    customer_id: &str,
    work_order_id: &str,
    now: UnixTime,
) -> anyhow::Result<()> {
    for (i, quantity) in [4, 2, 6].into_iter().enumerate() {
        let lines = trade
            .billing
            .map(|(description, unit_price_cents)| NewInvoiceLine {
                description: description.to_owned(),
                quantity: if unit_price_cents < 20_000 {
                    quantity
                } else {
                    1
                },
                unit_price_cents,
            });
        let invoice_id = api::record_id("inv");
        let new = NewInvoice {
            invoice_id: &invoice_id,
            customer_id,
            work_order_id: Some(work_order_id),
            currency: "USD",
            tax_rate_bp: 825,
            lines: &lines,
        };
        let invoice = org.create_invoice(&new, now).await?;
        if i < 2 {
            org.issue_invoice(&invoice_id, None, now).await?;
        }
        if i == 0 {
            let payment = NewPayment {
                payment_id: &api::record_id("pay"),
                amount_cents: invoice.total_cents / 2,
                currency: "USD",
                method: PaymentMethod::BankTransfer,
                reference: Some("ACH 20431"),
                received_at: now,
            };
            org.record_payment(&invoice_id, &payment, now).await?;
        }
    }
    Ok(())
}

fn date(at: UnixTime) -> String {
    chrono::DateTime::from_timestamp(at, 0)
        .map(|t| t.date_naive().to_string())
        .unwrap_or_default()
}
