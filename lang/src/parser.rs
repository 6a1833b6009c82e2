//! Text -> syntax tree, with every syntax error in the file reported.
//!
//! One visitor function per grammar rule. Junk regions (statements the
//! grammar could not read) are re-parsed alone with the strict rule, which
//! yields pest's precise "expected ..." for that statement; parsing then goes
//! on with the next statement.

use pest::Parser as _;
use pest::error::{ErrorVariant, InputLocation};
use pest::iterators::Pair;

use crate::ast::{
    Action, Assert, Block, CompareOp, Expectation, Fence, File, Item, Quantity, Schedule,
    Statement, TableDecl, TableLine, TableToken, Timing, Word,
};
use crate::code::Code;
use crate::diagnostic::Diagnostic;
use crate::span::{SourceId, Span, Spanned};
use crate::suggest::did_you_mean;

/// The grammar's keywords (each a `kw_*` rule in `grammar.pest`).
pub const KEYWORDS: &[&str] = &[
    "scenario",
    "workload",
    "consumers",
    "consumer",
    "table",
    "set",
    "include",
    "fragment",
    "use",
    "under",
    "load",
    "quiet",
    "drain",
    "within",
    "between",
    "and",
    "at",
    "every",
    "times",
    "randomly",
    "with",
    "chance",
    "assert",
    "expect",
    "true",
    "empty",
];

/// Keywords that may start a top-level item, for "did you mean".
pub const TOP_KEYWORDS: &[&str] = &[
    "scenario",
    "workload",
    "consumers",
    "consumer",
    "table",
    "set",
    "include",
    "fragment",
    "under",
    "quiet",
    "drain",
    "expect",
    "assert",
];

#[derive(pest_derive::Parser)]
#[grammar = "grammar.pest"]
struct Grammar;

/// The parser stage: one public entry, [`Parser::parse`].
pub struct Parser<'a> {
    text: &'a str,
    source: SourceId,
    diagnostics: Vec<Diagnostic>,
    /// Set when an unclosed fence or block swallowed the rest of the file:
    /// nothing after it can be read reliably.
    truncated: bool,
}

/// The result of parsing one file: a tree of what could be read, and a
/// diagnostic for everything that could not.
#[derive(Debug)]
pub struct Parsed {
    pub file: File,
    pub diagnostics: Vec<Diagnostic>,
}

impl Parsed {
    #[must_use]
    pub fn has_errors(&self) -> bool {
        !self.diagnostics.is_empty()
    }
}

impl<'a> Parser<'a> {
    /// Parse `text`, the contents of source `source`.
    ///
    /// # Panics
    /// Only on a bug: a grammar rule the tree builder does not know.
    #[must_use]
    pub fn parse(text: &'a str, source: SourceId) -> Parsed {
        let mut parser = Parser {
            text,
            source,
            diagnostics: Vec::new(),
            truncated: false,
        };
        let items = match Grammar::parse(Rule::file, text) {
            Ok(mut pairs) => parser.file(pairs.next().expect("file rule yields one pair")),
            // The grammar accepts any text (junk rules); this is a safety net.
            Err(error) => {
                parser.diagnostics.push(parser.pest_error(&error, 0, text));
                Vec::new()
            }
        };
        Parsed {
            file: File { items },
            diagnostics: parser.diagnostics,
        }
    }

    fn span(&self, pair: &Pair<'_, Rule>) -> Span {
        let s = pair.as_span();
        Span::new(self.source, s.start(), s.end())
    }

    fn spanned(&self, pair: &Pair<'_, Rule>) -> Spanned<String> {
        Spanned {
            value: pair.as_str().to_owned(),
            span: self.span(pair),
        }
    }

    fn file(&mut self, pair: Pair<'_, Rule>) -> Vec<Item> {
        let mut items = Vec::new();
        for inner in pair.into_inner() {
            if self.truncated {
                break;
            }
            match inner.as_rule() {
                Rule::EOI => {}
                Rule::junk_top => self.junk(&inner, Rule::top_item_only),
                _ => items.push(self.top_item(inner)),
            }
        }
        items
    }

