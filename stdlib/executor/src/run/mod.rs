//! The executor of one seed: the plan's timeline against the real stack.
//! One seed is these steps, each in a module of its own, called in order by
//! [`run_seed`] (read `body` top to bottom):
//!
//! 0. [`Seed::open`]: the seed's identity, endpoints, workload, lake and
//!    connections, built once, and its own source database;
//! 1. [`setup`]: the source tables re-created, the change topics created,
//!    the connector, slot, publication, topics, groups and Iceberg
//!    namespaces all named for the seed's run id; the consumers started as
//!    supervised child processes;
//! 2. [`phases`]: the workload runs, every fault fires at its planned
//!    offset WHILE it runs (`Plan::timeline`, `with chance` drawn once;
//!    each fault line on its own, [`schedule`] says whether the seed kept
//!    to its plan), and what really happened is recorded (`faults`); a
//!    drain between phases gates; meanwhile the freshness probe beats and
//!    its follower watches every lake ([`crate::freshness`]);
//! 3. [`drain`]: connector RUNNING, slot at the source's final LSN, every
//!    consumer at the end of every partition of every topic — else
//!    INVALID; then the consumers stop, all at once, and what they said
//!    ([`lossproof_consumers::Message`]) is read;
//! 4. [`score`]: the reconciler scores each consumer's lake and the
//!    assertions run over its tables;
//! 5. the verdict, decided in one place ([`judge`]) from how the steps
//!    ended;
//! 6. [`cleanup`], on EVERY path out of 1-4 (a result, an error, INVALID, a
//!    panic, SIGINT or SIGTERM via [`interrupt`]): consumers stopped,
//!    connector, slot, publication, topics and groups removed, namespaces
//!    dropped (kept with `--keep` when the seed did not pass);
//! 7. the record ([`SeedRecord`], inside a [`RunRecord`]).

use std::time::{Duration, Instant};

use lossproof_lang::Plan;
use lossproof_runtime::Stack;
use lossproof_runtime::reconcile::DiffRow;

use crate::error::{Error, Result};
use crate::freshness::{Follower, Probe, ProbeTopic};
use crate::seed::Seed;

mod cleanup;
mod drain;
mod interrupt;
mod options;
mod phases;
mod record;
mod schedule;
mod score;
mod setup;

pub use cleanup::clean_run;
pub use interrupt::{Interrupt, interrupt_on_signals, never_interrupted};
pub use options::{Locations, Options};
pub use record::{
    AssertionRecord, CaptureLossRow, FaultCounts, FaultRecord, FreshnessRecord, RunRecord,
    SeedRecord, StackRecord, Timings, Verdict,
};
pub use schedule::{DRIFT_P99_BOUND_MS, RATE_BOUND, ScheduleRecord};
pub use score::{assertion_tables, nothing_to_judge};

/// Diff rows kept per consumer in a seed's record (`SeedRecord::samples`).
pub const SAMPLES_PER_CONSUMER: usize = 8;

/// `LOSSPROOF_RUN_FAILPOINT=panic-during-load` makes the executor panic
/// one second into a load phase (tests check that clean-up still runs).
pub const FAILPOINT: &str = "LOSSPROOF_RUN_FAILPOINT";

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
    let timeline = plan.timeline(seed);
    let mut record = SeedRecord::new(seed, options.run_of(seed));
    record.faults = timeline
        .occurrences
        .iter()
        .map(|o| FaultRecord::planned(o, options.locations.action(o.action)))
        .collect();
    record.planned = timeline.occurrences;
    let (verdict, reason) = match Seed::open(stack, plan, options, seed).await {
        Ok(opened) => execute(&opened, &mut record, progress).await,
        Err(error) => (Verdict::Invalid, Some(error.to_string())),
    };
    record.verdict = verdict;
    record.reason = reason;
    record.timings.total_ms = millis(started.elapsed());
    record
}

/// How the steps of a seed ended, short of an error.
enum Ended {
    /// Consumers that stopped on purpose (exit 3), with their reasons.
    ConsumersStopped(Vec<String>),
    /// Scored: the assertions are in the record; the diff (for `--keep`).
    Scored(Vec<DiffRow>),
}

