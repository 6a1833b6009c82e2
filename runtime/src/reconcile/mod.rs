//! The reconciler: every source row and every lake row reduced to one
//! canonical string ([`canonical`]), compared by primary key ([`diff`]), into
//! the tables assertions query with DataFusion SQL:
//!
//! | table | columns |
//! |---|---|
//! | `diff` | `table`, `key`, `consumer`, `kind`, `source`, `lake` |
//! | `summary` | `consumer`, `table`, `rows_compared`, `source_rows`, `lake_rows`, `wrong_rows`, one count per kind |
//! | `source_rows` | `table`, `key`, `row` |
//! | `lake_rows` | `consumer`, `table`, `key`, `row` |
//!
//! It describes the SOURCE and knows nothing of how a consumer works: a
//! consumer's lake is whatever a reader of its tables sees. A consumer that
//! stores more (tombstones, ordering columns) declares a per-table view
//! ([`ConsumerLake::views`]) that returns the rows a reader should see; only
//! the source's columns are compared (a column the lake lacks is NULL).

pub mod canonical;
pub mod changelog;
pub mod diff;
mod error;
pub mod gate;
pub mod source;

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;

use crate::Lake;
pub use diff::{Counts, DiffKind, DiffRow};
pub use error::Error;
pub use source::SourceTable;

/// One consumer's lake: its namespace, and optional per-table views.
#[derive(Debug, Clone)]
pub struct ConsumerLake {
    pub consumer: String,
    pub namespace: String,
    /// Table → SQL returning the rows a reader sees (default:
    /// `SELECT * FROM "<namespace>"."<table>"`).
    pub views: HashMap<String, String>,
    /// The tables are change logs ([`changelog`]): each view returns
    /// [`changelog::COLUMNS`] and is scored by each key's latest row.
    pub changelog: bool,
}

/// Counts for one consumer and table.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    pub consumer: String,
    pub table: String,
    #[serde(flatten)]
    pub counts: Counts,
}

/// Everything one reconciliation found.
#[derive(Debug, Clone, Default)]
pub struct Reconciliation {
    pub diff: Vec<DiffRow>,
    pub summary: Vec<Summary>,
    /// (table, key, row)
    pub source_rows: Vec<(String, String, String)>,
    /// (consumer, table, key, row)
    pub lake_rows: Vec<(String, String, String, String)>,
}

/// Reconcile `tables` of the source against every consumer's lake.
pub async fn reconcile(
    source: &tokio_postgres::Client,
    lake: &Lake,
    tables: &[&str],
    consumers: &[ConsumerLake],
) -> Result<Reconciliation, Error> {
    let mut out = Reconciliation::default();
    let namespaces: Vec<&str> = consumers.iter().map(|c| c.namespace.as_str()).collect();
    // Fresh providers for every pass (cached ones miss new columns).
    let ctx = lake.session(&namespaces).await?;
    for table in tables {
        let spec = source::describe(source, table).await?;
        let rows = source::rows(source, &spec).await?;
        let history = source::history(source, &spec).await?;
        for consumer in consumers {
            let sql = consumer.views.get(*table).cloned().unwrap_or_else(|| {
                format!(
                    "SELECT * FROM {}.{}",
                    source::quote_ident(&consumer.namespace),
                    source::quote_ident(table)
                )
            });
            let read = if consumer.changelog {
                changelog::rows(&ctx, &sql, &spec).await
            } else {
                lake_rows(&ctx, &sql, &spec).await
            };
            let lake_rows = read.map_err(|e| Error::LakeTable {
                consumer: consumer.consumer.clone(),
                table: (*table).to_owned(),
                source: Box::new(e),
            })?;
            let (diff, counts) = diff::compare(
                table,
                &consumer.consumer,
                &rows,
                &lake_rows,
                history.as_ref(),
            );
            out.diff.extend(diff);
            out.summary.push(Summary {
                consumer: consumer.consumer.clone(),
                table: (*table).to_owned(),
                counts,
            });
            out.lake_rows.extend(
                lake_rows
                    .into_iter()
                    .map(|(k, r)| (consumer.consumer.clone(), (*table).to_owned(), k, r)),
            );
        }
        out.source_rows
            .extend(rows.into_iter().map(|(k, r)| ((*table).to_owned(), k, r)));
    }
    Ok(out)
}

