//! The executor of one seed: the plan's timeline against the real stack.
//!
//! 1. timeline for the seed (`Plan::timeline`);
//! 2. isolation: the source tables are re-created, and the connector, slot,
//!    publication, topics, consumer groups and Iceberg namespaces all carry
//!    the seed's run id;
//! 3. the consumers under test start (supervised child processes), the
//!    workload runs, and every fault fires at its planned offset WHILE it
//!    runs; what really happened is recorded (`faults`);
//! 4. the drain gate: connector RUNNING, slot at the source's final LSN,
//!    every consumer's group at the end of every topic — else INVALID;
//! 5. the reconciler scores each consumer's lake, the assertions run over
//!    `diff`, `summary`, `source_rows`, `lake_rows` and `faults`;
//! 6. clean-up: consumers stopped, connector/slot/publication removed,
//!    topics deleted, namespaces dropped (kept with `--keep` for a FAIL).
//!
//! It lives in stdlib (not runtime) because it drives the stdlib's workload,
//! faults and consumers; the pieces it is built from (supervisor, gate,
//! reconciler, lake) are runtime's.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::{ArrayRef, BooleanArray, RecordBatch, StringArray, UInt64Array};
use lossproof_lang::Plan;
use lossproof_lang::plan::{Phase, SettingValue};
use lossproof_lang::timeline::Occurrence;
use lossproof_runtime::debezium::{self, CaptureNames};
use lossproof_runtime::reconcile::{self, Summary, gate};
use lossproof_runtime::supervisor::Supervised;
use lossproof_runtime::{ConnectClient, Lake, Stack};
use serde::Serialize;

use crate::fault::{self, Ctx};
use crate::workload;

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

/// A run's stop signal, see [`Options::interrupt`] and [`interrupt_on_signals`].
pub type Interrupt = tokio::sync::watch::Receiver<Option<&'static str>>;

/// An [`Interrupt`] that turns on SIGINT (Ctrl-C) or SIGTERM. Installing it
/// replaces the default handlers: the process no longer dies on them, the
/// seed under way is stopped and cleaned up instead. Needs a Tokio runtime.
pub fn interrupt_on_signals() -> Result<Interrupt, String> {
    use tokio::signal::unix::{SignalKind, signal};
    let (tx, rx) = tokio::sync::watch::channel(None);
    let mut int = signal(SignalKind::interrupt()).map_err(|e| format!("SIGINT handler: {e}"))?;
    let mut term = signal(SignalKind::terminate()).map_err(|e| format!("SIGTERM handler: {e}"))?;
    tokio::spawn(async move {
        let name = tokio::select! {
            _ = int.recv() => "SIGINT",
            _ = term.recv() => "SIGTERM",
        };
        let _ = tx.send(Some(name));
        // Later signals are absorbed: clean-up is bounded and finishes.
        loop {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
        }
    });
    Ok(rx)
}

/// An [`Interrupt`] that never turns on (tests, benches).
#[must_use]
pub fn never_interrupted() -> Interrupt {
    let (tx, rx) = tokio::sync::watch::channel(None);
    std::mem::forget(tx);
    rx
}

