//! The correct consumer: exactly-once CDC into Iceberg, holding 0 wrong
//! rows under every fault lossproof can fire. docs/consumers.md sets it
//! beside the careless one; in short:
//!
//! - **offsets travel with the data**: every batch is one catalog
//!   transaction whose snapshots carry the Kafka position it reached
//!   ([`state`]); a start resumes from the lake, never from the consumer
//!   group (the group only gets a mirror, for monitoring and the gate);
//! - **idempotent apply in the source's commit order** ([`position`]): per
//!   key, a change wins only above the position the lake holds, so
//!   restarts, redeliveries, re-sent duplicates and snapshot re-reads are
//!   harmless; deletes are remembered in `_lp_state`, never as rows;
//! - **merge-on-read with position deletes**: a batch appends its keys'
//!   new row versions and a position delete file for the rows they replace;
//!   rows it does not change are never read or rewritten. Which row to
//!   delete, and each key's position, come from a key index on local disk
//!   ([`index`]) that is a checked cache of the lake, so memory does not
//!   grow with the table. pyiceberg 0.12, DuckDB and iceberg-rust read
//!   position deletes;
//! - **schema follows the writer schema** of the newest applied change:
//!   widen, add, drop in place; anything Iceberg cannot express stops the
//!   consumer with the column and both types ([`Fatal`]);
//! - **junk goes to `dead_letters`** in the same commit as the offsets past
//!   it; a registry that does not answer is retried, never dead-lettered;
//! - **conflicts are retried** against the reloaded table, bounded, with
//!   jitter; a batch the lake already covers is dropped.

pub mod index;
pub mod position;
pub mod rebuild;
pub mod state;
pub mod transactions;

use std::collections::HashMap;
use std::time::Duration;

use iceberg::spec::{PrimitiveType, Type};
use lossproof_lang::vocabulary::WorkloadSig;
use lossproof_runtime::Lake;
use lossproof_runtime::change_event::{
    self, Cell, ChangeOp, ChangeRecord, Row, RowChange, Schemas,
};
use lossproof_runtime::lake::{
    Commit, CommitError, SchemaChange, check_promotion, write_data_files, write_position_deletes,
};
use rdkafka::Message as _;
use rdkafka::consumer::{CommitMode, Consumer as _, StreamConsumer};
use rdkafka::message::OwnedMessage;
use rdkafka::{Offset, TopicPartitionList};

use self::position::Position;
use self::state::{
    Applied, LakeState, Partition, STAGING, STATE_FOLD_MIN_DEAD, STATE_TABLE, StateEntry,
    dead_letter_row, has_staged, row_keys, state_batch,
};
use crate::{debezium_type_name, to_arrow};

/// Commit attempts per batch before the consumer gives up (an error, never
/// a skipped batch).
const MAX_ATTEMPTS: u32 = 10;

/// Snapshots each of the consumer's tables keeps: older ones are expired in
/// the consumer's own commits (`Commit::keeping_snapshots`), so a commit's
/// metadata file stays the same size after millions of commits. The key
/// index follows within one snapshot of the lake, far inside this; a reader
/// that time-travels further back needs a longer history (docs/consumers.md).
pub const KEEP_SNAPSHOTS: usize = 100;

/// How the correct consumer runs.
#[derive(Debug, Clone)]
pub struct Config {
    pub kafka: lossproof_runtime::profile::Kafka,
    pub registry: lossproof_runtime::profile::Http,
    pub namespace: String,
    /// Table-name prefix inside the namespace (`--rebuild` writes `_lp_rebuild_*`).
    pub table_prefix: String,
    /// Where the key indexes live on local disk (one file per namespace
    /// and prefix, [`Config::index_path`]): a cache of the lake.
    pub index_dir: std::path::PathBuf,
    pub workload: &'static WorkloadSig,
    /// The change topics, one per workload table, in table order.
    pub topics: Vec<String>,
    /// The connector's transaction topic: commit only at source
    /// transaction boundaries ([`transactions`]); `None`: at batch ends.
    pub transactions: Option<String>,
    /// The group its position is MIRRORED to after each commit (never read).
    pub group: String,
    pub batch_max: usize,
    pub linger: Duration,
    /// Records held at most while a transaction or the initial snapshot is
    /// incomplete ([`transactions::MAX_HELD`]; tests set it low).
    pub max_held: usize,
    /// Stop once this many records were handled (benchmarks).
    pub stop_after: Option<u64>,
    /// Stop once every partition reached the end it had at start (rebuild).
    pub until_end: bool,
    /// Crash on purpose at a step boundary (tests).
    pub failpoint: Option<Failpoint>,
    /// Where it tells the executor of the commits the lake refused.
    pub messages: crate::Messages,
}

impl Config {
    /// The key index file of this namespace and table prefix.
    #[must_use]
    pub fn index_path(&self) -> std::path::PathBuf {
        self.index_dir
            .join(&self.namespace)
            .join(format!("{}keys.redb", self.table_prefix))
    }
}

/// The correct consumer as the executor drives it: `lossproof consumer
/// correct`, its offsets in the snapshots of its `_lp_state` table (the
/// group only gets a mirror), each key's transaction kept there too.
pub struct Correct;

impl crate::Consumer for Correct {
    fn name(&self) -> &'static str {
        "correct"
    }

    /// `set consumer_batch N`.
    fn command(&self, plan: &lossproof_lang::Plan) -> Vec<std::ffi::OsString> {
        let mut args = vec!["consumer".into(), self.name().into()];
        args.extend(crate::consumer::batch_option(plan));
        args
    }

    fn offsets(&self) -> lossproof_lang::plan::OffsetsAt {
        lossproof_lang::plan::OffsetsAt::Lake {
            table: STATE_TABLE.to_owned(),
        }
    }

    fn applied(&self, namespace: &str) -> Option<String> {
        Some(state::applied_sql(namespace))
    }
}

/// A crash at a step boundary: SIGKILL to itself when batch `batch`
/// (counted from 1 in this process) reaches `step`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failpoint {
    pub step: Step,
    pub batch: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Data files written, nothing committed.
    AfterFiles,
    /// The catalog transaction committed, nothing else done.
    AfterCommit,
    /// Just before the group mirror.
    BeforeMirror,
    /// The key index updated as if the batch committed, the catalog
    /// transaction never made: an index ahead of the lake.
    IndexFirst,
}

impl std::str::FromStr for Failpoint {
    type Err = String;
    /// `after-files:N`, `after-commit:N`, `before-mirror:N`, `index-first:N`.
    fn from_str(text: &str) -> Result<Self, String> {
        let (step, batch) = text.split_once(':').unwrap_or((text, "1"));
        let step = match step {
            "after-files" => Step::AfterFiles,
            "after-commit" => Step::AfterCommit,
            "before-mirror" => Step::BeforeMirror,
            "index-first" => Step::IndexFirst,
            other => {
                return Err(format!(
                    "unknown failpoint step `{other}` (after-files, after-commit, before-mirror, \
                     index-first)"
                ));
            }
        };
        let batch = batch
            .parse()
            .map_err(|_| format!("failpoint batch `{batch}` is not a number"))?;
        Ok(Self { step, batch })
    }
}

/// Why the consumer stopped without being asked to.
#[derive(Debug, thiserror::Error)]
pub enum Fatal {
    /// A schema change Iceberg cannot express: restarting cannot help.
    #[error(
        "schema change refused on {table}: column `{column}` is {lake} in the lake, {events} in the events: {reason}"
    )]
    Schema {
        table: String,
        column: String,
        lake: String,
        events: String,
        reason: String,
    },
    /// The lake, Kafka, the registry, a refusal to guess.
    #[error(transparent)]
    Failed(#[from] crate::Error),
    /// Anything else (a commit that kept conflicting, a task that died).
    #[error("{0}")]
    Other(String),
}

