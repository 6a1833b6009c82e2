//! `lossproof bench reconcile`: how fast the reconciler compares a source
//! table with a lake table (rows/s, peak RSS), next to reference comparisons
//! of the SAME rows on the same machine: `reladiff` (PyPI) comparing the
//! source table with a `PostgreSQL` copy of the lake side, and the raw read
//! cost (`COPY … TO STDOUT` of the source + a full DataFusion scan of the
//! lake). Figures, not a test: the machines are shared and noisy
//! (docs/benchmarks.md). Part of the binary, so the figures are those of the
//! build a user runs (`cargo build --release`).
//!
//! The rows are derived from the id alone, by the same rule in SQL
//! ([`source_select`]) and in Rust ([`lake_batch`]), so 99% match exactly.
//! 1% differ (every 100th id, in turn): missing from the lake, a changed
//! `amount`, or an extra lake row whose id the source never had.
//!
//! The lake side is written twice, in two layouts ([`Layout`]): files that
//! each span the keys (a consumer's appends), where reading in key order
//! sorts the table, and files in key order (a compaction's), where it sorts
//! one file at a time. The reconciler is timed on both.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use arrow_array::builder::{
    Decimal128Builder, Int64Builder, StringBuilder, TimestampMicrosecondBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::SchemaRef;
use futures_util::TryStreamExt as _;
use iceberg::spec::{NestedField, PrimitiveType, Schema, Type};
use iceberg::{TableCreation, TableIdent};
use lossproof_runtime::Lake;
use lossproof_runtime::lake::{Commit, write_data_files};
use lossproof_runtime::reconcile::{self, ConsumerLake, DiffKind};

/// An error the benchmark stops on (exit 2).
type BenchResult<T> = crate::CliResult<T>;

/// The source table (and the Iceberg table's name: the reconciler matches by name).
const TABLE: &str = "bench_rows";
/// The `PostgreSQL` copy of the lake side, for reladiff.
const LAKE_COPY: &str = "bench_rows_lake";
/// The Iceberg namespaces of the lake side, one per [`Layout`].
const NAMESPACE: &str = "bench_reconcile";
const SORTED_NAMESPACE: &str = "bench_reconcile_sorted";
/// Rows per Arrow batch, and per Parquet data file (at most).
const BATCH_ROWS: i64 = 131_072;
const FILE_ROWS: i64 = 1_048_576;
/// `at` = this epoch second + 7 s per id, plus `id % 1e6` microseconds.
const EPOCH_SECONDS: i64 = 1_704_067_200;

/// The differences planted in the lake side.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Planted {
    missing: u64,
    wrong: u64,
    extra: u64,
}

impl Planted {
    /// The differences [`fate`] plants in ids `1..=n`, counted one by one.
    fn counted(n: u64) -> Self {
        let mut counted = Self::default();
        for id in 1..=i64::try_from(n).unwrap_or(i64::MAX) {
            match fate(id) {
                Fate::Same => {}
                Fate::Missing => counted.missing += 1,
                Fate::Wrong => counted.wrong += 1,
                Fate::Extra => counted.extra += 1,
            }
        }
        counted
    }

    /// Every 100th id differs: the k-th (id = 100k) is missing if k % 3 = 0,
    /// has a changed amount if k % 3 = 1, and has an extra twin (id + N)
    /// only the lake holds if k % 3 = 2.
    fn of(rows: u64) -> Self {
        let k = rows / 100;
        Self {
            missing: k / 3,
            wrong: k.div_ceil(3),
            extra: (k + 1) / 3,
        }
    }

    fn total(self) -> u64 {
        self.missing + self.wrong + self.extra
    }
}

/// What happens to id `id` in the lake.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fate {
    Same,
    Missing,
    Wrong,
    /// Kept, and an extra row `id + N` added.
    Extra,
}

fn fate(id: i64) -> Fate {
    if id % 100 != 0 {
        return Fate::Same;
    }
    match (id / 100) % 3 {
        0 => Fate::Missing,
        1 => Fate::Wrong,
        _ => Fate::Extra,
    }
}

