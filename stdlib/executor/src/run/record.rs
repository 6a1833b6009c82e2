//! The run record (`--out`, default `<state>/runs/<run id>.json`): what
//! `run` writes and `replay`, `report` and `shrink` read back — each seed's
//! [`SeedRecord`] inside a [`RunRecord`].

use std::collections::BTreeMap;
use std::path::PathBuf;

use lossproof_lang::timeline::Occurrence;
use lossproof_runtime::reconcile::{DiffRow, Summary};
use serde::{Deserialize, Serialize};

use super::ScheduleRecord;
use crate::error::{Error, Result};
use crate::fault::maintenance::Races;
pub use crate::freshness::FreshnessRecord;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Verdict {
    Pass,
    Fail,
    Invalid,
}

/// One planned fault occurrence and what became of it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FaultRecord {
    pub phase: usize,
    pub planned_ms: u64,
    pub action: usize,
    pub fault: String,
    pub text: String,
    /// Where the action is written: `scenarios/crash.lp:14:3`.
    #[serde(default)]
    pub location: String,
    pub fired: bool,
    /// Milliseconds from the seed's start, when it was due (its phase's
    /// start plus its planned offset) and when it fired.
    #[serde(default)]
    pub due_ms: Option<u64>,
    pub fired_ms: Option<u64>,
    /// How late it fired: `fired_ms - due_ms`.
    #[serde(default)]
    pub drift_ms: Option<u64>,
    /// When firing it returned (a restart returns once the component is
    /// back; a lasting fault once it is in place, see `ends_ms`).
    #[serde(default)]
    pub done_ms: Option<u64>,
    /// When it stopped acting, for a fault that lasts (a network fault,
    /// `duplicate`): its `for` length or its phase's end, whichever came first.
    #[serde(default)]
    pub ends_ms: Option<u64>,
    /// Whether the workload was still running when it fired.
    pub during_load: bool,
    /// What it did, or why it did not fire.
    pub outcome: String,
    /// What it produced, in records, for the faults that produce records
    /// (`duplicate`, `inject junk`): what an assertion over dead letters or
    /// duplicates counts on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts: Option<FaultCounts>,
}

