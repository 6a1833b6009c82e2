//! lossproof's vocabulary: every word a scenario can use and all that is
//! known of it before anything runs — faults ([`FAULTS`]: how each is
//! written, what it acts through, how long it acts, whether it strikes
//! what every seed shares, how long firing it may take), targets,
//! consumers, workloads, settings and assertion shorthands, and the `.lp`
//! files shipped with lossproof.
//!
//! It depends on the language alone, so `lossproof check`, the language
//! server, the editors' word lists and the language tests need no stack and
//! build without DataFusion, iceberg or librdkafka. What each word does is
//! elsewhere: the faults and workloads in `lossproof-executor`, the
//! reference consumers in `lossproof-consumers`.

pub mod check;
mod consumers;
mod fault;
mod faults;
pub mod not_yet;
pub mod reach;
mod settings;
mod shorthands;
mod targets;
pub mod workloads;

use std::sync::LazyLock;

pub use check::{Place, check};
pub use consumers::CONSUMERS;
pub use fault::{Fault, Lasts, Needs};
pub use faults::FAULTS;
use lossproof_lang::vocabulary::{
    ConsumerSig, FaultSig, SettingSig, ShorthandSig, TargetSig, Vocabulary, WorkloadSig,
};
pub use targets::{TARGETS, Target};

/// The stdlib vocabulary.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stdlib;

/// `.lp` files shipped inside the binary, by the path scenarios include them as.
const BUILTIN_FILES: &[(&str, &str)] = &[
    ("stdlib/faults.lp", include_str!("../../faults.lp")),
    workloads::ORDERS_FILE,
];

/// The fault called `name`, if the vocabulary has it.
#[must_use]
pub fn fault(name: &str) -> Option<&'static Fault> {
    FAULTS.iter().find(|f| f.name() == name)
}

/// The target called `name`, if the vocabulary has it.
#[must_use]
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.sig.name == name)
}

/// The language's view of the rows: their signatures.
static FAULT_SIGS: LazyLock<Vec<FaultSig>> =
    LazyLock::new(|| FAULTS.iter().map(|f| f.sig).collect());
static TARGET_SIGS: LazyLock<Vec<TargetSig>> =
    LazyLock::new(|| TARGETS.iter().map(|t| t.sig).collect());

impl Vocabulary for Stdlib {
    fn faults(&self) -> &[FaultSig] {
        &FAULT_SIGS
    }
    fn shorthands(&self) -> &[ShorthandSig] {
        shorthands::SHORTHANDS
    }
    fn workloads(&self) -> &[WorkloadSig] {
        workloads::all()
    }
    fn consumers(&self) -> &[ConsumerSig] {
        CONSUMERS
    }
    fn targets(&self) -> &[TargetSig] {
        &TARGET_SIGS
    }
    fn settings(&self) -> &[SettingSig] {
        settings::SETTINGS
    }
    fn builtin_file(&self, path: &str) -> Option<&'static str> {
        BUILTIN_FILES
            .iter()
            .find(|(p, _)| *p == path)
            .map(|(_, text)| *text)
    }
}

#[cfg(test)]
mod tests {
    use lossproof_lang::vocabulary::compile_pattern;

    use super::*;

    #[test]
    fn every_pattern_compiles_and_names_are_unique() {
        let mut names = std::collections::HashSet::new();
        for fault in Stdlib.faults() {
            assert!(
                names.insert(fault.name),
                "fault `{}` registered twice",
                fault.name
            );
            assert!(!compile_pattern(fault.pattern).is_empty());
        }
        for shorthand in Stdlib.shorthands() {
            assert!(!compile_pattern(shorthand.pattern).is_empty());
        }
    }

    /// A fault that acts through a process names a target that is one,
    /// and the stack's processes are exactly the shared targets.
    #[test]
    fn shared_targets_are_the_stacks_processes() {
        let shared: Vec<&str> = TARGETS
            .iter()
            .filter(|t| t.shared)
            .map(|t| t.sig.name)
            .collect();
        assert_eq!(shared, ["connect", "broker", "postgres", "registry"]);
        assert!(TARGETS.iter().filter(|t| t.shared).all(|t| t.sig.process));
    }
}
