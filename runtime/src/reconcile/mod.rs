//! The reconciler: every source row and every lake row reduced to one
//! canonical string ([`canonical`]), compared by primary key ([`diff`]), into
//! the tables assertions query with DataFusion SQL:
//!
//! `diff`, `summary`, `source_rows` and `lake_rows` (every table assertions
//! see, with its columns, is in [`tables`]).
//!
//! Each table is compared by a streaming merge ([`merge`]): the source read
//! in primary-key order by the server, the lake in key order by DataFusion
//! (files read in the order of their key ranges, only overlapping ones
//! sorted, spilling to disk past [`crate::lake::SESSION_MEMORY`]: see
//! `lake/ordered.rs`), both
//! canonicalised as they arrive and merged in one pass, so memory is the
//! diff's and the reads' buffers, not the table's. `source_rows` and
//! `lake_rows` hold every row: they are filled only when asked
//! ([`RowTables`]).
//!
//! It describes the SOURCE and knows nothing of how a consumer works: a
//! consumer's lake is whatever a reader of its tables sees. A consumer that
//! stores more (tombstones, ordering columns) declares a per-table view
//! ([`ConsumerLake::views`]) that returns the rows a reader should see; only
//! the source's columns are compared (a column the lake lacks is NULL).

pub mod canonical;
pub mod capture;
pub mod changelog;
pub mod diff;
mod error;
pub mod gate;
pub mod live;
pub mod merge;
pub mod source;
pub mod states;
pub mod tables;

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, UInt64Array};
use arrow_schema::DataType;
use datafusion::prelude::SessionContext;

use crate::Lake;
pub use diff::{Counts, DiffKind, DiffRow};
pub use error::Error;
pub use source::SourceTable;
pub use tables::Table;

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
    /// SQL over the lake returning, for every key the consumer wrote, the
    /// source transaction of the newest change it applied: columns
    /// `table`, `key` (the key's values joined by U+001F, as
    /// [`crate::lake::read::row_keys`] renders them) and `tx_id`
    /// (Debezium's `source.txId`). Only a live reconciliation reads it
    /// ([`live`]); `None`: the consumer keeps no such record.
    pub applied: Option<String>,
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
    /// The (consumer, table) pairs compared in memory instead of by the
    /// streaming merge, and why (`change-log tables`, `the lake is not in
    /// key order at …`): the diff is the same, the memory is every row's.
    pub in_memory: Vec<(String, String, String)>,
}

/// Whether a reconciliation keeps every canonical row for the
/// `source_rows` and `lake_rows` tables (memory for every row of both
/// sides) or only the diff and the counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowTables {
    Keep,
    Skip,
}

impl RowTables {
    /// [`RowTables::Keep`] if any of `queries` reads `source_rows` or
    /// `lake_rows` (or does not parse, to be safe).
    #[must_use]
    pub fn for_queries<'q>(queries: impl IntoIterator<Item = &'q str>) -> Self {
        let state = SessionContext::new().state();
        let dialect = state.config().options().sql_parser.dialect;
        let reads_rows = |sql: &str| {
            state
                .sql_to_statement(sql, &dialect)
                .and_then(|statement| state.resolve_table_references(&statement))
                .map_or(true, |tables| {
                    tables
                        .iter()
                        .any(|t| matches!(t.table(), "source_rows" | "lake_rows"))
                })
        };
        if queries.into_iter().any(reads_rows) {
            Self::Keep
        } else {
            Self::Skip
        }
    }
}

/// Rows per message between a side's reader and the merge.
const CHUNK: usize = 4096;
/// Messages in flight per side.
const CHUNKS_IN_FLIGHT: usize = 8;