/// The rows `sql` returns, as canonical (key, row) over the source's columns.
async fn lake_rows(
    ctx: &SessionContext,
    sql: &str,
    table: &SourceTable,
) -> Result<Vec<(String, String)>, Error> {
    // Streamed batch by batch (the order `collect` would give), not collected.
    let stream = ctx.sql(sql).await?.execute_stream().await?;
    futures_util::pin_mut!(stream);
    let names: Vec<&str> = table.columns.iter().map(|(n, _)| n.as_str()).collect();
    let key: Vec<usize> = table
        .key
        .iter()
        .filter_map(|k| names.iter().position(|n| n == k))
        .collect();
    let layout = canonical::Layout::new(names, key);
    // One buffer per column, reused row after row.
    let mut values = vec![String::new(); table.columns.len()];
    let mut out = Vec::new();
    while let Some(batch) = futures_util::TryStreamExt::try_next(&mut stream).await? {
        let renderers = table
            .columns
            .iter()
            .map(|(name, _)| match batch.column_by_name(name) {
                Some(array) => canonical::arrow_renderer(array)
                    .map(Some)
                    .map_err(|source| Error::Column {
                        table: table.name.clone(),
                        column: name.clone(),
                        source,
                    }),
                None => Ok(None),
            })
            .collect::<Result<Vec<_>, _>>()?;
        out.reserve(batch.num_rows());
        for i in 0..batch.num_rows() {
            for (value, render) in values.iter_mut().zip(&renderers) {
                value.clear();
                match render {
                    Some(render) => render(i, value),
                    None => value.push_str(canonical::NULL),
                }
            }
            out.push((layout.key(&values), layout.row(&values)));
        }
    }
    Ok(out)
}

impl Reconciliation {
    /// Diff rows by kind, for one consumer.
    #[must_use]
    pub fn wrong_rows(&self, consumer: &str) -> u64 {
        self.summary
            .iter()
            .filter(|s| s.consumer == consumer)
            .map(|s| s.counts.wrong)
            .sum()
    }

    /// The `diff` table.
    #[must_use]
    pub fn diff_batch(&self) -> RecordBatch {
        let d = &self.diff;
        strings_batch(&[
            ("table", d.iter().map(|r| Some(r.table.as_str())).collect()),
            ("key", d.iter().map(|r| Some(r.key.as_str())).collect()),
            (
                "consumer",
                d.iter().map(|r| Some(r.consumer.as_str())).collect(),
            ),
            ("kind", d.iter().map(|r| Some(r.kind.as_str())).collect()),
            ("source", d.iter().map(|r| r.source.as_deref()).collect()),
            ("lake", d.iter().map(|r| r.lake.as_deref()).collect()),
        ])
    }

    /// The `summary` table.
    ///
    /// # Panics
    /// Never: every column has one value per summary row.
    #[must_use]
    pub fn summary_batch(&self) -> RecordBatch {
        let s = &self.summary;
        let names = strings_batch(&[
            (
                "consumer",
                s.iter().map(|r| Some(r.consumer.as_str())).collect(),
            ),
            ("table", s.iter().map(|r| Some(r.table.as_str())).collect()),
        ]);
        let mut fields: Vec<Field> = names
            .schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        let mut columns: Vec<ArrayRef> = names.columns().to_vec();
        let mut count = |name: &str, f: &dyn Fn(&Counts) -> u64| {
            fields.push(Field::new(name, DataType::UInt64, false));
            columns.push(Arc::new(
                s.iter().map(|r| f(&r.counts)).collect::<UInt64Array>(),
            ));
        };
        count("rows_compared", &|c| c.compared);
        count("source_rows", &|c| c.source_rows);
        count("lake_rows", &|c| c.lake_rows);
        count("wrong_rows", &|c| c.wrong);
        for kind in DiffKind::ALL {
            count(kind.as_str(), &|c| {
                c.by_kind.get(&kind).copied().unwrap_or(0)
            });
        }
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).expect("summary columns agree")
    }

    /// The `source_rows` table.
    #[must_use]
    pub fn source_rows_batch(&self) -> RecordBatch {
        let s = &self.source_rows;
        strings_batch(&[
            ("table", s.iter().map(|r| Some(r.0.as_str())).collect()),
            ("key", s.iter().map(|r| Some(r.1.as_str())).collect()),
            ("row", s.iter().map(|r| Some(r.2.as_str())).collect()),
        ])
    }

    /// The `lake_rows` table.
    #[must_use]
    pub fn lake_rows_batch(&self) -> RecordBatch {
        let l = &self.lake_rows;
        strings_batch(&[
            ("consumer", l.iter().map(|r| Some(r.0.as_str())).collect()),
            ("table", l.iter().map(|r| Some(r.1.as_str())).collect()),
            ("key", l.iter().map(|r| Some(r.2.as_str())).collect()),
            ("row", l.iter().map(|r| Some(r.3.as_str())).collect()),
        ])
    }

    /// A DataFusion context with `diff`, `summary`, `source_rows`,
    /// `lake_rows` and the `extra` tables (e.g. `faults`).
    pub fn session(&self, extra: &[(&str, RecordBatch)]) -> Result<SessionContext, Error> {
        let ctx = SessionContext::new();
        let tables = [
            ("diff", self.diff_batch()),
            ("summary", self.summary_batch()),
            ("source_rows", self.source_rows_batch()),
            ("lake_rows", self.lake_rows_batch()),
        ];
        for (name, batch) in tables
            .iter()
            .map(|(n, b)| (*n, b))
            .chain(extra.iter().map(|(n, b)| (*n, b)))
        {
            let table = MemTable::try_new(batch.schema(), vec![vec![batch.clone()]])?;
            ctx.register_table(name, Arc::new(table))?;
        }
        Ok(ctx)
    }
}

