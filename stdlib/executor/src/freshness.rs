//! Freshness: how far behind the source each consumer's lake is, as a plain
//! Iceberg reader sees it (docs/run.md, "Freshness").
//!
//! - The [`Probe`] inserts one row into the seed's probe table
//!   (`lossproof_vocabulary::workloads::PROBE_TABLE`) every
//!   [`PROBE_EVERY`], and notes when the source acknowledged each commit
//!   (on the seed's clock). The connector captures the table like any
//!   other; every consumer writes it to its lake like any other.
//! - The [`Follower`] loads each consumer's probe table from the catalog
//!   every [`FOLLOW_EVERY`]; for each snapshot committed since it last
//!   looked, it reads only the data files that snapshot added, and keeps
//!   the newest beat the lake shows and when it first saw it.
//! - [`lags`]: a reader at time `t` sees the snapshot current at `t`; its
//!   lag is `t` minus the commit time of the newest beat that snapshot
//!   holds, sampled every [`SAMPLE_EVERY_MS`] while the probe beats.
//!   Between snapshots the lag grows; a commit brings it down.
//!
//! The probe beats only during load phases: a `quiet` phase is a source
//! nobody writes to (maintenance scheduled there must not race writes it
//! was not meant to). A lake that holds every beat written before a quiet
//! phase is not charged the quiet time: its lag starts again from the next
//! load phase's start.
//!
//! A second method, for a consumer that keeps its Kafka offsets in its
//! lake's snapshots (the correct consumer): the offset a snapshot of its
//! probe table carries for the probe's topic names the last record it
//! applied; the follower reads that topic itself ([`ProbeTopic`]) and
//! charges the snapshot the newest beat at or before that record. Both
//! methods read the same snapshots and must agree (a test checks it).
//!
//! Resolution: a beat is at most [`PROBE_EVERY`] older than the newest
//! source transaction, and a snapshot is seen at most [`FOLLOW_EVERY`]
//! after its commit, so a lag is measured up to about 200 ms high, never
//! low. Works for any consumer, whatever it keeps (no offsets needed): the
//! probe measures the consumer's pipeline as a whole, through its probe
//! table.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use arrow_array::{Array as _, Int64Array, StringArray};
use iceberg::spec::DataContentType;
use iceberg::table::Table;
use lossproof_runtime::change_event::{self, Cell, ChangeRecord, Schemas};
use lossproof_runtime::profile::{Kafka, Source};
use lossproof_runtime::{AbortOnDrop, Lake};
use rdkafka::consumer::{Consumer as _, StreamConsumer};
use rdkafka::message::Message as _;
use rdkafka::{Offset, TopicPartitionList};
use serde::{Deserialize, Serialize};

use crate::run::millis;
use crate::snapshots::{FINISH_LIMIT, LakeFollower, LakeLog, LakeTables};

/// How often the probe writes a beat.
pub const PROBE_EVERY: Duration = Duration::from_millis(100);
/// How often the follower looks at each consumer's probe table.
pub const FOLLOW_EVERY: Duration = Duration::from_millis(100);
/// The lag is sampled this often (ms of the seed's clock).
pub const SAMPLE_EVERY_MS: u64 = 100;
/// How long one write of the probe, or one look of the follower at one
/// consumer, may take.
const STEP_LIMIT: Duration = Duration::from_secs(5);

/// What the probe wrote.
#[derive(Debug, Clone, Default)]
pub struct Beats {
    /// When each beat committed, in ms of the seed's clock: `commits[n - 1]`
    /// for beat `n`; `None` when its commit was not acknowledged (the write
    /// failed or timed out: it may or may not be in the source).
    pub commits: Vec<Option<u64>>,
    /// The stretches it beat in (the load phases), in order.
    pub windows: Vec<Window>,
}

/// A stretch of the seed in which the probe beat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub start_ms: u64,
    /// `u64::MAX` while it lasts.
    pub end_ms: u64,
    /// The first beat written in it.
    pub first: u64,
}

/// The probe's shared state: what it wrote, and whether it beats now.
#[derive(Default)]
struct State {
    beats: Beats,
    beating: bool,
}

/// The probe's writer, running on a task of its own until [`Probe::stop`];
/// it beats between [`Probe::resume`] and [`Probe::pause`].
pub struct Probe {
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    clock: Instant,
    task: AbortOnDrop<()>,
}

