//! The executor of one seed: the plan's timeline against the real stack.
//! One seed is these steps, each in a module of its own, called in order by
//! [`run_seed`] (read `seed_body` top to bottom):
//!
//! 1. [`setup`]: the timeline for the seed (`Plan::timeline`, `with chance`
//!    drawn once); the source tables re-created, the change topics created,
//!    the connector, slot, publication, topics, groups and Iceberg
//!    namespaces all named for the seed's run id; the consumers started as
//!    supervised child processes;
//! 2. [`phases`]: the workload runs, every fault fires at its planned offset
//!    WHILE it runs, and what really happened is recorded (`faults`); a
//!    drain between phases gates;
//! 3. [`drain`]: connector RUNNING, slot at the source's final LSN, every
//!    consumer at the end of every partition of every topic — else INVALID;
//! 4. [`score`]: the reconciler scores each consumer's lake and the
//!    assertions run over its tables; the verdict;
//! 5. [`cleanup`], on EVERY path out of 1-4 (a result, an error, INVALID, a
//!    panic, SIGINT or SIGTERM via [`interrupt`]): consumers stopped,
//!    connector, slot, publication, topics and groups removed, namespaces
//!    dropped (kept with `--keep` when the seed did not pass);
//! 6. the record ([`SeedRecord`], inside a [`RunRecord`]).
//!
//! It lives in stdlib (not runtime) because it drives the stdlib's workload,
//! faults and consumers; the pieces it is built from (supervisor, gate,
//! reconciler, lake) are runtime's.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lossproof_lang::Plan;
use lossproof_lang::timeline::Occurrence;
use lossproof_runtime::debezium::CaptureNames;
use lossproof_runtime::reconcile::{DiffRow, Summary};
use lossproof_runtime::{ConnectClient, Stack};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::fault::Ctx;

mod cleanup;
mod drain;
mod interrupt;
mod phases;
mod score;
mod setup;

pub use cleanup::clean_run;
pub use interrupt::{Interrupt, interrupt_on_signals, never_interrupted};
pub use score::{assertion_tables, nothing_to_judge};

/// Diff rows kept per consumer in a seed's record (`SeedRecord::samples`).
pub const SAMPLES_PER_CONSUMER: usize = 8;

/// `LOSSPROOF_RUN_FAILPOINT=panic-during-load` makes the executor panic
/// one second into a load phase (tests check that clean-up still runs).
pub const FAILPOINT: &str = "LOSSPROOF_RUN_FAILPOINT";

/// How a run executes its seeds.
#[derive(Debug, Clone)]
pub struct Options {
    pub state: PathBuf,
    /// The external profile the run is on (`run --profile`), passed on to
    /// the consumers and the compactor.
    pub profile: Option<PathBuf>,
    /// The `lossproof` binary (runs the consumers).
    pub program: PathBuf,
    /// The scenario file's folder: declared consumers' commands run there.
    pub scenario_dir: PathBuf,
    /// Consumers under test.
    pub consumers: Vec<String>,
    /// Prefix of every seed's run id (letters and digits).
    pub run_id: String,
    /// Keep a failed seed's lake and write its diff.
    pub keep: bool,
    /// Turns to `Some("SIGINT")`/`Some("SIGTERM")` when the run is told to
    /// stop: the seed under way stops, is cleaned up and is INVALID.
    pub interrupt: Interrupt,
    /// `file:line:col` of each of the plan's actions and assertions (by
    /// index), for the live log, the record, JUnit and HTML.
    pub locations: Locations,
}

/// Where the plan's actions and assertions are written in the `.lp` files.
#[derive(Debug, Clone, Default)]
pub struct Locations {
    pub actions: Vec<String>,
    pub assertions: Vec<String>,
    /// Of each declared consumer (`plan.declared`, by index).
    pub declared: Vec<String>,
}

impl Locations {
    /// Render every span of `plan` with the analysed `sources`.
    #[must_use]
    pub fn of(plan: &Plan, sources: &[lossproof_lang::analyzer::Source]) -> Self {
        let at = |span| lossproof_lang::render::location(sources, span);
        Self {
            actions: plan.actions.iter().map(|a| at(a.span)).collect(),
            assertions: plan.assertions.iter().map(|a| at(a.span)).collect(),
            declared: plan.declared.iter().map(|d| at(d.span)).collect(),
        }
    }