    fn top_item(&mut self, pair: Pair<'_, Rule>) -> Item {
        let span = self.span(&pair);
        let rule = pair.as_rule();
        let mut inner = pair.into_inner();
        match rule {
            Rule::comment => Item::Comment(Spanned {
                value: self.text[span.start..span.end].to_owned(),
                span,
            }),
            Rule::scenario_decl => {
                let name = inner.nth(1).expect("scenario name");
                Item::Scenario {
                    name: self.name(&name),
                    span,
                }
            }
            Rule::workload_decl => {
                let name = self.spanned(&inner.nth(1).expect("workload name"));
                Item::Workload {
                    name,
                    params: inner.map(|w| self.word(w)).collect(),
                    span,
                }
            }
            Rule::consumers_decl => Item::Consumers {
                names: inner.skip(1).map(|p| self.spanned(&p)).collect(),
                span,
            },
            Rule::consumer_decl => {
                let name = self.spanned(&inner.nth(1).expect("consumer name"));
                Item::Consumer {
                    name,
                    words: inner
                        .map(|w| match w.as_rule() {
                            Rule::template => Word::Ident(self.spanned(&w)),
                            _ => self.word(w),
                        })
                        .collect(),
                    span,
                }
            }
            Rule::table_decl => Item::Table(self.table(inner, span)),
            Rule::set_decl => {
                let name = self.spanned(&inner.nth(1).expect("setting name"));
                Item::Set {
                    name,
                    value: inner.map(|w| self.word(w)).collect(),
                    span,
                }
            }
            Rule::include_decl => {
                let path = inner.nth(1).expect("include path");
                Item::Include {
                    path: self.name(&path),
                    span,
                }
            }
            Rule::fragment_decl => {
                let name = self.spanned(&inner.nth(1).expect("fragment name"));
                let body = self.block(inner.next().expect("fragment block"));
                Item::Fragment { name, body, span }
            }
            Rule::load_phase => {
                let duration = self.quantity(&inner.nth(2).expect("load duration"));
                let body = self.block(inner.next().expect("load block"));
                Item::Load {
                    duration,
                    body,
                    span,
                }
            }
            Rule::quiet_phase => {
                let duration = self.quantity(&inner.nth(1).expect("quiet duration"));
                let body = inner.next().map(|b| self.block(b));
                Item::Quiet {
                    duration,
                    body,
                    span,
                }
            }
            Rule::drain_phase => Item::Drain {
                timeout: self.quantity(&inner.nth(2).expect("drain timeout")),
                span,
            },
            Rule::expect_decl => Item::Expect {
                words: inner.skip(1).map(|w| self.word(w)).collect(),
                span,
            },
            Rule::assert_decl => Item::Assert(self.assert(inner, span)),
            Rule::action => Item::StrayAction(self.action(inner, span)),
            other => unreachable!("not a top-level rule: {other:?}"),
        }
    }

    fn table(&self, mut inner: pest::iterators::Pairs<'_, Rule>, span: Span) -> TableDecl {
        let name = self.spanned(&inner.nth(1).expect("table name"));
        let body = inner.next().expect("table body");
        let lines = body
            .into_inner()
            .filter_map(|line| match line.as_rule() {
                Rule::comment => Some(TableLine::Comment(self.spanned(&line))),
                Rule::table_line => Some(TableLine::Words {
                    span: self.span(&line),
                    tokens: line
                        .into_inner()
                        .map(|token| match token.as_rule() {
                            Rule::table_args => TableToken::List {
                                span: self.span(&token),
                                items: token.into_inner().map(|a| self.spanned(&a)).collect(),
                            },
                            _ => TableToken::Word(self.spanned(&token)),
                        })
                        .collect(),
                }),
                _ => None, // `<`, `>`
            })
            .collect();
        TableDecl { name, lines, span }
    }

