//! Batched reads (`batcher`): a field of every row of a list (a job's work order, its
//! assignments, each assignment's employee) is loaded for all rows with one statement, not one
//! per row. One batcher per request, bound to the token's tenant and organization.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::batcher::{Batcher, Fetch, Map};
use store::{
    Assignment, Contact, Customer, Employee, Invoice, InvoiceLine, Job, Payment, Property, Shift,
    Staffed, Store, StoreError, TenantId, WorkOrder,
};

/// Loads the organization's records by id, and children by their parent's id.
pub struct FieldLoader {
    store: Store,
    tenant: TenantId,
    organization_guid: String,
}

pub type Loaders = Batcher<FieldLoader>;

/// The request's batcher; `execute` (lib.rs) starts its batches.
pub fn loaders(store: Store, tenant: TenantId, organization_guid: String) -> Loaders {
    Batcher::new(FieldLoader {
        store,
        tenant,
        organization_guid,
    })
}

/// Errors are shared by every key of a batch, so they are reference-counted.
pub type LoadError = Arc<StoreError>;

/// Answers are kept for the request and handed to every asker, so they are
/// reference-counted too: an asker takes a count, not a copy of the record's strings
/// (`held.rs`).
pub type Shared<T> = Arc<T>;

/// A record by its id: `$key(id)` loads a shared `$value` with `$method` and `$id`.
macro_rules! by_id {
    ($key:ident, $value:ty, $method:ident, $id:ident) => {
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        pub struct $key(pub String);

        impl Fetch<$key> for FieldLoader {
            type Value = Shared<$value>;
            type Error = LoadError;

            async fn fetch(&self, keys: &[$key]) -> Result<Map<$key, Self::Value>, LoadError> {
                let ids: Vec<String> = keys.iter().map(|k| k.0.clone()).collect();
                let rows = self
                    .store
                    .tenant(&self.tenant)
                    .organization(&self.organization_guid)
                    .$method(&ids)
                    .await?;
                Ok(rows
                    .into_iter()
                    .map(|r| ($key(r.$id.clone()), Shared::new(r)))
                    .collect())
            }
        }
    };
}

/// The first children of parents: `$key { parent, first }` loads at most `first` `$value`s
/// of that parent with `$method`, grouped by `$parent`, in the order the store returns them,
/// each as an `$item` in a shared list: a shared row where a resolver holds the row (a
/// record type's), the row itself where its fields are copied out (a value type's).
/// The store bounds each parent's rows in the same statement; keys of one batch asking for
/// different bounds (a field asked twice with two `first`s) are read once per bound.
macro_rules! children {
    ($key:ident, $value:ty => $item:ty, $method:ident, $($parent:ident).+) => {
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        pub struct $key {
            pub parent: String,
            pub first: u32,
        }

        impl Fetch<$key> for FieldLoader {
            type Value = Shared<Vec<$item>>;
            type Error = LoadError;

            async fn fetch(&self, keys: &[$key]) -> Result<Map<$key, Self::Value>, LoadError> {
                let mut grouped: Map<$key, Self::Value> =
                    keys.iter().map(|k| (k.clone(), Shared::default())).collect();
                let bounds: BTreeSet<u32> = keys.iter().map(|k| k.first).collect();
                for first in bounds {
                    let ids: Vec<String> = keys
                        .iter()
                        .filter(|k| k.first == first)
                        .map(|k| k.parent.clone())
                        .collect();
                    let rows = self
                        .store
                        .tenant(&self.tenant)
                        .organization(&self.organization_guid)
                        .$method(&ids, first)
                        .await?;
                    for row in rows {
                        let key = $key {
                            parent: row.$($parent).+.clone(),
                            first,
                        };
                        // The list is not shared yet, so this never copies it.
                        Shared::make_mut(grouped.entry(key).or_default()).push(<$item>::from(row));
                    }
                }
                Ok(grouped)
            }
        }
    };
}

by_id!(EmployeeId, Employee, employees, employee_id);
by_id!(CustomerId, Customer, customers, customer_id);
by_id!(PropertyId, Property, properties, property_id);
by_id!(WorkOrderId, WorkOrder, work_orders, work_order_id);
by_id!(JobId, Job, jobs, job_id);
by_id!(InvoiceId, Invoice, invoices, invoice_id);
children!(ShiftsOf, Shift => Shift, shifts_of, employee_id);
children!(ContactsOf, Contact => Contact, contacts_of, customer_id);
children!(PropertiesOf, Property => Shared<Property>, properties_of, customer_id);
children!(JobsOf, Job => Shared<Job>, jobs_of, work_order_id);
children!(AssignmentsOf, Assignment => Shared<Assignment>, assignments_of, job_id);
children!(StaffOf, Staffed => Staff, staffing_of, assignment.job_id);
children!(LinesOf, InvoiceLine => InvoiceLine, lines_of, invoice_id);
children!(PaymentsOf, Payment => Payment, payments_of, invoice_id);

/// An assignment read with its employee (`StaffOf`), each shared on its own: the employee
/// is resolved as a record of its own.
#[derive(Clone)]
pub struct Staff {
    pub assignment: Shared<Assignment>,
    pub employee: Shared<Employee>,
}

impl From<Staffed> for Staff {
    fn from(row: Staffed) -> Staff {
        Staff {
            assignment: Shared::new(row.assignment),
            employee: Shared::new(row.employee),
        }
    }
}
