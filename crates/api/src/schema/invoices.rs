//! The `invoices` area: invoices with lines and totals, and the payments recorded on them.

use async_graphql::{Context, Enum, InputObject, Object, SimpleObject, Value, ID};
use store::{InvoiceFilter as StoreInvoiceFilter, NewInvoice, NewInvoiceLine, NewPayment};

use super::connection::{asks_total, connection, nested_first, page_request, List, Total};
use super::context::{children, gql, new_id, now, org, require, Result};
use super::customers::Customer;
use super::held::Held;
use super::loaders::{CustomerId, InvoiceId, LinesOf, PaymentsOf, WorkOrderId};
use super::plain::{enum_name, plain_fields, Leaf, Plain};
use super::scalars::{Date, DateTime, Money, MoneyInput};
use super::scope::{Needs, Scope};
use super::work_orders::WorkOrder;
use crate::error::ApiError;
use crate::validate;

/// DRAFT → ISSUED → PARTIALLY_PAID → PAID. Only an issued invoice takes payments.
#[derive(Enum, Clone, Copy, PartialEq, Eq)]
#[graphql(remote = "store::InvoiceStatus")]
pub enum InvoiceStatus {
    /// Being prepared; not yet sent.
    Draft,
    /// Sent, nothing paid yet.
    Issued,
    PartiallyPaid,
    Paid,
}

#[derive(Enum, Clone, Copy, PartialEq, Eq)]
#[graphql(remote = "store::PaymentMethod")]
pub enum PaymentMethod {
    Card,
    BankTransfer,
    Check,
    Cash,
}

/// A bill to a customer.
pub struct Invoice(pub Held<store::Invoice>);

#[Object]
impl Invoice {
    async fn id(&self) -> ID {
        ID(self.0.invoice_id.clone())
    }

    /// The organization's number for it, such as `INV-000042`.
    async fn number(&self) -> String {
        number(self.0.number)
    }

    async fn status(&self) -> InvoiceStatus {
        self.0.status.into()
    }

    /// ISO 4217; every amount of the invoice is in it.
    async fn currency(&self) -> &str {
        &self.0.currency
    }

    /// Who is billed. Needs the `customers` scope.
    #[graphql(guard = "Needs(Scope::Customers)")]
    async fn customer(&self, ctx: &Context<'_>) -> Result<Option<Plain<Customer>>> {
        let customer = require(ctx, CustomerId(self.0.customer_id.clone()), "customer").await?;
        Ok(Some(Plain(Customer(Held::Shared(customer)))))
    }

    /// The work order billed, if any. Needs the `workOrders` scope.
    #[graphql(guard = "Needs(Scope::WorkOrders)")]
    async fn work_order(&self, ctx: &Context<'_>) -> Result<Option<Plain<WorkOrder>>> {
        let Some(id) = &self.0.work_order_id else {
            return Ok(None);
        };
        Ok(Some(Plain(WorkOrder(Held::Shared(
            require(ctx, WorkOrderId(id.clone()), "work order").await?,
        )))))
    }

    /// The lines in order, the first ones; an invoice has at most 100.
    async fn lines(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "At most 200; 100 when not given.")] first: Option<i32>,
    ) -> Result<Vec<InvoiceLine>> {
        let currency = &self.0.currency;
        let key = LinesOf {
            parent: self.0.invoice_id.clone(),
            first: nested_first(first)?,
        };
        let lines = children(ctx, key).await?;
        Ok(lines
            .iter()
            .map(|l| InvoiceLine {
                description: l.description.clone(),
                quantity: l.quantity,
                unit_price: Money::new(l.unit_price_cents, currency),
                amount: Money::new(l.amount_cents, currency),
            })
            .collect())
    }

    async fn totals(&self) -> InvoiceTotals {
        let i = &self.0;
        let money = |cents| Money::new(cents, &i.currency);
        InvoiceTotals {
            subtotal: money(i.subtotal_cents),
            tax_rate_basis_points: i.tax_rate_bp,
            tax: money(i.tax_cents),
            total: money(i.total_cents),
            paid: money(i.paid_cents),
            balance_due: money(i.balance_due_cents()),
        }
    }

    /// Payments received, the first ones, oldest first.
    async fn payments(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "At most 200; 100 when not given.")] first: Option<i32>,
    ) -> Result<Vec<Payment>> {
        let currency = &self.0.currency;
        let key = PaymentsOf {
            parent: self.0.invoice_id.clone(),
            first: nested_first(first)?,
        };
        let payments = children(ctx, key).await?;
        Ok(payments
            .iter()
            .map(|p| Payment {
                id: ID(p.payment_id.clone()),
                amount: Money::new(p.amount_cents, currency),
                method: p.method.into(),
                reference: p.reference.clone(),
                received_at: DateTime(p.received_at),
            })
            .collect())
    }

    /// When it was issued; null while a DRAFT.
    async fn issued_at(&self) -> Option<DateTime> {
        self.0.issued_at.map(DateTime)
    }

    /// When payment is due; null while a DRAFT.
    async fn due_on(&self) -> Option<Date> {
        self.0.due_on.clone().map(Date)
    }

    async fn created_at(&self) -> DateTime {
        DateTime(self.0.created_at)
    }
}

