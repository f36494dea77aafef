//! Customer records: contacts, service properties and the billing profile.

use super::page::{Order, Page, PageRequest, SortKey};
use super::positional::positional;
use super::sql::Sql;
use super::{organization_missing_or, ChildList, Listed, OrgStore};
use crate::error::{Entity, StoreError};
use crate::UnixTime;

/// A postal address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Address {
    pub street: String,
    pub city: String,
    pub region: Option<String>,
    pub postal_code: String,
    /// ISO 3166-1 alpha-2.
    pub country: String,
}

/// How a customer is billed.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct BillingProfile {
    #[sqlx(rename = "billing_email")]
    pub email: Option<String>,
    /// ISO 4217; invoices of this customer default to it.
    #[sqlx(rename = "billing_currency")]
    pub currency: String,
    /// Days from issue to due date.
    pub payment_terms_days: i64,
    pub tax_id: Option<String>,
    #[sqlx(rename = "billing_street")]
    pub street: Option<String>,
    #[sqlx(rename = "billing_city")]
    pub city: Option<String>,
    #[sqlx(rename = "billing_region")]
    pub region: Option<String>,
    #[sqlx(rename = "billing_postal_code")]
    pub postal_code: Option<String>,
    #[sqlx(rename = "billing_country")]
    pub country: Option<String>,
}

impl BillingProfile {
    /// A new customer's profile: no email or address yet, 30 days' terms.
    pub fn new(currency: &str) -> BillingProfile {
        BillingProfile {
            email: None,
            currency: currency.to_owned(),
            payment_terms_days: 30,
            tax_id: None,
            street: None,
            city: None,
            region: None,
            postal_code: None,
            country: None,
        }
    }

    pub fn address(&self) -> Option<Address> {
        Some(Address {
            street: self.street.clone()?,
            city: self.city.clone()?,
            region: self.region.clone(),
            postal_code: self.postal_code.clone()?,
            country: self.country.clone()?,
        })
    }

    pub fn set_address(&mut self, address: Option<Address>) {
        let address = address.map(|a| (a.street, a.city, a.region, a.postal_code, a.country));
        let (street, city, region, postal_code, country) = match address {
            Some((s, c, r, p, n)) => (Some(s), Some(c), r, Some(p), Some(n)),
            None => (None, None, None, None, None),
        };
        (self.street, self.city, self.region) = (street, city, region);
        (self.postal_code, self.country) = (postal_code, country);
    }
}

#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct Customer {
    pub customer_id: String,
    pub name: String,
    #[sqlx(flatten)]
    pub billing: BillingProfile,
    pub created_at: UnixTime,
}

positional!(BillingProfile {
    email = "billing_email",
    currency = "billing_currency",
    payment_terms_days,
    tax_id,
    street = "billing_street",
    city = "billing_city",
    region = "billing_region",
    postal_code = "billing_postal_code",
    country = "billing_country",
});

positional!(Customer {
    customer_id,
    name,
    billing: BillingProfile,
    created_at,
});

const CUSTOMER_COLUMNS: &str = "customer_id, name, billing_email, billing_currency, \
    payment_terms_days, tax_id, billing_street, billing_city, billing_region, \
    billing_postal_code, billing_country, created_at";
const CUSTOMER_ORDER: Order = Order {
    key_column: "name",
    numeric: false,
    id_column: "customer_id",
};
const CUSTOMERS: Listed = Listed {
    table: "customers",
    columns: CUSTOMER_COLUMNS,
    order: CUSTOMER_ORDER,
};

impl Customer {
    pub fn cursor(&self) -> super::Cursor {
        CUSTOMER_ORDER.cursor(SortKey::Text(self.name.clone()), &self.customer_id)
    }
}

/// A person to talk to at a customer.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct Contact {
    pub customer_id: String,
    pub position: i64,
    pub name: String,
    pub email: Option<String>,
    pub phone: Option<String>,
}

positional!(Contact {
    customer_id,
    position,
    name,
    email,
    phone
});

const CONTACT_COLUMNS: &str = "customer_id, position, name, email, phone";