/// One seed on the stack, then its verdict, then its clean-up, which runs
/// whatever `body` returned (an error, a panic, SIGINT or SIGTERM).
async fn execute(
    seed: &Seed<'_>,
    record: &mut SeedRecord,
    progress: &(dyn Fn(&str) + Sync),
) -> (Verdict, Option<String>) {
    let body = std::panic::AssertUnwindSafe(body(seed, record, progress));
    let ended = tokio::select! {
        finished = futures_util::FutureExt::catch_unwind(body) => finished.unwrap_or_else(|panic| {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(no message)".to_owned());
            Err(Error::Panicked(what))
        }),
        signal = interrupt::interrupted(seed.options.interrupt.clone()) => {
            progress(&format!("{signal}: stopping the seed and cleaning up"));
            Err(Error::Interrupted(signal))
        }
    };
    let (verdict, reason) = judge(&ended, seed, record);
    if let (Verdict::Fail, Ok(Ended::Scored(diff))) = (verdict, &ended)
        && seed.options.keep
    {
        match keep_diff(seed, diff) {
            Ok(path) => record.diff_file = Some(path),
            Err(e) => progress(&format!("--keep: {e}")),
        }
    }
    progress("cleaning up");
    // Whatever happened, the seed's processes end before what they use is
    // removed.
    seed.end().await;
    // A seed that did not pass keeps its data with `--keep`.
    let drop_data = !(seed.options.keep && verdict != Verdict::Pass);
    for error in cleanup::cleanup(&cleanup::Traces::of(seed), drop_data).await {
        progress(&format!("clean-up: could not remove: {error}"));
    }
    (verdict, reason)
}

