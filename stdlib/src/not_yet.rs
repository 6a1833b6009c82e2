//! Every vocabulary word lossproof can parse but not yet run, in one place,
//! with the reason. `lossproof run` refuses a scenario that uses one before
//! anything starts, `lossproof check --strict` reports them with their
//! places, and a test keeps this list, the fault registry and the
//! vocabulary in step: every word is implemented or listed here, never both.

use lossproof_lang::Plan;
use lossproof_lang::plan::SettingValue;
use lossproof_lang::span::Span;

/// What kind of word it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Fault,
    Target,
}

/// (kind, stdlib name, why it cannot run yet). Empty: every word of the
/// vocabulary runs on the local stack; what remains refused is a setting
/// value beyond what the stack was tested with ([`uses`]).
pub const NOT_YET: &[(Kind, &str, &str)] = &[];

/// The largest `set partitions N` the stack runs today.
pub const MAX_PARTITIONS: u64 = 16;

/// One use of something that cannot run yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Use {
    /// Where (a setting has no span in the plan).
    pub span: Option<Span>,
    pub what: String,
    pub why: &'static str,
}

fn reason(kind: Kind, name: &str) -> Option<&'static str> {
    NOT_YET
        .iter()
        .find(|(k, n, _)| *k == kind && *n == name)
        .map(|(_, _, why)| *why)
}

/// Every use in `plan` of a word that cannot run yet, in plan order: a
/// fault, a target, a consumer without a program, a setting value beyond
/// what the stack supports.
#[must_use]
pub fn uses(plan: &Plan) -> Vec<Use> {
    let mut out = Vec::new();
    for action in &plan.actions {
        if let Some(why) = reason(Kind::Fault, &action.fault) {
            out.push(Use {
                span: Some(action.span),
                what: format!("fault `{}`", action.text),
                why,
            });
        }
        if let Some(target) = &action.target
            && let Some(why) = reason(Kind::Target, &target.component)
        {
            out.push(Use {
                span: Some(action.span),
                what: format!("target `{}` in `{}`", target.component, action.text),
                why,
            });
        }
    }
    if let Some(SettingValue::Count(n)) = plan.settings.get("partitions")
        && *n > MAX_PARTITIONS
    {
        out.push(Use {
            span: None,
            what: format!("`set partitions {n}`"),
            why: "tested up to 16 partitions per topic",
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault;

    /// Every fault of the vocabulary is implemented or listed, never both;
    /// every target is handled by the process faults or listed; every
    /// consumer of the vocabulary has a program.
    #[test]
    fn registry_not_yet_and_vocabulary_agree() {
        for sig in crate::faults::FAULTS {
            let implemented = fault::find(sig.name).is_some();
            let listed = reason(Kind::Fault, sig.name).is_some();
            assert!(
                implemented != listed,
                "fault {}: implemented {implemented}, in NOT_YET {listed}",
                sig.name
            );
        }
        for (name, _, _) in fault::REGISTRY {
            assert!(
                crate::faults::FAULTS.iter().any(|f| f.name == *name),
                "registered fault {name} is not in the vocabulary"
            );
        }
        for sig in crate::targets::TARGETS {
            let implemented = fault::process::can_target(sig.name);
            let listed = reason(Kind::Target, sig.name).is_some();
            assert!(
                implemented != listed,
                "target {}: implemented {implemented}, in NOT_YET {listed}",
                sig.name
            );
        }
        for sig in crate::consumers::CONSUMERS {
            assert!(
                crate::consumers::program(sig.name).is_some(),
                "consumer {} has no program",
                sig.name
            );
        }
    }
}
