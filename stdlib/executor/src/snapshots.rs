//! What a reader sees between commits: every snapshot each consumer
//! publishes, checked against the source's states (docs/run.md,
//! "Snapshots").
//!
//! - While the seed runs, the [`crate::freshness::Follower`] follows each
//!   consumer's tables with a [`LakeFollower`]: every 100 ms, for every
//!   snapshot committed since it last looked, a [`Mirror`] of the table
//!   applies the files that snapshot added and removed and tells what it
//!   now shows for each key it changed ([`LakeLog`]). The tables are never
//!   read whole, except to start again after snapshots expired unread
//!   (those are counted unchecked).
//! - After the drain, [`check`] builds the source's state after every
//!   transaction (`lossproof_history` with each version's transaction,
//!   ordered by the source's own logical decoding: [`slot`]) and runs a
//!   [`Checker`] over each lake's states in commit order: snapshots of
//!   several tables with one timestamp are one catalog commit.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use arrow_array::{ArrayRef, BooleanArray, Int64Array, RecordBatch, StringArray, UInt64Array};
use lossproof_runtime::Lake;
use lossproof_runtime::debezium::CaptureNames;
use lossproof_runtime::lake::history;
use lossproof_runtime::lake::mirror::Mirror;
use lossproof_runtime::reconcile::source::Rename;
use lossproof_runtime::reconcile::states::{Checker, Kind, Shown, SourceStates};
use lossproof_runtime::reconcile::{SourceTable, Table as AssertionTable};
use serde::{Deserialize, Serialize};

use crate::freshness::FOLLOW_EVERY;
use crate::run::millis;

/// Keys listed per inconsistent snapshot in `snapshot_keys` (the counts by
/// kind cover every classified key: all of them up to
/// `lossproof_runtime::reconcile::states::CLASSIFIED_MAX`).
pub const KEYS_PER_SNAPSHOT: usize = 1000;
/// Keys kept per inconsistent snapshot in the run record.
const SAMPLE_KEYS: usize = 5;

/// lossproof's own replication slot for the seed: the order in which the
/// source committed its transactions (`test_decoding`, read once after the
/// drain; dropped by the seed's clean-up like a declared consumer's).
#[must_use]
pub fn slot(names: &CaptureNames) -> String {
    format!("{}_lp_commits", names.slot)
        .chars()
        .take(63)
        .collect()
}

/// One consumer's lake to follow: its tables, compared over the source's
/// columns as they were when following began.
#[derive(Debug, Clone)]
pub struct LakeTables {
    pub consumer: String,
    pub namespace: String,
    pub tables: Vec<SourceTable>,
    /// Its tables are change logs (`lake changelog`), each named here in
    /// the order of `tables`: followed as their readers see them, each key
    /// its latest row in source order (docs/run.md, "Snapshots").
    pub changelogs: Option<Vec<String>>,
    /// Why its snapshots are not checked (views), if so.
    pub not_checked: Option<String>,
}

/// One snapshot as the follower read it.
#[derive(Debug, Clone)]
pub struct Seen {
    /// Index into the lake's tables.
    pub table: usize,
    pub snapshot: i64,
    /// The snapshot's own timestamp (ms since the epoch).
    pub timestamp_ms: i64,
    /// When the follower read it (ms of the seed's clock).
    pub seen_ms: u64,
    pub operation: String,
    /// What it shows for each key it changed.
    pub changes: Vec<(String, Shown)>,
    /// How long reading it took (µs).
    pub read_us: u64,
    /// Whether it was ever its table's current snapshot after a catalog
    /// commit ([`history::published`]): a writer can add several in one
    /// commit, and a reader sees only the last.
    pub published: bool,
    /// Read whole after snapshots of its table expired unread: the
    /// timestamp of the last one read before them (`i64::MIN`: none). Until
    /// this one, the table's lake state is unknown, and so is every state of
    /// the lake in between.
    pub after_gap: Option<i64>,
}