impl Probe {
    /// Start the writer of `database`'s probe table on a connection of the
    /// probe's own (re-opened after a failure, so a restarted source gets
    /// beats again), timed on `clock`; it beats once resumed.
    #[must_use]
    pub fn start(source: Source, database: String, clock: Instant) -> Self {
        let state = Arc::new(Mutex::new(State::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let task = tokio::spawn(write_beats(
            source,
            database,
            clock,
            state.clone(),
            stop.clone(),
        ));
        Self {
            state,
            stop,
            clock,
            task: AbortOnDrop(task),
        }
    }

    /// Beat from now on (a load phase starts).
    pub fn resume(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if !state.beating {
            state.beating = true;
            let first = state.beats.commits.len() as u64 + 1;
            state.beats.windows.push(Window {
                start_ms: millis(self.clock.elapsed()),
                end_ms: u64::MAX,
                first,
            });
        }
    }

    /// Stop beating (a load phase ended).
    pub fn pause(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.beating = false;
        let now = millis(self.clock.elapsed());
        if let Some(window) = state.beats.windows.last_mut() {
            window.end_ms = window.end_ms.min(now);
        }
    }

    /// Stop after the write in hand (waiting at most [`STEP_LIMIT`]); what
    /// it wrote.
    pub async fn stop(mut self) -> Beats {
        self.pause();
        self.stop.store(true, Ordering::Relaxed);
        let _ = tokio::time::timeout(STEP_LIMIT * 2, &mut self.task.0).await;
        std::mem::take(
            &mut self
                .state
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .beats,
        )
    }
}

async fn write_beats(
    source: Source,
    database: String,
    clock: Instant,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
) {
    let insert = format!(
        "INSERT INTO {} (beat, at_ms) VALUES ($1, $2)",
        lossproof_vocabulary::workloads::PROBE_TABLE
    );
    let mut ticks = tokio::time::interval(PROBE_EVERY);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut client: Option<tokio_postgres::Client> = None;
    while !stop.load(Ordering::Relaxed) {
        ticks.tick().await;
        let beat = {
            let state = state.lock().unwrap_or_else(PoisonError::into_inner);
            if !state.beating {
                continue;
            }
            i64::try_from(state.beats.commits.len() + 1).unwrap_or(i64::MAX)
        };
        if client
            .as_ref()
            .is_none_or(tokio_postgres::Client::is_closed)
        {
            client = tokio::time::timeout(STEP_LIMIT, source.connect(&database))
                .await
                .ok()
                .and_then(Result::ok);
        }
        let Some(open) = &client else { continue };
        let at_ms = i64::try_from(millis(clock.elapsed())).unwrap_or(i64::MAX);
        let written =
            tokio::time::timeout(STEP_LIMIT, open.execute(&insert, &[&beat, &at_ms])).await;
        let committed = if let Ok(Ok(_)) = written {
            Some(millis(clock.elapsed()))
        } else {
            client = None;
            None
        };
        state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .beats
            .commits
            .push(committed);
    }
}

/// Where one consumer's probe table is, and how its rows are stored.
#[derive(Debug, Clone)]
pub struct ProbeTable {
    pub consumer: String,
    pub namespace: String,
    pub table: String,
    /// A change log (one row per change event, the row in `after` as JSON)
    /// rather than a mirror of the source's rows.
    pub changelog: bool,
    /// The consumer keeps its Kafka offsets in its snapshots' summaries
    /// (`lossproof.offset.<topic>.<partition>`): measured by offsets too.
    pub offsets: bool,
}

/// What the follower saw of one consumer's probe table.
#[derive(Debug, Clone, Default)]
pub struct Followed {
    /// Each time the newest beat the lake showed went up: (ms of the seed's
    /// clock when the follower saw it, the beat).
    pub visible: Vec<(u64, u64)>,
    /// The same by the offsets the snapshots carry (consumers that keep
    /// them), else empty.
    pub by_offsets: Vec<(u64, u64)>,
    /// Snapshots of the probe table the follower read.
    pub snapshots: u64,
    /// Looks that failed (a table being replaced, a file being written), and
    /// the last reason.
    pub failed: u64,
    pub last_error: Option<String>,
}

/// The follower, running until [`Follower::stop`]: a task reads every
/// consumer's probe table (freshness); a thread of its own, at a lower CPU
/// priority, follows every snapshot of each consumer lake
/// ([`crate::snapshots`]), so that reading large snapshots never delays the
/// probe's measure nor takes the CPU the pipeline under test needs (its
/// cost shows as the follower's last look, after the consumers stopped).
pub struct Follower {
    stop: Arc<AtomicBool>,
    task: AbortOnDrop<Vec<Followed>>,
    lakes: LakeFollowers,
}

/// The followers of every consumer lake's snapshots, on a thread of their
/// own at a low priority ([`LAKES_NICE`]). Started before the probe where
/// the seed preloads its source, so that a lake's first states (a large
/// snapshot, read whole) are read while the consumers load it, not behind
/// the load's commits.
pub struct LakeFollowers {
    stop: Arc<AtomicBool>,
    /// When they started following (their `seen_ms` count from here).
    clock: Instant,
    /// The consumers whose lakes are followed, and the thread's result.
    lakes: Vec<String>,
    logs: Option<tokio::sync::oneshot::Receiver<std::io::Result<Vec<LakeLog>>>>,
    /// How far each lake's follower is.
    looks: Vec<Arc<crate::snapshots::Looks>>,
}

/// The lake followers' thread's `nice`: the lowest, like maintenance's
/// (at 10, a debug build's follower still took enough CPU to put both
/// consumers 2-3 s further behind in `scenarios/freshness.lp`); 0 while a
/// follower is behind ([`crate::niced::CatchUp`]).
const LAKES_NICE: u8 = 19;

impl LakeFollowers {
    /// Follow every snapshot of each of `lakes` from now on (each with a
    /// catalog client of its own, opened on the followers' thread from
    /// `endpoints`).
    #[must_use]
    pub fn start(endpoints: &lossproof_runtime::Endpoints, lakes: Vec<LakeTables>) -> Self {
        let clock = Instant::now();
        let stop = Arc::new(AtomicBool::new(false));
        let consumers = lakes.iter().map(|l| l.consumer.clone()).collect();
        let endpoints = endpoints.clone();
        let stopping = stop.clone();
        let catch_up = crate::niced::CatchUp::new("lossproof-snapshots", LAKES_NICE);
        let looks: Vec<Arc<crate::snapshots::Looks>> =
            lakes.iter().map(|_| Arc::default()).collect();
        let looking = looks.clone();
        let logs = crate::niced::spawn("lossproof-snapshots", LAKES_NICE, async move {
            let each = lakes.into_iter().zip(looking).enumerate();
            futures_util::future::join_all(each.map(|(task, (tables, looks))| {
                let (endpoints, stop) = (&endpoints, stopping.clone());
                let catch_up = catch_up.clone();
                async move {
                    let consumer = tables.consumer.clone();
                    match endpoints.open_lake().await {
                        Ok(lake) => {
                            let follower = LakeFollower::new(tables).catching_up(catch_up, task);
                            crate::snapshots::follow(lake, follower, clock, (stop, looks)).await
                        }
                        Err(e) => {
                            // Nothing to wait for.
                            looks.idle.store(u64::MAX, Ordering::Relaxed);
                            LakeLog {
                                consumer,
                                failed: Some(format!("the start: the lake did not open: {e}")),
                                ..LakeLog::default()
                            }
                        }
                    }
                }
            }))
            .await
        })
        .ok();
        Self {
            stop,
            clock,
            lakes: consumers,
            logs,
            looks,
        }
    }

    /// Wait (at most `limit`) until every lake's follower has read what its
    /// lake held when this was called: a look begun after that found
    /// nothing new. How long it took, or `None` at the limit.
    pub async fn read_up(&self, limit: Duration) -> Option<Duration> {
        let started = Instant::now();
        // The look in hand may have begun before: the one after it did not.
        let after: Vec<u64> = self
            .looks
            .iter()
            .map(|l| l.done.load(Ordering::Relaxed) + 2)
            .collect();
        while started.elapsed() < limit {
            if self
                .looks
                .iter()
                .zip(&after)
                .all(|(l, after)| l.idle.load(Ordering::Relaxed) >= *after)
            {
                return Some(started.elapsed());
            }
            tokio::time::sleep(FOLLOW_EVERY).await;
        }
        None
    }

    /// Stop after one more look (call this once the consumers have
    /// stopped): what each follower read, its times (`seen_ms`) on the
    /// seed's `clock` (a snapshot read before that clock started at 0); a
    /// lake whose follower did not finish within [`FINISH_LIMIT`] says so.
    pub async fn stop(&mut self, clock: Instant) -> Vec<LakeLog> {
        self.stop.store(true, Ordering::Relaxed);
        let logs = match self.logs.take() {
            None => Err("the start: the followers' thread did not run".to_owned()),
            Some(logs) => match tokio::time::timeout(FINISH_LIMIT, logs).await {
                Ok(Ok(Ok(logs))) => Ok(logs),
                Ok(_) => Err("the end: the followers' thread failed".to_owned()),
                Err(_) => Err(format!(
                    "the end: its follower did not finish within {FINISH_LIMIT:?}"
                )),
            },
        };
        let mut logs = logs.unwrap_or_else(|why| {
            self.lakes
                .iter()
                .map(|consumer| LakeLog {
                    consumer: consumer.clone(),
                    failed: Some(why.clone()),
                    ..LakeLog::default()
                })
                .collect()
        });
        let before = millis(clock.saturating_duration_since(self.clock));
        for seen in logs.iter_mut().flat_map(|log| log.seen.iter_mut()) {
            seen.seen_ms = seen.seen_ms.saturating_sub(before);
        }
        logs
    }
}

impl Drop for LakeFollowers {
    /// The followers' thread ends at its next look (a seed that ended on an
    /// error never called [`LakeFollowers::stop`]).
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl Follower {
    /// Start following `tables` (one per consumer) in `lake`, timed on
    /// `clock`; `topic` is the probe's topic, read when a table is measured
    /// by offsets too; beside `lakes`, following every consumer lake.
    #[must_use]
    pub fn start(
        lake: Lake,
        tables: Vec<ProbeTable>,
        topic: ProbeTopic,
        lakes: LakeFollowers,
        clock: Instant,
    ) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let task = tokio::spawn(follow(lake, tables, topic, clock, stop.clone()));
        Self {
            stop,
            task: AbortOnDrop(task),
            lakes,
        }
    }

    /// Stop after the look in hand (the lakes' followers after one more
    /// look: call this once the consumers have stopped); what it saw of the
    /// probe tables, in the order of its tables (nothing seen, if it could
    /// not finish within a few seconds), and of each lake, timed on `clock`
    /// ([`LakeFollowers::stop`]).
    pub async fn stop(mut self, clock: Instant) -> (Option<Vec<Followed>>, Vec<LakeLog>) {
        self.stop.store(true, Ordering::Relaxed);
        let probes = tokio::time::timeout(STEP_LIMIT * 2, &mut self.task.0)
            .await
            .ok()
            .and_then(Result::ok);
        (probes, self.lakes.stop(clock).await)
    }
}

impl Drop for Follower {
    /// The followers' thread ends at its next look (a seed that ended on an
    /// error never called [`Follower::stop`]).
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// One consumer's probe table as far as the follower has read it.
struct Cursor {
    at: lossproof_runtime::lake::history::Cursor,
    newest: u64,
    /// The newest beat at or before the offsets the current snapshot
    /// carries.
    by_offsets: u64,
}

async fn follow(
    lake: Lake,
    tables: Vec<ProbeTable>,
    mut topic: ProbeTopic,
    clock: Instant,
    stop: Arc<AtomicBool>,
) -> Vec<Followed> {
    let mut followed = vec![Followed::default(); tables.len()];
    let mut cursors: Vec<Cursor> = tables
        .iter()
        .map(|_| Cursor {
            at: lossproof_runtime::lake::history::Cursor::default(),
            newest: 0,
            by_offsets: 0,
        })
        .collect();
    let mut ticks = tokio::time::interval(FOLLOW_EVERY);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while !stop.load(Ordering::Relaxed) {
        ticks.tick().await;
        for ((probe, cursor), seen) in tables.iter().zip(&mut cursors).zip(&mut followed) {
            let looked =
                tokio::time::timeout(STEP_LIMIT, look(&lake, probe, cursor, &mut topic, clock))
                    .await;
            match looked {
                Ok(Ok(None)) => {}
                Ok(Ok(Some((at_ms, snapshots)))) => {
                    seen.snapshots += snapshots;
                    if seen.visible.last().is_none_or(|(_, b)| *b < cursor.newest) {
                        seen.visible.push((at_ms, cursor.newest));
                    }
                    if probe.offsets
                        && seen
                            .by_offsets
                            .last()
                            .is_none_or(|(_, b)| *b < cursor.by_offsets)
                    {
                        seen.by_offsets.push((at_ms, cursor.by_offsets));
                    }
                }
                Ok(Err(e)) => {
                    seen.failed += 1;
                    seen.last_error = Some(e);
                }
                Err(_) => {
                    seen.failed += 1;
                    seen.last_error = Some(format!("a look took over {STEP_LIMIT:?}"));
                }
            }
        }
    }
    followed
}

/// Look at one probe table: `None` when it has no new snapshot (or does not
/// exist yet), else when it was loaded and how many snapshots were read.
async fn look(
    lake: &Lake,
    probe: &ProbeTable,
    cursor: &mut Cursor,
    topic: &mut ProbeTopic,
    clock: Instant,
) -> Result<Option<(u64, u64)>, String> {
    let ident = lossproof_runtime::lake::ident(&probe.namespace, &probe.table);
    let locations = lake
        .metadata_locations(&probe.namespace)
        .await
        .ok()
        .flatten();
    let Some(table) = cursor
        .at
        .load(lake, &probe.namespace, &probe.table, locations.as_ref())
        .await?
    else {
        return Ok(None);
    };
    let at_ms = millis(clock.elapsed());
    let metadata = table.metadata();
    let uuid = metadata.uuid().to_string();
    if cursor.at.uuid.as_deref() != Some(uuid.as_str()) {
        // A new or recreated table: read it from its first snapshot.
        cursor.at.uuid = Some(uuid);
        cursor.at.seen = -1;
    }
    let current = metadata.current_snapshot_id().unwrap_or(-1);
    if current == cursor.at.seen {
        return Ok(None);
    }
    let (files, snapshots) = match lossproof_runtime::lake::history::since(&table, cursor.at.seen) {
        Some(snapshots) => {
            let mut files = Vec::new();
            for snapshot in &snapshots {
                files.extend(
                    lossproof_runtime::lake::history::added_files(&table, *snapshot)
                        .await
                        .map_err(|e| format!("{ident}: {e}"))?
                        .into_iter()
                        .filter(|(_, content)| *content == DataContentType::Data)
                        .map(|(path, _)| path),
                );
            }
            (files, snapshots.len() as u64)
        }
        // The snapshot last read is gone from the history (expired, rolled
        // back): every live file, once.
        None => (
            lossproof_runtime::lake::live_files(&table)
                .await
                .map_err(|e| format!("{ident}: {e}"))?
                .into_iter()
                .filter(|f| f.content == DataContentType::Data)
                .map(|f| f.path)
                .collect(),
            1,
        ),
    };
    for path in &files {
        let newest = newest_beat(&table, path, probe.changelog)
            .await
            .map_err(|e| format!("{ident}: {path}: {e}"))?;
        cursor.newest = cursor.newest.max(newest);
    }
    if probe.offsets {
        let stored: Vec<(i32, i64)> = lossproof_runtime::reconcile::gate::stored_offsets(&table)
            .into_iter()
            .filter(|((t, _), _)| *t == topic.name)
            .map(|((_, partition), next)| (partition, next))
            .collect();
        cursor.by_offsets = cursor
            .by_offsets
            .max(topic.newest_beat_before(&stored).await?);
    }
    cursor.at.seen = current;
    Ok(Some((at_ms, snapshots)))
}

/// The probe's topic as the follower reads it: the newest beat at or
/// before each record, per partition.
pub struct ProbeTopic {
    name: String,
    /// `None` when no consumer is measured by offsets (nothing is read).
    consumer: Option<StreamConsumer>,
    schemas: Schemas,
    /// Per partition: (offset, the newest beat up to that record), in
    /// offset order.
    read: BTreeMap<i32, Vec<(i64, u64)>>,
}

impl ProbeTopic {
    /// Topic `name` of `kafka`, read from the start of each of its
    /// `partitions`; `None`: no consumer is measured by offsets, nothing is
    /// read.
    ///
    /// # Errors
    /// When the Kafka client cannot be created or assigned.
    pub fn open(
        kafka: &Kafka,
        registry: &lossproof_runtime::profile::Http,
        name: &str,
        partitions: Option<Vec<i32>>,
    ) -> Result<Self, String> {
        let consumer = if let Some(partitions) = partitions {
            let consumer: StreamConsumer = kafka
                .client_config()
                .set("group.id", format!("lossproof-freshness-{name}"))
                .set("enable.auto.commit", "false")
                .create()
                .map_err(|e| format!("the freshness follower's Kafka client: {e}"))?;
            let mut assignment = TopicPartitionList::new();
            for p in &partitions {
                assignment
                    .add_partition_offset(name, *p, Offset::Beginning)
                    .map_err(|e| e.to_string())?;
            }
            consumer
                .assign(&assignment)
                .map_err(|e| format!("assign {name}: {e}"))?;
            Some(consumer)
        } else {
            None
        };
        Ok(Self {
            name: name.to_owned(),
            consumer,
            schemas: Schemas::new(registry),
            read: BTreeMap::new(),
        })
    }

    /// The newest beat in the records before each partition's `next`
    /// offset, reading the topic as far as needed (at most [`STEP_LIMIT`]).
    async fn newest_beat_before(&mut self, next: &[(i32, i64)]) -> Result<u64, String> {
        let deadline = Instant::now() + STEP_LIMIT;
        let behind = |read: &BTreeMap<i32, Vec<(i64, u64)>>| {
            next.iter().any(|(p, n)| {
                *n > 0
                    && read
                        .get(p)
                        .and_then(|r| r.last())
                        .is_none_or(|(o, _)| *o < n - 1)
            })
        };
        while behind(&self.read) {
            let Some(consumer) = &self.consumer else {
                return Err("the probe's topic is not read".to_owned());
            };
            let remaining = deadline.saturating_duration_since(Instant::now());
            let message = match tokio::time::timeout(remaining, consumer.recv()).await {
                Err(_) => {
                    return Err(format!(
                        "{} was not read up to the stored offsets",
                        self.name
                    ));
                }
                Ok(Err(e)) => return Err(format!("read {}: {e}", self.name)),
                Ok(Ok(message)) => message.detach(),
            };
            let beat = self.beat_of(message.key(), message.payload()).await;
            let read = self.read.entry(message.partition()).or_default();
            let before = read.last().map_or(0, |(_, b)| *b);
            read.push((message.offset(), before.max(beat)));
        }
        Ok(next
            .iter()
            .filter_map(|(p, n)| {
                let read = self.read.get(p)?;
                let upto = read.partition_point(|(o, _)| *o < *n);
                upto.checked_sub(1).map(|i| read[i].1)
            })
            .max()
            .unwrap_or(0))
    }

    /// The beat a probe record holds (0 for anything else: a tombstone, a
    /// record that does not decode).
    async fn beat_of(&mut self, key: Option<&[u8]>, value: Option<&[u8]>) -> u64 {
        if self.schemas.fetch_for(key, value).await.is_err() {
            return 0;
        }
        match change_event::decode_avro(key, value, &|id| self.schemas.lookup(id)) {
            Ok(ChangeRecord::Change(change)) => match change.key.get("beat") {
                Some(Cell::Int(beat)) => u64::try_from(*beat).unwrap_or(0),
                _ => 0,
            },
            _ => 0,
        }
    }
}

/// The highest beat in one data file of a probe table (0 if none).
async fn newest_beat(table: &Table, path: &str, changelog: bool) -> Result<u64, String> {
    let column = if changelog { "after" } else { "beat" };
    let batches = lossproof_runtime::lake::read::file_rows(table, path, &[column])
        .await
        .map_err(|e| e.to_string())?;
    let mut newest = 0;
    for batch in &batches {
        let Some(values) = batch.column_by_name(column) else {
            return Err(format!("no column {column}"));
        };
        if let Some(beats) = values.as_any().downcast_ref::<Int64Array>() {
            newest = newest.max(beats.iter().flatten().max().unwrap_or(0));
        } else if let Some(afters) = values.as_any().downcast_ref::<StringArray>() {
            // A change log: `after` is the row as JSON, `{"beat": 7, …}`.
            for after in afters.iter().flatten() {
                let beat = serde_json::from_str::<serde_json::Value>(after)
                    .ok()
                    .and_then(|row| row.get("beat").and_then(beat_value));
                newest = newest.max(beat.unwrap_or(0));
            }
        } else {
            return Err(format!(
                "column {column} is {}, not bigint or text",
                values.data_type()
            ));
        }
    }
    Ok(u64::try_from(newest).unwrap_or(0))
}

/// A beat in a change log's JSON: a number, or a number as text.
fn beat_value(value: &serde_json::Value) -> Option<i64> {
    value
        .as_i64()
        .or_else(|| value.as_str().and_then(|s| s.parse().ok()))
}

/// The lag a reader sees, every [`SAMPLE_EVERY_MS`] of each window the
/// probe beat in (up to `until_ms`), as (time, lag) in ms: `t` minus the
/// commit time of the newest beat visible at `t` (`visible`: when each
/// newer beat was first seen). A beat whose commit was not acknowledged
/// counts as committed when the last acknowledged beat before it did (the
/// lag is never understated). A lake that holds every beat written before
/// a window is charged from the window's start, not for the quiet time
/// before it (nothing was written then); before any beat is visible, the
/// lag runs from the first window's start.
#[must_use]
pub fn lags(visible: &[(u64, u64)], beats: &Beats, until_ms: u64) -> Vec<(u64, u64)> {
    let commits = &beats.commits;
    // committed[n]: the commit time charged to beat n (committed[0]: none).
    let mut committed = Vec::with_capacity(commits.len() + 1);
    committed.push(0);
    for beat in commits {
        let last = *committed.last().unwrap_or(&0);
        committed.push(beat.unwrap_or(last));
    }
    let mut out = Vec::new();
    let mut shown = 0;
    let mut next = visible.iter().peekable();
    for window in &beats.windows {
        let mut t = window.start_ms;
        while t < window.end_ms.min(until_ms) {
            while let Some((_, beat)) = next.next_if(|(at, _)| *at <= t) {
                shown = usize::try_from(*beat)
                    .unwrap_or(usize::MAX)
                    .min(commits.len());
            }
            let since = if shown as u64 + 1 >= window.first {
                committed[shown].max(window.start_ms)
            } else {
                committed[shown]
            };
            out.push((t, t.saturating_sub(since)));
            t += SAMPLE_EVERY_MS;
        }
    }
    out
}

/// One consumer's freshness in a seed, as the record keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FreshnessRecord {
    pub consumer: String,
    /// The lake table measured (the probe's).
    pub table: String,
    /// How it was measured: `probe` (the beats in its rows) or `offsets`
    /// (the beat at the offset its snapshots carry).
    pub method: String,
    /// The interval between samples (ms).
    pub step_ms: u64,
    /// Each sample's time (ms of the seed's clock: the load phases only)
    /// and the lag then, in ms.
    pub t_ms: Vec<u64>,
    pub lags_ms: Vec<u64>,
    pub p50_ms: u64,
    pub p99_ms: u64,
    pub max_ms: u64,
    /// Snapshots of the probe table read.
    pub snapshots: u64,
    /// Why the figures are missing or partial (the table was never
    /// written, looks failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl FreshnessRecord {
    /// The records of `probe`'s consumer from what the follower saw: by
    /// the probe's rows, and by offsets for a consumer that keeps them.
    #[must_use]
    pub fn of(probe: &ProbeTable, followed: &Followed, beats: &Beats, until_ms: u64) -> Vec<Self> {
        let mut out = vec![Self::measured(
            probe,
            "probe",
            &followed.visible,
            followed,
            beats,
            until_ms,
        )];
        if probe.offsets {
            out.push(Self::measured(
                probe,
                "offsets",
                &followed.by_offsets,
                followed,
                beats,
                until_ms,
            ));
        }
        out
    }

    fn measured(
        probe: &ProbeTable,
        method: &str,
        visible: &[(u64, u64)],
        followed: &Followed,
        beats: &Beats,
        until_ms: u64,
    ) -> Self {
        let (t_ms, lags_ms): (Vec<u64>, Vec<u64>) =
            lags(visible, beats, until_ms).into_iter().unzip();
        let mut sorted = lags_ms.clone();
        sorted.sort_unstable();
        let note = if beats.commits.iter().flatten().next().is_none() {
            Some("the probe wrote no beat: nothing to measure".to_owned())
        } else if visible.is_empty() {
            Some(format!(
                "no beat reached the lake's {} table{}",
                probe.table,
                followed
                    .last_error
                    .as_ref()
                    .map(|e| format!(" ({} looks failed: {e})", followed.failed))
                    .unwrap_or_default()
            ))
        } else {
            followed
                .last_error
                .as_ref()
                .map(|e| format!("{} looks failed, the last: {e}", followed.failed))
        };
        Self {
            consumer: probe.consumer.clone(),
            table: probe.table.clone(),
            method: method.to_owned(),
            step_ms: SAMPLE_EVERY_MS,
            t_ms,
            p50_ms: percentile(&sorted, 50),
            p99_ms: percentile(&sorted, 99),
            max_ms: sorted.last().copied().unwrap_or(0),
            lags_ms,
            snapshots: followed.snapshots,
            note,
        }
    }
}

/// The `q`-th percentile of `sorted` (nearest rank; 0 when empty).
#[must_use]
pub fn percentile(sorted: &[u64], q: u64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (sorted.len() as u64 * q).div_ceil(100).max(1);
    sorted[usize::try_from(rank)
        .unwrap_or(usize::MAX)
        .min(sorted.len())
        - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Beats every 100 ms in one window from t = 1000 (beat n committed at
    /// 900 + 100 n).
    fn beats(n: u64) -> Beats {
        Beats {
            commits: (1..=n).map(|b| Some(900 + 100 * b)).collect(),
            windows: vec![Window {
                start_ms: 1000,
                end_ms: 1000 + 100 * n,
                first: 1,
            }],
        }
    }

    fn only_lags(samples: &[(u64, u64)]) -> Vec<u64> {
        samples.iter().map(|(_, l)| *l).collect()
    }

    #[test]
    fn a_lake_that_keeps_up_has_the_probes_resolution_as_lag() {
        // Each beat seen 50 ms after its commit.
        let visible: Vec<(u64, u64)> = (1..=20).map(|b| (950 + 100 * b, b)).collect();
        let samples = lags(&visible, &beats(20), 5000);
        assert_eq!(samples.first(), Some(&(1000, 0)));
        assert_eq!(samples.len(), 20);
        // At t = 1000 beat 1 committed but is not visible yet: 0 ms from
        // the window's start; afterwards the newest visible beat is 100 ms old.
        assert!(
            only_lags(&samples)[1..].iter().all(|l| *l == 100),
            "{samples:?}"
        );
    }

    #[test]
    fn a_paused_consumer_shows_the_pause_then_recovers() {
        // Beats 1-10 seen at once; nothing seen from 2000 to 5000; then all
        // caught up at 5050 and kept up.
        let mut visible: Vec<(u64, u64)> = (1..=10).map(|b| (950 + 100 * b, b)).collect();
        visible.push((5050, 41));
        visible.extend((42..=60).map(|b| (950 + 100 * b, b)));
        let lags = only_lags(&lags(&visible, &beats(60), 6900));
        let max = *lags.iter().max().unwrap();
        // Beat 10 (committed 1900) was the newest visible until 5050: at
        // t = 5000 the reader is 3.1 s behind.
        assert_eq!(max, 3100);
        assert!(
            lags[lags.len() - 10..].iter().all(|l| *l <= 100),
            "{lags:?}"
        );
    }

    #[test]
    fn an_unacknowledged_beat_is_charged_the_previous_beats_time() {
        let mut written = beats(6);
        written.commits[3] = None; // beat 4 timed out, but reached the lake
        let samples = lags(&[(1500, 4)], &written, 1600);
        // At 1500 beat 4 is the newest; charged beat 3's time (1200).
        assert_eq!(samples.last(), Some(&(1500, 300)));
    }

    #[test]
    fn quiet_time_is_not_lag_for_a_lake_that_held_everything() {
        // Window 1: beats 1-10 (1000-2000); quiet until 10,000; window 2:
        // beats 11-20 (10,000-11,000).
        let mut written = beats(10);
        written
            .commits
            .extend((11..=20).map(|b| Some(10_000 + 100 * (b - 11))));
        written.windows.push(Window {
            start_ms: 10_000,
            end_ms: 11_000,
            first: 11,
        });
        // Caught up with window 1 at 2050; window 2's beats seen 50 ms late.
        let mut visible: Vec<(u64, u64)> = (1..=10).map(|b| (950 + 100 * b, b)).collect();
        visible.extend((11..=20).map(|b| (10_050 + 100 * (b - 11), b)));
        let samples = lags(&visible, &written, 20_000);
        assert_eq!(
            samples.len(),
            20,
            "no sample in the quiet time: {samples:?}"
        );
        assert!(samples.iter().all(|(t, _)| *t < 2000 || *t >= 10_000));
        let second: Vec<u64> = samples
            .iter()
            .filter(|(t, _)| *t >= 10_000)
            .map(|(_, l)| *l)
            .collect();
        assert!(second.iter().all(|l| *l <= 100), "{second:?}");

        // A lake still missing beat 10 at 10,000 is charged from beat 9.
        let behind: Vec<(u64, u64)> = (1..=9).map(|b| (950 + 100 * b, b)).collect();
        let samples = lags(&behind, &written, 20_000);
        assert_eq!(
            samples.iter().find(|(t, _)| *t == 10_000),
            Some(&(10_000, 10_000 - 1800))
        );
    }

    #[test]
    fn nothing_written_is_nothing_measured() {
        assert!(lags(&[(5, 1)], &Beats::default(), 10_000).is_empty());
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let sorted: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&sorted, 50), 50);
        assert_eq!(percentile(&sorted, 99), 99);
        assert_eq!(percentile(&[7], 99), 7);
        assert_eq!(percentile(&[], 99), 0);
    }
}
