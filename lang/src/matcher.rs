//! Matching a statement's words against a signature pattern.
//!
//! Structural mismatches (a missing word, a literal that differs) make a
//! pattern fail; the furthest-reaching failure across all candidate patterns
//! is reported. Semantic problems (an unknown table, a missing unit) do not
//! make the pattern fail: the fault was recognised, so the diagnostic names
//! the exact word that is wrong.

use std::collections::BTreeMap;

use crate::ast::Word;
use crate::code::Code;
use crate::diagnostic::Diagnostic;
use crate::plan::{ArgValue, Target};
use crate::span::Span;
use crate::suggest::{did_you_mean, help_for, list};
use crate::units;
use crate::vocabulary::{ParamKind, PatternPart, TableSig, Vocabulary, WorkloadSig};

/// What a statement may refer to: the scenario's workload and consumers.
pub(crate) struct Scope<'a> {
    pub vocab: &'a dyn Vocabulary,
    pub workload: &'a WorkloadSig,
    pub consumers: &'a [String],
    /// The scenario's own consumers (`consumer NAME command …`).
    pub declared: &'a [String],
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Matched {
    pub target: Option<Target>,
    pub args: BTreeMap<String, ArgValue>,
    pub diagnostics: Vec<Diagnostic>,
}

#[derive(Debug, Clone)]
pub(crate) struct Failure {
    /// How many words matched before the failure: the furthest wins.
    pub at: usize,
    /// What was expected at `at`.
    pub expected: Vec<String>,
    /// Literal words expected at `at`, for "did you mean".
    pub literals: Vec<&'static str>,
}

pub(crate) type Outcome = Result<Matched, Failure>;

impl<'a> Scope<'a> {
    pub(crate) fn match_parts(
        &self,
        parts: &[PatternPart],
        words: &[Word],
        pos: usize,
        acc: Matched,
    ) -> Outcome {
        let Some((first, rest)) = parts.split_first() else {
            return if pos == words.len() {
                Ok(acc)
            } else {
                Err(Failure {
                    at: pos,
                    expected: vec!["the end of the statement".into()],
                    literals: vec![],
                })
            };
        };
        match first {
            PatternPart::Literal(literal) => match words.get(pos).and_then(Word::as_ident) {
                Some(word) if word == *literal => self.match_parts(rest, words, pos + 1, acc),
                _ => Err(Failure {
                    at: pos,
                    expected: vec![format!("`{literal}`")],
                    literals: vec![literal],
                }),
            },
            PatternPart::Optional(group) => {
                let with: Vec<PatternPart> = group.iter().chain(rest).cloned().collect();
                match self.match_parts(&with, words, pos, acc.clone()) {
                    Ok(matched) => Ok(matched),
                    Err(long) => match self.match_parts(rest, words, pos, acc) {
                        Ok(matched) => Ok(matched),
                        Err(short) => Err(merge(long, short)),
                    },
                }
            }
            PatternPart::Param { name, kind } => {
                let Some(word) = words.get(pos) else {
                    return Err(Failure {
                        at: pos,
                        expected: vec![kind.placeholder().to_owned()],
                        literals: vec![],
                    });
                };
                let mut acc = acc;
                let used = self
                    .param(
                        name,
                        *kind,
                        word,
                        words.get(pos + 1),
                        rest.first(),
                        &mut acc,
                    )
                    .ok_or_else(|| Failure {
                        at: pos,
                        expected: vec![kind.placeholder().to_owned()],
                        literals: vec![],
                    })?;
                self.match_parts(rest, words, pos + used, acc)
            }
        }
    }