/// What the follower read of one consumer's lake.
#[derive(Debug, Clone, Default)]
pub struct LakeLog {
    pub consumer: String,
    pub tables: Vec<String>,
    pub seen: Vec<Seen>,
    /// Snapshots that expired (or were replaced) before the follower read
    /// them.
    pub unchecked: u64,
    /// Why following stopped early, if it did (its later snapshots are not
    /// checked).
    pub failed: Option<String>,
    pub not_checked: Option<String>,
    /// Time spent reading snapshots (their files, into the mirrors).
    pub read_ms: u64,
}

/// One table of a followed lake.
struct Cursor {
    /// The lake table followed (a change log's own name).
    name: String,
    at: history::Cursor,
    /// The sequence number and timestamp of the last snapshot read.
    sequence: i64,
    timestamp_ms: i64,
    /// A snapshot's files were gone when it was read (expired meanwhile):
    /// the next look reads the table whole.
    expired: bool,
    mirror: Mirror,
}

/// Snapshots of one table left unread at a look past which the followers'
/// thread runs at normal priority until it has caught up: consumers keep
/// their tables' newest 100 snapshots (docs/consumers.md), and a snapshot
/// expired unread leaves the lake's states meanwhile unchecked. Half of
/// those: at 20, the burst of commits a consumer makes catching up after a
/// kill raised it, and the follower took the CPU that consumer needed (the
/// correct consumer's lag after a kill in `scenarios/freshness.lp` went
/// from 5-7 s to 10.5 s).
const BEHIND_AT: usize = 50;

/// Follows one consumer's tables, snapshot by snapshot.
pub struct LakeFollower {
    namespace: String,
    cursors: Vec<Cursor>,
    log: LakeLog,
    /// Its thread's priority, and its own number among the thread's tasks.
    catch_up: Option<(crate::niced::CatchUp, usize)>,
}

impl LakeFollower {
    #[must_use]
    pub fn new(lake: LakeTables) -> Self {
        Self {
            namespace: lake.namespace,
            log: LakeLog {
                consumer: lake.consumer,
                tables: lake.tables.iter().map(|t| t.name.clone()).collect(),
                not_checked: lake.not_checked,
                ..LakeLog::default()
            },
            cursors: lake
                .tables
                .into_iter()
                .enumerate()
                .map(|(n, t)| Cursor {
                    name: lake
                        .changelogs
                        .as_ref()
                        .and_then(|logs| logs.get(n))
                        .map_or_else(|| t.name.clone(), Clone::clone),
                    mirror: if lake.changelogs.is_some() {
                        Mirror::changelog(t)
                    } else {
                        Mirror::new(t)
                    },
                    at: history::Cursor::default(),
                    sequence: 0,
                    timestamp_ms: i64::MIN,
                    expired: false,
                })
                .collect(),
            catch_up: None,
        }
    }

    /// Raise its thread's priority (through `catch_up`, as task `task`)
    /// while it is behind.
    #[must_use]
    pub(crate) fn catching_up(mut self, catch_up: crate::niced::CatchUp, task: usize) -> Self {
        self.catch_up = Some((catch_up, task));
        self
    }

    /// Read every snapshot committed since the last look, table by table.
    pub async fn look(&mut self, lake: &Lake, clock: Instant) {
        if self.log.failed.is_some() || self.log.not_checked.is_some() {
            return;
        }
        // One read of the catalog says which tables changed (where it can).
        let started = Instant::now();
        let locations = lake
            .metadata_locations(&self.namespace)
            .await
            .ok()
            .flatten();
        self.log.read_ms += millis(started.elapsed());
        let mut behind = false;
        for (n, cursor) in self.cursors.iter_mut().enumerate() {
            let started = Instant::now();
            let looked = look_at(
                lake,
                (&self.namespace, locations.as_ref()),
                (n, self.catch_up.as_ref()),
                cursor,
                &mut self.log,
                clock,
            )
            .await;
            self.log.read_ms += millis(started.elapsed());
            behind |= looked.as_ref().is_ok_and(|b| *b);
            if let Err(e) = looked {
                self.log.failed = Some(format!(
                    "{} at {:.1}s: {e}",
                    self.log.tables[n],
                    clock.elapsed().as_secs_f64()
                ));
                return;
            }
        }
        if let Some((catch_up, task)) = &self.catch_up {
            catch_up.behind(*task, behind);
        }
    }

