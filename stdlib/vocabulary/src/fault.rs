//! [`Fault`]: one row of [`crate::FAULTS`], everything lossproof knows
//! about a fault before anything runs — how it is written, what it acts
//! through, how long it acts, whether it strikes what every seed shares,
//! how long firing it may take.

use std::time::{Duration, Instant};

use lossproof_lang::plan::{ArgValue, PlannedAction};
use lossproof_lang::vocabulary::FaultSig;

/// One fault of the vocabulary. Built with [`Fault::new`] and the
/// builders after it, each of which states where the fault differs from
/// the defaults: it acts through the interfaces any stack exposes, at
/// once, on the seed's own things, and firing it takes at most
/// [`Fault::DEFAULT_LIMIT`].
#[derive(Debug, Clone, Copy)]
pub struct Fault {
    /// Its registered name, how it is written and what it does (what the
    /// language checks scenarios against).
    pub sig: FaultSig,
    /// What it acts through, and so which stacks can strike it.
    pub needs: Needs,
    /// How long it acts once fired.
    pub lasts: Lasts,
    /// It strikes something every seed under way shares whatever its
    /// target (the broker's storage): `--jobs` refuses it.
    pub shared: bool,
    /// How long firing it may take before the executor gives up on the
    /// occurrence (recorded as not fired, with the bound). A fault that
    /// runs a job of its own bounds the job inside this.
    pub limit: Duration,
    /// Why it cannot run yet: a fault that has its word before its
    /// implementation (`run` refuses it up front, `check --strict`
    /// reports it).
    pub not_yet: Option<&'static str>,
}

impl Fault {
    /// How long firing a fault may take unless its row says otherwise.
    pub const DEFAULT_LIMIT: Duration = Duration::from_mins(2);

    /// A fault with the defaults (see [`Fault`]).
    #[must_use]
    pub const fn new(name: &'static str, pattern: &'static str, summary: &'static str) -> Self {
        Self {
            sig: FaultSig {
                name,
                pattern,
                summary,
            },
            needs: Needs::Interfaces,
            lasts: Lasts::Instant,
            shared: false,
            limit: Self::DEFAULT_LIMIT,
            not_yet: None,
        }
    }

    /// It acts through `needs`.
    #[must_use]
    pub const fn needs(mut self, needs: Needs) -> Self {
        self.needs = needs;
        self
    }

    /// It acts for `lasts` once fired.
    #[must_use]
    pub const fn lasts(mut self, lasts: Lasts) -> Self {
        self.lasts = lasts;
        self
    }

    /// It strikes something every seed under way shares.
    #[must_use]
    pub const fn shared(mut self) -> Self {
        self.shared = true;
        self
    }

    /// Firing it may take up to `limit`.
    #[must_use]
    pub const fn limit(mut self, limit: Duration) -> Self {
        self.limit = limit;
        self
    }

    /// Its registered name.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        self.sig.name
    }
}

/// What a fault acts through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// SQL on the source, Kafka, the registry, Connect's REST API or the
    /// lake's catalog: what any stack exposes.
    Interfaces,
    /// A signal to its target's process (kill, stop, pause, resume,
    /// restart): possible for the processes lossproof starts, and for the
    /// connector through REST; not for another stack's servers.
    TargetProcess,
    /// lossproof's fault proxy on the target's link.
    Proxy,
    /// The broker's storage (nisshi's PostgreSQL database).
    BrokerStorage,
}

/// How long a fault acts once fired: what the executor records as its end
/// and what the fault itself is told (one truth).
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
    /// From `now`, for `action` in a phase ending at `phase_end`; `None`
    /// for a fault that acts at once.
    #[must_use]
    pub fn from_now(
        self,
        action: &PlannedAction,
        now: Instant,
        phase_end: Instant,
    ) -> Option<Duration> {
        let to_phase_end = phase_end.saturating_duration_since(now);
        match self {
            Self::Instant => None,
            Self::Phase => Some(to_phase_end),
            Self::ForLength => Some(match action.args.get("length") {
                Some(ArgValue::DurationMs(ms)) => Duration::from_millis(*ms).min(to_phase_end),
                _ => to_phase_end,
            }),
        }
    }
}
