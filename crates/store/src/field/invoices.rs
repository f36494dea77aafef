//! Invoices: lines fixed at creation, totals kept beside them, and payments that can never
//! exceed the balance due.

use super::page::{Order, Page, PageRequest, SortKey};
use super::positional::positional;
use super::sql::Sql;
use super::{ChildList, InvoiceStatus, Listed, OrgStore, PaymentMethod};
use crate::error::{Entity, StoreError};
use crate::UnixTime;

#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct Invoice {
    pub invoice_id: String,
    /// Per organization, from 1; shown as `INV-000042`.
    pub number: i64,
    pub customer_id: String,
    pub work_order_id: Option<String>,
    pub currency: String,
    /// Tax rate in basis points: 825 is 8.25 %.
    pub tax_rate_bp: i64,
    pub subtotal_cents: i64,
    pub tax_cents: i64,
    pub total_cents: i64,
    pub paid_cents: i64,
    #[sqlx(try_from = "String")]
    pub status: InvoiceStatus,
    pub issued_at: Option<UnixTime>,
    /// `YYYY-MM-DD`, set when issued.
    pub due_on: Option<String>,
    pub created_at: UnixTime,
}

positional!(Invoice {
    invoice_id,
    number,
    customer_id,
    work_order_id,
    currency,
    tax_rate_bp,
    subtotal_cents,
    tax_cents,
    total_cents,
    paid_cents,
    status,
    issued_at,
    due_on,
    created_at,
});

const INVOICE_COLUMNS: &str = "invoice_id, number, customer_id, work_order_id, currency, \
    tax_rate_bp, subtotal_cents, tax_cents, total_cents, paid_cents, status, issued_at, due_on, \
    created_at";
const INVOICE_ORDER: Order = Order {
    key_column: "number",
    numeric: true,
    id_column: "invoice_id",
};
const INVOICES: Listed = Listed {
    table: "invoices",
    columns: INVOICE_COLUMNS,
    order: INVOICE_ORDER,
};

impl Invoice {
    pub fn cursor(&self) -> super::Cursor {
        INVOICE_ORDER.cursor(SortKey::Int(self.number), &self.invoice_id)
    }

    pub fn balance_due_cents(&self) -> i64 {
        self.total_cents - self.paid_cents
    }
}

#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct InvoiceLine {
    pub invoice_id: String,
    pub position: i64,
    pub description: String,
    pub quantity: i64,
    pub unit_price_cents: i64,
    pub amount_cents: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct Payment {
    pub payment_id: String,
    pub invoice_id: String,
    pub amount_cents: i64,
    #[sqlx(try_from = "String")]
    pub method: PaymentMethod,
    pub reference: Option<String>,
    pub received_at: UnixTime,
}

positional!(InvoiceLine {
    invoice_id,
    position,
    description,
    quantity,
    unit_price_cents,
    amount_cents,
});

positional!(Payment {
    payment_id,
    invoice_id,
    amount_cents,
    method,
    reference,
    received_at,
});

const PAYMENT_COLUMNS: &str =
    "payment_id, invoice_id, amount_cents, method, reference, received_at";

#[derive(Clone, Debug)]
pub struct NewInvoiceLine {
    pub description: String,
    pub quantity: i64,
    pub unit_price_cents: i64,
}

#[derive(Clone, Debug)]
pub struct NewInvoice<'a> {
    pub invoice_id: &'a str,
    pub customer_id: &'a str,
    /// Must be a work order of the same customer.
    pub work_order_id: Option<&'a str>,
    pub currency: &'a str,
    pub tax_rate_bp: i64,
    pub lines: &'a [NewInvoiceLine],
}

#[derive(Clone, Debug)]
pub struct NewPayment<'a> {
    pub payment_id: &'a str,
    pub amount_cents: i64,
    /// Must be the invoice's currency.
    pub currency: &'a str,
    pub method: PaymentMethod,
    pub reference: Option<&'a str>,
    pub received_at: UnixTime,
}

#[derive(Clone, Debug, Default)]
pub struct InvoiceFilter {
    pub status: Option<InvoiceStatus>,
    pub customer_id: Option<String>,
}