    #[must_use]
    pub fn finish(self) -> LakeLog {
        self.log
    }
}

/// Read table `n`'s snapshots since the last look; whether it was behind
/// (more than [`BEHIND_AT`] unread, or its last one read expired).
async fn look_at(
    lake: &Lake,
    (namespace, locations): (&str, Option<&HashMap<String, String>>),
    (n, catch_up): (usize, Option<&(crate::niced::CatchUp, usize)>),
    cursor: &mut Cursor,
    log: &mut LakeLog,
    clock: Instant,
) -> Result<bool, String> {
    let Some(table) = cursor
        .at
        .load(lake, namespace, &cursor.name, locations)
        .await?
    else {
        return Ok(false);
    };
    let seen_ms = millis(clock.elapsed());
    let metadata = table.metadata();
    let Some(current) = metadata.current_snapshot() else {
        return Ok(false);
    };
    if current.snapshot_id() == cursor.at.seen {
        return Ok(false);
    }
    let uuid = metadata.uuid().to_string();
    let replaced = cursor.at.uuid.as_ref().is_some_and(|u| *u != uuid);
    // After a read that found a snapshot's files gone: the table whole.
    let since = history::since(&table, cursor.at.seen)
        .filter(|_| !cursor.expired)
        .filter(|since| {
            // From the table's first snapshot, or from one already read.
            cursor.at.seen != -1
                || since
                    .first()
                    .and_then(|s| metadata.snapshot_by_id(*s))
                    .is_some_and(|s| s.parent_snapshot_id().is_none())
        });
    cursor.at.uuid = Some(uuid);
    let seen_one = |snapshot: &iceberg::spec::Snapshot, changes, started: Instant| Seen {
        table: n,
        snapshot: snapshot.snapshot_id(),
        timestamp_ms: snapshot.timestamp_ms(),
        seen_ms,
        operation: snapshot.summary().operation.as_str().to_owned(),
        changes,
        read_us: u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
        published: history::published(&table, snapshot.snapshot_id()),
        after_gap: None,
    };
    let behind = since.as_ref().is_none_or(|unread| unread.len() > BEHIND_AT);
    if behind && let Some((catch_up, task)) = catch_up {
        // At normal priority before reading them: at `nice` 19 beside a
        // busy pipeline, the rest could expire meanwhile.
        catch_up.behind(*task, true);
    }
    match since {
        Some(snapshots) if !replaced => {
            for id in snapshots {
                let Some(snapshot) = metadata.snapshot_by_id(id) else {
                    continue;
                };
                let started = Instant::now();
                let changes = match cursor.mirror.apply(&table, id).await {
                    Ok(changes) => changes,
                    // Expired (its files deleted) since the table was
                    // loaded: read whole at the next look, this one and
                    // those after it unchecked.
                    Err(e) if e.contains("No such file or directory") => {
                        cursor.expired = true;
                        return Ok(true);
                    }
                    Err(e) => return Err(e),
                };
                log.seen.push(seen_one(snapshot, changes, started));
                cursor.at.seen = id;
                cursor.sequence = snapshot.sequence_number();
                cursor.timestamp_ms = snapshot.timestamp_ms();
            }
        }
        // Expired before it was read, or the table was replaced: the
        // current snapshot, read whole; the ones in between unchecked.
        _ => {
            let started = Instant::now();
            let changes = cursor.mirror.reset(&table).await?;
            cursor.expired = false;
            // A replaced table numbers its snapshots from 1 again.
            let skipped = if replaced {
                current.sequence_number() - 1
            } else {
                current.sequence_number() - cursor.sequence - 1
            };
            log.unchecked += u64::try_from(skipped).unwrap_or(0);
            log.seen.push(Seen {
                after_gap: (skipped > 0).then_some(cursor.timestamp_ms),
                ..seen_one(current, changes, started)
            });
        }
    }
    cursor.at.seen = current.snapshot_id();
    cursor.sequence = current.sequence_number();
    cursor.timestamp_ms = current.timestamp_ms();
    Ok(behind)
}

