//! The scalars and value types every area shares: RFC 3339 instants, calendar dates, money.

use async_graphql::{
    InputObject, InputValueError, InputValueResult, Scalar, ScalarType, SimpleObject, Value,
};

use crate::validate;

/// An instant, written in RFC 3339 (`2026-11-23T14:30:00Z`). Input may carry any offset;
/// output is always UTC, to the second.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct DateTime(pub i64);

/// An instant in RFC 3339 (`2026-11-23T14:30:00Z`): any offset in input, UTC to the second in
/// output.
#[Scalar(
    name = "DateTime",
    specified_by_url = "https://www.rfc-editor.org/rfc/rfc3339"
)]
impl ScalarType for DateTime {
    fn parse(value: Value) -> InputValueResult<DateTime> {
        let Value::String(text) = &value else {
            return Err(InputValueError::expected_type(value));
        };
        chrono::DateTime::parse_from_rfc3339(text)
            .map(|t| DateTime(t.timestamp()))
            .map_err(|_| {
                InputValueError::custom(
                    "expected an RFC 3339 date-time such as 2026-11-23T14:30:00Z",
                )
            })
    }

    fn to_value(&self) -> Value {
        match chrono::DateTime::from_timestamp(self.0, 0) {
            Some(t) => Value::String(t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
            None => Value::Null,
        }
    }
}

/// A calendar date, `YYYY-MM-DD` (RFC 3339 `full-date`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Date(pub String);

/// A calendar date, `YYYY-MM-DD` (RFC 3339 `full-date`).
#[Scalar(
    name = "Date",
    specified_by_url = "https://www.rfc-editor.org/rfc/rfc3339#section-5.6"
)]
impl ScalarType for Date {
    fn parse(value: Value) -> InputValueResult<Date> {
        let Value::String(text) = &value else {
            return Err(InputValueError::expected_type(value));
        };
        chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
            .ok()
            .filter(|_| text.len() == 10)
            .map(|d| Date(d.format("%Y-%m-%d").to_string()))
            .ok_or_else(|| InputValueError::custom("expected a date such as 2026-11-23"))
    }

    fn to_value(&self) -> Value {
        Value::String(self.0.clone())
    }
}

/// An amount of money: integer cents (the currency's minor unit) and an ISO 4217 currency.
#[derive(Clone, Debug, PartialEq, Eq, SimpleObject)]
pub struct Money {
    /// The amount in the currency's minor unit (cents): 1999 is 19.99.
    pub amount_cents: i64,
    /// ISO 4217 code, such as USD or EUR.
    pub currency: String,
}

impl Money {
    pub fn new(amount_cents: i64, currency: &str) -> Money {
        Money {
            amount_cents,
            currency: currency.to_owned(),
        }
    }
}

/// An amount of money given by a client.
#[derive(Clone, Debug, InputObject)]
pub struct MoneyInput {
    /// Cents (minor unit); never negative.
    pub amount_cents: i64,
    /// ISO 4217 code, three capital letters.
    pub currency: String,
}

impl MoneyInput {
    /// Checks the amount and currency; `field` names the input in the error.
    pub fn checked(&self, field: &str) -> validate::Checked<(i64, String)> {
        validate::amount(field, self.amount_cents)?;
        let currency = validate::currency(&format!("{field}.currency"), &self.currency)?;
        Ok((self.amount_cents, currency))
    }
}
