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
use datafusion::error::DataFusionError;
use datafusion::prelude::SessionContext;
use iceberg::NamespaceIdent;

use super::Lake;
use super::read::ReadError;

impl Lake {
    /// A DataFusion context where every table of each of `namespaces` is
    /// `<namespace>.<table>`, as of its current snapshot.
    pub async fn session(&self, namespaces: &[&str]) -> Result<SessionContext, ReadError> {
        let ctx = SessionContext::new();
        let catalog = ctx.catalog("datafusion").ok_or_else(|| ReadError::Query {
            what: "find the default catalog of",
            table: "DataFusion".into(),
            source: DataFusionError::Internal("no default catalog".into()),
        })?;
        for namespace in namespaces {
            let schema = Arc::new(MemorySchemaProvider::new());
            let ns = NamespaceIdent::new((*namespace).to_owned());
            let iceberg = |what, table: &dyn std::fmt::Display| {
                let table = table.to_string();
                move |source| ReadError::Iceberg {
                    what,
                    table,
                    source,
                }
            };
            let query = |what, table: &dyn std::fmt::Display| {
                let table = table.to_string();
                move |source| ReadError::Query {
                    what,
                    table,
                    source,
                }
            };
            let tables = self
                .catalog()
                .list_tables(&ns)
                .await
                .map_err(iceberg("list the tables of", namespace))?;
            for ident in tables {
                let table = self
                    .catalog()
                    .load_table(&ident)
                    .await
                    .map_err(iceberg("load", &ident))?;
                let schema_ref = Arc::new(
                    iceberg::arrow::schema_to_arrow_schema(table.metadata().current_schema())
                        .map_err(iceberg("convert the schema of", &ident))?,
                );
                let batches = super::read::visible_rows(&table)
                    .await
                    .map_err(iceberg("read", &ident))?
                    .into_iter()
                    .map(|b| {
                        arrow_array::RecordBatch::try_new(schema_ref.clone(), b.columns().to_vec())
                            .map_err(|e| DataFusionError::ArrowError(Box::new(e), None))
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(query("read", &ident))?;
                let provider =
                    MemTable::try_new(schema_ref, vec![batches]).map_err(query("read", &ident))?;
                schema
                    .register_table(ident.name().to_owned(), Arc::new(provider))
                    .map_err(query("register", &ident))?;
            }
            catalog
                .register_schema(namespace, schema)
                .map_err(query("register", namespace))?;
        }
        Ok(ctx)
    }
}
