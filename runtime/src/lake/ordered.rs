//! A lake table as a DataFusion table that reads itself in key order
//! without sorting the table as a whole.
//!
//! The reconciler reads a lake table `ORDER BY` its key. Sorted as a whole,
//! a table bigger than the session's memory ([`super::SESSION_MEMORY`])
//! spills sorted runs to disk and merges them back: at 10M rows that was a
//! quarter of the reconciler's time (docs/benchmarks.md). But Iceberg keeps
//! the lower and upper bound of every column of every data file, so the
//! files whose key ranges do not overlap need no sort across them.
//! [`clusters`] groups the files whose ranges of the first key column
//! overlap, in key order; the read sorts one group at a time
//! (DataFusion's `SortExec` under the session's memory pool: in memory when
//! the group fits, spilling as before when it does not) and emits the
//! groups one after another. A group of several files is sorted in as
//! many parts as the session has partitions (one per core), each on a task
//! of its own, merged by DataFusion's `SortPreservingMergeExec`: nothing
//! reaches the reconciler before a group is sorted, so its sort should use
//! every core. A table written in key order (what
//! [`super::Lake::compact`] writes) is one file per group; a table whose
//! every file spans the keys (a consumer's appends and updates) is one
//! group, sorted as a whole as before.
//!
//! DataFusion asks for it through sort pushdown: [`LakeScanExec`] answers
//! `try_pushdown_sort` with `Exact` for an ascending order of the table's
//! identifier fields (or a prefix of them), and the optimizer removes the
//! `SortExec` above it. A query that asks for no such order scans the files
//! as they come. The order is also checked where it matters: the
//! reconciler's merge verifies every key against the one before
//! (`reconcile::merge`), so bounds that lied would be caught, not trusted.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{SchemaRef, SortOptions};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::runtime::SpawnedTask;
use datafusion::common::{DFSchema, DataFusionError, Result as DfResult, ScalarValue};
use datafusion::datasource::TableType;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::utils::{conjunction, split_conjunction};
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::{
    EquivalenceProperties, LexOrdering, Partitioning, PhysicalExpr, PhysicalSortExpr,
};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::filter::batch_filter;
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder, MetricsSet};
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::sorts::sort_preserving_merge::SortPreservingMergeExec;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::{PartitionStream, StreamingTableExec};
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, SortOrderPushdownResult,
};
use futures_util::{StreamExt as _, TryStreamExt as _};
use iceberg::scan::FileScanTask;
use iceberg::spec::{Datum, PrimitiveType, Type};
use iceberg::table::Table;

use super::read::{DeleteCache, files_stream, plan_tasks};

/// The most rows of a single data file sorted in memory by a read in key
/// order (a bigger file, or a group of files, is DataFusion's sort).
const IN_MEMORY_SORT_ROWS: u64 = 1 << 22;

/// The batches a single file's sort hands on.
const SORTED_BATCH_ROWS: usize = 8192;

/// One lake table of a [`super::Lake::session`]: its visible rows as of
/// the snapshot it was loaded at, read afresh for every query.
#[derive(Debug)]
pub(super) struct LakeTable {
    table: Table,
    schema: SchemaRef,
    /// The identifier fields, if the table has some and the lake can read
    /// in their order: (field id, column index, name).
    key: Vec<KeyColumn>,
}

#[derive(Debug, Clone)]
struct KeyColumn {
    field_id: i32,
    index: usize,
    name: String,
}

impl LakeTable {
    pub(super) fn new(table: Table, schema: SchemaRef) -> Self {
        let key = sortable_key(&table, &schema);
        Self { table, schema, key }
    }
}

