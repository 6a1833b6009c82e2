//! Step 2 of a seed: the phases. The workload runs for each load phase
//! (later load phases continue its streams: no key is inserted twice),
//! every fault fires at its planned offset while it runs and what became
//! of it is recorded, and a drain between phases gates like the final one.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use lossproof_lang::plan::Phase;
use lossproof_runtime::reconcile::gate;

use super::{FAILPOINT, FaultRecord, SeedRecord, millis};
use crate::error::{Error, Result};
use crate::fault::{self, Strike};
use crate::freshness::Probe;
use crate::seed::Seed;
use crate::workload;

/// The clocks of a phase, for its lanes.
#[derive(Clone, Copy)]
struct Clocks {
    seed_start: Instant,
    phase_start: Instant,
    phase_end: Instant,
}

/// One fault line's occurrences in a phase (record index, entry), fired in
/// order, each at its planned time, whatever the other lines are doing. An
/// occurrence due while the one before it in its line is still running
/// fires as soon as that one returns: late (its drift counts), and its
/// outcome says why.
async fn lane(
    seed: &Seed<'_>,
    strikes: Vec<(usize, FaultRecord)>,
    clocks: Clocks,
    loading: &(dyn Fn() -> bool + Sync),
    progress: &(dyn Fn(&str) + Sync),
) -> Result<Vec<(usize, FaultRecord)>> {
    let mut done = Vec::with_capacity(strikes.len());
    // When the previous strike of this line fired (ms of the seed).
    let mut previous: Option<u64> = None;
    for (i, mut entry) in strikes {
        let due = clocks.phase_start + Duration::from_millis(entry.planned_ms);
        entry.due_ms = Some(millis(due.duration_since(clocks.seed_start)));
        // Due while the previous strike of this line was still running:
        // it fires as soon as that one returns, late, and says so.
        let late_behind = previous.filter(|_| Instant::now() > due);
        tokio::time::sleep_until(due.into()).await;
        strike(seed, i, &mut entry, clocks, loading()).await?;
        if let Some(fired_ms) = late_behind {
            entry.outcome = format!(
                "{} (late: the previous `{}`, fired at +{:.1}s, was still running when this one was due)",
                entry.outcome,
                entry.text,
                Duration::from_millis(fired_ms).as_secs_f64()
            );
        }
        progress(&format!(
            "+{:.1}s {} ({}): {}",
            Duration::from_millis(entry.fired_ms.unwrap_or(0)).as_secs_f64(),
            entry.text,
            entry.location,
            entry.outcome
        ));
        previous = entry.fired_ms;
        done.push((i, entry));
    }
    Ok(done)
}

/// Fire occurrence `i` now; what became of it into `entry`.
async fn strike(
    seed: &Seed<'_>,
    i: usize,
    entry: &mut FaultRecord,
    clocks: Clocks,
    during_load: bool,
) -> Result<()> {
    // `with chance N%` was drawn when the timeline was planned: what is
    // planned fires, so the record's planned and fired lists agree.
    let action = &seed.plan.actions[entry.action];
    entry.during_load = during_load;
    let fired_ms = millis(clocks.seed_start.elapsed());
    entry.fired_ms = Some(fired_ms);
    entry.drift_ms = entry.due_ms.map(|due| fired_ms.saturating_sub(due));
    let (Some(row), Some(fire)) = (
        lossproof_vocabulary::fault(&action.fault),
        fault::find(&action.fault),
    ) else {
        return Err(Error::Unsupported(format!(
            "fault {} has no implementation",
            action.fault
        )));
    };
    let strike = Strike {
        action,
        occurrence: i,
        phase_end: clocks.phase_end,
        acts_for: row.lasts.from_now(action, Instant::now(), clocks.phase_end),
        limit: row.limit,
    };
    entry.ends_ms = strike.acts_for.map(|acts| fired_ms + millis(acts));
    let outcome = tokio::time::timeout(row.limit, fire(seed, &strike))
        .await
        .unwrap_or_else(|_| {
            Err(Error::Timeout {
                what: action.text.clone(),
                limit_s: row.limit.as_secs(),
            })
        });
    entry.done_ms = Some(millis(clocks.seed_start.elapsed()));
    entry.fired = outcome.is_ok();
    entry.outcome = outcome.unwrap_or_else(|why| format!("not fired: {why}"));
    Ok(())
}

