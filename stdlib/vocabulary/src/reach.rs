//! Which faults a stack profile can strike. On the local stack (`lossproof
//! up`) every fault can. On an external profile (a team's own components:
//! docs/profiles.md) lossproof acts only through the interfaces those
//! components expose — SQL on the source, Kafka, the registry, Kafka
//! Connect's REST API, the Iceberg catalog — and on the processes it starts
//! itself (its consumers and the compactor). It sends no signal to a
//! process it did not start, its fault proxy is not on that stack's links,
//! and it cannot reach the broker's storage; faults that need one of those
//! are refused before anything starts, each at its place in the scenario.
//! What each fault needs is its row's [`crate::Fault::needs`].

use lossproof_lang::Plan;
use lossproof_lang::plan::PlannedAction;
use lossproof_lang::span::Span;

use crate::Needs;

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
    let why = match crate::fault(&action.fault)?.needs {
        Needs::Interfaces => return None,
        // The consumers and the compactor are lossproof's own processes in
        // every profile, the connector is driven through REST: only the
        // stack's shared servers are out of reach.
        Needs::TargetProcess if !crate::target(&target).is_some_and(|t| t.shared) => return None,
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

/// Whether `action` strikes something every seed under way shares: a
/// process of the stack, or the broker's storage (`--jobs` refuses these).
#[must_use]
pub fn strikes_shared(action: &PlannedAction) -> bool {
    crate::fault(&action.fault).is_some_and(|f| f.shared)
        || action
            .target
            .as_ref()
            .and_then(|t| crate::target(&t.component))
            .is_some_and(|t| t.shared)
}
