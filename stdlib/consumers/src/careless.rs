//! The careless consumer, built exactly as FINDINGS.md describes the way many
//! CDC pipelines are written — so lossproof can count what that costs:
//!
//! - Kafka offsets are auto-committed on a timer (`enable.auto.commit`,
//!   offsets stored as messages are polled), independent of what was written;
//! - changes are applied in arrival order (the last change of a key in a
//!   batch wins);
//! - each batch is written per table as TWO Iceberg commits: first an
//!   equality delete of every key the batch touches, then an append of the
//!   keys' new versions;
//! - the table schema is fixed: a batch whose events carry a new or widened
//!   column fails to append (after its delete commit already landed);
//! - errors are logged and the consumer carries on with the next batch.
//!
//! Nothing here protects against a SIGKILL at any instant: that is the point.
//! A stop request (SIGTERM/Ctrl-C through `stop`) is honoured between
//! batches: a batch whose first record arrived is collected and written.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use lossproof_runtime::Lake;
use lossproof_runtime::change_event::{self, ChangeOp, ChangeRecord, Row, Schemas};
use lossproof_runtime::lake::{Commit, CommitError, write_data_files, write_equality_deletes};
use rdkafka::Message as _;
use rdkafka::consumer::{Consumer as _, StreamConsumer};
use rdkafka::message::OwnedMessage;
use rdkafka::{Offset, TopicPartitionList};

use crate::error::{Error, Result};
use crate::{LakeTable, debezium_type_name, to_arrow};

/// How the careless consumer runs.
#[derive(Debug, Clone)]
pub struct Config {
    /// `127.0.0.1:{port}` of the broker.
    pub kafka: lossproof_runtime::profile::Kafka,
    pub registry: lossproof_runtime::profile::Http,
    /// The change topics, one per table in `tables`, in the same order.
    pub topics: Vec<String>,
    pub tables: Vec<LakeTable>,
    /// Consumer group (its committed offsets are where a restart resumes).
    pub group: String,
    /// Offsets are committed this often, whatever was written.
    pub auto_commit: Duration,
    /// A batch closes at this many records …
    pub batch_max: usize,
    /// … or this long after its first record.
    pub linger: Duration,
    /// Stop once this many records were handled (benchmarks).
    pub stop_after: Option<u64>,
    /// Where it tells the executor of the commits the lake refused.
    pub messages: crate::Messages,
}

/// What one run of the consumer did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub records: u64,
    pub batches: u64,
    pub commits: u64,
    pub errors: u64,
    /// Each batch's time from its last record read to its last commit.
    pub batch_times: Vec<Duration>,
}

