//! SQL over the lake with DataFusion.
//!
//! Tables are read FRESH for every [`Lake::session`] (iceberg-datafusion
//! providers cache a table's schema and the table list, so a context kept
//! across commits would miss new columns and tables: ICEBERG.md), through
//! [`super::read::visible_rows`] (equality deletes applied by hash lookup),
//! into in-memory tables.

use std::sync::Arc;

use datafusion::catalog::{MemorySchemaProvider, SchemaProvider as _};
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;
use iceberg::{Catalog as _, NamespaceIdent};

use super::Lake;

impl Lake {
    /// A DataFusion context where every table of each of `namespaces` is
    /// `<namespace>.<table>`, as of its current snapshot.
    pub async fn session(&self, namespaces: &[&str]) -> Result<SessionContext, String> {
        let ctx = SessionContext::new();
        let catalog = ctx
            .catalog("datafusion")
            .ok_or("DataFusion has no default catalog")?;
        for namespace in namespaces {
            let schema = Arc::new(MemorySchemaProvider::new());
            let ns = NamespaceIdent::new((*namespace).to_owned());
            let tables = self
                .catalog()
                .list_tables(&ns)
                .await
                .map_err(|e| format!("list tables of {namespace}: {e}"))?;
            for ident in tables {
                let table = self
                    .catalog()
                    .load_table(&ident)
                    .await
                    .map_err(|e| format!("load {ident}: {e}"))?;
                let schema_ref = Arc::new(
                    iceberg::arrow::schema_to_arrow_schema(table.metadata().current_schema())
                        .map_err(|e| format!("{ident}: {e}"))?,
                );
                let batches = super::read::visible_rows(&table)
                    .await
                    .map_err(|e| format!("read {ident}: {e}"))?
                    .into_iter()
                    .map(|b| {
                        arrow_array::RecordBatch::try_new(schema_ref.clone(), b.columns().to_vec())
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| format!("read {ident}: {e}"))?;
                let provider = MemTable::try_new(schema_ref, vec![batches])
                    .map_err(|e| format!("read {ident}: {e}"))?;
                schema
                    .register_table(ident.name().to_owned(), Arc::new(provider))
                    .map_err(|e| format!("register {ident}: {e}"))?;
            }
            catalog
                .register_schema(namespace, schema)
                .map_err(|e| format!("register {namespace}: {e}"))?;
        }
        Ok(ctx)
    }
}