/// The SQL rows of ids `1..=n` (`id`, `name`, `amount`, `at`), with the
/// lake's differences when `lake` is true. Same values as [`lake_batch`].
fn source_select(n: u64, lake: bool) -> String {
    let columns = |id: &str, bump: &str| {
        format!(
            "{id}, 'name-' || {id}, (({id} * 7919) % 10000000 {bump})::numeric / 100, \
             to_timestamp({EPOCH_SECONDS} + {id} * 7) + ({id} % 1000000) * interval '1 microsecond'"
        )
    };
    if !lake {
        return format!(
            "SELECT {} FROM generate_series(1::bigint, {n}) AS id",
            columns("id", "")
        );
    }
    format!(
        "SELECT {} FROM generate_series(1::bigint, {n}) AS id WHERE id % 300 <> 0 \
         UNION ALL SELECT {} FROM generate_series(200::bigint, {n}, 300) AS id",
        columns("id", "+ CASE WHEN id % 300 = 100 THEN 100 ELSE 0 END"),
        columns(&format!("(id + {n})"), "")
    )
}

/// The Iceberg schema of the lake side.
fn iceberg_schema() -> BenchResult<Schema> {
    Schema::builder()
        .with_fields(vec![
            Arc::new(NestedField::required(
                1,
                "id",
                Type::Primitive(PrimitiveType::Long),
            )),
            Arc::new(NestedField::optional(
                2,
                "name",
                Type::Primitive(PrimitiveType::String),
            )),
            Arc::new(NestedField::optional(
                3,
                "amount",
                Type::Primitive(PrimitiveType::Decimal {
                    precision: 12,
                    scale: 2,
                }),
            )),
            Arc::new(NestedField::optional(
                4,
                "at",
                Type::Primitive(PrimitiveType::Timestamptz),
            )),
        ])
        .with_identifier_field_ids(vec![1])
        .build()
        .map_err(Into::into)
}

/// How the lake side's rows are laid out in its data files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// Every file spans the whole key range: the extra rows (`id + n`) are
    /// written next to their id, as a consumer's appends leave a table
    /// (new versions of old keys in every file). A read in key order sorts
    /// the table as a whole.
    Overlapping,
    /// Files in key order, their key ranges apart: the rows by id, the
    /// extra rows in files of their own after them, as a compaction
    /// (`lossproof compact`) writes a table. A read in key order sorts one
    /// file at a time.
    Disjoint,
}

impl Layout {
    fn namespace(self) -> &'static str {
        match self {
            Self::Overlapping => NAMESPACE,
            Self::Disjoint => SORTED_NAMESPACE,
        }
    }
}

/// Which of the lake rows for some source ids a batch holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    /// Every row, each extra row after its id ([`Layout::Overlapping`]).
    All,
    /// The rows of the source's ids only.
    Ids,
    /// The extra rows only.
    Extras,
}

/// The lake rows (`part` of them) for source ids `ids` of an `n`-row table
/// (missing ids skipped, changed amounts, extra rows at `id + n`).
fn lake_batch(
    schema: &SchemaRef,
    ids: std::ops::Range<i64>,
    n: i64,
    part: Part,
) -> BenchResult<RecordBatch> {
    let mut id_b = Int64Builder::new();
    let mut name_b = StringBuilder::new();
    let mut amount_b = Decimal128Builder::new();
    let mut at_b = TimestampMicrosecondBuilder::new();
    let mut push = |id: i64, bump: i128| {
        id_b.append_value(id);
        name_b.append_value(format!("name-{id}"));
        amount_b.append_value(i128::from((id * 7919) % 10_000_000) + bump);
        at_b.append_value((EPOCH_SECONDS + id * 7) * 1_000_000 + id % 1_000_000);
    };
    let (ids_too, extras_too) = (part != Part::Extras, part != Part::Ids);
    for id in ids {
        match fate(id) {
            Fate::Same if ids_too => push(id, 0),
            Fate::Wrong if ids_too => push(id, 100),
            Fate::Extra => {
                if ids_too {
                    push(id, 0);
                }
                if extras_too {
                    push(id + n, 0);
                }
            }
            _ => {}
        }
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(id_b.finish()),
        Arc::new(name_b.finish()),
        Arc::new(amount_b.finish().with_precision_and_scale(12, 2)?),
        Arc::new(at_b.finish().with_timezone("+00:00")),
    ];
    RecordBatch::try_new(schema.clone(), columns).map_err(Into::into)
}