    fn assert(&mut self, mut inner: pest::iterators::Pairs<'_, Rule>, span: Span) -> Assert {
        let name = self.name(&inner.nth(1).expect("assert name"));
        let mut expectation = None;
        let mut fence = None;
        for pair in inner {
            match pair.as_rule() {
                Rule::expectation => expectation = Some(self.expectation(pair)),
                Rule::fence => fence = Some(self.fence(pair)),
                other => unreachable!("not part of an assertion: {other:?}"),
            }
        }
        Assert {
            name,
            expectation,
            sql: fence.expect("assert has a fence"),
            span,
        }
    }

    fn expectation(&self, pair: Pair<'_, Rule>) -> Spanned<Expectation> {
        let span = self.span(&pair);
        let what = pair.into_inner().nth(1).expect("expectation body");
        let value = match what.as_rule() {
            Rule::kw_true => Expectation::True,
            Rule::kw_empty => Expectation::Empty,
            Rule::comparison => {
                let mut parts = what.into_inner();
                let op = match parts.next().expect("operator").as_str() {
                    "=" => CompareOp::Eq,
                    "!=" => CompareOp::Ne,
                    "<" => CompareOp::Lt,
                    "<=" => CompareOp::Le,
                    ">" => CompareOp::Gt,
                    ">=" => CompareOp::Ge,
                    other => unreachable!("cmp_op matched {other}"),
                };
                let number = parts.next().expect("number").as_str();
                Expectation::Compare {
                    op,
                    value: number.parse().expect("grammar checked digits"),
                }
            }
            other => unreachable!("not an expectation: {other:?}"),
        };
        Spanned { value, span }
    }

    fn fence(&self, pair: Pair<'_, Rule>) -> Fence {
        let span = self.span(&pair);
        let mut lang = None;
        let mut body = None;
        for part in pair.into_inner() {
            match part.as_rule() {
                Rule::fence_lang => lang = Some(part.as_str().to_owned()),
                Rule::fence_body => body = Some(self.spanned(&part)),
                other => unreachable!("not part of a fence: {other:?}"),
            }
        }
        Fence {
            lang,
            body: body.expect("fence body"),
            span,
        }
    }

    fn block(&mut self, pair: Pair<'_, Rule>) -> Block {
        let span = self.span(&pair);
        let mut statements = Vec::new();
        for inner in pair.into_inner() {
            let inner_span = self.span(&inner);
            match inner.as_rule() {
                Rule::block_open | Rule::block_end => {}
                Rule::junk_stmt => self.junk(&inner, Rule::statement_only),
                Rule::comment => statements.push(Statement::Comment(self.spanned(&inner))),
                Rule::action => statements.push(Statement::Action(
                    self.action(inner.into_inner(), inner_span),
                )),
                Rule::use_stmt => {
                    let name = self.spanned(&inner.into_inner().nth(1).expect("fragment name"));
                    statements.push(Statement::Use {
                        name,
                        span: inner_span,
                    });
                }
                Rule::window => {
                    let mut parts = inner.into_inner();
                    let from = self.quantity(&parts.nth(1).expect("window start"));
                    let to = self.quantity(&parts.nth(1).expect("window end"));
                    let body = self.block(parts.next().expect("window block"));
                    statements.push(Statement::Window {
                        from,
                        to,
                        body,
                        span: inner_span,
                    });
                }
                other => unreachable!("not a statement: {other:?}"),
            }
        }
        Block { statements, span }
    }

    fn action(&mut self, pairs: pest::iterators::Pairs<'_, Rule>, span: Span) -> Action {
        let mut words = Vec::new();
        let mut schedule = None;
        for pair in pairs {
            if pair.as_rule() == Rule::schedule {
                schedule = Some(self.schedule(pair));
            } else {
                words.push(self.word(pair));
            }
        }
        Action {
            words,
            schedule,
            span,
        }
    }