/// Follow `lake` every [`FOLLOW_EVERY`] until `stop`, then once more (the
/// consumers have stopped by then: their last commits are read too).
pub async fn follow(
    lake: Lake,
    mut follower: LakeFollower,
    clock: Instant,
    (stop, looks): (Arc<AtomicBool>, Arc<Looks>),
) -> LakeLog {
    let mut ticks = tokio::time::interval(FOLLOW_EVERY);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while !stop.load(Ordering::Relaxed) {
        ticks.tick().await;
        let read = follower.log.seen.len();
        follower.look(&lake, clock).await;
        let done = looks.done.fetch_add(1, Ordering::Relaxed) + 1;
        if follower.log.seen.len() == read {
            looks.idle.store(done, Ordering::Relaxed);
        }
    }
    follower.look(&lake, clock).await;
    follower.finish()
}

/// How far the follower of one lake is, for a wait on it
/// ([`crate::freshness::LakeFollowers::read_up`]).
#[derive(Debug, Default)]
pub struct Looks {
    /// Looks done.
    pub done: AtomicU64,
    /// The number of the last look that found nothing new to read.
    pub idle: AtomicU64,
}

/// How long the follower of one lake may take to finish after it is told
/// to stop (its last look reads what the consumers committed last).
pub const FINISH_LIMIT: Duration = Duration::from_mins(2);

/// The epoch ms at `clock`'s start.
#[must_use]
pub fn epoch_ms_at(clock: Instant) -> i64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    i64::try_from(now.saturating_sub(clock.elapsed().as_millis())).unwrap_or(0)
}

/// One lake state as checked: a row of the `snapshots` table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotRow {
    pub consumer: String,
    /// The tables whose snapshots made this state (one catalog commit).
    pub tables: Vec<String>,
    /// The first of those snapshots.
    pub snapshot: i64,
    /// When it was committed (its timestamp) and read, in ms of the seed's
    /// clock (0: before the seed's clock started).
    pub committed_ms: u64,
    pub seen_ms: u64,
    pub operation: String,
    pub consistent: bool,
    /// The source position it matches, or is closest to (0: before the
    /// first followed transaction), and that transaction's id.
    pub position: u32,
    pub txid: Option<i64>,
    pub torn: u64,
    pub vanished: u64,
    pub regressed: u64,
    pub wrong: u64,
    /// Wrong keys not classified, beyond the check's bound (the counts
    /// above cover the first `CLASSIFIED_MAX` found).
    #[serde(default)]
    pub unclassified: u64,
    /// Keys its snapshots changed; how long reading them took, and checking
    /// the state (µs).
    #[serde(default)]
    pub changed: u64,
    #[serde(default)]
    pub read_us: u64,
    #[serde(default)]
    pub check_us: u64,
    /// A few of its wrong keys (`table key kind`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sample: Vec<String>,
}

impl SnapshotRow {
    #[must_use]
    pub fn wrong_keys(&self) -> u64 {
        self.torn + self.vanished + self.regressed + self.wrong + self.unclassified
    }
}

/// One wrong key of an inconsistent state: a row of `snapshot_keys`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRow {
    pub consumer: String,
    pub snapshot: i64,
    pub table: String,
    pub key: String,
    pub kind: Kind,
    pub txid: Option<i64>,
}

/// One consumer's snapshots over the seed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsistencyRecord {
    pub consumer: String,
    /// States checked, and of those inconsistent.
    pub checked: u64,
    pub inconsistent: u64,
    /// Snapshots not checked (expired before they were read).
    pub unchecked: u64,
    /// Snapshots no reader could see (a writer added them and a later one
    /// in the same catalog commit): applied with the next state, not
    /// checked as states of their own.
    #[serde(default)]
    pub never_current: u64,
    /// The most wrong keys in one state.
    pub worst: u64,
    /// Time the follower spent reading its snapshots while the seed ran,
    /// and checking them after the drain.
    #[serde(default)]
    pub read_ms: u64,
    #[serde(default)]
    pub check_ms: u64,
    /// Why some or all of its snapshots were not checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What [`check`] found.