/// Reconcile `tables` of the source against every consumer's lake.
///
/// Each (table, consumer) is a streaming merge ([`merge`]): the source and
/// the lake are read concurrently, each in key order, canonicalised as they
/// come and compared in one pass; only the diff (and, with
/// [`RowTables::Keep`], the row tables) is held. A lake that cannot be read
/// in the source's key order, and a consumer whose tables are change logs,
/// are compared in memory ([`diff::compare`]); the diff is the same.
pub async fn reconcile(
    source: &tokio_postgres::Client,
    lake: &Lake,
    tables: &[&str],
    consumers: &[ConsumerLake],
    rows: RowTables,
) -> Result<Reconciliation, Error> {
    let mut specs = Vec::new();
    for table in tables {
        specs.push(source::describe(source, table).await?);
    }
    reconcile_tables(source, lake, &specs, consumers, rows).await
}

/// [`reconcile`] of tables already described (and perhaps narrowed: a
/// [`SourceTable::filter`], columns [`SourceTable::ignore`]d).
pub async fn reconcile_tables(
    source: &tokio_postgres::Client,
    lake: &Lake,
    specs: &[SourceTable],
    consumers: &[ConsumerLake],
    rows: RowTables,
) -> Result<Reconciliation, Error> {
    compare_tables(source, lake, specs, consumers, rows, None).await
}

/// [`reconcile_tables`] of a source that is still being written: `source`
/// is in the transaction of `snapshot` ([`live::Snapshot::begin`]) and the
/// lake covers its LSN ([`gate::wait_covered`]). A differing key whose
/// newest applied change the snapshot does not see is `in-flight`, not
/// damage; every consumer needs [`ConsumerLake::applied`].
pub async fn reconcile_live(
    source: &tokio_postgres::Client,
    lake: &Lake,
    specs: &[SourceTable],
    consumers: &[ConsumerLake],
    rows: RowTables,
    snapshot: &live::Snapshot,
) -> Result<Reconciliation, Error> {
    compare_tables(source, lake, specs, consumers, rows, Some(snapshot)).await
}

async fn compare_tables(
    source: &tokio_postgres::Client,
    lake: &Lake,
    specs: &[SourceTable],
    consumers: &[ConsumerLake],
    rows: RowTables,
    live: Option<&live::Snapshot>,
) -> Result<Reconciliation, Error> {
    let mut out = Reconciliation::default();
    let namespaces: Vec<&str> = consumers.iter().map(|c| c.namespace.as_str()).collect();
    // Fresh providers for every pass (cached ones miss new columns).
    let ctx = lake.session(&namespaces).await?;
    for spec in specs {
        let table = spec.name.as_str();
        let mut source_kept = rows == RowTables::Skip;
        for consumer in consumers {
            let mut sql = consumer.views.get(table).cloned().unwrap_or_else(|| {
                format!(
                    "SELECT * FROM {}.{}",
                    source::quote_ident(&consumer.namespace),
                    source::quote_ident(table)
                )
            });
            if spec.narrowed() && !consumer.changelog {
                sql = format!(
                    "SELECT * FROM ({sql}) AS lp_filtered{}",
                    spec.where_clause(source::Dialect::DataFusion, "lp_filtered")?
                );
            }
            let streamed = if consumer.changelog {
                Err("change-log tables".to_owned())
            } else {
                let keep = (!source_kept, rows == RowTables::Keep);
                match streamed(source, &ctx, &sql, spec, &consumer.consumer, keep).await {
                    Ok(found) => Ok(found),
                    // Not in key order, or not readable sorted: in memory
                    // (which reports the lake's error if it is not the sort).
                    Err(merge::Merge::Unordered { side, key, after }) => Err(format!(
                        "the {side} is not in key order: {key} after {after}"
                    )),
                    Err(merge::Merge::Failed(e @ Error::LakeTable { .. })) => {
                        Err(format!("the lake could not be read sorted: {e}"))
                    }
                    Err(merge::Merge::Failed(e)) => return Err(e),
                }
            };
            let mut found = match streamed {
                Ok(found) => found,
                Err(why) => {
                    out.in_memory
                        .push((consumer.consumer.clone(), table.to_owned(), why));
                    in_memory(source, &ctx, &sql, spec, consumer, !source_kept, rows).await?
                }
            };
            if let Some(snapshot) = live {
                live::mark_in_flight(
                    lake,
                    consumer,
                    spec,
                    snapshot,
                    &mut found.diff,
                    &mut found.counts,
                )
                .await?;
            }
            out.diff.extend(found.diff);
            out.summary.push(Summary {
                consumer: consumer.consumer.clone(),
                table: table.to_owned(),
                counts: found.counts,
            });
            if !source_kept {
                out.source_rows.extend(
                    found
                        .source_rows
                        .into_iter()
                        .map(|(k, r)| (table.to_owned(), k, r)),
                );
                source_kept = true;
            }
            if rows == RowTables::Keep {
                out.lake_rows.extend(
                    found
                        .lake_rows
                        .into_iter()
                        .map(|(k, r)| (consumer.consumer.clone(), table.to_owned(), k, r)),
                );
            }
        }
    }
    Ok(out)
}