/// `table`'s identifier fields, in order, if every one has a type whose
/// order in Iceberg's bounds is the order DataFusion sorts it in (integers,
/// dates, times and timestamps by value, strings by their UTF-8 bytes);
/// empty otherwise.
fn sortable_key(table: &Table, schema: &SchemaRef) -> Vec<KeyColumn> {
    let current = table.metadata().current_schema();
    let mut key = Vec::new();
    for id in current.identifier_field_ids() {
        let Some(field) = current.field_by_id(id) else {
            return Vec::new();
        };
        let orderable = matches!(
            *field.field_type,
            Type::Primitive(
                PrimitiveType::Int
                    | PrimitiveType::Long
                    | PrimitiveType::Date
                    | PrimitiveType::Time
                    | PrimitiveType::Timestamp
                    | PrimitiveType::Timestamptz
                    | PrimitiveType::TimestampNs
                    | PrimitiveType::TimestamptzNs
                    | PrimitiveType::String
            )
        );
        let Ok(index) = schema.index_of(&field.name) else {
            return Vec::new();
        };
        if !orderable {
            return Vec::new();
        }
        key.push(KeyColumn {
            field_id: id,
            index,
            name: field.name.clone(),
        });
    }
    key
}

#[async_trait::async_trait]
impl TableProvider for LakeTable {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    /// Comparisons, `AND`/`OR`/`NOT`, `IS NULL`, `BETWEEN` and `IN` lists
    /// of columns and literals are applied by the scan itself (so no
    /// `FilterExec` stands between a sort and the scan that answers it),
    /// and a range of the first key column in them skips the files outside
    /// it.
    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DfResult<Vec<TableProviderFilterPushDown>> {
        Ok(filters
            .iter()
            .map(|f| {
                if row_filter(f) {
                    TableProviderFilterPushDown::Exact
                } else {
                    TableProviderFilterPushDown::Unsupported
                }
            })
            .collect())
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        _limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let columns = projection
            .cloned()
            .unwrap_or_else(|| (0..self.schema.fields().len()).collect());
        let (filter, range) = match conjunction(filters.iter().cloned()) {
            None => (None, KeyRange::default()),
            Some(all) => {
                let range = self.key.first().map_or_else(KeyRange::default, |k| {
                    KeyRange::of(&all, &k.name, &self.table, k.field_id)
                });
                let df_schema = DFSchema::try_from(self.schema.as_ref().clone())?;
                (Some(state.create_physical_expr(all, &df_schema)?), range)
            }
        };
        let scan = Arc::new(Scan {
            table: self.table.clone(),
            schema: self.schema.clone(),
            key: self.key.clone(),
            filter,
            range,
        });
        Ok(Arc::new(LakeScanExec::new(scan, columns, false)?))
    }
}

/// Whether the scan applies `filter` itself: only columns, literals and
/// the operators of a row filter (never a function, a subquery or a
/// volatile expression).
fn row_filter(filter: &Expr) -> bool {
    use datafusion::common::tree_node::TreeNode as _;
    !filter
        .exists(|e| {
            Ok(!matches!(
                e,
                Expr::Column(_)
                    | Expr::Literal(..)
                    | Expr::BinaryExpr(_)
                    | Expr::Not(_)
                    | Expr::IsNull(_)
                    | Expr::IsNotNull(_)
                    | Expr::Between(_)
                    | Expr::InList(_)
                    | Expr::Cast(_)
                    | Expr::TryCast(_)
            ))
        })
        .unwrap_or(true)
}

/// What a scan reads: the table as loaded, its key, the filter it applies
/// and the key range that filter allows.
#[derive(Debug)]
struct Scan {
    table: Table,
    /// The table's columns (what its files are read into, and what the
    /// filter is evaluated on).
    schema: SchemaRef,
    key: Vec<KeyColumn>,
    filter: Option<Arc<dyn PhysicalExpr>>,
    range: KeyRange,
}

/// The values of the first key column a filter allows (both ends
/// included: a superset is enough to skip files).
#[derive(Debug, Default, Clone)]
struct KeyRange {
    lower: Option<Datum>,
    upper: Option<Datum>,
}

