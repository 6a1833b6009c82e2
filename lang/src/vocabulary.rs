//! What the language knows about the outside world, supplied by `stdlib/`.
//!
//! The grammar has no fault names in it: a fault is a signature here
//! (`alter table {table:table} widen {column:column}`), so adding a fault is
//! one entry in the stdlib, never a grammar change.

use crate::column_type::ColumnType;

/// The stdlib's vocabulary, as the analyser sees it.
pub trait Vocabulary {
    fn faults(&self) -> &[FaultSig];
    fn shorthands(&self) -> &[ShorthandSig];
    fn workloads(&self) -> &[WorkloadSig];
    fn consumers(&self) -> &[ConsumerSig];
    fn targets(&self) -> &[TargetSig];
    fn settings(&self) -> &[SettingSig];
    /// A `.lp` file shipped with lossproof (`include "stdlib/faults.lp"`).
    fn builtin_file(&self, path: &str) -> Option<&'static str>;
}

/// A fault: its registered name, how it is written, and what it does.
///
/// Pattern syntax: literal words; `{name:kind}` parameters; `[ … ]` an
/// optional group. Kinds: `process` (a target that is a process), `target`
/// (any target), `link` (a target behind the fault proxy), `table`, `column` (an existing column of `{table}`),
/// `widenable_column` (an existing column with a wider type), `new_column` (a column name the table does not have yet), `topic` (the
/// topic of a workload table), `count`, `percent`, `duration`, `consumer`.
#[derive(Debug, Clone, Copy)]
pub struct FaultSig {
    pub name: &'static str,
    pub pattern: &'static str,
    pub summary: &'static str,
}

/// An assertion shorthand such as `expect consumer correct clean`: a pattern
/// (after `expect`) and the SQL it stands for, with `{param}` placeholders.
#[derive(Debug, Clone, Copy)]
pub struct ShorthandSig {
    pub pattern: &'static str,
    pub sql: &'static str,
    pub summary: &'static str,
}

/// A workload: its tables and how its operations are drawn. The stdlib's
/// `orders` is one (declared in `stdlib/orders.lp`); a scenario that
/// declares `table`s gets another, named by its `workload` line.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadSig {
    pub name: String,
    pub summary: String,
    /// Parents before children (every foreign key points up the list).
    pub tables: Vec<TableSig>,
    /// Operation kinds the `mix` parameter distributes over.
    pub operations: &'static [&'static str],
    pub defaults: WorkloadDefaults,
}

impl WorkloadSig {
    #[must_use]
    pub fn table(&self, name: &str) -> Option<&TableSig> {
        self.tables.iter().find(|t| t.name == name)
    }

    #[must_use]
    pub fn table_names(&self) -> Vec<&str> {
        self.tables.iter().map(|t| t.name.as_str()).collect()
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WorkloadDefaults {
    pub rate_per_s: f64,
    pub connections: u64,
    /// Rows (for `orders`: customers) written unpaced at the start.
    pub customers: u64,
    /// Percent per operation, same order as `operations`.
    pub mix: &'static [f64],
}

/// A source table: as the stdlib or a scenario's `table NAME < … >` declares it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TableSig {
    pub name: String,
    pub primary_key: Vec<String>,
    pub columns: Vec<ColumnSig>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub foreign_keys: Vec<ForeignKeySig>,
    /// The table's own `replica identity`, over the scenario's setting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_identity: Option<ReplicaIdentity>,
}

impl TableSig {
    #[must_use]
    pub fn column(&self, name: &str) -> Option<&ColumnSig> {
        self.columns.iter().find(|c| c.name == name)
    }