    /// Match one parameter; returns how many words it took, or None if the
    /// word has the wrong shape (a structural failure).
    fn param(
        &self,
        name: &str,
        kind: ParamKind,
        word: &Word,
        next: Option<&Word>,
        next_part: Option<&PatternPart>,
        acc: &mut Matched,
    ) -> Option<usize> {
        let mut quantity =
            |read: &dyn Fn(&crate::ast::Quantity) -> Result<ArgValue, Diagnostic>| {
                let Word::Quantity(q) = word else { return None };
                match read(q) {
                    Ok(value) => {
                        acc.args.insert(name.to_owned(), value);
                    }
                    Err(diagnostic) => acc.diagnostics.push(diagnostic),
                }
                Some(1)
            };
        match kind {
            ParamKind::Count => quantity(&|q| {
                let n = units::count(q)?;
                if n == 0 {
                    return Err(Code::BadNumber
                        .at(q.span, "a count of 0 does nothing")
                        .label("must be at least 1"));
                }
                Ok(ArgValue::Count(n))
            }),
            ParamKind::Percent => quantity(&|q| {
                let p = units::percent(q)?;
                if p <= 0.0 || p > 100.0 {
                    return Err(Code::BadNumber
                        .at(
                            q.span,
                            format!("`{}` is not a share between 0% and 100%", q.text()),
                        )
                        .label("out of range"));
                }
                Ok(ArgValue::Percent(p))
            }),
            ParamKind::Duration => quantity(&|q| {
                let ms = units::duration_ms(q)?;
                if ms == 0 {
                    return Err(Code::ZeroDuration
                        .at(q.span, "a duration of 0 does nothing")
                        .label("zero"));
                }
                Ok(ArgValue::DurationMs(ms))
            }),
            _ => {
                let Word::Ident(ident) = word else {
                    return None;
                };
                Some(self.named(name, kind, &ident.value, ident.span, next, next_part, acc))
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn named(
        &self,
        name: &str,
        kind: ParamKind,
        word: &str,
        span: Span,
        next: Option<&Word>,
        next_part: Option<&PatternPart>,
        acc: &mut Matched,
    ) -> usize {
        let tables: Vec<&str> = self.workload.table_names();
        match kind {
            ParamKind::Process | ParamKind::Target | ParamKind::Link => {
                return self.target(kind, word, span, next, next_part, acc);
            }
            ParamKind::Table | ParamKind::Topic => {
                if self.table(word).is_none() {
                    acc.diagnostics.push(
                        Code::UnknownTable
                            .at(
                                span,
                                format!("workload `{}` has no table `{word}`", self.workload.name),
                            )
                            .label("unknown table")
                            .help(help_for(word, &tables, "its tables are")),
                    );
                }
            }
            ParamKind::Column | ParamKind::NewColumn | ParamKind::WidenableColumn => {
                let table = match acc.args.get("table") {
                    Some(ArgValue::Name(t)) => self.table(t),
                    _ => None,
                };
                if let Some(table) = table {
                    Self::column(kind, table, word, span, acc);
                }
            }
            ParamKind::Consumer => {
                self.consumer(word, span, acc);
            }
            ParamKind::Count | ParamKind::Percent | ParamKind::Duration => {
                unreachable!("quantities handled above")
            }
        }
        acc.args
            .insert(name.to_owned(), ArgValue::Name(word.to_owned()));
        1
    }

    fn column(kind: ParamKind, table: &TableSig, word: &str, span: Span, acc: &mut Matched) {
        let columns: Vec<&str> = table.columns.iter().map(|c| c.name.as_str()).collect();
        let diagnostic = match (kind, table.column(word)) {
            (ParamKind::NewColumn, None) => return,
            (ParamKind::NewColumn, Some(_)) => Code::ColumnExists
                .at(
                    span,
                    format!("table `{}` already has a column `{word}`", table.name),
                )
                .label("already exists")
                .help("choose a new column name"),
            (_, None) => Code::UnknownColumn
                .at(
                    span,
                    format!("table `{}` has no column `{word}`", table.name),
                )
                .label("unknown column")
                .help(help_for(word, &columns, "its columns are")),
            (ParamKind::WidenableColumn, Some(column)) if column.sql_type.widens_to().is_none() => {
                let widenable: Vec<&str> = table
                    .columns
                    .iter()
                    .filter(|c| c.sql_type.widens_to().is_some())
                    .map(|c| c.name.as_str())
                    .collect();
                Code::CannotWiden
                    .at(
                        span,
                        format!(
                            "column `{word}` is `{}`, which has no wider type",
                            column.sql_type
                        ),
                    )
                    .label("cannot be widened")
                    .help(format!(
                        "columns of `{}` that can be widened: {}",
                        table.name,
                        list(&widenable)
                    ))
            }
            _ => return,
        };
        acc.diagnostics.push(diagnostic);
    }

    fn table(&self, name: &str) -> Option<&'a TableSig> {
        self.workload.tables.iter().find(|t| t.name == name)
    }

    fn target(
        &self,
        kind: ParamKind,
        word: &str,
        span: Span,
        next: Option<&Word>,
        next_part: Option<&PatternPart>,
        acc: &mut Matched,
    ) -> usize {
        let targets = self.vocab.targets();
        let Some(sig) = targets.iter().find(|t| t.name == word) else {
            let names: Vec<&str> = targets.iter().map(|t| t.name).collect();
            acc.diagnostics.push(
                Code::UnknownTarget
                    .at(span, format!("unknown target `{word}`"))
                    .label("not a target")
                    .help(help_for(word, &names, "targets are")),
            );
            return 1;
        };
        if kind == ParamKind::Process && !sig.process {
            let processes: Vec<&str> = targets
                .iter()
                .filter(|t| t.process)
                .map(|t| t.name)
                .collect();
            acc.diagnostics.push(
                Code::UnknownTarget
                    .at(
                        span,
                        format!("`{word}` is not a process, so it cannot be signalled"),
                    )
                    .label("not a process")
                    .help(format!("process targets are {}", list(&processes))),
            );
        }
        if kind == ParamKind::Link && !sig.link {
            let links: Vec<&str> = targets.iter().filter(|t| t.link).map(|t| t.name).collect();
            acc.diagnostics.push(
                Code::UnknownTarget
                    .at(
                        span,
                        format!("`{word}` has no network link through the fault proxy"),
                    )
                    .label("no link to fault")
                    .help(format!(
                        "network faults reach {}: the connections to them go through the proxy",
                        list(&links)
                    )),
            );
        }
        let mut target = crate::plan::Target {
            component: word.to_owned(),
            consumer: None,
        };
        let mut used = 1;
        if sig.takes_consumer
            && let Some(Word::Ident(name)) = next
            && !matches!(next_part, Some(PatternPart::Literal(l)) if *l == name.value)
        {
            self.consumer(&name.value, name.span, acc);
            target.consumer = Some(name.value.clone());
            used = 2;
        }
        acc.target = Some(target);
        used
    }

    /// Check a consumer name: known to the stdlib, and run by this scenario.
    pub(crate) fn consumer(&self, name: &str, span: Span, acc: &mut Matched) {
        let known: Vec<&str> = self
            .vocab
            .consumers()
            .iter()
            .map(|c| c.name)
            .chain(self.declared.iter().map(String::as_str))
            .collect();
        if !known.contains(&name) {
            acc.diagnostics.push(
                Code::UnknownConsumer
                    .at(span, format!("unknown consumer `{name}`"))
                    .label("not a consumer")
                    .help(help_for(name, &known, "consumers are")),
            );
        } else if !self.consumers.iter().any(|c| c == name) {
            let mut with: Vec<&str> = self.consumers.iter().map(String::as_str).collect();
            with.push(name);
            acc.diagnostics.push(
                Code::TargetNotInScenario
                    .at(
                        span,
                        format!("this scenario does not run consumer `{name}`"),
                    )
                    .label("not under test here")
                    .help(format!(
                        "add it to the scenario: `consumers {}`",
                        with.join(", ")
                    )),
            );
        }
    }
}

fn merge(a: Failure, b: Failure) -> Failure {
    match a.at.cmp(&b.at) {
        std::cmp::Ordering::Greater => a,
        std::cmp::Ordering::Less => b,
        std::cmp::Ordering::Equal => {
            let mut merged = a;
            for e in b.expected {
                if !merged.expected.contains(&e) {
                    merged.expected.push(e);
                }
            }
            for l in b.literals {
                if !merged.literals.contains(&l) {
                    merged.literals.push(l);
                }
            }
            merged
        }
    }
}

/// Pick the best of several candidate patterns' outcomes: the first match,
/// else the furthest failure (merged when several reach equally far).
pub(crate) fn best(outcomes: Vec<Outcome>) -> Outcome {
    let mut failure: Option<Failure> = None;
    for outcome in outcomes {
        match outcome {
            Ok(matched) => return Ok(matched),
            Err(f) => {
                failure = Some(match failure {
                    Some(prev) => merge(prev, f),
                    None => f,
                });
            }
        }
    }
    Err(failure.expect("at least one candidate"))
}

/// Turn a failure into a diagnostic pointing at the word where matching
/// stopped (or the end of the statement).
pub(crate) fn failure_diagnostic(
    code: Code,
    failure: &Failure,
    words: &[Word],
    whole: Span,
    usages: &[String],
) -> Diagnostic {
    let expected = match failure.expected.as_slice() {
        [one] => one.clone(),
        many => format!("one of {}", many.join(", ")),
    };
    let (span, found) = if let Some(word) = words.get(failure.at) {
        (word.span(), format!("`{}`", word.text()))
    } else {
        let end = words.last().map_or(whole.end, |w| w.span().end);
        (
            Span::new(whole.source, end, end),
            "the end of the statement".to_owned(),
        )
    };
    let typo = words
        .get(failure.at)
        .and_then(Word::as_ident)
        .and_then(|w| did_you_mean(w, failure.literals.iter().copied()));
    let help = match typo {
        Some(word) => format!("did you mean `{word}`?"),
        None => format!("written as: {}", usages.join(" | ")),
    };
    code.at(span, format!("expected {expected}, found {found}"))
        .label(format!("expected {expected}"))
        .help(help)
}