/// What one run of the consumer did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Records read, and of those, records of the transaction topic (its
    /// BEGINs and ENDs: read only when committing at transaction
    /// boundaries).
    pub records: u64,
    pub markers: u64,
    pub batches: u64,
    /// Catalog transactions committed.
    pub commits: u64,
    /// Changes applied (newer than the lake's) and skipped (not newer).
    pub applied: u64,
    pub skipped: u64,
    pub dead_letters: u64,
    /// Commits that lost the compare-and-swap and were recomputed.
    pub conflicts: u64,
    /// Each batch's time from its records decoded to its commit and index
    /// update (fold included, when one ran).
    pub batch_times: Vec<Duration>,
    /// From the start to the first batch taken (the lake's state read, the
    /// key index checked, the partitions assigned).
    pub ready: Duration,
    /// Where the time went: Avro decoding, applying (index look-ups,
    /// ordering, building rows), writing Parquet files, committing to the
    /// catalog, updating the key index.
    pub time: Timing,
}

/// Time spent per step, summed over the run (`benches/consumer.rs`
/// prints it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timing {
    pub decode: Duration,
    pub apply: Duration,
    pub write: Duration,
    pub commit: Duration,
    /// Updating the key index after each commit.
    pub index: Duration,
}

/// One record, decoded.
struct Record {
    partition: Partition,
    offset: i64,
    message: OwnedMessage,
    decoded: Result<ChangeRecord, change_event::DecodeError>,
    /// A transaction-topic record's BEGIN or END (its `decoded` is unused).
    marker: Option<change_event::TxMarker>,
}

impl transactions::Gated for Record {
    fn partition(&self) -> &Partition {
        &self.partition
    }

    fn offset(&self) -> i64 {
        self.offset
    }

    fn part(&self) -> transactions::Part<'_> {
        if let Some(marker) = &self.marker {
            return transactions::Part::Marker(marker);
        }
        match &self.decoded {
            Ok(ChangeRecord::Change(change)) if change.snapshot => transactions::Part::Snapshot {
                first: change.snapshot_first,
                last: change.snapshot_last,
                lsn: change.lsn,
            },
            Ok(ChangeRecord::Change(change)) => match &change.transaction {
                Some(tx) => transactions::Part::Change {
                    tx: &tx.id,
                    total_order: tx.total_order,
                    last_commit_lsn: change.last_commit_lsn.or(Some(change.lsn)),
                },
                None => transactions::Part::Free,
            },
            _ => transactions::Part::Free,
        }
    }
}

/// Consume until `stop` turns true (or `stop_after` records, or the end
/// with `until_end`).
#[allow(clippy::too_many_lines)] // start-up checks, then the batch loop: read top to bottom
pub async fn run(
    lake: &Lake,
    config: &Config,
    mut stop: tokio::sync::watch::Receiver<bool>,
    log: &(dyn Fn(&str) + Sync),
) -> Result<Report, Fatal> {
    let started = std::time::Instant::now();
    let (mut state, synced) = LakeState::open(
        lake,
        &config.namespace,
        &config.table_prefix,
        config.workload,
        &config.index_path(),
    )
    .await?;
    log(&format!(
        "correct: {} ({})",
        synced.describe(),
        state.index.path().display()
    ));
    let consumer: StreamConsumer = config
        .kafka
        .client_config()
        .set("group.id", &config.group)
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        // An offset outside the topic is an error, never a silent reset.
        .set("auto.offset.reset", "error")
        // Every partition a little at a time rather than one partition's
        // megabyte first: a transaction's events and its END are in several
        // partitions, and committing at transaction boundaries needs them
        // all (with the default, a consumer restarted on a backlog read
        // one partition's thousands of records before the first END).
        .set("max.partition.fetch.bytes", "65536")
        .create()
        .map_err(crate::Error::kafka("cannot create the Kafka consumer"))?;
    let topics: Vec<&str> = config
        .topics
        .iter()
        .chain(&config.transactions)
        .map(String::as_str)
        .collect();
    let Some(found) = super::careless::partitions(&consumer, &topics, &mut stop, log).await else {
        return Ok(Report::default());
    };
    let mut assignment = TopicPartitionList::new();
    let mut ends: HashMap<Partition, i64> = HashMap::new();
    let mut short_of_end = Vec::new();
    for element in found.elements() {
        let partition = (element.topic().to_owned(), element.partition());
        let (low, high) = consumer
            .fetch_watermarks(&partition.0, partition.1, Duration::from_secs(10))
            .map_err(crate::Error::kafka(format!(
                "watermarks of {}[{}]",
                partition.0, partition.1
            )))?;
        let offset = match state.offsets.get(&partition) {
            Some(&stored) if stored > high => {
                return Err(Fatal::Other(format!(
                    "refusing to start: the lake resumes {}[{}] at offset {stored}, past the topic's end {high}: \
                     the topic was recreated or lost records; rebuild (--rebuild) instead",
                    partition.0, partition.1
                )));
            }
            Some(&stored) if stored < low => {
                return Err(Fatal::Other(format!(
                    "refusing to start: the lake resumes {}[{}] at offset {stored}, below the topic's first \
                     offset {low}: records between were deleted (retention); rebuild (--rebuild) instead",
                    partition.0, partition.1
                )));
            }
            Some(&stored) => Offset::Offset(stored),
            None => Offset::Beginning,
        };
        assignment
            .add_partition_offset(&partition.0, partition.1, offset)
            .map_err(crate::Error::kafka("assign"))?;
        if state.offsets.get(&partition).copied().unwrap_or(low) < high {
            short_of_end.push((partition.0.clone(), partition.1, high));
        }
        ends.insert(partition, high);
    }
    consumer
        .assign(&assignment)
        .map_err(crate::Error::kafka(format!("cannot assign {topics:?}")))?;
    log(&format!(
        "correct: {} partitions of {} topics; resuming from the lake's offsets {}",
        assignment.count(),
        topics.len(),
        describe(&state.offsets)
    ));

    // Two stages: the `fetch` task reads and decodes the next batch while
    // the loop below applies and commits this one.
    let consumer = std::sync::Arc::new(consumer);
    let (events, mut fetched) = tokio::sync::mpsc::channel(2);
    let _fetch = lossproof_runtime::AbortOnDrop(tokio::spawn(fetch(
        consumer.clone(),
        Schemas::new(&config.registry),
        config.transactions.clone(),
        (config.batch_max, config.linger),
        EndTracker(config.until_end.then_some(short_of_end)),
        stop.clone(),
        events,
    )));
    let mut report = Report {
        ready: started.elapsed(),
        ..Report::default()
    };
    let mut gate = config.transactions.as_ref().map(|t| {
        transactions::Gate::<Record>::new(t, &config.topics)
            .holding_at_most(config.max_held)
            .resuming_at(&state.offsets)
    });
    // Released records with no change among them (BEGIN and END of
    // transactions of tables it does not write: heartbeats), applied with
    // the next change rather than committed alone.
    let mut carried: Vec<Record> = Vec::new();
    // When the gate last released something (a long wait is logged).
    let mut waiting_logged = std::time::Instant::now();
    // When the last batch was committed: a batch slower than
    // [`SLOW_BATCH`] from there to its own commit is logged with what the
    // time went to.
    let mut last_done = std::time::Instant::now();
    loop {
        if *stop.borrow()
            || config.stop_after.is_some_and(|n| report.records >= n)
            || (config.until_end
                && !state.staging()
                && ends
                    .iter()
                    .all(|(p, end)| state.offsets.get(p).copied().unwrap_or(0) >= *end))
        {
            break;
        }
        let event = tokio::select! {
            event = fetched.recv() => event,
            _ = stop.changed() => break,
            () = tokio::time::sleep(Duration::from_millis(500)), if config.until_end => continue,
        };
        let (records, decode) = match event {
            None => break,
            Some(Fetch::Log(line)) => {
                log(&line);
                continue;
            }
            Some(Fetch::Fatal(e)) => return Err(e),
            Some(Fetch::Batch { records, decode }) => (records, decode),
        };
        report.records += records.len() as u64;
        report.markers += records.iter().filter(|r| r.marker.is_some()).count() as u64;
        report.time.decode += decode;
        let records = match gate.as_mut() {
            None => records,
            Some(gate) => {
                gate.push(records);
                let mut ready = std::mem::take(&mut carried);
                // Each release can ask for the ends again (a snapshot's
                // next round): at most a few times.
                for _ in 0..4 {
                    if gate.wants_ends() {
                        gate.ends(&partition_ends(&consumer, &ends)?);
                    }
                    ready.extend(gate.ready());
                    if !gate.wants_ends() {
                        break;
                    }
                }
                for why in gate.forced.drain(..) {
                    log(&format!("correct: transaction {why}"));
                }
                if ready.is_empty() && gate.held() > 0 {
                    if waiting_logged.elapsed() > Duration::from_secs(5) {
                        log(&format!(
                            "correct: holding {} records for their transactions: {}",
                            gate.held(),
                            gate.waiting_for()
                        ));
                        waiting_logged = std::time::Instant::now();
                    }
                } else {
                    waiting_logged = std::time::Instant::now();
                }
                // Parts of a snapshot completed: published now, even
                // with nothing else to apply.
                let publish = state.staging() && !gate.in_parts();
                if !config.until_end && !publish && ready.iter().all(|r| r.marker.is_some()) {
                    carried = ready;
                    continue;
                }
                ready
            }
        };
        // Part of a snapshot too large to commit whole: staged on a branch.
        let staged = gate.as_ref().is_some_and(transactions::Gate::in_parts);
        if records.is_empty() && (staged || !state.staging()) {
            continue;
        }
        report.batches += 1;
        let apply_start = std::time::Instant::now();
        let before = report.time;
        apply_batch(
            lake,
            config,
            &mut state,
            &records,
            (report.batches, staged),
            &mut report,
            log,
        )
        .await?;
        report.time.apply += apply_start
            .elapsed()
            .saturating_sub(report.time.write.saturating_sub(before.write))
            .saturating_sub(report.time.commit.saturating_sub(before.commit))
            .saturating_sub(report.time.index.saturating_sub(before.index));
        fold_state(lake, config, &mut state, log).await?;
        report.batch_times.push(apply_start.elapsed());
        if last_done.elapsed() > SLOW_BATCH {
            log(&slow_batch(
                report.batches,
                apply_start.duration_since(last_done),
                &before,
                &report.time,
                decode,
            ));
        }
        last_done = std::time::Instant::now();
        fail_at(config, Step::BeforeMirror, report.batches);
        mirror(&consumer, &state);
    }
    log(&format!(
        "correct: stopping after {} records, {} batches, {} commits ({} applied, {} skipped as not newer, \
         {} dead letters, {} conflicts retried)",
        report.records,
        report.batches,
        report.commits,
        report.applied,
        report.skipped,
        report.dead_letters,
        report.conflicts
    ));
    Ok(report)
}

