//! Syntax tree -> canonical text.
//!
//! Canonical form: one statement per line, blocks indented by two spaces,
//! single spaces between words, `±` for jitter, at most one blank line where
//! the source had blank lines, comments kept where they were (own line or
//! end of line). SQL inside fences is kept verbatim.

use std::fmt::Write as _;

use crate::ast::{self, Block, Expectation, File, Item, Schedule, Statement, Timing};
use crate::span::Span as SpanT;

const INDENT: &str = "  ";

/// Format a file. `text` is the source it was parsed from (used to keep
/// blank lines and end-of-line comments where they were).
#[must_use]
pub fn format(file: &File, text: &str) -> String {
    let mut out = Out {
        lines: Vec::new(),
        text,
    };
    let items: Vec<(SpanT, Line)> = file
        .items
        .iter()
        .map(|item| (item.span(), item_line(item)))
        .collect();
    out.sequence(items, 0);
    let mut result = out.lines.join("\n");
    result.push('\n');
    result
}

/// What one item or statement renders to.
enum Line {
    /// A comment: may trail the previous line.
    Comment(String),
    /// Plain text, possibly several lines (a fence), no block.
    Text(String),
    /// `head <`, the statements, `>`.
    Block {
        head: String,
        body: Vec<(SpanT, Line)>,
    },
}

struct Out<'t> {
    lines: Vec<String>,
    text: &'t str,
}

impl Out<'_> {
    fn sequence(&mut self, entries: Vec<(SpanT, Line)>, depth: usize) {
        let indent = INDENT.repeat(depth);
        let mut previous_end: Option<usize> = None;
        for (span, line) in entries {
            let gap = previous_end.map(|end| &self.text[end..span.start]);
            let same_line = gap.is_some_and(|g| !g.contains('\n'));
            let blank = gap.is_some_and(|g| g.matches('\n').count() >= 2);
            previous_end = Some(span.end);
            if let (Line::Comment(comment), true) = (&line, same_line)
                && let Some(last) = self.lines.last_mut()
            {
                last.push(' ');
                last.push_str(comment);
                continue;
            }
            if blank {
                self.lines.push(String::new());
            }
            match line {
                Line::Comment(text) | Line::Text(text) => {
                    let mut parts = text.split('\n');
                    self.lines
                        .push(format!("{indent}{}", parts.next().unwrap_or("")));
                    // Fence bodies are verbatim: no indentation added.
                    self.lines.extend(parts.map(str::to_owned));
                }
                Line::Block { head, body } => {
                    if body.is_empty() {
                        self.lines.push(format!("{indent}{head} < >"));
                    } else {
                        self.lines.push(format!("{indent}{head} <"));
                        self.sequence(body, depth + 1);
                        self.lines.push(format!("{indent}>"));
                    }
                }
            }
        }
    }
}

