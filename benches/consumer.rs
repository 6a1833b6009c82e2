//! `cargo bench --profile perf --bench consumer`: how fast the correct and the careless
//! consumers apply the same real change stream (records/s from topic to
//! committed Iceberg, each into a namespace of its own), next to how fast a
//! bare rdkafka consumer reads the same topics. Figures, not a test: the
//! machines are shared and noisy; use the `perf` profile (Cargo.toml).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use lossproof_consumers::{self as consumer, careless, correct};
use lossproof_executor::workload;
use lossproof_runtime::debezium::{self, CaptureNames};
use lossproof_runtime::{ConnectClient, Lake, Stack};
use rdkafka::consumer::{BaseConsumer, Consumer as _};

use common::BenchResult;

mod common;

/// The correct and careless consumers' apply rates (records/s, topic to
/// committed Iceberg) next to a raw rdkafka read of the same topics, on the
/// running local stack.
#[derive(clap::Parser)]
struct Args {
    #[arg(long, default_value = ".lossproof")]
    state: PathBuf,
    /// Seconds of workload that fill the topics.
    #[arg(long, default_value_t = 20)]
    seconds: u64,
    /// Workload operations per second.
    #[arg(long, default_value_t = 1000)]
    rate: u64,
    /// Records per batch at most (both consumers; repeat for several
    /// sizes: 500 is what `run` uses on a live stream, 10,000 a
    /// consumer catching up a backlog).
    #[arg(long = "batch", default_values_t = [500, 10_000])]
    batches: Vec<usize>,
    /// Table sizes (orders preloaded before capture; repeat for several,
    /// e.g. `--rows 10000 --rows 1000000`): measure each consumer on a
    /// table of that size instead (batch 500 on the change stream).
    #[arg(long = "rows")]
    rows: Vec<u64>,
    /// Run the correct consumer committing at the end of each batch, not
    /// at source transaction boundaries (what the boundaries cost).
    #[arg(long)]
    at_batch_ends: bool,
}

/// Whether the correct consumer commits at source transaction boundaries
/// (`--at-batch-ends` turns it off).
static AT_TRANSACTIONS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// The transaction topic the correct consumer reads, unless
/// `--at-batch-ends`.
fn transactions(names: &lossproof_runtime::debezium::CaptureNames) -> Option<String> {
    AT_TRANSACTIONS
        .load(std::sync::atomic::Ordering::Relaxed)
        .then(|| names.transaction_topic())
}

fn main() -> std::process::ExitCode {
    let args = <Args as clap::Parser>::parse_from(common::args());
    AT_TRANSACTIONS.store(!args.at_batch_ends, std::sync::atomic::Ordering::Relaxed);
    common::exit(consumers(
        &args.state,
        args.seconds,
        args.rate,
        &args.batches,
        &args.rows,
    ))
}

fn consumers(
    state: &Path,
    seconds: u64,
    rate: u64,
    batches: &[usize],
    rows: &[u64],
) -> BenchResult<bool> {
    let (stack, ports) = common::running(state)?;
    let runtime = common::runtime()?;
    runtime.block_on(async {
        let database = lossproof_runtime::stack::SOURCE_DATABASE;
        if !rows.is_empty() {
            let source =
                lossproof_runtime::postgres::connect(ports.source_postgres, database).await?;
            let connect = ConnectClient::local(ports.connect);
            return Box::pin(sized(&stack, &source, &connect, rows, (seconds, rate))).await;
        }
        let database = lossproof_runtime::stack::SOURCE_DATABASE;
        let source = lossproof_runtime::postgres::connect(ports.source_postgres, database).await?;
        let orders = lossproof_vocabulary::workloads::orders();
        let run = format!("bench{}", std::process::id());
        let names = CaptureNames::for_run(&run);
        let connect = ConnectClient::local(ports.connect);
        workload::capture(
            &source,
            &connect,
            &stack.endpoints()?,
            &names,
            orders,
            &workload::Capture::plain(Duration::from_mins(1)),
            &|_| {},
        )
        .await?;
        let result = measure(&stack, &source, &connect, &names, seconds, rate, batches).await;
        debezium::remove(&connect, &names, &source).await?;
        result
    })
}

