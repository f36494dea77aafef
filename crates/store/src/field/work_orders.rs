//! Work orders: what a customer asked for, at which property, under which contract.

use super::page::{Order, Page, PageRequest, SortKey};
use super::positional::positional;
use super::sql::Sql;
use super::{Listed, OrgStore, WorkOrderStatus};
use crate::error::{Entity, StoreError};
use crate::tenant::Transaction;
use crate::UnixTime;

/// The agreement a work order is done under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Contract {
    pub terms: String,
    pub value_cents: i64,
    pub currency: String,
    /// `YYYY-MM-DD`.
    pub starts_on: String,
    pub ends_on: String,
}

#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct WorkOrder {
    pub work_order_id: String,
    /// Per organization, from 1; shown as `WO-000042`.
    pub number: i64,
    pub customer_id: String,
    pub property_id: Option<String>,
    pub description: String,
    #[sqlx(try_from = "String")]
    pub status: WorkOrderStatus,
    contract_terms: Option<String>,
    contract_value_cents: Option<i64>,
    contract_currency: Option<String>,
    contract_starts_on: Option<String>,
    contract_ends_on: Option<String>,
    pub created_at: UnixTime,
    pub updated_at: UnixTime,
}

positional!(WorkOrder {
    work_order_id,
    number,
    customer_id,
    property_id,
    description,
    status,
    contract_terms,
    contract_value_cents,
    contract_currency,
    contract_starts_on,
    contract_ends_on,
    created_at,
    updated_at,
});

pub(super) const WORK_ORDER_COLUMNS: &str =
    "work_order_id, number, customer_id, property_id, description, \
    status, contract_terms, contract_value_cents, contract_currency, contract_starts_on, \
    contract_ends_on, created_at, updated_at";
const WORK_ORDER_ORDER: Order = Order {
    key_column: "number",
    numeric: true,
    id_column: "work_order_id",
};
const WORK_ORDERS: Listed = Listed {
    table: "work_orders",
    columns: WORK_ORDER_COLUMNS,
    order: WORK_ORDER_ORDER,
};

impl WorkOrder {
    pub fn contract(&self) -> Option<Contract> {
        Some(Contract {
            terms: self.contract_terms.clone()?,
            value_cents: self.contract_value_cents?,
            currency: self.contract_currency.clone()?,
            starts_on: self.contract_starts_on.clone()?,
            ends_on: self.contract_ends_on.clone()?,
        })
    }

    pub fn cursor(&self) -> super::Cursor {
        WORK_ORDER_ORDER.cursor(SortKey::Int(self.number), &self.work_order_id)
    }
}

#[derive(Clone, Debug)]
pub struct NewWorkOrder<'a> {
    pub work_order_id: &'a str,
    pub customer_id: &'a str,
    pub property_id: Option<&'a str>,
    pub description: &'a str,
    pub contract: Option<&'a Contract>,
}

#[derive(Clone, Debug, Default)]
pub struct WorkOrderFilter {
    pub status: Option<WorkOrderStatus>,
    pub customer_id: Option<String>,
}