    /// Whether `column` is part of the primary key.
    #[must_use]
    pub fn is_key(&self, column: &str) -> bool {
        self.primary_key.iter().any(|k| k == column)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ColumnSig {
    pub name: String,
    /// Its type (in files: the DDL text, e.g. `numeric(10,2)`; what
    /// `widen` changes it to is [`ColumnType::widens_to`]).
    pub sql_type: ColumnType,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub not_null: bool,
    /// TOAST-sized values (text only): the generator writes several
    /// kilobytes that do not compress, so PostgreSQL stores them out of line.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub large: bool,
}

/// `foreign key (COLUMNS) references TABLE [on delete cascade]`: always to
/// the referenced table's primary key, in its order.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ForeignKeySig {
    pub columns: Vec<String>,
    pub references: String,
    pub cascade: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplicaIdentity {
    Default,
    Full,
}

#[derive(Debug, Clone, Copy)]
pub struct ConsumerSig {
    pub name: &'static str,
    pub summary: &'static str,
}

/// A component faults can strike.
#[derive(Debug, Clone, Copy)]
pub struct TargetSig {
    pub name: &'static str,
    /// A process lossproof can signal (kill, stop, pause, resume).
    pub process: bool,
    /// May be followed by a consumer name (`consumer careless`).
    pub takes_consumer: bool,
    /// The fault proxy stands in front of it: network faults reach it.
    pub link: bool,
    pub summary: &'static str,
}

#[derive(Debug, Clone, Copy)]
pub struct SettingSig {
    pub name: &'static str,
    pub kind: SettingKind,
    /// The default, written as in a `.lp` file.
    pub default: &'static str,
    pub summary: &'static str,
}

#[derive(Debug, Clone, Copy)]
pub enum SettingKind {
    Count { min: u64, max: u64 },
    Duration,
    Choice(&'static [&'static str]),
}

/// One piece of a compiled pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatternPart {
    Literal(&'static str),
    Param { name: &'static str, kind: ParamKind },
    Optional(Vec<PatternPart>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    Process,
    Target,
    /// A target with a network link through the fault proxy.
    Link,
    Table,
    Column,
    WidenableColumn,
    NewColumn,
    Topic,
    Count,
    Percent,
    Duration,
    Consumer,
}

impl ParamKind {
    fn parse(kind: &str) -> Option<Self> {
        Some(match kind {
            "process" => Self::Process,
            "target" => Self::Target,
            "link" => Self::Link,
            "table" => Self::Table,
            "column" => Self::Column,
            "widenable_column" => Self::WidenableColumn,
            "new_column" => Self::NewColumn,
            "topic" => Self::Topic,
            "count" => Self::Count,
            "percent" => Self::Percent,
            "duration" => Self::Duration,
            "consumer" => Self::Consumer,
            _ => return None,
        })
    }

    /// How the parameter is shown in usage lines.
    #[must_use]
    pub fn placeholder(self) -> &'static str {
        match self {
            Self::Process | Self::Target | Self::Link => "TARGET",
            Self::Table | Self::Topic => "TABLE",
            Self::Column | Self::WidenableColumn => "COLUMN",
            Self::NewColumn => "NEW_COLUMN",
            Self::Count => "N",
            Self::Percent => "N%",
            Self::Duration => "DURATION",
            Self::Consumer => "CONSUMER",
        }
    }
}

/// Compile a signature pattern. Patterns are written by lossproof's own
/// developers; a malformed one is a bug, caught by the stdlib's tests.
///
/// # Panics
/// On a malformed pattern.
#[must_use]
pub fn compile_pattern(pattern: &'static str) -> Vec<PatternPart> {
    let mut stack: Vec<Vec<PatternPart>> = vec![Vec::new()];
    for token in pattern.split_whitespace() {
        let mut token = token;
        while let Some(rest) = token.strip_prefix('[') {
            stack.push(Vec::new());
            token = rest;
        }
        let mut closes = 0;
        while let Some(rest) = token.strip_suffix(']') {
            closes += 1;
            token = rest;
        }
        if !token.is_empty() {
            let part = if let Some(param) =
                token.strip_prefix('{').and_then(|t| t.strip_suffix('}'))
            {
                let (name, kind) = param.split_once(':').unwrap_or((param, param));
                let kind = ParamKind::parse(kind)
                    .unwrap_or_else(|| panic!("unknown parameter kind `{kind}` in `{pattern}`"));
                PatternPart::Param { name, kind }
            } else {
                PatternPart::Literal(token)
            };
            stack.last_mut().expect("pattern stack").push(part);
        }
        for _ in 0..closes {
            let group = stack.pop().expect("balanced brackets");
            stack
                .last_mut()
                .unwrap_or_else(|| panic!("unbalanced `]` in `{pattern}`"))
                .push(PatternPart::Optional(group));
        }
    }
    assert!(stack.len() == 1, "unbalanced `[` in `{pattern}`");
    stack.pop().expect("pattern")
}

/// `alter table TABLE widen COLUMN`, for help texts.
#[must_use]
pub fn usage(parts: &[PatternPart]) -> String {
    parts
        .iter()
        .map(|part| match part {
            PatternPart::Literal(word) => (*word).to_owned(),
            PatternPart::Param { kind, .. } => kind.placeholder().to_owned(),
            PatternPart::Optional(group) => format!("[{}]", usage(group)),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The first word of a pattern (how a fault is recognised).
#[must_use]
pub fn first_word(pattern: &'static str) -> &'static str {
    pattern.split_whitespace().next().unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiles_optional_groups() {
        let parts = compile_pattern("redeliver from start [{times:count} times]");
        assert_eq!(usage(&parts), "redeliver from start [N times]");
        assert_eq!(
            parts[3],
            PatternPart::Optional(vec![
                PatternPart::Param {
                    name: "times",
                    kind: ParamKind::Count
                },
                PatternPart::Literal("times"),
            ])
        );
    }
}

/// Every word an editor should know, by class: the grammar's keywords plus
/// the vocabulary's words. Editors' keyword lists are generated from this
/// (`lossproof vocab --json > editors/vocabulary.json`), so a new fault
/// cannot be missing from an editor.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Words {
    pub keywords: Vec<String>,
    pub faults: Vec<String>,
    pub fault_words: Vec<String>,
    pub targets: Vec<String>,
    pub consumers: Vec<String>,
    /// The clauses of `consumer NAME command "…" …` declarations.
    pub consumer_clauses: Vec<String>,
    /// The words of `table NAME < … >` lines besides names and types.
    pub table_words: Vec<String>,
    /// The column types a declared table may use (their words).
    pub column_types: Vec<String>,
    pub workloads: Vec<String>,
    pub workload_params: Vec<String>,
    pub shorthands: Vec<String>,
    pub settings: Vec<String>,
    pub units: Vec<String>,
}

impl Words {
    #[must_use]
    pub fn of(vocab: &dyn Vocabulary) -> Self {
        fn push(list: &mut Vec<String>, word: &str) {
            if !list.iter().any(|w| w == word) {
                list.push(word.to_owned());
            }
        }
        fn literals(parts: &[PatternPart], out: &mut Vec<&'static str>) {
            for part in parts {
                match part {
                    PatternPart::Literal(word) => out.push(word),
                    PatternPart::Optional(group) => literals(group, out),
                    PatternPart::Param { .. } => {}
                }
            }
        }
        let keywords: Vec<String> = crate::parser::KEYWORDS
            .iter()
            .map(|k| (*k).to_owned())
            .collect();
        let targets: Vec<String> = vocab.targets().iter().map(|t| t.name.to_owned()).collect();
        let mut faults = Vec::new();
        for fault in vocab.faults() {
            push(&mut faults, first_word(fault.pattern));
        }
        let taken = |w: &str, extra: &[String]| {
            keywords.iter().chain(&targets).chain(extra).any(|k| k == w)
        };
        let mut fault_words = Vec::new();
        for fault in vocab.faults() {
            let mut words = Vec::new();
            literals(&compile_pattern(fault.pattern), &mut words);
            for word in words.into_iter().skip(1) {
                if !taken(word, &faults) {
                    push(&mut fault_words, word);
                }
            }
        }
        let mut shorthands = Vec::new();
        for shorthand in vocab.shorthands() {
            let mut words = Vec::new();
            literals(&compile_pattern(shorthand.pattern), &mut words);
            for word in words {
                if !taken(word, &fault_words) {
                    push(&mut shorthands, word);
                }
            }
        }
        let mut workload_params: Vec<String> =
            ["rate", "connections", "customers", "rows", "mix", "preload"]
                .iter()
                .map(|s| (*s).to_owned())
                .collect();
        for workload in vocab.workloads() {
            for op in workload.operations {
                push(&mut workload_params, op);
            }
        }
        Words {
            faults,
            fault_words,
            targets,
            consumers: vocab
                .consumers()
                .iter()
                .map(|c| c.name.to_owned())
                .collect(),
            consumer_clauses: crate::declared::CLAUSE_WORDS
                .iter()
                .map(|w| (*w).to_owned())
                .collect(),
            table_words: crate::tables::TABLE_WORDS
                .iter()
                .map(|w| (*w).to_owned())
                .collect(),
            column_types: crate::tables::type_words()
                .iter()
                .chain(&["precision"])
                .map(|w| (*w).to_owned())
                .collect(),
            workloads: vocab.workloads().iter().map(|w| w.name.clone()).collect(),
            workload_params,
            shorthands,
            settings: vocab.settings().iter().map(|s| s.name.to_owned()).collect(),
            units: ["ms", "s", "m", "h"]
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
            keywords,
        }
    }
}