    fn schedule(&self, pair: Pair<'_, Rule>) -> Schedule {
        let span = self.span(&pair);
        let mut timing = None;
        let mut chance = None;
        for part in pair.into_inner() {
            let rule = part.as_rule();
            let mut inner = part.into_inner();
            match rule {
                Rule::at_sched => {
                    timing = Some(Timing::At(self.quantity(&inner.nth(1).expect("at"))));
                }
                Rule::every_sched => {
                    let value = inner.nth(1).expect("every period");
                    timing = Some(match self.word(value) {
                        Word::Jittered { base, jitter, .. } => Timing::Every {
                            period: base,
                            jitter: Some(jitter),
                        },
                        Word::Quantity(period) => Timing::Every {
                            period,
                            jitter: None,
                        },
                        other => unreachable!("every takes a quantity: {other:?}"),
                    });
                }
                Rule::random_sched => {
                    timing = Some(Timing::Randomly {
                        times: self.quantity(&inner.next().expect("times")),
                    });
                }
                Rule::chance => chance = Some(self.quantity(&inner.nth(2).expect("chance"))),
                other => unreachable!("not part of a schedule: {other:?}"),
            }
        }
        Schedule {
            timing,
            chance,
            span,
        }
    }

    fn word(&self, pair: Pair<'_, Rule>) -> Word {
        match pair.as_rule() {
            Rule::ident => Word::Ident(self.spanned(&pair)),
            Rule::quantity => Word::Quantity(self.quantity(&pair)),
            Rule::string => Word::Str(self.string(&pair)),
            Rule::jittered => {
                let span = self.span(&pair);
                let mut parts = pair.into_inner();
                let base = self.quantity(&parts.next().expect("base"));
                let jitter = self.quantity(&parts.nth(1).expect("jitter"));
                Word::Jittered { base, jitter, span }
            }
            other => unreachable!("not a word: {other:?}"),
        }
    }

    fn name(&self, pair: &Pair<'_, Rule>) -> Spanned<String> {
        match pair.as_rule() {
            Rule::string => self.string(pair),
            _ => self.spanned(pair),
        }
    }

    fn string(&self, pair: &Pair<'_, Rule>) -> Spanned<String> {
        let inner = pair.clone().into_inner().next().expect("string_inner");
        let mut value = String::with_capacity(inner.as_str().len());
        let mut chars = inner.as_str().chars();
        while let Some(c) = chars.next() {
            if c == '\\' {
                match chars.next() {
                    Some('n') => value.push('\n'),
                    Some('t') => value.push('\t'),
                    Some(other) => value.push(other),
                    None => {}
                }
            } else {
                value.push(c);
            }
        }
        Spanned {
            value,
            span: self.span(pair),
        }
    }

    fn quantity(&self, pair: &Pair<'_, Rule>) -> Quantity {
        let span = self.span(pair);
        let mut number = String::new();
        let mut unit = None;
        for part in pair.clone().into_inner() {
            match part.as_rule() {
                Rule::number => part.as_str().clone_into(&mut number),
                Rule::unit => unit = Some(part.as_str().to_owned()),
                other => unreachable!("not part of a quantity: {other:?}"),
            }
        }
        Quantity { number, unit, span }
    }

    // ------------------------------------------------------------ errors

    /// Report a region the grammar could not read: re-parse it alone with
    /// the strict `rule` to learn exactly what was expected where.
    fn junk(&mut self, pair: &Pair<'_, Rule>, rule: Rule) {
        let offset = pair.as_span().start();
        let junk = pair.as_str();
        if let Some(diagnostic) = self.unclosed(offset, junk) {
            self.diagnostics.push(diagnostic);
            return;
        }
        if rule == Rule::top_item_only
            && let Some(diagnostic) = self.misspelt_item(offset, junk)
        {
            self.diagnostics.push(diagnostic);
            return;
        }
        let diagnostic = match Grammar::parse(rule, junk) {
            Err(error) => self.pest_error(&error, offset, junk),
            // Cannot happen: the strict rule failed on this text in context.
            // Report the region rather than lose it.
            Ok(_) => Code::Syntax
                .at(
                    Span::new(self.source, offset, offset + junk.len()),
                    "this statement cannot be read here",
                )
                .label("not understood"),
        };
        self.diagnostics.push(diagnostic);
    }

