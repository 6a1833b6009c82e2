//! The orders workload's tables, generated from the stdlib vocabulary (the
//! single description of their columns), plus the foreign keys that make
//! deletes cascade and the reconciler's history table and triggers.

use lossproof_lang::vocabulary::WorkloadSig;

/// (table, column, referenced table(column)): every one ON DELETE CASCADE.
const FOREIGN_KEYS: &[(&str, &str, &str)] = &[
    ("orders", "customer_id", "customers(customer_id)"),
    ("order_items", "order_id", "orders(order_id)"),
];

/// `DROP` + `CREATE` statements for every table of `workload`, parents
/// first. `replica_identity_full` sends whole rows in `before` images.
#[must_use]
pub fn ddl(workload: &WorkloadSig, replica_identity_full: bool) -> String {
    use std::fmt::Write as _;
    let mut sql = String::new();
    for table in workload.tables.iter().rev() {
        let _ = writeln!(sql, "DROP TABLE IF EXISTS {} CASCADE;", table.name);
    }
    for table in workload.tables {
        let mut lines: Vec<String> = table
            .columns
            .iter()
            .map(|c| format!("  {} {}", c.name, c.sql_type))
            .collect();
        lines.push(format!("  PRIMARY KEY ({})", table.primary_key.join(", ")));
        for (_, column, target) in FOREIGN_KEYS.iter().filter(|(t, _, _)| *t == table.name) {
            lines.push(format!(
                "  FOREIGN KEY ({column}) REFERENCES {target} ON DELETE CASCADE"
            ));
        }
        let _ = writeln!(
            sql,
            "CREATE TABLE {} (\n{}\n);",
            table.name,
            lines.join(",\n")
        );
        if replica_identity_full {
            let _ = writeln!(sql, "ALTER TABLE {} REPLICA IDENTITY FULL;", table.name);
        }
    }
    // Every version of every row, written by the source itself: how the
    // reconciler tells a stale lake row from a wrong one.
    let names: Vec<&str> = workload.tables.iter().map(|t| t.name).collect();
    sql.push_str(&lossproof_runtime::reconcile::source::history_ddl(&names));
    sql
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ddl_follows_the_vocabulary() {
        let sql = ddl(&crate::workloads::WORKLOADS[0], false);
        assert!(
            sql.contains("CREATE TABLE orders (\n  order_id bigint,"),
            "{sql}"
        );
        assert!(sql.contains("amount numeric(10,2)"));
        assert!(
            sql.contains("FOREIGN KEY (order_id) REFERENCES orders(order_id) ON DELETE CASCADE")
        );
        assert!(sql.find("CREATE TABLE customers") < sql.find("CREATE TABLE orders"));
        assert!(!sql.contains("REPLICA IDENTITY"));
        assert!(
            sql.contains("CREATE TRIGGER lossproof_history AFTER INSERT OR UPDATE ON order_items")
        );
        assert!(
            ddl(&crate::workloads::WORKLOADS[0], true)
                .contains("ALTER TABLE orders REPLICA IDENTITY FULL;")
        );
    }
}