/// A batch taking longer than this from the previous batch's commit to its
/// own is logged with what the time went to ([`slow_batch`]).
const SLOW_BATCH: Duration = Duration::from_secs(2);

/// The log line of a slow batch: the wait for its records (the fetch stage
/// reading, or the transaction gate holding them), its decoding (on the
/// fetch stage, overlapped with the previous batch), and the steps of its
/// apply (`before` and `after`: the totals around it).
fn slow_batch(
    batch: u64,
    waited: Duration,
    before: &Timing,
    after: &Timing,
    decode: Duration,
) -> String {
    let step = |a: Duration, b: Duration| b.saturating_sub(a).as_secs_f64();
    format!(
        "correct: batch {batch} slow: {:.2}s waiting for its records (fetch or the transaction gate; \
         decoding {:.2}s of it), apply {:.2}s, write {:.2}s, commit {:.2}s, key index {:.2}s",
        waited.as_secs_f64(),
        decode.as_secs_f64(),
        step(before.apply, after.apply),
        step(before.write, after.write),
        step(before.commit, after.commit),
        step(before.index, after.index),
    )
}

/// The end (high watermark) of every partition in `ends` now.
fn partition_ends(
    consumer: &StreamConsumer,
    ends: &HashMap<Partition, i64>,
) -> Result<HashMap<Partition, i64>, Fatal> {
    ends.keys()
        .map(|(topic, partition)| {
            let (_, high) = consumer
                .fetch_watermarks(topic, *partition, Duration::from_secs(10))
                .map_err(crate::Error::kafka(format!(
                    "watermarks of {topic}[{partition}]"
                )))?;
            Ok(((topic.clone(), *partition), high))
        })
        .collect()
}

/// With `until_end`: the partitions (topic, partition, end) the fetch stage
/// has not yet read to the end they had at start (their high watermark);
/// `None` otherwise (batches close by size and linger only).
struct EndTracker(Option<Vec<(String, i32, i64)>>);

impl EndTracker {
    /// Note `message` as read; true once every partition reached its end.
    fn reached(&mut self, message: &OwnedMessage) -> bool {
        let Some(short) = &mut self.0 else {
            return false;
        };
        short.retain(|(topic, partition, end)| {
            !(*partition == message.partition()
                && message.offset() + 1 >= *end
                && topic == message.topic())
        });
        short.is_empty()
    }
}

/// What the fetch task hands the apply loop.
enum Fetch {
    /// A batch read and decoded, and how long decoding took.
    Batch {
        records: Vec<Record>,
        decode: Duration,
    },
    /// A line for the consumer's log.
    Log(String),
    /// Kafka cannot go on (the lake's offsets are outside a topic).
    Fatal(Fatal),
}