    /// A top-level line whose first word is a misspelt item keyword
    /// (`undr load 30s < … >`): say so, rather than list everything that
    /// could have come after the word.
    fn misspelt_item(&self, offset: usize, junk: &str) -> Option<Diagnostic> {
        let word = found_token(junk, 0);
        if TOP_KEYWORDS.contains(&word) {
            return None;
        }
        did_you_mean(word, TOP_KEYWORDS.iter().copied())?;
        Some(unknown_item(
            word,
            Span::new(self.source, offset, offset + word.len()),
        ))
    }

    /// Unclosed fences, strings and blocks get their own codes. An unclosed
    /// fence or block swallows the rest of the file, so parsing stops there.
    fn unclosed(&mut self, offset: usize, junk: &str) -> Option<Diagnostic> {
        let rest = &self.text[offset..];
        let at =
            |start: usize, len: usize| Span::new(self.source, offset + start, offset + start + len);
        let mut depth: Vec<usize> = Vec::new();
        let bytes = junk.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'#' => break,
                b'"' => {
                    let close = junk[i + 1..]
                        .find(['"', '\n'])
                        .filter(|&j| junk.as_bytes()[i + 1 + j] == b'"');
                    match close {
                        Some(j) => i += j + 2,
                        None => {
                            return Some(
                                Code::UnclosedString
                                    .at(at(i, 1), "this string is never closed")
                                    .label("string starts here")
                                    .help("close it with `\"` on the same line"),
                            );
                        }
                    }
                }
                b'`' if junk[i..].starts_with("```") => {
                    if let Some(j) = rest[i + 3..].find("```") {
                        i += j + 6;
                    } else {
                        self.truncated = true;
                        return Some(
                            Code::UnclosedFence
                                .at(at(i, 3), "this SQL fence is never closed")
                                .label("fence opens here; the rest of the file was read as its SQL")
                                .help("end the SQL with ``` on a line of its own"),
                        );
                    }
                }
                b'<' if junk[i + 1..]
                    .trim_start_matches([' ', '\t'])
                    .starts_with(|c: char| {
                        c == '\n' || c == '\r' || c == '#' || c.is_ascii_alphabetic()
                    })
                    || junk[i + 1..].trim().is_empty() =>
                {
                    depth.push(i);
                    i += 1;
                }
                b'>' => {
                    depth.pop();
                    i += 1;
                }
                _ => i += 1,
            }
        }
        // A block still open at the end of a junk region had no matching `>`
        // anywhere after it: the grammar swallows a closed one whole.
        let open = *depth.first()?;
        self.truncated = true;
        Some(
            Code::UnclosedBlock
                .at(at(open, 1), "this block is never closed")
                .label("block opens here")
                .help("add `>` on a line of its own where the block ends"),
        )
    }

    fn pest_error(
        &self,
        error: &pest::error::Error<Rule>,
        offset: usize,
        text: &str,
    ) -> Diagnostic {
        let pos = match error.location {
            InputLocation::Pos(p) | InputLocation::Span((p, _)) => p,
        };
        let found = found_token(text, pos);
        let span = Span::new(self.source, offset + pos, offset + pos + found.len());
        let (expected, keywords) = match &error.variant {
            ErrorVariant::ParsingError { positives, .. } => describe_all(positives),
            ErrorVariant::CustomError { message } => (message.clone(), Vec::new()),
        };
        let shown = if found.is_empty() {
            "the end of the line".to_owned()
        } else {
            format!("`{found}`")
        };
        let help =
            did_you_mean(found, keywords.iter().copied()).map(|k| format!("did you mean `{k}`?"));
        Code::Syntax
            .at(span, format!("expected {expected}, found {shown}"))
            .label(format!("expected {expected}"))
            .help_opt(help)
    }
}

