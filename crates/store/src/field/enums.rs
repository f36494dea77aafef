//! Statuses and kinds, stored as the upper-case words the API shows.

use std::fmt;

/// A stored word that is none of the enum's values.
#[derive(Debug, thiserror::Error)]
#[error("unknown {kind} {value:?}")]
pub struct UnknownValue {
    kind: &'static str,
    value: String,
}

macro_rules! stored_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident => $word:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name { $($(#[$vmeta])* $variant),+ }

        impl $name {
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $word),+ }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl super::positional::Column for $name {
            fn read(
                row: &impl super::positional::Columns,
                index: usize,
            ) -> Result<$name, sqlx::Error> {
                super::positional::stored_word(row, index, $name::from_word)
            }
        }

        impl $name {
            /// The value a stored word names.
            fn from_word(word: &str) -> Result<$name, UnknownValue> {
                match word {
                    $($word => Ok($name::$variant),)+
                    _ => Err(UnknownValue { kind: stringify!($name), value: word.to_owned() }),
                }
            }
        }

        impl TryFrom<String> for $name {
            type Error = UnknownValue;
            fn try_from(value: String) -> Result<$name, UnknownValue> {
                $name::from_word(&value)
            }
        }
    };
}

stored_enum!(
    /// What an employee does.
    EmployeeRole {
        Technician => "TECHNICIAN",
        Dispatcher => "DISPATCHER",
        Supervisor => "SUPERVISOR",
        Administrator => "ADMINISTRATOR",
    }
);

stored_enum!(
    /// A job moves SCHEDULED → IN_PROGRESS → COMPLETED.
    JobStatus {
        Scheduled => "SCHEDULED",
        InProgress => "IN_PROGRESS",
        Completed => "COMPLETED",
    }
);

stored_enum!(
    /// COMPLETED and CANCELLED are final.
    WorkOrderStatus {
        Open => "OPEN",
        InProgress => "IN_PROGRESS",
        OnHold => "ON_HOLD",
        Completed => "COMPLETED",
        Cancelled => "CANCELLED",
    }
);

impl WorkOrderStatus {
    pub fn is_final(self) -> bool {
        matches!(
            self,
            WorkOrderStatus::Completed | WorkOrderStatus::Cancelled
        )
    }
}

stored_enum!(
    /// DRAFT → ISSUED → PARTIALLY_PAID → PAID, moved by payments.
    InvoiceStatus {
        Draft => "DRAFT",
        Issued => "ISSUED",
        PartiallyPaid => "PARTIALLY_PAID",
        Paid => "PAID",
    }
);

stored_enum!(
    PaymentMethod {
        Card => "CARD",
        BankTransfer => "BANK_TRANSFER",
        Check => "CHECK",
        Cash => "CASH",
    }
);
