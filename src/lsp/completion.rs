//! Completion: the words that can come next where the cursor is.
//!
//! Where the statement's words so far say what comes next (`alter table orders widen ` ->
//! the widenable columns of `orders`; `set ` -> the settings; `kill ` -> the targets that are
//! processes), only those are offered. Elsewhere, and at the start of a statement, every word
//! is: faults, keywords, assertion shorthands, targets, consumers, tables, columns, settings
//! and workloads.

use std::fmt::Write;

use lossproof_lang::parser::KEYWORDS;
use lossproof_lang::vocabulary::{
    ParamKind, PatternPart, SettingKind, SettingSig, Vocabulary, WorkloadSig, compile_pattern,
    first_word, usage,
};
use lossproof_vocabulary::Stdlib;
use tower_lsp_server::ls_types::{
    CompletionItem, CompletionItemKind, CompletionTextEdit, Documentation, InsertTextFormat,
    MarkupContent, MarkupKind, TextEdit,
};

use super::context::{Context, Step, alternatives, follow};
use super::document::Document;
use super::keywords;
use super::position::LineIndex;

/// What to offer at byte `offset` of the document. `snippets`: the client takes snippet
/// syntax (placeholders in assertion shorthands).
pub(super) fn complete(document: &Document, offset: usize, snippets: bool) -> Vec<CompletionItem> {
    let text = document.text();
    let Some(ctx) = Context::completion(text, offset) else {
        return Vec::new();
    };
    let words = Words {
        document,
        workload: document.workload(),
        snippets,
    };
    let mut items = if in_table(text, ctx.start) {
        words.table_line(&ctx.before)
    } else {
        words.specific(&ctx).unwrap_or_else(|| words.everything())
    };
    let range = LineIndex::new(text).range(ctx.start, ctx.end);
    let mut seen = std::collections::HashSet::new();
    items.retain(|item| seen.insert((item.label.clone(), item.detail.clone())));
    for (i, item) in items.iter_mut().enumerate() {
        let new_text = item
            .insert_text
            .take()
            .unwrap_or_else(|| item.label.clone());
        item.text_edit = Some(CompletionTextEdit::Edit(TextEdit { range, new_text }));
        // Keep this order (most likely first) in clients that sort by `sortText`.
        item.sort_text = Some(format!("{i:04}"));
    }
    items
}

struct Words<'a> {
    document: &'a Document,
    workload: std::borrow::Cow<'static, WorkloadSig>,
    snippets: bool,
}

fn item(
    label: &str,
    kind: CompletionItemKind,
    detail: impl Into<String>,
    doc: Option<String>,
) -> CompletionItem {
    CompletionItem {
        label: label.to_owned(),
        kind: Some(kind),
        detail: Some(detail.into()),
        documentation: doc.map(|value| {
            Documentation::MarkupContent(MarkupContent {
                kind: MarkupKind::Markdown,
                value,
            })
        }),
        ..CompletionItem::default()
    }
}

fn keyword(word: &str) -> CompletionItem {
    item(
        word,
        CompletionItemKind::KEYWORD,
        "keyword",
        keywords::describe(word).map(str::to_owned),
    )
}

/// A literal word of a fault's or shorthand's pattern, after `before`. Several patterns with
/// the same next word (`alter table`) share one item that lists them.
fn push_pattern_word(
    items: &mut Vec<CompletionItem>,
    word: &str,
    pattern: &'static str,
    before: &[&str],
) {
    let written = usage(&compile_pattern(pattern));
    let existing = items
        .iter_mut()
        .find(|i| i.label == word && i.kind == Some(CompletionItemKind::KEYWORD));
    let Some(existing) = existing else {
        let doc = format!("```lp\n{written}\n```");
        items.push(item(word, CompletionItemKind::KEYWORD, written, Some(doc)));
        return;
    };
    existing.detail = Some(format!("{} {word} …", before.join(" ")));
    if let Some(Documentation::MarkupContent(doc)) = &mut existing.documentation {
        doc.value = doc.value.replace("\n```", &format!("\n{written}\n```"));
    }
}

/// How a setting's value is written.
pub(super) fn setting_value(setting: &SettingSig) -> String {
    match setting.kind {
        SettingKind::Count { min, max } => format!("{min}..{max}"),
        SettingKind::Duration => "DURATION".to_owned(),
        SettingKind::Choice(choices) => choices.join(" | "),
    }
}