/// A top-level line that starts with `word`, which is neither an item keyword
/// nor a fault: suggest the closest keyword, or list them.
pub(crate) fn unknown_item(word: &str, span: Span) -> Diagnostic {
    let help = did_you_mean(word, TOP_KEYWORDS.iter().copied()).map_or_else(
        || {
            format!(
                "a line starts with one of {}, or is a fault inside a phase",
                crate::suggest::list(TOP_KEYWORDS)
            )
        },
        |best| format!("did you mean `{best}`?"),
    );
    Code::UnknownItem
        .at(span, format!("`{word}` does not start a scenario item"))
        .label("unknown word")
        .help(help)
}

/// The token at `pos`: a word, or one character; empty at a line end.
fn found_token(text: &str, pos: usize) -> &str {
    let rest = &text[pos..];
    let word_len = rest
        .char_indices()
        .find(|(_, c)| !(c.is_alphanumeric() || *c == '_' || *c == '-' || *c == '.' || *c == '%'))
        .map_or(rest.len(), |(i, _)| i);
    if word_len > 0 {
        return &rest[..word_len];
    }
    match rest.chars().next() {
        None | Some('\n' | '\r') => "",
        Some(c) => &rest[..c.len_utf8()],
    }
}

/// "a or b or c" from pest's expected rules, plus the keywords among them
/// (for "did you mean").
fn describe_all(rules: &[Rule]) -> (String, Vec<&'static str>) {
    let mut words: Vec<&'static str> = Vec::new();
    let mut keywords = Vec::new();
    for rule in rules {
        let (text, keyword) = describe(*rule);
        if let Some(k) = keyword {
            keywords.push(k);
        }
        if !words.contains(&text) {
            words.push(text);
        }
    }
    let text = match words.as_slice() {
        [] => "something else".to_owned(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    };
    (text, keywords)
}

/// A human name for each grammar rule, and the keyword it stands for. The
/// match is exhaustive on purpose: a new rule cannot leak an internal name
/// into an error message.
#[allow(clippy::too_many_lines)]
fn describe(rule: Rule) -> (&'static str, Option<&'static str>) {
    let kw = |word: &'static str, text: &'static str| (text, Some(word));
    match rule {
        Rule::EOI => ("the end of the file", None),
        Rule::file | Rule::top_item | Rule::top_item_only | Rule::junk_top => (
            "a scenario item (`under load`, `workload`, `assert`, …)",
            None,
        ),
        Rule::statement
        | Rule::statement_only
        | Rule::junk_stmt
        | Rule::action
        | Rule::action_word => ("a fault such as `kill consumer`", None),
        Rule::nl | Rule::sep => ("a new line or `;`", None),
        Rule::comment => ("a comment", None),
        Rule::bom => ("a byte order mark", None),
        Rule::scenario_decl => ("`scenario NAME`", None),
        Rule::workload_decl => ("`workload NAME …`", None),
        Rule::consumers_decl => ("`consumers NAME, …`", None),
        Rule::consumer_decl => ("`consumer NAME command \"PROGRAM ARGS\" …`", None),
        Rule::template | Rule::decl_word => ("a name, which may hold `{run}`, or a string", None),
        Rule::set_decl => ("`set NAME VALUE`", None),
        Rule::table_decl | Rule::table_body => ("`table NAME < COLUMN TYPE … >`", None),
        Rule::table_line => (
            "a column (`NAME TYPE`) or a constraint (`primary key (…)`)",
            None,
        ),
        Rule::table_args | Rule::table_arg => ("a list in parentheses, like `(a, b)`", None),
        Rule::table_array => ("`[]` after a type, like `text[]`", None),
        Rule::include_decl => ("`include \"FILE\"`", None),
        Rule::fragment_decl => ("`fragment NAME < … >`", None),
        Rule::load_phase => ("`under load DURATION < … >`", None),
        Rule::quiet_phase => ("`quiet DURATION`", None),
        Rule::drain_phase => ("`drain within DURATION`", None),
        Rule::expect_decl => ("an `expect …` assertion", None),
        Rule::assert_decl => ("an `assert \"NAME\" ```…```` assertion", None),
        Rule::expectation => ("`expect true`, `expect empty` or `expect < N`", None),
        Rule::comparison | Rule::cmp_op => ("a comparison such as `<= 100`", None),
        Rule::block => ("a block `< … >`", None),
        Rule::block_open => ("`<` to open a block", None),
        Rule::block_end => ("`>` to close the block", None),
        Rule::window => ("`between START and END < … >`", None),
        Rule::use_stmt => ("`use FRAGMENT`", None),
        Rule::plain_word => ("a word or a number", None),
        Rule::schedule_start | Rule::schedule => (
            "a schedule (`at 5s`, `every 2s`, `3 times randomly`, `with chance 30%`)",
            None,
        ),
        Rule::at_sched => ("`at DURATION`", None),
        Rule::every_sched => ("`every DURATION`", None),
        Rule::random_sched => ("`N times randomly`", None),
        Rule::chance => ("`with chance PERCENT`", None),
        Rule::quantity | Rule::number | Rule::jittered | Rule::signed_number => {
            ("a number with a unit, like `30s`", None)
        }
        Rule::unit => ("a unit (`ms`, `s`, `m`, `h`, `%`, `/s`)", None),
        Rule::jitter_sign => ("`±`", None),
        Rule::ident | Rule::ident_char | Rule::name => ("a name", None),
        Rule::string | Rule::string_inner | Rule::escape => ("a string in double quotes", None),
        Rule::fence | Rule::fence_lang | Rule::fence_body => ("a ```-fenced SQL query", None),
        Rule::kw_scenario => kw("scenario", "`scenario`"),
        Rule::kw_workload => kw("workload", "`workload`"),
        Rule::kw_consumers => kw("consumers", "`consumers`"),
        Rule::kw_consumer => kw("consumer", "`consumer`"),
        Rule::kw_table => kw("table", "`table`"),
        Rule::kw_set => kw("set", "`set`"),
        Rule::kw_include => kw("include", "`include`"),
        Rule::kw_fragment => kw("fragment", "`fragment`"),
        Rule::kw_use => kw("use", "`use`"),
        Rule::kw_under => kw("under", "`under`"),
        Rule::kw_load => kw("load", "`load`"),
        Rule::kw_quiet => kw("quiet", "`quiet`"),
        Rule::kw_drain => kw("drain", "`drain`"),
        Rule::kw_within => kw("within", "`within`"),
        Rule::kw_between => kw("between", "`between`"),
        Rule::kw_and => kw("and", "`and`"),
        Rule::kw_at => kw("at", "`at`"),
        Rule::kw_every => kw("every", "`every`"),
        Rule::kw_times => kw("times", "`times`"),
        Rule::kw_randomly => kw("randomly", "`randomly`"),
        Rule::kw_with => kw("with", "`with`"),
        Rule::kw_chance => kw("chance", "`chance`"),
        Rule::kw_assert => kw("assert", "`assert`"),
        Rule::kw_expect => kw("expect", "`expect`"),
        Rule::kw_true => kw("true", "`true`"),
        Rule::kw_empty => kw("empty", "`empty`"),
        Rule::junk_piece | Rule::junk_block | Rule::junk_string | Rule::junk_fence => {
            ("something readable", None)
        }
        Rule::WHITESPACE => ("a space", None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyword_list_matches_the_grammar() {
        let grammar = include_str!("grammar.pest");
        let rules: Vec<&str> = grammar
            .lines()
            .filter_map(|l| l.strip_prefix("kw_"))
            .filter_map(|l| l.split('"').nth(1))
            .collect();
        assert_eq!(rules, KEYWORDS);
    }
}
