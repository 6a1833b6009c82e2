//! Commit latency on one table as it ages: the lake layer's `Lake::commit`
//! (manifest merging past `MERGE_MIN_COUNT` manifests, plus periodic
//! snapshot expiry and orphan deletion as a long-running consumer would do)
//! next to iceberg-rust's plain `fast_append` (`Lake::append`), which never
//! merges and checks every manifest for duplicates.
//!
//! Each commit adds one data file of one row. Printed: the latency of the
//! commit itself at commit 1, 10, 100, 1,000 and 10,000 (and the median
//! and maximum of the commits around it), and, for `Lake::append`, the
//! whole call (it writes the file inside).
//!
//! Run: `cargo bench --profile dev --bench commits` (a release build of
//! DataFusion takes over an hour here; the dev profile optimises
//! dependencies). `LOSSPROOF_BENCH_COMMITS=2000` and
//! `LOSSPROOF_BENCH_APPENDS=300` shorten it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::{ArrayRef, Decimal128Array, Int64Array, RecordBatch, StringArray};
use iceberg::TableCreation;
use iceberg::spec::{NestedField, PrimitiveType, Schema, Type};
use iceberg::table::Table;
use lossproof_runtime::Lake;
use lossproof_runtime::lake::{Commit, Retain, write_data_files};

/// Expire snapshots every this many commits, keeping this many.
const EXPIRE_EVERY: usize = 100;
const KEEP_SNAPSHOTS: usize = 50;
/// Delete orphan files every this many commits (the bench is the only
/// writer: no grace needed; a real consumer passes one).
const ORPHANS_EVERY: usize = 1_000;
/// The commits reported.
const MARKS: [usize; 5] = [1, 10, 100, 1_000, 10_000];
/// Commits around a mark for its median and maximum.
const WINDOW: usize = 9;

