//! Syntax tree -> `Plan`, checking everything against the stdlib vocabulary.
//!
//! Every check reports and carries on, so one pass finds every problem in a
//! file. A `Plan` is produced only when there is no error.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};

use crate::ast::{self, Block, Expectation, File, Item, Quantity, Statement, Timing, Word};
use crate::code::Code;
use crate::diagnostic::Diagnostic;
use crate::loader::Loader;
use crate::matcher::{self, Matched, Scope};
use crate::parser::Parser;
use crate::plan::{
    Assertion, Phase, Plan, PlannedAction, PlannedSchedule, SettingValue, WorkloadPlan, show_ms,
};
use crate::span::{SourceId, Span, Spanned};
use crate::suggest::{did_you_mean, help_for, list};
use crate::units;
use crate::vocabulary::{
    ParamKind, PatternPart, SettingKind, Vocabulary, WorkloadSig, compile_pattern, first_word,
    usage,
};

/// An action may fire at most this often in one run: more cannot be struck
/// against real processes, and would only make the timeline enormous.
pub const MAX_OCCURRENCES: u64 = 10_000;

/// Stands in for a block length that could not be read, so the block's
/// statements are still checked (timing checks cannot fire against it).
const UNKNOWN_MS: u64 = u64::MAX / 4;

/// The name of a scenario's own workload when no `workload` line names it.
pub const DECLARED_WORKLOAD: &str = "tables";

/// The default final drain when a scenario does not end with one.
pub const DEFAULT_DRAIN_MS: u64 = 120_000;

/// One loaded file.
#[derive(Debug, Clone)]
pub struct Source {
    pub name: String,
    pub text: String,
}

/// The result of analysing a file: every diagnostic, and a plan when there
/// was no error.
#[derive(Debug)]
pub struct Analysis {
    /// The checked file first, then included files in load order; a span's
    /// `source` indexes this list.
    pub sources: Vec<Source>,
    pub file: File,
    pub plan: Option<Plan>,
    pub diagnostics: Vec<Diagnostic>,
}

impl Analysis {
    #[must_use]
    pub fn has_errors(&self) -> bool {
        !self.diagnostics.is_empty()
    }
}

/// The analyser stage: one public entry, [`Analyzer::analyze`].
pub struct Analyzer<'a> {
    vocab: &'a dyn Vocabulary,
    loader: &'a dyn Loader,
    faults: Vec<(&'static str, Vec<PatternPart>)>,
    shorthands: Vec<(usize, Vec<PatternPart>)>,
}

struct Fragment {
    body: Block,
    name_span: Span,
}

/// State of one analysis.
struct Run<'a, 'b> {
    analyzer: &'b Analyzer<'a>,
    sources: Vec<Source>,
    diagnostics: Vec<Diagnostic>,
    fragments: HashMap<String, Fragment>,
    /// The stdlib's workload the scenario names, or the one its `table`
    /// declarations make.
    workload: Cow<'a, WorkloadSig>,
    /// `table` declarations, from the scenario and the files it includes.
    tables: Vec<ast::TableDecl>,
    /// Some declaration did not read: faults naming its tables and columns
    /// are checked once it does (no second error for one mistake).
    tables_failed: bool,
    consumers: Vec<String>,
    /// The team's own consumers the scenario declares.
    declared: Vec<crate::plan::DeclaredConsumer>,
    /// Their names (the matcher's scope borrows them).
    declared_names: Vec<String>,
    actions: Vec<PlannedAction>,
    /// Fragments being expanded, innermost last (cycle detection).
    expanding: Vec<String>,
}

impl<'a> Analyzer<'a> {
    #[must_use]
    pub fn new(vocab: &'a dyn Vocabulary, loader: &'a dyn Loader) -> Self {
        let faults = vocab
            .faults()
            .iter()
            .map(|f| (f.name, compile_pattern(f.pattern)))
            .collect();
        let shorthands = vocab
            .shorthands()
            .iter()
            .enumerate()
            .map(|(i, s)| (i, compile_pattern(s.pattern)))
            .collect();
        Self {
            vocab,
            loader,
            faults,
            shorthands,
        }
    }

    /// Analyse `text`, the contents of the file called `name`.
    ///
    /// # Panics
    /// If the vocabulary declares no workload.
    #[must_use]
    pub fn analyze(&self, name: &str, text: &str) -> Analysis {
        let parsed = Parser::parse(text, 0);
        let mut run = Run {
            analyzer: self,
            sources: vec![Source {
                name: name.to_owned(),
                text: text.to_owned(),
            }],
            diagnostics: parsed.diagnostics,
            fragments: HashMap::new(),
            workload: Cow::Borrowed(
                self.vocab
                    .workloads()
                    .first()
                    .expect("the stdlib declares a workload"),
            ),
            tables: Vec::new(),
            tables_failed: false,
            consumers: Vec::new(),
            declared: Vec::new(),
            declared_names: Vec::new(),
            actions: Vec::new(),
            expanding: Vec::new(),
        };
        let plan = run.plan(&parsed.file, name);
        let mut diagnostics = run.diagnostics;
        if run.tables_failed {
            diagnostics.retain(|d| {
                !matches!(
                    d.code,
                    Code::UnknownTable
                        | Code::UnknownColumn
                        | Code::CannotWiden
                        | Code::ColumnExists
                )
            });
        }
        dedup(&mut diagnostics);
        diagnostics.sort_by_key(|d| (d.span.source, d.span.start));
        let plan = diagnostics.is_empty().then_some(plan);
        Analysis {
            sources: run.sources,
            file: parsed.file,
            plan,
            diagnostics,
        }
    }
}