/// Line amounts, subtotal, tax (rounded half up to the cent) and total, refusing sums that
/// would overflow.
fn totals(lines: &[NewInvoiceLine], tax_rate_bp: i64) -> Result<(Vec<i64>, i64, i64), StoreError> {
    let too_large = || StoreError::Refused("the invoice amounts are too large".into());
    let amounts = lines
        .iter()
        .map(|l| {
            l.quantity
                .checked_mul(l.unit_price_cents)
                .ok_or_else(too_large)
        })
        .collect::<Result<Vec<i64>, _>>()?;
    let subtotal = amounts
        .iter()
        .try_fold(0i64, |sum, a| sum.checked_add(*a))
        .ok_or_else(too_large)?;
    let tax = subtotal
        .checked_mul(tax_rate_bp)
        .and_then(|t| t.checked_add(5_000))
        .ok_or_else(too_large)?
        / 10_000;
    Ok((amounts, subtotal, tax))
}

impl OrgStore<'_> {
    /// A DRAFT invoice with its lines and totals, numbered in this organization.
    pub async fn create_invoice(
        &self,
        new: &NewInvoice<'_>,
        now: UnixTime,
    ) -> Result<Invoice, StoreError> {
        let (amounts, subtotal, tax) = totals(new.lines, new.tax_rate_bp)?;
        let total = subtotal
            .checked_add(tax)
            .ok_or_else(|| StoreError::Refused("the invoice amounts are too large".into()))?;
        if self
            .customers(&[new.customer_id.to_owned()])
            .await?
            .is_empty()
        {
            return Err(StoreError::NotFound(Entity::Customer));
        }
        if let Some(work_order_id) = new.work_order_id {
            let order = self
                .work_orders(&[work_order_id.to_owned()])
                .await?
                .pop()
                .ok_or(StoreError::NotFound(Entity::WorkOrder))?;
            if order.customer_id != new.customer_id {
                return Err(StoreError::Refused(
                    "the work order belongs to another customer".into(),
                ));
            }
        }
        let mut tx = self.tenant.begin().await?;
        let number = self.next_number(&mut tx, "invoice").await?;
        let invoice: Invoice = sqlx::query_as(&format!(
            "INSERT INTO invoices (tenant_id, organization_guid, {INVOICE_COLUMNS}) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 0, 'DRAFT', NULL, NULL, $12) \
             RETURNING {INVOICE_COLUMNS}"
        ))
        .bind(self.tenant.id_str())
        .bind(self.organization_guid)
        .bind(new.invoice_id)
        .bind(number)
        .bind(new.customer_id)
        .bind(new.work_order_id)
        .bind(new.currency)
        .bind(new.tax_rate_bp)
        .bind(subtotal)
        .bind(tax)
        .bind(total)
        .bind(now)
        .fetch_one(self.tenant.in_tx(&mut tx))
        .await
        .map_err(|e| match StoreError::is_foreign_key_violation(&e) {
            // The customer or work order went away since the checks above.
            true => StoreError::NotFound(Entity::Customer),
            false => StoreError::from_sqlx(e, Entity::Invoice),
        })?;
        for (position, (line, amount)) in new.lines.iter().zip(amounts).enumerate() {
            sqlx::query(
                "INSERT INTO invoice_lines (tenant_id, invoice_id, position, organization_guid, \
                 description, quantity, unit_price_cents, amount_cents) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            )
            .bind(self.tenant.id_str())
            .bind(new.invoice_id)
            .bind(position as i64)
            .bind(self.organization_guid)
            .bind(&line.description)
            .bind(line.quantity)
            .bind(line.unit_price_cents)
            .bind(amount)
            .execute(self.tenant.in_tx(&mut tx))
            .await?;
        }
        self.tenant.commit(tx).await?;
        Ok(invoice)
    }

    pub async fn invoices(&self, ids: &[String]) -> Result<Vec<Invoice>, StoreError> {
        self.by_ids("invoices", INVOICE_COLUMNS, "invoice_id", ids)
            .await
    }

    pub async fn list_invoices(
        &self,
        filter: &InvoiceFilter,
        page: &PageRequest,
    ) -> Result<Page<Invoice>, StoreError> {
        self.page_of(&INVOICES, self.invoice_filter("", filter), page)
            .await
    }

    pub async fn count_invoices(&self, filter: &InvoiceFilter) -> Result<i64, StoreError> {
        self.count_of(self.invoice_filter("SELECT COUNT(*) FROM invoices", filter))
            .await
    }

    fn invoice_filter(&self, select: &str, filter: &InvoiceFilter) -> Sql {
        let mut sql = self.scoped(select);
        if let Some(status) = filter.status {
            sql.push(" AND status = ").bind(status.as_str());
        }
        if let Some(customer_id) = &filter.customer_id {
            sql.push(" AND customer_id = ").bind(customer_id.as_str());
        }
        sql
    }

    /// The first `first` lines of each of these invoices, each invoice's in order.
    pub async fn lines_of(
        &self,
        invoice_ids: &[String],
        first: u32,
    ) -> Result<Vec<InvoiceLine>, StoreError> {
        self.children(
            &ChildList {
                table: "invoice_lines",
                columns:
                    "invoice_id, position, description, quantity, unit_price_cents, amount_cents",
                parent_column: "invoice_id",
                order: "position",
                parent_of: |line: &InvoiceLine| &line.invoice_id,
            },
            invoice_ids,
            first,
        )
        .await
    }

    /// The first `first` payments of each of these invoices, each invoice's by the time
    /// received.
    pub async fn payments_of(
        &self,
        invoice_ids: &[String],
        first: u32,
    ) -> Result<Vec<Payment>, StoreError> {
        self.children(
            &ChildList {
                table: "payments",
                columns: PAYMENT_COLUMNS,
                parent_column: "invoice_id",
                order: "received_at, payment_id",
                parent_of: |payment: &Payment| &payment.invoice_id,
            },
            invoice_ids,
            first,
        )
        .await
    }

    /// DRAFT → ISSUED. The due date is `due_on` or, without it, the issue date plus the
    /// customer's payment terms.
    pub async fn issue_invoice(
        &self,
        invoice_id: &str,
        due_on: Option<&str>,
        now: UnixTime,
    ) -> Result<Invoice, StoreError> {
        let found: Option<(String, i64)> = sqlx::query_as(
            "SELECT i.status, c.payment_terms_days FROM invoices i JOIN customers c \
               ON c.tenant_id = i.tenant_id AND c.customer_id = i.customer_id \
             WHERE i.tenant_id = $1 AND i.organization_guid = $2 AND i.invoice_id = $3",
        )
        .bind(self.tenant.id_str())
        .bind(self.organization_guid)
        .bind(invoice_id)
        .fetch_optional(self.tenant.pool())
        .await?;
        let (status, terms) = found.ok_or(StoreError::NotFound(Entity::Invoice))?;
        let due_on = match due_on {
            Some(date) => date.to_owned(),
            None => date_after(now, terms)?,
        };
        let issued: Option<Invoice> = sqlx::query_as(&format!(
            "UPDATE invoices SET status = 'ISSUED', issued_at = $1, due_on = $2 \
             WHERE tenant_id = $3 AND organization_guid = $4 AND invoice_id = $5 \
               AND status = 'DRAFT' RETURNING {INVOICE_COLUMNS}"
        ))
        .bind(now)
        .bind(&due_on)
        .bind(self.tenant.id_str())
        .bind(self.organization_guid)
        .bind(invoice_id)
        .fetch_optional(self.tenant.pool())
        .await?;
        issued.ok_or_else(|| {
            StoreError::Refused(format!(
                "the invoice is {status}; only a DRAFT can be issued"
            ))
        })
    }

    /// Records a payment against an ISSUED or PARTIALLY_PAID invoice, in its currency and
    /// no larger than the balance due. The balance moves by one conditional update, so two
    /// payments at once can never take it below zero.
    pub async fn record_payment(
        &self,
        invoice_id: &str,
        payment: &NewPayment<'_>,
        now: UnixTime,
    ) -> Result<Invoice, StoreError> {
        let mut tx = self.tenant.begin().await?;
        let updated: Option<Invoice> = sqlx::query_as(&format!(
            "UPDATE invoices SET paid_cents = paid_cents + $1, \
               status = CASE WHEN paid_cents + $1 = total_cents THEN 'PAID' \
                             ELSE 'PARTIALLY_PAID' END \
             WHERE tenant_id = $2 AND organization_guid = $3 AND invoice_id = $4 \
               AND status IN ('ISSUED', 'PARTIALLY_PAID') AND currency = $5 \
               AND paid_cents + $1 <= total_cents \
             RETURNING {INVOICE_COLUMNS}"
        ))
        .bind(payment.amount_cents)
        .bind(self.tenant.id_str())
        .bind(self.organization_guid)
        .bind(invoice_id)
        .bind(payment.currency)
        .fetch_optional(self.tenant.in_tx(&mut tx))
        .await?;
        let Some(invoice) = updated else {
            drop(tx);
            return Err(self.payment_refusal(invoice_id, payment).await);
        };
        sqlx::query(&format!(
            "INSERT INTO payments (tenant_id, organization_guid, {PAYMENT_COLUMNS}, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
        ))
        .bind(self.tenant.id_str())
        .bind(self.organization_guid)
        .bind(payment.payment_id)
        .bind(invoice_id)
        .bind(payment.amount_cents)
        .bind(payment.method.as_str())
        .bind(payment.reference)
        .bind(payment.received_at)
        .bind(now)
        .execute(self.tenant.in_tx(&mut tx))
        .await?;
        self.tenant.commit(tx).await?;
        Ok(invoice)
    }

    async fn payment_refusal(&self, invoice_id: &str, payment: &NewPayment<'_>) -> StoreError {
        let invoice = match self.invoices(&[invoice_id.to_owned()]).await {
            Ok(mut found) => match found.pop() {
                Some(invoice) => invoice,
                None => return StoreError::NotFound(Entity::Invoice),
            },
            Err(error) => return error,
        };
        let message = match invoice.status {
            InvoiceStatus::Draft => {
                "the invoice is a DRAFT; issue it before recording payments".into()
            }
            InvoiceStatus::Paid => "the invoice is already PAID".into(),
            _ if invoice.currency != payment.currency => format!(
                "the payment is in {} but the invoice is in {}",
                payment.currency, invoice.currency
            ),
            _ => format!(
                "the payment of {} cents exceeds the balance due of {} cents",
                payment.amount_cents,
                invoice.balance_due_cents()
            ),
        };
        StoreError::Refused(message)
    }
}

