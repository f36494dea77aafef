//! The `customers` area: customer records with contacts, properties and billing profiles.

use async_graphql::{Context, InputObject, Object, SimpleObject, ID};
use store::{BillingProfile as StoreBilling, CustomerFilter, NewCustomer};

use super::connection::{asks_total, connection, nested_first, page_request, List, Total};
use super::context::{children, gql, new_id, now, org, require, Result};
use super::held::Held;
use super::loaders::{ContactsOf, CustomerId, PropertiesOf, Shared};
use super::plain::{plain_fields, Leaf, Plain};
use super::scalars::DateTime;
use super::scope::{Needs, Scope};
use crate::validate;

/// A customer has at most this many contacts, all given when it is created.
const MAX_CONTACTS: u32 = 20;

/// A business or household the organization works for.
pub struct Customer(pub Held<store::Customer>);

#[Object]
impl Customer {
    async fn id(&self) -> ID {
        ID(self.0.customer_id.clone())
    }

    async fn name(&self) -> &str {
        &self.0.name
    }

    /// People to talk to, in the order given; at most 20.
    async fn contacts(&self, ctx: &Context<'_>) -> Result<Vec<Contact>> {
        let key = ContactsOf {
            parent: self.0.customer_id.clone(),
            first: MAX_CONTACTS,
        };
        let contacts = children(ctx, key).await?;
        Ok(contacts.iter().map(Contact::from).collect())
    }

    /// Sites where work is done, the first ones in the order they were added.
    async fn properties(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "At most 200; 100 when not given.")] first: Option<i32>,
    ) -> Result<Vec<Plain<Property>>> {
        let key = PropertiesOf {
            parent: self.0.customer_id.clone(),
            first: nested_first(first)?,
        };
        let properties = children(ctx, key).await?;
        Ok(properties
            .iter()
            .map(|row| Plain(Property(Held::Shared(Shared::clone(row)))))
            .collect())
    }

    async fn billing_profile(&self) -> BillingProfile {
        BillingProfile::from(&self.0.billing)
    }

    async fn created_at(&self) -> DateTime {
        DateTime(self.0.created_at)
    }
}

impl Customer {
    fn leaf(&self, name: &str) -> Option<Leaf<'_>> {
        let customer = &self.0;
        Some(match name {
            "id" => Leaf::Text(&customer.customer_id),
            "name" => Leaf::Text(&customer.name),
            "createdAt" => Leaf::instant(customer.created_at),
            _ => return None,
        })
    }
}

plain_fields!(Customer {
    "id",
    "name",
    "createdAt",
    "billingProfile",
} leaves Customer::leaf);

/// A person at a customer.
#[derive(SimpleObject)]
pub struct Contact {
    pub name: String,
    pub email: Option<String>,
    pub phone: Option<String>,
}

impl From<&store::Contact> for Contact {
    fn from(c: &store::Contact) -> Contact {
        Contact {
            name: c.name.clone(),
            email: c.email.clone(),
            phone: c.phone.clone(),
        }
    }
}

/// A site of a customer where work is done.
pub struct Property(pub Held<store::Property>);

#[Object]
impl Property {
    async fn id(&self) -> ID {
        ID(self.0.property_id.clone())
    }

    /// What the customer calls it, such as "Main warehouse".
    async fn label(&self) -> &str {
        &self.0.label
    }

    async fn address(&self) -> Address {
        Address::from(self.0.address.clone())
    }

    /// Gate codes, parking, where the key is.
    async fn access_notes(&self) -> Option<&str> {
        self.0.access_notes.as_deref()
    }
}

impl Property {
    fn leaf(&self, name: &str) -> Option<Leaf<'_>> {
        let property = &self.0;
        Some(match name {
            "id" => Leaf::Text(&property.property_id),
            "label" => Leaf::Text(&property.label),
            "accessNotes" => property
                .access_notes
                .as_deref()
                .map_or(Leaf::Null, Leaf::Text),
            _ => return None,
        })
    }
}

plain_fields!(Property {
    "id",
    "label",
    "accessNotes",
    "address",
} leaves Property::leaf);

/// A postal address.
#[derive(SimpleObject)]
pub struct Address {
    pub street: String,
    pub city: String,
    /// State, province or county, where the country has them.
    pub region: Option<String>,
    pub postal_code: String,
    /// ISO 3166-1 alpha-2, such as US.
    pub country: String,
}

