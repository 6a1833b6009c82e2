//! `lossproof reconcile --source … --workers URL,…` and `lossproof worker`:
//! one comparison of a team's tables spread over several machines with
//! DataFusion Distributed (the engine built on the DataFusion lossproof
//! already uses; the lossproof binary is both its coordinator and its
//! workers).
//!
//! The coordinator splits the key space into ranges of the first key
//! column ([`source::key_ranges`]: the source's quantiles, one range per
//! worker, the last one also taking NULL keys) and plans a
//! [`BucketDiffExec`]: a leaf with one partition per range. DataFusion
//! Distributed's planner gives its stage one task per worker
//! ([`BucketEstimator`]), ships it there through [`BucketCodec`], and
//! brings the results back over Arrow Flight. Each partition runs the
//! built-in comparison ([`reconcile_cli::compare`]) on its key range only:
//! the source with the range in its `WHERE`, the lake with it in
//! DataFusion's. Ranges cover every key once, so the diff, reassembled in
//! range order, is the built-in one, row for row.
//!
//! What travels: the [`Job`] (the `--source` URL with its password
//! included: run workers on a network you trust) and the ranges. A REST
//! catalog's token does not: each worker reads its own
//! `$LOSSPROOF_LAKE_TOKEN`. Every worker reads the lake files whose key
//! ranges (Iceberg's per-file bounds) meet its range and keeps its range's
//! rows (the lake session's scan skips the others: `lake/ordered.rs`); the
//! source reads only its range.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, StringArray, UInt32Array, new_null_array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::compute::concat;
use datafusion::common::{DataFusionError, Result as DfResult, internal_err};
use datafusion::config::ConfigOptions;
use datafusion::execution::{SendableRecordBatchStream, SessionStateBuilder, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, Partitioning};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use datafusion_distributed::{
    DistributedExec, DistributedExt, DistributedPhysicalOptimizerRule, DistributedTaskContext,
    TaskEstimation, TaskEstimator, Worker, WorkerQueryContext, WorkerResolver,
};
use datafusion_proto::physical_plan::PhysicalExtensionCodec;
use lossproof_runtime::reconcile::source::{self, KeyRange};
use lossproof_runtime::reconcile::{Counts, DiffKind, DiffRow, Reconciliation, Summary};

use crate::CliResult;
use crate::reconcile_cli::{self, Job};

/// Serve as a worker on `listen` until SIGINT or SIGTERM.
pub(crate) fn serve(listen: std::net::SocketAddr) -> CliResult<bool> {
    let runtime = crate::stack_cli::runtime()?;
    runtime.block_on(async {
        let mut interrupt = lossproof_executor::run::interrupt_on_signals()?;
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|e| format!("worker: cannot listen on {listen}: {e}"))?;
        let at = listener.local_addr()?;
        println!("lossproof worker: listening on http://{at}");
        let worker = Worker::from_session_builder(|ctx: WorkerQueryContext| async move {
            Ok(ctx.builder.with_distributed_user_codec(BucketCodec).build())
        });
        tonic::transport::Server::builder()
            .add_service(worker.into_worker_server())
            .serve_with_incoming_shutdown(
                tonic::transport::server::TcpIncoming::from(listener),
                async move {
                    let _ = interrupt.wait_for(Option::is_some).await;
                },
            )
            .await
            .map_err(|e| format!("worker on {at}: {e}"))?;
        eprintln!("lossproof worker on {at}: stopped");
        Ok(true)
    })
}

