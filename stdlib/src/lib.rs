//! lossproof's standard library: the vocabulary the language checks
//! scenarios against (workloads, targets, consumers, faults, settings and
//! assertion shorthands) and the `.lp` files shipped with lossproof.
//!
//! Implementations of the faults and workloads arrive with the runtime; the
//! names and signatures live here so that `lossproof check` works before any
//! stack exists.

pub mod consumer;
pub mod consumers;
mod error;
pub mod fault;
mod faults;
pub mod not_yet;
pub mod own;
pub mod reach;
pub mod run;
mod settings;
mod shorthands;
mod targets;
pub mod workload;
pub mod workloads;

pub use error::{Error, Result};
use lossproof_lang::vocabulary::{
    ConsumerSig, FaultSig, SettingSig, ShorthandSig, TargetSig, Vocabulary, WorkloadSig,
};

/// The stdlib vocabulary.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stdlib;

/// `.lp` files shipped inside the binary, by the path scenarios include them as.
const BUILTIN_FILES: &[(&str, &str)] = &[
    ("stdlib/faults.lp", include_str!("../faults.lp")),
    workloads::ORDERS_FILE,
];

impl Vocabulary for Stdlib {
    fn faults(&self) -> &[FaultSig] {
        faults::FAULTS
    }
    fn shorthands(&self) -> &[ShorthandSig] {
        shorthands::SHORTHANDS
    }
    fn workloads(&self) -> &[WorkloadSig] {
        workloads::all()
    }
    fn consumers(&self) -> &[ConsumerSig] {
        consumers::CONSUMERS
    }
    fn targets(&self) -> &[TargetSig] {
        targets::TARGETS
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
}