/// Resolves with the signal's name once `interrupt` turns on.
async fn interrupted(mut interrupt: Interrupt) -> &'static str {
    loop {
        if let Some(name) = *interrupt.borrow_and_update() {
            return name;
        }
        if interrupt.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Verdict {
    Pass,
    Fail,
    Invalid,
}

/// One planned fault occurrence and what became of it.
#[derive(Debug, Clone, Serialize)]
pub struct FaultRecord {
    pub phase: usize,
    pub planned_ms: u64,
    pub action: usize,
    pub fault: String,
    pub text: String,
    /// Where the action is written: `scenarios/crash.lp:14:3`.
    pub location: String,
    pub fired: bool,
    /// Milliseconds from the seed's start, when it fired.
    pub fired_ms: Option<u64>,
    /// Whether the workload was still running when it fired.
    pub during_load: bool,
    /// What it did, or why it did not fire.
    pub outcome: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct AssertionRecord {
    pub name: String,
    /// Where the assertion is written: `scenarios/crash.lp:20:1`.
    pub location: String,
    pub sql: String,
    /// `None`: not evaluated (see `note`).
    pub passed: Option<bool>,
    pub got: Option<String>,
    pub note: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Timings {
    pub load_ms: u64,
    pub drain_ms: u64,
    pub reconcile_ms: u64,
    pub total_ms: u64,
}

/// Everything about one seed.
#[derive(Debug, Clone, Serialize)]
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
        signal = interrupted(options.interrupt.clone()) => {
            progress(&format!("{signal}: stopping the seed and cleaning up"));
            Err(format!("interrupted by {signal}"))
        }
    };
    if result.is_err() {
        record.verdict = Verdict::Invalid;
    }
    progress("cleaning up");
    cleanup(
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

/// Set-up, phases, drain and score of one seed (clean-up is the caller's).
#[allow(clippy::too_many_lines, clippy::too_many_arguments)] // one seed's data flow, read top to bottom
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
    let ports = stack.ports().map_err(|e| e.to_string())?;
    let database = lossproof_runtime::stack::SOURCE_DATABASE;
    let orders = &crate::workloads::WORKLOADS[0];
    let full = matches!(plan.settings.get("replica_identity"), Some(SettingValue::Choice(c)) if c == "full");
    let partitions = match plan.settings.get("partitions") {
        Some(SettingValue::Count(n)) => i32::try_from(*n).unwrap_or(1),
        _ => 1,
    };
    progress("preparing: source tables, connector, consumers");
    let config = workload::capture(
        source,
        connect,
        &ports,
        names,
        orders,
        full,
        partitions,
        Duration::from_mins(2),
    )
    .await?;

    let logs = stack.state().root().join("runs").join(run);
    std::fs::create_dir_all(&logs).map_err(|e| format!("{}: {e}", logs.display()))?;
    let mut consumers = BTreeMap::new();
    for kind in &options.consumers {
        let mut consumer = Supervised::new(
            kind,
            options.program.clone(),
            consumer_args(kind, run, options, plan),
            logs.join(format!("{kind}.log")),
        );
        consumer
            .start()
            .map_err(|e| format!("start consumer {kind}: {e}"))?;
        consumers.insert(kind.clone(), consumer);
    }
    let consumers = tokio::sync::Mutex::new(consumers);
    let alive = Arc::new(());
    let mut ctx = Ctx {
        seed_alive: Arc::downgrade(&alive),
        seed,
        occurrence: 0,
        phase_end: Instant::now(),
        stack,
        ports,
        source,
        connect,
        names,
        connector_config: &config,
        workload: orders,
        consumers: &consumers,
    };

    let positions = crate::consumer::positions(&options.consumers, names, orders);
    let lake = Lake::open(stack.state().root())
        .await
        .map_err(|e| e.to_string())?;

    // Phases: the workload runs, faults fire at their offsets meanwhile.
    // Load phases continue the same streams (no key is inserted twice).
    let mut streams = Some(workload::Streams::new(&plan.workload, seed));
    let seed_start = Instant::now();
    let mut drain_limit = Duration::from_mins(2);
    for (index, phase) in plan.phases.iter().enumerate() {
        let (duration_ms, load) = match phase {
            Phase::Load { duration_ms, .. } => (*duration_ms, true),
            Phase::Quiet { duration_ms, .. } => (*duration_ms, false),
            Phase::Drain { timeout_ms, .. } => {
                drain_limit = Duration::from_millis(*timeout_ms);
                let later_load = plan.phases[index + 1..]
                    .iter()
                    .any(|p| !matches!(p, Phase::Drain { .. }));
                if later_load {
                    // A drain between phases gates like the final one: the
                    // pipeline must catch up before the next phase, else the
                    // seed is INVALID.
                    progress(&format!(
                        "phase {}: {} (between phases)",
                        index + 1,
                        phase.describe()
                    ));
                    let started = Instant::now();
                    drain(&ctx, &positions, &lake, drain_limit)
                        .await
                        .map_err(|e| {
                            format!("the drain between phases (phase {}): {e}", index + 1)
                        })?;
                    progress(&format!(
                        "drained in {:.1}s",
                        started.elapsed().as_secs_f64()
                    ));
                }
                continue;
            }
        };
        progress(&format!("phase {}: {}", index + 1, phase.describe()));
        let phase_start = Instant::now();
        let duration = Duration::from_millis(duration_ms);
        ctx.phase_end = phase_start + duration;
        let workload = match (load, streams.take()) {
            (true, Some(mut streams)) => {
                let plan = plan.workload.clone();
                Some(workload::AbortOnDrop(tokio::spawn(async move {
                    let report = streams
                        .run(&plan, ports.source_postgres, database, duration)
                        .await;
                    (streams, report)
                })))
            }
            (false, kept) => {
                streams = kept;
                None
            }
            (true, None) => return Err("the workload's streams were lost".into()),
        };
        if load && std::env::var_os(FAILPOINT).is_some_and(|v| v == "panic-during-load") {
            // The executor's own test hook: a bug in the middle of a load.
            tokio::time::sleep(Duration::from_secs(1)).await;
            panic!("failpoint {FAILPOINT}=panic-during-load");
        }
        for (i, occurrence) in record
            .planned
            .iter()
            .enumerate()
            .filter(|(_, o)| o.phase == index)
        {
            tokio::time::sleep_until(
                (phase_start + Duration::from_millis(occurrence.offset_ms)).into(),
            )
            .await;
            // `with chance N%` was drawn when the timeline was planned: what
            // is planned fires, so the record's planned and fired lists agree.
            let action = &plan.actions[occurrence.action];
            let entry = &mut record.faults[i];
            entry.during_load = workload.as_ref().is_some_and(|w| !w.0.is_finished());
            entry.fired_ms = Some(millis(seed_start.elapsed()));
            ctx.occurrence = i;
            let fire = fault::find(&action.fault)
                .ok_or_else(|| format!("fault {} has no implementation", action.fault))?;
            let outcome = tokio::time::timeout(Duration::from_mins(2), fire(&ctx, action))
                .await
                .unwrap_or_else(|_| Err("did not finish within 2 min".into()));
            entry.fired = outcome.is_ok();
            entry.outcome = outcome.unwrap_or_else(|why| format!("not fired: {why}"));
            progress(&format!(
                "+{:.1}s {} ({}): {}",
                Duration::from_millis(entry.fired_ms.unwrap_or(0)).as_secs_f64(),
                entry.text,
                entry.location,
                entry.outcome
            ));
        }
        match workload {
            Some(mut handle) => {
                let (kept, report) = (&mut handle.0)
                    .await
                    .map_err(|e| format!("workload: {e}"))?;
                streams = Some(kept);
                let report = report.map_err(|e| format!("workload: {e}"))?;
                record.workload_ops += report.ops;
                record.workload_failed += report.failed;
                // Place the phase's seconds on the seed's clock.
                let offset =
                    usize::try_from(phase_start.duration_since(seed_start).as_secs()).unwrap_or(0);
                if record.ops_per_second.len() < offset + report.ops_per_second.len() {
                    record
                        .ops_per_second
                        .resize(offset + report.ops_per_second.len(), 0);
                }
                for (i, n) in report.ops_per_second.iter().enumerate() {
                    record.ops_per_second[offset + i] += n;
                }
            }
            None => tokio::time::sleep_until((phase_start + duration).into()).await,
        }
    }
    record.timings.load_ms = millis(seed_start.elapsed());

    progress("draining");
    let drain_start = Instant::now();
    let gated = drain(&ctx, &positions, &lake, drain_limit).await;
    record.timings.drain_ms = millis(drain_start.elapsed());
    let mut stopped = Vec::new();
    for consumer in consumers.lock().await.values_mut() {
        consumer.terminate(Duration::from_secs(30));
        if let Some(line) = fatal_line(&logs.join(format!("{}.log", consumer.name))) {
            stopped.push(format!("consumer {} stopped: {line}", consumer.name));
        }
    }
    if !stopped.is_empty() {
        // A consumer that refused to guess is a FAIL with its reason, never
        // a count (it stopped on purpose) nor an INVALID (nothing is wrong
        // with the stack).
        record.verdict = Verdict::Fail;
        record.reason = Some(stopped.join("; "));
        Ok(())
    } else if let Err(invalid) = gated {
        Err(invalid)
    } else {
        progress("reconciling");
        let reconcile_start = Instant::now();
        let scored = score(stack, plan, options, names, source, &lake, record).await;
        record.timings.reconcile_ms = millis(reconcile_start.elapsed());
        scored
    }
}

/// Bring the pipeline to the source's current end, bounded by `limit`:
/// stopped or paused consumers run again (faults measure damage, not
/// liveness), then the gate must hold — connector RUNNING, slot at the
/// source's LSN as of now, every consumer at the end of every topic.
async fn drain(
    ctx: &Ctx<'_>,
    positions: &[gate::ConsumerPosition],
    lake: &Lake,
    limit: Duration,
) -> Result<(), String> {
    for consumer in ctx.consumers.lock().await.values_mut() {
        consumer.resume();
        consumer
            .start()
            .map_err(|e| format!("restart consumer {}: {e}", consumer.name))?;
    }
    let final_lsn = debezium::current_lsn(ctx.source)
        .await
        .map_err(|e| e.to_string())?;
    gate::wait_scoreable(
        ctx.connect,
        ctx.names,
        ctx.source,
        final_lsn,
        ctx.ports.broker,
        positions,
        Some(lake),
        limit,
    )
    .await
    .map_err(|invalid| invalid.to_string())
}

/// Reconcile, evaluate the assertions, set the verdict.
async fn score(
    stack: &Stack,
    plan: &Plan,
    options: &Options,
    names: &CaptureNames,
    source: &tokio_postgres::Client,
    lake: &Lake,
    record: &mut SeedRecord,
) -> Result<(), String> {
    let lakes = crate::consumer::lakes(&options.consumers, names);
    let tables: Vec<&str> = crate::workloads::WORKLOADS[0]
        .tables
        .iter()
        .map(|t| t.name)
        .collect();
    let scored = reconcile::reconcile(source, lake, &tables, &lakes).await?;
    for consumer in &options.consumers {
        record
            .wrong_rows
            .insert(consumer.clone(), scored.wrong_rows(consumer));
    }
    record.summary.clone_from(&scored.summary);
    let namespaces: Vec<(String, String)> = options
        .consumers
        .iter()
        .map(|c| (c.clone(), crate::consumer::namespace(c, names)))
        .collect();
    let dead_letters =
        crate::consumer::correct::state::dead_letters_batch(Some(lake), &namespaces).await?;
    let ctx = scored.session(&[
        ("faults", faults_batch(&record.faults)),
        ("dead_letters", dead_letters),
    ])?;
    for (index, assertion) in plan.assertions.iter().enumerate() {
        let location = options
            .locations
            .assertions
            .get(index)
            .cloned()
            .unwrap_or_default();
        let skipped = assertion
            .consumers
            .iter()
            .find(|c| !options.consumers.contains(c));
        let entry = if let Some(c) = skipped {
            AssertionRecord {
                location: location.clone(),
                name: assertion.name.clone(),
                sql: assertion.sql.clone(),
                passed: None,
                got: None,
                note: Some(format!("not evaluated: consumer {c} is not under test")),
            }
        } else {
            match reconcile::assert_sql(&ctx, &assertion.sql, &assertion.expect).await {
                Ok(v) => AssertionRecord {
                    location: location.clone(),
                    name: assertion.name.clone(),
                    sql: assertion.sql.clone(),
                    passed: Some(v.passed),
                    got: Some(v.got),
                    note: None,
                },
                Err(e) => AssertionRecord {
                    location: location.clone(),
                    name: assertion.name.clone(),
                    sql: assertion.sql.clone(),
                    passed: Some(false),
                    got: None,
                    note: Some(format!("the query failed: {e}")),
                },
            }
        };
        record.assertions.push(entry);
    }
    let failed: Vec<String> = record
        .assertions
        .iter()
        .filter(|a| a.passed == Some(false))
        .map(|a| format!("{} ({})", a.name, a.location))
        .collect();
    let evaluated = record.assertions.iter().any(|a| a.passed.is_some());
    if !evaluated {
        // Nothing was checked: no verdict can say PASS.
        record.verdict = Verdict::Invalid;
        record.reason = Some(unjudged_reason(plan, &options.consumers));
    } else if failed.is_empty() {
        record.verdict = Verdict::Pass;
    } else {
        record.verdict = Verdict::Fail;
        record.reason = Some(format!("failed: {}", failed.join("; ")));
        if options.keep {
            let path = stack
                .state()
                .root()
                .join("runs")
                .join(&record.run)
                .join("diff.json");
            let text = serde_json::to_string_pretty(&scored.diff).map_err(|e| e.to_string())?;
            std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
            record.diff_file = Some(path);
        }
    }
    Ok(())
}

/// Why a run of `plan` on `options.consumers` would evaluate no assertion,
/// or `None` when it evaluates at least one (`run` refuses to start such a
/// run: its seeds could only say what was not checked).
#[must_use]
pub fn nothing_to_judge(plan: &Plan, consumers: &[String]) -> Option<String> {
    let judged = plan
        .assertions
        .iter()
        .any(|a| a.consumers.iter().all(|c| consumers.contains(c)));
    (!judged).then(|| unjudged_reason(plan, consumers))
}

fn unjudged_reason(plan: &Plan, consumers: &[String]) -> String {
    if plan.assertions.is_empty() {
        return "the scenario has no assertion (`expect …` or `assert …`): nothing would be checked".into();
    }
    let about: std::collections::BTreeSet<&str> = plan
        .assertions
        .iter()
        .flat_map(|a| a.consumers.iter().map(String::as_str))
        .filter(|c| !consumers.iter().any(|u| u == c))
        .collect();
    format!(
        "no assertion is about the consumers under test ({}): every one names {}; \
         add an assertion for them or run with --consumers including {}",
        consumers.join(", "),
        about.iter().copied().collect::<Vec<_>>().join(" or "),
        about.iter().copied().collect::<Vec<_>>().join(", ")
    )
}

/// The line a consumer's log ends with when it stopped on purpose
/// (`fatal: …`, exit 3), if any.
fn fatal_line(log: &std::path::Path) -> Option<String> {
    let text = std::fs::read_to_string(log).ok()?;
    text.lines()
        .rev()
        .find_map(|l| l.strip_prefix("fatal: ").map(str::to_owned))
}

/// Remove what the seed created (the lake only when it is not kept).
async fn cleanup(
    stack: &Stack,
    connect: &ConnectClient,
    names: &CaptureNames,
    source: &tokio_postgres::Client,
    options: &Options,
    verdict: Verdict,
    broker: u16,
) {
    let _ = debezium::remove(connect, names, source).await;
    let _ = delete_topics(broker, &names.topic_prefix).await;
    let groups: Vec<String> = options
        .consumers
        .iter()
        .map(|c| crate::consumer::group(c, names))
        .collect();
    let _ = delete_groups(broker, &groups).await;
    if options.keep && verdict != Verdict::Pass {
        return;
    }
    if let Ok(lake) = Lake::open(stack.state().root()).await {
        for consumer in &options.consumers {
            let _ = lake
                .drop_namespace(&crate::consumer::namespace(consumer, names))
                .await;
        }
    }
}

/// Delete the consumer groups `groups` (absent ones are no error).
async fn delete_groups(broker: u16, groups: &[String]) -> Result<(), String> {
    use rdkafka::admin::{AdminClient, AdminOptions};
    use rdkafka::client::DefaultClientContext;
    if groups.is_empty() {
        return Ok(());
    }
    let admin: AdminClient<DefaultClientContext> = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", format!("127.0.0.1:{broker}"))
        .create()
        .map_err(|e| e.to_string())?;
    let refs: Vec<&str> = groups.iter().map(String::as_str).collect();
    admin
        .delete_groups(
            &refs,
            &AdminOptions::new().operation_timeout(Some(Duration::from_secs(10))),
        )
        .await
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// Delete every topic whose name starts with `prefix.`.
async fn delete_topics(broker: u16, prefix: &str) -> Result<(), String> {
    use rdkafka::admin::{AdminClient, AdminOptions};
    use rdkafka::client::DefaultClientContext;
    let admin: AdminClient<DefaultClientContext> = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", format!("127.0.0.1:{broker}"))
        .create()
        .map_err(|e| e.to_string())?;
    let metadata = admin
        .inner()
        .fetch_metadata(None, Duration::from_secs(5))
        .map_err(|e| e.to_string())?;
    let topics: Vec<String> = metadata
        .topics()
        .iter()
        .map(|t| t.name().to_owned())
        .filter(|t| t.starts_with(&format!("{prefix}.")))
        .collect();
    if topics.is_empty() {
        return Ok(());
    }
    let refs: Vec<&str> = topics.iter().map(String::as_str).collect();
    admin
        .delete_topics(
            &refs,
            &AdminOptions::new().operation_timeout(Some(Duration::from_secs(10))),
        )
        .await
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// `consumer KIND --run RUN --state STATE` plus the scenario's settings.
fn consumer_args(kind: &str, run: &str, options: &Options, plan: &Plan) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![
        "consumer".into(),
        kind.into(),
        "--run".into(),
        run.into(),
        "--state".into(),
        options.state.clone().into(),
    ];
    if let Some(SettingValue::Count(n)) = plan.settings.get("consumer_batch") {
        args.extend(["--batch".into(), n.to_string().into()]);
    }
    if kind == "careless"
        && let Some(SettingValue::DurationMs(ms)) = plan.settings.get("autocommit_interval")
    {
        args.extend(["--auto-commit-ms".into(), ms.to_string().into()]);
    }
    args
}

/// The `faults` table.
///
/// # Panics
/// Never: every column has one value per fault.
#[must_use]
pub fn faults_batch(faults: &[FaultRecord]) -> RecordBatch {
    use arrow_schema::{DataType, Field, Schema};
    let columns: Vec<(Field, ArrayRef)> = vec![
        (
            Field::new("phase", DataType::UInt64, false),
            Arc::new(
                faults
                    .iter()
                    .map(|f| f.phase as u64)
                    .collect::<UInt64Array>(),
            ),
        ),
        (
            Field::new("planned_ms", DataType::UInt64, false),
            Arc::new(faults.iter().map(|f| f.planned_ms).collect::<UInt64Array>()),
        ),
        (
            Field::new("action", DataType::UInt64, false),
            Arc::new(
                faults
                    .iter()
                    .map(|f| f.action as u64)
                    .collect::<UInt64Array>(),
            ),
        ),
        (
            Field::new("fault", DataType::Utf8, false),
            Arc::new(
                faults
                    .iter()
                    .map(|f| Some(f.fault.as_str()))
                    .collect::<StringArray>(),
            ),
        ),
        (
            Field::new("text", DataType::Utf8, false),
            Arc::new(
                faults
                    .iter()
                    .map(|f| Some(f.text.as_str()))
                    .collect::<StringArray>(),
            ),
        ),
        (
            Field::new("fired", DataType::Boolean, false),
            Arc::new(
                faults
                    .iter()
                    .map(|f| Some(f.fired))
                    .collect::<BooleanArray>(),
            ),
        ),
        (
            Field::new("fired_ms", DataType::UInt64, true),
            Arc::new(faults.iter().map(|f| f.fired_ms).collect::<UInt64Array>()),
        ),
        (
            Field::new("during_load", DataType::Boolean, false),
            Arc::new(
                faults
                    .iter()
                    .map(|f| Some(f.during_load))
                    .collect::<BooleanArray>(),
            ),
        ),
        (
            Field::new("outcome", DataType::Utf8, false),
            Arc::new(
                faults
                    .iter()
                    .map(|f| Some(f.outcome.as_str()))
                    .collect::<StringArray>(),
            ),
        ),
    ];
    let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) = columns.into_iter().unzip();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).expect("faults columns agree")
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