/// One seed's steps, in order; the verdict and the clean-up are the
/// caller's.
async fn body(
    seed: &Seed<'_>,
    record: &mut SeedRecord,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<Ended> {
    // 1. Set-up: source tables, topics, connector, consumers.
    setup::setup(seed, progress).await?;
    let positions = crate::under_test::positions(
        &seed.options.consumers,
        &seed.plan.declared,
        &seed.names,
        &seed.workload,
    );
    // Every snapshot of every lake is followed from here: a preload's
    // snapshot is read as the consumers load it.
    let (tables, lakes) = followed_lakes(seed).await?;
    // A preload's initial snapshot reaches every lake, and every lake's
    // follower has read it, before the phases.
    if let Some(preloaded) = seed.preloaded.get() {
        let mut snapshot = drain::snapshot_reached(seed, &positions, preloaded, progress).await?;
        snapshot.followed_ms = lakes.read_up(FOLLOW_SNAPSHOT_LIMIT).await.map(millis);
        progress(&match snapshot.followed_ms {
            Some(ms) => format!(
                "the snapshot followers read it {:.1}s later",
                ms as f64 / 1000.0
            ),
            None => format!(
                "the snapshot followers had not read it after {FOLLOW_SNAPSHOT_LIMIT:?}: the phases \
                 begin (states they cannot read in time are unchecked)"
            ),
        });
        record.snapshot = Some(snapshot);
    }

    // 2. Phases: the workload runs, faults fire at their planned offsets;
    // meanwhile the probe beats and the follower watches every lake.
    let (drain_limit, following) = Box::pin(followed_phases(
        seed,
        &positions,
        (tables, lakes),
        record,
        progress,
    ))
    .await?;
    // The compactor works through the phases only: the drain and the score
    // see the consumers alone.
    if let Some(compactor) = seed.compactor.lock().await.as_mut() {
        compactor.terminate(Duration::from_secs(10)).await;
    }

    // 3. The final drain, then the consumers stop, then the follower (its
    // last look reads their last commits).
    progress("draining");
    let drain_start = Instant::now();
    let gated = drain::drain(seed, &positions, drain_limit).await;
    record.timings.drain_ms = millis(drain_start.elapsed());
    let said = drain::stop_consumers(seed).await;
    record.races = drain::races(seed, &said);
    crate::fault::counts_into(seed, &mut record.faults).await;
    let followed_at = Instant::now();
    let followed = following.stop(record).await;
    record.timings.snapshots_ms = millis(followed_at.elapsed());
    let stopped = drain::stopped_on_purpose(&said);
    if !stopped.is_empty() {
        return Ok(Ended::ConsumersStopped(stopped));
    }
    gated?;

    // 4. Score: reconcile, check every snapshot the follower read, evaluate
    // the assertions.
    progress("reconciling");
    let reconcile_start = Instant::now();
    let scored = Box::pin(score::score(seed, record, followed)).await;
    record.timings.reconcile_ms = millis(reconcile_start.elapsed());
    scored.map(Ended::Scored)
}

/// The follower, still following every lake after the phases (the drain's
/// commits are states readers see too).
struct Following {
    follower: Follower,
    probes: Vec<crate::freshness::ProbeTable>,
    beats: crate::freshness::Beats,
    /// When the probe stopped (ms of the seed's clock).
    until_ms: u64,
    /// The tables each lake's snapshots are checked over, the seed's clock
    /// and the epoch ms at its start.
    tables: Vec<lossproof_runtime::reconcile::SourceTable>,
    clock: Instant,
    epoch_ms: i64,
}

/// What the follower read of every lake, for the snapshot check.
pub(super) struct Followed {
    pub logs: Vec<crate::snapshots::LakeLog>,
    pub tables: Vec<lossproof_runtime::reconcile::SourceTable>,
    pub epoch_ms: i64,
}

impl Following {
    /// Stop the follower; each lake's freshness into the record.
    async fn stop(self, record: &mut SeedRecord) -> Followed {
        let (watched, logs) = self.follower.stop(self.clock).await;
        let watched = watched.unwrap_or_default();
        record.freshness = self
            .probes
            .iter()
            .enumerate()
            .flat_map(|(i, table)| {
                let one = watched.get(i).cloned().unwrap_or_default();
                FreshnessRecord::of(table, &one, &self.beats, self.until_ms)
            })
            .collect();
        Followed {
            logs,
            tables: self.tables,
            epoch_ms: self.epoch_ms,
        }
    }
}

/// How long the phases wait for the snapshot followers to read a
/// preload's snapshot: read behind the load's commits, the correct
/// consumer's expired before they were read (its states unchecked).
const FOLLOW_SNAPSHOT_LIMIT: Duration = Duration::from_mins(10);

/// The source tables every lake is checked over, and the followers of
/// every consumer lake, started.
async fn followed_lakes(
    seed: &Seed<'_>,
) -> Result<(
    Vec<lossproof_runtime::reconcile::SourceTable>,
    crate::freshness::LakeFollowers,
)> {
    let mut tables = Vec::new();
    for table in seed.scored_tables() {
        tables.push(lossproof_runtime::reconcile::source::describe(&seed.source, table).await?);
    }
    let lakes = crate::under_test::lakes(
        &seed.options.consumers,
        &seed.plan.declared,
        &seed.names,
        &seed.workload,
    )
    .into_iter()
    .map(|lake| crate::snapshots::LakeTables {
        changelogs: lake.changelog.then(|| {
            tables
                .iter()
                .map(|t| crate::under_test::changelog_table(&seed.names, &t.name))
                .collect()
        }),
        not_checked: (!lake.changelog && !lake.views.is_empty())
            .then(|| "not checked: its tables are read through views".to_owned()),
        consumer: lake.consumer,
        namespace: lake.namespace,
        tables: tables.clone(),
    })
    .collect();
    let lakes = crate::freshness::LakeFollowers::start(&seed.endpoints, lakes);
    Ok((tables, lakes))
}

/// The phases ([`phases::phases`]), with the freshness probe beating and
/// `lakes` following every consumer's lake meanwhile
/// ([`crate::freshness`], [`crate::snapshots`]); the follower goes on.
async fn followed_phases(
    seed: &Seed<'_>,
    positions: &[lossproof_runtime::reconcile::gate::ConsumerPosition],
    (tables, lakes): (
        Vec<lossproof_runtime::reconcile::SourceTable>,
        crate::freshness::LakeFollowers,
    ),
    record: &mut SeedRecord,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<(Duration, Following)> {
    let clock = Instant::now();
    let probe = Probe::start(
        seed.endpoints.source.clone(),
        seed.names.database.clone(),
        clock,
    );
    let probes =
        crate::under_test::probe_tables(&seed.options.consumers, &seed.plan.declared, &seed.names);
    let topic = seed
        .names
        .topic("public", lossproof_vocabulary::workloads::PROBE_TABLE);
    // The probe's topic is read only for a consumer measured by offsets.
    let partitions = if probes.iter().any(|t| t.offsets) {
        let ends = lossproof_runtime::reconcile::gate::ends(&seed.endpoints.kafka, &topic).await?;
        Some(ends.into_iter().map(|(p, _)| p).collect())
    } else {
        None
    };
    let topic = ProbeTopic::open(
        &seed.endpoints.kafka,
        &seed.endpoints.registry,
        &topic,
        partitions,
    )
    .map_err(Error::Follower)?;
    let follower = Follower::start(
        seed.endpoints.open_lake().await?,
        probes.clone(),
        topic,
        lakes,
        clock,
    );
    let drain_limit = phases::phases(seed, positions, record, (clock, &probe), progress).await?;
    let beats = probe.stop().await;
    let until_ms = millis(clock.elapsed());
    Ok((
        drain_limit,
        Following {
            follower,
            probes,
            beats,
            until_ms,
            tables,
            clock,
            epoch_ms: crate::snapshots::epoch_ms_at(clock),
        },
    ))
}

/// The seed's verdict and its reason, from how its steps ended: the one
/// place a verdict is decided. An error is INVALID (the stack, not the
/// consumers, is in question); a consumer that refused to guess is a FAIL
/// with its reason, never a count (it stopped on purpose) nor an INVALID
/// (nothing is wrong with the stack); a scored seed that evaluated no
/// assertion is INVALID, never PASS.
fn judge(ended: &Result<Ended>, seed: &Seed<'_>, record: &SeedRecord) -> (Verdict, Option<String>) {
    match ended {
        Err(error) => (Verdict::Invalid, Some(with_log_tail(error, seed))),
        Ok(Ended::ConsumersStopped(reasons)) => (Verdict::Fail, Some(reasons.join("; "))),
        Ok(Ended::Scored(_)) => {
            if !record.assertions.iter().any(|a| a.passed.is_some()) {
                return (
                    Verdict::Invalid,
                    Some(score::unjudged_reason(seed.plan, &seed.options.consumers)),
                );
            }
            let failed: Vec<String> = record
                .assertions
                .iter()
                .filter(|a| a.passed == Some(false))
                .map(|a| format!("{} ({})", a.name, a.location))
                .collect();
            if failed.is_empty() {
                (Verdict::Pass, None)
            } else {
                (
                    Verdict::Fail,
                    Some(format!("failed: {}", failed.join("; "))),
                )
            }
        }
    }
}

/// An error's text; when a consumer is the one behind at a drain, with
/// the end of its log (a consumer that could not start again says why
/// there, and the seed's clean-up may remove its folder).
fn with_log_tail(error: &Error, seed: &Seed<'_>) -> String {
    match behind(error) {
        Some(consumer) => format!(
            "{error}; the end of its log ({}):\n{}",
            seed.log_of(consumer).display(),
            crate::own::log_tail(&seed.log_of(consumer), 8)
        ),
        None => error.to_string(),
    }
}

/// The consumer a drain (the final one or one between phases) found
/// behind, if that is what `error` is.
fn behind(error: &Error) -> Option<&str> {
    use lossproof_runtime::reconcile::gate::Invalid;
    match error {
        Error::NotDrained(
            Invalid::ConsumerBehind { consumer, .. } | Invalid::LakeBehind { consumer, .. },
        ) => Some(consumer),
        Error::BetweenPhases { source, .. } => behind(source),
        _ => None,
    }
}

/// `--keep`: a failed seed's diff, as JSON, in its log folder.
fn keep_diff(seed: &Seed<'_>, diff: &[DiffRow]) -> Result<std::path::PathBuf> {
    let path = seed.logs.join("diff.json");
    let text = serde_json::to_string_pretty(diff)
        .map_err(|_| Error::Internal("the diff does not serialize"))?;
    std::fs::write(&path, text).map_err(Error::io(path.display().to_string()))?;
    Ok(path)
}

/// A duration in whole milliseconds (saturating).
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