/// One line of the results table.
#[derive(serde::Serialize, serde::Deserialize)]
struct Measured {
    method: String,
    rows: u64,
    seconds: f64,
    /// Peak resident set of the process that did the work, in MB: each
    /// method runs in a process of its own (PostgreSQL's server memory is
    /// in no line).
    peak_rss_mb: Option<u64>,
    note: String,
    /// It found (read) exactly what it should have.
    exact: bool,
}

/// The methods measured in a process of their own ([`one`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Step {
    /// `reconcile::reconcile` over the bench tables, the lake's files
    /// spanning the keys ([`Layout::Overlapping`]).
    Reconciler,
    /// The same, the lake's files in key order ([`Layout::Disjoint`]).
    ReconcilerDisjoint,
    /// `COPY bench_rows TO STDOUT`.
    Copy,
    /// A DataFusion scan of the lake table.
    Scan,
}

/// The reconciler's rate (rows/s) and peak RSS over a source table and a
/// lake table with 1% differences, next to reladiff and the raw read cost,
/// on the running local stack. True if every method found exactly the
/// planted differences.
pub(crate) fn reconcile(state: &Path, sizes: &[u64], with_reladiff: bool) -> BenchResult<bool> {
    let stack = lossproof_runtime::Stack::open(state)?;
    let ports = stack
        .ports()
        .map_err(|e| format!("{e} --state {}", state.display()))?;
    let reladiff = if with_reladiff {
        match ensure_reladiff() {
            Ok(path) => Some(path),
            Err(e) => {
                eprintln!(
                    "bench: reladiff unavailable ({e}); the raw read cost is the only reference"
                );
                None
            }
        }
    } else {
        None
    };
    let runtime = crate::stack_cli::runtime()?;
    runtime.block_on(async {
        let database = lossproof_runtime::stack::SOURCE_DATABASE;
        let source = lossproof_runtime::postgres::connect(ports.source_postgres, database).await?;
        let lake = Lake::open(stack.state().root()).await?;
        let url = format!(
            "postgresql://postgres@127.0.0.1:{}/{database}",
            ports.source_postgres
        );
        let mut all_ok = true;
        for &n in sizes {
            let result = measure(state, &source, &lake, n, reladiff.as_deref(), &url).await;
            let cleaned = clean_up(&source, &lake).await;
            all_ok &= result?;
            cleaned?;
        }
        Ok(all_ok)
    })
}