/// The records one fault occurrence produced (docs/language.md, "What
/// faults produce").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultCounts {
    /// `duplicate`: the records it read from the topics and could copy
    /// (every record it did not write itself).
    pub considered: u64,
    /// `duplicate`: copies it sent of records that are not junk (change
    /// events, tombstones).
    pub copied: u64,
    /// Junk records it sent: `inject junk`'s own, or `duplicate`'s copies
    /// of junk. Their sum over a seed is the junk on the topics.
    pub junk: u64,
    /// Records it could not deliver (counted in none of the above).
    pub send_errors: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AssertionRecord {
    pub name: String,
    /// Where the assertion is written: `scenarios/crash.lp:20:1`.
    #[serde(default)]
    pub location: String,
    pub sql: String,
    /// `None`: not evaluated (see `note`).
    pub passed: Option<bool>,
    pub got: Option<String>,
    pub note: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Timings {
    pub load_ms: u64,
    pub drain_ms: u64,
    pub reconcile_ms: u64,
    pub total_ms: u64,
    /// What following every snapshot added to the seed's wall time: the
    /// follower's last look after the consumers stopped, and the check.
    #[serde(default)]
    pub snapshots_ms: u64,
}

/// Everything about one seed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SeedRecord {
    pub seed: u64,
    pub run: String,
    pub verdict: Verdict,
    /// Why INVALID, or which assertions failed.
    pub reason: Option<String>,
    pub planned: Vec<Occurrence>,
    pub faults: Vec<FaultRecord>,
    /// Diff rows per consumer (scored seeds only).
    pub wrong_rows: BTreeMap<String, u64>,
    pub summary: Vec<Summary>,
    /// A few diff rows per consumer (at most [`SAMPLES_PER_CONSUMER`], of
    /// as many kinds as there are), for the report: what the damage looks
    /// like, source and lake side by side.
    #[serde(default)]
    pub samples: Vec<DiffRow>,
    pub assertions: Vec<AssertionRecord>,
    pub workload_ops: u64,
    pub workload_failed: u64,
    /// The workload's operation digest (FNV-1a over every operation it
    /// attempted), one per load phase, `+`-joined: equal for runs of the
    /// seed that attempted the same operations.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub workload_digest: String,
    /// The same over each connection's first 200 operations per phase
    /// (`workload::runner::PREFIX_OPS`): equal when timing alone made the
    /// counts differ.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub workload_prefix_digest: String,
    /// Operations the source accepted per second of the seed (load phases).
    pub ops_per_second: Vec<u64>,
    pub timings: Timings,
    /// Where the diff was written (`--keep`, FAIL).
    pub diff_file: Option<PathBuf>,
    /// Per consumer lake: the maintenance commits (`compact table`,
    /// `expire snapshots`) won and lost against the consumer's commits, and
    /// the consumer's own commits refused by the base check.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub races: BTreeMap<String, Races>,
    /// `preload N`: what was bulk-loaded and how long its initial snapshot
    /// took to reach each consumer's lake.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<SnapshotRecord>,
    /// Per consumer: its lake's lag behind the source over the seed's
    /// phases, as a reader saw it (`crate::freshness`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub freshness: Vec<FreshnessRecord>,
    /// Whether the seed did what its scenario said (its workload's rate,
    /// its faults' timing); `None` when its phases did not finish.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<ScheduleRecord>,
    /// Every lake state each consumer published, checked against the
    /// source's states (`crate::snapshots`), and per consumer the counts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub snapshots: Vec<crate::snapshots::SnapshotRow>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub consistency: Vec<crate::snapshots::ConsistencyRecord>,
    /// The diff rows of keys whose last source change never reached
    /// their topic, taken out of the consumers' damage (the `capture_loss`
    /// table; `lossproof_runtime::reconcile::capture`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capture_loss: Vec<CaptureLossRow>,
    /// Why capture was not checked (its loss then stays in the consumers'
    /// damage).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture_note: Option<String>,
    /// Per consumer, its wrong rows by the fault occurrences they are
    /// charged to (`crate::blame`; the `blame` table row by row).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub damage_by_fault: Vec<crate::blame::FaultDamage>,
    /// The wrong keys of the inconsistent states (the `snapshot_keys`
    /// table; not in the run record: its samples are in `snapshots`).
    #[serde(skip)]
    pub snapshot_keys: Vec<crate::snapshots::KeyRow>,
}

/// A diff row set aside as capture's loss: the row, and the lost change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaptureLossRow {
    #[serde(flatten)]
    pub row: DiffRow,
    /// The source transaction of the change that never reached the topic.
    pub xid: i64,
    /// That change deleted the key.
    pub deleted: bool,
}

impl SeedRecord {
    /// The keys capture lost (each once, whichever consumers had it wrong).
    #[must_use]
    pub fn capture_lost_keys(&self) -> usize {
        self.capture_loss
            .iter()
            .map(|c| (&c.row.table, &c.row.key))
            .collect::<std::collections::BTreeSet<_>>()
            .len()
    }
}

/// A preload's initial snapshot, end to end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotRecord {
    /// Preloaded orders, and rows in all (customers, orders, items).
    pub orders: u64,
    pub rows: u64,
    /// The `COPY` into the source.
    pub preload_ms: u64,
    /// From the connector's start to the consumer's lake holding the whole
    /// snapshot, per consumer.
    pub reached_ms: BTreeMap<String, u64>,
    /// From then to every lake's snapshot follower having read it (`None`:
    /// not within its limit; the phases began anyway).
    #[serde(default)]
    pub followed_ms: Option<u64>,
}

/// The record of a run (`--out`, default `<state>/runs/<run id>.json`):
/// written by `run`, read back by `replay`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRecord {
    pub lossproof_version: String,
    pub scenario: String,
    /// The scenario file, absolute (so `replay` works from any directory).
    pub file: String,
    pub run_id: String,
    pub seeds: Vec<u64>,
    pub consumers: Vec<String>,
    /// `run --time-scale`: every duration of the scenario's timeline was
    /// multiplied by this (`Plan::time_scaled`); 1 for a full run.
    #[serde(default = "full_time")]
    pub time_scale: f64,
    /// Which stack the seeds ran on, and its components' versions.
    #[serde(default)]
    pub stack: StackRecord,
    pub results: Vec<SeedRecord>,
}