impl KeyRange {
    /// The range of column `name` (field `field_id` of `table`) that the
    /// comparisons with literals among `filter`'s `AND`ed terms allow.
    fn of(filter: &Expr, name: &str, table: &Table, field_id: i32) -> Self {
        use datafusion::logical_expr::{BinaryExpr, Operator};
        let Some(ty) = table
            .metadata()
            .current_schema()
            .field_by_id(field_id)
            .and_then(|f| f.field_type.as_primitive_type().cloned())
        else {
            return Self::default();
        };
        let mut range = Self::default();
        for term in split_conjunction(filter) {
            let Expr::BinaryExpr(BinaryExpr { left, op, right }) = term else {
                continue;
            };
            let (op, value) = match (left.as_ref(), right.as_ref()) {
                (Expr::Column(c), Expr::Literal(v, _)) if c.name == name => (*op, v),
                (Expr::Literal(v, _), Expr::Column(c)) if c.name == name => {
                    let Some(swapped) = op.swap() else { continue };
                    (swapped, v)
                }
                _ => continue,
            };
            let Some(value) = datum(&ty, value) else {
                continue;
            };
            match op {
                Operator::Eq => {
                    range.raise(value.clone());
                    range.cut(value);
                }
                Operator::Gt | Operator::GtEq => range.raise(value),
                Operator::Lt | Operator::LtEq => range.cut(value),
                _ => {}
            }
        }
        range
    }

    fn raise(&mut self, lower: Datum) {
        if self.lower.as_ref().is_none_or(|l| lower > *l) {
            self.lower = Some(lower);
        }
    }

    fn cut(&mut self, upper: Datum) {
        if self.upper.as_ref().is_none_or(|u| upper < *u) {
            self.upper = Some(upper);
        }
    }

    /// Whether a file whose key column lies in `[lower, upper]` may hold a
    /// row in this range (bounds that do not compare: it may).
    fn meets(&self, lower: &Datum, upper: &Datum) -> bool {
        use std::cmp::Ordering::{Greater, Less};
        !(self
            .lower
            .as_ref()
            .is_some_and(|l| upper.partial_cmp(l) == Some(Less))
            || self
                .upper
                .as_ref()
                .is_some_and(|u| lower.partial_cmp(u) == Some(Greater)))
    }

    fn is_everything(&self) -> bool {
        self.lower.is_none() && self.upper.is_none()
    }
}

impl fmt::Display for KeyRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let end = |d: &Option<Datum>| {
            d.as_ref()
                .map_or_else(|| "..".to_owned(), ToString::to_string)
        };
        write!(f, "[{}, {}]", end(&self.lower), end(&self.upper))
    }
}

/// `value` as a bound of an Iceberg column of type `ty`, where the two
/// compare alike (integers, strings, dates); `None` otherwise.
fn datum(ty: &PrimitiveType, value: &ScalarValue) -> Option<Datum> {
    let int = match value {
        ScalarValue::Int8(v) => v.map(i64::from),
        ScalarValue::Int16(v) => v.map(i64::from),
        ScalarValue::Int32(v) => v.map(i64::from),
        ScalarValue::Int64(v) => *v,
        ScalarValue::UInt8(v) => v.map(i64::from),
        ScalarValue::UInt16(v) => v.map(i64::from),
        ScalarValue::UInt32(v) => v.map(i64::from),
        ScalarValue::UInt64(v) => v.and_then(|v| i64::try_from(v).ok()),
        _ => None,
    };
    match (ty, value) {
        (PrimitiveType::Int, _) => int.and_then(|v| i32::try_from(v).ok()).map(Datum::int),
        (PrimitiveType::Long, _) => int.map(Datum::long),
        (
            PrimitiveType::String,
            ScalarValue::Utf8(Some(s))
            | ScalarValue::LargeUtf8(Some(s))
            | ScalarValue::Utf8View(Some(s)),
        ) => Some(Datum::string(s)),
        (PrimitiveType::Date, ScalarValue::Date32(Some(d))) => Some(Datum::date(*d)),
        _ => None,
    }
}

/// The scan of a [`LakeTable`]: one partition, its files one after
/// another, or (`in_key_order`) in the order of the table's key; the
/// filter applied, files outside its key range skipped.
#[derive(Debug)]
pub(super) struct LakeScanExec {
    scan: Arc<Scan>,
    /// Which of the table's columns the scan returns, in order.
    columns: Vec<usize>,
    in_key_order: bool,
    properties: Arc<PlanProperties>,
    /// `files_read`, `files_skipped` (outside the filter's key range) and
    /// `sorted_groups` (the sorts of an in-key-order read), shown by
    /// `EXPLAIN ANALYZE`.
    metrics: ExecutionPlanMetricsSet,
}