/// One size: set up both sides, time every method, print the table. True
/// if every method found exactly the planted differences.
async fn measure(
    state: &Path,
    source: &tokio_postgres::Client,
    lake: &Lake,
    n: u64,
    reladiff: Option<&Path>,
    url: &str,
) -> BenchResult<bool> {
    let planted = Planted::of(n);
    // The closed form must be what the rule plants, id by id (cheap: one
    // pass over the ids), or every figure below would be judged wrongly.
    if planted != Planted::counted(n) {
        return Err(format!(
            "bench bug: Planted::of({n}) = {planted:?}, the rule plants {:?}",
            Planted::counted(n)
        )
        .into());
    }
    eprintln!(
        "bench: {n} source rows, {} planted differences ({planted:?})",
        planted.total()
    );
    clean_up(source, lake).await?;
    let started = Instant::now();
    create_pg_table(source, TABLE, &source_select(n, false)).await?;
    eprintln!(
        "bench: source table in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    for layout in [Layout::Overlapping, Layout::Disjoint] {
        let started = Instant::now();
        let lake_rows = write_lake(lake, n, layout).await?;
        eprintln!(
            "bench: lake table {}.{TABLE} ({lake_rows} rows) in {:.1}s",
            layout.namespace(),
            started.elapsed().as_secs_f64()
        );
    }

    let mut results = Vec::new();
    for step in [
        Step::Reconciler,
        Step::ReconcilerDisjoint,
        Step::Copy,
        Step::Scan,
    ] {
        results.push(in_own_process(state, n, step)?);
    }
    let (copy, scan) = (&results[2], &results[3]);
    results.push(Measured {
        method: "raw read (COPY + scan)".into(),
        rows: n,
        seconds: copy.seconds + scan.seconds,
        peak_rss_mb: copy.peak_rss_mb.max(scan.peak_rss_mb),
        note: String::new(),
        exact: copy.exact && scan.exact,
    });
    if let Some(reladiff) = reladiff {
        let started = Instant::now();
        create_pg_table(source, LAKE_COPY, &source_select(n, true)).await?;
        eprintln!(
            "bench: PostgreSQL copy of the lake side in {:.1}s",
            started.elapsed().as_secs_f64()
        );
        for algorithm in ["hashdiff", "joindiff"] {
            let started = Instant::now();
            let (found, rss, note) = run_reladiff(reladiff, url, algorithm)?;
            let seconds = started.elapsed().as_secs_f64();
            let exact = found == planted;
            if !exact {
                println!(
                    "reladiff {algorithm}: planted {planted:?}, found {found:?}  <-- MISMATCH"
                );
            }
            results.push(Measured {
                method: format!("reladiff --algorithm {algorithm}"),
                rows: n,
                seconds,
                peak_rss_mb: rss,
                note,
                exact,
            });
        }
    }

    println!(
        "{:<30} {:>11} {:>9} {:>11} {:>13}  note",
        "method", "rows", "seconds", "rows/s", "peak RSS MB"
    );
    for r in &results {
        println!(
            "{:<30} {:>11} {:>9.2} {:>11.0} {:>13}  {}{}",
            r.method,
            r.rows,
            r.seconds,
            r.rows as f64 / r.seconds,
            r.peak_rss_mb
                .map_or_else(|| "?".to_owned(), |mb| mb.to_string()),
            r.note,
            if r.exact { "" } else { "  <-- MISMATCH" }
        );
    }
    Ok(results.iter().all(|r| r.exact))
}

/// `CREATE TABLE name` of the bench's columns, filled by `select`.
async fn create_pg_table(
    source: &tokio_postgres::Client,
    name: &str,
    select: &str,
) -> BenchResult<()> {
    let sql = format!(
        "CREATE TABLE {name} (id bigint PRIMARY KEY, name text, amount numeric(12,2), at timestamptz);\n\
         INSERT INTO {name} {select};\n\
         ANALYZE {name};"
    );
    source
        .batch_execute(&sql)
        .await
        .map_err(|e| format!("create {name}: {e}"))?;
    Ok(())
}

/// Run `step` over the bench tables in a fresh `lossproof bench
/// reconcile-step` process (so no method's memory is another's), under
/// [`PEAK_RSS_WRAPPER`]: its line of the table.
fn in_own_process(state: &Path, n: u64, step: Step) -> BenchResult<Measured> {
    let exe = std::env::current_exe().map_err(|e| format!("this executable: {e}"))?;
    let step_name = clap::ValueEnum::to_possible_value(&step)
        .map(|v| v.get_name().to_owned())
        .unwrap_or_default();
    let mut command = Command::new("python3");
    command
        .args(["-c", PEAK_RSS_WRAPPER])
        .arg(exe)
        .args(["bench", "reconcile-step", "--step", &step_name])
        .arg("--rows")
        .arg(n.to_string())
        .arg("--state")
        .arg(state);
    let (stdout, rss) = with_peak_rss(command, &format!("bench reconcile-step {step_name}"))?;
    let mut measured: Measured = serde_json::from_str(stdout.trim()).map_err(|e| {
        format!("bench reconcile-step {step_name} printed no result ({e}): {stdout}")
    })?;
    measured.peak_rss_mb = rss;
    Ok(measured)
}