/// What may follow the words `rest` of `consumer NAME …`: a clause's
/// choices after its keyword, otherwise the clauses not given yet.
/// Whether `offset` is inside the body of a `table NAME < … >`: after a
/// `<` that opens a line starting with `table`, with no `>` since.
pub(super) fn in_table(text: &str, offset: usize) -> bool {
    let before = &text[..offset];
    match (before.rfind('<'), before.rfind('>')) {
        (Some(open), close) if close.is_none_or(|c| c < open) => {
            let line_start = before[..open].rfind('\n').map_or(0, |i| i + 1);
            before[line_start..open].trim_start().starts_with("table ")
        }
        _ => false,
    }
}

fn table_word(word: &str) -> CompletionItem {
    item(
        word,
        CompletionItemKind::KEYWORD,
        "table declaration",
        crate::lsp::keywords::describe_table_word(word).map(str::to_owned),
    )
}

fn consumer_clauses(rest: &[&str]) -> Vec<CompletionItem> {
    let words: &[&str] = match rest.last().copied() {
        Some("command") => &[],
        Some("reads") => &["topics", "source"],
        Some("lake") if rest.len() < 2 || rest[rest.len() - 2] != "in" => &["mirror", "changelog"],
        Some("offsets") => &["in"],
        Some("in") => &["group", "lake"],
        _ => &["command", "offsets", "reads", "lake"],
    };
    words
        .iter()
        .filter(|w| !(["command", "offsets", "reads", "lake"].contains(w) && rest.contains(w)))
        .map(|w| {
            item(
                w,
                CompletionItemKind::KEYWORD,
                "consumer clause",
                crate::lsp::keywords::describe_clause(w).map(str::to_owned),
            )
        })
        .collect()
}