    fn action(&self, index: usize) -> String {
        self.actions.get(index).cloned().unwrap_or_default()
    }
}

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
    pub races: BTreeMap<String, crate::fault::maintenance::Races>,
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

/// The `k`-th of `n` shares of `seeds` (1-based, nextest's `count:K/N`):
/// seed i (in the order given) goes to share `i % n + 1`, so the shares are
/// disjoint, cover every seed, and differ in size by one at most.
///
/// # Errors
/// When `k` is not in `1..=n`.
pub fn partition(seeds: &[u64], k: usize, n: usize) -> Result<Vec<u64>> {
    if n == 0 || k == 0 || k > n {
        return Err(Error::Unsupported(format!(
            "--partition {k}/{n}: K must be 1 to N (the K-th of N shares)"
        )));
    }
    Ok(seeds
        .iter()
        .enumerate()
        .filter(|(i, _)| i % n == k - 1)
        .map(|(_, s)| *s)
        .collect())
}

/// Run one seed. Never panics on a stack problem: that is an INVALID seed
/// with the reason.
pub async fn run_seed(
    stack: &Stack,
    plan: &Plan,
    seed: u64,
    options: &Options,
    progress: &(dyn Fn(&str) + Sync),
) -> SeedRecord {
    let started = Instant::now();
    let run = format!("{}s{seed}", options.run_id);
    let timeline = plan.timeline(seed);
    let mut record = SeedRecord::new(seed, run.clone());
    record.planned.clone_from(&timeline.occurrences);
    record.faults = timeline
        .occurrences
        .iter()
        .map(|o| FaultRecord {
            phase: o.phase,
            planned_ms: o.offset_ms,
            action: o.action,
            fault: o.fault.clone(),
            text: o.text.clone(),
            location: options.locations.action(o.action),
            fired: false,
            fired_ms: None,
            ends_ms: None,
            during_load: false,
            outcome: "not reached".into(),
        })
        .collect();
    if let Err(error) = execute(stack, plan, seed, options, &run, &mut record, progress).await {
        record.verdict = Verdict::Invalid;
        record.reason = Some(error.to_string());
    }
    record.timings.total_ms = millis(started.elapsed());
    record
}

