//! One intended operation of the orders workload.

use std::fmt;

/// Money in cents: exact, and written as `numeric(10,2)` text.
pub type Cents = i64;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewItem {
    pub line_no: i32,
    pub sku: String,
    pub quantity: i32,
    pub unit_price: Cents,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewOrder {
    pub order_id: i64,
    pub status: &'static str,
    pub amount: Cents,
    pub quantity: i32,
    pub note: Option<String>,
    pub items: Vec<NewItem>,
}

/// What the workload means to do; times are milliseconds after the
/// workload's epoch (2026-01-01T00:00:00Z), so values never depend on the
/// wall clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// A customer with their first orders, in one transaction.
    InsertCustomer {
        customer_id: i64,
        name: String,
        email: String,
        tier: i32,
        at_ms: i64,
        orders: Vec<NewOrder>,
    },
    /// A new order (with items) for an existing customer, in one transaction.
    InsertOrder {
        customer_id: i64,
        order: NewOrder,
        at_ms: i64,
    },
    UpdateOrder {
        order_id: i64,
        status: &'static str,
        amount: Cents,
        quantity: i32,
        note: Option<String>,
        at_ms: i64,
    },
    /// Delete an order; its items go by ON DELETE CASCADE.
    DeleteOrder { order_id: i64 },
    /// Delete a customer; orders and items go by ON DELETE CASCADE.
    DeleteCustomer { customer_id: i64 },
}

impl Op {
    /// The kind, as the workload's `mix` names it.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Op::InsertCustomer { .. } | Op::InsertOrder { .. } => "insert",
            Op::UpdateOrder { .. } => "update",
            Op::DeleteOrder { .. } => "delete",
            Op::DeleteCustomer { .. } => "cascade",
        }
    }
}

/// Canonical text of an operation: what the digest is computed over.
impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::InsertCustomer {
                customer_id,
                name,
                email,
                tier,
                at_ms,
                orders,
            } => {
                write!(
                    f,
                    "insert customer {customer_id} {name:?} {email:?} tier={tier} at={at_ms}"
                )?;
                for order in orders {
                    write!(f, " [{}]", OrderText(order))?;
                }
                Ok(())
            }
            Op::InsertOrder {
                customer_id,
                order,
                at_ms,
            } => {
                write!(
                    f,
                    "insert order for {customer_id} at={at_ms} [{}]",
                    OrderText(order)
                )
            }
            Op::UpdateOrder {
                order_id,
                status,
                amount,
                quantity,
                note,
                at_ms,
            } => {
                write!(
                    f,
                    "update order {order_id} {status} {amount} {quantity} {note:?} at={at_ms}"
                )
            }
            Op::DeleteOrder { order_id } => write!(f, "delete order {order_id}"),
            Op::DeleteCustomer { customer_id } => write!(f, "delete customer {customer_id}"),
        }
    }
}

struct OrderText<'a>(&'a NewOrder);

impl fmt::Display for OrderText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = self.0;
        write!(
            f,
            "{} {} {} {} {:?}",
            o.order_id, o.status, o.amount, o.quantity, o.note
        )?;
        for i in &o.items {
            write!(
                f,
                " ({} {} {} {})",
                i.line_no, i.sku, i.quantity, i.unit_price
            )?;
        }
        Ok(())
    }
}

/// `1234` cents -> `12.34`.
#[must_use]
pub fn money(cents: Cents) -> String {
    format!(
        "{}{}.{:02}",
        if cents < 0 { "-" } else { "" },
        (cents / 100).abs(),
        (cents % 100).abs()
    )
}