impl LakeScanExec {
    fn new(scan: Arc<Scan>, columns: Vec<usize>, in_key_order: bool) -> DfResult<Self> {
        let projected = Arc::new(scan.schema.project(&columns)?);
        let mut equivalence = EquivalenceProperties::new(projected.clone());
        if in_key_order {
            // The key's columns the scan returns, up to the first it does not.
            let ordering = scan.key.iter().map_while(|k| {
                let at = columns.iter().position(|c| *c == k.index)?;
                Some(ascending(&k.name, at))
            });
            equivalence = EquivalenceProperties::new_with_orderings(projected, [ordering]);
        }
        Ok(Self {
            scan,
            columns,
            in_key_order,
            properties: Arc::new(PlanProperties::new(
                equivalence,
                Partitioning::UnknownPartitioning(1),
                EmissionType::Incremental,
                Boundedness::Bounded,
            )),
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }

    /// Whether rows in key order satisfy `order`: it asks for (a prefix
    /// of) the key's columns, each ascending, NULLs last where a column
    /// can hold them.
    fn satisfies(&self, order: &[PhysicalSortExpr]) -> bool {
        let key = &self.scan.key;
        !order.is_empty()
            && order.len() <= key.len()
            && order.iter().zip(key).all(|(wanted, key)| {
                let Some(column) = wanted.expr.as_any().downcast_ref::<Column>() else {
                    return false;
                };
                let nullable = self.scan.schema.field(key.index).is_nullable();
                self.columns.get(column.index()) == Some(&key.index)
                    && !wanted.options.descending
                    && !(wanted.options.nulls_first && nullable)
            })
    }
}

/// `name` (column `index`) ascending, NULLs last.
fn ascending(name: &str, index: usize) -> PhysicalSortExpr {
    PhysicalSortExpr::new(
        Arc::new(Column::new(name, index)),
        SortOptions {
            descending: false,
            nulls_first: false,
        },
    )
}

impl DisplayAs for LakeScanExec {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let scan = &self.scan;
        write!(f, "LakeScanExec: {}", scan.table.identifier())?;
        if let Some(filter) = &scan.filter {
            write!(f, ", filter {filter}")?;
        }
        if let (false, Some(first)) = (scan.range.is_everything(), scan.key.first()) {
            write!(f, ", files with {} in {}", first.name, scan.range)?;
        }
        if self.in_key_order {
            let key: Vec<&str> = scan.key.iter().map(|k| k.name.as_str()).collect();
            write!(f, ", in key order ({}) by file key ranges", key.join(", "))?;
        }
        Ok(())
    }
}

impl ExecutionPlan for LakeScanExec {
    fn name(&self) -> &'static str {
        "LakeScanExec"
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
    }

