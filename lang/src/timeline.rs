//! A plan plus a seed -> every fault occurrence at a concrete offset.
//!
//! Each action draws from its own `ChaCha` stream (the seed, stream = action
//! index), so the same seed always yields the same timeline, and editing one
//! action never moves another's occurrences.

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::plan::{Plan, PlannedAction, PlannedSchedule};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timeline {
    pub seed: u64,
    /// Sorted by phase, then offset.
    pub occurrences: Vec<Occurrence>,
}

/// One planned firing of one action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Occurrence {
    /// Index into `Plan::phases`.
    pub phase: usize,
    /// Milliseconds from the start of the phase.
    pub offset_ms: u64,
    /// Index into `Plan::actions`.
    pub action: usize,
    pub fault: String,
    pub text: String,
}

impl Plan {
    /// The concrete timeline for `seed`.
    #[must_use]
    pub fn timeline(&self, seed: u64) -> Timeline {
        let mut occurrences: Vec<Occurrence> = Vec::new();
        for (index, action) in self.actions.iter().enumerate() {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            rng.set_stream(index as u64);
            for offset_ms in offsets(action, &mut rng) {
                occurrences.push(Occurrence {
                    phase: action.phase,
                    offset_ms,
                    action: index,
                    fault: action.fault.clone(),
                    text: action.text.clone(),
                });
            }
        }
        occurrences.sort_by_key(|o| (o.phase, o.offset_ms, o.action));
        Timeline { seed, occurrences }
    }
}

/// Offsets from the phase start at which `action` fires.
fn offsets(action: &PlannedAction, rng: &mut ChaCha8Rng) -> Vec<u64> {
    let (start, end) = action.window_ms;
    let length = end - start;
    let mut within: Vec<u64> = match action.schedule {
        PlannedSchedule::Once => vec![below(rng, length)],
        PlannedSchedule::At { offset_ms } => vec![offset_ms],
        PlannedSchedule::Every {
            period_ms,
            jitter_ms,
        } => (1..=(length - 1) / period_ms)
            .map(|k| k * period_ms)
            .map(|t| {
                if jitter_ms == 0 {
                    t
                } else {
                    let shaken = t + below(rng, 2 * jitter_ms + 1);
                    shaken.saturating_sub(jitter_ms).min(length - 1)
                }
            })
            .collect(),
        PlannedSchedule::Randomly { times } => (0..times).map(|_| below(rng, length)).collect(),
    };
    if let Some(percent) = action.chance_percent {
        // Drawn after the offsets, one draw per occurrence.
        within.retain(|_| chance(rng, percent));
    }
    within.sort_unstable();
    within.into_iter().map(|t| start + t).collect()
}

/// Uniform in `0..n` (n > 0), by multiply-shift: portable and exact enough
/// (bias below n / 2^64).
fn below(rng: &mut ChaCha8Rng, n: u64) -> u64 {
    ((u128::from(rng.next_u64()) * u128::from(n)) >> 64) as u64
}

fn chance(rng: &mut ChaCha8Rng, percent: f64) -> bool {
    let draw = rng.next_u64() as f64 / (u64::MAX as f64 + 1.0);
    draw * 100.0 < percent
}