fn main() {
    let commits = env_count("LOSSPROOF_BENCH_COMMITS", 10_000);
    let appends = env_count("LOSSPROOF_BENCH_APPENDS", 1_000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let state = tempfile::tempdir().expect("temp state dir");
    runtime.block_on(async {
        let lake = Lake::open(state.path()).await.expect("open the lake");
        lake.ensure_namespace("bench").await.expect("namespace");
        let layer = layer_commits(&lake, commits).await;
        let plain = plain_appends(&lake, appends).await;
        print_table(&layer, &plain);
    });
}

/// What `layer_commits` measured.
struct Layer {
    /// `Lake::commit` alone, per commit.
    commit: Vec<Duration>,
    /// Writing the commit's data file.
    write: Vec<Duration>,
    expiry: Vec<Duration>,
    orphans: Vec<(Duration, usize)>,
    manifests_at_end: usize,
    snapshots_at_end: usize,
    metadata_json_bytes: u64,
}

async fn layer_commits(lake: &Lake, commits: usize) -> Layer {
    let mut table = create(lake, "layer").await;
    let mut out = Layer {
        commit: Vec::with_capacity(commits),
        write: Vec::with_capacity(commits),
        expiry: Vec::new(),
        orphans: Vec::new(),
        manifests_at_end: 0,
        snapshots_at_end: 0,
        metadata_json_bytes: 0,
    };
    let started = Instant::now();
    for i in 1..=commits {
        let t = Instant::now();
        let files = write_data_files(&table, vec![batch(&table, i)])
            .await
            .expect("write");
        out.write.push(t.elapsed());
        let offsets = HashMap::from([("lossproof.offsets".to_owned(), i.to_string())]);
        let t = Instant::now();
        table = lake
            .commit(&table, Commit::append(files).with_properties(offsets))
            .await
            .expect("commit");
        out.commit.push(t.elapsed());
        if i % EXPIRE_EVERY == 0 {
            let t = Instant::now();
            table = lake
                .expire_snapshots(&table, Retain::Last(KEEP_SNAPSHOTS))
                .await
                .expect("expire")
                .table;
            out.expiry.push(t.elapsed());
        }
        if i % ORPHANS_EVERY == 0 {
            let t = Instant::now();
            let report = lake
                .delete_orphan_files(table.identifier(), Duration::ZERO)
                .await
                .expect("orphans");
            out.orphans.push((t.elapsed(), report.deleted.len()));
        }
        if i % 1_000 == 0 {
            eprintln!(
                "Lake::commit: {i} commits in {:.0?} (last {:.1?})",
                started.elapsed(),
                out.commit[i - 1]
            );
        }
    }
    let snapshot = table.metadata().current_snapshot().expect("snapshot");
    out.manifests_at_end = table
        .manifest_list_reader(snapshot)
        .load()
        .await
        .expect("manifest list")
        .entries()
        .len();
    out.snapshots_at_end = table.metadata().snapshots().len();
    let location = table.metadata_location().expect("location");
    out.metadata_json_bytes =
        std::fs::metadata(location.trim_start_matches("file://")).map_or(0, |m| m.len());
    let rows: usize = lake
        .scan(table.identifier())
        .await
        .expect("scan")
        .iter()
        .map(RecordBatch::num_rows)
        .sum();
    assert_eq!(rows, commits, "every committed row reads back");
    out
}

/// iceberg-rust's `fast_append`, whole call (writes the file too).
async fn plain_appends(lake: &Lake, appends: usize) -> Vec<Duration> {
    let mut table = create(lake, "fast_append").await;
    let mut out = Vec::with_capacity(appends);
    let started = Instant::now();
    for i in 1..=appends {
        let t = Instant::now();
        table = lake
            .append(&table, vec![batch(&table, i)], HashMap::new())
            .await
            .expect("append");
        out.push(t.elapsed());
        if i % 100 == 0 {
            eprintln!(
                "Lake::append: {i} commits in {:.0?} (last {:.1?})",
                started.elapsed(),
                out[i - 1]
            );
        }
    }
    out
}

fn print_table(layer: &Layer, plain: &[Duration]) {
    println!();
    println!(
        "| commit # | Lake::commit (this / median / max of ±{WINDOW}) | write 1-row file | Lake::append = fast_append (this / median / max) |"
    );
    println!("|---:|---|---|---|");
    for mark in MARKS {
        if mark > layer.commit.len() && mark > plain.len() {
            continue;
        }
        println!(
            "| {mark} | {} | {} | {} |",
            around(&layer.commit, mark),
            layer.write.get(mark - 1).map_or("-".to_owned(), |d| ms(*d)),
            around(plain, mark)
        );
    }
    println!();
    println!(
        "Lake::commit: {} commits, mean {} (p50 {}, p99 {}, max {}); after the last: {} manifests, {} snapshots, metadata.json {} KiB",
        layer.commit.len(),
        ms(mean(&layer.commit)),
        ms(percentile(&layer.commit, 50)),
        ms(percentile(&layer.commit, 99)),
        ms(percentile(&layer.commit, 100)),
        layer.manifests_at_end,
        layer.snapshots_at_end,
        layer.metadata_json_bytes / 1024
    );
    if !layer.expiry.is_empty() {
        println!(
            "snapshot expiry every {EXPIRE_EVERY} commits (keep {KEEP_SNAPSHOTS}): mean {}, max {}",
            ms(mean(&layer.expiry)),
            ms(percentile(&layer.expiry, 100))
        );
    }
    for (i, (took, deleted)) in layer.orphans.iter().enumerate() {
        println!(
            "orphan deletion after commit {}: {deleted} files in {}",
            (i + 1) * ORPHANS_EVERY,
            ms(*took)
        );
    }
    if !plain.is_empty() {
        println!(
            "Lake::append: {} commits, mean {} (p50 {}, max {})",
            plain.len(),
            ms(mean(plain)),
            ms(percentile(plain, 50)),
            ms(percentile(plain, 100))
        );
    }
}

/// `this / median / max` of the commits `mark-WINDOW..=mark+WINDOW`.
fn around(times: &[Duration], mark: usize) -> String {
    let Some(this) = times.get(mark - 1) else {
        return "-".to_owned();
    };
    let from = mark.saturating_sub(WINDOW + 1);
    let to = (mark + WINDOW).min(times.len());
    let window = &times[from..to];
    format!(
        "{} / {} / {}",
        ms(*this),
        ms(percentile(window, 50)),
        ms(percentile(window, 100))
    )
}

fn percentile(times: &[Duration], p: usize) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort();
    sorted
        .get((sorted.len().saturating_sub(1) * p) / 100)
        .copied()
        .unwrap_or_default()
}

fn mean(times: &[Duration]) -> Duration {
    let n = u32::try_from(times.len().max(1)).unwrap_or(u32::MAX);
    times.iter().sum::<Duration>() / n
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn env_count(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

async fn create(lake: &Lake, name: &str) -> Table {
    let schema = Schema::builder()
        .with_fields(vec![
            NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
            NestedField::optional(2, "name", Type::Primitive(PrimitiveType::String)).into(),
            NestedField::optional(
                3,
                "amount",
                Type::Primitive(PrimitiveType::Decimal {
                    precision: 10,
                    scale: 2,
                }),
            )
            .into(),
        ])
        .build()
        .expect("schema");
    let creation = TableCreation::builder()
        .name(name.to_owned())
        .schema(schema)
        .build();
    lake.catalog()
        .create_table(&iceberg::NamespaceIdent::new("bench".to_owned()), creation)
        .await
        .expect("create table")
}

/// One row, in the table's Arrow schema.
fn batch(table: &Table, i: usize) -> RecordBatch {
    let arrow = Arc::new(
        iceberg::arrow::schema_to_arrow_schema(table.metadata().current_schema())
            .expect("arrow schema"),
    );
    let id = i64::try_from(i).expect("small");
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(vec![id])),
        Arc::new(StringArray::from(vec![format!("row {i}")])),
        Arc::new(
            Decimal128Array::from(vec![i128::from(id) * 100])
                .with_precision_and_scale(10, 2)
                .expect("decimal"),
        ),
    ];
    RecordBatch::try_new(arrow, columns).expect("batch")
}