/// The stack a run ran on: `local` or the external profile's name, and
/// each component's version as it reported it (docs/profiles.md).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StackRecord {
    pub profile: String,
    pub components: BTreeMap<String, String>,
}

/// A record from before runs named their stack ran on the local one.
impl Default for StackRecord {
    fn default() -> Self {
        Self {
            profile: "local".to_owned(),
            components: BTreeMap::new(),
        }
    }
}

fn full_time() -> f64 {
    1.0
}

impl SeedRecord {
    /// The record of a seed that has not run yet: INVALID until scored,
    /// nothing planned, fired or counted.
    #[must_use]
    pub fn new(seed: u64, run: String) -> Self {
        Self {
            seed,
            run,
            verdict: Verdict::Invalid,
            reason: None,
            planned: Vec::new(),
            faults: Vec::new(),
            wrong_rows: BTreeMap::new(),
            summary: Vec::new(),
            samples: Vec::new(),
            assertions: Vec::new(),
            workload_ops: 0,
            workload_failed: 0,
            workload_digest: String::new(),
            workload_prefix_digest: String::new(),
            ops_per_second: Vec::new(),
            timings: Timings::default(),
            diff_file: None,
            races: BTreeMap::new(),
            snapshot: None,
            freshness: Vec::new(),
            schedule: None,
            snapshots: Vec::new(),
            consistency: Vec::new(),
            snapshot_keys: Vec::new(),
            capture_loss: Vec::new(),
            capture_note: None,
            damage_by_fault: Vec::new(),
        }
    }
}

impl SeedRecord {
    /// Each consumer's lag in this seed as the probe measured it (what
    /// every report shows), for the consumers it was measured for.
    pub fn lags(&self) -> impl Iterator<Item = &FreshnessRecord> {
        self.freshness
            .iter()
            .filter(|f| f.method == "probe" && !f.lags_ms.is_empty())
    }

    /// Consumer `consumer`'s lag in this seed ([`SeedRecord::lags`]), if it
    /// was measured.
    #[must_use]
    pub fn lag_of(&self, consumer: &str) -> Option<&FreshnessRecord> {
        self.lags().find(|f| f.consumer == consumer)
    }

    /// Consumer `consumer`'s snapshots in this seed (checked or why not),
    /// if the seed got as far as checking them.
    #[must_use]
    pub fn consistency_of(&self, consumer: &str) -> Option<&crate::snapshots::ConsistencyRecord> {
        self.consistency.iter().find(|c| c.consumer == consumer)
    }

    /// Whether the seed did what its scenario said (docs/run.md, "On
    /// schedule"), so its damage and lag count with the others'; a seed
    /// whose phases did not finish has nothing to count anyway.
    #[must_use]
    pub fn on_schedule(&self) -> bool {
        self.schedule
            .as_ref()
            .is_none_or(ScheduleRecord::on_schedule)
    }
}

impl FaultRecord {
    /// Occurrence `o` as planned: not reached yet.
    #[must_use]
    pub fn planned(o: &Occurrence, location: String) -> Self {
        Self {
            phase: o.phase,
            planned_ms: o.offset_ms,
            action: o.action,
            fault: o.fault.clone(),
            text: o.text.clone(),
            location,
            fired: false,
            due_ms: None,
            fired_ms: None,
            drift_ms: None,
            done_ms: None,
            ends_ms: None,
            during_load: false,
            outcome: "not reached".into(),
            counts: None,
        }
    }
}

impl RunRecord {
    /// Read a record written by `run`.
    pub fn read(path: &std::path::Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(Error::io(format!("cannot read {}", path.display())))?;
        serde_json::from_str(&text).map_err(|source| Error::Record {
            path: path.to_owned(),
            source,
        })
    }