/// Fill the topics once, read them raw, then run both consumers over them
/// at each batch size; print the table. True when every reader read every
/// record and the careless consumer logged no error.
async fn measure(
    stack: &Stack,
    source: &tokio_postgres::Client,
    connect: &ConnectClient,
    names: &CaptureNames,
    seconds: u64,
    rate: u64,
    batches: &[usize],
) -> BenchResult<bool> {
    let ports = stack.ports()?;
    eprintln!("bench: workload orders at {rate}/s for {seconds}s (seed 1) …");
    let report = load_and_drain(
        &ports,
        (source, connect, names),
        "customers 200",
        (seconds, rate),
    )
    .await?;
    let topics = consumer::topics(names, lossproof_vocabulary::workloads::orders());
    let raw = raw_read(ports.broker, &topics)?;
    let lake = Lake::open(stack.state().root()).await?;
    println!(
        "records on the topics: {} ({} workload operations, {:.1} MB of values)",
        raw.total,
        report.ops,
        raw.bytes as f64 / 1e6
    );
    println!(
        "raw rdkafka consume: {} records in {:.2} s, {:.0} records/s",
        raw.read,
        raw.seconds,
        raw.read as f64 / raw.seconds
    );
    let mut complete = raw.read == raw.total;
    let mut lines = Vec::new();
    for &batch in batches {
        eprintln!("bench: both consumers, batches of up to {batch} …");
        let pair = pair(&lake, &ports, names, &topics, raw.total, batch).await?;
        if !pair.complete {
            println!(
                "batch {batch}: incomplete: correct read {} and careless {} of {} change records on the topics ({} careless errors)",
                pair.correct.records - pair.correct.markers,
                pair.careless.records,
                raw.total,
                pair.careless.errors
            );
        }
        complete &= pair.complete;
        lines.push((batch, pair));
    }
    println!();
    println!(
        "{:>7} {:>15} {:>15} {:>17} {:>12}  goal (correct >= careless and >= raw/2)",
        "batch", "correct rec/s", "careless rec/s", "correct/careless", "correct/raw"
    );
    let raw_rate = raw.read as f64 / raw.seconds;
    for (batch, pair) in &lines {
        let (correct, careless) = (pair.correct_rate(), pair.careless_rate());
        let met = correct >= careless && correct >= raw_rate / 2.0;
        println!(
            "{batch:>7} {correct:>15.0} {careless:>15.0} {:>17.2} {:>12.2}  {}",
            correct / careless,
            correct / raw_rate,
            if met { "met" } else { "not met" }
        );
    }
    for (batch, pair) in &lines {
        let (right, t) = (&pair.correct, pair.correct.time);
        println!(
            "batch {batch}: correct: {} batches, {:.1} ms each; decoding {:.2} s (while the batch before is applied), \
             applying {:.2} s, writing Parquet {:.2} s, committing {:.2} s; {} changes applied, {} not newer, {} conflicts",
            right.batches,
            pair.correct_secs * 1000.0 / right.batches.max(1) as f64,
            t.decode.as_secs_f64(),
            t.apply.as_secs_f64(),
            t.write.as_secs_f64(),
            t.commit.as_secs_f64(),
            right.applied,
            right.skipped,
            right.conflicts
        );
        println!(
            "batch {batch}: careless: {} batches, {} commits, {:.1} ms per commit, {} errors",
            pair.careless.batches,
            pair.careless.commits,
            pair.careless_secs * 1000.0 / pair.careless.commits.max(1) as f64,
            pair.careless.errors
        );
    }
    Ok(complete)
}