/// Run every phase of the seed's plan; returns the final drain's limit.
#[allow(clippy::too_many_lines)] // the phase loop, read top to bottom
pub(super) async fn phases(
    seed: &Seed<'_>,
    positions: &[gate::ConsumerPosition],
    record: &mut SeedRecord,
    (seed_start, probe): (Instant, &Probe),
    progress: &(dyn Fn(&str) + Sync),
) -> Result<Duration> {
    let plan = seed.plan;
    let source = seed.endpoints.source.clone();
    let database = seed.names.database.clone();
    // Phases: the workload runs, faults fire at their offsets meanwhile.
    // Load phases continue the same streams (no key is inserted twice).
    let mut streams = Some(workload::Streams::new(&plan.workload, seed.number));
    let mut drain_limit = Duration::from_mins(2);
    // Each load phase's index, planned length (ms) and operations done.
    let mut loads: Vec<(usize, u64, u64)> = Vec::new();
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
                    super::drain::drain(seed, positions, drain_limit)
                        .await
                        .map_err(|e| Error::BetweenPhases {
                            phase: index + 1,
                            source: Box::new(e),
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
        let phase_end = phase_start + duration;
        // The freshness probe beats while the workload writes; a quiet
        // phase stays quiet.
        if load {
            probe.resume();
        }
        let workload = match (load, streams.take()) {
            (true, Some(mut streams)) => {
                let plan = plan.workload.clone();
                let database = database.clone();
                let source = source.clone();
                Some(lossproof_runtime::AbortOnDrop(tokio::spawn(async move {
                    let report = streams.run(&plan, &source, &database, duration).await;
                    (streams, report)
                })))
            }
            (false, kept) => {
                streams = kept;
                None
            }
            (true, None) => return Err(Error::Internal("the workload's streams were lost")),
        };
        if load && std::env::var_os(FAILPOINT).is_some_and(|v| v == "panic-during-load") {
            // The executor's own test hook: a bug in the middle of a load.
            tokio::time::sleep(Duration::from_secs(1)).await;
            panic!("failpoint {FAILPOINT}=panic-during-load");
        }
        // Each fault line of the phase is a lane of its own: its
        // occurrences fire at their planned times whatever the others are
        // doing (a slow compaction delays no kill).
        let loading = || workload.as_ref().is_some_and(|w| !w.0.is_finished());
        let mut lanes: BTreeMap<usize, Vec<(usize, FaultRecord)>> = BTreeMap::new();
        for (i, occurrence) in record.planned.iter().enumerate() {
            if occurrence.phase == index {
                lanes
                    .entry(occurrence.action)
                    .or_default()
                    .push((i, record.faults[i].clone()));
            }
        }
        let clocks = Clocks {
            seed_start,
            phase_start,
            phase_end,
        };
        let struck = futures_util::future::try_join_all(
            lanes
                .into_values()
                .map(|strikes| lane(seed, strikes, clocks, &loading, progress)),
        )
        .await?;
        for (i, entry) in struck.into_iter().flatten() {
            record.faults[i] = entry;
        }
        match workload {
            Some(mut handle) => {
                let (kept, report) = (&mut handle.0).await?;
                streams = Some(kept);
                let report = report.map_err(Error::pg("workload"))?;
                record.workload_ops += report.ops;
                for (all, this) in [
                    (&mut record.workload_digest, &report.digest),
                    (&mut record.workload_prefix_digest, &report.prefix_digest),
                ] {
                    if !all.is_empty() {
                        all.push('+');
                    }
                    all.push_str(this);
                }
                loads.push((index, duration_ms, report.ops));
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
        probe.pause();
    }
    record.timings.load_ms = millis(seed_start.elapsed());
    record.schedule = Some(super::ScheduleRecord::of(plan, &loads, &record.faults));
    Ok(drain_limit)
}