/// The comparison of `job` spread over `workers` (`http://HOST:PORT`).
pub(crate) async fn reconcile(job: &Job, workers: &[String]) -> CliResult<Reconciliation> {
    let urls = workers
        .iter()
        .map(|w| url::Url::parse(w).map_err(|e| format!("--workers: `{w}` is not a URL: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    let (client, driver) = job.connect().await?;
    let ranges = async {
        let spec = job.describe(&client).await?;
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(
            source::key_ranges(&client, &spec, urls.len()).await?,
        )
    }
    .await;
    driver.abort();
    let ranges = ranges?;
    eprintln!(
        "distributed: {} key ranges of {} over {} workers",
        ranges.len(),
        ranges[0].column,
        urls.len()
    );
    let state = SessionStateBuilder::new()
        .with_default_features()
        .with_distributed_worker_resolver(Workers(urls))
        .with_distributed_user_codec(BucketCodec)
        .with_distributed_task_estimator(BucketEstimator)
        .build();
    let leaf = Arc::new(BucketDiffExec::new(
        Arc::new(job.clone()),
        ranges.clone(),
        1,
    ));
    // A node between the leaf and the final coalesce: the planner puts its
    // network boundary above a stage's top node, never right above a leaf.
    let top = Arc::new(ProjectionExec::try_new(
        leaf.schema()
            .fields()
            .iter()
            .enumerate()
            .map(|(i, f)| {
                (
                    Arc::new(datafusion::physical_expr::expressions::Column::new(
                        f.name(),
                        i,
                    )) as Arc<dyn datafusion::physical_expr::PhysicalExpr>,
                    f.name().clone(),
                )
            })
            .collect::<Vec<_>>(),
        leaf,
    )?);
    let plan = DistributedPhysicalOptimizerRule.optimize(top, state.config().options())?;
    if !plan.as_any().is::<DistributedExec>() {
        // One worker, or one key range: DataFusion Distributed runs a
        // single task where it is planned.
        eprintln!("distributed: one task, so it runs here, not on a worker");
    }
    let batches = datafusion::physical_plan::collect(plan, state.task_ctx())
        .await
        .map_err(|e| {
            format!(
                "distributed: the comparison failed on the workers ({}): {e}",
                workers.join(", ")
            )
        })?;
    assemble(job, ranges.len(), &batches)
}

/// The resolver of a fixed list of workers.
struct Workers(Vec<url::Url>);

impl WorkerResolver for Workers {
    fn get_urls(&self) -> DfResult<Vec<url::Url>> {
        Ok(self.0.clone())
    }
}

/// The columns a bucket's comparison comes back in: the `diff` table's
/// ([`Reconciliation::diff_batch`]) after its `bucket`, for its diff rows
/// (`report` NULL), then one row whose `report` holds its counts (JSON
/// [`Report`]).
fn schema() -> SchemaRef {
    let diff = Reconciliation::default().diff_batch();
    let mut fields = vec![Field::new("bucket", DataType::UInt32, false)];
    fields.extend(diff.schema().fields().iter().map(|f| f.as_ref().clone()));
    fields.push(Field::new("report", DataType::Utf8, true));
    Arc::new(Schema::new(fields))
}

/// What a bucket's comparison counted, besides its diff rows.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Report {
    summary: Vec<Summary>,
    in_memory: Vec<(String, String, String)>,
}

/// One bucket's result as a batch of [`schema`].
fn bucket_batch(bucket: u32, found: &Reconciliation) -> DfResult<RecordBatch> {
    let report = serde_json::to_string(&Report {
        summary: found.summary.clone(),
        in_memory: found.in_memory.clone(),
    })
    .map_err(|e| DataFusionError::External(e.into()))?;
    let rows = found.diff.len();
    let mut columns: Vec<ArrayRef> = vec![Arc::new(UInt32Array::from(vec![bucket; rows + 1]))];
    // The diff table's columns, each with a NULL for the report row.
    let report_row = new_null_array(&DataType::Utf8, 1);
    for column in found.diff_batch().columns() {
        columns.push(concat(&[column.as_ref(), report_row.as_ref()])?);
    }
    columns.push(Arc::new(
        std::iter::repeat_n(None, rows)
            .chain([Some(report.as_str())])
            .collect::<StringArray>(),
    ));
    Ok(RecordBatch::try_new(schema(), columns)?)
}

/// The workers' batches as one [`Reconciliation`]: diff rows in key-range
/// order (the built-in comparison's order), counts summed. Every range
/// must have reported, once.
fn assemble(job: &Job, buckets: usize, batches: &[RecordBatch]) -> CliResult<Reconciliation> {
    let mut diffs: Vec<Vec<DiffRow>> = vec![Vec::new(); buckets];
    let mut reports: Vec<Option<Report>> = (0..buckets).map(|_| None).collect();
    for batch in batches {
        let column = |name: &str| -> CliResult<&ArrayRef> {
            batch
                .column_by_name(name)
                .ok_or_else(|| format!("distributed: a worker sent no `{name}` column").into())
        };
        let strings = |name: &str| -> CliResult<&StringArray> {
            Ok(column(name)?
                .as_any()
                .downcast_ref::<StringArray>()
                .ok_or("distributed: a worker sent an unexpected column")?)
        };
        let bucket = column("bucket")?
            .as_any()
            .downcast_ref::<UInt32Array>()
            .ok_or("distributed: a worker sent an unexpected column")?;
        let [table, key, consumer, kind, src, lake, report] = [
            "table", "key", "consumer", "kind", "source", "lake", "report",
        ]
        .map(strings);
        let (table, key, consumer, kind, src, lake, report) =
            (table?, key?, consumer?, kind?, src?, lake?, report?);
        let text = |a: &StringArray, i| (!a.is_null(i)).then(|| a.value(i).to_owned());
        for i in 0..batch.num_rows() {
            let b = bucket.value(i) as usize;
            if b >= buckets {
                return Err(
                    format!("distributed: a worker answered for range {b} of {buckets}").into(),
                );
            }
            if let Some(json) = text(report, i) {
                let parsed: Report = serde_json::from_str(&json)?;
                if reports[b].replace(parsed).is_some() {
                    return Err(format!("distributed: range {b} was compared twice").into());
                }
                continue;
            }
            let kind_name = kind.value(i);
            let kind = DiffKind::parse(kind_name)
                .ok_or_else(|| format!("distributed: unknown diff kind `{kind_name}`"))?;
            diffs[b].push(DiffRow {
                table: table.value(i).to_owned(),
                key: key.value(i).to_owned(),
                consumer: consumer.value(i).to_owned(),
                kind,
                source: text(src, i),
                lake: text(lake, i),
            });
        }
    }
    let mut out = Reconciliation::default();
    let mut counts: Option<Summary> = None;
    for (b, report) in reports.into_iter().enumerate() {
        let report = report.ok_or_else(|| format!("distributed: range {b} never reported"))?;
        for s in report.summary {
            let total = counts.get_or_insert_with(|| Summary {
                consumer: s.consumer.clone(),
                table: s.table.clone(),
                counts: Counts::default(),
            });
            total.counts += &s.counts;
        }
        for (consumer, table, why) in report.in_memory {
            out.in_memory
                .push((consumer, table, format!("key range {b}: {why}")));
        }
    }
    out.diff = diffs.into_iter().flatten().collect();
    out.summary =
        vec![counts.ok_or_else(|| format!("distributed: nothing compared {}", job.table))?];
    Ok(out)
}

/// The comparison of one key range per partition. Task `t` of `tasks`
/// runs ranges `t * per_task ..` (`per_task` partitions each).
#[derive(Debug)]
struct BucketDiffExec {
    job: Arc<Job>,
    ranges: Vec<KeyRange>,
    tasks: usize,
    properties: Arc<PlanProperties>,
}

impl BucketDiffExec {
    fn new(job: Arc<Job>, ranges: Vec<KeyRange>, tasks: usize) -> Self {
        let tasks = tasks.max(1);
        let per_task = ranges.len().div_ceil(tasks).max(1);
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(schema()),
            Partitioning::UnknownPartitioning(per_task),
            EmissionType::Final,
            Boundedness::Bounded,
        ));
        Self {
            job,
            ranges,
            tasks,
            properties,
        }
    }

    fn per_task(&self) -> usize {
        self.properties.partitioning.partition_count()
    }
}