/// `lossproof bench reconcile-step`: one method over the tables `bench
/// reconcile` set up, its [`Measured`] line printed as JSON.
pub(crate) fn step(state: &Path, n: u64, step: Step) -> BenchResult<bool> {
    let stack = lossproof_runtime::Stack::open(state)?;
    let ports = stack
        .ports()
        .map_err(|e| format!("{e} --state {}", state.display()))?;
    let runtime = crate::stack_cli::runtime()?;
    let root = stack.state().root().to_owned();
    let measured = crate::stack_cli::on_worker(&runtime, async move {
        let database = lossproof_runtime::stack::SOURCE_DATABASE;
        let source = lossproof_runtime::postgres::connect(ports.source_postgres, database).await?;
        let lake = Lake::open(&root).await?;
        match step {
            Step::Reconciler => time_reconciler(&source, &lake, n, Layout::Overlapping).await,
            Step::ReconcilerDisjoint => time_reconciler(&source, &lake, n, Layout::Disjoint).await,
            Step::Copy => {
                let started = Instant::now();
                let (copied, bytes) = copy_out(&source).await?;
                Ok(Measured {
                    method: "COPY source TO STDOUT".into(),
                    rows: copied,
                    seconds: started.elapsed().as_secs_f64(),
                    peak_rss_mb: None,
                    note: format!("{:.0} MB of text", bytes as f64 / 1e6),
                    exact: copied == n,
                })
            }
            Step::Scan => {
                let started = Instant::now();
                let scanned = scan_lake(&lake).await?;
                Ok(Measured {
                    method: "DataFusion scan of the lake".into(),
                    rows: scanned,
                    seconds: started.elapsed().as_secs_f64(),
                    peak_rss_mb: None,
                    note: String::new(),
                    exact: scanned == lake_rows_of(n),
                })
            }
        }
    })?;
    println!("{}", serde_json::to_string(&measured)?);
    Ok(measured.exact)
}

/// Rows of the lake side of an `n`-row source: the missing ones gone, the
/// extra ones added.
fn lake_rows_of(n: u64) -> u64 {
    let planted = Planted::of(n);
    n - planted.missing + planted.extra
}

/// `reconcile::reconcile` over the bench tables: its line of the table
/// (exact if it found exactly the planted differences).
async fn time_reconciler(
    source: &tokio_postgres::Client,
    lake: &Lake,
    n: u64,
    layout: Layout,
) -> BenchResult<Measured> {
    let planted = Planted::of(n);
    let consumer = ConsumerLake {
        changelog: false,
        applied: None,
        consumer: "bench".into(),
        namespace: layout.namespace().into(),
        views: std::collections::HashMap::new(),
    };
    let started = Instant::now();
    let found = reconcile::reconcile(
        source,
        lake,
        &[TABLE],
        &[consumer],
        reconcile::RowTables::Skip,
    )
    .await?;
    let seconds = started.elapsed().as_secs_f64();
    let counts = &found
        .summary
        .first()
        .ok_or("the reconciler returned no summary")?
        .counts;
    let kind = |k: DiffKind| counts.by_kind.get(&k).copied().unwrap_or(0);
    let got = Planted {
        missing: kind(DiffKind::Missing),
        wrong: kind(DiffKind::Wrong),
        extra: kind(DiffKind::Extra),
    };
    let exact = got == planted && counts.wrong == planted.total();
    let how = if found.in_memory.is_empty() {
        "streamed".to_owned()
    } else {
        format!("in memory: {}", found.in_memory[0].2)
    };
    Ok(Measured {
        method: match layout {
            Layout::Overlapping => "lossproof reconcile",
            Layout::Disjoint => "  lake files in key order",
        }
        .into(),
        rows: n,
        seconds,
        peak_rss_mb: None,
        note: format!(
            "found {} ({} missing, {} wrong, {} extra), {how}",
            counts.wrong, got.missing, got.wrong, got.extra
        ),
        exact,
    })
}

