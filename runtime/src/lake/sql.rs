//! SQL over the lake with DataFusion.
//!
//! Tables are loaded FRESH for every [`Lake::session`] (iceberg-datafusion
//! providers cache a table's schema and the table list, so a context kept
//! across commits would miss new columns and tables: ICEBERG.md), and
//! streamed file by file through [`super::read::visible_stream`] (equality
//! deletes applied by hash lookup) each time a query scans them, as of the
//! snapshot loaded with the session. The session's memory is bounded
//! ([`SESSION_MEMORY`]): a sort bigger than that (the reconciler's read of a
//! large table in key order) spills to the temporary directory instead of
//! holding the table.

use std::sync::Arc;

use arrow_schema::SchemaRef;
use datafusion::catalog::streaming::StreamingTable;
use datafusion::catalog::{MemorySchemaProvider, SchemaProvider as _};
use datafusion::error::DataFusionError;
use datafusion::execution::TaskContext;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::physical_plan::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;
use datafusion::prelude::{SessionConfig, SessionContext};
use futures_util::TryStreamExt as _;
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
                let provider = StreamingTable::try_new(
                    schema_ref.clone(),
                    vec![Arc::new(Visible {
                        table,
                        schema: schema_ref,
                    })],
                )
                .map_err(query("read", &ident))?;
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

/// One table's visible rows as a DataFusion partition: read afresh, file
/// by file, each time a query scans it.
#[derive(Debug)]
struct Visible {
    table: iceberg::table::Table,
    schema: SchemaRef,
}

impl PartitionStream for Visible {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let schema = self.schema.clone();
        let name = self.table.identifier().to_string();
        let batches = super::read::visible_stream(self.table.clone())
            .map_err(move |e| DataFusionError::External(format!("read {name}: {e}").into()))
            .and_then(move |batch| {
                // The reader's batches carry the file's field metadata: in
                // the table's current schema, as the plan expects.
                let rebuilt =
                    arrow_array::RecordBatch::try_new(schema.clone(), batch.columns().to_vec())
                        .map_err(|e| DataFusionError::ArrowError(Box::new(e), None));
                futures_util::future::ready(rebuilt)
            });
        Box::pin(RecordBatchStreamAdapter::new(self.schema.clone(), batches))
    }
}