/// Consume until `stop` turns true (or `stop_after` records), logging one
/// line per batch and per error through `log`.
pub async fn run(
    lake: &Lake,
    config: &Config,
    mut stop: tokio::sync::watch::Receiver<bool>,
    log: &(dyn Fn(&str) + Sync),
) -> Result<Report> {
    let consumer: StreamConsumer = config
        .kafka
        .client_config()
        .set("group.id", &config.group)
        .set("enable.auto.commit", "true")
        .set("enable.auto.offset.store", "true")
        .set(
            "auto.commit.interval.ms",
            config.auto_commit.as_millis().to_string(),
        )
        .set("auto.offset.reset", "earliest")
        .create()
        .map_err(Error::kafka("cannot create the Kafka consumer"))?;
    let topics: Vec<&str> = config.topics.iter().map(String::as_str).collect();
    // Every partition assigned directly (one instance reads everything):
    // a restart after a SIGKILL resumes within a second, instead of waiting
    // out the dead member's session in a group rebalance — during which a
    // kill would land on an idle consumer and prove nothing.
    let Some(assignment) = partitions(&consumer, &topics, &mut stop, log).await else {
        return Ok(Report::default());
    };
    consumer
        .assign(&assignment)
        .map_err(Error::kafka(format!("cannot assign {topics:?}")))?;
    log(&format!(
        "careless: group {} on {} partitions of {} topics; resuming from the group's committed offsets",
        config.group,
        assignment.count(),
        topics.len()
    ));
    let mut schemas = Schemas::new(&config.registry);
    let mut report = Report::default();
    let mut last_kafka_error = String::new();
    while !*stop.borrow() {
        if config.stop_after.is_some_and(|n| report.records >= n) {
            break;
        }
        // A stop request is honoured between batches only: a batch whose
        // first record arrived is collected and written to the end.
        let first = tokio::select! {
            first = consumer.recv() => first.map(|m| m.detach()),
            _ = stop.changed() => break,
        };
        let messages = match first {
            Ok(first) => {
                rest_of_batch(
                    &consumer,
                    first,
                    batch_limit(config, report.records),
                    config.linger,
                    |_| false,
                )
                .await
            }
            Err(e) => {
                // Unknown topics before Debezium creates them, broker restarts …
                let e = e.to_string();
                if e != last_kafka_error {
                    log(&format!("careless: kafka: {e}; carrying on"));
                    last_kafka_error = e;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        last_kafka_error.clear();
        report.records += messages.len() as u64;
        report.batches += 1;
        let started = std::time::Instant::now();
        let changes = decode_batch(&messages, config, &mut schemas, &mut report, log).await;
        for (index, changes) in changes {
            let table = &config.tables[index];
            let (commits, errors) = write_batch(lake, config, table, &changes, log).await;
            report.commits += commits;
            report.errors += errors;
        }
        report.batch_times.push(started.elapsed());
    }
    log(&format!(
        "careless: stopping after {} records, {} batches, {} commits, {} errors",
        report.records, report.batches, report.commits, report.errors
    ));
    Ok(report)
}

/// Every partition of `topics`, each to resume at the group's committed
/// offset; waits (until `stop`) for topics Debezium has not created yet.
pub(super) async fn partitions(
    consumer: &StreamConsumer,
    topics: &[&str],
    stop: &mut tokio::sync::watch::Receiver<bool>,
    log: &(dyn Fn(&str) + Sync),
) -> Option<TopicPartitionList> {
    let mut waiting_logged = false;
    loop {
        let mut list = TopicPartitionList::new();
        let mut missing = Vec::new();
        for topic in topics {
            let found = consumer
                .fetch_metadata(Some(topic), Duration::from_secs(2))
                .ok()
                .and_then(|m| {
                    m.topics()
                        .first()
                        .filter(|t| t.error().is_none())
                        .map(|t| t.partitions().len())
                })
                .unwrap_or(0);
            if found == 0 {
                missing.push(*topic);
            }
            for partition in 0..found {
                let partition = i32::try_from(partition).unwrap_or(i32::MAX);
                let _ = list.add_partition_offset(topic, partition, Offset::Stored);
            }
        }
        if missing.is_empty() {
            return Some(list);
        }
        if !waiting_logged {
            log(&format!("waiting for topics {missing:?}"));
            waiting_logged = true;
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(500)) => {}
            _ = stop.changed() => return None,
        }
    }
}

/// Decode a batch, grouped by table index; undecodable records and a
/// registry that does not answer are logged, counted and skipped.
async fn decode_batch(
    messages: &[OwnedMessage],
    config: &Config,
    schemas: &mut Schemas,
    report: &mut Report,
    log: &(dyn Fn(&str) + Sync),
) -> BTreeMap<usize, Vec<change_event::RowChange>> {
    let mut changes: BTreeMap<usize, Vec<change_event::RowChange>> = BTreeMap::new();
    for message in messages {
        // `tables[i]` is the table of `topics[i]`.
        let Some(index) = config.topics.iter().position(|t| t == message.topic()) else {
            continue;
        };
        if let Err(e) = schemas.fetch_for(message.key(), message.payload()).await {
            report.errors += 1;
            log(&format!("careless: registry: {e}; skipping the record"));
            continue;
        }
        match change_event::decode_avro(message.key(), message.payload(), &|id| schemas.lookup(id))
        {
            Ok(ChangeRecord::Change(change)) => changes.entry(index).or_default().push(change),
            Ok(ChangeRecord::Tombstone { .. }) => {}
            Err(e) => {
                report.errors += 1;
                log(&format!(
                    "careless: {}@{}: cannot decode: {e}; skipping the record",
                    message.topic(),
                    message.offset()
                ));
            }
        }
    }
    changes
}

/// Records the next batch may hold: `batch_max`, and with `stop_after`
/// no more than are still wanted (the batch closes at the last one instead
/// of lingering for more).
fn batch_limit(config: &Config, records: u64) -> usize {
    let wanted = config.stop_after.map_or(usize::MAX, |n| {
        usize::try_from(n.saturating_sub(records)).unwrap_or(usize::MAX)
    });
    config.batch_max.min(wanted).max(1)
}

/// `first` and up to `batch_max - 1` more records, closing `linger` after
/// the first arrived, or as soon as `complete` says so of a record read
/// (nothing more to wait for).
pub(super) async fn rest_of_batch(
    consumer: &StreamConsumer,
    first: OwnedMessage,
    batch_max: usize,
    linger: Duration,
    mut complete: impl FnMut(&OwnedMessage) -> bool,
) -> Vec<OwnedMessage> {
    let deadline = Instant::now() + linger;
    let mut done = complete(&first);
    let mut batch = vec![first];
    while !done && batch.len() < batch_max {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, consumer.recv()).await {
            Ok(Ok(message)) => {
                let message = message.detach();
                done = complete(&message);
                batch.push(message);
            }
            Ok(Err(_)) | Err(_) => break,
        }
    }
    batch
}

/// One table's part of a batch: the delete commit, then the append commit.
/// Returns (commits made, errors logged).
async fn write_batch(
    lake: &Lake,
    config: &Config,
    table: &LakeTable,
    changes: &[change_event::RowChange],
    log: &(dyn Fn(&str) + Sync),
) -> (u64, u64) {
    // Arrival order: the last change of each key wins.
    let mut last: BTreeMap<String, (&Row, Option<&Row>)> = BTreeMap::new();
    for change in changes {
        let after = match change.op {
            ChangeOp::Delete => None,
            _ => change.after.as_ref(),
        };
        last.insert(format!("{:?}", change.key), (&change.key, after));
    }
    let keys: Vec<&Row> = last.values().map(|(k, _)| *k).collect();
    let rows: Vec<&Row> = last.values().filter_map(|(_, after)| *after).collect();
    let name = &table.ident;

    // Commit 1: remove the old versions of every key in the batch.
    let result = async {
        let current = lake
            .catalog()
            .load_table(name)
            .await
            .map_err(Error::iceberg(format!("load {name}")))?;
        let deletes = to_arrow(&table.schema, &keys)?;
        let files = write_equality_deletes(&current, table.key_ids.clone(), vec![deletes])
            .await
            .map_err(Error::iceberg("write equality deletes"))?;
        Ok::<_, Error>(lake.commit(&current, Commit::row_delta(files)).await?)
    }
    .await;
    let current = match result {
        Ok(table) => table,
        Err(e) => {
            log(&format!(
                "careless: {name}: delete commit failed: {e}; carrying on"
            ));
            tell_if_refused(config, &e);
            return (0, 1);
        }
    };
    let deleted_in = current.metadata().current_snapshot_id().unwrap_or(-1);
    if rows.is_empty() {
        log(&format!(
            "careless: {name}: {} changes -> deleted {} keys (snapshot {deleted_in})",
            changes.len(),
            keys.len(),
        ));
        return (1, 0);
    }

    // Commit 2: append the new versions, in the table's fixed schema.
    let result = async {
        check_fixed_schema(table, changes)?;
        let batch = to_arrow(&table.schema, &rows)?;
        let files = write_data_files(&current, vec![batch])
            .await
            .map_err(Error::iceberg("write data files"))?;
        Ok::<_, Error>(lake.commit(&current, Commit::append(files)).await?)
    }
    .await;
    match result {
        Ok(appended) => {
            log(&format!(
                "careless: {name}: {} changes -> deleted {} keys (snapshot {deleted_in}), appended {} rows (snapshot {})",
                changes.len(),
                keys.len(),
                rows.len(),
                appended.metadata().current_snapshot_id().unwrap_or(-1)
            ));
            (2, 0)
        }
        Err(e) => {
            log(&format!(
                "careless: {name}: append of {} rows failed after their delete commit: {e}; carrying on",
                rows.len()
            ));
            tell_if_refused(config, &e);
            (1, 1)
        }
    }
}

/// A commit the lake's base check refused is the executor's to count
/// ([`crate::Message::Conflict`]); any other failure is only logged.
fn tell_if_refused(config: &Config, error: &Error) {
    if let Error::Commit(refused @ (CommitError::Conflict { .. } | CommitError::InputGone { .. })) =
        error
    {
        config.messages.send(&crate::Message::Conflict {
            error: refused.to_string(),
        });
    }
}

/// Every event's row schema must be the table's, column for column.
fn check_fixed_schema(table: &LakeTable, changes: &[change_event::RowChange]) -> Result<()> {
    let expected: BTreeMap<&str, String> = table
        .schema
        .as_struct()
        .fields()
        .iter()
        .map(|f| (f.name.as_str(), debezium_type_name(&f.field_type)))
        .collect();
    for change in changes.iter().filter(|c| !c.columns.is_empty()) {
        let got: BTreeMap<&str, &str> = change
            .columns
            .iter()
            .map(|(n, t)| (n.as_str(), t.as_str()))
            .collect();
        for (column, kind) in &got {
            match expected.get(column) {
                None => {
                    return Err(Error::SchemaChanged(format!(
                        "the events have a new column `{column}` ({kind})"
                    )));
                }
                Some(want) if want != kind => {
                    return Err(Error::SchemaChanged(format!(
                        "column `{column}` is {kind} in the events, {want} in the table"
                    )));
                }
                Some(_) => {}
            }
        }
        if let Some(column) = expected.keys().find(|c| !got.contains_key(*c)) {
            return Err(Error::SchemaChanged(format!(
                "the events no longer have column `{column}`"
            )));
        }
    }
    Ok(())
}

/// The careless consumer as the executor drives it: `lossproof consumer
/// careless`, its offsets in its group (auto-committed).
pub struct Careless;

impl crate::Consumer for Careless {
    fn name(&self) -> &'static str {
        "careless"
    }

    /// `set consumer_batch N` and `set autocommit_interval D`.
    fn command(&self, plan: &lossproof_lang::Plan) -> Vec<std::ffi::OsString> {
        let mut args = vec!["consumer".into(), self.name().into()];
        args.extend(crate::consumer::batch_option(plan));
        if let Some(lossproof_lang::plan::SettingValue::DurationMs(ms)) =
            plan.settings.get("autocommit_interval")
        {
            args.extend(["--auto-commit-ms".into(), ms.to_string().into()]);
        }
        args
    }

    fn offsets(&self) -> lossproof_lang::plan::OffsetsAt {
        lossproof_lang::plan::OffsetsAt::Group
    }
}