/// The fetch stage: read a batch off the topics (closing it early at the
/// topics' end with `until_end`), fetch the writer schemas it names
/// (retrying while the registry does not answer: never dead-lettering
/// because of it), decode it on every core, hand it over; one batch ahead
/// of the apply loop; log lines and a fatal Kafka error are handed over
/// too. Ends on a stop or when the apply loop is gone.
async fn fetch(
    consumer: std::sync::Arc<StreamConsumer>,
    mut schemas: Schemas,
    transactions: Option<String>,
    (batch_max, linger): (usize, Duration),
    mut tracker: EndTracker,
    mut stop: tokio::sync::watch::Receiver<bool>,
    out: tokio::sync::mpsc::Sender<Fetch>,
) {
    let log = |line: String| {
        let out = out.clone();
        async move { out.send(Fetch::Log(line)).await.is_ok() }
    };
    let mut last_kafka_error = String::new();
    loop {
        let first = tokio::select! {
            first = consumer.recv() => first.map(|m| m.detach()),
            _ = stop.changed() => break,
        };
        let messages = match first {
            Ok(first) => {
                super::careless::rest_of_batch(&consumer, first, batch_max, linger, |m| {
                    tracker.reached(m)
                })
                .await
            }
            Err(e) => {
                let e = e.to_string();
                if e.contains("Offset out of range") {
                    let _ = out
                        .send(Fetch::Fatal(Fatal::Other(format!(
                            "kafka: {e}: the lake's offsets are outside the topic"
                        ))))
                        .await;
                    break;
                }
                if e != last_kafka_error {
                    if !log(format!("correct: kafka: {e}; carrying on")).await {
                        break;
                    }
                    last_kafka_error = e;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        last_kafka_error.clear();
        for message in &messages {
            let mut wait = Duration::from_millis(100);
            while let Err(e) = schemas.fetch_for(message.key(), message.payload()).await {
                if !log(format!("correct: registry: {e}; retrying in {wait:?}")).await {
                    return;
                }
                tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    _ = stop.changed() => return,
                }
                wait = (wait * 2).min(Duration::from_secs(5));
            }
        }
        let started = std::time::Instant::now();
        let known = schemas.clone();
        let transactions = transactions.clone();
        let Ok(records) =
            tokio::task::spawn_blocking(move || decode(messages, &known, transactions.as_deref()))
                .await
        else {
            break; // the runtime is shutting down
        };
        let batch = Fetch::Batch {
            records,
            decode: started.elapsed(),
        };
        if out.send(batch).await.is_err() {
            break;
        }
    }
}

/// Decode every record (the writer schemas already fetched), one share
/// per core, order kept; a record of the `transactions` topic as a BEGIN
/// or END.
fn decode(
    messages: Vec<OwnedMessage>,
    schemas: &Schemas,
    transactions: Option<&str>,
) -> Vec<Record> {
    let decode_one = |message: OwnedMessage| {
        let lookup = |id| schemas.lookup(id);
        let (decoded, marker) = if Some(message.topic()) == transactions {
            match change_event::decode_transaction(message.payload(), &lookup) {
                Ok(marker) => (Err(change_event::DecodeError::Empty), Some(marker)),
                Err(e) => (Err(e), None),
            }
        } else {
            (
                change_event::decode_avro(message.key(), message.payload(), &lookup),
                None,
            )
        };
        Record {
            partition: (message.topic().to_owned(), message.partition()),
            offset: message.offset(),
            message,
            decoded,
            marker,
        }
    };
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let share = messages.len().div_ceil(cores).max(256);
    if messages.len() <= share {
        return messages.into_iter().map(decode_one).collect();
    }
    let mut shares = Vec::new();
    let mut rest = messages;
    while rest.len() > share {
        let tail = rest.split_off(share);
        shares.push(rest);
        rest = tail;
    }
    shares.push(rest);
    let decoded: Vec<Vec<Record>> = std::thread::scope(|scope| {
        let handles: Vec<_> = shares
            .into_iter()
            .map(|share| scope.spawn(|| share.into_iter().map(decode_one).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("decoding thread"))
            .collect()
    });
    decoded.into_iter().flatten().collect()
}

/// Apply one batch: compute against the lake as it is, commit in one
/// catalog transaction; on a conflict reload and recompute (bounded).
async fn apply_batch(
    lake: &Lake,
    config: &Config,
    state: &mut LakeState,
    records: &[Record],
    (batch_number, staged): (u64, bool),
    report: &mut Report,
    log: &(dyn Fn(&str) + Sync),
) -> Result<(), Fatal> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let batch = (batch_number, staged);
        match try_batch(lake, config, state, records, batch, report, log).await {
            Ok(()) => return Ok(()),
            Err(Attempt::Conflict(why)) if attempt < MAX_ATTEMPTS => {
                report.conflicts += 1;
                config
                    .messages
                    .send(&crate::Message::Conflict { error: why.clone() });
                let wait = backoff(attempt, batch_number);
                log(&format!(
                    "correct: {why}; reloading and recomputing the batch (attempt {attempt}, after {wait:?})"
                ));
                tokio::time::sleep(wait).await;
                let synced = state
                    .reload(lake, &config.table_prefix, config.workload)
                    .await?;
                log(&format!("correct: {}", synced.describe()));
            }
            Err(Attempt::Reload(_)) if attempt < MAX_ATTEMPTS => {
                state
                    .reload(lake, &config.table_prefix, config.workload)
                    .await?;
            }
            Err(Attempt::Conflict(why)) => {
                config
                    .messages
                    .send(&crate::Message::Conflict { error: why.clone() });
                return Err(give_up(&why));
            }
            Err(Attempt::Reload(why)) => return Err(give_up(&why)),
            Err(Attempt::Fatal(e)) => return Err(e),
        }
    }
}

/// The end of a batch that kept failing: an error, never a skipped batch.
fn give_up(why: &str) -> Fatal {
    Fatal::Other(format!(
        "giving up after {MAX_ATTEMPTS} attempts at one batch: {why}"
    ))
}

/// Exponential backoff with jitter drawn from the batch number and attempt
/// (deterministic for a given stream, spread across attempts).
fn backoff(attempt: u32, batch: u64) -> Duration {
    let base = 20u64 << attempt.min(8);
    let mix = batch
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(u64::from(attempt).wrapping_mul(0xBF58_476D_1CE4_E5B9));
    Duration::from_millis(base + (mix >> 32) % base)
}

enum Attempt {
    Conflict(String),
    /// The consumer changed the lake itself (a schema change): recompute.
    Reload(String),
    Fatal(Fatal),
}

impl From<crate::Error> for Attempt {
    fn from(e: crate::Error) -> Self {
        Self::Fatal(Fatal::Failed(e))
    }
}

impl From<Fatal> for Attempt {
    fn from(e: Fatal) -> Self {
        Self::Fatal(e)
    }
}

/// One change of a table in a batch, with its position and key.
struct Keyed<'a> {
    position: Position,
    key: std::sync::Arc<str>,
    change: &'a RowChange,
}

impl Keyed<'_> {
    /// What the lake holds for the key once this change is applied.
    fn applied(&self) -> Applied {
        Applied {
            position: self.position,
            deleted: self.change.op == ChangeOp::Delete,
            tx_id: self.change.tx_id,
        }
    }
}

/// One attempt at a batch, in four steps, each a function: what is new
/// ([`news`]), each table's new row versions and position deletes
/// ([`merge`]), the bookkeeping files ([`bookkeeping`]), then one catalog
/// transaction, after which the key index follows ([`follow`]).
///
/// `staged`: the batch is a part of a snapshot too large to commit whole,
/// committed on the [`STAGING`] branch, where readers of the lake do not
/// look; the first batch after the last part publishes every table that
/// has the branch, in the same catalog commit (`Commit::publishing`: one
/// snapshot on `main` adds what the branch added, with the batch's own
/// changes if it has any for the table): the whole snapshot becomes
/// visible at once.
async fn try_batch(
    lake: &Lake,
    config: &Config,
    state: &mut LakeState,
    records: &[Record],
    (batch_number, staged): (u64, bool),
    report: &mut Report,
    log: &(dyn Fn(&str) + Sync),
) -> Result<(), Attempt> {
    let publish = !staged && state.staging();
    let news = news(config, state, records).or_else(|| publish.then(|| News::at(state)));
    let Some(mut news) = news else {
        return Ok(()); // the lake already covers the whole batch
    };
    let properties = news.properties();
    let mut merges = Merges::default();
    for t in 0..news.per_table.len() {
        merge(lake, state, &news, t, &mut merges, report, log).await?;
    }
    let Books {
        state_commit,
        dead_files,
    } = bookkeeping(state, &mut merges, &news.dead, report).await?;
    fail_at(config, Step::AfterFiles, batch_number);
    let dead_files = if publish {
        publishing_all(state, &mut merges, &properties);
        dead_files.or_else(|| has_staged(&state.dead_letters).then(Vec::new))
    } else {
        dead_files
    };

    let changed: Vec<usize> = merges.commits.iter().map(|(t, _)| *t).collect();
    let mut all: Vec<(&iceberg::table::Table, Commit)> = std::mem::take(&mut merges.commits)
        .into_iter()
        .map(|(t, c)| (&state.tables[t].table, c))
        .collect();
    let dead_lettered = dead_files.is_some();
    if let Some(dead_files) = dead_files {
        all.push((
            &state.dead_letters,
            Commit::append(dead_files)
                .with_properties(properties.clone())
                .keeping_snapshots(KEEP_SNAPSHOTS),
        ));
    }
    // LAST: where a catalog cannot swap several tables at once (Glue), a
    // crash between swaps leaves `_lp_state` behind the others, and the
    // consumer resumes from its position (state.rs, `reload`).
    all.push((
        &state.state_table,
        state_commit
            .with_properties(properties.clone())
            .keeping_snapshots(KEEP_SNAPSHOTS),
    ));
    let all: Vec<_> = all
        .into_iter()
        .map(|(table, commit)| (table, branched(commit, staged, publish)))
        .collect();
    if config
        .failpoint
        .as_ref()
        .is_some_and(|f| f.step == Step::IndexFirst && f.batch == batch_number)
    {
        // The index as if the commit had landed, at snapshots the lake will
        // never have: an index ahead of the lake (tests).
        let mut writes = merges.index.clone();
        writes.extend(state.followed().iter().map(|f| index::Write::Synced {
            table: f.name.to_owned(),
            uuid: f.table.metadata().uuid().to_string(),
            snapshot: i64::from(u32::MAX) + i64::try_from(batch_number).unwrap_or(0),
        }));
        index::apply(&state.index, writes).await?;
        fail_at(config, Step::IndexFirst, batch_number);
    }
    let started = std::time::Instant::now();
    let committed = lake.commit_all(all).await;
    report.time.commit += started.elapsed();
    let committed = committed.map_err(|e| match e {
        CommitError::Conflict { .. } | CommitError::InputGone { .. } => {
            Attempt::Conflict(e.to_string())
        }
        other => Attempt::Fatal(Fatal::Failed(other.into())),
    })?;
    fail_at(config, Step::AfterCommit, batch_number);

    let started = std::time::Instant::now();
    follow(state, &changed, committed, dead_lettered, merges.index).await?;
    report.time.index += started.elapsed();
    state.offsets = std::mem::take(&mut news.offsets);
    state.epochs = std::mem::take(&mut news.epochs);
    report.commits += 1;
    report.applied += merges.applied;
    report.skipped += merges.skipped;
    report.dead_letters += news.dead.len() as u64;
    log(&format!(
        "correct: batch {batch_number}: {} records -> {} changes applied, {} not newer, \
         {} dead letters{}; offsets {}",
        news.records,
        merges.applied,
        merges.skipped,
        news.dead.len(),
        match (staged, publish) {
            (true, _) => format!(" (a part of the snapshot, staged on {STAGING})"),
            (false, true) => format!(" (the snapshot's parts on {STAGING} published with it)"),
            (false, false) => String::new(),
        },
        describe(&state.offsets)
    ));
    Ok(())
}