impl Words<'_> {
    /// The words that fit after the statement's words so far, when those say; `None` when
    /// they do not (offer everything).
    fn specific(&self, ctx: &Context<'_>) -> Option<Vec<CompletionItem>> {
        let before = ctx.before.as_slice();
        let last = before.last().copied();
        Some(match before {
            [] => return None,
            ["set"] => Self::settings(),
            ["set", name] => Stdlib
                .settings()
                .iter()
                .filter(|s| s.name == *name)
                .flat_map(|s| match s.kind {
                    SettingKind::Choice(choices) => choices.to_vec(),
                    _ => Vec::new(),
                })
                .map(|choice| item(choice, CompletionItemKind::ENUM_MEMBER, "value", None))
                .collect(),
            ["consumers", listed @ ..] => Self::consumers()
                .into_iter()
                .filter(|c| !listed.contains(&c.label.as_str()))
                .collect(),
            ["consumer"] => Vec::new(),
            ["consumer", _, rest @ ..] => consumer_clauses(rest),
            ["workload"] => Self::workloads(),
            ["workload", _, rest @ ..] => self.workload_params(rest),
            ["use"] => self
                .document
                .fragments()
                .iter()
                .map(|name| item(name, CompletionItemKind::MODULE, "fragment", None))
                .collect(),
            ["under"] => vec![keyword("load")],
            ["drain"] => vec![keyword("within")],
            ["between", _] => vec![keyword("and")],
            [.., "with"] => vec![keyword("chance")],
            [.., "times"] => vec![keyword("randomly")],
            ["expect"] => self.shorthands(false),
            ["expect", rest @ ..] => self.shorthand_next(rest),
            // A duration or a percentage comes next.
            _ if matches!(last, Some("at" | "every" | "chance")) => Vec::new(),
            [first, ..]
                if Stdlib
                    .faults()
                    .iter()
                    .any(|f| first_word(f.pattern) == *first) =>
            {
                self.fault_next(before)
            }
            [
                "scenario" | "include" | "fragment" | "quiet" | "between" | "assert",
                ..,
            ]
            | ["under" | "drain", _, ..] => Vec::new(),
            _ => return None,
        })
    }

    /// Inside a table body: what may come next on a column or constraint line.
    fn table_line(&self, before: &[&str]) -> Vec<CompletionItem> {
        let words = |ws: &[&str]| ws.iter().map(|w| table_word(w)).collect::<Vec<_>>();
        match before {
            [] => words(&["primary", "foreign", "replica"]),
            ["primary" | "foreign"] | [.., "primary"] => words(&["key"]),
            ["replica"] => words(&["identity"]),
            ["replica", "identity"] => words(&["full", "default"]),
            [.., "references"] => self
                .document
                .declared_tables()
                .iter()
                .map(|name| item(name, CompletionItemKind::STRUCT, "declared table", None))
                .collect(),
            [.., "on"] => words(&["delete"]),
            [.., "delete"] => words(&["cascade"]),
            [.., "not"] => words(&["null"]),
            [_] => lossproof_lang::tables::type_words()
                .iter()
                .map(|t| item(t, CompletionItemKind::TYPE_PARAMETER, "column type", None))
                .collect(),
            ["primary" | "foreign" | "replica", ..] => Vec::new(),
            [_, _, ..] => words(&["primary", "not", "large", "references"]),
        }
    }

    fn everything(&self) -> Vec<CompletionItem> {
        let mut items = Self::faults();
        items.extend(KEYWORDS.iter().map(|k| keyword(k)));
        items.extend(self.shorthands(true));
        items.extend(Self::targets(ParamKind::Target));
        items.extend(Self::consumers());
        items.extend(self.tables());
        items.extend(self.columns(None, false));
        items.extend(Self::settings());
        items.extend(Self::workloads());
        items
    }

    fn faults() -> Vec<CompletionItem> {
        Stdlib
            .faults()
            .iter()
            .map(|fault| {
                item(
                    first_word(fault.pattern),
                    CompletionItemKind::FUNCTION,
                    usage(&compile_pattern(fault.pattern)),
                    Some(fault.summary.to_owned()),
                )
            })
            .collect()
    }

    /// What may follow a fault's words so far: its next words and parameters, or a schedule.
    fn fault_next(&self, before: &[&str]) -> Vec<CompletionItem> {
        let mut items = Vec::new();
        let mut schedule = false;
        for fault in Stdlib.faults() {
            if first_word(fault.pattern) != before[0] {
                continue;
            }
            for steps in alternatives(&compile_pattern(fault.pattern)) {
                let Some(follow) = follow(&steps, before, &Stdlib) else {
                    continue;
                };
                if follow.consumer {
                    items.extend(Self::consumers());
                }
                match follow.next {
                    Some(Step::Word(word)) => {
                        push_pattern_word(&mut items, word, fault.pattern, before);
                    }
                    Some(Step::Param(kind)) => items.extend(self.param(kind, follow.table)),
                    None => schedule = true,
                }
            }
        }
        // Past the fault's words (or at their end): its schedule.
        if schedule || items.is_empty() {
            items.extend(["at", "every", "with"].map(keyword));
        }
        items
    }

    fn shorthand_next(&self, words: &[&str]) -> Vec<CompletionItem> {
        let mut items = Vec::new();
        for shorthand in Stdlib.shorthands() {
            for steps in alternatives(&compile_pattern(shorthand.pattern)) {
                let Some(follow) = follow(&steps, words, &Stdlib) else {
                    continue;
                };
                match follow.next {
                    Some(Step::Word(word)) => {
                        push_pattern_word(&mut items, word, shorthand.pattern, words);
                    }
                    Some(Step::Param(kind)) => items.extend(self.param(kind, follow.table)),
                    None => {}
                }
            }
        }
        items
    }

    /// The words a parameter of a pattern can be.
    fn param(&self, kind: ParamKind, table: Option<&str>) -> Vec<CompletionItem> {
        match kind {
            ParamKind::Process | ParamKind::Target | ParamKind::Link => Self::targets(kind),
            ParamKind::Table | ParamKind::Topic => self.tables(),
            ParamKind::Column => self.columns(table, false),
            ParamKind::WidenableColumn => self.columns(table, true),
            ParamKind::Consumer => Self::consumers(),
            ParamKind::NewColumn | ParamKind::Count | ParamKind::Percent | ParamKind::Duration => {
                Vec::new()
            }
        }
    }

    /// Assertion shorthands, written with `expect` (at the start of a statement) or without
    /// (after `expect`).
    fn shorthands(&self, with_expect: bool) -> Vec<CompletionItem> {
        let prefix = if with_expect { "expect " } else { "" };
        Stdlib
            .shorthands()
            .iter()
            .map(|shorthand| {
                let parts = compile_pattern(shorthand.pattern);
                let written = format!("{prefix}{}", usage(&parts));
                let mut item = item(
                    &written,
                    CompletionItemKind::SNIPPET,
                    "assertion shorthand",
                    Some(format!(
                        "{}\n\n```sql\n{}\n```",
                        shorthand.summary, shorthand.sql
                    )),
                );
                if self.snippets {
                    item.insert_text = Some(format!("{prefix}{}", snippet(&parts, &mut 0)));
                    item.insert_text_format = Some(InsertTextFormat::SNIPPET);
                }
                item
            })
            .collect()
    }

    fn targets(kind: ParamKind) -> Vec<CompletionItem> {
        Stdlib
            .targets()
            .iter()
            .filter(|t| match kind {
                ParamKind::Process => t.process,
                ParamKind::Link => t.link,
                _ => true,
            })
            .map(|target| {
                let detail = if target.process {
                    "target (a process)"
                } else {
                    "target"
                };
                item(
                    target.name,
                    CompletionItemKind::ENUM_MEMBER,
                    detail,
                    Some(target.summary.to_owned()),
                )
            })
            .collect()
    }

    fn consumers() -> Vec<CompletionItem> {
        Stdlib
            .consumers()
            .iter()
            .map(|c| {
                item(
                    c.name,
                    CompletionItemKind::CLASS,
                    "consumer",
                    Some(c.summary.to_owned()),
                )
            })
            .collect()
    }

    fn tables(&self) -> Vec<CompletionItem> {
        self.workload
            .tables
            .iter()
            .map(|table| {
                item(
                    &table.name,
                    CompletionItemKind::STRUCT,
                    format!("table of workload {}", self.workload.name),
                    Some(super::hover::columns_table(table)),
                )
            })
            .collect()
    }

    /// The columns of `table` (of every table when it is not one), only those `widen` can
    /// change when `widenable`.
    fn columns(&self, table: Option<&str>, widenable: bool) -> Vec<CompletionItem> {
        let tables = &self.workload.tables;
        let chosen: Vec<_> = match table.and_then(|name| tables.iter().find(|t| t.name == name)) {
            Some(table) => vec![table],
            None => tables.iter().collect(),
        };
        let mut items: Vec<CompletionItem> = Vec::new();
        for table in chosen {
            for column in &table.columns {
                if widenable && column.sql_type.widens_to().is_none() {
                    continue;
                }
                let mut detail = format!("{}.{} {}", table.name, column.name, column.sql_type);
                if let Some(wider) = column.sql_type.widens_to() {
                    let _ = write!(detail, " -> {wider}");
                }
                match items.iter_mut().find(|i| i.label == column.name) {
                    // The same name in several tables: one item that lists them.
                    Some(existing) => {
                        let d = existing.detail.get_or_insert_default();
                        d.push_str(", ");
                        d.push_str(&detail);
                    }
                    None => items.push(item(&column.name, CompletionItemKind::FIELD, detail, None)),
                }
            }
        }
        items
    }

    fn settings() -> Vec<CompletionItem> {
        Stdlib
            .settings()
            .iter()
            .map(|s| {
                item(
                    s.name,
                    CompletionItemKind::PROPERTY,
                    format!(
                        "set {} {} (default {})",
                        s.name,
                        setting_value(s),
                        s.default
                    ),
                    Some(s.summary.to_owned()),
                )
            })
            .collect()
    }

    fn workloads() -> Vec<CompletionItem> {
        Stdlib
            .workloads()
            .iter()
            .map(|w| {
                item(
                    &w.name,
                    CompletionItemKind::MODULE,
                    "workload",
                    Some(w.summary.clone()),
                )
            })
            .collect()
    }

    /// After `workload NAME …`: its parameters, or the operations after `mix`.
    fn workload_params(&self, rest: &[&str]) -> Vec<CompletionItem> {
        match rest.last() {
            Some(&"rate" | &"connections" | &"customers" | &"rows") => Vec::new(),
            _ if rest.contains(&"mix") => self
                .workload
                .operations
                .iter()
                .filter(|op| !rest.contains(op))
                .map(|op| item(op, CompletionItemKind::ENUM_MEMBER, "operation", None))
                .collect(),
            // A workload of the document's own tables counts its first rows.
            _ => {
                let initial = if self.document.declared_tables().is_empty() {
                    "customers"
                } else {
                    "rows"
                };
                ["rate", "connections", initial, "mix"]
                    .map(|p| item(p, CompletionItemKind::PROPERTY, "workload parameter", None))
                    .to_vec()
            }
        }
    }
}

/// A pattern as a snippet: each parameter a tab stop, consumers a choice.
fn snippet(parts: &[PatternPart], stop: &mut usize) -> String {
    parts
        .iter()
        .map(|part| match part {
            PatternPart::Literal(word) => (*word).to_owned(),
            PatternPart::Param { kind, .. } => {
                *stop += 1;
                if *kind == ParamKind::Consumer {
                    let names: Vec<&str> = Stdlib.consumers().iter().map(|c| c.name).collect();
                    format!("${{{stop}|{}|}}", names.join(","))
                } else {
                    format!("${{{stop}:{}}}", kind.placeholder())
                }
            }
            PatternPart::Optional(group) => snippet(group, stop),
        })
        .collect::<Vec<_>>()
        .join(" ")
}
