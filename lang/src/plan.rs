//! The analysed scenario: everything the runtime needs, nothing it must
//! re-derive. Serialisable, and independent of the seed (see `Timeline` for
//! a seed's concrete fault times).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::ast::Expectation;
use crate::span::Span;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub scenario: String,
    pub workload: WorkloadPlan,
    /// Consumers under test, in the order declared.
    pub consumers: Vec<String>,
    /// The team's own consumers (`consumer NAME command "…"`), in the
    /// order written; those under test are also in `consumers`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub declared: Vec<DeclaredConsumer>,
    /// Every stdlib setting, with the scenario's value or the default.
    pub settings: BTreeMap<String, SettingValue>,
    pub phases: Vec<Phase>,
    /// Every fault statement after fragments are expanded. An action's index
    /// is its id, and picks its own random stream: editing one action never
    /// moves another's occurrences.
    pub actions: Vec<PlannedAction>,
    pub assertions: Vec<Assertion>,
}

/// A consumer of the team's own: a program lossproof starts, supervises
/// and strikes like its reference consumers (docs/bring-your-own.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeclaredConsumer {
    pub name: String,
    /// The program and its arguments, split as a shell would (no shell
    /// runs it); `{placeholders}` are filled per seed.
    pub command: Vec<String>,
    /// Where it keeps the Kafka offsets it reached.
    pub offsets: OffsetsAt,
    /// What it reads: the change topics (the default), or the source
    /// database itself through a replication slot of its own.
    pub reads: Reads,
    /// What its lake holds: one row per key (a mirror), or every change
    /// event (a change log, scored by each key's latest row in source order).
    pub writes: LakeShape,
    pub span: Span,
    /// The command string, for diagnostics about the program.
    pub command_span: Span,
}

/// The placeholders a consumer declaration may use, and what each becomes.
pub const PLACEHOLDERS: &[(&str, &str)] = &[
    ("run", "the seed's run id, also the change topics' prefix"),
    ("consumer", "the consumer's name"),
    (
        "namespace",
        "the Iceberg namespace it writes (command only)",
    ),
    ("group", "the Kafka consumer group it uses (command only)"),
];