    fn with_new_children(
        self: Arc<Self>,
        _: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn try_pushdown_sort(
        &self,
        order: &[PhysicalSortExpr],
    ) -> DfResult<SortOrderPushdownResult<Arc<dyn ExecutionPlan>>> {
        if self.in_key_order || !self.satisfies(order) {
            return Ok(SortOrderPushdownResult::Unsupported);
        }
        Ok(SortOrderPushdownResult::Exact {
            inner: Arc::new(Self::new(self.scan.clone(), self.columns.clone(), true)?),
        })
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        if partition != 0 {
            return Err(DataFusionError::Internal(format!(
                "LakeScanExec has one partition, not {partition}"
            )));
        }
        let scan = self.scan.clone();
        let in_key_order = self.in_key_order;
        let count = |name| MetricBuilder::new(&self.metrics).counter(name, partition);
        let (read, skipped, groups) = (
            count("files_read"),
            count("files_skipped"),
            count("sorted_groups"),
        );
        let whole = futures_util::stream::once(async move {
            let name = scan.table.identifier().to_string();
            let mut tasks = plan_tasks(&scan.table).await.map_err(read_error(&name))?;
            let cache = DeleteCache::default();
            let first = scan
                .key
                .first()
                .filter(|_| in_key_order || !scan.range.is_everything());
            let Some(first) = first else {
                read.add(tasks.len());
                return Ok(Files::new(&scan, tasks, &cache).execute(context).boxed());
            };
            let ranges = file_ranges(&scan.table, first.field_id)
                .await
                .map_err(read_error(&name))?;
            let planned = tasks.len();
            tasks.retain(|t| match ranges.get(&t.data_file_path) {
                Some(Some((lower, upper))) => scan.range.meets(lower, upper),
                _ => true,
            });
            read.add(tasks.len());
            skipped.add(planned - tasks.len());
            if !in_key_order {
                return Ok(Files::new(&scan, tasks, &cache).execute(context).boxed());
            }
            let ordering = LexOrdering::new(scan.key.iter().map(|k| ascending(&k.name, k.index)))
                .ok_or_else(|| DataFusionError::Internal("an empty key".into()))?;
            let clusters = clusters(tasks, &ranges);
            groups.add(clusters.len());
            let key: Vec<usize> = scan.key.iter().map(|k| k.index).collect();
            let sorted = futures_util::stream::iter(clusters)
                .map(move |group| {
                    let files = Files::new(&scan, group, &cache);
                    let schema = scan.schema.clone();
                    // One file of a bounded size: its rows are in memory
                    // already (the reader holds a file's rows), sorted
                    // there. A group of files: DataFusion's sort, which
                    // spills past the session's pool.
                    if let [task] = files.tasks.as_slice()
                        && task.record_count.is_some_and(|n| n <= IN_MEMORY_SORT_ROWS)
                    {
                        let rows = files.execute(context.clone());
                        let key = key.clone();
                        // Read on a task of its own from the moment the
                        // group is planned: the next file is read while
                        // this one is handed on (`buffered` below).
                        let reading = SpawnedTask::spawn(async move {
                            let rows: Vec<RecordBatch> = rows.try_collect().await?;
                            sort_rows(rows, &key, SORTED_BATCH_ROWS)
                        });
                        let sorted = async move {
                            let sorted = reading.join().await.map_err(|e| {
                                DataFusionError::Internal(format!("a file's read stopped: {e}"))
                            })??;
                            Ok::<_, DataFusionError>(futures_util::stream::iter(
                                sorted.into_iter().map(Ok),
                            ))
                        };
                        let stream = futures_util::stream::once(sorted).try_flatten();
                        return Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream))
                            as SendableRecordBatchStream);
                    }
                    // Sorted in parts, one per core, merged as they come:
                    // the sort reads every file before it hands on a row,
                    // and nothing else has work to do until it does.
                    let parts = context.session_config().target_partitions();
                    let parts: Vec<Arc<dyn PartitionStream>> =
                        split_by_size(files.tasks, parts, |t| t.record_count.unwrap_or(0))
                            .into_iter()
                            .map(|tasks| {
                                Arc::new(Files::new(&scan, tasks, &cache))
                                    as Arc<dyn PartitionStream>
                            })
                            .collect();
                    let input = StreamingTableExec::try_new(schema, parts, None, [], false, None)?;
                    let sorted = SortExec::new(ordering.clone(), Arc::new(input))
                        .with_preserve_partitioning(true);
                    SortPreservingMergeExec::new(ordering.clone(), Arc::new(sorted))
                        .execute(0, context.clone())
                })
                // The next group planned (a single file: being read) while
                // this one is handed on.
                .map(futures_util::future::ready)
                .buffered(2)
                .try_flatten()
                .boxed();
            Ok::<_, DataFusionError>(sorted)
        })
        .try_flatten();
        let columns = self.columns.clone();
        let projected = self.properties.eq_properties.schema().clone();
        let out = whole.and_then(move |batch| {
            futures_util::future::ready(batch.project(&columns).map_err(DataFusionError::from))
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(projected, out)))
    }
}

fn read_error(table: &str) -> impl Fn(iceberg::Error) -> DataFusionError + '_ {
    move |e| DataFusionError::External(format!("read {table}: {e}").into())
}