fn item_line(item: &Item) -> Line {
    match item {
        Item::Comment(c) => Line::Comment(c.value.trim_end().to_owned()),
        Item::Scenario { name, .. } => Line::Text(format!("scenario {}", name_text(&name.value))),
        Item::Workload { name, params, .. } => Line::Text(join(&[
            &format!("workload {}", name.value),
            &ast::words_text(params),
        ])),
        Item::Consumers { names, .. } => Line::Text(format!(
            "consumers {}",
            names
                .iter()
                .map(|n| n.value.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
        Item::Consumer { name, words, .. } => Line::Text(join(&[
            &format!("consumer {}", name.value),
            &ast::words_text(words),
        ])),
        Item::Set { name, value, .. } => {
            Line::Text(format!("set {} {}", name.value, ast::words_text(value)))
        }
        Item::Include { path, .. } => Line::Text(format!("include {}", ast::quote(&path.value))),
        Item::Fragment { name, body, .. } => block(format!("fragment {}", name.value), body),
        Item::Load { duration, body, .. } => block(format!("under load {}", duration.text()), body),
        Item::Quiet {
            duration,
            body: Some(body),
            ..
        } => block(format!("quiet {}", duration.text()), body),
        Item::Quiet {
            duration,
            body: None,
            ..
        } => Line::Text(format!("quiet {}", duration.text())),
        Item::Drain { timeout, .. } => Line::Text(format!("drain within {}", timeout.text())),
        Item::Expect { words, .. } => Line::Text(format!("expect {}", ast::words_text(words))),
        Item::Assert(assert) => Line::Text(assert_text(assert)),
        Item::StrayAction(action) => Line::Text(action_text(action)),
        Item::Table(table) => {
            // Column names padded to the longest, so the types line up.
            let width = table
                .lines
                .iter()
                .filter_map(|line| match line {
                    ast::TableLine::Words { tokens, .. } => column_name(tokens),
                    ast::TableLine::Comment(_) => None,
                })
                .map(|name| name.chars().count())
                .max()
                .unwrap_or(0);
            Line::Block {
                head: format!("table {}", table.name.value),
                body: table
                    .lines
                    .iter()
                    .map(|line| {
                        let text = match line {
                            ast::TableLine::Comment(c) => {
                                Line::Comment(c.value.trim_end().to_owned())
                            }
                            ast::TableLine::Words { tokens, .. } => {
                                Line::Text(table_line_text(tokens, width))
                            }
                        };
                        (line.span(), text)
                    })
                    .collect(),
            }
        }
    }
}

/// The column a table line declares, if it is a column (not a constraint).
fn column_name(tokens: &[ast::TableToken]) -> Option<&str> {
    match tokens.first()?.word()? {
        "primary" | "foreign" | "replica" => None,
        name => Some(name),
    }
}

/// `amount numeric(10,2) not null`, `primary key (tenant, id)`: a type's
/// arguments hug the type, a list of columns stands apart.
fn table_line_text(tokens: &[ast::TableToken], width: usize) -> String {
    let mut text = String::new();
    let mut previous: Option<&str> = None;
    let column = column_name(tokens).is_some();
    for (i, token) in tokens.iter().enumerate() {
        match token {
            // An array type's `[]` hugs its type.
            ast::TableToken::Word(w) if w.value == "[]" => text.push_str("[]"),
            ast::TableToken::Word(w) => {
                if !text.is_empty() {
                    text.push(' ');
                }
                if i == 0 && column && tokens.len() > 1 {
                    let _ = write!(text, "{:width$}", w.value);
                } else {
                    text.push_str(&w.value);
                }
                previous = Some(&w.value);
            }
            ast::TableToken::List { items, .. } => {
                let of_type = previous.is_some_and(crate::tables::takes_arguments);
                if !of_type && !text.is_empty() {
                    text.push(' ');
                }
                let items: Vec<&str> = items.iter().map(|i| i.value.as_str()).collect();
                text.push('(');
                text.push_str(&items.join(if of_type { "," } else { ", " }));
                text.push(')');
                previous = None;
            }
        }
    }
    text
}

fn block(head: String, body: &Block) -> Line {
    Line::Block {
        head,
        body: body
            .statements
            .iter()
            .map(|s| (s.span(), statement_line(s)))
            .collect(),
    }
}

fn statement_line(statement: &Statement) -> Line {
    match statement {
        Statement::Comment(c) => Line::Comment(c.value.trim_end().to_owned()),
        Statement::Action(action) => Line::Text(action_text(action)),
        Statement::Use { name, .. } => Line::Text(format!("use {}", name.value)),
        Statement::Window { from, to, body, .. } => {
            block(format!("between {} and {}", from.text(), to.text()), body)
        }
    }
}

fn action_text(action: &ast::Action) -> String {
    join(&[
        &action.text(),
        &action
            .schedule
            .as_ref()
            .map(schedule_text)
            .unwrap_or_default(),
    ])
}

fn schedule_text(schedule: &Schedule) -> String {
    let timing = match &schedule.timing {
        None => String::new(),
        Some(Timing::At(q)) => format!("at {}", q.text()),
        Some(Timing::Every {
            period,
            jitter: None,
        }) => format!("every {}", period.text()),
        Some(Timing::Every {
            period,
            jitter: Some(j),
        }) => format!("every {}±{}", period.text(), j.text()),
        Some(Timing::Randomly { times }) => format!("{} times randomly", times.text()),
    };
    let chance = schedule
        .chance
        .as_ref()
        .map(|q| format!("with chance {}", q.text()))
        .unwrap_or_default();
    join(&[&timing, &chance])
}

fn assert_text(assert: &ast::Assert) -> String {
    let expectation = match assert.expectation.as_ref().map(|e| &e.value) {
        None => String::new(),
        Some(Expectation::True) => "expect true".to_owned(),
        Some(Expectation::Empty) => "expect empty".to_owned(),
        Some(Expectation::Compare { op, value }) => format!("expect {} {value}", op.as_str()),
    };
    let fence = format!(
        "```{}{}```",
        assert.sql.lang.as_deref().unwrap_or(""),
        assert.sql.body.value
    );
    join(&[
        &format!("assert {}", ast::quote(&assert.name.value)),
        &expectation,
        &fence,
    ])
}

/// A scenario name: bare when it reads as an identifier, else quoted.
fn name_text(name: &str) -> String {
    let ident = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ident {
        name.to_owned()
    } else {
        ast::quote(name)
    }
}

fn join(parts: &[&str]) -> String {
    parts
        .iter()
        .filter(|p| !p.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(" ")
}