/// A site where work is done.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Property {
    pub property_id: String,
    pub customer_id: String,
    pub label: String,
    pub address: Address,
    pub access_notes: Option<String>,
    pub created_at: UnixTime,
}

const PROPERTY_COLUMNS: &str = "property_id, customer_id, label, street, city, region, \
    postal_code, country, access_notes, created_at";

#[derive(sqlx::FromRow)]
struct PropertyRow {
    property_id: String,
    customer_id: String,
    label: String,
    street: String,
    city: String,
    region: Option<String>,
    postal_code: String,
    country: String,
    access_notes: Option<String>,
    created_at: i64,
}

positional!(PropertyRow {
    property_id,
    customer_id,
    label,
    street,
    city,
    region,
    postal_code,
    country,
    access_notes,
    created_at,
});

impl From<PropertyRow> for Property {
    fn from(row: PropertyRow) -> Property {
        Property {
            property_id: row.property_id,
            customer_id: row.customer_id,
            label: row.label,
            address: Address {
                street: row.street,
                city: row.city,
                region: row.region,
                postal_code: row.postal_code,
                country: row.country,
            },
            access_notes: row.access_notes,
            created_at: row.created_at,
        }
    }
}

#[derive(Clone, Debug)]
pub struct NewCustomer<'a> {
    pub customer_id: &'a str,
    pub name: &'a str,
    pub contacts: &'a [Contact],
    pub billing: &'a BillingProfile,
}

#[derive(Clone, Debug, Default)]
pub struct CustomerFilter {
    /// Part of the name, any case.
    pub name_contains: Option<String>,
}

