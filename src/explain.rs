//! `lossproof explain FILE --seed N [--json]`

use std::fmt::Write as _;
use std::path::Path;

use lossproof_lang::ast::Expectation;
use lossproof_lang::plan::{LakeShape, OffsetsAt, Phase, Plan, Reads, SettingValue, show_ms};
use lossproof_lang::render::location;
use lossproof_lang::{Analysis, Timeline};

use crate::CliResult;
use crate::scenario;

pub(crate) fn run(file: &Path, seed: u64, json: bool) -> CliResult<bool> {
    let analysis = scenario::check(file, None)?;
    scenario::print_diagnostics(&analysis);
    let Some(plan) = &analysis.plan else {
        return Ok(false);
    };
    if plan.phases.is_empty() {
        return Err(format!(
            "`{}` has no phase to run (a file of fragments only?)",
            file.display()
        )
        .into());
    }
    let timeline = plan.timeline(seed);
    if json {
        let out = serde_json::json!({ "plan": plan, "timeline": timeline });
        println!(
            "{}",
            serde_json::to_string_pretty(&out).expect("plan serialises")
        );
    } else {
        print!("{}", human(&analysis, plan, &timeline));
    }
    Ok(true)
}

/// A declared table: its columns on one line, its key, foreign keys and
/// replica identity on the next.
fn table_text(table: &lossproof_lang::vocabulary::TableSig) -> String {
    let columns: Vec<String> = table
        .columns
        .iter()
        .map(|c| {
            let mut text = format!("{} {}", c.name, c.sql_type);
            if c.not_null {
                text.push_str(" not null");
            }
            if c.large {
                text.push_str(" large");
            }
            text
        })
        .collect();
    let mut constraints = vec![format!("primary key ({})", table.primary_key.join(", "))];
    for fk in &table.foreign_keys {
        constraints.push(format!(
            "foreign key ({}) references {}{}",
            fk.columns.join(", "),
            fk.references,
            if fk.cascade { " on delete cascade" } else { "" }
        ));
    }
    if let Some(identity) = table.replica_identity {
        constraints.push(format!(
            "replica identity {}",
            match identity {
                lossproof_lang::vocabulary::ReplicaIdentity::Full => "full",
                lossproof_lang::vocabulary::ReplicaIdentity::Default => "default",
            }
        ));
    }
    format!(
        "  {}: {}\n    {}\n",
        table.name,
        columns.join(", "),
        constraints.join("; ")
    )
}

/// The workload line, and a declared workload's tables.
fn workload_text(w: &lossproof_lang::plan::WorkloadPlan) -> String {
    let mut out = String::new();
    let mix: Vec<String> = w
        .mix
        .iter()
        .filter(|(_, p)| **p > 0.0)
        .map(|(op, p)| format!("{op} {p}%"))
        .collect();
    let _ = writeln!(
        out,
        "workload {}: {}/s over {} connections, {} {}; mix {}",
        w.name,
        w.rate_per_s,
        w.connections,
        w.customers,
        if w.tables.is_empty() {
            "customers"
        } else {
            "rows first"
        },
        mix.join(", ")
    );
    if w.preload > 0 {
        let _ = writeln!(
            out,
            "preload: {} orders (with {} customers and one item each) bulk-loaded with COPY before capture \
             starts: the connector's initial snapshot carries them; the load phases begin once the snapshot \
             reached every consumer's lake, and half the updates and deletes hit preloaded orders",
            w.preload,
            w.preload.div_ceil(10)
        );
    }
    if !w.tables.is_empty() {
        let _ = writeln!(out, "tables (declared; parents first):");
        for table in &w.tables {
            out.push_str(&table_text(table));
        }
    }
    out
}

/// The timeline as a person reads it.
pub(crate) fn human(analysis: &Analysis, plan: &Plan, timeline: &Timeline) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "scenario {}  seed {}", plan.scenario, timeline.seed);
    out.push_str(&workload_text(&plan.workload));
    let _ = writeln!(out, "consumers: {}", plan.consumers.join(", "));
    for declared in &plan.declared {
        let _ = writeln!(
            out,
            "  {}: `{}` in the scenario's folder; reads {}, its lake {}, its offsets in {}  {}",
            declared.name,
            declared.command.join(" "),
            match declared.reads {
                Reads::Topics => "the change topics",
                Reads::Source => "the source through a slot of its own",
            },
            match declared.writes {
                LakeShape::Mirror => "a row per key",
                LakeShape::Changelog => "a change log (scored by each key's latest row)",
            },
            match &declared.offsets {
                OffsetsAt::Group => "its group".to_owned(),
                OffsetsAt::Lake { table } => format!("the lake's {table}"),
            },
            location(&analysis.sources, declared.span)
        );
    }
    let settings: Vec<String> = plan
        .settings
        .iter()
        .map(|(k, v)| match v {
            SettingValue::Count(n) => format!("{k} {n}"),
            SettingValue::DurationMs(ms) => format!("{k} {}", show_ms(*ms)),
            SettingValue::Choice(c) => format!("{k} {c}"),
        })
        .collect();
    let _ = writeln!(out, "settings: {}", settings.join(", "));
    for (index, phase) in plan.phases.iter().enumerate() {
        let _ = writeln!(out, "\nphase {}  {}", index + 1, phase.describe());
        let fired: Vec<_> = timeline
            .occurrences
            .iter()
            .filter(|o| o.phase == index)
            .collect();
        if fired.is_empty() && !matches!(phase, Phase::Drain { .. }) {
            let _ = writeln!(out, "  (no faults)");
        }
        for occurrence in fired {
            let action = &plan.actions[occurrence.action];
            let _ = writeln!(
                out,
                "  {:>10}  {:<44} {}",
                format!(
                    "+{}.{:03}s",
                    occurrence.offset_ms / 1000,
                    occurrence.offset_ms % 1000
                ),
                occurrence.text,
                location(&analysis.sources, action.span)
            );
        }
    }
    if !plan.assertions.is_empty() {
        let _ = writeln!(out, "\nassertions");
        for assertion in &plan.assertions {
            let expect = match &assertion.expect {
                Expectation::True => String::new(),
                Expectation::Empty => "  (expect empty)".to_owned(),
                Expectation::Compare { op, value } => format!("  (expect {} {value})", op.as_str()),
            };
            let _ = writeln!(out, "  {}{expect}", assertion.name);
        }
    }
    let _ = writeln!(
        out,
        "\n{} fault occurrence{} in {} phase{}",
        timeline.occurrences.len(),
        if timeline.occurrences.len() == 1 {
            ""
        } else {
            "s"
        },
        plan.phases.len(),
        if plan.phases.len() == 1 { "" } else { "s" }
    );
    out
}
