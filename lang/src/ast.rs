//! The syntax tree of one `.lp` file, as written (before analysis).
//!
//! Comments are kept as items so that the formatter can rewrite a file
//! without losing them.

use crate::span::{Span, Spanned};

#[derive(Debug, Clone, PartialEq)]
pub struct File {
    pub items: Vec<Item>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Scenario {
        name: Spanned<String>,
        span: Span,
    },
    Workload {
        name: Spanned<String>,
        params: Vec<Word>,
        span: Span,
    },
    Consumers {
        names: Vec<Spanned<String>>,
        span: Span,
    },
    /// `consumer NAME command "…" …`: a program of the team's own under test.
    Consumer {
        name: Spanned<String>,
        /// The clauses' words: `Word::Str` quoted, `Word::Ident` otherwise
        /// (which may hold `{placeholders}`).
        words: Vec<Word>,
        span: Span,
    },
    /// `table NAME < … >`: a source table of the scenario's own workload.
    Table(TableDecl),
    Set {
        name: Spanned<String>,
        value: Vec<Word>,
        span: Span,
    },
    Include {
        path: Spanned<String>,
        span: Span,
    },
    Fragment {
        name: Spanned<String>,
        body: Block,
        span: Span,
    },
    Load {
        duration: Quantity,
        body: Block,
        span: Span,
    },
    Quiet {
        duration: Quantity,
        body: Option<Block>,
        span: Span,
    },
    Drain {
        timeout: Quantity,
        span: Span,
    },
    Expect {
        words: Vec<Word>,
        span: Span,
    },
    Assert(Assert),
    /// A fault written outside any phase; the analyser says where it belongs.
    StrayAction(Action),
    Comment(Spanned<String>),
}

impl Item {
    #[must_use]
    pub fn span(&self) -> Span {
        match self {
            Item::Scenario { span, .. }
            | Item::Workload { span, .. }
            | Item::Consumers { span, .. }
            | Item::Consumer { span, .. }
            | Item::Set { span, .. }
            | Item::Include { span, .. }
            | Item::Fragment { span, .. }
            | Item::Load { span, .. }
            | Item::Quiet { span, .. }
            | Item::Drain { span, .. }
            | Item::Expect { span, .. } => *span,
            Item::Assert(assert) => assert.span,
            Item::Table(table) => table.span,
            Item::StrayAction(action) => action.span,
            Item::Comment(comment) => comment.span,
        }
    }
}