/// One seed on the stack; clean-up runs whatever `seed_body` returned.
async fn execute(
    stack: &Stack,
    plan: &Plan,
    seed: u64,
    options: &Options,
    run: &str,
    record: &mut SeedRecord,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<()> {
    let endpoints = stack.endpoints()?;
    // A database of the seed's own: seeds running at once (`--jobs`) each
    // have their tables, history and publication; dropped in clean-up.
    let names = CaptureNames::for_run(run).in_own_database();
    lossproof_runtime::postgres::ensure_database(&endpoints.source, &names.database).await?;
    let source = match endpoints.source.connect(&names.database).await {
        Ok(source) => source,
        Err(e) => {
            let _ = lossproof_runtime::postgres::drop_database(&endpoints.source, &names.database)
                .await;
            return Err(e.into());
        }
    };
    let connect = ConnectClient::new(&endpoints.connect);
    // Whatever happens from here on (an error, INVALID, a failed fault, a
    // panic, SIGINT or SIGTERM), the seed's consumers stop (dropping the
    // body drops their process groups and aborts the workload) and its
    // connector, slot, publication, topics and groups are removed.
    let body = std::panic::AssertUnwindSafe(seed_body(
        stack, plan, seed, options, run, &names, &source, &connect, record, progress,
    ));
    let result = tokio::select! {
        finished = futures_util::FutureExt::catch_unwind(body) => finished.unwrap_or_else(|panic| {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(no message)".to_owned());
            Err(Error::Panicked(what))
        }),
        signal = interrupt::interrupted(options.interrupt.clone()) => {
            progress(&format!("{signal}: stopping the seed and cleaning up"));
            Err(Error::Interrupted(signal))
        }
    };
    if result.is_err() {
        record.verdict = Verdict::Invalid;
    }
    progress("cleaning up");
    let left = cleanup::cleanup(
        stack,
        &connect,
        &names,
        &source,
        &options.consumers,
        &crate::own::slots(&plan.declared, &options.consumers, &names),
        // A seed that did not pass keeps its data with `--keep`.
        !(options.keep && record.verdict != Verdict::Pass),
        &endpoints,
    )
    .await;
    for error in left {
        progress(&format!("clean-up: could not remove: {error}"));
    }
    result
}

/// One seed's steps, in order; clean-up is the caller's (on every path).
#[allow(clippy::too_many_arguments)] // the seed's identity and its connections
async fn seed_body(
    stack: &Stack,
    plan: &Plan,
    seed: u64,
    options: &Options,
    run: &str,
    names: &CaptureNames,
    source: &tokio_postgres::Client,
    connect: &ConnectClient,
    record: &mut SeedRecord,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<()> {
    // 1. Set-up: source tables, topics, connector, consumers.
    let prepared =
        setup::setup(stack, plan, options, run, names, source, connect, progress).await?;
    let alive = Arc::new(());
    let lake = prepared.endpoints.open_lake().await?;
    let races = std::sync::Mutex::new(BTreeMap::new());
    let mut ctx = Ctx {
        seed_alive: Arc::downgrade(&alive),
        seed,
        occurrence: 0,
        phase_end: Instant::now(),
        stack,
        endpoints: &prepared.endpoints,
        source,
        connect,
        names,
        connector_config: &prepared.config,
        workload: &prepared.workload,
        consumers: &prepared.consumers,
        compactor: &prepared.compactor,
        acts_for: None,
        lake: &lake,
        races: &races,
        profile: options.profile.as_deref(),
    };
    let positions = crate::consumer::positions(
        &options.consumers,
        &plan.declared,
        names,
        &prepared.workload,
    );

    // 2. Phases: the workload runs, faults fire at their planned offsets.
    let drain_limit = phases::phases(&mut ctx, plan, &positions, &lake, record, progress).await?;
    // The compactor works through the phases only: the drain and the score
    // see the consumers alone.
    if let Some(compactor) = prepared.compactor.lock().await.as_mut() {
        compactor.terminate(Duration::from_secs(10));
    }

    // 3. The final drain, then the consumers stop.
    progress("draining");
    let drain_start = Instant::now();
    let gated = drain::drain(&ctx, &positions, &lake, drain_limit).await;
    record.timings.drain_ms = millis(drain_start.elapsed());
    let stopped = drain::stop_consumers(&prepared.consumers, &prepared.logs).await;
    record.races = races
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    if let Ok(text) = std::fs::read_to_string(prepared.logs.join(setup::COMPACTOR_RECORD)) {
        for (consumer, compactor) in crate::fault::maintenance::tally_record(&text) {
            *record.races.entry(consumer).or_default() += &compactor;
        }
    }
    for consumer in &options.consumers {
        let conflicts = drain::conflicts_logged(&prepared.logs.join(format!("{consumer}.log")));
        if conflicts > 0 || record.races.contains_key(consumer) {
            record
                .races
                .entry(consumer.clone())
                .or_default()
                .consumer_conflicts = conflicts;
        }
    }
    if !stopped.is_empty() {
        // A consumer that refused to guess is a FAIL with its reason, never
        // a count (it stopped on purpose) nor an INVALID (nothing is wrong
        // with the stack).
        record.verdict = Verdict::Fail;
        record.reason = Some(stopped.join("; "));
        return Ok(());
    }
    gated?;

    // 4. Score: reconcile, evaluate the assertions, set the verdict.
    progress("reconciling");
    let reconcile_start = Instant::now();
    let scored = score::score(stack, plan, options, names, source, &lake, record).await;
    record.timings.reconcile_ms = millis(reconcile_start.elapsed());
    scored
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
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
    fn partitions_are_disjoint_cover_every_seed_and_balance() {
        let seeds: Vec<u64> = (1..=50).collect();
        for n in 1..=7 {
            let mut all = Vec::new();
            for k in 1..=n {
                let share = partition(&seeds, k, n).unwrap();
                assert!(share.len().abs_diff(seeds.len() / n) <= 1, "{k}/{n}");
                all.extend(share);
            }
            all.sort_unstable();
            assert_eq!(all, seeds, "n = {n}");
        }
        assert_eq!(partition(&[1, 2, 3, 4, 5], 2, 2).unwrap(), [2, 4]);
        for (k, n) in [(0, 2), (3, 2), (1, 0)] {
            assert!(
                matches!(partition(&seeds, k, n), Err(Error::Unsupported(_))),
                "{k}/{n}"
            );
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