/// `seconds` of the orders workload at `rate` (seed 1, with the workload
/// parameters `params`), then wait until the connector captured all of it.
async fn load_and_drain(
    ports: &lossproof_runtime::Ports,
    (source, connect, names): (&tokio_postgres::Client, &ConnectClient, &CaptureNames),
    params: &str,
    (seconds, rate): (u64, u64),
) -> BenchResult<workload::WorkloadReport> {
    let scenario =
        format!("workload orders rate {rate}/s connections 4 {params}\nunder load 1s < >");
    let plan =
        lossproof_lang::Analyzer::new(&lossproof_vocabulary::Stdlib, &lossproof_lang::NoIncludes)
            .analyze("bench.lp", &scenario)
            .plan
            .ok_or("the bench scenario does not analyse")?
            .workload;
    let report = workload::run(
        &plan,
        1,
        &lossproof_runtime::profile::Source::local(ports.source_postgres),
        lossproof_runtime::stack::SOURCE_DATABASE,
        Duration::from_secs(seconds),
    )
    .await?;
    debezium::wait_drained(
        connect,
        names,
        source,
        report.final_lsn,
        Duration::from_mins(2),
    )
    .await?
    .map_err(|e| format!("the stream did not drain: {e}"))?;
    Ok(report)
}

/// Both consumers over the same records at one batch size.
struct Pair {
    correct: correct::Report,
    correct_secs: f64,
    careless: careless::Report,
    careless_secs: f64,
    complete: bool,
}

impl Pair {
    /// Change records per second: the records both consumers apply (the
    /// correct one also reads the transaction topic's BEGINs and ENDs,
    /// not counted, so that both rates are over the same records).
    fn correct_rate(&self) -> f64 {
        (self.correct.records - self.correct.markers) as f64 / self.correct_secs
    }
    fn careless_rate(&self) -> f64 {
        self.careless.records as f64 / self.careless_secs
    }
}

async fn pair(
    lake: &Lake,
    ports: &lossproof_runtime::Ports,
    names: &CaptureNames,
    topics: &[String],
    total: u64,
    batch: usize,
) -> BenchResult<Pair> {
    let workload_sig = lossproof_vocabulary::workloads::orders();
    let tag = format!("{}_{batch}", names.topic_prefix);
    // Correct: the same records, topic to committed Iceberg.
    let correct_config = correct::Config {
        kafka: lossproof_runtime::profile::Kafka::plain(ports.broker),
        registry: lossproof_runtime::profile::Http::plain(ports.registry),
        namespace: format!("bench_correct_{tag}"),
        table_prefix: String::new(),
        index_dir: std::env::temp_dir()
            .join(format!("lossproof-bench-index-{}", std::process::id())),
        workload: workload_sig,
        topics: topics.to_vec(),
        transactions: transactions(names),
        group: format!("lossproof-bench-correct-{tag}"),
        batch_max: batch,
        linger: Duration::from_millis(200),
        stop_after: None,
        until_end: true,
        max_held: lossproof_consumers::correct::transactions::MAX_HELD,
        failpoint: None,
        messages: consumer::Messages::none(),
    };
    // Both consumers start on existing, empty tables (the careless one's
    // are made below): what is timed is topic to committed Iceberg.
    correct::state::LakeState::create_tables(
        lake,
        &correct_config.namespace,
        &correct_config.table_prefix,
        workload_sig,
    )
    .await?;
    let (_keep, stop) = tokio::sync::watch::channel(false);
    let started = Instant::now();
    let right = correct::run(lake, &correct_config, stop, &|_| {}).await?;
    let correct_secs = started.elapsed().as_secs_f64();

    // Careless: the same records, topic to committed Iceberg.
    let namespace = format!("bench_careless_{tag}");
    let tables = consumer::ensure_tables(lake, &namespace, workload_sig).await?;
    let config = careless::Config {
        kafka: lossproof_runtime::profile::Kafka::plain(ports.broker),
        registry: lossproof_runtime::profile::Http::plain(ports.registry),
        topics: topics.to_vec(),
        tables,
        group: format!("lossproof-bench-careless-{tag}"),
        auto_commit: Duration::from_secs(1),
        batch_max: batch,
        linger: Duration::from_millis(200),
        stop_after: Some(total),
        messages: consumer::Messages::none(),
    };
    let (_keep, stop) = tokio::sync::watch::channel(false);
    let started = Instant::now();
    let careless = careless::run(lake, &config, stop, &|_| {}).await?;
    let careless_secs = started.elapsed().as_secs_f64();
    for ns in [&correct_config.namespace, &namespace] {
        let _ = lake.drop_namespace(ns).await;
    }
    Ok(Pair {
        complete: careless.errors == 0
            && right.records - right.markers == total
            && careless.records == total,
        correct: right,
        correct_secs,
        careless,
        careless_secs,
    })
}