#[derive(Debug, Default)]
pub struct Checked {
    pub snapshots: Vec<SnapshotRow>,
    pub keys: Vec<KeyRow>,
    pub consumers: Vec<ConsistencyRecord>,
}

/// Check every state of every log against the source's states after each
/// of `order`'s transactions (ids in commit order), read from `source`'s
/// history for `tables` (their columns named as before `renames`, the
/// columns renamed during the seed), without the changes capture never
/// delivered (`uncaptured`, (table, key, transaction): no lake could show
/// them). `stop` is asked before each state: once it says so (the run was
/// interrupted), the states left are counted unchecked, not checked (a
/// long check is CPU on the seed's task, where no signal reaches it).
///
/// # Errors
/// When the source's history cannot be read.
#[allow(clippy::implicit_hasher)] // the executor's own set
pub async fn check(
    source: &tokio_postgres::Client,
    (tables, renames): (&[SourceTable], &[Rename]),
    (order, uncaptured): (&[i64], &lossproof_runtime::reconcile::capture::Undelivered),
    logs: Vec<LakeLog>,
    epoch_ms: i64,
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<Checked, lossproof_runtime::reconcile::Error> {
    let states =
        lossproof_runtime::reconcile::source::states(source, tables, renames, order, uncaptured)
            .await?;
    let names: Vec<String> = tables.iter().map(|t| t.name.clone()).collect();
    let mut out = Checked::default();
    for log in logs {
        check_log(&states, &names, log, epoch_ms, stop, &mut out);
    }
    Ok(out)
}

/// Check one lake's states in commit order into `out`.
#[allow(clippy::too_many_lines)] // one pass over the commits, read top to bottom
pub fn check_log(
    states: &SourceStates,
    names: &[String],
    mut log: LakeLog,
    epoch_ms: i64,
    stop: &(dyn Fn() -> bool + Sync),
    out: &mut Checked,
) {
    let started = Instant::now();
    let mut record = ConsistencyRecord {
        consumer: log.consumer.clone(),
        unchecked: log.unchecked,
        read_ms: log.read_ms,
        note: log.not_checked.clone().or_else(|| {
            log.failed
                .as_ref()
                .map(|why| format!("followed until {why}"))
        }),
        ..ConsistencyRecord::default()
    };
    if log.not_checked.is_some() {
        out.consumers.push(record);
        return;
    }
    // Lake tables by the checked tables' order.
    let index: Vec<Option<usize>> = log
        .tables
        .iter()
        .map(|t| names.iter().position(|n| n == t))
        .collect();
    // Commit order: by timestamp (stable: a table's own snapshots stay in
    // the order read).
    log.seen.sort_by_key(|s| s.timestamp_ms);
    // Where a table's snapshots expired unread: between the last one read
    // and the one read whole after them, its lake state is unknown.
    let gaps: Vec<(usize, i64, i64)> = log
        .seen
        .iter()
        .filter_map(|s| s.after_gap.map(|from| (s.table, from, s.timestamp_ms)))
        .collect();
    let mut checker = Checker::new(states);
    // Changes of snapshots never current, for the next state.
    let mut carried: Vec<(usize, String, Shown)> = Vec::new();
    let mut at = 0;
    while at < log.seen.len() {
        if stop() {
            let mut left = 0;
            while at < log.seen.len() {
                let end = state_end(&log.seen, at);
                left += u64::from(is_state(&log.seen[at..end]));
                at = end;
            }
            record.unchecked += left;
            record.note = Some(format!("interrupted: {left} states left unchecked"));
            break;
        }
        let end = state_end(&log.seen, at);
        let checking = Instant::now();
        let group = &mut log.seen[at..end];
        let mut changes = std::mem::take(&mut carried);
        changes.extend(
            group
                .iter_mut()
                .filter_map(|s| index[s.table].map(|t| (t, std::mem::take(&mut s.changes))))
                .flat_map(|(t, changes)| changes.into_iter().map(move |(k, v)| (t, k, v))),
        );
        if !is_state(group) {
            record.never_current += group.len() as u64;
            carried = changes;
            at = end;
            continue;
        }
        let keys_changed = changes.len() as u64;
        let state = checker.check(changes);
        let first = &group[0];
        let unknown = gaps.iter().any(|(table, from, to)| {
            *from < first.timestamp_ms
                && first.timestamp_ms < *to
                && !group.iter().any(|s| s.table == *table)
        });
        if unknown {
            // Applied (the states after it build on it), not judged: a
            // table it shows was at a snapshot nobody read.
            record.unchecked += 1;
            at = end;
            continue;
        }
        let count = |kind: Kind| state.keys.iter().filter(|k| k.kind == kind).count() as u64;
        let row = SnapshotRow {
            consumer: log.consumer.clone(),
            tables: group.iter().map(|s| log.tables[s.table].clone()).collect(),
            snapshot: first.snapshot,
            committed_ms: u64::try_from(first.timestamp_ms - epoch_ms).unwrap_or(0),
            seen_ms: group.iter().map(|s| s.seen_ms).max().unwrap_or(0),
            operation: first.operation.clone(),
            consistent: state.consistent,
            position: state.position,
            txid: states.txid(state.position),
            torn: count(Kind::Torn),
            vanished: count(Kind::Vanished),
            regressed: count(Kind::Regressed),
            wrong: count(Kind::Wrong),
            unclassified: state.unclassified,
            changed: keys_changed,
            read_us: group.iter().map(|s| s.read_us).sum(),
            check_us: u64::try_from(checking.elapsed().as_micros()).unwrap_or(u64::MAX),
            sample: state
                .keys
                .iter()
                .take(SAMPLE_KEYS)
                .map(|k| format!("{} {} {}", names[k.table], k.key, k.kind.as_str()))
                .collect(),
        };
        record.checked += 1;
        if !row.consistent {
            record.inconsistent += 1;
            record.worst = record.worst.max(row.wrong_keys());
        }
        out.keys.extend(
            state
                .keys
                .into_iter()
                .take(KEYS_PER_SNAPSHOT)
                .map(|k| KeyRow {
                    consumer: log.consumer.clone(),
                    snapshot: row.snapshot,
                    table: names[k.table].clone(),
                    key: k.key,
                    kind: k.kind,
                    txid: k.txid,
                }),
        );
        out.snapshots.push(row);
        at = end;
    }
    record.check_ms = millis(started.elapsed());
    out.consumers.push(record);
}

/// Where the state starting at `seen[at]` ends: one catalog commit is
/// consecutive snapshots of different tables with one timestamp.
fn state_end(seen: &[Seen], at: usize) -> usize {
    let mut end = at + 1;
    while end < seen.len()
        && seen[end].timestamp_ms == seen[at].timestamp_ms
        && !seen[at..end].iter().any(|s| s.table == seen[end].table)
    {
        end += 1;
    }
    end
}

/// Whether a catalog commit's snapshots ([`state_end`]) are a state a
/// reader could see: not when every one of them was replaced inside its
/// own commit (never current), whose changes go with the next state.
fn is_state(group: &[Seen]) -> bool {
    group.iter().any(|s| s.published)
}

/// The `snapshots`, `snapshot_summary` and `snapshot_keys` assertion
/// tables.
#[must_use]
pub fn batches(
    rows: &[SnapshotRow],
    consumers: &[ConsistencyRecord],
    keys: &[KeyRow],
) -> [(AssertionTable, RecordBatch); 3] {
    let text = |each: Vec<Option<&str>>| -> ArrayRef { Arc::new(StringArray::from(each)) };
    let count = |each: Vec<u64>| -> ArrayRef { Arc::new(UInt64Array::from(each)) };
    let ids = |each: Vec<Option<i64>>| -> ArrayRef { Arc::new(Int64Array::from(each)) };
    let joined: Vec<String> = rows.iter().map(|r| r.tables.join(",")).collect();
    let snapshots = AssertionTable::Snapshots.batch(vec![
        text(rows.iter().map(|r| Some(r.consumer.as_str())).collect()),
        text(joined.iter().map(|t| Some(t.as_str())).collect()),
        ids(rows.iter().map(|r| Some(r.snapshot)).collect()),
        count(rows.iter().map(|r| r.committed_ms).collect()),
        count(rows.iter().map(|r| r.seen_ms).collect()),
        text(rows.iter().map(|r| Some(r.operation.as_str())).collect()),
        Arc::new(BooleanArray::from(
            rows.iter().map(|r| r.consistent).collect::<Vec<_>>(),
        )),
        count(rows.iter().map(|r| u64::from(r.position)).collect()),
        ids(rows.iter().map(|r| r.txid).collect()),
        count(rows.iter().map(|r| r.torn).collect()),
        count(rows.iter().map(|r| r.vanished).collect()),
        count(rows.iter().map(|r| r.regressed).collect()),
        count(rows.iter().map(|r| r.wrong).collect()),
        count(rows.iter().map(|r| r.unclassified).collect()),
    ]);
    let keys = AssertionTable::SnapshotKeys.batch(vec![
        text(keys.iter().map(|k| Some(k.consumer.as_str())).collect()),
        ids(keys.iter().map(|k| Some(k.snapshot)).collect()),
        text(keys.iter().map(|k| Some(k.table.as_str())).collect()),
        text(keys.iter().map(|k| Some(k.key.as_str())).collect()),
        text(keys.iter().map(|k| Some(k.kind.as_str())).collect()),
        ids(keys.iter().map(|k| k.txid).collect()),
    ]);
    let summary = AssertionTable::SnapshotSummary.batch(vec![
        text(
            consumers
                .iter()
                .map(|c| Some(c.consumer.as_str()))
                .collect(),
        ),
        count(consumers.iter().map(|c| c.checked).collect()),
        count(consumers.iter().map(|c| c.inconsistent).collect()),
        count(consumers.iter().map(|c| c.unchecked).collect()),
        count(consumers.iter().map(|c| c.worst).collect()),
        Arc::new(BooleanArray::from(
            consumers
                .iter()
                .map(|c| c.note.is_none())
                .collect::<Vec<_>>(),
        )),
        text(consumers.iter().map(|c| c.note.as_deref()).collect()),
    ]);
    [
        (AssertionTable::Snapshots, snapshots),
        (AssertionTable::SnapshotSummary, summary),
        (AssertionTable::SnapshotKeys, keys),
    ]
}

#[cfg(test)]
mod tests {
    use super::{Checked, LakeLog, Seen, check_log};
    use lossproof_runtime::reconcile::states::{Shown, SourceStates, row_hash};

    fn seen(table: usize, timestamp_ms: i64, changes: &[(&str, &str)]) -> Seen {
        Seen {
            table,
            snapshot: timestamp_ms,
            timestamp_ms,
            seen_ms: 0,
            operation: "overwrite".into(),
            changes: changes
                .iter()
                .map(|(k, v)| ((*k).to_owned(), Shown::Row(row_hash(v))))
                .collect(),
            read_us: 0,
            published: true,
            after_gap: None,
        }
    }

    /// One source transaction updates o1 and o2. A writer commits it as a
    /// delete snapshot and an append snapshot: in two catalog commits a
    /// reader sees both keys vanish in between; in one commit (the first
    /// snapshot never current) it sees only the transaction's state.
    #[test]
    fn a_snapshot_never_current_is_applied_with_the_next_not_checked() {
        let mut source = SourceStates::new(vec![101, 102]);
        for key in ["o1", "o2"] {
            source.version(0, key.into(), 1, Some(row_hash("1")));
            source.version(0, key.into(), 2, Some(row_hash("2")));
        }
        // Inserted with them, never changed: the state without o1 and o2
        // is closest to the source after that insert.
        for key in ["o3", "o4", "o5"] {
            source.version(0, key.into(), 1, Some(row_hash("1")));
        }
        let names = vec!["orders".to_owned()];
        let deleted = |published| Seen {
            changes: vec![("o1".into(), Shown::Absent), ("o2".into(), Shown::Absent)],
            published,
            ..seen(0, 20, &[])
        };
        let log = |published| LakeLog {
            consumer: "upsert".into(),
            tables: names.clone(),
            seen: vec![
                seen(
                    0,
                    10,
                    &[
                        ("o1", "1"),
                        ("o2", "1"),
                        ("o3", "1"),
                        ("o4", "1"),
                        ("o5", "1"),
                    ],
                ),
                deleted(published),
                seen(0, 30, &[("o1", "2"), ("o2", "2")]),
            ],
            ..LakeLog::default()
        };
        let mut out = Checked::default();
        check_log(&source, &names, log(true), 0, &|| false, &mut out);
        let record = &out.consumers[0];
        assert_eq!((record.checked, record.inconsistent), (3, 1), "{record:?}");
        assert_eq!(out.snapshots[1].vanished, 2, "{:?}", out.snapshots[1]);
        let mut out = Checked::default();
        check_log(&source, &names, log(false), 0, &|| false, &mut out);
        let record = &out.consumers[0];
        assert_eq!(
            (record.checked, record.inconsistent, record.never_current),
            (2, 0, 1),
            "{record:?}"
        );
        assert_eq!(out.snapshots[1].changed, 4, "{:?}", out.snapshots[1]);
        // Interrupted after the first state: one state is left, not two.
        let mut out = Checked::default();
        let asked = std::sync::atomic::AtomicUsize::new(0);
        let stop = || asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed) >= 1;
        check_log(&source, &names, log(false), 0, &stop, &mut out);
        assert_eq!(out.consumers[0].unchecked, 1, "{:?}", out.consumers[0]);
    }

    /// t1 inserts customer c and its order o (one transaction), t2 updates
    /// o, t3 updates c. The consumer commits both tables per transaction;
    /// the follower read orders' snapshots, but customers' expired before
    /// it read them and it read customers whole at t3's commit. The states
    /// before that show a customers table nobody read: unchecked, not
    /// torn (they would be torn against an empty customers).
    #[test]
    fn states_while_a_table_was_unread_are_unchecked_not_torn() {
        let mut source = SourceStates::new(vec![101, 102, 103]);
        source.version(0, "c".into(), 1, Some(row_hash("1")));
        source.version(1, "o".into(), 1, Some(row_hash("1")));
        source.version(1, "o".into(), 2, Some(row_hash("2")));
        source.version(0, "c".into(), 3, Some(row_hash("2")));
        let names = vec!["customers".to_owned(), "orders".to_owned()];
        let log = |gap| LakeLog {
            consumer: "correct".into(),
            tables: names.clone(),
            seen: vec![
                seen(1, 10, &[("o", "1")]),
                seen(1, 20, &[("o", "2")]),
                Seen {
                    after_gap: gap,
                    ..seen(0, 30, &[("c", "2")])
                },
            ],
            unchecked: 1,
            ..LakeLog::default()
        };
        let mut out = Checked::default();
        check_log(&source, &names, log(Some(i64::MIN)), 0, &|| false, &mut out);
        let record = &out.consumers[0];
        assert_eq!(
            (record.checked, record.inconsistent, record.unchecked),
            (1, 0, 3),
            "{record:?}"
        );
        assert_eq!(out.snapshots.len(), 1);
        assert!(out.snapshots[0].consistent);
        // Read without a gap, the same states are judged: torn.
        let mut out = Checked::default();
        check_log(&source, &names, log(None), 0, &|| false, &mut out);
        assert_eq!(out.consumers[0].inconsistent, 2, "{:?}", out.consumers[0]);
        // Interrupted after the first state: the other two are unchecked,
        // and the record says why.
        let mut out = Checked::default();
        let asked = std::sync::atomic::AtomicUsize::new(0);
        let stop = || asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed) >= 1;
        check_log(&source, &names, log(None), 0, &stop, &mut out);
        let record = &out.consumers[0];
        assert_eq!((record.checked, record.unchecked), (1, 1 + 2), "{record:?}");
        assert_eq!(
            record.note.as_deref(),
            Some("interrupted: 2 states left unchecked")
        );
    }
}