/// The calendar date (UTC) `days` after the instant `at`, as `YYYY-MM-DD`.
fn date_after(at: UnixTime, days: i64) -> Result<String, StoreError> {
    chrono::DateTime::from_timestamp(at, 0)
        .and_then(|t| {
            t.date_naive()
                .checked_add_days(chrono::Days::new(days.max(0) as u64))
        })
        .map(|d| d.format("%Y-%m-%d").to_string())
        .ok_or(StoreError::Corrupt("time out of range"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(quantity: i64, unit_price_cents: i64) -> NewInvoiceLine {
        NewInvoiceLine {
            description: "x".into(),
            quantity,
            unit_price_cents,
        }
    }

    #[test]
    fn tax_is_rounded_half_up_to_the_cent() {
        // 3 × 3.33 = 9.99; 8.25 % of it is 82.4175 cents → 82.
        assert_eq!(totals(&[line(3, 333)], 825).unwrap(), (vec![999], 999, 82));
        // 10 % of 0.05 is half a cent → 1.
        assert_eq!(totals(&[line(1, 5)], 1_000).unwrap(), (vec![5], 5, 1));
    }

    #[test]
    fn overflowing_amounts_are_refused() {
        assert!(matches!(
            totals(&[line(i64::MAX, 2)], 0),
            Err(StoreError::Refused(_))
        ));
        assert!(matches!(
            totals(&[line(1, i64::MAX), line(1, 1)], 0),
            Err(StoreError::Refused(_))
        ));
    }

    #[test]
    fn due_dates_count_calendar_days_in_utc() {
        // 2026-11-23T23:30:00Z plus 30 days.
        assert_eq!(date_after(1_795_476_600, 30).unwrap(), "2026-12-23");
        assert_eq!(date_after(1_795_476_600, 0).unwrap(), "2026-11-23");
    }
}