/// The visible rows of `files` in the table's current schema (the reader's
/// batches carry each file's field metadata; the plan expects the table's),
/// those `filter` keeps.
fn rebuilt(
    files: futures_util::stream::BoxStream<'static, iceberg::Result<RecordBatch>>,
    schema: SchemaRef,
    table: String,
    filter: Option<Arc<dyn PhysicalExpr>>,
) -> SendableRecordBatchStream {
    let plan_schema = schema.clone();
    let batches = files.map(move |batch| {
        let batch = batch.map_err(read_error(&table))?;
        let batch = RecordBatch::try_new(schema.clone(), batch.columns().to_vec())?;
        // The rows the filter keeps (NULL drops a row, as in `WHERE`).
        match &filter {
            Some(filter) => batch_filter(&batch, filter),
            None => Ok(batch),
        }
    });
    Box::pin(RecordBatchStreamAdapter::new(plan_schema, batches))
}

/// Some of a table's data files as one DataFusion partition (the input of
/// one group's sort).
#[derive(Debug)]
struct Files {
    table: Table,
    tasks: Vec<FileScanTask>,
    cache: DeleteCache,
    schema: SchemaRef,
    filter: Option<Arc<dyn PhysicalExpr>>,
}

impl Files {
    fn new(scan: &Scan, tasks: Vec<FileScanTask>, cache: &DeleteCache) -> Self {
        Self {
            table: scan.table.clone(),
            tasks,
            cache: cache.clone(),
            schema: scan.schema.clone(),
            filter: scan.filter.clone(),
        }
    }
}

impl PartitionStream for Files {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let files = files_stream(self.table.clone(), self.tasks.clone(), self.cache.clone());
        let table = self.table.identifier().to_string();
        rebuilt(files, self.schema.clone(), table, self.filter.clone())
    }
}

/// `items` in at most `parts` non-empty parts of about the same `size`
/// each (the biggest first, each into the part with the least so far).
fn split_by_size<T>(mut items: Vec<T>, parts: usize, size: impl Fn(&T) -> u64) -> Vec<Vec<T>> {
    items.sort_by_key(|t| std::cmp::Reverse(size(t)));
    let mut out: Vec<(u64, Vec<T>)> = Vec::new();
    for item in items {
        if out.len() < parts.max(1) {
            out.push((size(&item), vec![item]));
        } else if let Some(smallest) = out.iter_mut().min_by_key(|(n, _)| *n) {
            smallest.0 += size(&item);
            smallest.1.push(item);
        }
    }
    out.into_iter().map(|(_, part)| part).collect()
}

/// Each live data file's range of field `field_id` (the first key column),
/// by path, from its manifest entry (`None`: no bounds recorded).
async fn file_ranges(table: &Table, field_id: i32) -> iceberg::Result<FileRanges> {
    Ok(super::compact::live_entries(table, None, |entry| {
        let file = entry.data_file();
        let range = file
            .lower_bounds()
            .get(&field_id)
            .cloned()
            .zip(file.upper_bounds().get(&field_id).cloned());
        (entry.file_path().to_owned(), range)
    })
    .await?
    .into_iter()
    .collect())
}

type FileRanges = std::collections::HashMap<String, Option<(Datum, Datum)>>;

/// `tasks` in groups, in key order: the files in a group have overlapping
/// key ranges (`ranges`), and every key of a group comes before every key
/// of the next. A file without a range overlaps every other: the groups
/// are then one, the whole table.
fn clusters(tasks: Vec<FileScanTask>, ranges: &FileRanges) -> Vec<Vec<FileScanTask>> {
    let mut bounded = Vec::with_capacity(tasks.len());
    for task in &tasks {
        match ranges.get(&task.data_file_path) {
            Some(Some(range)) => bounded.push(range.clone()),
            _ => return vec![tasks],
        }
    }
    group_by_range(tasks.into_iter().zip(bounded).collect())
}

