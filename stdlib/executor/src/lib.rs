//! lossproof's executor: one seed of a scenario's plan against the real
//! stack, and what it drives — the seeded workload ([`workload`]), every
//! fault ([`fault`]: one function each, found by name in
//! [`fault::REGISTRY`]), the reference consumers and a team's own
//! ([`own`]) as supervised processes — then the drain, the score and the
//! clean-up ([`run`]). Every word it acts on is a row of
//! `lossproof-vocabulary`; the pieces it is built from (supervisor, drain
//! gate, reconciler, lake) are `lossproof-runtime`'s.

pub mod blame;
pub mod check;
mod error;
pub mod fault;
pub mod freshness;
mod niced;
pub mod own;
pub mod run;
mod seed;
pub mod snapshots;
pub mod under_test;
pub mod workload;

pub use seed::Seed;

pub use check::check;
pub use error::{Error, Result};

/// The plan of scenario `text` as the stdlib reads it, no includes (for
/// unit tests; panics on a diagnostic).
#[cfg(test)]
pub(crate) fn test_plan(text: &str) -> lossproof_lang::Plan {
    lossproof_lang::Analyzer::new(
        &lossproof_vocabulary::Stdlib,
        &lossproof_lang::loader::NoIncludes,
    )
    .analyze("test.lp", text)
    .plan
    .expect("the plan reads")
}