impl Invoice {
    fn leaf(&self, name: &str) -> Option<Leaf<'_>> {
        let invoice = &self.0;
        Some(match name {
            "id" => Leaf::Text(&invoice.invoice_id),
            "number" => Leaf::Value(Value::String(number(invoice.number))),
            "status" => Leaf::Text(enum_name(InvoiceStatus::from(invoice.status))?),
            "currency" => Leaf::Text(&invoice.currency),
            "issuedAt" => invoice.issued_at.map_or(Leaf::Null, Leaf::instant),
            "dueOn" => invoice.due_on.as_deref().map_or(Leaf::Null, Leaf::Text),
            "createdAt" => Leaf::instant(invoice.created_at),
            _ => return None,
        })
    }
}

/// An invoice's number as the organization writes it, such as `INV-000042`.
fn number(number: i64) -> String {
    format!("INV-{number:06}")
}

plain_fields!(Invoice {
    "id",
    "number",
    "status",
    "currency",
    "issuedAt",
    "dueOn",
    "createdAt",
    "totals",
} leaves Invoice::leaf);

#[derive(SimpleObject)]
pub struct InvoiceLine {
    pub description: String,
    pub quantity: i64,
    pub unit_price: Money,
    /// `quantity × unitPrice`.
    pub amount: Money,
}

/// The sums of an invoice. Tax is rounded half up to the cent.
#[derive(SimpleObject)]
pub struct InvoiceTotals {
    pub subtotal: Money,
    /// 825 is 8.25 %.
    pub tax_rate_basis_points: i64,
    pub tax: Money,
    pub total: Money,
    pub paid: Money,
    pub balance_due: Money,
}

#[derive(SimpleObject)]
pub struct Payment {
    pub id: ID,
    pub amount: Money,
    pub method: PaymentMethod,
    /// The card authorization, transfer or check number.
    pub reference: Option<String>,
    pub received_at: DateTime,
}

#[derive(InputObject, Default)]
pub struct InvoiceFilter {
    pub status: Option<InvoiceStatus>,
    pub customer_id: Option<ID>,
}

#[derive(InputObject)]
pub struct InvoiceLineInput {
    pub description: String,
    /// From 1 to 1,000,000.
    pub quantity: i64,
    /// Cents, never negative.
    pub unit_price_cents: i64,
}

#[derive(InputObject)]
pub struct CreateInvoiceInput {
    pub customer_id: ID,
    /// A work order of the same customer.
    pub work_order_id: Option<ID>,
    /// ISO 4217; the customer's billing currency when not given.
    pub currency: Option<String>,
    /// From 0 to 10,000 (100 %); 0 when not given.
    pub tax_rate_basis_points: Option<i64>,
    /// From 1 to 100 lines.
    pub lines: Vec<InvoiceLineInput>,
}

#[derive(InputObject)]
pub struct IssueInvoiceInput {
    /// A DRAFT invoice.
    pub id: ID,
    /// Without it: the issue date plus the customer's payment terms.
    pub due_on: Option<Date>,
}

#[derive(InputObject)]
pub struct RecordPaymentInput {
    /// An ISSUED or PARTIALLY_PAID invoice.
    pub invoice_id: ID,
    /// More than zero, in the invoice's currency, at most the balance due.
    pub amount: MoneyInput,
    pub method: PaymentMethod,
    pub reference: Option<String>,
    /// When the money arrived; now when not given.
    pub received_at: Option<DateTime>,
}

#[derive(Default)]
pub struct InvoicesQuery;