impl<'a> Run<'a, '_> {
    fn vocab(&self) -> &'a dyn Vocabulary {
        self.analyzer.vocab
    }

    fn error(&mut self, diagnostic: Diagnostic) {
        self.diagnostics.push(diagnostic);
    }

    fn report<T>(&mut self, result: Result<T, Diagnostic>) -> Option<T> {
        result.map_err(|d| self.error(d)).ok()
    }

    // One pass per concern, each a flat match over item kinds: splitting it
    // would only scatter the order of checks.
    #[allow(clippy::too_many_lines)]
    fn plan(&mut self, file: &File, name: &str) -> Plan {
        // Pass 1: declarations, wherever they are in the file.
        let mut scenario: Option<Spanned<String>> = None;
        let mut workload_line: Option<(&Spanned<String>, &[Word])> = None;
        let mut consumers_span: Option<Span> = None;
        let mut settings: BTreeMap<String, (SettingValue, Span)> = BTreeMap::new();
        let mut included = HashSet::from([name.to_owned()]);
        // Declared consumers first: a `consumers` line may name them above.
        for item in &file.items {
            if let Item::Consumer { name, words, span } = item {
                self.declare_consumer(name, words, *span);
            }
        }
        for item in &file.items {
            match item {
                Item::Scenario { name, span } => {
                    if let Some(first) = &scenario {
                        self.error(duplicate("scenario name", *span, first.span));
                    } else {
                        scenario = Some(name.clone());
                    }
                }
                Item::Workload { name, params, span } => {
                    if workload_line.is_some() {
                        self.error(duplicate_item("workload", *span));
                    } else {
                        workload_line = Some((name, params));
                    }
                }
                Item::Table(table) => self.tables.push(table.clone()),
                Item::Consumers { names, span } => {
                    if let Some(first) = consumers_span {
                        self.error(duplicate("`consumers` line", *span, first));
                    } else {
                        consumers_span = Some(*span);
                        self.consumers_decl(names);
                    }
                }
                Item::Set { name, value, span } => {
                    if let Some((_, first)) = settings.get(&name.value) {
                        self.error(duplicate(
                            &format!("setting `{}`", name.value),
                            *span,
                            *first,
                        ));
                    } else if let Some(v) = self.setting(name, value, *span) {
                        settings.insert(name.value.clone(), (v, *span));
                    }
                }
                Item::Include { path, .. } => self.include(0, path, &mut included),
                Item::Fragment { name, body, .. } => self.fragment(name, body),
                _ => {}
            }
        }
        if consumers_span.is_none() {
            // Every consumer: lossproof's two stay as the control beside the
            // team's own (docs/bring-your-own.md).
            self.consumers = self
                .vocab()
                .consumers()
                .iter()
                .map(|c| c.name.to_owned())
                .chain(self.declared_names.iter().cloned())
                .collect();
        }
        // The workload, once every `table` (included ones too) is known.
        let declared = self.declare_tables(workload_line.map(|(name, _)| name));
        let workload = match workload_line {
            Some((name, params)) => self.workload(name, params, declared),
            None => Some(defaults(&self.workload)),
        };
        let mut workload = workload.unwrap_or_else(|| defaults(&self.workload));
        if declared {
            workload.tables.clone_from(&self.workload.tables);
        }
        self.check_fragments();

        // Pass 2: phases and assertions, in order.
        let mut phases = Vec::new();
        let mut assertions: Vec<Assertion> = Vec::new();
        for item in &file.items {
            match item {
                Item::Load {
                    duration,
                    body,
                    span,
                } => {
                    let ms = self.phase_length(duration);
                    phases.push(Phase::Load {
                        duration_ms: ms.unwrap_or(0),
                        span: *span,
                    });
                    self.statements(
                        &body.statements,
                        phases.len() - 1,
                        (0, ms.unwrap_or(UNKNOWN_MS)),
                        &[],
                    );
                }
                Item::Quiet {
                    duration,
                    body,
                    span,
                } => {
                    let ms = self.phase_length(duration);
                    phases.push(Phase::Quiet {
                        duration_ms: ms.unwrap_or(0),
                        span: *span,
                    });
                    if let Some(body) = body {
                        self.statements(
                            &body.statements,
                            phases.len() - 1,
                            (0, ms.unwrap_or(UNKNOWN_MS)),
                            &[],
                        );
                    }
                }
                Item::Drain { timeout, span } => {
                    let ms = self.phase_length(timeout);
                    phases.push(Phase::Drain {
                        timeout_ms: ms.unwrap_or(0),
                        implicit: false,
                        span: *span,
                    });
                }
                Item::Expect { words, span } => {
                    if let Some(a) = self.shorthand(words, *span) {
                        self.add_assertion(&mut assertions, a);
                    }
                }
                Item::Assert(assert) => {
                    if let Some(a) = self.assert(assert) {
                        self.add_assertion(&mut assertions, a);
                    }
                }
                Item::StrayAction(action) => self.stray(action),
                _ => {}
            }
        }
        if phases.is_empty()
            && let Some(header) = &scenario
        {
            self.error(
                Code::NoPhases
                    .at(
                        header.span,
                        format!("scenario `{}` has no phase to run", header.value),
                    )
                    .label("nothing to run")
                    .help("add a phase, e.g. `under load 30s < kill consumer every 2s >`"),
            );
        }
        if !phases.is_empty() && !matches!(phases.last(), Some(Phase::Drain { .. })) {
            let end = file.items.last().map_or(0, |i| i.span().end);
            phases.push(Phase::Drain {
                timeout_ms: DEFAULT_DRAIN_MS,
                implicit: true,
                span: Span::new(0, end, end),
            });
        }
        let settings = self
            .vocab()
            .settings()
            .iter()
            .map(|s| {
                let value = settings
                    .remove(s.name)
                    .map_or_else(|| default_setting(s), |(v, _)| v);
                (s.name.to_owned(), value)
            })
            .collect();
        Plan {
            scenario: scenario.map_or_else(|| stem(name), |s| s.value),
            workload,
            consumers: self.consumers.clone(),
            declared: std::mem::take(&mut self.declared),
            settings,
            phases,
            actions: std::mem::take(&mut self.actions),
            assertions,
        }
    }

    // ------------------------------------------------------------ header

    #[allow(clippy::too_many_lines)] // one arm per workload parameter
    fn workload(
        &mut self,
        name: &Spanned<String>,
        params: &[Word],
        declared: bool,
    ) -> Option<WorkloadPlan> {
        if !declared {
            let workloads = self.vocab().workloads();
            let Some(sig) = workloads.iter().find(|w| w.name == name.value) else {
                let names: Vec<&str> = workloads.iter().map(|w| w.name.as_str()).collect();
                self.error(
                    Code::UnknownWorkload
                        .at(name.span, format!("unknown workload `{}`", name.value))
                        .label("not a workload")
                        .help(match did_you_mean(&name.value, names.iter().copied()) {
                            Some(best) => format!(
                                "did you mean `{best}`? A scenario may also declare tables of its own (`table NAME < … >`)"
                            ),
                            None => format!(
                                "workloads are: {}; a scenario may also declare tables of its own (`table NAME < … >`)",
                                list(&names)
                            ),
                        }),
                );
                return None;
            };
            self.workload = Cow::Borrowed(sig);
        }
        let sig = self.workload.clone();
        let sig = &*sig;
        // How the count of rows written unpaced at the start is called.
        let initial = if declared { "rows" } else { "customers" };
        let parameters = ["rate", "connections", initial, "mix", "preload"];
        let parameter_list = format!("parameters are {}", list(&parameters));
        let mut plan = defaults(sig);
        let mut seen: HashMap<&str, Span> = HashMap::new();
        let mut mix: Option<(BTreeMap<String, f64>, Span)> = None;
        let mut i = 0;
        while i < params.len() {
            let word = &params[i];
            i += 1;
            let Some(param) = word.as_ident() else {
                self.error(
                    Code::WorkloadParam
                        .at(
                            word.span(),
                            format!("expected a parameter name, found `{}`", word.text()),
                        )
                        .label("not a parameter")
                        .help(parameter_list.clone()),
                );
                continue;
            };
            if let Some(first) = seen.insert(param, word.span()) {
                self.error(duplicate(
                    &format!("workload parameter `{param}`"),
                    word.span(),
                    first,
                ));
            }
            let value = params.get(i);
            match param {
                _ if ["rate", "connections", initial].contains(&param) => {
                    i += 1;
                    let Some(Word::Quantity(q)) = value else {
                        self.error(missing_value(param, word.span(), value));
                        continue;
                    };
                    match param {
                        "rate" => {
                            if let Some(r) = self.report(units::rate_per_s(q)) {
                                if r > 0.0 {
                                    plan.rate_per_s = r;
                                } else {
                                    self.error(
                                        Code::BadNumber
                                            .at(q.span, "a rate of 0 writes nothing")
                                            .label("zero"),
                                    );
                                }
                            }
                        }
                        "connections" => {
                            if let Some(n) = self.bounded_count(q, 1, 64) {
                                plan.connections = n;
                            }
                        }
                        _ => {
                            if let Some(n) = self.bounded_count(q, 1, 10_000_000) {
                                plan.customers = n;
                            }
                        }
                    }
                }
                "preload" => {
                    i += 1;
                    let Some(Word::Quantity(q)) = value else {
                        self.error(missing_value(param, word.span(), value));
                        continue;
                    };
                    let Some(n) = self.report(units::rows(q)) else {
                        continue;
                    };
                    if declared {
                        self.error(
                            Code::WorkloadParam
                                .at(word.span().to(q.span), "`preload` is for the `orders` workload")
                                .label("not yet for declared tables")
                                .help("preload the `orders` workload (`workload orders preload 1M`), or give declared tables `rows N`"),
                        );
                    } else if (1..=100_000_000).contains(&n) {
                        plan.preload = n;
                    } else {
                        self.error(
                            Code::BadNumber
                                .at(q.span, format!("`{n}` is out of range"))
                                .label("must be between 1 and 100M"),
                        );
                    }
                }
                "mix" => {
                    let start = word.span();
                    let mut shares = BTreeMap::new();
                    let mut end = start;
                    while let (Some(Word::Ident(op)), Some(share)) =
                        (params.get(i), params.get(i + 1))
                    {
                        if !sig.operations.contains(&op.value.as_str()) {
                            if parameters.contains(&op.value.as_str()) {
                                break;
                            }
                            self.error(
                                Code::WorkloadParam
                                    .at(
                                        op.span,
                                        format!(
                                            "workload `{}` has no operation `{}`",
                                            sig.name, op.value
                                        ),
                                    )
                                    .label("unknown operation")
                                    .help(help_for(
                                        &op.value,
                                        sig.operations,
                                        "its operations are",
                                    )),
                            );
                        }
                        i += 2;
                        end = share.span();
                        let Word::Quantity(q) = share else {
                            self.error(missing_value("mix share", op.span, Some(share)));
                            continue;
                        };
                        if let Some(p) = self.report(units::percent(q)) {
                            shares.insert(op.value.clone(), p);
                        }
                    }
                    if shares.is_empty() && end == start {
                        self.error(
                            Code::WorkloadParam
                                .at(start, "`mix` needs operations with shares")
                                .label("empty mix")
                                .help(format!("e.g. `mix {}`", example_mix(sig))),
                        );
                    }
                    mix = Some((shares, start.to(end)));
                }
                other => {
                    self.error(
                        Code::WorkloadParam
                            .at(
                                word.span(),
                                format!("workload `{}` has no parameter `{other}`", sig.name),
                            )
                            .label("unknown parameter")
                            .help(help_for(other, &parameters, "parameters are")),
                    );
                }
            }
        }
        if let Some((shares, span)) = mix {
            let total: f64 = shares.values().sum();
            if (total - 100.0).abs() > 1e-9 && !shares.is_empty() {
                self.error(
                    Code::MixTotal
                        .at(span, format!("the mix adds up to {total}%, not 100%"))
                        .label(format!("{total}% in all"))
                        .help("make the shares add up to 100%; operations left out get 0%"),
                );
            }
            plan.mix = sig
                .operations
                .iter()
                .map(|op| ((*op).to_owned(), shares.get(*op).copied().unwrap_or(0.0)))
                .collect();
        }
        Some(plan)
    }

    /// The scenario's own workload, from its `table` declarations (and
    /// those of the files it includes), if it has any: true when it does.
    fn declare_tables(&mut self, name: Option<&Spanned<String>>) -> bool {
        if self.tables.is_empty() {
            return false;
        }
        let decls = std::mem::take(&mut self.tables);
        let refs: Vec<&ast::TableDecl> = decls.iter().collect();
        let errors_before = self.diagnostics.len();
        let tables = crate::tables::tables(&refs, &mut self.diagnostics);
        self.tables_failed = self.diagnostics.len() > errors_before;
        if let Some(name) = name
            && self
                .vocab()
                .workloads()
                .iter()
                .any(|w| w.name == name.value)
        {
            self.error(
                Code::TableDeclaration
                    .at(
                        name.span,
                        format!(
                            "`{}` is the stdlib's workload, but this scenario declares its own tables",
                            name.value
                        ),
                    )
                    .label("declared tables run under a name of their own")
                    .help("name the workload after your tables, e.g. `workload shop rate 100/s`"),
            );
        }
        let names: Vec<&str> = tables.iter().map(|t| t.name.as_str()).collect();
        let stdlib = self.workload.clone();
        self.workload = Cow::Owned(WorkloadSig {
            name: name.map_or_else(|| DECLARED_WORKLOAD.to_owned(), |n| n.value.clone()),
            summary: format!("the scenario's own tables: {}", names.join(", ")),
            tables,
            operations: stdlib.operations,
            defaults: stdlib.defaults,
        });
        true
    }

    fn bounded_count(&mut self, q: &Quantity, min: u64, max: u64) -> Option<u64> {
        let n = self.report(units::count(q))?;
        if (min..=max).contains(&n) {
            Some(n)
        } else {
            self.error(
                Code::BadNumber
                    .at(q.span, format!("`{n}` is out of range"))
                    .label(format!("must be between {min} and {max}")),
            );
            None
        }
    }

    fn declare_consumer(&mut self, name: &Spanned<String>, words: &[Word], span: Span) {
        if self
            .vocab()
            .consumers()
            .iter()
            .any(|c| c.name == name.value)
        {
            self.error(
                Code::ConsumerDeclaration
                    .at(
                        name.span,
                        format!("`{}` is one of lossproof's own consumers", name.value),
                    )
                    .label("name taken")
                    .help("give your consumer another name"),
            );
            return;
        }
        if let Some(first) = self.declared.iter().find(|d| d.name == name.value) {
            let first = first.span;
            self.error(duplicate(
                &format!("consumer `{}`", name.value),
                span,
                first,
            ));
            return;
        }
        // Known by name even when malformed: its uses below are not errors too.
        self.declared_names.push(name.value.clone());
        if let Some(declared) =
            crate::declared::declaration(name, words, span, &mut self.diagnostics)
        {
            self.declared.push(declared);
        }
    }

    fn consumers_decl(&mut self, names: &[Spanned<String>]) {
        let declared = self.declared_names.clone();
        let known: Vec<&str> = self
            .vocab()
            .consumers()
            .iter()
            .map(|c| c.name)
            .chain(declared.iter().map(String::as_str))
            .collect();
        let mut seen: HashMap<&str, Span> = HashMap::new();
        for name in names {
            if let Some(first) = seen.insert(&name.value, name.span) {
                self.error(duplicate(
                    &format!("consumer `{}`", name.value),
                    name.span,
                    first,
                ));
            } else if known.contains(&name.value.as_str()) {
                self.consumers.push(name.value.clone());
            } else {
                self.error(
                    Code::UnknownConsumer
                        .at(name.span, format!("unknown consumer `{}`", name.value))
                        .label("not a consumer")
                        .help(help_for(&name.value, &known, "consumers are")),
                );
            }
        }
    }

    fn setting(
        &mut self,
        name: &Spanned<String>,
        value: &[Word],
        span: Span,
    ) -> Option<SettingValue> {
        let settings = self.vocab().settings();
        let Some(sig) = settings.iter().find(|s| s.name == name.value) else {
            let names: Vec<&str> = settings.iter().map(|s| s.name).collect();
            self.error(
                Code::UnknownSetting
                    .at(name.span, format!("unknown setting `{}`", name.value))
                    .label("not a setting")
                    .help(help_for(&name.value, &names, "settings are")),
            );
            return None;
        };
        let expected = match sig.kind {
            SettingKind::Count { min, max } => format!("a whole number from {min} to {max}"),
            SettingKind::Duration => "a duration like `5s`".to_owned(),
            SettingKind::Choice(choices) => format!("one of {}", list(choices)),
        };
        let [word] = value else {
            self.error(
                Code::SettingValue
                    .at(
                        span,
                        format!("`set {}` takes one value: {expected}", sig.name),
                    )
                    .label("one value expected")
                    .help(format!("e.g. `set {} {}`", sig.name, sig.default)),
            );
            return None;
        };
        match (sig.kind, word) {
            (SettingKind::Count { min, max }, Word::Quantity(q)) => {
                self.bounded_count(q, min, max).map(SettingValue::Count)
            }
            (SettingKind::Duration, Word::Quantity(q)) => self
                .report(units::duration_ms(q))
                .map(SettingValue::DurationMs),
            (SettingKind::Choice(choices), Word::Ident(choice))
                if choices.contains(&choice.value.as_str()) =>
            {
                Some(SettingValue::Choice(choice.value.clone()))
            }
            _ => {
                let help = match (sig.kind, word) {
                    (SettingKind::Choice(choices), Word::Ident(w)) => {
                        help_for(&w.value, choices, "choices are")
                    }
                    _ => format!("e.g. `set {} {}`", sig.name, sig.default),
                };
                self.error(
                    Code::SettingValue
                        .at(word.span(), format!("`{}` is not {expected}", word.text()))
                        .label(format!("expected {expected}"))
                        .help(help),
                );
                None
            }
        }
    }

    fn include(&mut self, from: SourceId, path: &Spanned<String>, included: &mut HashSet<String>) {
        let from_name = self.sources[from].name.clone();
        let loaded = match self.vocab().builtin_file(&path.value) {
            Some(text) => Ok((path.value.clone(), text.to_owned())),
            None => self.analyzer.loader.load(&from_name, &path.value),
        };
        let (name, text) = match loaded {
            Ok(found) => found,
            Err(reason) => {
                self.error(Code::IncludeNotFound
                    .at(path.span, format!("cannot include `{}`: {reason}", path.value))
                    .label("not found")
                    .help("paths are relative to the including file; `stdlib/…` files ship with lossproof"));
                return;
            }
        };
        if !included.insert(name.clone()) {
            self.error(
                Code::IncludeCycle
                    .at(path.span, format!("`{}` is already included", path.value))
                    .label("included again")
                    .help("remove this include: each file is read once"),
            );
            return;
        }
        let source = self.sources.len();
        self.sources.push(Source { name, text });
        let text = self.sources[source].text.clone();
        let parsed = Parser::parse(&text, source);
        self.diagnostics.extend(parsed.diagnostics);
        for item in &parsed.file.items {
            match item {
                Item::Fragment { name, body, .. } => self.fragment(name, body),
                Item::Table(table) => self.tables.push(table.clone()),
                Item::Include { path: inner, .. } => self.include(source, inner, included),
                Item::Comment(_) => {}
                other => self.error(
                    Code::IncludeContent
                        .at(
                            other.span(),
                            "an included file may only define fragments and tables",
                        )
                        .label("not a fragment or a table")
                        .related(path.span, "included here")
                        .help("move this into the scenario, or wrap it in `fragment NAME < … >`"),
                ),
            }
        }
    }

    fn fragment(&mut self, name: &Spanned<String>, body: &Block) {
        if let Some(first) = self.fragments.get(&name.value) {
            let first = first.name_span;
            self.error(duplicate(
                &format!("fragment `{}`", name.value),
                name.span,
                first,
            ));
            return;
        }
        self.fragments.insert(
            name.value.clone(),
            Fragment {
                body: body.clone(),
                name_span: name.span,
            },
        );
    }

    /// Check every fragment once on its own, so a fragment that is never
    /// used still gets its vocabulary checked. Time checks happen at each
    /// use, against the block it lands in.
    fn check_fragments(&mut self) {
        let mut names: Vec<String> = self.fragments.keys().cloned().collect();
        names.sort();
        for name in names {
            let body = self.fragments[&name].body.clone();
            let before = self.actions.len();
            // Checked against the tables at the start; a use checks it
            // again where it lands in the timeline.
            let tables = self.workload.clone();
            self.expanding.push(name);
            self.statements(&body.statements, 0, (0, UNKNOWN_MS), &[]);
            self.expanding.pop();
            self.actions.truncate(before);
            self.workload = tables;
        }
    }

    // ------------------------------------------------------------ phases

    fn phase_length(&mut self, q: &Quantity) -> Option<u64> {
        let ms = self.report(units::duration_ms(q))?;
        if ms == 0 {
            self.error(
                Code::ZeroDuration
                    .at(q.span, "a phase of 0s does nothing")
                    .label("zero")
                    .help("give it a length, e.g. `30s`"),
            );
            return None;
        }
        Some(ms)
    }

    fn statements(
        &mut self,
        statements: &[Statement],
        phase: usize,
        window: (u64, u64),
        used_at: &[Span],
    ) {
        for statement in statements {
            match statement {
                Statement::Comment(_) => {}
                Statement::Action(action) => self.action(action, phase, window, used_at),
                Statement::Window {
                    from,
                    to,
                    body,
                    span,
                } => {
                    let (Some(from_ms), Some(to_ms)) = (
                        self.report(units::duration_ms(from)),
                        self.report(units::duration_ms(to)),
                    ) else {
                        continue;
                    };
                    let length = window.1 - window.0;
                    if from_ms >= to_ms {
                        self.error(
                            Code::EmptyWindow
                                .at(
                                    from.span.to(to.span),
                                    format!(
                                        "the window {} to {} is empty",
                                        show_ms(from_ms),
                                        show_ms(to_ms)
                                    ),
                                )
                                .label("ends before it starts")
                                .help("the second time must be later than the first"),
                        );
                    } else if to_ms > length {
                        self.error(in_use(
                            Code::AfterBlockEnd
                                .at(
                                    to.span,
                                    format!(
                                        "the window ends at {}, after its block ends ({})",
                                        show_ms(to_ms),
                                        show_ms(length)
                                    ),
                                )
                                .label("after the end of the block")
                                .help(format!("end the window by {}", show_ms(length))),
                            used_at,
                        ));
                    } else {
                        let _ = span;
                        self.statements(
                            &body.statements,
                            phase,
                            (window.0 + from_ms, window.0 + to_ms),
                            used_at,
                        );
                    }
                }
                Statement::Use { name, span } => {
                    self.use_fragment(name, *span, phase, window, used_at);
                }
            }
        }
    }

    fn use_fragment(
        &mut self,
        name: &Spanned<String>,
        span: Span,
        phase: usize,
        window: (u64, u64),
        used_at: &[Span],
    ) {
        if self.expanding.contains(&name.value) {
            self.error(
                Code::FragmentCycle
                    .at(name.span, format!("fragment `{}` uses itself", name.value))
                    .label("used inside itself")
                    .help("a fragment cannot use itself, directly or through another fragment"),
            );
            return;
        }
        let Some(fragment) = self.fragments.get(&name.value) else {
            let mut names: Vec<&str> = self.fragments.keys().map(String::as_str).collect();
            names.sort_unstable();
            let help = did_you_mean(&name.value, names.iter().copied()).map_or_else(
                || {
                    if names.is_empty() {
                        "define it with `fragment NAME < … >`".to_owned()
                    } else {
                        format!("fragments are {}", list(&names))
                    }
                },
                |best| format!("did you mean `{best}`?"),
            );
            self.error(
                Code::UnknownFragment
                    .at(name.span, format!("no fragment named `{}`", name.value))
                    .label("unknown fragment")
                    .help(help),
            );
            return;
        };
        let body = fragment.body.clone();
        let mut inner_used = used_at.to_vec();
        inner_used.push(span);
        // Vocabulary problems inside the fragment were reported at its
        // definition; at a use only the timing against this block is new.
        let before = self.diagnostics.len();
        self.expanding.push(name.value.clone());
        self.statements(&body.statements, phase, window, &inner_used);
        self.expanding.pop();
        let fresh = self.diagnostics.split_off(before);
        self.diagnostics
            .extend(fresh.into_iter().filter(|d| TIMING_CODES.contains(&d.code)));
    }

    fn action(&mut self, action: &ast::Action, phase: usize, window: (u64, u64), used_at: &[Span]) {
        let resolved = self.resolve_fault(action);
        if let Some((fault, matched)) = &resolved {
            self.follow_columns(fault, matched);
        }
        let schedule = self.schedule(action, window.1 - window.0, used_at);
        if let (Some((fault, matched)), Some((schedule, chance))) = (resolved, schedule) {
            self.actions.push(PlannedAction {
                fault: fault.to_owned(),
                text: action.text(),
                phase,
                target: matched.target,
                args: matched.args,
                window_ms: window,
                schedule,
                chance_percent: chance,
                span: action.span,
                used_at: used_at.to_vec(),
            });
        }
    }

    /// Columns follow the timeline: each statement is checked against the
    /// tables as the alterations written before it left them, so `drop
    /// column note` then `add column note` is the migration it is, and a
    /// column added (or renamed) can be widened or dropped later. Only the
    /// checks see this: the plan's workload is the tables at the start.
    fn follow_columns(&mut self, fault: &str, matched: &Matched) {
        let name = |param: &str| match matched.args.get(param) {
            Some(crate::plan::ArgValue::Name(n)) => Some(n.clone()),
            _ => None,
        };
        let (Some(table), Some(column)) = (name("table"), name("column")) else {
            return;
        };
        let Some(table) = self
            .workload
            .to_mut()
            .tables
            .iter_mut()
            .find(|t| t.name == table)
        else {
            return;
        };
        let existing = table.columns.iter().position(|c| c.name == column);
        match (fault, existing) {
            ("add-column", None) => table.columns.push(crate::vocabulary::ColumnSig {
                name: column,
                sql_type: crate::column_type::ColumnType::Text,
                not_null: false,
                large: false,
            }),
            ("drop-column", Some(at)) => {
                table.columns.remove(at);
            }
            ("rename-column", Some(at)) => {
                if let Some(new_name) = name("new_name") {
                    table.columns[at].name = new_name;
                }
            }
            ("widen-column", Some(at)) => {
                if let Some(wider) = table.columns[at].sql_type.widens_to() {
                    table.columns[at].sql_type = wider;
                }
            }
            _ => {}
        }
    }

    fn resolve_fault(&mut self, action: &ast::Action) -> Option<(&'static str, Matched)> {
        let first = action.words.first()?;
        let Some(verb) = first.as_ident() else {
            self.error(
                Code::UnknownFault
                    .at(
                        first.span(),
                        format!("a fault starts with its name, not `{}`", first.text()),
                    )
                    .label("not a fault name")
                    .help("e.g. `kill consumer every 2s`"),
            );
            return None;
        };
        let candidates: Vec<&(&'static str, Vec<PatternPart>)> = self
            .analyzer
            .faults
            .iter()
            .filter(
                |(_, parts)| matches!(parts.first(), Some(PatternPart::Literal(w)) if *w == verb),
            )
            .collect();
        if candidates.is_empty() {
            let mut verbs: Vec<&str> = self
                .vocab()
                .faults()
                .iter()
                .map(|f| first_word(f.pattern))
                .collect();
            verbs.dedup();
            self.error(
                Code::UnknownFault
                    .at(first.span(), format!("unknown fault `{verb}`"))
                    .label("not a fault")
                    .help(help_for(verb, &verbs, "faults are")),
            );
            return None;
        }
        let scope = self.scope();
        let outcomes: Vec<matcher::Outcome> = candidates
            .iter()
            .map(|(_, parts)| scope.match_parts(parts, &action.words, 0, Matched::default()))
            .collect();
        let position = outcomes.iter().position(Result::is_ok);
        match matcher::best(outcomes) {
            Ok(matched) => {
                let name = candidates[position.expect("a match")].0;
                let ok = matched.diagnostics.is_empty();
                self.diagnostics.extend(matched.diagnostics.iter().cloned());
                ok.then_some((name, matched))
            }
            Err(failure) => {
                let usages: Vec<String> = candidates.iter().map(|(_, p)| usage(p)).collect();
                self.error(matcher::failure_diagnostic(
                    Code::FaultArguments,
                    &failure,
                    &action.words,
                    action.span,
                    &usages,
                ));
                None
            }
        }
    }

    fn scope(&self) -> Scope<'_> {
        Scope {
            vocab: self.analyzer.vocab,
            workload: &self.workload,
            consumers: &self.consumers,
            declared: &self.declared_names,
        }
    }

    // One arm per kind of schedule, each with its own impossibility checks.
    #[allow(clippy::too_many_lines)]
    fn schedule(
        &mut self,
        action: &ast::Action,
        length: u64,
        used_at: &[Span],
    ) -> Option<(PlannedSchedule, Option<f64>)> {
        let Some(schedule) = &action.schedule else {
            return Some((PlannedSchedule::Once, None));
        };
        // Against a block whose length could not be read, only the shape of
        // the schedule can be checked.
        let length = if length >= UNKNOWN_MS {
            u64::MAX
        } else {
            length
        };
        let chance = match &schedule.chance {
            None => None,
            Some(q) => {
                let p = self.report(units::percent(q))?;
                if p <= 0.0 || p > 100.0 {
                    self.error(
                        Code::ChanceRange
                            .at(
                                q.span,
                                format!("a chance of {} is not between 0% and 100%", q.text()),
                            )
                            .label(if p <= 0.0 {
                                "never fires"
                            } else {
                                "more than certain"
                            })
                            .help("use a chance above 0% and at most 100%"),
                    );
                    return None;
                }
                Some(p)
            }
        };
        let planned = match &schedule.timing {
            None => PlannedSchedule::Once,
            Some(Timing::At(q)) => {
                let at = self.report(units::duration_ms(q))?;
                if at >= length {
                    self.error(in_use(
                        Code::AfterBlockEnd
                            .at(
                                q.span,
                                format!(
                                    "`at {}` is after the end of its block ({})",
                                    q.text(),
                                    show_ms(length)
                                ),
                            )
                            .label("after the block ends")
                            .help(format!("schedule it before {}", show_ms(length))),
                        used_at,
                    ));
                    return None;
                }
                PlannedSchedule::At { offset_ms: at }
            }
            Some(Timing::Every { period, jitter }) => {
                let period_ms = self.report(units::duration_ms(period))?;
                let jitter_ms = match jitter {
                    Some(j) => self.report(units::duration_ms(j))?,
                    None => 0,
                };
                if period_ms == 0 {
                    self.error(
                        Code::ZeroPeriod
                            .at(period.span, "`every 0s` would fire without end")
                            .label("zero period")
                            .help("use a period above zero, e.g. `every 2s`"),
                    );
                    return None;
                }
                if let Some(j) = jitter.as_ref().filter(|_| jitter_ms >= period_ms) {
                    self.error(
                        Code::JitterTooLarge
                            .at(
                                j.span,
                                format!(
                                    "jitter {} is not smaller than the period {}",
                                    j.text(),
                                    period.text()
                                ),
                            )
                            .label("too much jitter")
                            .help("keep the jitter below the period, e.g. `every 2s±500ms`"),
                    );
                    return None;
                }
                if period_ms >= length {
                    self.error(in_use(
                        Code::NeverFires
                            .at(
                                period.span,
                                format!(
                                    "`every {}` never fires inside a block of {}",
                                    period.text(),
                                    show_ms(length)
                                ),
                            )
                            .label("longer than the block")
                            .help(format!(
                                "use a period below {}, or `at` for a single occurrence",
                                show_ms(length)
                            )),
                        used_at,
                    ));
                    return None;
                }
                let count = (length - 1) / period_ms;
                if count > MAX_OCCURRENCES && length != u64::MAX {
                    self.error(too_many(period.span, count, used_at));
                    return None;
                }
                PlannedSchedule::Every {
                    period_ms,
                    jitter_ms,
                }
            }
            Some(Timing::Randomly { times }) => {
                let n = self.report(units::count(times))?;
                if n == 0 {
                    self.error(
                        Code::NeverFires
                            .at(times.span, "`0 times randomly` never fires")
                            .label("zero times")
                            .help("fire at least once, or remove the statement"),
                    );
                    return None;
                }
                if n > MAX_OCCURRENCES {
                    self.error(too_many(times.span, n, used_at));
                    return None;
                }
                PlannedSchedule::Randomly { times: n }
            }
        };
        Some((planned, chance))
    }

    fn stray(&mut self, action: &ast::Action) {
        let Some(first) = action.words.first() else {
            return;
        };
        let word = first.as_ident().unwrap_or_default();
        let is_fault = self
            .vocab()
            .faults()
            .iter()
            .any(|f| first_word(f.pattern) == word);
        if is_fault {
            self.error(
                Code::ActionOutsidePhase
                    .at(
                        action.span,
                        format!("`{}` is outside any phase", action.text()),
                    )
                    .label("not inside a phase")
                    .help(format!(
                        "put it inside a phase: `under load 30s < {} >`",
                        action.text()
                    )),
            );
        } else {
            self.error(crate::parser::unknown_item(&first.text(), first.span()));
        }
    }

    // ------------------------------------------------------------ assertions

    fn add_assertion(&mut self, assertions: &mut Vec<Assertion>, assertion: Assertion) {
        if let Some(first) = assertions.iter().find(|a| a.name == assertion.name) {
            self.error(duplicate(
                &format!("assertion `{}`", assertion.name),
                assertion.span,
                first.span,
            ));
        } else {
            assertions.push(assertion);
        }
    }

    fn shorthand(&mut self, words: &[Word], span: Span) -> Option<Assertion> {
        let scope = self.scope();
        let outcomes: Vec<matcher::Outcome> = self
            .analyzer
            .shorthands
            .iter()
            .map(|(_, parts)| scope.match_parts(parts, words, 0, Matched::default()))
            .collect();
        let position = outcomes.iter().position(Result::is_ok);
        match matcher::best(outcomes) {
            Ok(matched) => {
                let ok = matched.diagnostics.is_empty();
                self.diagnostics.extend(matched.diagnostics.iter().cloned());
                let (sig_index, parts) = &self.analyzer.shorthands[position?];
                let sig = self.vocab().shorthands()[*sig_index];
                let consumers: Vec<String> = parts
                    .iter()
                    .filter_map(|part| match part {
                        PatternPart::Param {
                            name,
                            kind: ParamKind::Consumer,
                        } => match matched.args.get(*name) {
                            Some(crate::plan::ArgValue::Name(n)) => Some(n.clone()),
                            _ => None,
                        },
                        _ => None,
                    })
                    .collect();
                let mut sql = sig.sql.to_owned();
                for (name, value) in &matched.args {
                    let text = match value {
                        crate::plan::ArgValue::Name(n) => n.clone(),
                        crate::plan::ArgValue::Count(n) | crate::plan::ArgValue::DurationMs(n) => {
                            n.to_string()
                        }
                        crate::plan::ArgValue::Percent(p) => p.to_string(),
                    };
                    sql = sql.replace(&format!("{{{name}}}"), &text);
                }
                ok.then(|| Assertion {
                    name: format!("expect {}", ast::words_text(words)),
                    sql,
                    expect: Expectation::True,
                    span,
                    sql_span: span,
                    consumers,
                })
            }
            Err(failure) => {
                let usages: Vec<String> = self
                    .analyzer
                    .shorthands
                    .iter()
                    .map(|(_, p)| format!("expect {}", usage(p)))
                    .collect();
                let mut d = matcher::failure_diagnostic(
                    Code::UnknownAssertion,
                    &failure,
                    words,
                    span,
                    &usages,
                );
                d.message = format!("not an assertion shorthand: {}", d.message);
                self.error(d);
                None
            }
        }
    }

    fn assert(&mut self, assert: &ast::Assert) -> Option<Assertion> {
        let body = &assert.sql.body;
        self.check_sql(body)?;
        Some(Assertion {
            name: assert.name.value.clone(),
            sql: body.value.trim().to_owned(),
            expect: assert
                .expectation
                .as_ref()
                .map_or(Expectation::True, |e| e.value.clone()),
            span: assert.span,
            sql_span: body.span,
            consumers: named_consumers(&body.value, &self.consumers),
        })
    }

    /// Parse the SQL in the `DataFusion` dialect (sqlparser's generic one) and
    /// accept exactly one query: assertions only read.
    fn check_sql(&mut self, body: &Spanned<String>) -> Option<()> {
        use sqlparser::dialect::GenericDialect;
        use sqlparser::parser::Parser as SqlParser;
        let lead = body.value.len() - body.value.trim_start().len();
        let trimmed = Span::new(
            body.span.source,
            body.span.start + lead,
            body.span.start + body.value.trim_end().len().max(lead),
        );
        let body = &Spanned {
            value: body.value.clone(),
            span: if trimmed.is_empty() {
                body.span
            } else {
                trimmed
            },
        };
        let full = body.span.start - lead;
        match SqlParser::parse_sql(&GenericDialect {}, &body.value) {
            Ok(statements) => match statements.as_slice() {
                [sqlparser::ast::Statement::Query(_)] => Some(()),
                [] => {
                    self.error(
                        Code::SqlSyntax
                            .at(body.span, "the assertion holds no query")
                            .label("empty")
                            .help("write a query, e.g. `select count(*) = 0 from diff`"),
                    );
                    None
                }
                [_] => {
                    self.error(Code::SqlNotReadOnly
                        .at(body.span, "an assertion must be a query (`select …`), not a statement that changes data")
                        .label("not a query")
                        .help("assertions only read `diff`, `summary`, `source_rows`, `lake_rows` and `faults`"));
                    None
                }
                _ => {
                    self.error(
                        Code::SqlNotReadOnly
                            .at(
                                body.span,
                                format!(
                                    "an assertion must be exactly one query, found {}",
                                    statements.len()
                                ),
                            )
                            .label("several statements")
                            .help("split it into one `assert` per query"),
                    );
                    None
                }
            },
            Err(error) => {
                let message = error.to_string();
                let span = sql_error_span(&body.value, &message)
                    .map_or(body.span, |(start, len)| {
                        Span::new(body.span.source, full + start, full + start + len)
                    });
                let text = message.trim_start_matches("sql parser error: ");
                let text = text.split(" at Line:").next().unwrap_or(text);
                self.error(
                    Code::SqlSyntax
                        .at(span, format!("SQL does not parse: {text}"))
                        .label("here")
                        .help("assertions use DataFusion's SQL dialect"),
                );
                None
            }
        }
    }
}