impl OrgStore<'_> {
    /// A new OPEN work order with the organization's next number. The property, when given,
    /// must be one of the customer's.
    pub async fn create_work_order(
        &self,
        new: &NewWorkOrder<'_>,
        now: UnixTime,
    ) -> Result<WorkOrder, StoreError> {
        let mut tx = self.tenant.begin().await?;
        let number = self.next_number(&mut tx, "work_order").await?;
        let contract = new.contract;
        let inserted: Result<WorkOrder, sqlx::Error> = sqlx::query_as(&format!(
            "INSERT INTO work_orders (tenant_id, organization_guid, {WORK_ORDER_COLUMNS}) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $14) \
             RETURNING {WORK_ORDER_COLUMNS}"
        ))
        .bind(self.tenant.id_str())
        .bind(self.organization_guid)
        .bind(new.work_order_id)
        .bind(number)
        .bind(new.customer_id)
        .bind(new.property_id)
        .bind(new.description)
        .bind(WorkOrderStatus::Open.as_str())
        .bind(contract.map(|c| c.terms.as_str()))
        .bind(contract.map(|c| c.value_cents))
        .bind(contract.map(|c| c.currency.as_str()))
        .bind(contract.map(|c| c.starts_on.as_str()))
        .bind(contract.map(|c| c.ends_on.as_str()))
        .bind(now)
        .fetch_one(self.tenant.in_tx(&mut tx))
        .await;
        match inserted {
            Ok(order) => {
                self.tenant.commit(tx).await?;
                Ok(order)
            }
            Err(e) if StoreError::is_foreign_key_violation(&e) => {
                drop(tx);
                match self
                    .customers(&[new.customer_id.to_owned()])
                    .await?
                    .is_empty()
                {
                    true => Err(StoreError::NotFound(Entity::Customer)),
                    false => Err(StoreError::NotFound(Entity::Property)),
                }
            }
            Err(e) => Err(StoreError::from_sqlx(e, Entity::WorkOrder)),
        }
    }

    /// The next number of a kind of record in this organization, inside the caller's
    /// transaction, so a rolled-back insert gives its number back.
    pub(crate) async fn next_number(
        &self,
        tx: &mut Transaction,
        kind: &str,
    ) -> Result<i64, StoreError> {
        let (number,): (i64,) = sqlx::query_as(
            "INSERT INTO record_numbers (tenant_id, organization_guid, kind, last_value) \
             VALUES ($1, $2, $3, 1) \
             ON CONFLICT (tenant_id, organization_guid, kind) \
             DO UPDATE SET last_value = record_numbers.last_value + 1 \
             RETURNING last_value",
        )
        .bind(self.tenant.id_str())
        .bind(self.organization_guid)
        .bind(kind)
        .fetch_one(self.tenant.in_tx(tx))
        .await
        .map_err(|e| match StoreError::is_foreign_key_violation(&e) {
            true => StoreError::NotFound(Entity::Organization),
            false => StoreError::from(e),
        })?;
        Ok(number)
    }

    pub async fn work_orders(&self, ids: &[String]) -> Result<Vec<WorkOrder>, StoreError> {
        self.by_ids("work_orders", WORK_ORDER_COLUMNS, "work_order_id", ids)
            .await
    }

    pub async fn list_work_orders(
        &self,
        filter: &WorkOrderFilter,
        page: &PageRequest,
    ) -> Result<Page<WorkOrder>, StoreError> {
        self.page_of(&WORK_ORDERS, self.work_order_filter("", filter), page)
            .await
    }

    pub async fn count_work_orders(&self, filter: &WorkOrderFilter) -> Result<i64, StoreError> {
        self.count_of(self.work_order_filter("SELECT COUNT(*) FROM work_orders", filter))
            .await
    }

    fn work_order_filter(&self, select: &str, filter: &WorkOrderFilter) -> Sql {
        let mut sql = self.scoped(select);
        if let Some(status) = filter.status {
            sql.push(" AND status = ").bind(status.as_str());
        }
        if let Some(customer_id) = &filter.customer_id {
            sql.push(" AND customer_id = ").bind(customer_id.as_str());
        }
        sql
    }

    /// Moves a work order to another status. A COMPLETED or CANCELLED order is final.
    pub async fn update_work_order_status(
        &self,
        work_order_id: &str,
        status: WorkOrderStatus,
        now: UnixTime,
    ) -> Result<WorkOrder, StoreError> {
        let updated: Option<WorkOrder> = sqlx::query_as(&format!(
            "UPDATE work_orders SET status = $1, updated_at = $2 \
             WHERE tenant_id = $3 AND organization_guid = $4 AND work_order_id = $5 \
               AND status NOT IN ('COMPLETED', 'CANCELLED') \
             RETURNING {WORK_ORDER_COLUMNS}"
        ))
        .bind(status.as_str())
        .bind(now)
        .bind(self.tenant.id_str())
        .bind(self.organization_guid)
        .bind(work_order_id)
        .fetch_optional(self.tenant.pool())
        .await?;
        if let Some(order) = updated {
            return Ok(order);
        }
        match self.work_orders(&[work_order_id.to_owned()]).await?.pop() {
            None => Err(StoreError::NotFound(Entity::WorkOrder)),
            Some(order) => Err(StoreError::Refused(format!(
                "the work order is {} and can no longer change",
                order.status
            ))),
        }
    }
}
