//! `cargo bench --profile dev --bench reconcile`: how fast the reconciler compares a source
//! table with a lake table (rows/s), next to reference comparisons of the
//! SAME rows on the same machine: `reladiff` (PyPI) comparing the source
//! table with a `PostgreSQL` copy of the lake side, and the raw read cost
//! (`COPY … TO STDOUT` of the source + a full DataFusion scan of the lake).
//! Figures, not a test: the machines are shared and noisy (docs/benchmarks.md).
//!
//! The rows are derived from the id alone, by the same rule in SQL
//! ([`source_select`]) and in Rust ([`lake_batch`]), so 99% match exactly.
//! 1% differ (every 100th id, in turn): missing from the lake, a changed
//! `amount`, or an extra lake row whose id the source never had.

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

use common::BenchResult;

mod common;

/// The reconciler's rate (rows/s) over a source table and a lake table with
/// 1% differences, next to reladiff and the raw read cost, on the running
/// local stack.
#[derive(clap::Parser)]
struct Args {
    #[arg(long, default_value = ".lossproof")]
    state: PathBuf,
    /// Source rows (repeat for several sizes).
    #[arg(long = "rows", default_values_t = [1_000_000])]
    rows: Vec<u64>,
    /// Skip the reladiff reference (PyPI, installed into ~/.cache/lossproof/venv-reladiff).
    #[arg(long)]
    no_reladiff: bool,
}

fn main() -> std::process::ExitCode {
    let args = <Args as clap::Parser>::parse_from(common::args());
    common::exit(reconcile(&args.state, &args.rows, !args.no_reladiff))
}

/// The source table (and the Iceberg table's name: the reconciler matches by name).
const TABLE: &str = "bench_rows";
/// The `PostgreSQL` copy of the lake side, for reladiff.
const LAKE_COPY: &str = "bench_rows_lake";
/// The Iceberg namespace of the lake side.
const NAMESPACE: &str = "bench_reconcile";
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

