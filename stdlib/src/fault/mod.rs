//! Fault implementations, registered by the stdlib name the vocabulary gives
//! them (`stdlib/src/faults.rs`). Adding a fault = one function in a file
//! here + one line in [`REGISTRY`].
//!
//! A fault either fires (`Ok(what it did)`) or does not (`Err(why not)`, e.g.
//! [`Error::NotFired`]: "consumer careless was already down"); the executor
//! records both in the
//! `faults` table, so a scenario can prove every fault fired.

mod alter;
mod broker;
mod connector;
mod duplicate;
mod junk;
pub mod maintenance;
pub mod network;
pub mod nightly;
pub(crate) mod process;
mod redeliver;

use std::collections::BTreeMap;

use futures_util::future::BoxFuture;
use lossproof_lang::plan::{ArgValue, PlannedAction};
use lossproof_lang::vocabulary::WorkloadSig;
use lossproof_runtime::debezium::CaptureNames;
use lossproof_runtime::supervisor::Supervised;
use lossproof_runtime::{ConnectClient, Endpoints, Stack};

use crate::error::Error;

/// What a fault may touch during one seed.
pub struct Ctx<'a> {
    pub stack: &'a Stack,
    /// Where each component is (the local stack's ports, or a profile's).
    pub endpoints: &'a Endpoints,
    pub source: &'a tokio_postgres::Client,
    pub connect: &'a ConnectClient,
    pub names: &'a CaptureNames,
    /// The connector's configuration (to re-create it).
    pub connector_config: &'a serde_json::Value,
    pub workload: &'a WorkloadSig,
    /// The seed, and the index of the occurrence being fired (faults that
    /// draw randomness draw it from these).
    pub seed: u64,
    pub occurrence: usize,
    /// When the current phase ends (faults that keep acting stop then).
    pub phase_end: std::time::Instant,
    /// Alive while the seed runs: a fault that keeps acting on a thread of
    /// its own stops as soon as this is gone (the seed ended or was stopped).
    pub seed_alive: std::sync::Weak<()>,
    /// The consumers under test, by name.
    pub consumers: &'a tokio::sync::Mutex<BTreeMap<String, Supervised>>,
    /// The seed's compaction job, when the scenario names the `compactor`
    /// target (`run/setup.rs`).
    pub compactor: &'a tokio::sync::Mutex<Option<Supervised>>,
    /// How long the occurrence being fired acts ([`Lasts`]), from now:
    /// `None` for a fault that acts at once.
    pub acts_for: Option<std::time::Duration>,
    /// The lake every consumer writes (maintenance faults commit to it).
    pub lake: &'a lossproof_runtime::Lake,
    /// The maintenance commits' races, per consumer lake (into the record).
    pub races: &'a std::sync::Mutex<BTreeMap<String, maintenance::Races>>,
    /// The external profile's file when the run is on one (children such
    /// as the nightly load it themselves).
    pub profile: Option<&'a std::path::Path>,
}

/// How long a fault acts once fired: what the executor records as its end
/// and what the fault itself is given as [`Ctx::acts_for`] (one truth).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lasts {
    /// It acts at once (a kill, an ALTER, a reset).
    Instant,
    /// Until its phase ends.
    Phase,
    /// Its `for` length, or until its phase ends if that comes first (or if
    /// it has no length).
    ForLength,
}

impl Lasts {
    /// From `now`, for `action` in a phase ending at `phase_end`.
    #[must_use]
    pub fn from_now(
        self,
        action: &PlannedAction,
        now: std::time::Instant,
        phase_end: std::time::Instant,
    ) -> Option<std::time::Duration> {
        let to_phase_end = phase_end.saturating_duration_since(now);
        match self {
            Self::Instant => None,
            Self::Phase => Some(to_phase_end),
            Self::ForLength => Some(duration_arg(action, "length").map_or(to_phase_end, |ms| {
                std::time::Duration::from_millis(ms).min(to_phase_end)
            })),
        }
    }
}

/// `Ok(what happened)` or `Err(why it did not fire)`: [`Error::NotFired`]
/// when the fault could not act, another variant when acting failed.
pub type Fired = Result<String, Error>;

type FaultFn = for<'a> fn(&'a Ctx<'a>, &'a PlannedAction) -> BoxFuture<'a, Fired>;

