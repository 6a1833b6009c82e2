//! Workloads: their tables (as created in the source `PostgreSQL`) and
//! parameters. The `orders` workload is the one FINDINGS.md measures; its
//! tables are declared in `stdlib/orders.lp` exactly as a scenario declares
//! its own (`table NAME < … >`, `lossproof_lang::tables`).

use std::sync::LazyLock;

use lossproof_lang::ColumnType;
use lossproof_lang::Plan;
use lossproof_lang::ast::{Item, TableDecl};
use lossproof_lang::vocabulary::{ColumnSig, TableSig, WorkloadDefaults, WorkloadSig};

/// `stdlib/orders.lp`, as scenarios include it.
pub const ORDERS_FILE: (&str, &str) = ("stdlib/orders.lp", include_str!("../../orders.lp"));

/// The operation kinds every workload's `mix` distributes over.
pub const OPERATIONS: &[&str] = &["insert", "update", "delete", "cascade"];

static WORKLOADS: LazyLock<Vec<WorkloadSig>> = LazyLock::new(|| {
    vec![WorkloadSig {
        name: "orders".into(),
        summary: "customers -> orders -> order_items with ON DELETE CASCADE; inserts, updates, deletes and cascading deletes of customers.".into(),
        tables: declared_tables(ORDERS_FILE.1),
        operations: OPERATIONS,
        defaults: WorkloadDefaults {
            rate_per_s: 200.0,
            connections: 4,
            customers: 100,
            mix: &[50.0, 30.0, 15.0, 5.0],
        },
    }]
});

/// The freshness probe's table (docs/run.md, "Freshness"): every seed
/// creates it beside the workload's tables, lossproof inserts one row per
/// beat into it (`beat` counts up, `at_ms` is the seed's clock), and every
/// consumer captures and writes it like any table; how new the newest beat
/// in a consumer's lake is, is how fresh that lake is. It is never scored.
pub const PROBE_TABLE: &str = "lossproof_probe";

static PROBE: LazyLock<TableSig> = LazyLock::new(|| {
    // Built here, not declared in a `.lp` file: `lossproof_…` names are
    // lossproof's own, refused in scenarios.
    let bigint = |name: &str, not_null| ColumnSig {
        name: name.to_owned(),
        sql_type: ColumnType::parse("bigint").expect("bigint is a column type"),
        not_null,
        large: false,
    };
    TableSig {
        name: PROBE_TABLE.to_owned(),
        primary_key: vec!["beat".to_owned()],
        columns: vec![bigint("beat", true), bigint("at_ms", false)],
        foreign_keys: Vec::new(),
        replica_identity: None,
    }
});

/// `workload` with the freshness probe's table after its own: what a seed
/// captures and its consumers write.
#[must_use]
pub fn with_probe(mut workload: WorkloadSig) -> WorkloadSig {
    workload.tables.push(PROBE.clone());
    workload
}

/// Every stdlib workload.
#[must_use]
pub fn all() -> &'static [WorkloadSig] {
    &WORKLOADS
}

/// The `orders` workload.
#[must_use]
pub fn orders() -> &'static WorkloadSig {
    &WORKLOADS[0]
}

/// The stdlib workload called `name` (a plan's `workload` line).
#[must_use]
pub fn find(name: &str) -> Option<&'static WorkloadSig> {
    WORKLOADS.iter().find(|w| w.name == name)
}

/// What a plan runs: its own tables when it declares them, else the
/// stdlib workload it names.
///
/// # Errors
/// When the plan names a workload the stdlib does not have (a plan from
/// another version of lossproof).
pub fn of_plan(plan: &Plan) -> Result<WorkloadSig, UnknownWorkload> {
    if !plan.workload.tables.is_empty() {
        return Ok(declared(&plan.workload.name, plan.workload.tables.clone()));
    }
    find(&plan.workload.name)
        .cloned()
        .ok_or_else(|| UnknownWorkload(plan.workload.name.clone()))
}

/// A plan's workload that the stdlib does not have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownWorkload(pub String);

impl std::fmt::Display for UnknownWorkload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "workload {} does not exist", self.0)
    }
}

impl std::error::Error for UnknownWorkload {}

/// A workload of a scenario's own `tables`.
#[must_use]
pub fn declared(name: &str, tables: Vec<TableSig>) -> WorkloadSig {
    WorkloadSig {
        name: name.to_owned(),
        summary: String::new(),
        tables,
        operations: OPERATIONS,
        defaults: orders().defaults,
    }
}

/// The tables a stdlib `.lp` file declares; a mistake in it is a bug of
/// lossproof's (the tests read every stdlib file).
fn declared_tables(text: &str) -> Vec<TableSig> {
    let parsed = lossproof_lang::Parser::parse(text, 0);
    let decls: Vec<&TableDecl> = parsed
        .file
        .items
        .iter()
        .filter_map(|item| match item {
            Item::Table(table) => Some(table),
            _ => None,
        })
        .collect();
    let mut diagnostics = parsed.diagnostics.clone();
    let tables = lossproof_lang::tables::tables(&decls, &mut diagnostics);
    assert!(
        diagnostics.is_empty(),
        "stdlib/orders.lp does not read: {diagnostics:?}"
    );
    tables
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_comes_after_the_workloads_tables() {
        let seed = with_probe(orders().clone());
        assert_eq!(
            seed.table_names(),
            ["customers", "orders", "order_items", PROBE_TABLE]
        );
        let probe = seed.table(PROBE_TABLE).unwrap();
        assert_eq!(probe.primary_key, ["beat"]);
        assert!(probe.foreign_keys.is_empty());
    }

    #[test]
    fn orders_reads_as_before() {
        let orders = orders();
        let names: Vec<&str> = orders.table_names();
        assert_eq!(names, ["customers", "orders", "order_items"]);
        let items = orders.table("order_items").unwrap();
        assert_eq!(items.primary_key, ["order_id", "line_no"]);
        let widens = |table: &str, column: &str| {
            orders
                .table(table)
                .unwrap()
                .column(column)
                .unwrap()
                .sql_type
                .widens_to()
                .map(|t| t.to_string())
        };
        assert_eq!(
            widens("order_items", "unit_price").as_deref(),
            Some("numeric(14,2)")
        );
        assert_eq!(widens("customers", "tier").as_deref(), Some("bigint"));
        assert_eq!(widens("orders", "customer_id"), None);
        assert!(orders.table("orders").unwrap().foreign_keys[0].cascade);
    }
}
