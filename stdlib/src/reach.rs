//! What each fault needs of the stack, and so which faults a stack profile
//! can strike. On the local stack (`lossproof up`) every fault can. On an
//! external profile (a team's own components: docs/profiles.md) lossproof
//! acts only through the interfaces those components expose — SQL on the
//! source, Kafka, the registry, Kafka Connect's REST API, the Iceberg
//! catalog — and on the processes it starts itself (its consumers and the
//! compactor). It sends no signal to a process it did not start, its fault
//! proxy is not on that stack's links, and it cannot reach the broker's
//! storage; faults that need one of those are refused before anything
//! starts, each at its place in the scenario.

use lossproof_lang::Plan;
use lossproof_lang::plan::PlannedAction;
use lossproof_lang::span::Span;

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

/// Every fault of the stdlib and what it needs (a test keeps this in step
/// with the fault registry).
pub const NEEDS: &[(&str, Needs)] = &[
    ("kill", Needs::TargetProcess),
    ("stop", Needs::TargetProcess),
    ("pause", Needs::TargetProcess),
    ("resume", Needs::TargetProcess),
    ("restart", Needs::TargetProcess),
    ("widen-column", Needs::Interfaces),
    ("add-column", Needs::Interfaces),
    ("drop-column", Needs::Interfaces),
    ("rename-column", Needs::Interfaces),
    ("redeliver", Needs::Interfaces),
    ("recreate-connector", Needs::Interfaces),
    ("drop-slot", Needs::Interfaces),
    ("inject-junk", Needs::Interfaces),
    ("duplicate", Needs::Interfaces),
    ("delay-network", Needs::Proxy),
    ("limit-network", Needs::Proxy),
    ("cut-network", Needs::Proxy),
    ("reset-network", Needs::Proxy),
    ("blackhole-network", Needs::Proxy),
    ("slow-close", Needs::Proxy),
    ("fill-broker", Needs::BrokerStorage),
    ("compact-table", Needs::Interfaces),
    ("expire-snapshots", Needs::Interfaces),
    ("run-nightly", Needs::Interfaces),
];

/// Which stack a scenario runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stack {
    /// The stack `lossproof up` starts: every fault can strike.
    Local,
    /// A team's own components, named by a profile.
    External,
}

/// One use of a fault the stack cannot strike.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub span: Span,
    /// The statement as written (`kill broker every 5s`).
    pub text: String,
    /// What the fault would act on (`broker`).
    pub target: String,
    pub why: &'static str,
}

/// What `fault` needs, if it is a fault of the stdlib.
#[must_use]
pub fn needs(fault: &str) -> Option<Needs> {
    NEEDS
        .iter()
        .find(|(n, _)| *n == fault)
        .map(|(_, needs)| *needs)
}

/// Every action of `plan` that `stack` cannot strike, in plan order.
#[must_use]
pub fn refusals(plan: &Plan, stack: Stack) -> Vec<Refusal> {
    if stack == Stack::Local {
        return Vec::new();
    }
    plan.actions.iter().filter_map(refusal).collect()
}

fn refusal(action: &PlannedAction) -> Option<Refusal> {
    let target = action
        .target
        .as_ref()
        .map_or_else(String::new, |t| t.component.clone());
    let why = match needs(&action.fault)? {
        Needs::Interfaces => return None,
        // The consumers and the compactor are lossproof's own processes in
        // every profile, the connector is driven through REST: only the
        // stack's shared servers are out of reach.
        Needs::TargetProcess if !crate::fault::is_stack_process(&target) => return None,
        Needs::TargetProcess => {
            "lossproof did not start this process on an external stack, so it sends it no signal; \
             strike it through the interfaces it exposes (e.g. `restart connector` goes through \
             Connect's REST API), or run the scenario on the local stack"
        }
        Needs::Proxy => {
            "network faults act through lossproof's fault proxy, which stands on the local stack's \
             links only; an external stack's clients do not go through it"
        }
        Needs::BrokerStorage => {
            "filling the broker means making its storage refuse writes, which lossproof can do to \
             the broker it starts (nisshi on PostgreSQL) and to no other"
        }
    };
    Some(Refusal {
        span: action.span,
        text: action.text.clone(),
        target,
        why,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every fault of the vocabulary has its needs stated, and only those.
    #[test]
    fn every_fault_states_what_it_needs() {
        for sig in crate::faults::FAULTS {
            assert!(needs(sig.name).is_some(), "fault {} has no needs", sig.name);
        }
        for (name, _) in NEEDS {
            assert!(
                crate::faults::FAULTS.iter().any(|f| f.name == *name),
                "{name} is not a fault of the vocabulary"
            );
        }
    }
}