impl From<store::Address> for Address {
    fn from(a: store::Address) -> Address {
        Address {
            street: a.street,
            city: a.city,
            region: a.region,
            postal_code: a.postal_code,
            country: a.country,
        }
    }
}

/// How the customer is invoiced.
#[derive(SimpleObject)]
pub struct BillingProfile {
    /// Where invoices are sent.
    pub email: Option<String>,
    /// ISO 4217; the customer's invoices are in it.
    pub currency: String,
    /// Days from issue to due date.
    pub payment_terms_days: i64,
    pub tax_id: Option<String>,
    pub address: Option<Address>,
}

impl From<&StoreBilling> for BillingProfile {
    fn from(b: &StoreBilling) -> BillingProfile {
        BillingProfile {
            email: b.email.clone(),
            currency: b.currency.clone(),
            payment_terms_days: b.payment_terms_days,
            tax_id: b.tax_id.clone(),
            address: b.address().map(Address::from),
        }
    }
}

#[derive(InputObject)]
pub struct AddressInput {
    pub street: String,
    pub city: String,
    pub region: Option<String>,
    pub postal_code: String,
    /// ISO 3166-1 alpha-2, such as US.
    pub country: String,
}

#[derive(InputObject)]
pub struct ContactInput {
    pub name: String,
    pub email: Option<String>,
    pub phone: Option<String>,
}

#[derive(InputObject)]
pub struct BillingProfileInput {
    pub email: Option<String>,
    /// ISO 4217, such as USD.
    pub currency: String,
    /// From 0 to 365; 30 when not given.
    pub payment_terms_days: Option<i64>,
    pub tax_id: Option<String>,
    pub address: Option<AddressInput>,
}

#[derive(InputObject)]
pub struct CreateCustomerInput {
    pub name: String,
    /// Up to 20 contacts.
    pub contacts: Option<Vec<ContactInput>>,
    /// Without it: USD, 30 days' terms, no email or address.
    pub billing_profile: Option<BillingProfileInput>,
}

#[derive(InputObject)]
pub struct AddPropertyInput {
    pub customer_id: ID,
    pub label: String,
    pub address: AddressInput,
    pub access_notes: Option<String>,
}

#[derive(InputObject)]
pub struct UpdateBillingProfileInput {
    pub customer_id: ID,
    /// Replaces the whole profile.
    pub billing_profile: BillingProfileInput,
}

#[derive(Default)]
pub struct CustomersQuery;

#[Object]
impl CustomersQuery {
    /// The organization's customers by name. Needs the `customers` scope.
    #[graphql(guard = "Needs(Scope::Customers)")]
    async fn customers(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "At most 100; 20 when not given.")] first: Option<i32>,
        #[graphql(desc = "The `endCursor` of the previous page.")] after: Option<String>,
        #[graphql(desc = "Only customers whose name contains this, in any case.")] search: Option<
            String,
        >,
    ) -> Result<Option<List<Plain<Customer>>>> {
        let page = page_request(first, after, asks_total(ctx))?;
        let filter = CustomerFilter {
            name_contains: validate::optional_text("search", search.as_deref(), 200)?,
        };
        let rows = org(ctx)?
            .list_customers(&filter, &page)
            .await
            .map_err(gql)?;
        let total = Total::Customers(filter);
        Ok(Some(connection(
            rows,
            page.after.is_some(),
            total,
            store::Customer::cursor,
            |row| Plain(Customer(Held::Own(row))),
        )))
    }

    /// One customer of the organization. Needs the `customers` scope.
    #[graphql(guard = "Needs(Scope::Customers)")]
    async fn customer(&self, ctx: &Context<'_>, id: ID) -> Result<Option<Plain<Customer>>> {
        Ok(Some(Plain(Customer(Held::Shared(
            require(ctx, CustomerId(id.0), "customer").await?,
        )))))
    }
}

#[derive(Default)]
pub struct CustomersMutation;