#[Object]
impl InvoicesQuery {
    /// The organization's invoices by number. Needs the `invoices` scope.
    #[graphql(guard = "Needs(Scope::Invoices)")]
    async fn invoices(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "At most 100; 20 when not given.")] first: Option<i32>,
        #[graphql(desc = "The `endCursor` of the previous page.")] after: Option<String>,
        filter: Option<InvoiceFilter>,
    ) -> Result<Option<List<Plain<Invoice>>>> {
        let page = page_request(first, after, asks_total(ctx))?;
        let filter = filter.unwrap_or_default();
        let filter = StoreInvoiceFilter {
            status: filter.status.map(Into::into),
            customer_id: filter.customer_id.map(|id| id.0),
        };
        let rows = org(ctx)?.list_invoices(&filter, &page).await.map_err(gql)?;
        let total = Total::Invoices(filter);
        Ok(Some(connection(
            rows,
            page.after.is_some(),
            total,
            store::Invoice::cursor,
            |row| Plain(Invoice(Held::Own(row))),
        )))
    }

    /// One invoice of the organization. Needs the `invoices` scope.
    #[graphql(guard = "Needs(Scope::Invoices)")]
    async fn invoice(&self, ctx: &Context<'_>, id: ID) -> Result<Option<Plain<Invoice>>> {
        Ok(Some(Plain(Invoice(Held::Shared(
            require(ctx, InvoiceId(id.0), "invoice").await?,
        )))))
    }
}

#[derive(Default)]
pub struct InvoicesMutation;

#[Object]
impl InvoicesMutation {
    /// Drafts an invoice for a customer. Needs the `invoices` scope.
    #[graphql(guard = "Needs(Scope::Invoices)")]
    async fn create_invoice(
        &self,
        ctx: &Context<'_>,
        input: CreateInvoiceInput,
    ) -> Result<Option<Plain<Invoice>>> {
        if input.lines.is_empty() || input.lines.len() > 100 {
            return Err(gql(ApiError::BadUserInput(
                "lines: from 1 to 100 lines".into(),
            )));
        }
        let lines = input
            .lines
            .iter()
            .enumerate()
            .map(|(i, l)| {
                Ok(NewInvoiceLine {
                    description: validate::text(
                        &format!("lines[{i}].description"),
                        &l.description,
                        500,
                    )?,
                    quantity: validate::within(
                        &format!("lines[{i}].quantity"),
                        l.quantity,
                        1,
                        1_000_000,
                    )?,
                    unit_price_cents: validate::amount(
                        &format!("lines[{i}].unitPriceCents"),
                        l.unit_price_cents,
                    )?,
                })
            })
            .collect::<validate::Checked<Vec<_>>>()?;
        let tax_rate_bp = validate::within(
            "taxRateBasisPoints",
            input.tax_rate_basis_points.unwrap_or(0),
            0,
            10_000,
        )?;
        let org = org(ctx)?;
        let currency = match &input.currency {
            Some(c) => validate::currency("currency", c)?,
            None => require(ctx, CustomerId(input.customer_id.0.clone()), "customer")
                .await?
                .billing
                .currency
                .clone(),
        };
        let invoice_id = new_id("inv");
        let new = NewInvoice {
            invoice_id: &invoice_id,
            customer_id: &input.customer_id,
            work_order_id: input.work_order_id.as_ref().map(|id| id.as_str()),
            currency: &currency,
            tax_rate_bp,
            lines: &lines,
        };
        let invoice = org.create_invoice(&new, now(ctx)?).await.map_err(gql)?;
        Ok(Some(Plain(Invoice(Held::Own(invoice)))))
    }

    /// DRAFT → ISSUED, with its due date. Needs the `invoices` scope.
    #[graphql(guard = "Needs(Scope::Invoices)")]
    async fn issue_invoice(
        &self,
        ctx: &Context<'_>,
        input: IssueInvoiceInput,
    ) -> Result<Option<Plain<Invoice>>> {
        let invoice = org(ctx)?
            .issue_invoice(
                &input.id,
                input.due_on.as_ref().map(|d| d.0.as_str()),
                now(ctx)?,
            )
            .await
            .map_err(gql)?;
        Ok(Some(Plain(Invoice(Held::Own(invoice)))))
    }

    /// Records money received against an issued invoice; more than the balance due is
    /// refused. Needs the `invoices` scope.
    #[graphql(guard = "Needs(Scope::Invoices)")]
    async fn record_payment(
        &self,
        ctx: &Context<'_>,
        input: RecordPaymentInput,
    ) -> Result<Option<Plain<Invoice>>> {
        let (amount_cents, currency) = input.amount.checked("amount")?;
        if amount_cents == 0 {
            return Err(gql(ApiError::BadUserInput(
                "amount: must be more than zero".into(),
            )));
        }
        let reference = validate::optional_text("reference", input.reference.as_deref(), 100)?;
        let now = now(ctx)?;
        let payment_id = new_id("pay");
        let payment = NewPayment {
            payment_id: &payment_id,
            amount_cents,
            currency: &currency,
            method: input.method.into(),
            reference: reference.as_deref(),
            received_at: input.received_at.map_or(now, |t| t.0),
        };
        let invoice = org(ctx)?
            .record_payment(&input.invoice_id, &payment, now)
            .await
            .map_err(gql)?;
        Ok(Some(Plain(Invoice(Held::Own(invoice)))))
    }
}
