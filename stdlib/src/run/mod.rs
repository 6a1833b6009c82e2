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
use lossproof_runtime::reconcile::Summary;
use lossproof_runtime::{ConnectClient, Lake, Stack};
use serde::{Deserialize, Serialize};

use crate::fault::Ctx;

mod cleanup;
mod drain;
mod interrupt;
mod phases;
mod score;
mod setup;

pub use interrupt::{Interrupt, interrupt_on_signals, never_interrupted};
pub use score::{faults_batch, nothing_to_judge};

/// `LOSSPROOF_RUN_FAILPOINT=panic-during-load` makes the executor panic
/// one second into a load phase (tests check that clean-up still runs).
pub const FAILPOINT: &str = "LOSSPROOF_RUN_FAILPOINT";

/// How a run executes its seeds.
#[derive(Debug, Clone)]
pub struct Options {
    pub state: PathBuf,
    /// The `lossproof` binary (runs the consumers).
    pub program: PathBuf,
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
}

impl Locations {
    /// Render every span of `plan` with the analysed `sources`.
    #[must_use]
    pub fn of(plan: &Plan, sources: &[lossproof_lang::analyzer::Source]) -> Self {
        let at = |span| lossproof_lang::render::location(sources, span);
        Self {
            actions: plan.actions.iter().map(|a| at(a.span)).collect(),
            assertions: plan.assertions.iter().map(|a| at(a.span)).collect(),
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
    pub assertions: Vec<AssertionRecord>,
    pub workload_ops: u64,
    pub workload_failed: u64,
    /// Operations the source accepted per second of the seed (load phases).
    pub ops_per_second: Vec<u64>,
    pub timings: Timings,
    /// Where the diff was written (`--keep`, FAIL).
    pub diff_file: Option<PathBuf>,
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
    pub results: Vec<SeedRecord>,
}

impl RunRecord {
    /// Read a record written by `run`.
    pub fn read(path: &std::path::Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        serde_json::from_str(&text)
            .map_err(|e| format!("{} is not a run record: {e}", path.display()))
    }
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
    let mut record = SeedRecord {
        seed,
        run: run.clone(),
        verdict: Verdict::Invalid,
        reason: None,
        planned: timeline.occurrences.clone(),
        faults: timeline
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
                during_load: false,
                outcome: "not reached".into(),
            })
            .collect(),
        wrong_rows: BTreeMap::new(),
        summary: Vec::new(),
        assertions: Vec::new(),
        workload_ops: 0,
        workload_failed: 0,
        ops_per_second: Vec::new(),
        timings: Timings::default(),
        diff_file: None,
    };
    if let Err(reason) = execute(stack, plan, seed, options, &run, &mut record, progress).await {
        record.verdict = Verdict::Invalid;
        record.reason = Some(reason);
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
) -> Result<(), String> {
    let ports = stack.ports().map_err(|e| e.to_string())?;
    let names = CaptureNames::for_run(run);
    let source = lossproof_runtime::postgres::connect(
        ports.source_postgres,
        lossproof_runtime::stack::SOURCE_DATABASE,
    )
    .await
    .map_err(|e| format!("source database: {e}"))?;
    let connect = ConnectClient::new(ports.connect);
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
            Err(format!("the executor panicked: {what}"))
        }),
        signal = interrupt::interrupted(options.interrupt.clone()) => {
            progress(&format!("{signal}: stopping the seed and cleaning up"));
            Err(format!("interrupted by {signal}"))
        }
    };
    if result.is_err() {
        record.verdict = Verdict::Invalid;
    }
    progress("cleaning up");
    cleanup::cleanup(
        stack,
        &connect,
        &names,
        &source,
        options,
        record.verdict,
        ports.broker,
    )
    .await;
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
) -> Result<(), String> {
    // 1. Set-up: source tables, topics, connector, consumers.
    let prepared =
        setup::setup(stack, plan, options, run, names, source, connect, progress).await?;
    let alive = Arc::new(());
    let mut ctx = Ctx {
        seed_alive: Arc::downgrade(&alive),
        seed,
        occurrence: 0,
        phase_end: Instant::now(),
        stack,
        ports: prepared.ports,
        source,
        connect,
        names,
        connector_config: &prepared.config,
        workload: prepared.workload,
        consumers: &prepared.consumers,
    };
    let positions = crate::consumer::positions(&options.consumers, names, prepared.workload);
    let lake = Lake::open(stack.state().root())
        .await
        .map_err(|e| e.to_string())?;

    // 2. Phases: the workload runs, faults fire at their planned offsets.
    let drain_limit = phases::phases(&mut ctx, plan, &positions, &lake, record, progress).await?;

    // 3. The final drain, then the consumers stop.
    progress("draining");
    let drain_start = Instant::now();
    let gated = drain::drain(&ctx, &positions, &lake, drain_limit).await;
    record.timings.drain_ms = millis(drain_start.elapsed());
    let stopped = drain::stop_consumers(&prepared.consumers, &prepared.logs).await;
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
