//! SQL over the lake with DataFusion.
//!
//! Tables are loaded FRESH for every [`Lake::session`] (iceberg-datafusion
//! providers cache a table's schema and the table list, so a context kept
//! across commits would miss new columns and tables: ICEBERG.md), and
//! streamed file by file ([`super::ordered::LakeTable`], equality deletes
//! applied by hash lookup) each time a query scans them, as of the snapshot
//! loaded with the session; a query in key order reads the files in their
//! key ranges' order and sorts only where ranges overlap. The session's
//! memory is bounded ([`SESSION_MEMORY`]): a sort bigger than that (a large
//! table whose files all span the keys) spills to the temporary directory
//! instead of holding the table.

use std::sync::Arc;

use datafusion::catalog::{MemorySchemaProvider, SchemaProvider as _};
use datafusion::error::DataFusionError;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use iceberg::NamespaceIdent;

use super::Lake;
use super::read::ReadError;

impl Lake {
    /// A DataFusion context where every table of each of `namespaces` is
    /// `<namespace>.<table>`, as of its current snapshot.
    pub async fn session(&self, namespaces: &[&str]) -> Result<SessionContext, ReadError> {
        let runtime = RuntimeEnvBuilder::new()
            .with_memory_limit(SESSION_MEMORY, 1.0)
            .build_arc()
            .map_err(|source| ReadError::Query {
                what: "set up",
                table: "DataFusion".into(),
                source,
            })?;
        let ctx = SessionContext::new_with_config_rt(SessionConfig::new(), runtime);
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
                let provider = super::ordered::LakeTable::new(table, schema_ref);
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

/// What one lake session's queries may hold in memory before a sort spills
/// to disk (and an operator that cannot spill fails with DataFusion's
/// "resources exhausted", naming the query).
pub const SESSION_MEMORY: usize = 512 << 20;
