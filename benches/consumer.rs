//! `cargo bench --profile dev --bench consumer`: how fast the correct and the careless
//! consumers apply the same real change stream (records/s from topic to
//! committed Iceberg, each into a namespace of its own), next to how fast a
//! bare rdkafka consumer reads the same topics. Figures, not a test: the
//! machines are shared and noisy; use a release build.

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
}

fn main() -> std::process::ExitCode {
    let args = <Args as clap::Parser>::parse_from(common::args());
    common::exit(consumers(
        &args.state,
        args.seconds,
        args.rate,
        &args.batches,
    ))
}

fn consumers(state: &Path, seconds: u64, rate: u64, batches: &[usize]) -> BenchResult<bool> {
    let (stack, ports) = common::running(state)?;
    let runtime = common::runtime()?;
    runtime.block_on(async {
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
            false,
            1,
            Duration::from_mins(1),
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
    let scenario =
        format!("workload orders rate {rate}/s connections 4 customers 200\nunder load 1s < >");
    let plan =
        lossproof_lang::Analyzer::new(&lossproof_vocabulary::Stdlib, &lossproof_lang::NoIncludes)
            .analyze("bench.lp", &scenario)
            .plan
            .ok_or("the bench scenario does not analyse")?
            .workload;
    eprintln!("bench: workload orders at {rate}/s for {seconds}s (seed 1) …");
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

/// Both consumers over the same records at one batch size.
struct Pair {
    correct: correct::Report,
    correct_secs: f64,
    careless: careless::Report,
    careless_secs: f64,
    complete: bool,
}

impl Pair {
    fn correct_rate(&self) -> f64 {
        self.correct.records as f64 / self.correct_secs
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
        index_dir: std::env::temp_dir().join(format!("lossproof-bench-index-{}", std::process::id())),
        workload: workload_sig,
        topics: topics.to_vec(),
        group: format!("lossproof-bench-correct-{tag}"),
        batch_max: batch,
        linger: Duration::from_millis(200),
        stop_after: None,
        until_end: true,
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
        complete: careless.errors == 0 && right.records == total && careless.records == total,
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
    let deadline = started + Duration::from_mins(5);
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