/// Create the lake table of `layout` afresh and write the lake side into
/// it in Arrow chunks, one commit. Returns its row count.
async fn write_lake(lake: &Lake, n: u64, layout: Layout) -> BenchResult<u64> {
    let namespace = layout.namespace();
    let ns = lake
        .ensure_namespace(namespace)
        .await
        .map_err(|e| format!("namespace {namespace}: {e}"))?;
    let creation = TableCreation::builder()
        .name(TABLE.to_owned())
        .schema(iceberg_schema()?)
        .build();
    let table = lake
        .catalog()
        .create_table(&ns, creation)
        .await
        .map_err(|e| format!("create {namespace}.{TABLE}: {e}"))?;
    let schema = Arc::new(iceberg::arrow::schema_to_arrow_schema(
        table.metadata().current_schema(),
    )?);
    let mut files = Vec::new();
    let mut rows = 0;
    let n = i64::try_from(n)?;
    let parts: &[Part] = match layout {
        Layout::Overlapping => &[Part::All],
        Layout::Disjoint => &[Part::Ids, Part::Extras],
    };
    for &part in parts {
        // Files of at most FILE_ROWS source ids' rows; the extra rows (one
        // per 300 ids) in files of their own.
        let (ids_per_file, ids_per_batch) = match part {
            Part::Extras => (n, BATCH_ROWS * 300),
            Part::All | Part::Ids => (FILE_ROWS, BATCH_ROWS),
        };
        let mut first = 1;
        while first <= n {
            let file_end = (first + ids_per_file).min(n + 1);
            let mut batches = Vec::new();
            let mut start = first;
            while start < file_end {
                let end = (start + ids_per_batch).min(file_end);
                let batch = lake_batch(&schema, start..end, n, part)?;
                rows += batch.num_rows() as u64;
                batches.push(batch);
                start = end;
            }
            files.extend(
                write_data_files(&table, batches)
                    .await
                    .map_err(|e| format!("write {namespace}.{TABLE}: {e}"))?,
            );
            first = file_end;
        }
    }
    lake.commit(&table, Commit::append(files))
        .await
        .map_err(|e| format!("commit {namespace}.{TABLE}: {e}"))?;
    Ok(rows)
}

/// `COPY bench_rows TO STDOUT`: (rows, bytes).
async fn copy_out(source: &tokio_postgres::Client) -> BenchResult<(u64, usize)> {
    let stream = source
        .copy_out(&format!("COPY {TABLE} TO STDOUT"))
        .await
        .map_err(|e| format!("COPY {TABLE}: {e}"))?;
    futures_util::pin_mut!(stream);
    let (mut rows, mut bytes) = (0u64, 0usize);
    while let Some(chunk) = stream
        .try_next()
        .await
        .map_err(|e| format!("COPY {TABLE}: {e}"))?
    {
        // PostgreSQL sends each row of a COPY TO as one CopyData message
        // (one chunk here): count the chunks that end a line, not bytes.
        bytes += chunk.len();
        rows += u64::from(chunk.last() == Some(&b'\n'));
    }
    Ok((rows, bytes))
}

/// Every row of the lake table through DataFusion (streamed, counted).
async fn scan_lake(lake: &Lake) -> BenchResult<u64> {
    let ctx = lake.session(&[NAMESPACE]).await?;
    let stream = ctx
        .sql(&format!("SELECT * FROM {NAMESPACE}.{TABLE}"))
        .await?
        .execute_stream()
        .await?;
    futures_util::pin_mut!(stream);
    let mut rows = 0u64;
    while let Some(batch) = stream.try_next().await? {
        rows += batch.num_rows() as u64;
    }
    Ok(rows)
}

/// Runs the command in its arguments and, after it, prints the peak RSS
/// (KB) of that child alone to stderr: the figure `wait4` gives, from a
/// Python that only waits (its own memory is not in `RUSAGE_CHILDREN`).
const PEAK_RSS_WRAPPER: &str = "import resource, subprocess, sys\n\
r = subprocess.run(sys.argv[1:])\n\
sys.stderr.write('lossproof-peak-rss-kb %d\\n' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n\
sys.exit(r.returncode)\n";

