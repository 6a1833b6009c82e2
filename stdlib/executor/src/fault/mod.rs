//! Fault implementations: one function each, registered in [`REGISTRY`]
//! by the name its vocabulary row gives it (`lossproof_vocabulary::FAULTS`,
//! which also says how long it acts, what it needs, whether it strikes
//! what every seed shares and how long firing it may take). Adding a fault
//! = one row there, one function in a file here, one line in [`REGISTRY`].
//!
//! A fault gets the [`Seed`] it strikes and the [`Strike`] (what is
//! particular to this occurrence), and either fires (`Ok(what it did)`) or
//! does not (`Err(why not)`, e.g. [`Error::NotFired`]: "consumer careless
//! was already down"); the executor records both in the `faults` table,
//! so a scenario can prove every fault fired.

mod alter;
mod broker;
mod connector;
mod duplicate;
mod junk;
pub mod maintenance;
pub mod network;
pub(crate) mod nightly;
mod process;
mod redeliver;

use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use lossproof_lang::plan::{ArgValue, PlannedAction};

use crate::error::Error;
use crate::seed::Seed;

/// How long [`counts_into`] waits for a fault still producing records (a
/// `duplicate` ends with its phase, then flushes for up to 10 s).
const PRODUCING_WAIT: Duration = Duration::from_secs(15);

/// Each occurrence's counts into its record, once every fault still
/// producing records has finished (bounded by [`PRODUCING_WAIT`]; one still
/// at it then has no counts, and its outcome says so).
pub(crate) async fn counts_into(seed: &Seed<'_>, faults: &mut [crate::run::FaultRecord]) {
    let producing = || {
        seed.producing
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .any(|thread| !thread.is_finished())
    };
    let deadline = Instant::now() + PRODUCING_WAIT;
    while producing() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let counts = seed
        .counts
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    for (i, fault) in faults.iter_mut().enumerate() {
        fault.counts = counts.get(&i).copied();
        if fault.counts.is_none() && fault.fired && fault.fault == "duplicate" {
            fault
                .outcome
                .push_str(" (still copying when the seed was scored: no counts)");
        }
    }
}

/// What is particular to one strike of a fault (everything else is the
/// [`Seed`]'s).
#[derive(Debug, Clone, Copy)]
pub struct Strike<'a> {
    pub action: &'a PlannedAction,
    /// The occurrence's index in the seed's timeline: a fault that draws
    /// randomness draws it from the seed and this.
    pub occurrence: usize,
    /// When its phase ends (a fault that keeps acting stops then).
    pub phase_end: Instant,
    /// How long it acts from now, as its row's `lasts` says; `None` for a
    /// fault that acts at once.
    pub acts_for: Option<Duration>,
    /// How long firing it may take (its row's `limit`).
    pub limit: Duration,
}

/// `Ok(what happened)` or `Err(why it did not fire)`: [`Error::NotFired`]
/// when the fault could not act, another variant when acting failed.
pub type Fired = Result<String, Error>;

/// A fault's implementation.
pub type FaultFn = for<'a> fn(&'a Seed<'a>, &'a Strike<'a>) -> BoxFuture<'a, Fired>;

/// Every implemented fault, by the name of its vocabulary row.
pub const REGISTRY: &[(&str, FaultFn)] = &[
    ("kill", |s, k| Box::pin(process::kill(s, k))),
    ("stop", |s, k| Box::pin(process::stop(s, k))),
    ("pause", |s, k| Box::pin(process::pause(s, k))),
    ("resume", |s, k| Box::pin(process::resume(s, k))),
    ("restart", |s, k| Box::pin(process::restart(s, k))),
    ("widen-column", |s, k| Box::pin(alter::widen(s, k))),
    ("add-column", |s, k| Box::pin(alter::add_column(s, k))),
    ("drop-column", |s, k| Box::pin(alter::drop_column(s, k))),
    ("rename-column", |s, k| Box::pin(alter::rename_column(s, k))),
    ("redeliver", |s, k| Box::pin(redeliver::from_start(s, k))),
    ("recreate-connector", |s, k| {
        Box::pin(connector::recreate(s, k))
    }),
    ("drop-slot", |s, k| Box::pin(connector::drop_slot(s, k))),
    ("inject-junk", |s, k| Box::pin(junk::inject(s, k))),
    ("duplicate", |s, k| Box::pin(duplicate::duplicate(s, k))),
    ("delay-network", |s, k| Box::pin(network::delay(s, k))),
    ("limit-network", |s, k| Box::pin(network::limit(s, k))),
    ("cut-network", |s, k| Box::pin(network::cut(s, k))),
    ("reset-network", |s, k| Box::pin(network::reset(s, k))),
    ("blackhole-network", |s, k| {
        Box::pin(network::blackhole(s, k))
    }),
    ("slow-close", |s, k| Box::pin(network::slow_close(s, k))),
    ("fill-broker", |s, k| Box::pin(broker::fill(s, k))),
    ("compact-table", |s, k| Box::pin(maintenance::compact(s, k))),
    ("expire-snapshots", |s, k| {
        Box::pin(maintenance::expire(s, k))
    }),
    ("run-nightly", |s, k| Box::pin(nightly::run(s, k))),
];

/// The implementation of fault `name`, if it has one.
#[must_use]
pub fn find(name: &str) -> Option<FaultFn> {
    REGISTRY.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

fn name_arg<'a>(action: &'a PlannedAction, arg: &str) -> Result<&'a str, Error> {
    action.name_arg(arg).ok_or_else(|| {
        Error::Unsupported(format!(
            "`{}` has no {arg} ({:?})",
            action.text,
            action.args.get(arg)
        ))
    })
}

fn count_arg(action: &PlannedAction, arg: &str) -> Option<u64> {
    match action.args.get(arg) {
        Some(ArgValue::Count(n)) => Some(*n),
        _ => None,
    }
}

/// A duration argument, in milliseconds.
fn duration_arg(action: &PlannedAction, arg: &str) -> Option<u64> {
    match action.args.get(arg) {
        Some(ArgValue::DurationMs(ms)) => Some(*ms),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every fault of the vocabulary has one implementation here unless
    /// its row says why it cannot run yet, never both; every implementation
    /// has a row; every target is one the process faults can strike.
    #[test]
    fn registry_and_vocabulary_agree() {
        for fault in lossproof_vocabulary::FAULTS {
            let implemented = find(fault.name()).is_some();
            assert!(
                implemented != fault.not_yet.is_some(),
                "fault {}: implemented {implemented}, not yet: {:?}",
                fault.name(),
                fault.not_yet
            );
        }
        for (name, _) in REGISTRY {
            assert!(
                lossproof_vocabulary::fault(name).is_some(),
                "registered fault {name} has no vocabulary row"
            );
        }
        for target in lossproof_vocabulary::TARGETS {
            assert!(
                process::can_target(target.sig.name),
                "no process fault can strike target {}",
                target.sig.name
            );
            assert_eq!(
                target.shared,
                process::component_named(target.sig.name).is_some(),
                "target {}: shared in the vocabulary, a stack component here",
                target.sig.name
            );
        }
    }
}