/// A publishing batch publishes every table with parts staged: one with no
/// change in the batch gets a commit of its own, with no file.
fn publishing_all(state: &LakeState, merges: &mut Merges, properties: &HashMap<String, String>) {
    for (t, table) in state.tables.iter().enumerate() {
        if has_staged(&table.table) && !merges.commits.iter().any(|(c, _)| *c == t) {
            merges.commits.push((
                t,
                Commit::append(Vec::new())
                    .with_properties(properties.clone())
                    .keeping_snapshots(KEEP_SNAPSHOTS),
            ));
        }
    }
}

/// A batch's commit where it goes: a part staged on [`STAGING`], the batch
/// that publishes the parts, or any other.
fn branched(commit: Commit, staged: bool, publish: bool) -> Commit {
    match (staged, publish) {
        (true, _) => commit.on_branch(STAGING),
        (false, true) => commit.publishing(STAGING),
        (false, false) => commit,
    }
}

/// Step 1 of a batch: what is new.
struct News<'r> {
    /// The offsets and epochs once the batch is applied.
    offsets: HashMap<Partition, i64>,
    epochs: HashMap<Partition, u64>,
    /// Per table, its changes with their positions.
    per_table: Vec<Vec<(Position, &'r RowChange)>>,
    /// Dead letters: what could not be decoded or has no table.
    dead: Vec<Row>,
    /// Records at or past the lake's offsets.
    records: u64,
}

impl News<'_> {
    /// Nothing new: the lake's offsets and epochs.
    fn at(state: &LakeState) -> Self {
        Self {
            offsets: state.offsets.clone(),
            epochs: state.epochs.clone(),
            per_table: vec![Vec::new(); state.tables.len()],
            dead: Vec::new(),
            records: 0,
        }
    }

    /// What every commit of the batch carries: the offsets and epochs
    /// reached.
    fn properties(&self) -> HashMap<String, String> {
        LakeState::properties(&self.offsets, &self.epochs)
    }
}

/// Step 1: the records at or past the lake's offsets, positions computed
/// with each partition's epoch as of that record; `None` when the lake
/// already covers the whole batch.
fn news<'r>(config: &Config, state: &LakeState, records: &'r [Record]) -> Option<News<'r>> {
    let mut news = News::at(state);
    let table_of: HashMap<&str, usize> = config
        .topics
        .iter()
        .enumerate()
        .map(|(i, t)| (t.as_str(), i))
        .collect();
    for record in records {
        let next = news.offsets.get(&record.partition).copied().unwrap_or(0);
        if record.offset < next {
            continue; // already in the lake
        }
        news.records += 1;
        news.offsets
            .insert(record.partition.clone(), record.offset + 1);
        let dead_letter = |why: &str| {
            dead_letter_row(
                &record.partition,
                record.offset,
                record.message.key(),
                record.message.payload(),
                why,
            )
        };
        if record.marker.is_some() {
            continue; // a BEGIN or END: its offset only
        }
        match &record.decoded {
            Ok(ChangeRecord::Tombstone { .. }) => {}
            Ok(ChangeRecord::Change(change)) => {
                let epoch = news.epochs.get(&record.partition).copied().unwrap_or(0);
                let position = Position::of(change, epoch);
                let next_epoch = Position::next_epoch(change, epoch);
                if next_epoch != epoch {
                    news.epochs.insert(record.partition.clone(), next_epoch);
                }
                match table_of.get(record.partition.0.as_str()) {
                    Some(&t) => news.per_table[t].push((position, change)),
                    None => news.dead.push(dead_letter(
                        "a change of a table this consumer does not write",
                    )),
                }
            }
            Err(e) => news.dead.push(dead_letter(&e.to_string())),
        }
    }
    (news.records > 0).then_some(news)
}

/// Step 2's result over every table.
#[derive(Default)]
struct Merges {
    /// Per changed table, its commit (new rows and position deletes).
    commits: Vec<(usize, Commit)>,
    /// `_lp_state` entries of the keys applied, and where each key's
    /// previous entry is (to position-delete it).
    state_rows: Vec<StateEntry>,
    state_deletes: Vec<(String, i64)>,
    /// What the key index learns once the batch is committed.
    index: Vec<index::Write>,
    applied: u64,
    skipped: u64,
}

/// The paths of file numbers, looked up once per batch.
struct Paths<'a> {
    index: &'a index::KeyIndex,
    known: HashMap<u32, String>,
}

impl Paths<'_> {
    fn of(&mut self, location: index::Location) -> Result<(String, i64), crate::Error> {
        let path = if let Some(path) = self.known.get(&location.file) {
            path.clone()
        } else {
            let path = self.index.path_of(location.file)?;
            self.known.insert(location.file, path.clone());
            path
        };
        Ok((path, i64::try_from(location.pos).unwrap_or(i64::MAX)))
    }
}

