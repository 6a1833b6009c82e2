//! Hover: what the word under the cursor is, from the stdlib's vocabulary and the grammar.

use std::fmt::Write;

use lossproof_lang::vocabulary::{
    ColumnSig, FaultSig, ParamKind, TableSig, Vocabulary, WorkloadSig, compile_pattern, first_word,
    usage,
};
use lossproof_vocabulary::Stdlib;
use tower_lsp_server::ls_types::{Hover, HoverContents, MarkupContent, MarkupKind};

use super::completion::setting_value;
use super::context::{Context, Step, alternatives, follow};
use super::document::Document;
use super::keywords;
use super::position::LineIndex;

/// The hover for byte `offset` of the document, if the word there means something.
pub(super) fn hover(document: &Document, offset: usize) -> Option<Hover> {
    let text = document.text();
    let ctx = Context::hover(text, offset)?;
    let in_table = super::completion::in_table(text, ctx.start);
    let value = match keywords::describe_table_word(ctx.word) {
        Some(line) if in_table => line.to_owned(),
        _ => describe(&ctx, &document.workload())?,
    };
    Some(Hover {
        contents: HoverContents::Markup(MarkupContent {
            kind: MarkupKind::Markdown,
            value,
        }),
        range: Some(LineIndex::new(text).range(ctx.start, ctx.end)),
    })
}

/// What the word of `ctx` is, as Markdown.
fn describe(ctx: &Context<'_>, workload: &WorkloadSig) -> Option<String> {
    let word = ctx.word;
    let first = ctx.first();
    let is_fault_word = |w: &str| Stdlib.faults().iter().any(|f| first_word(f.pattern) == w);
    if ctx.before.is_empty() {
        if is_fault_word(word) {
            let faults = Stdlib
                .faults()
                .iter()
                .filter(|f| first_word(f.pattern) == word);
            return Some(faults_text(faults));
        }
        if let Some(line) = keywords::describe(word) {
            return Some(keyword_text(word, line));
        }
    }
    if first == "consumer"
        && !ctx.before.is_empty()
        && let Some(line) = keywords::describe_clause(word)
    {
        return Some(line.to_owned());
    }
    match ctx.before.last().copied() {
        Some("workload") => {
            return Stdlib
                .workloads()
                .iter()
                .find(|w| w.name == word)
                .map(workload_text);
        }
        Some("set") => return setting_text(word),
        _ => {}
    }
    if first == "expect" && Stdlib.consumers().iter().all(|c| c.name != word) {
        let mut words = ctx.before[1..].to_vec();
        words.push(word);
        let matching: Vec<String> = Stdlib
            .shorthands()
            .iter()
            .filter(|s| {
                alternatives(&compile_pattern(s.pattern))
                    .iter()
                    .any(|steps| follow(steps, &words, &Stdlib).is_some())
            })
            .map(|s| {
                format!(
                    "```lp\nexpect {}\n```\n{}\n\n```sql\n{}\n```",
                    usage(&compile_pattern(s.pattern)),
                    s.summary,
                    s.sql
                )
            })
            .collect();
        if !matching.is_empty() {
            return Some(matching.join("\n\n---\n\n"));
        }
    }
    if is_fault_word(first)
        && !ctx.before.is_empty()
        && let Some(text) = fault_slot(ctx, workload)
    {
        return Some(text);
    }
    generic(word, workload)
}

/// A word in a fault's statement, by the place of the fault's pattern it fills.
fn fault_slot(ctx: &Context<'_>, workload: &WorkloadSig) -> Option<String> {
    let word = ctx.word;
    let mut faults = Vec::new();
    for fault in Stdlib.faults() {
        for steps in alternatives(&compile_pattern(fault.pattern)) {
            let Some(follow) = follow(&steps, &ctx.before, &Stdlib) else {
                continue;
            };
            if follow.consumer && Stdlib.consumers().iter().any(|c| c.name == word) {
                return generic(word, workload);
            }
            match follow.next {
                Some(Step::Word(literal))
                    if literal == word
                        && !faults.iter().any(|f: &&FaultSig| f.name == fault.name) =>
                {
                    faults.push(fault);
                }
                Some(Step::Param(ParamKind::Column | ParamKind::WidenableColumn)) => {
                    let table = follow
                        .table
                        .and_then(|name| workload.tables.iter().find(|t| t.name == name));
                    if let Some(table) = table
                        && let Some(column) = table.column(word)
                    {
                        return Some(column_text(table, column));
                    }
                }
                Some(Step::Param(_)) => return generic(word, workload),
                _ => {}
            }
        }
    }
    (!faults.is_empty()).then(|| faults_text(faults.into_iter()))
}