impl DisplayAs for BucketDiffExec {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "BucketDiffExec: {} on {} key ranges of {} in {} tasks",
            self.job.table,
            self.ranges.len(),
            self.ranges.first().map_or("?", |r| r.column.as_str()),
            self.tasks
        )
    }
}

impl ExecutionPlan for BucketDiffExec {
    fn name(&self) -> &'static str {
        "BucketDiffExec"
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

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let task = DistributedTaskContext::from_ctx(&context).task_index;
        let index = task * self.per_task() + partition;
        let work = self.ranges.get(index).cloned().map(|range| {
            let job = Arc::clone(&self.job);
            eprintln!(
                "task {task}: compares key range {index} of {} ({})",
                job.table,
                describe(&range)
            );
            async move {
                let found = reconcile_cli::compare(&job, Some(range))
                    .await
                    .map_err(DataFusionError::External)?;
                bucket_batch(u32::try_from(index).unwrap_or(u32::MAX), &found)
            }
        });
        let stream = futures_util::stream::iter(work).then(|w| w);
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema(), stream)))
    }
}

use futures_util::StreamExt as _;

/// `[from, to)` as a person reads it.
fn describe(range: &KeyRange) -> String {
    format!(
        "{} in [{}, {}){}",
        range.column,
        range.from.as_deref().unwrap_or("-inf"),
        range.to.as_deref().unwrap_or("+inf"),
        if range.nulls { " or NULL" } else { "" }
    )
}