/// The namespace a declared consumer writes when it does not say.
pub const DEFAULT_LAKE: &str = "{consumer}_{run}";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum OffsetsAt {
    /// The consumer group's committed offsets (the default).
    Group,
    /// Snapshot summaries of this table in its namespace, as
    /// `lossproof.offset.<topic>.<partition>` = the next offset to read.
    Lake { table: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LakeShape {
    /// One row per key, like the source (the default).
    Mirror,
    /// Every change event as a row (Debezium's envelope: `op`, `source`
    /// with its `lsn`, `before`/`after` as JSON), append-only.
    Changelog,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reads {
    /// Debezium's change topics in Kafka (the default).
    Topics,
    /// The source PostgreSQL, through a replication slot and publication
    /// lossproof names for the run (an embedded Debezium engine, say).
    Source,
}

impl DeclaredConsumer {
    /// `template` with the placeholders of `values` filled in.
    #[must_use]
    pub fn fill(template: &str, values: &[(&str, &str)]) -> String {
        values
            .iter()
            .fold(template.to_owned(), |text, (name, value)| {
                text.replace(&format!("{{{name}}}"), value)
            })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadPlan {
    pub name: String,
    /// The scenario's own tables (`table NAME < … >`), parents first;
    /// empty for a stdlib workload, whose tables the stdlib knows by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tables: Vec<crate::vocabulary::TableSig>,
    pub rate_per_s: f64,
    pub connections: u64,
    pub customers: u64,
    /// `orders` rows bulk-loaded (`COPY`) before capture starts, so the
    /// connector's initial snapshot carries them (`preload 1M`); 0: none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub preload: u64,
    /// Percent of operations per kind; adds up to 100.
    pub mix: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Phase {
    /// The workload runs for `duration_ms`; faults fire inside.
    Load { duration_ms: u64, span: Span },
    /// No workload for `duration_ms`; faults may still fire.
    Quiet { duration_ms: u64, span: Span },
    /// Wait until the stream is provably drained, at most `timeout_ms`;
    /// `implicit` when lossproof added the final drain itself.
    Drain {
        timeout_ms: u64,
        implicit: bool,
        span: Span,
    },
}

impl Phase {
    #[must_use]
    pub fn describe(&self) -> String {
        match self {
            Phase::Load { duration_ms, .. } => format!("under load {}", show_ms(*duration_ms)),
            Phase::Quiet { duration_ms, .. } => format!("quiet {}", show_ms(*duration_ms)),
            Phase::Drain {
                timeout_ms,
                implicit,
                ..
            } => format!(
                "drain within {}{}",
                show_ms(*timeout_ms),
                if *implicit { " (implicit)" } else { "" }
            ),
        }
    }
}

/// A fault statement, resolved against the vocabulary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedAction {
    /// The stdlib's registered name (`kill`, `widen-column`, …).
    pub fault: String,
    /// The statement's words as written, e.g. `kill consumer careless`.
    pub text: String,
    pub phase: usize,
    pub target: Option<Target>,
    pub args: BTreeMap<String, ArgValue>,
    /// Where in the phase it may fire: `[start, end)` in ms from the phase start.
    pub window_ms: (u64, u64),
    pub schedule: PlannedSchedule,
    /// Percent chance that each occurrence really fires (None = always).
    pub chance_percent: Option<f64>,
    pub span: Span,
    /// The `use` statements that brought it in from a fragment, outermost first.
    pub used_at: Vec<Span>,
}

impl PlannedAction {
    /// The name its argument `arg` gives (a table, a column, …), if it has
    /// one.
    #[must_use]
    pub fn name_arg(&self, arg: &str) -> Option<&str> {
        match self.args.get(arg) {
            Some(ArgValue::Name(n)) => Some(n),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum PlannedSchedule {
    /// No schedule written: once, at a random offset within the window.
    Once,
    At {
        offset_ms: u64,
    },
    Every {
        period_ms: u64,
        jitter_ms: u64,
    },
    Randomly {
        times: u64,
    },
}

/// `consumer`, `consumer careless`, `broker`, …
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    pub component: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub consumer: Option<String>,
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.component)?;
        if let Some(consumer) = &self.consumer {
            write!(f, " {consumer}")?;
        }
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArgValue {
    Name(String),
    Count(u64),
    Percent(f64),
    DurationMs(u64),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SettingValue {
    Count(u64),
    DurationMs(u64),
    Choice(String),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Assertion {
    pub name: String,
    /// `DataFusion` SQL over `diff`, `summary`, `source_rows`, `lake_rows`, `faults`.
    pub sql: String,
    pub expect: Expectation,
    pub span: Span,
    /// Where the SQL text starts, so a planning error can point into it.
    pub sql_span: Span,
    /// The consumers whose rows it judges: a shorthand's consumer
    /// arguments, or the scenario's consumers a raw query names in a string
    /// literal (`consumer = 'correct'`). A run that does not test one of
    /// them does not evaluate it.
    #[serde(default)]
    pub consumers: Vec<String>,
}

impl Plan {
    /// The plan with every duration of its timeline multiplied by `factor`
    /// (`run --time-scale 0.1`: a smoke run of a scenario in a tenth of its
    /// time): load and quiet phases, each action's window, `at` offsets,
    /// `every` periods and jitters, and duration arguments (`pause … for
    /// 10s`). Unchanged, because they are not the scenario's time but the
    /// pipeline's or the run's: drain limits (catching up takes what it
    /// takes; a shorter limit would only turn slow into INVALID), settings
    /// (`autocommit_interval`), the workload's rate, `randomly N times`
    /// counts and chances. Every scaled duration stays at least 1 ms, and
    /// an `at` stays inside its window, so the scaled plan times out the
    /// same way the analyser checked. A `preload` is scaled too (at least
    /// 1,000 orders): its snapshot is most of such a run's time.
    #[must_use]
    pub fn time_scaled(&self, factor: f64) -> Plan {
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let scale = |ms: u64| ((ms as f64) * factor).round().max(0.0) as u64;
        let mut plan = self.clone();
        if plan.workload.preload > 0 {
            plan.workload.preload = scale(plan.workload.preload).max(1_000);
        }
        for phase in &mut plan.phases {
            match phase {
                Phase::Load { duration_ms, .. } | Phase::Quiet { duration_ms, .. } => {
                    *duration_ms = scale(*duration_ms).max(1);
                }
                Phase::Drain { .. } => {}
            }
        }
        for action in &mut plan.actions {
            let (start, end) = action.window_ms;
            let start = scale(start);
            let end = scale(end).max(start + 1);
            action.window_ms = (start, end);
            match &mut action.schedule {
                PlannedSchedule::At { offset_ms } => {
                    *offset_ms = scale(*offset_ms).min(end - start - 1);
                }
                PlannedSchedule::Every {
                    period_ms,
                    jitter_ms,
                } => {
                    *period_ms = scale(*period_ms).max(1);
                    *jitter_ms = scale(*jitter_ms);
                }
                PlannedSchedule::Once | PlannedSchedule::Randomly { .. } => {}
            }
            for value in action.args.values_mut() {
                if let ArgValue::DurationMs(ms) = value {
                    *ms = scale(*ms).max(1);
                }
            }
        }
        plan
    }
}

/// `1m30s`-style display of a millisecond count.
#[must_use]
pub fn show_ms(ms: u64) -> String {
    if ms == 0 {
        return "0s".to_owned();
    }
    if !ms.is_multiple_of(1000) {
        return if ms >= 1000 {
            format!("{}.{:03}s", ms / 1000, ms % 1000)
        } else {
            format!("{ms}ms")
        };
    }
    let s = ms / 1000;
    let (h, m, s) = (s / 3600, s / 60 % 60, s % 60);
    [(h, "h"), (m, "m"), (s, "s")]
        .iter()
        .filter(|(n, _)| *n > 0)
        .fold(String::new(), |mut out, (n, unit)| {
            use std::fmt::Write as _;
            let _ = write!(out, "{n}{unit}");
            out
        })
}

/// Serde's `skip_serializing_if` for counts that are 0 by default.
#[allow(clippy::trivially_copy_pass_by_ref)] // serde passes a reference
fn is_zero(n: &u64) -> bool {
    *n == 0
}