/// A word wherever it is: a consumer, target, setting, table, workload, keyword or column.
fn generic(word: &str, workload: &WorkloadSig) -> Option<String> {
    if let Some(consumer) = Stdlib.consumers().iter().find(|c| c.name == word) {
        return Some(format!(
            "**consumer `{}`**\n\n{}",
            consumer.name, consumer.summary
        ));
    }
    if let Some(target) = Stdlib.targets().iter().find(|t| t.name == word) {
        let what = if target.process { " (a process)" } else { "" };
        return Some(format!(
            "**target `{}`**{what}\n\n{}",
            target.name, target.summary
        ));
    }
    if let Some(text) = setting_text(word) {
        return Some(text);
    }
    if let Some(table) = workload.tables.iter().find(|t| t.name == word) {
        return Some(format!(
            "**table `{}`** (workload `{}`)\n\n{}",
            table.name,
            workload.name,
            columns_table(table)
        ));
    }
    if let Some(w) = Stdlib.workloads().iter().find(|w| w.name == word) {
        return Some(workload_text(w));
    }
    if let Some(line) = keywords::describe(word) {
        return Some(keyword_text(word, line));
    }
    let columns: Vec<String> = workload
        .tables
        .iter()
        .filter_map(|t| t.column(word).map(|c| column_text(t, c)))
        .collect();
    (!columns.is_empty()).then(|| columns.join("\n\n"))
}

fn faults_text<'a>(faults: impl Iterator<Item = &'a FaultSig>) -> String {
    faults
        .map(|f| {
            format!(
                "```lp\n{}\n```\n{}",
                usage(&compile_pattern(f.pattern)),
                f.summary
            )
        })
        .collect::<Vec<_>>()
        .join("\n\n---\n\n")
}

fn keyword_text(word: &str, line: &str) -> String {
    format!("**keyword `{word}`**: {line}")
}

fn setting_text(word: &str) -> Option<String> {
    let setting = Stdlib.settings().iter().find(|s| s.name == word)?;
    Some(format!(
        "```lp\nset {} {}\n```\n{}\n\nDefault: `{}`.",
        setting.name,
        setting_value(setting),
        setting.summary,
        setting.default
    ))
}

fn workload_text(workload: &WorkloadSig) -> String {
    let tables: Vec<String> = workload
        .tables
        .iter()
        .map(|t| format!("`{}`", t.name))
        .collect();
    format!(
        "**workload `{}`**\n\n{}\n\nTables: {}.",
        workload.name,
        workload.summary,
        tables.join(", ")
    )
}

fn column_text(table: &TableSig, column: &ColumnSig) -> String {
    let mut text = format!(
        "**column `{}.{}`** {}",
        table.name, column.name, column.sql_type
    );
    if let Some(wider) = column.sql_type.widens_to() {
        let _ = write!(text, " (`widen` makes it {wider})");
    }
    text
}

/// A table's primary key and columns, as Markdown.
pub(super) fn columns_table(table: &TableSig) -> String {
    let mut text = format!(
        "Primary key: `{}`.\n\n| column | type |\n|---|---|\n",
        table.primary_key.join(", ")
    );
    for column in &table.columns {
        let _ = write!(text, "| `{}` | {}", column.name, column.sql_type);
        if let Some(wider) = column.sql_type.widens_to() {
            let _ = write!(text, " -> {wider}");
        }
        text.push_str(" |\n");
    }
    text
}