/// Run `command` (a [`PEAK_RSS_WRAPPER`] around the real one): its stdout
/// and the wrapped command's peak RSS in MB; an error if it failed.
fn with_peak_rss(mut command: Command, what: &str) -> BenchResult<(String, Option<u64>)> {
    let output = command.output().map_err(|e| format!("run {what}: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let rss = stderr
        .lines()
        .find_map(|l| l.strip_prefix("lossproof-peak-rss-kb "))
        .and_then(|kb| kb.trim().parse::<u64>().ok())
        .map(|kb| kb / 1024);
    if !output.status.success() {
        return Err(format!(
            "{what} failed ({}): {}{}",
            output.status,
            stdout.trim(),
            stderr.trim()
        )
        .into());
    }
    Ok((stdout, rss))
}

/// Run `reladiff --stats --json` over the two PostgreSQL tables: the
/// differences it reports (exclusive to the source, changed, exclusive to
/// the lake copy), its peak RSS in MB and a note.
fn run_reladiff(
    reladiff: &Path,
    url: &str,
    algorithm: &str,
) -> BenchResult<(Planted, Option<u64>, String)> {
    let mut command = Command::new(reladiff.with_file_name("python"));
    command
        .args(["-c", PEAK_RSS_WRAPPER])
        .arg(reladiff)
        .args([
            url, TABLE, LAKE_COPY, "-k", "id", "-c", "name", "-c", "amount", "-c", "at",
        ])
        .args(["--algorithm", algorithm, "--stats", "--json"]);
    let (stdout, rss) = with_peak_rss(command, &format!("reladiff {algorithm}"))?;
    let stats: serde_json::Value = serde_json::from_str(stdout.trim())
        .map_err(|e| format!("reladiff {algorithm} printed no JSON ({e}): {stdout}"))?;
    let count = |key: &str| {
        stats
            .get(key)
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0)
    };
    let found = Planted {
        missing: count("exclusive_A"),
        wrong: count("updated"),
        extra: count("exclusive_B"),
    };
    let downloaded = stats
        .pointer("/stats/rows_downloaded")
        .and_then(serde_json::Value::as_u64)
        .map_or_else(String::new, |d| format!(", {d} rows downloaded"));
    Ok((found, rss, format!("found {}{downloaded}", found.total())))
}

/// reladiff in a venv under ~/.cache/lossproof (created and installed from
/// PyPI on first use).
fn ensure_reladiff() -> BenchResult<PathBuf> {
    let home = std::env::var_os("HOME").ok_or("HOME is not set")?;
    let venv = PathBuf::from(home).join(".cache/lossproof/venv-reladiff");
    let bin = venv.join("bin/reladiff");
    if bin.exists() {
        return Ok(bin);
    }
    eprintln!("bench: installing reladiff into {} …", venv.display());
    let status = Command::new("python3")
        .arg("-m")
        .arg("venv")
        .arg(&venv)
        .status()
        .map_err(|e| format!("python3 -m venv: {e}"))?;
    if !status.success() {
        return Err(format!("python3 -m venv {} failed", venv.display()).into());
    }
    let status = Command::new(venv.join("bin/pip"))
        .args(["install", "--quiet", "reladiff[postgresql]"])
        .status()
        .map_err(|e| format!("pip install reladiff: {e}"))?;
    if !status.success() || !bin.exists() {
        return Err("pip install reladiff[postgresql] failed".into());
    }
    Ok(bin)
}

/// Drop the bench tables (source, its PostgreSQL lake copy, the Iceberg
/// table with its files, the namespace).
async fn clean_up(source: &tokio_postgres::Client, lake: &Lake) -> BenchResult<()> {
    source
        .batch_execute(&format!(
            "DROP TABLE IF EXISTS {TABLE}; DROP TABLE IF EXISTS {LAKE_COPY};"
        ))
        .await
        .map_err(|e| format!("drop the bench tables: {e}"))?;
    for namespace in [NAMESPACE, SORTED_NAMESPACE] {
        let ns = iceberg::NamespaceIdent::new(namespace.to_owned());
        if !lake.catalog().namespace_exists(&ns).await? {
            continue;
        }
        let ident = TableIdent::new(ns.clone(), TABLE.to_owned());
        if lake.catalog().table_exists(&ident).await? {
            lake.catalog()
                .purge_table(&ident)
                .await
                .map_err(|e| format!("drop {ident}: {e}"))?;
        }
        lake.catalog()
            .drop_namespace(&ns)
            .await
            .map_err(|e| format!("drop namespace {namespace}: {e}"))?;
        // The (now empty) folders the table's files were in.
        let _ = std::fs::remove_dir_all(lake.warehouse().join(namespace));
    }
    Ok(())
}