/// The lake rows for source ids `ids` of an `n`-row table (missing ids
/// skipped, changed amounts, extra rows at `id + n`).
fn lake_batch(schema: &SchemaRef, ids: std::ops::Range<i64>, n: i64) -> BenchResult<RecordBatch> {
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
    for id in ids {
        match fate(id) {
            Fate::Same => push(id, 0),
            Fate::Missing => {}
            Fate::Wrong => push(id, 100),
            Fate::Extra => {
                push(id, 0);
                push(id + n, 0);
            }
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
struct Measured {
    method: String,
    rows: u64,
    seconds: f64,
    note: String,
}

fn reconcile(state: &Path, sizes: &[u64], with_reladiff: bool) -> BenchResult<bool> {
    let (stack, ports) = common::running(state)?;
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
    let runtime = common::runtime()?;
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
            let result = measure(&source, &lake, n, reladiff.as_deref(), &url).await;
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
    let started = Instant::now();
    let lake_rows = write_lake(lake, n).await?;
    eprintln!(
        "bench: lake table ({lake_rows} rows) in {:.1}s",
        started.elapsed().as_secs_f64()
    );

    let (reconciler, mut ok) = time_reconciler(source, lake, n, planted).await?;
    let mut results = vec![reconciler];
    let (raw, raw_ok) = time_raw_read(source, lake, n, lake_rows).await?;
    results.extend(raw);
    ok &= raw_ok;
    if let Some(reladiff) = reladiff {
        let started = Instant::now();
        create_pg_table(source, LAKE_COPY, &source_select(n, true)).await?;
        eprintln!(
            "bench: PostgreSQL copy of the lake side in {:.1}s",
            started.elapsed().as_secs_f64()
        );
        for algorithm in ["hashdiff", "joindiff"] {
            let started = Instant::now();
            let (found, note) = run_reladiff(reladiff, url, algorithm)?;
            let seconds = started.elapsed().as_secs_f64();
            if found != planted {
                println!(
                    "reladiff {algorithm}: planted {planted:?}, found {found:?}  <-- MISMATCH"
                );
                ok = false;
            }
            results.push(Measured {
                method: format!("reladiff --algorithm {algorithm}"),
                rows: n,
                seconds,
                note,
            });
        }
    }

    println!(
        "{:<30} {:>11} {:>9} {:>11}  note",
        "method", "rows", "seconds", "rows/s"
    );
    for r in &results {
        println!(
            "{:<30} {:>11} {:>9.2} {:>11.0}  {}",
            r.method,
            r.rows,
            r.seconds,
            r.rows as f64 / r.seconds,
            r.note
        );
    }
    Ok(ok)
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

/// `reconcile::reconcile` over the bench tables: its line of the table, and
/// whether it found exactly the planted differences.
async fn time_reconciler(
    source: &tokio_postgres::Client,
    lake: &Lake,
    n: u64,
    planted: Planted,
) -> BenchResult<(Measured, bool)> {
    reset_peak_rss();
    let consumer = ConsumerLake {
        changelog: false,
        consumer: "bench".into(),
        namespace: NAMESPACE.into(),
        views: std::collections::HashMap::new(),
    };
    let started = Instant::now();
    let found = reconcile::reconcile(source, lake, &[TABLE], &[consumer]).await?;
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
    println!(
        "reconciler, {n} rows: planted {} differences ({} missing, {} wrong, {} extra), \
         found {} ({} missing, {} wrong, {} extra){}",
        planted.total(),
        planted.missing,
        planted.wrong,
        planted.extra,
        counts.wrong,
        got.missing,
        got.wrong,
        got.extra,
        if exact { "" } else { "  <-- MISMATCH" }
    );
    let measured = Measured {
        method: "lossproof reconcile".into(),
        rows: n,
        seconds,
        note: peak_rss().map_or_else(String::new, |mb| format!("peak RSS {mb} MB")),
    };
    Ok((measured, exact))
}

/// The raw read cost: COPY out of the source + a DataFusion scan of the
/// lake; and whether both read every row.
async fn time_raw_read(
    source: &tokio_postgres::Client,
    lake: &Lake,
    n: u64,
    lake_rows: u64,
) -> BenchResult<(Vec<Measured>, bool)> {
    let started = Instant::now();
    let (copied, bytes) = copy_out(source).await?;
    let copy_secs = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let scanned = scan_lake(lake).await?;
    let scan_secs = started.elapsed().as_secs_f64();
    let ok = copied == n && scanned == lake_rows;
    if !ok {
        println!(
            "raw read: COPY gave {copied} rows (expected {n}), the scan {scanned} (expected {lake_rows})"
        );
    }
    let measured = vec![
        Measured {
            method: "COPY source TO STDOUT".into(),
            rows: copied,
            seconds: copy_secs,
            note: format!("{:.0} MB of text", bytes as f64 / 1e6),
        },
        Measured {
            method: "DataFusion scan of the lake".into(),
            rows: scanned,
            seconds: scan_secs,
            note: String::new(),
        },
        Measured {
            method: "raw read (COPY + scan)".into(),
            rows: n,
            seconds: copy_secs + scan_secs,
            note: String::new(),
        },
    ];
    Ok((measured, ok))
}

/// Create the lake table afresh and write the lake side into it in Arrow
/// chunks, one commit. Returns its row count.
async fn write_lake(lake: &Lake, n: u64) -> BenchResult<u64> {
    let ns = lake
        .ensure_namespace(NAMESPACE)
        .await
        .map_err(|e| format!("namespace {NAMESPACE}: {e}"))?;
    let creation = TableCreation::builder()
        .name(TABLE.to_owned())
        .schema(iceberg_schema()?)
        .build();
    let table = lake
        .catalog()
        .create_table(&ns, creation)
        .await
        .map_err(|e| format!("create {NAMESPACE}.{TABLE}: {e}"))?;
    let schema = Arc::new(iceberg::arrow::schema_to_arrow_schema(
        table.metadata().current_schema(),
    )?);
    let mut files = Vec::new();
    let mut rows = 0;
    let n = i64::try_from(n)?;
    let mut first = 1;
    while first <= n {
        let file_end = (first + FILE_ROWS).min(n + 1);
        let mut batches = Vec::new();
        let mut start = first;
        while start < file_end {
            let end = (start + BATCH_ROWS).min(file_end);
            let batch = lake_batch(&schema, start..end, n)?;
            rows += batch.num_rows() as u64;
            batches.push(batch);
            start = end;
        }
        files.extend(
            write_data_files(&table, batches)
                .await
                .map_err(|e| format!("write {NAMESPACE}.{TABLE}: {e}"))?,
        );
        first = file_end;
    }
    lake.commit(&table, Commit::append(files))
        .await
        .map_err(|e| format!("commit {NAMESPACE}.{TABLE}: {e}"))?;
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

/// Run `reladiff --stats --json` over the two PostgreSQL tables: the
/// differences it reports (exclusive to the source, changed, exclusive to
/// the lake copy) and a note.
fn run_reladiff(reladiff: &Path, url: &str, algorithm: &str) -> BenchResult<(Planted, String)> {
    let output = Command::new(reladiff)
        .args([
            url, TABLE, LAKE_COPY, "-k", "id", "-c", "name", "-c", "amount", "-c", "at",
        ])
        .args(["--algorithm", algorithm, "--stats", "--json"])
        .output()
        .map_err(|e| format!("run {}: {e}", reladiff.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(format!(
            "reladiff {algorithm} failed ({}): {}{}",
            output.status,
            stdout.trim(),
            String::from_utf8_lossy(&output.stderr).trim()
        )
        .into());
    }
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
    Ok((found, format!("found {}{downloaded}", found.total())))
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
    let ns = iceberg::NamespaceIdent::new(NAMESPACE.to_owned());
    if !lake.catalog().namespace_exists(&ns).await? {
        return Ok(());
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
        .map_err(|e| format!("drop namespace {NAMESPACE}: {e}"))?;
    // The (now empty) folders the table's files were in.
    let _ = std::fs::remove_dir_all(lake.warehouse().join(NAMESPACE));
    Ok(())
}

/// Reset this process's peak resident set (Linux `clear_refs`); ignored elsewhere.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// This process's peak resident set in MB since the last reset (Linux).
fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024)
}
