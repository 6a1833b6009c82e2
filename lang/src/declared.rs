//! `consumer NAME command "PROGRAM ARGS" [offsets in group|lake TABLE]
//! [reads topics|source] [lake mirror|changelog]`:
//! a consumer of the team's own, read clause by clause into a
//! [`DeclaredConsumer`] (docs/bring-your-own.md).

use crate::ast::Word;
use crate::code::Code;
use crate::diagnostic::Diagnostic;
use crate::plan::{DeclaredConsumer, LakeShape, OffsetsAt, PLACEHOLDERS, Reads};
use crate::span::{Span, Spanned};
use crate::suggest::{help_for, list};

/// The clauses a declaration may have, each at most once.
pub const CLAUSES: &[&str] = &["command", "offsets", "reads", "lake"];

/// Every word a declaration's clauses use (editors highlight them).
pub const CLAUSE_WORDS: &[&str] = &[
    "command",
    "offsets",
    "in",
    "group",
    "lake",
    "reads",
    "topics",
    "source",
    "mirror",
    "changelog",
];

const EXAMPLE: &str = "e.g. `consumer mysink command \"python3 sink.py --namespace {namespace}\"`";

/// Read one declaration; every problem is pushed to `diagnostics`, and the
/// consumer is returned only when there was none.
pub fn declaration(
    name: &Spanned<String>,
    words: &[Word],
    span: Span,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<DeclaredConsumer> {
    let errors_before = diagnostics.len();
    check_name(name, diagnostics);
    let mut command: Option<(Vec<String>, Span)> = None;
    let mut offsets: Option<(OffsetsAt, Span)> = None;
    let mut reads: Option<(Reads, Span)> = None;
    let mut writes: Option<(LakeShape, Span)> = None;
    let mut i = 0;
    while i < words.len() {
        let word = &words[i];
        let value = words.get(i + 1);
        match word.as_ident() {
            Some("command") => {
                let Some(Word::Str(text)) = value else {
                    diagnostics.push(
                        Code::ConsumerDeclaration
                            .at(
                                value.map_or(word.span(), Word::span),
                                "`command` takes the program and its arguments in double quotes",
                            )
                            .label("expected a string")
                            .help(EXAMPLE),
                    );
                    return None;
                };
                once(command.as_ref(), "command", word.span(), diagnostics);
                // Given, even when it cannot be split (that is reported).
                let argv = split_command(text, diagnostics).unwrap_or_default();
                command = Some((argv, text.span));
                i += 2;
            }
            Some("offsets") => {
                let (at, used) = offsets_clause(word, &words[i + 1..], diagnostics)?;
                once(offsets.as_ref(), "offsets", word.span(), diagnostics);
                offsets = Some((at, word.span()));
                i += 1 + used;
            }
            Some("reads") => {
                let choices = [("topics", Reads::Topics), ("source", Reads::Source)];
                let choice = choose(
                    word,
                    value,
                    &choices,
                    "`reads topics` (Debezium's, the default) or `reads source` (a replication slot of its own)",
                    diagnostics,
                )?;
                once(reads.as_ref(), "reads", word.span(), diagnostics);
                reads = Some((choice, word.span()));
                i += 2;
            }
            Some("lake") => {
                let choices = [
                    ("mirror", LakeShape::Mirror),
                    ("changelog", LakeShape::Changelog),
                ];
                let choice = choose(
                    word,
                    value,
                    &choices,
                    "`lake mirror` (a row per key, the default) or `lake changelog` (every change event)",
                    diagnostics,
                )?;
                once(writes.as_ref(), "lake", word.span(), diagnostics);
                writes = Some((choice, word.span()));
                i += 2;
            }
            _ => {
                let text = word.text();
                diagnostics.push(
                    Code::ConsumerDeclaration
                        .at(
                            word.span(),
                            format!("`{text}` is not a clause of a consumer declaration"),
                        )
                        .label("unknown clause")
                        .help(help_for(&text, CLAUSES, "its clauses are")),
                );
                return None;
            }
        }
    }
    let Some((command, command_span)) = command else {
        diagnostics.push(
            Code::ConsumerDeclaration
                .at(span, format!("consumer `{}` has no `command`", name.value))
                .label("what does lossproof start?")
                .help(EXAMPLE),
        );
        return None;
    };
    (diagnostics.len() == errors_before).then(|| DeclaredConsumer {
        name: name.value.clone(),
        command,
        offsets: offsets.map_or(OffsetsAt::Group, |(o, _)| o),
        reads: reads.map_or(Reads::Topics, |(r, _)| r),
        writes: writes.map_or(LakeShape::Mirror, |(w, _)| w),
        span,
        command_span,
    })
}

/// A consumer's name is part of its namespace.
fn check_name(name: &Spanned<String>, diagnostics: &mut Vec<Diagnostic>) {
    if let Some(bad) = name
        .value
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_'))
    {
        diagnostics.push(
            Code::ConsumerDeclaration
                .at(name.span, format!("a consumer's name cannot hold `{bad}`"))
                .label("not usable in a namespace")
                .help("use lower-case letters, digits and `_`: its lake is the namespace `NAME_RUN`, which every catalog (Glue too) must take"),
        );
    }
}

/// The choice `value` names among `choices`, or an error saying which
/// there are.
fn choose<T: Copy>(
    keyword: &Word,
    value: Option<&Word>,
    choices: &[(&str, T)],
    explained: &str,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<T> {
    let word = value.and_then(Word::as_ident);
    if let Some((_, choice)) = choices.iter().find(|(name, _)| Some(*name) == word) {
        return Some(*choice);
    }
    let clause = keyword.text();
    diagnostics.push(
        Code::ConsumerDeclaration
            .at(
                value.map_or(keyword.span(), Word::span),
                format!("`{clause}` takes {explained}"),
            )
            .label("not one of its choices")
            .help("e.g. `consumer dbz command \"python3 sink.py\" reads source lake changelog`"),
    );
    None
}

/// `offsets in group` or `offsets in lake TABLE`; how many words after
/// `offsets` it used.
fn offsets_clause(
    keyword: &Word,
    rest: &[Word],
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<(OffsetsAt, usize)> {
    let words: Vec<Option<&str>> = rest.iter().take(3).map(Word::as_ident).collect();
    match words.as_slice() {
        [Some("in"), Some("group"), ..] => Some((OffsetsAt::Group, 2)),
        [Some("in"), Some("lake"), Some(table), ..] => Some((
            OffsetsAt::Lake {
                table: (*table).to_owned(),
            },
            3,
        )),
        _ => {
            let end = rest
                .iter()
                .take(3)
                .next_back()
                .map_or(keyword.span(), Word::span);
            diagnostics.push(
                Code::ConsumerDeclaration
                    .at(keyword.span().to(end), "`offsets` says where the consumer keeps the Kafka offsets it reached")
                    .label("expected `offsets in group` or `offsets in lake TABLE`")
                    .help("`offsets in lake TABLE`: the snapshot summaries of TABLE hold `lossproof.offset.<topic>.<partition>` (docs/bring-your-own.md)"),
            );
            None
        }
    }
}

/// A clause given twice.
fn once<T>(
    previous: Option<&(T, Span)>,
    clause: &str,
    span: Span,
    diagnostics: &mut Vec<Diagnostic>,
) {
    if let Some((_, first)) = previous {
        diagnostics.push(
            Code::Duplicate
                .at(span, format!("`{clause}` is given twice"))
                .label("given again here")
                .related(*first, "first given here")
                .help("keep one of them"),
        );
    }
}

/// A name or a string, with the span of its text (inside the quotes).
fn word_text(word: &Word) -> Option<Spanned<String>> {
    match word {
        Word::Ident(s) => Some(s.clone()),
        Word::Str(s) => Some(Spanned {
            value: s.value.clone(),
            span: Span::new(s.span.source, s.span.start + 1, s.span.end - 1),
        }),
        _ => None,
    }
}

/// The command split into words as a shell would (quotes, backslashes),
/// with its placeholders checked.
fn split_command(text: &Spanned<String>, diagnostics: &mut Vec<Diagnostic>) -> Option<Vec<String>> {
    let inner = word_text(&Word::Str(text.clone()))?;
    let all: Vec<&str> = PLACEHOLDERS.iter().map(|(p, _)| *p).collect();
    placeholders(&inner, &all, diagnostics);
    match shlex::split(&text.value) {
        Some(argv) if !argv.is_empty() => Some(argv),
        Some(_) => {
            diagnostics.push(
                Code::ConsumerDeclaration
                    .at(text.span, "the command is empty")
                    .label("no program")
                    .help(EXAMPLE),
            );
            None
        }
        None => {
            diagnostics.push(
                Code::ConsumerDeclaration
                    .at(text.span, "the command has an unclosed quote")
                    .label("cannot be split into words")
                    .help("quote an argument with spaces as 'like this' inside the command's double quotes"),
            );
            None
        }
    }
}

/// Every `{name}` in `text` is one of `allowed`.
fn placeholders(text: &Spanned<String>, allowed: &[&str], diagnostics: &mut Vec<Diagnostic>) {
    let mut rest = text.value.as_str();
    let mut offset = 0;
    while let Some(open) = rest.find('{') {
        let at = text.span.start + offset + open;
        let Some(close) = rest[open..].find('}') else {
            diagnostics.push(
                Code::UnknownPlaceholder
                    .at(
                        Span::new(text.span.source, at, at + 1),
                        "`{` opens a placeholder that is never closed",
                    )
                    .label("no `}`")
                    .help(format!("placeholders are {}", list(allowed))),
            );
            return;
        };
        let name = &rest[open + 1..open + close];
        if !allowed.contains(&name) {
            let mut help = help_for(name, allowed, "placeholders here are");
            if PLACEHOLDERS.iter().any(|(p, _)| *p == name) {
                help = format!(
                    "`{{{name}}}` is filled in a command only; here: {}",
                    list(allowed)
                );
            }
            diagnostics.push(
                Code::UnknownPlaceholder
                    .at(
                        Span::new(text.span.source, at, at + close + 1),
                        format!("lossproof fills no placeholder `{{{name}}}`"),
                    )
                    .label("unknown placeholder")
                    .help(help),
            );
        }
        offset += open + close + 1;
        rest = &rest[open + close + 1..];
    }
}