/// One (table, consumer) comparison.
struct Found {
    diff: Vec<DiffRow>,
    counts: Counts,
    /// (key, row), if kept.
    source_rows: Vec<(String, String)>,
    lake_rows: Vec<(String, String)>,
}

/// The streaming merge of one table with one consumer's lake; `keep` =
/// (keep the source's rows, keep the lake's).
async fn streamed(
    client: &tokio_postgres::Client,
    ctx: &SessionContext,
    sql: &str,
    spec: &SourceTable,
    consumer: &str,
    keep: (bool, bool),
) -> Result<Found, merge::Merge> {
    use tokio::sync::mpsc;
    let order = source::key_order(spec)?;
    let (source_tx, source_rx) = mpsc::channel(CHUNKS_IN_FLIGHT);
    let (lake_tx, lake_rx) = mpsc::channel(CHUNKS_IN_FLIGHT);
    // The lake's reader on a worker of its own, the merge on a blocking
    // thread, the source's reader here: three things at once.
    let sorted = format!(
        "SELECT * FROM ({sql}) AS lp_view ORDER BY {}",
        spec.key
            .iter()
            .map(|k| format!("{} ASC NULLS LAST", source::quote_ident(k)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let lake_reader = tokio::spawn(send_lake_sorted(
        ctx.clone(),
        sorted,
        spec.clone(),
        consumer.to_owned(),
        lake_tx,
    ));
    let (table, who) = (spec.name.clone(), consumer.to_owned());
    let merging = tokio::task::spawn_blocking(move || {
        let (mut source_rows, mut lake_rows) = (Vec::new(), Vec::new());
        let merged = merge::merge(
            &table,
            &who,
            &order,
            chunks(source_rx),
            chunks(lake_rx),
            |side, row| match side {
                merge::Side::Source if keep.0 => {
                    source_rows.push(row.to_pair());
                }
                merge::Side::Lake if keep.1 => {
                    lake_rows.push(row.to_pair());
                }
                _ => {}
            },
        );
        merged.map(|m| (m, source_rows, lake_rows))
    });
    source::send_ordered(client, spec, CHUNK, &source_tx).await;
    drop(source_tx);
    let joined = |e: tokio::task::JoinError| {
        merge::Merge::Failed(Error::Judge(format!("the merge stopped: {e}")))
    };
    let (merged, source_rows, lake_rows) = merging.await.map_err(joined)??;
    lake_reader.await.map_err(joined)?;
    let history = {
        let undecided: std::collections::HashSet<&str> = merge::undecided(&merged).collect();
        if undecided.is_empty() {
            None
        } else {
            source::history_of(client, spec, |k| undecided.contains(k)).await?
        }
    };
    let (diff, counts) = merge::classify(merged, history.as_ref());
    Ok(Found {
        diff,
        counts,
        source_rows,
        lake_rows,
    })
}

/// A channel of chunks as one row after another (blocking: the merge's
/// thread waits for the readers).
fn chunks(
    mut rx: tokio::sync::mpsc::Receiver<Result<Vec<canonical::Keyed>, Error>>,
) -> impl Iterator<Item = Result<canonical::Keyed, Error>> {
    let mut chunk = Vec::new().into_iter();
    std::iter::from_fn(move || {
        loop {
            if let Some(row) = chunk.next() {
                return Some(Ok(row));
            }
            match rx.blocking_recv()? {
                Ok(next) => chunk = next.into_iter(),
                Err(e) => return Some(Err(e)),
            }
        }
    })
}

/// The lake's rows of `sql` (sorted by key) in chunks to `to`; an error is
/// sent as [`Error::LakeTable`].
async fn send_lake_sorted(
    ctx: SessionContext,
    sql: String,
    spec: SourceTable,
    consumer: String,
    to: tokio::sync::mpsc::Sender<Result<Vec<canonical::Keyed>, Error>>,
) {
    let read = async {
        let mut reader = LakeReader::new(&ctx, &sql, &spec).await?;
        while let Some(rows) = reader.next_chunk().await? {
            if to.send(Ok(rows)).await.is_err() {
                break;
            }
        }
        Ok::<_, Error>(())
    };
    if let Err(e) = read.await {
        let _ = to
            .send(Err(Error::LakeTable {
                consumer,
                table: spec.name.clone(),
                source: Box::new(e),
            }))
            .await;
    }
}

/// The in-memory comparison of one table with one consumer's lake: both
/// sides read whole, the lake sorted in memory ([`diff::compare`]).
async fn in_memory(
    client: &tokio_postgres::Client,
    ctx: &SessionContext,
    sql: &str,
    spec: &SourceTable,
    consumer: &ConsumerLake,
    keep_source: bool,
    rows: RowTables,
) -> Result<Found, Error> {
    let source_rows = source::rows(client, spec).await?;
    let history = source::history(client, spec).await?;
    let read = if consumer.changelog {
        changelog::rows(ctx, sql, spec).await
    } else {
        lake_rows(ctx, sql, spec).await
    };
    let lake_rows = read.map_err(|e| Error::LakeTable {
        consumer: consumer.consumer.clone(),
        table: spec.name.clone(),
        source: Box::new(e),
    })?;
    let (diff, counts) = diff::compare(
        &spec.name,
        &consumer.consumer,
        &source_rows,
        &lake_rows,
        history.as_ref(),
    );
    Ok(Found {
        diff,
        counts,
        source_rows: if keep_source {
            source_rows.into_iter().collect()
        } else {
            Vec::new()
        },
        lake_rows: if rows == RowTables::Keep {
            lake_rows
        } else {
            Vec::new()
        },
    })
}

/// The rows `sql` returns, as canonical (key, row) over the source's columns.
async fn lake_rows(
    ctx: &SessionContext,
    sql: &str,
    table: &SourceTable,
) -> Result<Vec<(String, String)>, Error> {
    let mut reader = LakeReader::new(ctx, sql, table).await?;
    let mut out = Vec::new();
    while let Some(rows) = reader.next_chunk().await? {
        out.extend(rows.iter().map(canonical::Keyed::to_pair));
    }
    Ok(out)
}

/// The rows a lake query returns, batch by batch, canonical over the
/// source's columns (a column the lake lacks is NULL).
struct LakeReader<'t> {
    table: &'t SourceTable,
    stream: datafusion::physical_plan::SendableRecordBatchStream,
    layout: canonical::Layout<'t>,
}

impl<'t> LakeReader<'t> {
    async fn new(ctx: &SessionContext, sql: &str, table: &'t SourceTable) -> Result<Self, Error> {
        let stream = ctx.sql(sql).await?.execute_stream().await?;
        let key = table.key_columns()?.iter().map(|(i, _, _)| *i).collect();
        Ok(Self {
            table,
            stream,
            layout: canonical::Layout::new(
                table.columns.iter().map(|(n, _)| n.as_str()).collect(),
                key,
            ),
        })
    }

    /// The next batch's rows, in the order the query returned them.
    async fn next_chunk(&mut self) -> Result<Option<Vec<canonical::Keyed>>, Error> {
        let Some(batch) = futures_util::TryStreamExt::try_next(&mut self.stream).await? else {
            return Ok(None);
        };
        keyed_rows(self.table, &mut self.layout, &batch).map(Some)
    }
}

/// `batch`'s rows (a lake's, by column name), canonical over `table`'s
/// columns in `layout` (a column the batch lacks is NULL).
///
/// # Errors
/// A column whose type the canonical form does not cover.
pub fn keyed_rows(
    table: &SourceTable,
    layout: &mut canonical::Layout<'_>,
    batch: &RecordBatch,
) -> Result<Vec<canonical::Keyed>, Error> {
    let renderers = table
        .columns
        .iter()
        .map(|(name, kind)| match batch.column_by_name(name) {
            Some(array) => canonical::arrow_renderer_for(array, *kind)
                .map(Some)
                .map_err(|source| Error::Column {
                    table: table.name.clone(),
                    column: name.clone(),
                    source,
                }),
            None => Ok(None),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut out = Vec::with_capacity(batch.num_rows());
    for row in 0..batch.num_rows() {
        let Ok(keyed) = layout.write(|i, out| {
            match &renderers[i] {
                Some(render) => render(row, out),
                None => out.push_str(canonical::NULL),
            }
            Ok::<_, std::convert::Infallible>(())
        });
        out.push(keyed);
    }
    Ok(out)
}

impl Reconciliation {
    /// Whether no consumer's lake is damaged (every diff row, if any, is
    /// `in-flight`).
    #[must_use]
    pub fn clean(&self) -> bool {
        self.diff.iter().all(|d| !d.kind.is_damage())
    }

    /// Take the diff rows of the keys capture lost ([`capture::lost`]) out
    /// of the diff and out of the consumers' counts: no consumer could have
    /// had those keys right. The rows taken, in diff order.
    pub fn set_aside(&mut self, lost: &[capture::Lost]) -> Vec<DiffRow> {
        let lost: std::collections::HashSet<(&str, &str)> = lost
            .iter()
            .map(|l| (l.table.as_str(), l.key.as_str()))
            .collect();
        let (taken, kept): (Vec<DiffRow>, Vec<DiffRow>) = std::mem::take(&mut self.diff)
            .into_iter()
            .partition(|d| lost.contains(&(d.table.as_str(), d.key.as_str())));
        self.diff = kept;
        for row in &taken {
            let Some(summary) = self
                .summary
                .iter_mut()
                .find(|s| s.consumer == row.consumer && s.table == row.table)
            else {
                continue;
            };
            summary.counts.take_one(row.kind);
        }
        taken
    }

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
        Table::Diff.batch(strings(&[
            d.iter().map(|r| Some(r.table.as_str())).collect(),
            d.iter().map(|r| Some(r.key.as_str())).collect(),
            d.iter().map(|r| Some(r.consumer.as_str())).collect(),
            d.iter().map(|r| Some(r.kind.as_str())).collect(),
            d.iter().map(|r| r.source.as_deref()).collect(),
            d.iter().map(|r| r.lake.as_deref()).collect(),
        ]))
    }

    /// The `summary` table.
    #[must_use]
    pub fn summary_batch(&self) -> RecordBatch {
        let s = &self.summary;
        let mut columns = strings(&[
            s.iter().map(|r| Some(r.consumer.as_str())).collect(),
            s.iter().map(|r| Some(r.table.as_str())).collect(),
        ]);
        let mut count = |f: &dyn Fn(&Counts) -> u64| {
            columns.push(Arc::new(
                s.iter().map(|r| f(&r.counts)).collect::<UInt64Array>(),
            ));
        };
        count(&|c| c.compared);
        count(&|c| c.source_rows);
        count(&|c| c.lake_rows);
        count(&|c| c.wrong);
        for kind in DiffKind::ALL {
            count(&|c| c.by_kind.get(&kind).copied().unwrap_or(0));
        }
        Table::Summary.batch(columns)
    }

    /// The `source_rows` table.
    #[must_use]
    pub fn source_rows_batch(&self) -> RecordBatch {
        let s = &self.source_rows;
        Table::SourceRows.batch(strings(&[
            s.iter().map(|r| Some(r.0.as_str())).collect(),
            s.iter().map(|r| Some(r.1.as_str())).collect(),
            s.iter().map(|r| Some(r.2.as_str())).collect(),
        ]))
    }

    /// The `lake_rows` table.
    #[must_use]
    pub fn lake_rows_batch(&self) -> RecordBatch {
        let l = &self.lake_rows;
        Table::LakeRows.batch(strings(&[
            l.iter().map(|r| Some(r.0.as_str())).collect(),
            l.iter().map(|r| Some(r.1.as_str())).collect(),
            l.iter().map(|r| Some(r.2.as_str())).collect(),
            l.iter().map(|r| Some(r.3.as_str())).collect(),
        ]))
    }

    /// A DataFusion session over every table assertions see: the
    /// reconciler's four, `others` as given (`faults`, `races`,
    /// `dead_letters`), the rest empty ([`tables::session`]).
    pub fn session(&self, others: Vec<(Table, RecordBatch)>) -> Result<SessionContext, Error> {
        let mut filled = vec![
            (Table::Diff, self.diff_batch()),
            (Table::Summary, self.summary_batch()),
            (Table::SourceRows, self.source_rows_batch()),
            (Table::LakeRows, self.lake_rows_batch()),
        ];
        filled.extend(others);
        tables::session(filled)
    }
}

/// Nullable string columns.
fn strings(columns: &[Vec<Option<&str>>]) -> Vec<ArrayRef> {
    columns
        .iter()
        .map(|v| canonical::strings(v.iter().copied()))
        .collect()
}

/// Plan `sql` over `ctx` as an assertion, without running it (`check`):
/// DataFusion's error when a name does not resolve or the query writes.
pub async fn plan_sql(
    ctx: &SessionContext,
    sql: &str,
) -> Result<(), datafusion::error::DataFusionError> {
    ctx.sql_with_options(sql, read_only()).await.map(|_| ())
}

/// What an assertion may do: read. No DDL, no DML, no statements.
fn read_only() -> datafusion::execution::context::SQLOptions {
    datafusion::execution::context::SQLOptions::new()
        .with_allow_ddl(false)
        .with_allow_dml(false)
        .with_allow_statements(false)
}

/// An assertion's outcome (a seed's is its verdict,
/// `lossproof_executor::run::Verdict`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Outcome {
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
) -> Result<Outcome, Error> {
    use lossproof_lang::ast::{CompareOp, Expectation};
    let batches = ctx
        .sql_with_options(sql, read_only())
        .await?
        .collect()
        .await?;
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
        Expectation::Empty => Outcome {
            passed: rows == 0,
            got: format!("{rows} rows"),
        },
        Expectation::True => {
            let value = single()?;
            let value = arrow_array::cast::AsArray::as_boolean_opt(value.as_ref())
                .ok_or_else(|| Error::Judge("expected a boolean column".into()))?
                .value(0);
            Outcome {
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
            Outcome {
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

#[cfg(test)]
mod tests {
    use super::RowTables;

    #[test]
    fn the_row_tables_are_kept_only_for_an_assertion_that_reads_them() {
        let skip = [
            "SELECT count(*) = 0 FROM diff",
            "SELECT wrong_rows FROM summary",
        ];
        assert_eq!(RowTables::for_queries(skip), RowTables::Skip);
        for reads in [
            "SELECT count(*) > 0 FROM source_rows WHERE \"table\" = 'orders'",
            "SELECT 1 FROM diff d JOIN lake_rows l ON d.key = l.key",
            "SELECT * FROM (SELECT key FROM source_rows) s",
            "this is not SQL",
        ] {
            assert_eq!(
                RowTables::for_queries(skip.into_iter().chain([reads])),
                RowTables::Keep,
                "{reads}"
            );
        }
        assert_eq!(RowTables::for_queries([]), RowTables::Skip);
    }
}
