//! The faults acting on one link, folded into what the pumps apply.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{RngCore as _, SeedableRng as _};
use tokio::time::Instant;

use crate::api::FaultKind;

/// Client to server, or server to client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Up = 0,
    Down = 1,
}

/// One fault set on a link, until it expires or is cleared.
pub(crate) struct Active {
    pub id: u64,
    pub owner: String,
    pub fault: FaultKind,
    pub until: Instant,
    /// The jitter generator of a `Delay`.
    pub delay: Option<Arc<Delay>>,
}

/// A delay with its seeded jitter, one generator per direction.
pub(crate) struct Delay {
    ms: u64,
    jitter_ms: u64,
    rng: [Mutex<ChaCha8Rng>; 2],
}

impl Delay {
    pub(crate) fn new(ms: u64, jitter_ms: u64, seed: u64, stream: u64) -> Self {
        let generator = |direction: u64| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            rng.set_stream(stream.wrapping_mul(2).wrapping_add(direction));
            Mutex::new(rng)
        };
        Self {
            ms,
            jitter_ms,
            rng: [generator(0), generator(1)],
        }
    }

    /// The next chunk's delay in `direction`: `ms` ± `jitter_ms`, uniform.
    pub(crate) fn draw(&self, direction: Direction) -> Duration {
        if self.jitter_ms == 0 {
            return Duration::from_millis(self.ms);
        }
        let span = 2 * self.jitter_ms + 1;
        let draw = self.rng[direction as usize]
            .lock()
            .expect("a jitter generator is never poisoned: nothing panics holding it")
            .next_u64()
            % span;
        Duration::from_millis((self.ms + draw).saturating_sub(self.jitter_ms))
    }
}

/// What the pumps apply: every active fault folded into one state.
#[derive(Clone, Default)]
pub(crate) struct Effective {
    /// The longest active delay.
    pub delay: Option<Arc<Delay>>,
    /// The tightest active limit.
    pub bytes_per_second: Option<u64>,
    pub cut: bool,
    pub blackhole: bool,
    /// The longest active slow close.
    pub close_delay: Duration,
}

impl Effective {
    pub(crate) fn of(active: &[Active]) -> Self {
        let mut effective = Self::default();
        for fault in active {
            match fault.fault {
                FaultKind::Delay { ms, .. } => {
                    if effective.delay.as_ref().is_none_or(|d| d.ms < ms) {
                        effective.delay.clone_from(&fault.delay);
                    }
                }
                FaultKind::Limit { bytes_per_second } => {
                    effective.bytes_per_second = Some(
                        effective
                            .bytes_per_second
                            .map_or(bytes_per_second, |b| b.min(bytes_per_second)),
                    );
                }
                FaultKind::Cut => effective.cut = true,
                FaultKind::Blackhole => effective.blackhole = true,
                FaultKind::SlowClose { ms } => {
                    effective.close_delay = effective.close_delay.max(Duration::from_millis(ms));
                }
                FaultKind::Reset => {}
            }
        }
        effective
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_stays_in_its_window_and_repeats_per_seed() {
        let draws = |seed| {
            let delay = Delay::new(100, 30, seed, 4);
            (0..500)
                .map(|_| delay.draw(Direction::Up).as_millis())
                .collect::<Vec<_>>()
        };
        let first = draws(7);
        assert!(first.iter().all(|ms| (70..=130).contains(ms)));
        assert!(first.iter().any(|ms| *ms < 80) && first.iter().any(|ms| *ms > 120));
        assert_eq!(first, draws(7), "same seed, same draws");
        assert_ne!(first, draws(8), "another seed, other draws");
    }

    #[test]
    fn overlapping_faults_fold_to_the_strongest() {
        let active = |id, fault| Active {
            id,
            owner: "t".into(),
            delay: match fault {
                FaultKind::Delay { ms, jitter_ms } => {
                    Some(Arc::new(Delay::new(ms, jitter_ms, 1, 0)))
                }
                _ => None,
            },
            fault,
            until: Instant::now(),
        };
        let effective = Effective::of(&[
            active(
                1,
                FaultKind::Delay {
                    ms: 50,
                    jitter_ms: 0,
                },
            ),
            active(
                2,
                FaultKind::Delay {
                    ms: 200,
                    jitter_ms: 0,
                },
            ),
            active(
                3,
                FaultKind::Limit {
                    bytes_per_second: 9000,
                },
            ),
            active(
                4,
                FaultKind::Limit {
                    bytes_per_second: 4000,
                },
            ),
            active(5, FaultKind::SlowClose { ms: 300 }),
        ]);
        assert_eq!(effective.delay.map(|d| d.ms), Some(200));
        assert_eq!(effective.bytes_per_second, Some(4000));
        assert_eq!(effective.close_delay, Duration::from_millis(300));
        assert!(!effective.cut && !effective.blackhole);
        assert!(Effective::of(&[active(6, FaultKind::Cut)]).cut);
    }
}