/// Every implemented fault, by stdlib name, with how long it acts.
pub const REGISTRY: &[(&str, FaultFn, Lasts)] = &[
    ("kill", |c, a| Box::pin(process::kill(c, a)), Lasts::Instant),
    ("stop", |c, a| Box::pin(process::stop(c, a)), Lasts::Instant),
    (
        "pause",
        |c, a| Box::pin(process::pause(c, a)),
        Lasts::Instant,
    ),
    (
        "resume",
        |c, a| Box::pin(process::resume(c, a)),
        Lasts::Instant,
    ),
    (
        "restart",
        |c, a| Box::pin(process::restart(c, a)),
        Lasts::Instant,
    ),
    (
        "widen-column",
        |c, a| Box::pin(alter::widen(c, a)),
        Lasts::Instant,
    ),
    (
        "add-column",
        |c, a| Box::pin(alter::add_column(c, a)),
        Lasts::Instant,
    ),
    (
        "drop-column",
        |c, a| Box::pin(alter::drop_column(c, a)),
        Lasts::Instant,
    ),
    (
        "rename-column",
        |c, a| Box::pin(alter::rename_column(c, a)),
        Lasts::Instant,
    ),
    (
        "redeliver",
        |c, a| Box::pin(redeliver::from_start(c, a)),
        Lasts::Instant,
    ),
    (
        "recreate-connector",
        |c, a| Box::pin(connector::recreate(c, a)),
        Lasts::Instant,
    ),
    (
        "drop-slot",
        |c, a| Box::pin(connector::drop_slot(c, a)),
        Lasts::Instant,
    ),
    (
        "inject-junk",
        |c, a| Box::pin(junk::inject(c, a)),
        Lasts::Instant,
    ),
    (
        "duplicate",
        |c, a| Box::pin(duplicate::duplicate(c, a)),
        Lasts::Phase,
    ),
    (
        "delay-network",
        |c, a| Box::pin(network::delay(c, a)),
        Lasts::ForLength,
    ),
    (
        "limit-network",
        |c, a| Box::pin(network::limit(c, a)),
        Lasts::ForLength,
    ),
    (
        "cut-network",
        |c, a| Box::pin(network::cut(c, a)),
        Lasts::ForLength,
    ),
    (
        "reset-network",
        |c, a| Box::pin(network::reset(c, a)),
        Lasts::Instant,
    ),
    (
        "blackhole-network",
        |c, a| Box::pin(network::blackhole(c, a)),
        Lasts::ForLength,
    ),
    (
        "fill-broker",
        |c, a| Box::pin(broker::fill(c, a)),
        Lasts::ForLength,
    ),
    (
        "compact-table",
        |c, a| Box::pin(maintenance::compact(c, a)),
        Lasts::Instant,
    ),
    (
        "expire-snapshots",
        |c, a| Box::pin(maintenance::expire(c, a)),
        Lasts::Instant,
    ),
    (
        "run-nightly",
        |c, a| Box::pin(nightly::run(c, a)),
        Lasts::Instant,
    ),
    (
        "slow-close",
        |c, a| Box::pin(network::slow_close(c, a)),
        Lasts::ForLength,
    ),
];

/// Faults that strike something every seed under way shares whatever
/// their target: the broker's storage.
const SHARED_FAULTS: &[&str] = &["fill-broker"];

/// Whether `action` strikes something every seed under way shares: a
/// process of the stack, or the broker's storage (`--jobs` refuses these).
#[must_use]
pub fn strikes_shared(action: &PlannedAction) -> bool {
    SHARED_FAULTS.contains(&action.fault.as_str())
        || action
            .target
            .as_ref()
            .is_some_and(|t| is_stack_process(&t.component))
}

/// Whether target `name` is a process of the stack every seed shares
/// (`connect`, `broker`, `postgres`, `registry`), as opposed to one seed's
/// own consumers, compactor or connector.
#[must_use]
pub(crate) fn is_stack_process(name: &str) -> bool {
    process::component_named(name).is_some()
}

/// The implementation of fault `name`, and how long it acts, if it has one yet.
#[must_use]
pub fn find(name: &str) -> Option<(FaultFn, Lasts)> {
    REGISTRY
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, f, lasts)| (*f, *lasts))
}

fn name_arg<'a>(action: &'a PlannedAction, arg: &str) -> Result<&'a str, Error> {
    match action.args.get(arg) {
        Some(ArgValue::Name(n)) => Ok(n),
        other => Err(Error::Unsupported(format!(
            "`{}` has no {arg} ({other:?})",
            action.text
        ))),
    }
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
