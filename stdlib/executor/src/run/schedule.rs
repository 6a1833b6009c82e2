//! Whether a seed did what its scenario said (docs/run.md, "On
//! schedule"): its workload reached the planned rate and its faults fired
//! when planned. A seed outside the bounds here is marked off schedule:
//! its verdict stands, but its damage and freshness are not counted with
//! the seeds that did what was asked.

use lossproof_lang::Plan;
use lossproof_lang::plan::Phase;
use serde::{Deserialize, Serialize};

use super::FaultRecord;

/// A fault's drift p99 above this is off schedule.
pub const DRIFT_P99_BOUND_MS: u64 = 500;
/// A workload below this share of its planned rate is off schedule.
pub const RATE_BOUND: f64 = 0.9;

/// A seed's schedule as it ran.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ScheduleRecord {
    /// The workload's planned and achieved operations per second over the
    /// load phases (0 planned: no load phase).
    pub planned_ops_per_s: f64,
    pub achieved_ops_per_s: f64,
    /// How late the fired faults fired (fired minus due), in ms.
    pub drift_p50_ms: u64,
    pub drift_p99_ms: u64,
    pub drift_max_ms: u64,
    /// Faults planned inside a load that fired after the load had ended.
    pub fired_after_load: u64,
    /// Why the seed is off schedule; empty when it is on schedule.
    pub off: Vec<String>,
}

impl ScheduleRecord {
    /// The schedule of a seed of `plan` whose load phases (index, planned
    /// length in ms, operations done) ran as `loads` and whose faults
    /// became `faults`.
    #[must_use]
    pub fn of(plan: &Plan, loads: &[(usize, u64, u64)], faults: &[FaultRecord]) -> Self {
        let load_ms: u64 = loads.iter().map(|(_, ms, _)| ms).sum();
        let ops: u64 = loads.iter().map(|(_, _, ops)| ops).sum();
        let planned = if load_ms == 0 {
            0.0
        } else {
            plan.workload.rate_per_s
        };
        let rate = |ops: u64, ms: u64| {
            #[allow(clippy::cast_precision_loss)]
            let per_s = ops as f64 * 1000.0 / ms.max(1) as f64;
            per_s
        };
        let achieved = if load_ms == 0 {
            0.0
        } else {
            rate(ops, load_ms)
        };
        let mut drifts: Vec<u64> = faults
            .iter()
            .filter(|f| f.fired)
            .filter_map(|f| f.drift_ms)
            .collect();
        drifts.sort_unstable();
        let in_load = |f: &FaultRecord| matches!(plan.phases.get(f.phase), Some(Phase::Load { duration_ms, .. }) if f.planned_ms < *duration_ms);
        let after: Vec<&FaultRecord> = faults
            .iter()
            .filter(|f| f.fired && !f.during_load && in_load(f))
            .collect();
        let mut record = Self {
            planned_ops_per_s: planned,
            achieved_ops_per_s: achieved,
            drift_p50_ms: crate::freshness::percentile(&drifts, 50),
            drift_p99_ms: crate::freshness::percentile(&drifts, 99),
            drift_max_ms: drifts.last().copied().unwrap_or(0),
            fired_after_load: after.len() as u64,
            off: Vec::new(),
        };
        // Each load phase on its own: a phase starved by a slow fault is not
        // hidden by the others' average.
        for (phase, ms, done) in loads {
            let achieved = rate(*done, *ms);
            if planned > 0.0 && achieved < planned * RATE_BOUND {
                record.off.push(format!(
                    "the workload ran at {achieved:.0} of {planned:.0} planned operations/s in phase {} ({:.0}%, under {:.0}%)",
                    phase + 1,
                    achieved * 100.0 / planned,
                    RATE_BOUND * 100.0
                ));
            }
        }
        if record.drift_p99_ms > DRIFT_P99_BOUND_MS {
            record.off.push(format!(
                "faults fired up to {:.1}s late (drift p99 {} ms, over {DRIFT_P99_BOUND_MS} ms)",
                record.drift_max_ms as f64 / 1000.0,
                record.drift_p99_ms
            ));
        }
        if let Some(first) = after.first() {
            record.off.push(format!(
                "{} fault(s) planned under load fired after it ended (first: `{}` at {})",
                after.len(),
                first.text,
                first.location
            ));
        }
        record
    }

    /// Whether the seed did what its scenario said.
    #[must_use]
    pub fn on_schedule(&self) -> bool {
        self.off.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        let text = "scenario s\nworkload orders rate 100/s\nconsumers careless\n\
                    under load 10s <\n  kill consumer every 2s\n>\nexpect consumer careless clean\n";
        crate::test_plan(text)
    }

    fn fault(planned_ms: u64, drift_ms: u64, during_load: bool) -> FaultRecord {
        FaultRecord {
            phase: 0,
            planned_ms,
            action: 0,
            fault: "kill".into(),
            text: "kill consumer every 2s".into(),
            location: "s.lp:5:3".into(),
            fired: true,
            due_ms: Some(planned_ms),
            fired_ms: Some(planned_ms + drift_ms),
            drift_ms: Some(drift_ms),
            done_ms: Some(planned_ms + drift_ms + 5),
            ends_ms: None,
            during_load,
            outcome: "killed consumer careless".into(),
            counts: None,
        }
    }

    #[test]
    fn a_seed_that_did_what_was_asked_is_on_schedule() {
        let faults: Vec<FaultRecord> = (1..5).map(|k| fault(k * 2000, 10, true)).collect();
        let schedule = ScheduleRecord::of(&plan(), &[(0, 10_000, 950)], &faults);
        assert!((schedule.achieved_ops_per_s - 95.0).abs() < 1e-9);
        assert_eq!(schedule.drift_p99_ms, 10);
        assert!(schedule.on_schedule(), "{:?}", schedule.off);
    }

    #[test]
    fn a_slow_load_late_faults_and_faults_after_the_load_are_off_schedule() {
        let slow = ScheduleRecord::of(&plan(), &[(0, 10_000, 400)], &[fault(2000, 0, true)]);
        assert_eq!(slow.off.len(), 1, "{:?}", slow.off);
        assert!(slow.off[0].contains("40 of 100"), "{:?}", slow.off);
        // One starved phase is off schedule whatever the others did.
        let starved = ScheduleRecord::of(&plan(), &[(0, 10_000, 1000), (1, 10_000, 300)], &[]);
        assert!((starved.achieved_ops_per_s - 65.0).abs() < 1e-9);
        assert!(starved.off[0].contains("in phase 2"), "{:?}", starved.off);

        let late = ScheduleRecord::of(&plan(), &[(0, 10_000, 1000)], &[fault(2000, 700, true)]);
        assert_eq!(late.drift_max_ms, 700);
        assert!(late.off[0].contains("drift p99 700 ms"), "{:?}", late.off);

        let after = ScheduleRecord::of(&plan(), &[(0, 10_000, 1000)], &[fault(8000, 0, false)]);
        assert_eq!(after.fired_after_load, 1);
        assert!(
            after.off[0].contains("fired after it ended"),
            "{:?}",
            after.off
        );
        // Planned at the load's end is not "under load".
        let at_end = ScheduleRecord::of(&plan(), &[(0, 10_000, 1000)], &[fault(10_000, 0, false)]);
        assert!(at_end.on_schedule(), "{:?}", at_end.off);
    }
}