/// What a bare consumer read.
struct RawRead {
    /// Records on the topics.
    total: u64,
    read: u64,
    bytes: usize,
    seconds: f64,
}

/// A bare rdkafka consumer reading every record of `topics` (bounded).
fn raw_read(broker: u16, topics: &[String]) -> BenchResult<RawRead> {
    let raw: BaseConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", format!("127.0.0.1:{broker}"))
        .set(
            "group.id",
            format!("lossproof-bench-raw-{}", std::process::id()),
        )
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .create()?;
    let mut total = 0u64;
    for topic in topics {
        let (low, high) = raw
            .fetch_watermarks(topic, 0, Duration::from_secs(5))
            .map_err(|e| format!("{topic}: {e}"))?;
        total += (high - low).max(0).cast_unsigned();
    }
    let topic_refs: Vec<&str> = topics.iter().map(String::as_str).collect();
    raw.subscribe(&topic_refs)?;
    let started = Instant::now();
    let mut read = 0u64;
    let mut bytes = 0usize;
    // 5 minutes, plus one per million records (a 10M-row snapshot is 21M).
    let deadline = started + Duration::from_mins(5 + total / 1_000_000);
    while read < total && Instant::now() < deadline {
        if let Some(Ok(message)) = raw.poll(Duration::from_millis(100)) {
            read += 1;
            bytes += message.payload_len();
        }
    }
    Ok(RawRead {
        total,
        read,
        bytes,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// `--rows N`: the correct and careless consumers on a table that already
/// holds `N` orders (preloaded before capture, so the connector's initial
/// snapshot carries them), then on a change stream whose updates and
/// deletes hit the whole table at random. Per size: the snapshot's rate
/// into Iceberg, the change stream's apply rate and per-batch time (mean,
/// p50, p99) at batch 500, each consumer's peak RSS, and the correct
/// consumer's restart to ready (key index in step, and rebuilt).
async fn sized(
    stack: &Stack,
    source: &tokio_postgres::Client,
    connect: &ConnectClient,
    rows: &[u64],
    (seconds, rate): (u64, u64),
) -> BenchResult<bool> {
    let ports = stack.ports()?;
    let lake = Lake::open(stack.state().root()).await?;
    let mut lines = Vec::new();
    let mut complete = true;
    for &n in rows {
        let names = CaptureNames::for_run(&format!("bench{}r{n}", std::process::id()));
        eprintln!("bench: preloading {n} orders, then the connector's snapshot …");
        let captured = workload::capture(
            source,
            connect,
            &stack.endpoints()?,
            &names,
            lossproof_vocabulary::workloads::orders(),
            &workload::Capture {
                replica_identity_full: false,
                partitions: 1,
                preload: Some((n, 1)),
                limit: Duration::from_mins(2),
            },
            &progress,
        )
        .await?;
        // The snapshot is in the topics (a record per preloaded row), then
        // the slot at the source's end: only then are the topics' ends the
        // snapshot's.
        let topics = consumer::topics(&names, lossproof_vocabulary::workloads::orders());
        let limit = Duration::from_mins(10 + n / 100_000);
        if let Some(preloaded) = &captured.preloaded {
            workload::preload::wait_in_topics(
                &stack.endpoints()?.kafka,
                &topics,
                preloaded,
                Instant::now() + limit,
            )
            .await?;
        }
        let lsn = debezium::current_lsn(source).await?;
        debezium::wait_drained(connect, &names, source, lsn, limit)
            .await?
            .map_err(|e| format!("the snapshot did not drain: {e}"))?;
        let snapshot = raw_read(ports.broker, &topics)?;
        let size = Box::pin(Size::measure(
            &lake,
            &ports,
            &names,
            &topics,
            n,
            snapshot.total,
            (seconds, rate),
            source,
            connect,
        ))
        .await;
        debezium::remove(connect, &names, source).await?;
        let size = size?;
        complete &= size.complete;
        lines.push((n, captured.preloaded, snapshot, size));
    }
    print_sized(&lines);
    Ok(complete)
}

/// One size's figures: its rows, what the preload wrote, the raw read of
/// the snapshot, both consumers.
type SizeLine = (u64, Option<workload::preload::Preloaded>, RawRead, Size);

/// The table of [`sized`], one line per size and consumer, where the
/// correct consumer's time went, then the goals.
fn print_sized(lines: &[SizeLine]) {
    println!();
    println!(
        "{:>10} {:>9} {:>10} {:>11} {:>10} {:>11} {:>13} {:>8} {:>8} {:>9} {:>8} {:>9} {:>9}",
        "rows",
        "consumer",
        "raw rec/s",
        "snap rec/s",
        "snap ms",
        "chg rec/s",
        "chg ms mean/50",
        "chg p99",
        "batches",
        "peak MB",
        "ready s",
        "rebuild s",
        "preload s"
    );
    for (n, preloaded, raw, size) in lines {
        for side in [&size.correct, &size.careless] {
            println!(
                "{n:>10} {:>9} {:>10.0} {:>11.0} {:>10.1} {:>11.0} {:>6.1}/{:<6.1} {:>8.1} {:>8} {:>9.0} {:>8} {:>9} {:>9.1}",
                side.name,
                raw.read as f64 / raw.seconds,
                side.snapshot_rate,
                mean(&side.snapshot_ms),
                side.change_rate,
                mean(&side.batch_ms),
                percentile(&side.batch_ms, 0.5),
                percentile(&side.batch_ms, 0.99),
                side.batch_ms.len(),
                side.peak_mb,
                side.restarts
                    .as_ref()
                    .map_or("-".to_owned(), |r| format!("{:.2}", r.ready)),
                side.restarts
                    .as_ref()
                    .map_or("-".to_owned(), |r| format!("{:.1}", r.rebuilt)),
                preloaded.map_or(0.0, |p| p.elapsed.as_secs_f64()),
            );
        }
    }
    println!(
        "(snap: the connector's initial snapshot at batch 10,000, mean ms per batch; chg: the change stream at batch 500)"
    );
    for (n, _, _, size) in lines {
        if let Some(restarts) = &size.correct.restarts {
            let (snapshot, changes) = restarts.timing;
            for (what, t) in [("snapshot", snapshot), ("changes", changes)] {
                println!(
                    "{n:>10} correct, {what}: decoding {:.1} s (while the batch before is applied), applying {:.1} s, \
                     writing Parquet {:.1} s, committing {:.1} s, key index {:.1} s{}",
                    t.decode.as_secs_f64(),
                    t.apply.as_secs_f64(),
                    t.write.as_secs_f64(),
                    t.commit.as_secs_f64(),
                    t.index.as_secs_f64(),
                    if what == "changes" {
                        format!("; start to first batch {:.2} s", restarts.change_ready)
                    } else {
                        String::new()
                    }
                );
            }
        }
    }
    print_goals(lines);
}

/// The goals at the largest size of `lines`, each marked met or
/// not (the flatness goal compares it with the smallest).
fn print_goals(lines: &[SizeLine]) {
    let (Some(first), Some(last)) = (lines.first(), lines.last()) else {
        return;
    };
    let (n, raw, size) = (last.0, &last.2, &last.3);
    let (right, wrong) = (&size.correct, &size.careless);
    let raw_rate = raw.read as f64 / raw.seconds;
    let flat = mean(&right.batch_ms) / mean(&first.3.correct.batch_ms);
    let ready = right.restarts.as_ref().map_or(f64::INFINITY, |r| r.ready);
    println!("goals at {n} rows:");
    let goals = [
        (
            format!(
                "correct's per-batch time at batch 500 within 1.5x of its time at {} rows: {flat:.2}x",
                first.0
            ),
            flat <= 1.5,
        ),
        (
            format!(
                "correct at least as fast as careless at batch 500: {:.0} vs {:.0} rec/s",
                right.change_rate, wrong.change_rate
            ),
            right.change_rate >= wrong.change_rate,
        ),
        (
            format!(
                "correct at least as fast as careless at batch 10,000: {:.0} vs {:.0} rec/s",
                right.snapshot_rate, wrong.snapshot_rate
            ),
            right.snapshot_rate >= wrong.snapshot_rate,
        ),
        (
            format!(
                "correct at batch 10,000 at least half the raw read: {:.2} of {raw_rate:.0} rec/s",
                right.snapshot_rate / raw_rate
            ),
            right.snapshot_rate >= raw_rate / 2.0,
        ),
        (
            format!("correct's peak RSS under 1 GB: {:.0} MB", right.peak_mb),
            right.peak_mb < 1024.0,
        ),
        (
            format!("restart to ready (its first commit's start) under 5 s: {ready:.2} s"),
            ready < 5.0,
        ),
    ];
    for (i, (goal, met)) in goals.into_iter().enumerate() {
        let verdict = match (i, met) {
            (0, _) if lines.len() < 2 => "n/a    ",
            (_, true) => "met    ",
            (_, false) => "NOT MET",
        };
        println!("  {verdict}  {goal}");
    }
}

/// One consumer at one table size.
struct Side {
    name: &'static str,
    /// The snapshot (batch 10,000): records/s and each batch's time.
    snapshot_rate: f64,
    snapshot_ms: Vec<f64>,
    /// The change stream (batch 500): records/s and each batch's time.
    change_rate: f64,
    batch_ms: Vec<f64>,
    peak_mb: f64,
    /// The correct consumer's restarts and where its time went.
    restarts: Option<Restarts>,
}

/// The correct consumer's figures beyond its rates.
struct Restarts {
    /// The change stream's run: from its start to its first batch taken.
    change_ready: f64,
    /// A restart at the topics' end, to ready: the key index in step, then
    /// lost (rebuilt from the lake).
    ready: f64,
    rebuilt: f64,
    /// Where its time went: the snapshot, the change stream.
    timing: (correct::Timing, correct::Timing),
}

/// Both consumers at one table size.
struct Size {
    correct: Side,
    careless: Side,
    complete: bool,
}

impl Size {
    #[allow(clippy::too_many_arguments, clippy::too_many_lines)] // one size's steps, in order
    async fn measure(
        lake: &Lake,
        ports: &lossproof_runtime::Ports,
        names: &CaptureNames,
        topics: &[String],
        n: u64,
        snapshot_records: u64,
        (seconds, rate): (u64, u64),
        source: &tokio_postgres::Client,
        connect: &ConnectClient,
    ) -> BenchResult<Self> {
        let orders = lossproof_vocabulary::workloads::orders();
        let tag = format!("{}_{n}", names.topic_prefix);
        let index_dir =
            std::env::temp_dir().join(format!("lossproof-bench-index-{}", std::process::id()));
        let correct_config = |batch| correct::Config {
            kafka: lossproof_runtime::profile::Kafka::plain(ports.broker),
            registry: lossproof_runtime::profile::Http::plain(ports.registry),
            namespace: format!("bench_correct_{tag}"),
            table_prefix: String::new(),
            index_dir: index_dir.clone(),
            workload: orders,
            topics: topics.to_vec(),
            transactions: transactions(names),
            group: format!("lossproof-bench-correct-{tag}"),
            batch_max: batch,
            linger: Duration::from_millis(200),
            stop_after: None,
            until_end: true,
            max_held: lossproof_consumers::correct::transactions::MAX_HELD,
            failpoint: None,
            messages: consumer::Messages::none(),
        };
        let careless_namespace = format!("bench_careless_{tag}");
        let careless_tables = consumer::ensure_tables(lake, &careless_namespace, orders).await?;
        let careless_config = |batch, stop_after| careless::Config {
            kafka: lossproof_runtime::profile::Kafka::plain(ports.broker),
            registry: lossproof_runtime::profile::Http::plain(ports.registry),
            topics: topics.to_vec(),
            tables: careless_tables.clone(),
            group: format!("lossproof-bench-careless-{tag}"),
            auto_commit: Duration::from_secs(1),
            batch_max: batch,
            linger: Duration::from_millis(200),
            stop_after: Some(stop_after),
            messages: consumer::Messages::none(),
        };
        let (_keep, stop) = tokio::sync::watch::channel(false);

        // The snapshot, at batch 10,000 (a consumer catching up a backlog).
        eprintln!("bench: {n} rows: the snapshot into both lakes …");
        let right = measured(Box::pin(correct::run(
            lake,
            &correct_config(10_000),
            stop.clone(),
            &progress,
        )))
        .await?;
        let wrong = measured(Box::pin(careless::run(
            lake,
            &careless_config(10_000, snapshot_records),
            stop.clone(),
            &progress,
        )))
        .await?;
        commit_group_at_end(
            ports.broker,
            &format!("lossproof-bench-careless-{tag}"),
            topics,
        )?;

        // The change stream, at batch 500.
        eprintln!("bench: {n} rows: {seconds}s of changes at {rate}/s …");
        load_and_drain(
            ports,
            (source, connect, names),
            &format!("customers 200 preload {n}"),
            (seconds, rate),
        )
        .await?;
        let all = raw_read(ports.broker, topics)?;
        let changes = all.total - snapshot_records;
        eprintln!("bench: {n} rows: {changes} change records; both consumers at batch 500 …");
        let right_changes = measured(Box::pin(correct::run(
            lake,
            &correct_config(500),
            stop.clone(),
            &progress,
        )))
        .await?;
        let wrong_changes = measured(Box::pin(careless::run(
            lake,
            &careless_config(500, changes),
            stop.clone(),
            &progress,
        )))
        .await?;

        // A restart at the topics' end, to ready to take its first batch
        // (the consumer made, the lake's state read, the key index checked,
        // partitions assigned): with the key index in step, then lost.
        let config = correct_config(500);
        let restart = || async {
            let report = measured(Box::pin(correct::run(
                lake,
                &config,
                stop.clone(),
                &progress,
            )));
            BenchResult::Ok(report.await?.report.ready.as_secs_f64())
        };
        let ready = restart().await?;
        std::fs::remove_file(config.index_path())?;
        let rebuilt = restart().await?;
        let _ = std::fs::remove_dir_all(&index_dir);
        for ns in [&config.namespace, &careless_namespace] {
            let _ = lake.drop_namespace(ns).await;
        }
        Ok(Self {
            complete: right.report.records() == snapshot_records
                && right_changes.report.records() == changes
                && wrong.report.errors == 0
                && wrong_changes.report.errors == 0,
            correct: Side::new(
                "correct",
                &right,
                &right_changes,
                Some(Restarts {
                    change_ready: right_changes.report.ready.as_secs_f64(),
                    ready,
                    rebuilt,
                    timing: (right.report.time, right_changes.report.time),
                }),
            ),
            careless: Side::new("careless", &wrong, &wrong_changes, None),
        })
    }
}

/// What the bench reads from either consumer's report.
trait Run {
    fn records(&self) -> u64;
    fn batch_times(&self) -> &[Duration];
}

impl Run for correct::Report {
    /// The change records (not the transaction topic's BEGINs and ENDs).
    fn records(&self) -> u64 {
        self.records - self.markers
    }
    fn batch_times(&self) -> &[Duration] {
        &self.batch_times
    }
}

impl Run for careless::Report {
    fn records(&self) -> u64 {
        self.records
    }
    fn batch_times(&self) -> &[Duration] {
        &self.batch_times
    }
}

impl Side {
    /// One consumer's snapshot run and change-stream run.
    fn new<R: Run>(
        name: &'static str,
        snapshot: &Measured<R>,
        changes: &Measured<R>,
        restarts: Option<Restarts>,
    ) -> Self {
        let rate = |run: &Measured<R>| run.report.records() as f64 / run.seconds;
        let millis = |run: &Measured<R>| -> Vec<f64> {
            let times = run.report.batch_times().iter();
            times.map(|t| t.as_secs_f64() * 1000.0).collect()
        };
        Self {
            name,
            snapshot_rate: rate(snapshot),
            snapshot_ms: millis(snapshot),
            change_rate: rate(changes),
            batch_ms: millis(changes),
            peak_mb: snapshot.peak_mb.max(changes.peak_mb),
            restarts,
        }
    }
}

/// A consumer run's report, its wall time and the process's peak RSS
/// during it.
struct Measured<T> {
    report: T,
    seconds: f64,
    peak_mb: f64,
}

/// One consumer run, timed from its start, its peak RSS measured, and
/// bounded: a reader that never sees the records it was told to wait for
/// must not hang the bench (an hour covers a 10M-row snapshot several times
/// over in an optimised build).
async fn measured<T, E: Into<Box<dyn std::error::Error + Send + Sync>>>(
    run: impl std::future::Future<Output = Result<T, E>>,
) -> BenchResult<Measured<T>> {
    reset_peak_rss();
    let started = Instant::now();
    let report = tokio::time::timeout(Duration::from_hours(1), run)
        .await
        .map_err(|_| "a consumer run outlasted its hour")?
        .map_err(Into::into)?;
    Ok(Measured {
        report,
        seconds: started.elapsed().as_secs_f64(),
        peak_mb: peak_rss_mb(),
    })
}

/// Commit `group`'s offsets at the end of every partition of `topics` as
/// they are now (the careless consumer's auto-commit may lag its reads).
fn commit_group_at_end(broker: u16, group: &str, topics: &[String]) -> BenchResult<()> {
    use rdkafka::TopicPartitionList;
    let client: BaseConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", format!("127.0.0.1:{broker}"))
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .create()?;
    let mut list = TopicPartitionList::new();
    for topic in topics {
        let (_, high) = client
            .fetch_watermarks(topic, 0, Duration::from_secs(5))
            .map_err(|e| format!("{topic}: {e}"))?;
        list.add_partition_offset(topic, 0, rdkafka::Offset::Offset(high))?;
    }
    client.commit(&list, rdkafka::consumer::CommitMode::Sync)?;
    Ok(())
}

/// The consumers' own lines (a line per batch, restarts, the key index's
/// check), on stderr beside the bench's: where a long size run is.
fn progress(line: &str) {
    eprintln!("bench:   {line}");
}

/// Forget the process's peak RSS so far (Linux: `clear_refs` 5).
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The process's peak RSS since the last reset, in MB.
fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))?
                .split_whitespace()
                .nth(1)?
                .parse::<f64>()
                .ok()
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len().max(1) as f64
}

fn percentile(values: &[f64], p: f64) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted
        .get(((sorted.len() as f64 * p).ceil() as usize).saturating_sub(1))
        .copied()
        .unwrap_or(0.0)
}
