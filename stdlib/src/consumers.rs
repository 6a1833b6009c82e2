//! The two reference consumers (see docs and FINDINGS: careless vs correct):
//! their words in the vocabulary ([`CONSUMERS`]) and how `run` starts and
//! gates each one ([`PROGRAMS`]). Adding a consumer = one entry in each, a
//! `lossproof consumer NAME` subcommand, and its code under `consumer/`.

use std::ffi::OsString;

use lossproof_lang::Plan;
use lossproof_lang::plan::SettingValue;
use lossproof_lang::vocabulary::ConsumerSig;

pub const CONSUMERS: &[ConsumerSig] = &[
    ConsumerSig {
        name: "careless",
        summary: "Auto-commits offsets on a timer, applies in arrival order, writes each batch as a delete commit then an append commit, fixed schema, logs errors and carries on.",
    },
    ConsumerSig {
        name: "correct",
        summary: "Offsets in the same Iceberg commit as the rows, merges by key and LSN, keeps tombstones, widens its schema, dead-letters junk, re-applies after losing a commit race.",
    },
];

/// A consumer as `run` starts it: `lossproof consumer NAME --run RUN
/// --state STATE` plus the options the scenario's settings give it; its
/// namespace and group are `consumer::namespace` and `consumer::group`.
#[derive(Debug)]
pub struct Program {
    pub name: &'static str,
    /// Command-line options drawn from the scenario's settings.
    pub options: fn(&Plan) -> Vec<OsString>,
    /// The table (in its namespace) whose snapshots store the Kafka offsets
    /// it reached, when it keeps them in the lake: the drain gate then
    /// checks them as well as the group's.
    pub lake_offsets: Option<&'static str>,
}

pub const PROGRAMS: &[Program] = &[
    Program {
        name: "careless",
        options: careless_options,
        lake_offsets: None,
    },
    Program {
        name: "correct",
        options: batch_option,
        lake_offsets: Some(crate::consumer::correct::state::STATE_TABLE),
    },
];

/// The program of consumer `name`, if it exists.
#[must_use]
pub fn program(name: &str) -> Option<&'static Program> {
    PROGRAMS.iter().find(|p| p.name == name)
}

/// `set consumer_batch N`.
fn batch_option(plan: &Plan) -> Vec<OsString> {
    match plan.settings.get("consumer_batch") {
        Some(SettingValue::Count(n)) => vec!["--batch".into(), n.to_string().into()],
        _ => Vec::new(),
    }
}

/// `set consumer_batch N` and `set autocommit_interval D`.
fn careless_options(plan: &Plan) -> Vec<OsString> {
    let mut options = batch_option(plan);
    if let Some(SettingValue::DurationMs(ms)) = plan.settings.get("autocommit_interval") {
        options.extend(["--auto-commit-ms".into(), ms.to_string().into()]);
    }
    options
}