impl OrgStore<'_> {
    /// The customer and its contacts, in one transaction.
    pub async fn create_customer(
        &self,
        new: &NewCustomer<'_>,
        now: UnixTime,
    ) -> Result<Customer, StoreError> {
        let mut tx = self.tenant.begin().await?;
        let b = new.billing;
        sqlx::query(&format!(
            "INSERT INTO customers (tenant_id, organization_guid, name_key, {CUSTOMER_COLUMNS}) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)"
        ))
        .bind(self.tenant.id_str())
        .bind(self.organization_guid)
        .bind(new.name.to_lowercase())
        .bind(new.customer_id)
        .bind(new.name)
        .bind(b.email.as_deref())
        .bind(&b.currency)
        .bind(b.payment_terms_days)
        .bind(b.tax_id.as_deref())
        .bind(b.street.as_deref())
        .bind(b.city.as_deref())
        .bind(b.region.as_deref())
        .bind(b.postal_code.as_deref())
        .bind(b.country.as_deref())
        .bind(now)
        .execute(self.tenant.in_tx(&mut tx))
        .await
        .map_err(|e| organization_missing_or(e, Entity::Customer))?;
        for (position, contact) in new.contacts.iter().enumerate() {
            sqlx::query(
                "INSERT INTO customer_contacts (tenant_id, customer_id, position, \
                 organization_guid, name, email, phone) VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .bind(self.tenant.id_str())
            .bind(new.customer_id)
            .bind(position as i64)
            .bind(self.organization_guid)
            .bind(&contact.name)
            .bind(contact.email.as_deref())
            .bind(contact.phone.as_deref())
            .execute(self.tenant.in_tx(&mut tx))
            .await?;
        }
        self.tenant.commit(tx).await?;
        Ok(Customer {
            customer_id: new.customer_id.to_owned(),
            name: new.name.to_owned(),
            billing: b.clone(),
            created_at: now,
        })
    }

    pub async fn customers(&self, ids: &[String]) -> Result<Vec<Customer>, StoreError> {
        self.by_ids("customers", CUSTOMER_COLUMNS, "customer_id", ids)
            .await
    }

    pub async fn list_customers(
        &self,
        filter: &CustomerFilter,
        page: &PageRequest,
    ) -> Result<Page<Customer>, StoreError> {
        self.page_of(&CUSTOMERS, self.customer_filter("", filter), page)
            .await
    }

    pub async fn count_customers(&self, filter: &CustomerFilter) -> Result<i64, StoreError> {
        self.count_of(self.customer_filter("SELECT COUNT(*) FROM customers", filter))
            .await
    }

    fn customer_filter(&self, select: &str, filter: &CustomerFilter) -> Sql {
        let mut sql = self.scoped(select);
        if let Some(part) = &filter.name_contains {
            let escaped = part
                .to_lowercase()
                .replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_");
            sql.push(" AND name_key LIKE ")
                .bind(format!("%{escaped}%"))
                .push(" ESCAPE '\\'");
        }
        sql
    }

    /// Replaces the billing profile; `NotFound(Customer)` outside this organization.
    pub async fn update_billing_profile(
        &self,
        customer_id: &str,
        billing: &BillingProfile,
    ) -> Result<Customer, StoreError> {
        let updated: Option<Customer> = sqlx::query_as(&format!(
            "UPDATE customers SET billing_email = $1, billing_currency = $2, \
             payment_terms_days = $3, tax_id = $4, billing_street = $5, billing_city = $6, \
             billing_region = $7, billing_postal_code = $8, billing_country = $9 \
             WHERE tenant_id = $10 AND organization_guid = $11 AND customer_id = $12 \
             RETURNING {CUSTOMER_COLUMNS}"
        ))
        .bind(billing.email.as_deref())
        .bind(&billing.currency)
        .bind(billing.payment_terms_days)
        .bind(billing.tax_id.as_deref())
        .bind(billing.street.as_deref())
        .bind(billing.city.as_deref())
        .bind(billing.region.as_deref())
        .bind(billing.postal_code.as_deref())
        .bind(billing.country.as_deref())
        .bind(self.tenant.id_str())
        .bind(self.organization_guid)
        .bind(customer_id)
        .fetch_optional(self.tenant.pool())
        .await?;
        updated.ok_or(StoreError::NotFound(Entity::Customer))
    }

    /// The first `first` contacts of each of these customers, each customer's in order.
    pub async fn contacts_of(
        &self,
        customer_ids: &[String],
        first: u32,
    ) -> Result<Vec<Contact>, StoreError> {
        self.children(
            &ChildList {
                table: "customer_contacts",
                columns: CONTACT_COLUMNS,
                parent_column: "customer_id",
                order: "position",
                parent_of: |contact: &Contact| &contact.customer_id,
            },
            customer_ids,
            first,
        )
        .await
    }

    /// Adds a property to a customer of this organization.
    pub async fn add_property(&self, property: &Property) -> Result<Property, StoreError> {
        let a = &property.address;
        sqlx::query(&format!(
            "INSERT INTO properties (tenant_id, organization_guid, {PROPERTY_COLUMNS}) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"
        ))
        .bind(self.tenant.id_str())
        .bind(self.organization_guid)
        .bind(&property.property_id)
        .bind(&property.customer_id)
        .bind(&property.label)
        .bind(&a.street)
        .bind(&a.city)
        .bind(a.region.as_deref())
        .bind(&a.postal_code)
        .bind(&a.country)
        .bind(property.access_notes.as_deref())
        .bind(property.created_at)
        .execute(self.tenant.pool())
        .await
        .map_err(|e| match StoreError::is_foreign_key_violation(&e) {
            true => StoreError::NotFound(Entity::Customer),
            false => StoreError::from_sqlx(e, Entity::Property),
        })?;
        Ok(property.clone())
    }

    pub async fn properties(&self, ids: &[String]) -> Result<Vec<Property>, StoreError> {
        let rows: Vec<PropertyRow> = self
            .by_ids("properties", PROPERTY_COLUMNS, "property_id", ids)
            .await?;
        Ok(rows.into_iter().map(Property::from).collect())
    }

    /// The first `first` properties of each of these customers, each customer's in the order
    /// they were added.
    pub async fn properties_of(
        &self,
        customer_ids: &[String],
        first: u32,
    ) -> Result<Vec<Property>, StoreError> {
        let rows: Vec<PropertyRow> = self
            .children(
                &ChildList {
                    table: "properties",
                    columns: PROPERTY_COLUMNS,
                    parent_column: "customer_id",
                    order: "created_at, property_id",
                    parent_of: |row: &PropertyRow| &row.customer_id,
                },
                customer_ids,
                first,
            )
            .await?;
        Ok(rows.into_iter().map(Property::from).collect())
    }
}