/// [`clusters`] of items with known ranges `(lower, upper)`: sorted by
/// lower bound, a new group starting where an item's lower bound is past
/// every upper bound of the group so far. Bounds that do not compare
/// (different types: not from one field) count as overlapping.
fn group_by_range<T, B: PartialOrd + Clone>(mut items: Vec<(T, (B, B))>) -> Vec<Vec<T>> {
    items.sort_by(|a, b| {
        (a.1)
            .0
            .partial_cmp(&(b.1).0)
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let mut groups: Vec<Vec<T>> = Vec::new();
    let mut reach: Option<B> = None;
    for (item, (lower, upper)) in items {
        let apart = reach
            .as_ref()
            .is_some_and(|reach| lower.partial_cmp(reach) == Some(std::cmp::Ordering::Greater));
        match groups.last_mut() {
            Some(group) if !apart => group.push(item),
            _ => groups.push(vec![item]),
        }
        reach = match reach {
            Some(reach) if upper.partial_cmp(&reach) != Some(std::cmp::Ordering::Greater) => {
                Some(reach)
            }
            _ => Some(upper),
        };
    }
    groups
}

/// `rows` of `table` sorted by its key (when [`LakeTable`] can read in
/// that order), in batches of at most `batch_rows`: what a compaction
/// writes, so that its files' key ranges do not overlap and a read in key
/// order sorts one file at a time. Unchanged when the table has no such key.
pub(super) fn sorted_by_key(
    table: &Table,
    rows: Vec<RecordBatch>,
    batch_rows: usize,
) -> Result<Vec<RecordBatch>, arrow_schema::ArrowError> {
    let Some(first) = rows.first() else {
        return Ok(rows);
    };
    let key: Vec<usize> = sortable_key(table, &first.schema())
        .iter()
        .map(|k| k.index)
        .collect();
    sort_rows(rows, &key, batch_rows)
}

/// `rows` sorted by columns `key` (ascending, NULLs last) in memory, in
/// batches of at most `batch_rows`; rows already in that order (what a
/// compaction writes) are handed back as they came, not copied.
fn sort_rows(
    rows: Vec<RecordBatch>,
    key: &[usize],
    batch_rows: usize,
) -> Result<Vec<RecordBatch>, arrow_schema::ArrowError> {
    use datafusion::arrow::compute::{
        SortColumn, concat_batches, lexsort_to_indices, take_record_batch,
    };
    let Some(first) = rows.first() else {
        return Ok(rows);
    };
    if key.is_empty() || in_order(&rows, key)? {
        return Ok(rows);
    }
    let all = concat_batches(&first.schema(), &rows)?;
    let columns: Vec<SortColumn> = key
        .iter()
        .map(|k| SortColumn {
            values: all.column(*k).clone(),
            options: Some(SortOptions {
                descending: false,
                nulls_first: false,
            }),
        })
        .collect();
    drop(rows);
    let sorted = take_record_batch(&all, &lexsort_to_indices(&columns, None)?)?;
    drop(all);
    let batch_rows = batch_rows.max(1);
    Ok((0..sorted.num_rows())
        .step_by(batch_rows)
        .map(|at| sorted.slice(at, batch_rows.min(sorted.num_rows() - at)))
        .collect())
}

/// Whether `rows` are already in the order of columns `key` (ascending,
/// NULLs last), checked row after row without copying them.
fn in_order(rows: &[RecordBatch], key: &[usize]) -> Result<bool, arrow_schema::ArrowError> {
    use datafusion::arrow::array::{DynComparator, make_comparator};
    use std::cmp::Ordering;
    let options = SortOptions {
        descending: false,
        nulls_first: false,
    };
    // The key's columns of batch `a` against those of batch `b`.
    let comparators = |a: &RecordBatch, b: &RecordBatch| {
        key.iter()
            .map(|k| make_comparator(a.column(*k), b.column(*k), options))
            .collect::<Result<Vec<_>, _>>()
    };
    // Whether row `i` comes after row `j`: the first column that differs.
    let after = |compare: &[DynComparator], i: usize, j: usize| {
        compare.iter().map(|c| c(i, j)).find(|o| o.is_ne()) == Some(Ordering::Greater)
    };
    let mut previous: Option<&RecordBatch> = None;
    for batch in rows.iter().filter(|b| b.num_rows() > 0) {
        // The batch's first row against the last row before it, then each
        // row against the one before it.
        if let Some(last) = previous
            && after(&comparators(last, batch)?, last.num_rows() - 1, 0)
        {
            return Ok(false);
        }
        let within = comparators(batch, batch)?;
        if (1..batch.num_rows()).any(|i| after(&within, i - 1, i)) {
            return Ok(false);
        }
        previous = Some(batch);
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::cast::AsArray as _;
    use arrow_array::types::Int64Type;
    use arrow_array::{Int64Array, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field, Schema};

    use super::{group_by_range, in_order, sort_rows, split_by_size};

    fn batches(rows: &[&[(i64, &str)]]) -> Vec<RecordBatch> {
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int64, false),
            Field::new("b", DataType::Utf8, false),
        ]));
        rows.iter()
            .map(|rows| {
                let a = Int64Array::from_iter_values(rows.iter().map(|r| r.0));
                let b: StringArray = rows.iter().map(|r| Some(r.1)).collect();
                RecordBatch::try_new(schema.clone(), vec![Arc::new(a), Arc::new(b)]).unwrap()
            })
            .collect()
    }

    #[test]
    fn a_file_in_key_order_is_not_sorted_again() {
        let sorted = batches(&[&[(1, "x"), (2, "a")], &[], &[(2, "b"), (3, "a")]]);
        assert!(in_order(&sorted, &[0]).unwrap());
        assert!(in_order(&sorted, &[0, 1]).unwrap());
        // Out of order inside a batch, across batches, on the second column.
        assert!(!in_order(&batches(&[&[(2, "a"), (1, "a")]]), &[0]).unwrap());
        assert!(!in_order(&batches(&[&[(1, "a"), (3, "a")], &[(2, "a")]]), &[0]).unwrap());
        let second = batches(&[&[(1, "b")], &[(1, "a")]]);
        assert!(in_order(&second, &[0]).unwrap());
        assert!(!in_order(&second, &[0, 1]).unwrap());
        // Sorted rows come back as they were (the same buffers); others sorted.
        let again = sort_rows(sorted.clone(), &[0, 1], 2).unwrap();
        assert_eq!(again, sorted);
        let sorted = sort_rows(batches(&[&[(3, "a"), (1, "b")], &[(2, "c")]]), &[0], 2).unwrap();
        let a: Vec<i64> = sorted
            .iter()
            .flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec())
            .collect();
        assert_eq!(a, [1, 2, 3]);
        assert_eq!(sorted.len(), 2, "batches of at most 2 rows");
    }

    #[test]
    fn files_group_where_their_key_ranges_overlap() {
        // Disjoint ranges: one file per group, in key order.
        let groups = group_by_range(vec![("c", (20, 29)), ("a", (1, 9)), ("b", (10, 19))]);
        assert_eq!(groups, [vec!["a"], vec!["b"], vec!["c"]]);
        // A range that touches the one before (the same key in both files)
        // joins it; one that spans others joins them all.
        let groups = group_by_range(vec![
            ("a", (1, 10)),
            ("b", (10, 19)),
            ("c", (30, 39)),
            ("wide", (5, 100)),
            ("d", (101, 200)),
        ]);
        assert_eq!(groups, [vec!["a", "wide", "b", "c"], vec!["d"]]);
        // Nothing to group.
        assert!(group_by_range::<&str, i32>(Vec::new()).is_empty());
    }

    #[test]
    fn a_group_is_sorted_in_parts_of_about_the_same_rows() {
        let split = |sizes: &[u64], parts| split_by_size(sizes.to_vec(), parts, |n| *n);
        assert_eq!(
            split(&[5, 40, 10, 30, 20], 2),
            [vec![40, 10, 5], vec![30, 20]]
        );
        assert_eq!(split(&[7, 3], 4), [vec![7], vec![3]], "never an empty part");
        assert_eq!(split(&[7, 3], 0), [vec![7, 3]], "at least one part");
        assert!(split(&[], 2).is_empty());
    }
}
