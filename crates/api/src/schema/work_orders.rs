//! The `workOrders` area: what customers ask for, at which property, under which contract.

use async_graphql::{Context, Enum, InputObject, Object, SimpleObject, Value, ID};
use store::{NewWorkOrder, WorkOrderFilter as StoreWorkOrderFilter};

use super::connection::{asks_total, connection, nested_first, page_request, List, Total};
use super::context::{children, gql, new_id, now, org, require, Result};
use super::customers::{Customer, Property};
use super::held::Held;
use super::jobs::Job;
use super::loaders::{CustomerId, JobsOf, PropertyId, Shared, WorkOrderId};
use super::plain::{enum_name, plain_fields, Leaf, Plain};
use super::scalars::{Date, DateTime, Money, MoneyInput};
use super::scope::{Needs, Scope};
use crate::validate;

/// COMPLETED and CANCELLED are final: such an order changes no more and takes no new jobs.
#[derive(Enum, Clone, Copy, PartialEq, Eq)]
#[graphql(remote = "store::WorkOrderStatus")]
pub enum WorkOrderStatus {
    Open,
    InProgress,
    /// Waiting on the customer, parts or a permit.
    OnHold,
    Completed,
    Cancelled,
}

/// A customer's request for work at one of their properties.
pub struct WorkOrder(pub Held<store::WorkOrder>);

#[Object]
impl WorkOrder {
    async fn id(&self) -> ID {
        ID(self.0.work_order_id.clone())
    }

    /// The organization's number for it, such as `WO-000042`.
    async fn number(&self) -> String {
        number(self.0.number)
    }

    async fn description(&self) -> &str {
        &self.0.description
    }

    async fn status(&self) -> WorkOrderStatus {
        self.0.status.into()
    }

    /// Who asked for the work. Needs the `customers` scope.
    #[graphql(guard = "Needs(Scope::Customers)")]
    async fn customer(&self, ctx: &Context<'_>) -> Result<Option<Plain<Customer>>> {
        let customer = require(ctx, CustomerId(self.0.customer_id.clone()), "customer").await?;
        Ok(Some(Plain(Customer(Held::Shared(customer)))))
    }

    /// Where the work is done, when the order names a property. Needs the `customers` scope.
    #[graphql(guard = "Needs(Scope::Customers)")]
    async fn property(&self, ctx: &Context<'_>) -> Result<Option<Plain<Property>>> {
        let Some(id) = &self.0.property_id else {
            return Ok(None);
        };
        let property = require(ctx, PropertyId(id.clone()), "property").await?;
        Ok(Some(Plain(Property(Held::Shared(property)))))
    }

    /// The agreement the work is done under, if any.
    async fn contract(&self) -> Option<Contract> {
        self.0.contract().map(|c| Contract {
            value: Money::new(c.value_cents, &c.currency),
            terms: c.terms,
            starts_on: Date(c.starts_on),
            ends_on: Date(c.ends_on),
        })
    }

    /// The jobs that carry it out, the first ones by scheduled start. Needs the `jobs` scope.
    #[graphql(guard = "Needs(Scope::Jobs)")]
    async fn jobs(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "At most 200; 100 when not given.")] first: Option<i32>,
    ) -> Result<Option<Vec<Plain<Job>>>> {
        let key = JobsOf {
            parent: self.0.work_order_id.clone(),
            first: nested_first(first)?,
        };
        let jobs = children(ctx, key).await?;
        Ok(Some(
            jobs.iter()
                .map(|row| Plain(Job(Held::Shared(Shared::clone(row)))))
                .collect(),
        ))
    }

    async fn created_at(&self) -> DateTime {
        DateTime(self.0.created_at)
    }

    /// When the status last changed.
    async fn updated_at(&self) -> DateTime {
        DateTime(self.0.updated_at)
    }
}

impl WorkOrder {
    fn leaf(&self, name: &str) -> Option<Leaf<'_>> {
        let order = &self.0;
        Some(match name {
            "id" => Leaf::Text(&order.work_order_id),
            "number" => Leaf::Value(Value::String(number(order.number))),
            "description" => Leaf::Text(&order.description),
            "status" => Leaf::Text(enum_name(WorkOrderStatus::from(order.status))?),
            "createdAt" => Leaf::instant(order.created_at),
            "updatedAt" => Leaf::instant(order.updated_at),
            _ => return None,
        })
    }
}

plain_fields!(WorkOrder {
    "id",
    "number",
    "description",
    "status",
    "createdAt",
    "updatedAt",
    "contract",
} leaves WorkOrder::leaf);

/// The terms, value and period a work order is done under.
#[derive(SimpleObject)]
pub struct Contract {
    pub terms: String,
    pub value: Money,
    pub starts_on: Date,
    pub ends_on: Date,
}

#[derive(InputObject)]
pub struct ContractInput {
    pub terms: String,
    pub value: MoneyInput,
    pub starts_on: Date,
    /// On or after `startsOn`.
    pub ends_on: Date,
}

#[derive(InputObject, Default)]
pub struct WorkOrderFilter {
    pub status: Option<WorkOrderStatus>,
    pub customer_id: Option<ID>,
}