/// Codes that depend on where a fragment is used; everything else about a
/// fragment is reported once, at its definition.
const TIMING_CODES: &[Code] = &[
    Code::AfterBlockEnd,
    Code::NeverFires,
    Code::TooManyOccurrences,
    Code::FragmentCycle,
];

/// Mark a diagnostic raised inside a fragment with the `use` that put it there.
fn in_use(mut diagnostic: Diagnostic, used_at: &[Span]) -> Diagnostic {
    for span in used_at {
        diagnostic = diagnostic.related(*span, "used here");
    }
    diagnostic
}

fn too_many(span: Span, count: u64, used_at: &[Span]) -> Diagnostic {
    in_use(
        Code::TooManyOccurrences
            .at(
                span,
                format!("this would fire {count} times; at most {MAX_OCCURRENCES} are allowed"),
            )
            .label("too often")
            .help("use a longer period or fewer times"),
        used_at,
    )
}

pub(crate) fn duplicate(what: &str, span: Span, first: Span) -> Diagnostic {
    Code::Duplicate
        .at(span, format!("{what} is given twice"))
        .label("given again here")
        .related(first, "first given here")
        .help("keep one of them")
}

fn duplicate_item(what: &str, span: Span) -> Diagnostic {
    Code::Duplicate
        .at(span, format!("a scenario has one `{what}` line"))
        .label("second one")
        .help("keep one of them")
}