/// [`BucketDiffExec`] across the network: its job, ranges and task count
/// as JSON.
#[derive(Debug)]
struct BucketCodec;

#[derive(serde::Serialize, serde::Deserialize)]
struct Encoded {
    job: Job,
    ranges: Vec<KeyRange>,
    tasks: usize,
}

impl PhysicalExtensionCodec for BucketCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        _: &TaskContext,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        if !inputs.is_empty() {
            return internal_err!("BucketDiffExec has no inputs, got {}", inputs.len());
        }
        let e: Encoded =
            serde_json::from_slice(buf).map_err(|e| DataFusionError::External(e.into()))?;
        Ok(Arc::new(BucketDiffExec::new(
            Arc::new(e.job),
            e.ranges,
            e.tasks,
        )))
    }

    fn try_encode(&self, node: Arc<dyn ExecutionPlan>, buf: &mut Vec<u8>) -> DfResult<()> {
        let Some(exec) = node.as_any().downcast_ref::<BucketDiffExec>() else {
            return internal_err!("BucketCodec encodes BucketDiffExec, not {}", node.name());
        };
        serde_json::to_writer(
            buf,
            &Encoded {
                job: (*exec.job).clone(),
                ranges: exec.ranges.clone(),
                tasks: exec.tasks,
            },
        )
        .map_err(|e| DataFusionError::External(e.into()))
    }
}

/// One task per key range (the planner caps it at the number of workers);
/// scaled up, each task takes its share of the ranges.
#[derive(Debug)]
struct BucketEstimator;

impl TaskEstimator for BucketEstimator {
    fn task_estimation(
        &self,
        plan: &Arc<dyn ExecutionPlan>,
        _: &ConfigOptions,
    ) -> Option<TaskEstimation> {
        let exec = plan.as_any().downcast_ref::<BucketDiffExec>()?;
        Some(TaskEstimation::desired(exec.ranges.len()))
    }

    fn scale_up_leaf_node(
        &self,
        plan: &Arc<dyn ExecutionPlan>,
        task_count: usize,
        _: &ConfigOptions,
    ) -> Option<Arc<dyn ExecutionPlan>> {
        let exec = plan.as_any().downcast_ref::<BucketDiffExec>()?;
        Some(Arc::new(BucketDiffExec::new(
            Arc::clone(&exec.job),
            exec.ranges.clone(),
            task_count,
        )))
    }
}