#[Object]
impl CustomersMutation {
    /// Adds a customer with its contacts and billing profile. Needs the `customers` scope.
    #[graphql(guard = "Needs(Scope::Customers)")]
    async fn create_customer(
        &self,
        ctx: &Context<'_>,
        input: CreateCustomerInput,
    ) -> Result<Option<Plain<Customer>>> {
        let name = validate::text("name", &input.name, 200)?;
        let contacts = input.contacts.unwrap_or_default();
        if contacts.len() > MAX_CONTACTS as usize {
            return Err(gql(crate::ApiError::BadUserInput(format!(
                "contacts: at most {MAX_CONTACTS}"
            ))));
        }
        let contacts = contacts
            .iter()
            .enumerate()
            .map(|(i, c)| contact(i, c))
            .collect::<validate::Checked<Vec<_>>>()?;
        let billing = match &input.billing_profile {
            Some(profile) => billing("billingProfile", profile)?,
            None => StoreBilling::new("USD"),
        };
        let customer_id = new_id("cus");
        let new = NewCustomer {
            customer_id: &customer_id,
            name: &name,
            contacts: &contacts,
            billing: &billing,
        };
        let customer = org(ctx)?
            .create_customer(&new, now(ctx)?)
            .await
            .map_err(gql)?;
        Ok(Some(Plain(Customer(Held::Own(customer)))))
    }

    /// Adds a property to a customer, and returns the customer. Needs the `customers` scope.
    #[graphql(guard = "Needs(Scope::Customers)")]
    async fn add_property(
        &self,
        ctx: &Context<'_>,
        input: AddPropertyInput,
    ) -> Result<Option<Plain<Customer>>> {
        let property = store::Property {
            property_id: new_id("prop"),
            customer_id: input.customer_id.0.clone(),
            label: validate::text("label", &input.label, 200)?,
            address: address("address", &input.address)?,
            access_notes: validate::optional_text(
                "accessNotes",
                input.access_notes.as_deref(),
                2_000,
            )?,
            created_at: now(ctx)?,
        };
        let org = org(ctx)?;
        org.add_property(&property).await.map_err(gql)?;
        let customer = org
            .customers(&[input.customer_id.0])
            .await
            .map_err(gql)?
            .pop()
            .ok_or_else(|| gql(crate::ApiError::NotFound("customer not found".into())))?;
        Ok(Some(Plain(Customer(Held::Own(customer)))))
    }

    /// Replaces a customer's billing profile. Needs the `customers` scope.
    #[graphql(guard = "Needs(Scope::Customers)")]
    async fn update_billing_profile(
        &self,
        ctx: &Context<'_>,
        input: UpdateBillingProfileInput,
    ) -> Result<Option<Plain<Customer>>> {
        let billing = billing("billingProfile", &input.billing_profile)?;
        let customer = org(ctx)?
            .update_billing_profile(&input.customer_id, &billing)
            .await
            .map_err(gql)?;
        Ok(Some(Plain(Customer(Held::Own(customer)))))
    }
}

fn contact(i: usize, c: &ContactInput) -> validate::Checked<store::Contact> {
    Ok(store::Contact {
        customer_id: String::new(),
        position: i as i64,
        name: validate::text(&format!("contacts[{i}].name"), &c.name, 200)?,
        email: validate::email(&format!("contacts[{i}].email"), c.email.as_deref())?,
        phone: validate::phone(&format!("contacts[{i}].phone"), c.phone.as_deref())?,
    })
}

fn address(field: &str, a: &AddressInput) -> validate::Checked<store::Address> {
    Ok(store::Address {
        street: validate::text(&format!("{field}.street"), &a.street, 200)?,
        city: validate::text(&format!("{field}.city"), &a.city, 100)?,
        region: validate::optional_text(&format!("{field}.region"), a.region.as_deref(), 100)?,
        postal_code: validate::text(&format!("{field}.postalCode"), &a.postal_code, 20)?,
        country: validate::country(&format!("{field}.country"), &a.country)?,
    })
}

fn billing(field: &str, b: &BillingProfileInput) -> validate::Checked<StoreBilling> {
    let mut profile = StoreBilling::new(&validate::currency(
        &format!("{field}.currency"),
        &b.currency,
    )?);
    profile.email = validate::email(&format!("{field}.email"), b.email.as_deref())?;
    profile.payment_terms_days = validate::within(
        &format!("{field}.paymentTermsDays"),
        b.payment_terms_days.unwrap_or(30),
        0,
        365,
    )?;
    profile.tax_id = validate::optional_text(&format!("{field}.taxId"), b.tax_id.as_deref(), 50)?;
    let billing_address = b
        .address
        .as_ref()
        .map(|a| address(&format!("{field}.address"), a))
        .transpose()?;
    profile.set_address(billing_address);
    Ok(profile)
}
