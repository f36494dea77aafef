//! The GraphQL schema: `viewer` and the five field-service areas, each gated by its scope
//! (spec 2.6). Every area is one file with its types, queries and mutations.

mod batcher;
mod connection;
pub(crate) mod context;
pub(crate) mod control_characters;
mod customers;
mod employees;
mod held;
mod invoices;
mod jobs;
pub(crate) mod loaders;
pub(crate) mod plain;
pub(crate) mod scalars;
mod scope;
pub(crate) use scope::Scopes;
mod viewer;
mod work_orders;

use std::sync::Arc;

use async_graphql::{EmptySubscription, MergedObject, Schema};
use jose::Clock;
use store::Store;

pub type ApiSchema = Schema<Query, Mutation, EmptySubscription>;

/// Deep or costly queries are refused before they run.
const MAX_DEPTH: usize = 12;
const MAX_COMPLEXITY: usize = 1_000;

#[derive(MergedObject, Default)]
pub struct Query(
    viewer::ViewerQuery,
    jobs::JobsQuery,
    work_orders::WorkOrdersQuery,
    customers::CustomersQuery,
    invoices::InvoicesQuery,
    employees::EmployeesQuery,
);

#[derive(MergedObject, Default)]
pub struct Mutation(
    jobs::JobsMutation,
    work_orders::WorkOrdersMutation,
    customers::CustomersMutation,
    invoices::InvoicesMutation,
    employees::EmployeesMutation,
);

/// No extension: records answer their plain fields without a future each (`plain`), which
/// an extension would expect to see resolved one by one. `validation` is `Strict` but for
/// the requests [`crate::known_documents`] knows valid.
pub fn build_schema(
    store: Store,
    clock: Arc<dyn Clock>,
    validation: async_graphql::ValidationMode,
) -> ApiSchema {
    Schema::build(Query::default(), Mutation::default(), EmptySubscription)
        .data(store)
        .data(clock)
        .limit_depth(MAX_DEPTH)
        .limit_complexity(MAX_COMPLEXITY)
        .validation_mode(validation)
        .finish()
}

/// The schema in SDL, as `fieldauth api schema` prints it and `schema.graphql` keeps it.
pub fn sdl() -> String {
    Schema::build(Query::default(), Mutation::default(), EmptySubscription)
        .finish()
        .sdl()
}