/// Step 2, for table `t`: the winners (newer than the lake, by the key
/// index), the schema of the newest one, their rows as a new data file and
/// a position delete file for the rows they replace or delete. Rows no
/// change touched are never read or rewritten.
async fn merge(
    lake: &Lake,
    state: &LakeState,
    news: &News<'_>,
    t: usize,
    merges: &mut Merges,
    report: &mut Report,
    log: &(dyn Fn(&str) + Sync),
) -> Result<(), Attempt> {
    let news_of_table = &news.per_table[t];
    if news_of_table.is_empty() {
        return Ok(());
    }
    let keyed = keyed(&state.tables[t], news_of_table)?;
    let entries = lookup(&state.index, &state.tables[t].source_table, &keyed).await?;
    let mut winners: HashMap<&str, &Keyed> = HashMap::new();
    for k in &keyed {
        let stored = entries[&k.key].position();
        let best = winners.get(&*k.key).map(|w| w.position).or(stored);
        if best.is_none_or(|b| k.position > b) {
            winners.insert(&k.key, k);
        }
    }
    merges.applied += winners.len() as u64;
    merges.skipped += (keyed.len() - winners.len()) as u64;
    if winners.is_empty() {
        return Ok(());
    }
    follow_schema(lake, state, t, &winners, log).await?;
    let table = &state.tables[t];
    let name = &table.source_table;
    let metadata = table.table.metadata();
    let history: Vec<&iceberg::spec::Schema> = metadata.schemas_iter().map(AsRef::as_ref).collect();
    // Per writer schema (shared by its changes), how its column names
    // read in the table now.
    let mut renamings: HashMap<*const (String, String), Option<HashMap<String, String>>> =
        HashMap::new();
    let mut paths = Paths {
        index: &state.index,
        known: HashMap::new(),
    };
    let mut deletes = Vec::new();
    let mut upserts: Vec<(&std::sync::Arc<str>, std::borrow::Cow<'_, Row>)> = Vec::new();
    for k in winners.values() {
        let entry = entries[&k.key];
        merges.state_rows.push(StateEntry {
            table: t,
            key: k.key.clone(),
            applied: k.applied(),
        });
        if let Some((_, at)) = entry.applied {
            merges.state_deletes.push(paths.of(at)?);
        }
        if let Some(row) = entry.live_row() {
            deletes.push(paths.of(row)?);
        }
        if k.change.op != ChangeOp::Delete
            && let Some(after) = &k.change.after
        {
            let names = renamings
                .entry(k.change.columns.as_ptr())
                .or_insert_with(|| {
                    renaming(metadata.current_schema(), &history, &k.change.columns)
                });
            let mut row = renamed(after, names.as_ref());
            unchanged_toast(&mut row, k, &keyed, &entry, table, &state.index).await?;
            upserts.push((&k.key, row));
        }
    }
    upserts.sort_by_key(|(k, _)| *k);
    let schema = metadata.current_schema().clone();
    let rows: Vec<&Row> = upserts.iter().map(|(_, r)| r.as_ref()).collect();
    let started = std::time::Instant::now();
    let mut files = if rows.is_empty() {
        Vec::new()
    } else {
        write_data_files(&table.table, vec![to_arrow(&schema, &rows)?])
            .await
            .map_err(crate::Error::iceberg(format!(
                "{}: write",
                table.table.identifier()
            )))?
    };
    let keys = upserts.iter().map(|(k, _)| (*k).clone());
    merges.index.extend(
        located(&files, keys)?.map(|(key, path, pos)| index::Write::Row {
            table: name.clone(),
            key,
            path,
            pos,
        }),
    );
    files.extend(
        write_position_deletes(&table.table, deletes)
            .await
            .map_err(crate::Error::iceberg(format!(
                "{}: position deletes",
                table.table.identifier()
            )))?,
    );
    report.time.write += started.elapsed();
    merges.commits.push((
        t,
        Commit::row_delta(files)
            .with_properties(news.properties())
            .keeping_snapshots(KEEP_SNAPSHOTS),
    ));
    Ok(())
}

/// The key index's entries of `keyed`'s keys (off the runtime's workers).
async fn lookup(
    index: &index::KeyIndex,
    table: &str,
    keyed: &[Keyed<'_>],
) -> Result<HashMap<std::sync::Arc<str>, index::Entry>, crate::Error> {
    let mut keys: Vec<std::sync::Arc<str>> = keyed.iter().map(|k| k.key.clone()).collect();
    keys.sort_unstable();
    keys.dedup();
    let (index, table) = (index.clone(), table.to_owned());
    tokio::task::spawn_blocking(move || {
        let names: Vec<&str> = keys.iter().map(|k| &**k).collect();
        let entries = index.get_many(&table, &names)?;
        Ok(keys.into_iter().zip(entries).collect())
    })
    .await
    .map_err(|e| crate::Error::Index(format!("lookup: {e}")))?
}

/// Each of `keys` (the rows written, in order) with the file and row
/// position it landed at: the rolling writer fills `files` in order.
fn located(
    files: &[iceberg::spec::DataFile],
    keys: impl ExactSizeIterator<Item = std::sync::Arc<str>>,
) -> Result<impl Iterator<Item = (std::sync::Arc<str>, std::sync::Arc<str>, u64)>, crate::Error> {
    let written: u64 = files
        .iter()
        .map(iceberg::spec::DataFile::record_count)
        .sum();
    if written != keys.len() as u64 {
        return Err(crate::Error::Corrupt(format!(
            "{} rows written, {written} in the files",
            keys.len()
        )));
    }
    let slots = files.iter().flat_map(|f| {
        let path: std::sync::Arc<str> = f.file_path().into();
        (0..f.record_count()).map(move |pos| (path.clone(), pos))
    });
    Ok(keys.zip(slots).map(|(key, (path, pos))| (key, path, pos)))
}

/// Step 2's schema: follow the newest winner's writer schema. A change
/// evolves the table and starts the batch over on it.
async fn follow_schema(
    lake: &Lake,
    state: &LakeState,
    t: usize,
    winners: &HashMap<&str, &Keyed<'_>>,
    log: &(dyn Fn(&str) + Sync),
) -> Result<(), Attempt> {
    let Some(newest) = winners
        .values()
        .filter(|k| !k.change.columns.is_empty())
        .max_by_key(|k| k.position)
    else {
        return Ok(());
    };
    let changes = schema_changes(&state.tables[t], &newest.change.columns)?;
    if changes.is_empty() {
        return Ok(());
    }
    let table = &state.tables[t];
    let evolved = lake
        .evolve_schema(&table.table, &changes)
        .await
        .map_err(|e| {
            if e.is_conflict() {
                Attempt::Conflict(e.to_string())
            } else {
                Attempt::Fatal(Fatal::Failed(crate::Error::Schema(e)))
            }
        })?;
    log(&format!(
        "correct: {}: schema evolved: {changes:?}",
        table.table.identifier()
    ));
    Err(Attempt::Reload(format!(
        "{} changed its schema",
        evolved.identifier()
    )))
}

/// Step 3's result: the bookkeeping's commits.
struct Books {
    /// `_lp_state`'s commit (always: it carries the offsets).
    state_commit: Commit,
    /// The dead letters' files, when there are any.
    dead_files: Option<Vec<iceberg::spec::DataFile>>,
}

/// Step 3: `_lp_state` (always: it carries the offsets) — a row per key
/// applied, and a position delete of each such key's previous row — and
/// the dead letters.
async fn bookkeeping(
    state: &LakeState,
    merges: &mut Merges,
    dead: &[Row],
    report: &mut Report,
) -> Result<Books, Attempt> {
    let state_schema = state.state_table.metadata().current_schema().clone();
    let started = std::time::Instant::now();
    let mut state_files = if merges.state_rows.is_empty() {
        Vec::new()
    } else {
        let batch = state_batch(&state_schema, &state.tables, &merges.state_rows)?;
        write_data_files(&state.state_table, vec![batch])
            .await
            .map_err(crate::Error::iceberg(format!("{STATE_TABLE}: write")))?
    };
    let keys = merges.state_rows.iter().map(|e| e.key.clone());
    let entries: Vec<_> = located(&state_files, keys)?.collect();
    for (entry, (key, path, pos)) in merges.state_rows.iter().zip(entries) {
        merges.index.push(index::Write::Applied {
            table: state.tables[entry.table].source_table.clone(),
            key,
            applied: entry.applied,
            path,
            pos,
        });
    }
    state_files.extend(
        write_position_deletes(
            &state.state_table,
            std::mem::take(&mut merges.state_deletes),
        )
        .await
        .map_err(crate::Error::iceberg(format!(
            "{STATE_TABLE}: position deletes"
        )))?,
    );
    report.time.write += started.elapsed();
    let dead_files = if dead.is_empty() {
        None
    } else {
        let schema = state.dead_letters.metadata().current_schema().clone();
        let rows: Vec<&Row> = dead.iter().collect();
        Some(
            write_data_files(&state.dead_letters, vec![to_arrow(&schema, &rows)?])
                .await
                .map_err(crate::Error::iceberg("dead_letters: write"))?,
        )
    };
    Ok(Books {
        state_commit: Commit::row_delta(state_files),
        dead_files,
    })
}

/// Step 4: the lake moved: the tables as committed (in the order
/// committed: the changed tables, the dead letters when there were any,
/// then `_lp_state`), and the key index follows in one durable write that
/// also records the snapshots it now reflects. A crash before that write
/// leaves the index behind the lake, which the next start detects and
/// catches up on ([`index::sync`]).
async fn follow(
    state: &mut LakeState,
    changed: &[usize],
    committed: Vec<iceberg::table::Table>,
    dead_lettered: bool,
    mut writes: Vec<index::Write>,
) -> Result<(), Attempt> {
    let mut committed = committed.into_iter();
    for &t in changed {
        if let Some(table) = committed.next() {
            state.tables[t].table = table;
        }
    }
    if dead_lettered && let Some(t) = committed.next() {
        state.dead_letters = t;
    }
    if let Some(t) = committed.next() {
        state.state_table = t;
    }
    writes.extend(state.followed().iter().map(index::synced_write));
    index::apply(&state.index, writes).await?;
    Ok(())
}

/// Each change with its key rendered the way the lake's rows render theirs.
fn keyed<'a>(
    table: &state::TableState,
    changes: &[(Position, &'a RowChange)],
) -> Result<Vec<Keyed<'a>>, crate::Error> {
    let schema = table.table.metadata().current_schema();
    let keys: Vec<&Row> = changes.iter().map(|(_, c)| &c.key).collect();
    let batch = to_arrow(schema, &keys)?;
    let rendered = row_keys(&batch, &table.key_columns)?;
    Ok(changes
        .iter()
        .zip(rendered)
        .map(|((position, change), key)| Keyed {
            position: *position,
            key: key.into(),
            change,
        })
        .collect())
}

/// The changes that bring `table`'s schema to the writer schema `columns`
/// (Debezium's (name, type) pairs): renamed columns renamed, new columns
/// added, missing ones dropped, types widened; a lake type already wider
/// than the events' is kept (its values fit). Anything else is
/// [`Fatal::Schema`].
fn schema_changes(
    table: &state::TableState,
    columns: &[(String, String)],
) -> Result<Vec<SchemaChange>, Fatal> {
    let schema = table.table.metadata().current_schema();
    let renames = renames(table, columns)?;
    let mut changes: Vec<SchemaChange> = renames
        .iter()
        .map(|(from, to)| SchemaChange::rename(from, to))
        .collect();
    for (name, events) in columns {
        if renames.iter().any(|(_, to)| to == name) {
            continue;
        }
        let wanted = iceberg_type(events);
        match schema.field_by_name(name) {
            None => {
                let Some(t) = wanted else {
                    return Err(schema_fatal(
                        table,
                        name,
                        "absent",
                        events,
                        "no Iceberg type for it",
                    ));
                };
                changes.push(SchemaChange::add_column(name, t));
            }
            Some(field) => {
                if debezium_type_name(&field.field_type) == *events {
                    continue;
                }
                let Some(lake) = field.field_type.as_primitive_type() else {
                    return Err(schema_fatal(
                        table,
                        name,
                        &field.field_type.to_string(),
                        events,
                        "an array's element type cannot change",
                    ));
                };
                let Some(t) = wanted else {
                    return Err(schema_fatal(
                        table,
                        name,
                        &lake.to_string(),
                        events,
                        "no Iceberg type for it",
                    ));
                };
                let (from, to) = (Type::Primitive(lake.clone()), Type::Primitive(t.clone()));
                match check_promotion(&from, &to) {
                    Ok(()) => changes.push(SchemaChange::widen(name, t)),
                    Err(reason) => {
                        if check_promotion(&to, &from).is_err() {
                            return Err(schema_fatal(
                                table,
                                name,
                                &lake.to_string(),
                                events,
                                reason,
                            ));
                        }
                    }
                }
            }
        }
    }
    for field in schema.as_struct().fields() {
        if !columns.iter().any(|(n, _)| n == &field.name)
            && !renames.iter().any(|(from, _)| from == &field.name)
        {
            if table.key_columns.contains(&field.name) {
                return Err(schema_fatal(
                    table,
                    &field.name,
                    &field.field_type.to_string(),
                    "absent",
                    "a key column cannot be dropped",
                ));
            }
            changes.push(SchemaChange::drop_column(&field.name));
        }
    }
    Ok(changes)
}

/// How the columns of a writer schema are named in the table now, for a
/// change written before a rename the table has since made (a batch that
/// spans the rename holds changes of both writer schemas, and only the
/// newest one's drove the evolution): `None` when every column keeps its
/// name. The table's schema history says which field each column was (the
/// newest schema that has every one of the writer's columns), and the
/// field's id its name now; a column whose field was dropped since maps to
/// nothing, so its value is not written.
fn renaming(
    current: &iceberg::spec::Schema,
    history: &[&iceberg::spec::Schema],
    columns: &[(String, String)],
) -> Option<HashMap<String, String>> {
    if columns
        .iter()
        .all(|(name, _)| current.field_by_name(name).is_some())
    {
        return None;
    }
    let writer = history
        .iter()
        .filter(|s| {
            columns
                .iter()
                .all(|(name, _)| s.field_by_name(name).is_some())
        })
        .max_by_key(|s| s.schema_id())?;
    Some(
        columns
            .iter()
            .filter_map(|(name, _)| {
                let id = writer.field_by_name(name)?.id;
                Some((name.clone(), current.field_by_id(id)?.name.clone()))
            })
            .collect(),
    )
}

/// `row` with its columns named as `renaming` says (borrowed when there is
/// nothing to rename).
/// What Debezium sends for a TOAST value the update did not change
/// (`unavailable.value.placeholder`), under REPLICA IDENTITY DEFAULT.
pub const UNCHANGED_TOAST: &str = "__debezium_unavailable_value";

/// Put the real value in place of every [`UNCHANGED_TOAST`] of `row`, the
/// after-image of `winner` (../shared/design/SINKS.md, trap 7): from the
/// newest EARLIER version of the key in this batch that is newer than the
/// lake's row, else from the lake's row itself, which is the version right
/// before. Nothing to take it from (a key the lake never had) stops the
/// consumer: writing the placeholder would be silent damage.
async fn unchanged_toast(
    row: &mut std::borrow::Cow<'_, Row>,
    winner: &Keyed<'_>,
    batch: &[Keyed<'_>],
    entry: &index::Entry,
    table: &state::TableState,
    index: &index::KeyIndex,
) -> Result<(), Fatal> {
    let stored = entry.position();
    let placeholders: Vec<String> = row
        .iter()
        .filter(|(_, cell)| matches!(cell, Cell::Text(t) if t == UNCHANGED_TOAST))
        .map(|(name, _)| name.clone())
        .collect();
    if placeholders.is_empty() {
        return Ok(());
    }
    let mut earlier: Vec<&Keyed<'_>> = batch
        .iter()
        .filter(|k| k.key == winner.key && k.position < winner.position)
        .filter(|k| stored.is_none_or(|s| k.position > s))
        .collect();
    earlier.sort_by_key(|k| std::cmp::Reverse(k.position));
    for column in placeholders {
        let in_batch = earlier
            .iter()
            .take_while(|k| k.change.op != ChangeOp::Delete)
            .filter_map(|k| k.change.after.as_ref()?.get(&column))
            .find(|cell| !matches!(cell, Cell::Text(t) if t == UNCHANGED_TOAST))
            .cloned();
        let value = match in_batch {
            Some(cell) => Some(cell),
            None if earlier.iter().any(|k| k.change.op == ChangeOp::Delete) => None,
            None => match entry.live_row() {
                Some(at) => table.stored_text(index, at, &column).await?.map(Cell::Text),
                None => None,
            },
        };
        let Some(value) = value else {
            return Err(Fatal::Failed(crate::Error::Value(format!(
                "{}: key {} updated with column `{column}` unchanged (TOAST), and no earlier version of the row to take it from",
                table.table.identifier(),
                winner.key
            ))));
        };
        row.to_mut().insert(column, value);
    }
    Ok(())
}

fn renamed<'a>(
    row: &'a Row,
    renaming: Option<&HashMap<String, String>>,
) -> std::borrow::Cow<'a, Row> {
    match renaming {
        None => std::borrow::Cow::Borrowed(row),
        Some(names) => std::borrow::Cow::Owned(
            row.iter()
                .filter_map(|(name, cell)| Some((names.get(name)?.clone(), cell.clone())))
                .collect(),
        ),
    }
}

/// The lake columns the writer schema renamed, as (old name, new name).
///
/// A rename reaches us as a column that disappeared and one that appeared,
/// and looks like a drop plus an add, except that the renamed column keeps
/// its POSITION (../shared/design/SINKS.md, trap 19): a lake column missing
/// from the events whose position the events fill with a column the lake
/// lacks, of the same type, was renamed. (A drop and an add in one go put
/// the new column last; a drop and an add of a column of the same name and
/// type at the same position are indistinguishable from a rename, and
/// harmless to read as one: the values were copied by position.) Renaming a
/// key column is [`Fatal::Schema`]: the lake's keys are matched by name.
fn renames(
    table: &state::TableState,
    columns: &[(String, String)],
) -> Result<Vec<(String, String)>, Fatal> {
    let schema = table.table.metadata().current_schema();
    let fields = schema.as_struct().fields();
    let mut out = Vec::new();
    for (position, (name, events)) in columns.iter().enumerate() {
        let Some(field) = fields.get(position) else {
            continue;
        };
        let appeared = schema.field_by_name(name).is_none();
        let disappeared = !columns.iter().any(|(n, _)| n == &field.name);
        let same_type = debezium_type_name(&field.field_type) == *events;
        if !(appeared && disappeared && same_type) {
            continue;
        }
        if table.key_columns.contains(&field.name) {
            return Err(schema_fatal(
                table,
                &field.name,
                &field.field_type.to_string(),
                events,
                &format!("the key column was renamed to `{name}`: keys are matched by name"),
            ));
        }
        out.push((field.name.clone(), name.clone()));
    }
    Ok(out)
}

fn schema_fatal(
    table: &state::TableState,
    column: &str,
    lake: &str,
    events: &str,
    reason: &str,
) -> Fatal {
    Fatal::Schema {
        table: table.table.identifier().to_string(),
        column: column.to_owned(),
        lake: lake.to_owned(),
        events: events.to_owned(),
        reason: reason.to_owned(),
    }
}

/// The Iceberg type of a Debezium (Avro) type name.
fn iceberg_type(name: &str) -> Option<PrimitiveType> {
    Some(match name {
        "long" => PrimitiveType::Long,
        "int" => PrimitiveType::Int,
        "boolean" => PrimitiveType::Boolean,
        "double" => PrimitiveType::Double,
        "float" => PrimitiveType::Float,
        "string" => PrimitiveType::String,
        other => {
            let (p, s) = other
                .strip_prefix("decimal(")?
                .strip_suffix(')')?
                .split_once(',')?;
            PrimitiveType::Decimal {
                precision: p.trim().parse().ok()?,
                scale: s.trim().parse().ok()?,
            }
        }
    })
}

/// Fold `_lp_state` (rewrite it with its position deletes applied: one row
/// per key) once its dead rows are at least its live rows and at least
/// [`STATE_FOLD_MIN_DEAD`]; its own replace snapshot, carrying the offsets,
/// between batches. The key index then catches up from the folded files.
/// Each fold rewrites at most as many rows as changes were applied since
/// the previous one: a constant cost per change, whatever the number of keys.
async fn fold_state(
    lake: &Lake,
    config: &Config,
    state: &mut LakeState,
    log: &(dyn Fn(&str) + Sync),
) -> Result<(), Fatal> {
    if state.staging() {
        return Ok(()); // folded on main, once the snapshot is published
    }
    let dead = state::summary_count(&state.state_table, "total-position-deletes");
    let live = state::live_rows(&state.state_table);
    if dead < live.max(STATE_FOLD_MIN_DEAD) {
        return Ok(());
    }
    let folded = lake
        .compact_from(&state.state_table)
        .await
        .map_err(|e| Fatal::Other(format!("folding {STATE_TABLE}: {e}")))?;
    let synced = state
        .reload(lake, &config.table_prefix, config.workload)
        .await?;
    log(&format!(
        "correct: folded {}; {}",
        folded.describe(STATE_TABLE),
        synced.describe()
    ));
    Ok(())
}

/// Mirror the lake's offsets to the consumer group (monitoring, the gate).
/// Best effort: the lake is the truth.
fn mirror(consumer: &StreamConsumer, state: &LakeState) {
    let mut list = TopicPartitionList::new();
    for ((topic, partition), offset) in &state.offsets {
        let _ = list.add_partition_offset(topic, *partition, Offset::Offset(*offset));
    }
    if list.count() > 0 {
        let _ = consumer.commit(&list, CommitMode::Async);
    }
}

fn fail_at(config: &Config, step: Step, batch: u64) {
    if config
        .failpoint
        .as_ref()
        .is_some_and(|f| f.step == step && f.batch == batch)
    {
        eprintln!("correct: failpoint {step:?} at batch {batch}: SIGKILL");
        let _ = nix::sys::signal::kill(nix::unistd::Pid::this(), nix::sys::signal::Signal::SIGKILL);
        std::process::abort();
    }
}

fn describe(offsets: &HashMap<Partition, i64>) -> String {
    if offsets.is_empty() {
        return "(none: from the beginning)".to_owned();
    }
    let mut parts: Vec<String> = offsets
        .iter()
        .map(|((t, p), o)| format!("{}[{p}]={o}", t.rsplit('.').next().unwrap_or(t)))
        .collect();
    parts.sort();
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failpoints_parse() {
        assert_eq!(
            "after-commit:3".parse::<Failpoint>().unwrap(),
            Failpoint {
                step: Step::AfterCommit,
                batch: 3
            }
        );
        assert!(
            "during-lunch:1"
                .parse::<Failpoint>()
                .unwrap_err()
                .contains("during-lunch")
        );
    }

    #[test]
    fn debezium_types_map_to_iceberg_and_back() {
        for name in [
            "long",
            "int",
            "boolean",
            "double",
            "string",
            "decimal(14,2)",
        ] {
            assert_eq!(
                debezium_type_name(&Type::Primitive(iceberg_type(name).unwrap())),
                name
            );
        }
        assert_eq!(iceberg_type("bytes"), None);
    }

    /// A change written before a rename, applied after the table made it
    /// (a batch spanning the rename), keeps its value under the new name;
    /// a column dropped since maps to nothing; a column added under an old
    /// name later is told apart by the writer's whole column list.
    #[test]
    fn old_writer_schemas_read_through_renames() {
        use iceberg::spec::{NestedField, Schema};
        use lossproof_runtime::change_event::Cell;
        let schema = |id: i32, fields: &[(i32, &str)]| {
            Schema::builder()
                .with_schema_id(id)
                .with_fields(fields.iter().map(|(field, name)| {
                    NestedField::optional(*field, *name, Type::Primitive(PrimitiveType::String))
                        .into()
                }))
                .build()
                .unwrap()
        };
        let columns = |names: &[&str]| -> Vec<(String, String)> {
            names
                .iter()
                .map(|n| ((*n).to_owned(), "string".to_owned()))
                .collect()
        };
        let v0 = schema(0, &[(1, "id"), (2, "email"), (3, "note")]);
        let v1 = schema(1, &[(1, "id"), (2, "email_address"), (3, "note")]);
        let v2 = schema(2, &[(1, "id"), (2, "email_address"), (4, "email")]);
        let history = [&v0, &v1];
        assert_eq!(
            renaming(&v1, &history, &columns(&["id", "email_address", "note"])),
            None
        );
        let old = renaming(&v1, &history, &columns(&["id", "email", "note"])).unwrap();
        assert_eq!(old["email"], "email_address");
        let row: Row = [
            ("id".to_owned(), Cell::Int(7)),
            ("email".to_owned(), Cell::Text("a@b".into())),
            ("note".to_owned(), Cell::Text("n".into())),
        ]
        .into();
        let row = renamed(&row, Some(&old));
        assert_eq!(row.get("email_address"), Some(&Cell::Text("a@b".into())));
        assert_eq!(row.get("email"), None);
        // `note` dropped, a new `email` added: an old change's `email` is
        // still the renamed field, and its `note` goes nowhere.
        let history = [&v0, &v1, &v2];
        let old = renaming(&v2, &history, &columns(&["id", "email", "note"])).unwrap();
        assert_eq!(old["email"], "email_address");
        assert!(!old.contains_key("note"));
        assert_eq!(
            renaming(&v2, &history, &columns(&["id", "email_address", "email"])),
            None
        );
    }

    #[test]
    fn backoff_grows_and_jitters_within_bounds() {
        for attempt in 1..6 {
            let d = backoff(attempt, 7).as_millis() as u64;
            let base = 20u64 << attempt;
            assert!(d >= base && d < 2 * base, "{attempt}: {d}");
        }
    }
}
