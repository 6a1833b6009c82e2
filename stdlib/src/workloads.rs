//! Workloads: their tables (as created in the source `PostgreSQL`) and
//! parameters. The `orders` workload is the one FINDINGS.md measures.

use lossproof_lang::vocabulary::{ColumnSig, TableSig, WorkloadDefaults, WorkloadSig};

const fn col(
    name: &'static str,
    sql_type: &'static str,
    widens_to: Option<&'static str>,
) -> ColumnSig {
    ColumnSig {
        name,
        sql_type,
        widens_to,
    }
}

const NUMERIC: &str = "numeric(10,2)";
const WIDER_NUMERIC: Option<&str> = Some("numeric(14,2)");
const WIDER_INT: Option<&str> = Some("bigint");

pub const WORKLOADS: &[WorkloadSig] = &[WorkloadSig {
    name: "orders",
    summary: "customers -> orders -> order_items with ON DELETE CASCADE; inserts, updates, deletes and cascading deletes of customers.",
    tables: &[
        TableSig {
            name: "customers",
            primary_key: &["customer_id"],
            columns: &[
                col("customer_id", "bigint", None),
                col("name", "text", None),
                col("email", "text", None),
                col("tier", "integer", WIDER_INT),
                col("created_at", "timestamptz", None),
            ],
        },
        TableSig {
            name: "orders",
            primary_key: &["order_id"],
            columns: &[
                col("order_id", "bigint", None),
                col("customer_id", "bigint", None),
                col("status", "text", None),
                col("amount", NUMERIC, WIDER_NUMERIC),
                col("quantity", "integer", WIDER_INT),
                col("note", "text", None),
                col("created_at", "timestamptz", None),
                col("updated_at", "timestamptz", None),
            ],
        },
        TableSig {
            name: "order_items",
            primary_key: &["order_id", "line_no"],
            columns: &[
                col("order_id", "bigint", None),
                col("line_no", "integer", WIDER_INT),
                col("sku", "text", None),
                col("quantity", "integer", WIDER_INT),
                col("unit_price", NUMERIC, WIDER_NUMERIC),
            ],
        },
    ],
    operations: &["insert", "update", "delete", "cascade"],
    defaults: WorkloadDefaults {
        rate_per_s: 200.0,
        connections: 4,
        customers: 100,
        mix: &[50.0, 30.0, 15.0, 5.0],
    },
}];

/// The workload named `name` (a plan's `workload` line, `orders` by default).
#[must_use]
pub fn find(name: &str) -> Option<&'static WorkloadSig> {
    WORKLOADS.iter().find(|w| w.name == name)
}