    /// One record of the seeds of `records`: shards of one run (`run
    /// --partition K/N` on several machines) or runs of the same scenario
    /// and consumers on different days. Refused, with the reason: no
    /// record, records of different scenarios or consumers, a seed in two
    /// records (which one counts would be a guess). Seeds come out in
    /// order; the run id lists the runs merged.
    pub fn merge(records: Vec<Self>) -> Result<Self> {
        let mut records = records.into_iter();
        let mut merged = records
            .next()
            .ok_or_else(|| Error::Merge("no run record to merge".into()))?;
        let mut run_ids = vec![merged.run_id.clone()];
        for record in records {
            if record.scenario != merged.scenario {
                return Err(Error::Merge(format!(
                    "run {} is of scenario {}, run {} of {}: only runs of one scenario merge",
                    merged.run_id, merged.scenario, record.run_id, record.scenario
                )));
            }
            if (record.time_scale - merged.time_scale).abs() > f64::EPSILON {
                return Err(Error::Merge(format!(
                    "run {} ran at time scale {}, run {} at {}: their damage would not compare",
                    merged.run_id, merged.time_scale, record.run_id, record.time_scale
                )));
            }
            if record.stack.profile != merged.stack.profile {
                return Err(Error::Merge(format!(
                    "run {} ran on stack {}, run {} on {}: their damage would not compare",
                    merged.run_id, merged.stack.profile, record.run_id, record.stack.profile
                )));
            }
            if record.consumers != merged.consumers {
                return Err(Error::Merge(format!(
                    "run {} tested consumers {}, run {} tested {}: their distributions would not compare",
                    merged.run_id,
                    merged.consumers.join(","),
                    record.run_id,
                    record.consumers.join(",")
                )));
            }
            if let Some(seed) = record.seeds.iter().find(|s| merged.seeds.contains(s)) {
                return Err(Error::Merge(format!(
                    "seed {seed} is in run {} and in run {}: merge runs of disjoint seeds \
                     (e.g. `--partition 1/2` and `--partition 2/2`)",
                    merged.run_id, record.run_id
                )));
            }
            run_ids.push(record.run_id);
            merged.seeds.extend(record.seeds);
            merged.results.extend(record.results);
        }
        merged.seeds.sort_unstable();
        merged.results.sort_by_key(|r| r.seed);
        if run_ids.len() > 1 {
            merged.run_id = run_ids.join("+");
        }
        Ok(merged)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed(seed: u64, wrong: u64) -> SeedRecord {
        let mut record = SeedRecord::new(seed, format!("runs{seed}"));
        record.verdict = if wrong == 0 {
            Verdict::Pass
        } else {
            Verdict::Fail
        };
        record.wrong_rows = BTreeMap::from([("careless".to_owned(), wrong)]);
        record
    }

    fn record(run_id: &str, scenario: &str, seeds: &[u64]) -> RunRecord {
        RunRecord {
            lossproof_version: "0".into(),
            scenario: scenario.into(),
            file: "crash.lp".into(),
            run_id: run_id.into(),
            seeds: seeds.to_vec(),
            consumers: vec!["careless".into()],
            time_scale: 1.0,
            stack: StackRecord::default(),
            results: seeds.iter().map(|s| seed(*s, *s)).collect(),
        }
    }

    #[test]
    fn shards_merge_into_one_run_in_seed_order() {
        let merged = RunRecord::merge(vec![
            record("a", "crash", &[2, 4]),
            record("b", "crash", &[1, 3]),
        ])
        .unwrap();
        assert_eq!(merged.seeds, [1, 2, 3, 4]);
        let order: Vec<u64> = merged.results.iter().map(|r| r.seed).collect();
        assert_eq!(order, [1, 2, 3, 4]);
        assert_eq!(merged.run_id, "a+b");
        assert_eq!(merged.results[2].wrong_rows["careless"], 3);
    }

    #[test]
    fn records_that_do_not_belong_together_are_refused() {
        let refused = |records| match RunRecord::merge(records) {
            Err(Error::Merge(why)) => why,
            other => panic!("expected a refusal, got {other:?}"),
        };
        assert!(refused(vec![]).contains("no run record"));
        let why = refused(vec![record("a", "crash", &[1]), record("b", "widen", &[2])]);
        assert!(
            why.contains("scenario crash") && why.contains("widen"),
            "{why}"
        );
        let why = refused(vec![
            record("a", "crash", &[1, 2]),
            record("b", "crash", &[2, 3]),
        ]);
        assert!(why.contains("seed 2"), "{why}");
        let mut other = record("b", "crash", &[3]);
        other.consumers = vec!["correct".into()];
        let why = refused(vec![record("a", "crash", &[1]), other]);
        assert!(why.contains("consumers"), "{why}");
    }
}
