//! The run record (`--out`, default `<state>/runs/<run id>.json`): what
//! `run` writes and `replay`, `report` and `shrink` read back — each seed's
//! [`SeedRecord`] inside a [`RunRecord`].

use std::collections::BTreeMap;
use std::path::PathBuf;

use lossproof_lang::timeline::Occurrence;
use lossproof_runtime::reconcile::{DiffRow, Summary};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::fault::maintenance::Races;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Verdict {
    Pass,
    Fail,
    Invalid,
}

/// One planned fault occurrence and what became of it.
#[derive(Debug, Clone, Serialize, Deserialize)]
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
    /// Milliseconds from the seed's start, when it fired.
    pub fired_ms: Option<u64>,
    /// When it stopped acting, for a fault that lasts (a network fault,
    /// `duplicate`): its `for` length or its phase's end, whichever came first.
    #[serde(default)]
    pub ends_ms: Option<u64>,
    /// Whether the workload was still running when it fired.
    pub during_load: bool,
    /// What it did, or why it did not fire.
    pub outcome: String,
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
            ops_per_second: Vec::new(),
            timings: Timings::default(),
            diff_file: None,
            races: BTreeMap::new(),
            snapshot: None,
        }
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
            fired_ms: None,
            ends_ms: None,
            during_load: false,
            outcome: "not reached".into(),
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