#[derive(InputObject)]
pub struct CreateWorkOrderInput {
    /// A customer of the organization.
    pub customer_id: ID,
    /// One of that customer's properties.
    pub property_id: Option<ID>,
    pub description: String,
    pub contract: Option<ContractInput>,
}

#[derive(InputObject)]
pub struct UpdateWorkOrderStatusInput {
    pub id: ID,
    pub status: WorkOrderStatus,
}

#[derive(Default)]
pub struct WorkOrdersQuery;

#[Object]
impl WorkOrdersQuery {
    /// The organization's work orders by number. Needs the `workOrders` scope.
    #[graphql(guard = "Needs(Scope::WorkOrders)")]
    async fn work_orders(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "At most 100; 20 when not given.")] first: Option<i32>,
        #[graphql(desc = "The `endCursor` of the previous page.")] after: Option<String>,
        filter: Option<WorkOrderFilter>,
    ) -> Result<Option<List<Plain<WorkOrder>>>> {
        let page = page_request(first, after, asks_total(ctx))?;
        let filter = filter.unwrap_or_default();
        let filter = StoreWorkOrderFilter {
            status: filter.status.map(Into::into),
            customer_id: filter.customer_id.map(|id| id.0),
        };
        let rows = org(ctx)?
            .list_work_orders(&filter, &page)
            .await
            .map_err(gql)?;
        let total = Total::WorkOrders(filter);
        Ok(Some(connection(
            rows,
            page.after.is_some(),
            total,
            store::WorkOrder::cursor,
            |row| Plain(WorkOrder(Held::Own(row))),
        )))
    }

    /// One work order of the organization. Needs the `workOrders` scope.
    #[graphql(guard = "Needs(Scope::WorkOrders)")]
    async fn work_order(&self, ctx: &Context<'_>, id: ID) -> Result<Option<Plain<WorkOrder>>> {
        Ok(Some(Plain(WorkOrder(Held::Shared(
            require(ctx, WorkOrderId(id.0), "work order").await?,
        )))))
    }
}

#[derive(Default)]
pub struct WorkOrdersMutation;

#[Object]
impl WorkOrdersMutation {
    /// Opens a work order with the organization's next number. Needs the `workOrders` scope.
    #[graphql(guard = "Needs(Scope::WorkOrders)")]
    async fn create_work_order(
        &self,
        ctx: &Context<'_>,
        input: CreateWorkOrderInput,
    ) -> Result<Option<Plain<WorkOrder>>> {
        let description = validate::text("description", &input.description, 4_000)?;
        let contract = input.contract.map(contract).transpose()?;
        let work_order_id = new_id("wo");
        let new = NewWorkOrder {
            work_order_id: &work_order_id,
            customer_id: &input.customer_id,
            property_id: input.property_id.as_ref().map(|id| id.as_str()),
            description: &description,
            contract: contract.as_ref(),
        };
        let order = org(ctx)?
            .create_work_order(&new, now(ctx)?)
            .await
            .map_err(gql)?;
        Ok(Some(Plain(WorkOrder(Held::Own(order)))))
    }

    /// Moves a work order to another status; COMPLETED and CANCELLED are final. Needs the
    /// `workOrders` scope.
    #[graphql(guard = "Needs(Scope::WorkOrders)")]
    async fn update_work_order_status(
        &self,
        ctx: &Context<'_>,
        input: UpdateWorkOrderStatusInput,
    ) -> Result<Option<Plain<WorkOrder>>> {
        let order = org(ctx)?
            .update_work_order_status(&input.id, input.status.into(), now(ctx)?)
            .await
            .map_err(gql)?;
        Ok(Some(Plain(WorkOrder(Held::Own(order)))))
    }
}

fn contract(input: ContractInput) -> validate::Checked<store::Contract> {
    let terms = validate::text("contract.terms", &input.terms, 4_000)?;
    let (value_cents, currency) = input.value.checked("contract.value")?;
    if input.ends_on < input.starts_on {
        return Err(gql(crate::ApiError::BadUserInput(
            "contract.endsOn: must not come before startsOn".into(),
        )));
    }
    Ok(store::Contract {
        terms,
        value_cents,
        currency,
        starts_on: input.starts_on.0,
        ends_on: input.ends_on.0,
    })
}

/// `WO-000042`: what `format!("WO-{n:06}")` writes, its digits by itoa instead of the
/// formatter's padding (840 instructions a number through `format!`, 160 this way;
/// docs/performance.md).
fn number(n: i64) -> String {
    if n < 0 {
        return format!("WO-{n:06}");
    }
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(n);
    let mut out = String::with_capacity(9 + digits.len());
    out.push_str("WO-");
    (digits.len()..6).for_each(|_| out.push('0'));
    out.push_str(digits);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_is_what_the_formatter_writes() {
        for n in [
            0,
            7,
            -7,
            42,
            99_999,
            -99_999,
            999_999,
            1_000_000,
            i64::MAX,
            i64::MIN,
        ] {
            assert_eq!(number(n), format!("WO-{n:06}"), "{n}");
        }
    }
}