fn missing_value(param: &str, span: Span, found: Option<&Word>) -> Diagnostic {
    let example = match param {
        "rate" => "200/s",
        "connections" => "4",
        "customers" | "rows" => "100",
        "preload" => "1M",
        _ => "50%",
    };
    let (span, message) = match found {
        Some(word) => (
            word.span(),
            format!("`{param}` needs a number, found `{}`", word.text()),
        ),
        None => (span, format!("`{param}` needs a value")),
    };
    Code::WorkloadParam
        .at(span, message)
        .label("value expected")
        .help(format!("e.g. `{param} {example}`"))
}

fn defaults(sig: &WorkloadSig) -> WorkloadPlan {
    WorkloadPlan {
        name: sig.name.clone(),
        tables: Vec::new(),
        rate_per_s: sig.defaults.rate_per_s,
        connections: sig.defaults.connections,
        customers: sig.defaults.customers,
        preload: 0,
        mix: sig
            .operations
            .iter()
            .zip(sig.defaults.mix)
            .map(|(op, p)| ((*op).to_owned(), *p))
            .collect(),
    }
}

fn example_mix(sig: &WorkloadSig) -> String {
    sig.operations
        .iter()
        .zip(sig.defaults.mix)
        .map(|(op, p)| format!("{op} {p}%"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn default_setting(sig: &crate::vocabulary::SettingSig) -> SettingValue {
    let parsed = Parser::parse(&format!("set {} {}", sig.name, sig.default), 0);
    let value = match parsed.file.items.first() {
        Some(Item::Set { value, .. }) => value.first().cloned(),
        _ => None,
    };
    match (sig.kind, value) {
        (SettingKind::Count { .. }, Some(Word::Quantity(q))) => {
            SettingValue::Count(units::count(&q).expect("stdlib default"))
        }
        (SettingKind::Duration, Some(Word::Quantity(q))) => {
            SettingValue::DurationMs(units::duration_ms(&q).expect("stdlib default"))
        }
        (SettingKind::Choice(_), Some(Word::Ident(c))) => SettingValue::Choice(c.value),
        _ => panic!(
            "stdlib setting `{}` has a malformed default `{}`",
            sig.name, sig.default
        ),
    }
}

/// `crash` from `scenarios/crash.lp`.
fn stem(name: &str) -> String {
    std::path::Path::new(name)
        .file_stem()
        .map_or_else(|| name.to_owned(), |s| s.to_string_lossy().into_owned())
}

/// sqlparser reports `… at Line: L, Column: C`; turn that into a byte range.
fn sql_error_span(sql: &str, message: &str) -> Option<(usize, usize)> {
    let rest = &message[message.rfind("Line: ")? + 6..];
    let (line, rest) = rest.split_once(", Column: ")?;
    let line: usize = line.trim().parse().ok()?;
    let column: usize = rest
        .trim()
        .trim_end_matches(|c: char| !c.is_ascii_digit())
        .parse()
        .ok()?;
    let line_start: usize = sql
        .split_inclusive('\n')
        .take(line.checked_sub(1)?)
        .map(str::len)
        .sum();
    let line_text = sql[line_start..].lines().next().unwrap_or("");
    let start = line_start
        + line_text
            .char_indices()
            .nth(column.checked_sub(1)?)
            .map_or(line_text.len(), |(i, _)| i);
    let len = sql[start..]
        .find(|c: char| c.is_whitespace())
        .unwrap_or(sql.len() - start)
        .max(1)
        .min(sql.len() - start);
    Some((start, len))
}

fn dedup(diagnostics: &mut Vec<Diagnostic>) {
    let mut seen = HashSet::new();
    diagnostics.retain(|d| seen.insert((d.code, d.span, d.message.clone())));
}

/// The consumers among `consumers` that `sql` names in a string literal
/// (`where consumer = 'careless'`), in the scenario's order. Read from the
/// SQL's tokens, so a name in a comment or an identifier does not count.
fn named_consumers(sql: &str, consumers: &[String]) -> Vec<String> {
    use sqlparser::dialect::GenericDialect;
    use sqlparser::tokenizer::{Token, Tokenizer};
    let literals: HashSet<String> = Tokenizer::new(&GenericDialect {}, sql)
        .tokenize()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|t| match t {
            Token::SingleQuotedString(s) => Some(s),
            _ => None,
        })
        .collect();
    consumers
        .iter()
        .filter(|c| literals.contains(c.as_str()))
        .cloned()
        .collect()
}