/// `table NAME < … >`, line by line as written; `lossproof_lang::tables`
/// reads the lines.
#[derive(Debug, Clone, PartialEq)]
pub struct TableDecl {
    pub name: Spanned<String>,
    pub lines: Vec<TableLine>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum TableLine {
    /// A column or a constraint: words and parenthesised lists.
    Words {
        tokens: Vec<TableToken>,
        span: Span,
    },
    Comment(Spanned<String>),
}

impl TableLine {
    #[must_use]
    pub fn span(&self) -> Span {
        match self {
            TableLine::Words { span, .. } => *span,
            TableLine::Comment(c) => c.span,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum TableToken {
    Word(Spanned<String>),
    /// `(a, b)` or a type's `(10,2)`.
    List {
        items: Vec<Spanned<String>>,
        span: Span,
    },
}

impl TableToken {
    #[must_use]
    pub fn span(&self) -> Span {
        match self {
            TableToken::Word(w) => w.span,
            TableToken::List { span, .. } => *span,
        }
    }

    #[must_use]
    pub fn word(&self) -> Option<&str> {
        match self {
            TableToken::Word(w) => Some(&w.value),
            TableToken::List { .. } => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Assert {
    pub name: Spanned<String>,
    pub expectation: Option<Spanned<Expectation>>,
    pub sql: Fence,
    pub span: Span,
}

/// What an assertion's query must return.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Expectation {
    /// One row, one boolean column, and it is true (the default).
    True,
    /// No rows at all.
    Empty,
    /// One row, one numeric column, compared with a number.
    Compare { op: CompareOp, value: f64 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum CompareOp {
    #[serde(rename = "=")]
    Eq,
    #[serde(rename = "!=")]
    Ne,
    #[serde(rename = "<")]
    Lt,
    #[serde(rename = "<=")]
    Le,
    #[serde(rename = ">")]
    Gt,
    #[serde(rename = ">=")]
    Ge,
}

impl CompareOp {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            CompareOp::Eq => "=",
            CompareOp::Ne => "!=",
            CompareOp::Lt => "<",
            CompareOp::Le => "<=",
            CompareOp::Gt => ">",
            CompareOp::Ge => ">=",
        }
    }
}

/// A fenced block of raw text (SQL).
#[derive(Debug, Clone, PartialEq)]
pub struct Fence {
    pub lang: Option<String>,
    /// The text between the fence markers, verbatim.
    pub body: Spanned<String>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    pub statements: Vec<Statement>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Statement {
    Action(Action),
    Window {
        from: Quantity,
        to: Quantity,
        body: Block,
        span: Span,
    },
    Use {
        name: Spanned<String>,
        span: Span,
    },
    Comment(Spanned<String>),
}

impl Statement {
    #[must_use]
    pub fn span(&self) -> Span {
        match self {
            Statement::Action(action) => action.span,
            Statement::Window { span, .. } | Statement::Use { span, .. } => *span,
            Statement::Comment(comment) => comment.span,
        }
    }
}

/// A fault (or other action) and when it happens, e.g.
/// `kill consumer every 2s±500ms`.
#[derive(Debug, Clone, PartialEq)]
pub struct Action {
    pub words: Vec<Word>,
    pub schedule: Option<Schedule>,
    pub span: Span,
}

impl Action {
    /// The words without the schedule, as written (single-spaced).
    #[must_use]
    pub fn text(&self) -> String {
        words_text(&self.words)
    }
}

#[must_use]
pub fn words_text(words: &[Word]) -> String {
    words.iter().map(Word::text).collect::<Vec<_>>().join(" ")
}

#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    pub timing: Option<Timing>,
    pub chance: Option<Quantity>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Timing {
    At(Quantity),
    Every {
        period: Quantity,
        jitter: Option<Quantity>,
    },
    Randomly {
        times: Quantity,
    },
}

/// One word of a statement: a name, a quantity or a string.
#[derive(Debug, Clone, PartialEq)]
pub enum Word {
    Ident(Spanned<String>),
    Quantity(Quantity),
    /// `2s±500ms`: only meaningful after `every`, kept so the analyser can
    /// say so.
    Jittered {
        base: Quantity,
        jitter: Quantity,
        span: Span,
    },
    Str(Spanned<String>),
}

impl Word {
    #[must_use]
    pub fn span(&self) -> Span {
        match self {
            Word::Ident(s) | Word::Str(s) => s.span,
            Word::Quantity(q) => q.span,
            Word::Jittered { span, .. } => *span,
        }
    }

    /// Canonical text of the word.
    #[must_use]
    pub fn text(&self) -> String {
        match self {
            Word::Ident(s) => s.value.clone(),
            Word::Quantity(q) => q.text(),
            Word::Jittered { base, jitter, .. } => format!("{}±{}", base.text(), jitter.text()),
            Word::Str(s) => quote(&s.value),
        }
    }

    #[must_use]
    pub fn as_ident(&self) -> Option<&str> {
        match self {
            Word::Ident(s) => Some(&s.value),
            _ => None,
        }
    }
}

/// A number with an optional unit, as written: `30s`, `500ms`, `30%`,
/// `200/s`, `3`.
#[derive(Debug, Clone, PartialEq)]
pub struct Quantity {
    /// The digits as written (`1.5`), so nothing is lost to floating point.
    pub number: String,
    pub unit: Option<String>,
    pub span: Span,
}

impl Quantity {
    #[must_use]
    pub fn text(&self) -> String {
        format!("{}{}", self.number, self.unit.as_deref().unwrap_or(""))
    }
}

/// Quote a string the way the grammar reads it back.
#[must_use]
pub fn quote(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
