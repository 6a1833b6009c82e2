//! A workload's tables as DDL, generated from their declarations (the
//! single description of their columns, keys and foreign keys), plus the
//! reconciler's history table and triggers.

use lossproof_lang::vocabulary::{ReplicaIdentity, WorkloadSig};

/// `DROP` + `CREATE` statements for every table of `workload`, parents
/// first. A table's own `replica identity` wins over `replica_identity_full`
/// (the scenario's `set replica_identity`); FULL sends whole rows in
/// `before` images and resolves unchanged TOAST values.
#[must_use]
pub fn ddl(workload: &WorkloadSig, replica_identity_full: bool) -> String {
    use std::fmt::Write as _;
    let mut sql = String::new();
    for table in workload.tables.iter().rev() {
        let _ = writeln!(sql, "DROP TABLE IF EXISTS {} CASCADE;", table.name);
    }
    for table in &workload.tables {
        let mut lines: Vec<String> = table
            .columns
            .iter()
            .map(|c| {
                let null = if c.not_null { " NOT NULL" } else { "" };
                format!("  {} {}{null}", c.name, c.sql_type)
            })
            .collect();
        lines.push(format!("  PRIMARY KEY ({})", table.primary_key.join(", ")));
        for fk in &table.foreign_keys {
            let parent = workload
                .table(&fk.references)
                .map_or_else(String::new, |p| p.primary_key.join(", "));
            let cascade = if fk.cascade { " ON DELETE CASCADE" } else { "" };
            lines.push(format!(
                "  FOREIGN KEY ({}) REFERENCES {}({parent}){cascade}",
                fk.columns.join(", "),
                fk.references
            ));
        }
        let _ = writeln!(
            sql,
            "CREATE TABLE {} (\n{}\n);",
            table.name,
            lines.join(",\n")
        );
        // A foreign key's columns indexed unless the primary key starts
        // with them: without it every delete of a parent row (a cascade)
        // scans the child table, and the workload slows with the table's
        // size (PostgreSQL does not index referencing columns by itself).
        for fk in &table.foreign_keys {
            if !table.primary_key.starts_with(&fk.columns) {
                let _ = writeln!(
                    sql,
                    "CREATE INDEX {}_{}_fk ON {} ({});",
                    table.name,
                    fk.columns.join("_"),
                    table.name,
                    fk.columns.join(", ")
                );
            }
        }
        let full = match table.replica_identity {
            Some(identity) => identity == ReplicaIdentity::Full,
            None => replica_identity_full,
        };
        if full {
            let _ = writeln!(sql, "ALTER TABLE {} REPLICA IDENTITY FULL;", table.name);
        }
    }
    // Every version of every row, written by the source itself: how the
    // reconciler tells a stale lake row from a wrong one.
    let names: Vec<&str> = workload.table_names();
    sql.push_str(&lossproof_runtime::reconcile::source::history_ddl(&names));
    sql
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ddl_follows_the_vocabulary() {
        let sql = ddl(lossproof_vocabulary::workloads::orders(), false);
        assert!(
            sql.contains("CREATE TABLE orders (\n  order_id bigint,"),
            "{sql}"
        );
        assert!(sql.contains("amount numeric(10,2)"));
        assert!(
            sql.contains("FOREIGN KEY (order_id) REFERENCES orders(order_id) ON DELETE CASCADE")
        );
        assert!(sql.find("CREATE TABLE customers") < sql.find("CREATE TABLE orders"));
        // orders.customer_id is indexed; order_items' key starts with order_id.
        assert!(sql.contains("CREATE INDEX orders_customer_id_fk ON orders (customer_id);"));
        assert!(!sql.contains("ON order_items (order_id)"), "{sql}");
        assert!(!sql.contains("REPLICA IDENTITY"));
        assert!(sql.contains(
            "CREATE TRIGGER lossproof_history AFTER INSERT OR UPDATE OR DELETE ON order_items"
        ));
        assert!(
            ddl(lossproof_vocabulary::workloads::orders(), true)
                .contains("ALTER TABLE orders REPLICA IDENTITY FULL;")
        );
    }
}