/// A batch of nullable string columns.
fn strings_batch(columns: &[(&str, Vec<Option<&str>>)]) -> RecordBatch {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(n, _)| Field::new(*n, DataType::Utf8, true))
        .collect();
    let arrays: Vec<ArrayRef> = columns
        .iter()
        .map(|(_, v)| canonical::strings(v.iter().copied()))
        .collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).expect("string columns agree")
}

/// What an assertion concluded.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Verdict {
    pub passed: bool,
    /// What the query returned, in words (`true`, `3 rows`, `12.5`).
    pub got: String,
}

/// Run one read-only assertion query over `ctx` and judge it by `expect`.
/// A query that does not plan, or writes, is an `Err` with DataFusion's
/// message (the caller points it at the assertion's span).
pub async fn assert_sql(
    ctx: &SessionContext,
    sql: &str,
    expect: &lossproof_lang::ast::Expectation,
) -> Result<Verdict, Error> {
    use lossproof_lang::ast::{CompareOp, Expectation};
    let options = datafusion::execution::context::SQLOptions::new()
        .with_allow_ddl(false)
        .with_allow_dml(false)
        .with_allow_statements(false);
    let batches = ctx.sql_with_options(sql, options).await?.collect().await?;
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    let single = || -> Result<ArrayRef, Error> {
        let batch = batches.iter().find(|b| b.num_rows() > 0);
        match (rows, batch) {
            (1, Some(b)) if b.num_columns() == 1 => Ok(b.column(0).clone()),
            _ => Err(Error::Judge(format!(
                "expected one row with one column, the query returned {rows} rows"
            ))),
        }
    };
    Ok(match expect {
        Expectation::Empty => Verdict {
            passed: rows == 0,
            got: format!("{rows} rows"),
        },
        Expectation::True => {
            let value = single()?;
            let value = arrow_array::cast::AsArray::as_boolean_opt(value.as_ref())
                .ok_or_else(|| Error::Judge("expected a boolean column".into()))?
                .value(0);
            Verdict {
                passed: value,
                got: value.to_string(),
            }
        }
        Expectation::Compare { op, value } => {
            let column = single()?;
            let got = arrow_cast_f64(&column)?;
            let passed = match op {
                CompareOp::Eq => (got - value).abs() < f64::EPSILON,
                CompareOp::Ne => (got - value).abs() >= f64::EPSILON,
                CompareOp::Lt => got < *value,
                CompareOp::Le => got <= *value,
                CompareOp::Gt => got > *value,
                CompareOp::Ge => got >= *value,
            };
            Verdict {
                passed,
                got: canonical::float(got),
            }
        }
    })
}

fn arrow_cast_f64(column: &ArrayRef) -> Result<f64, Error> {
    let cast = datafusion::arrow::compute::cast(column, &DataType::Float64)
        .map_err(|e| Error::Judge(format!("not a number: {e}")))?;
    let values =
        arrow_array::cast::AsArray::as_primitive::<arrow_array::types::Float64Type>(cast.as_ref());
    if arrow_array::Array::is_null(values, 0) {
        return Err(Error::Judge("the query returned NULL".into()));
    }
    Ok(values.value(0))
}
