//! `table NAME < … >`: a source table of a scenario's own workload, read
//! line by line into a [`TableSig`] (docs/language.md, "Your own tables").
//!
//! ```text
//! table accounts <
//!   tenant      text
//!   account_id  bigint
//!   profile     jsonb
//!   bio         text large          # TOAST-sized values
//!   primary key (tenant, account_id)
//!   replica identity full
//! >
//! table notes <
//!   note_id    bigint primary key
//!   tenant     text not null
//!   account_id bigint not null
//!   foreign key (tenant, account_id) references accounts on delete cascade
//! >
//! ```
//!
//! Every problem is a spanned `lp::check::table-declaration` diagnostic;
//! the tables come back only when there was none. The stdlib's `orders`
//! workload is declared the same way (`stdlib/orders.lp`).

use std::collections::{HashMap, HashSet};

use crate::ast::{TableDecl, TableLine, TableToken};
use crate::code::Code;
use crate::column_type::{ColumnType, TypeError};
use crate::diagnostic::Diagnostic;
use crate::span::{Span, Spanned};
use crate::suggest::{help_for, list};
use crate::vocabulary::{ColumnSig, ForeignKeySig, ReplicaIdentity, TableSig};

/// Every word a table declaration uses besides names and types (editors
/// highlight them; completion offers them).
pub const TABLE_WORDS: &[&str] = &[
    "primary",
    "key",
    "foreign",
    "references",
    "on",
    "delete",
    "cascade",
    "not",
    "null",
    "large",
    "replica",
    "identity",
    "full",
    "default",
];

/// Names lossproof itself creates in the source database.
const RESERVED_PREFIXES: &[&str] = &["lossproof_", "_lp_"];

/// What the help of a missing or unknown type lists.
fn types_help() -> String {
    let types: Vec<String> = ColumnType::EXAMPLES.iter().map(ColumnType::usage).collect();
    let types: Vec<&str> = types.iter().map(String::as_str).collect();
    format!(
        "types are {}, and an array of any of them (`text[]`)",
        list(&types)
    )
}

/// The first word of each column type, for "did you mean", completion and
/// the editors' word lists.
#[must_use]
pub fn type_words() -> Vec<&'static str> {
    ColumnType::EXAMPLES.iter().map(ColumnType::word).collect()
}

/// Whether a type word takes `(…)` arguments (`numeric(10,2)`, `varchar(40)`).
#[must_use]
pub fn takes_arguments(word: &str) -> bool {
    matches!(
        word,
        "numeric" | "decimal" | "varchar" | "char" | "character"
    )
}

/// Whether a sized type's size is one lossproof can create: a numeric's
/// precision 1..38 and scale up to it (Iceberg decimals have a fixed
/// scale), a varchar's length at least 1, a char's within PostgreSQL's.
fn size_in_range(column_type: &ColumnType) -> bool {
    match column_type {
        ColumnType::Numeric(Some((p, s))) => (1..=38).contains(p) && s <= p,
        ColumnType::Varchar(Some(n)) => *n >= 1,
        ColumnType::Char(n) => (1..=10_485_760).contains(n),
        ColumnType::Numeric(None) | ColumnType::Varchar(None) => false,
        ColumnType::SmallInt
        | ColumnType::Integer
        | ColumnType::BigInt
        | ColumnType::Real
        | ColumnType::DoublePrecision
        | ColumnType::Boolean
        | ColumnType::Text
        | ColumnType::Uuid
        | ColumnType::Date
        | ColumnType::Time
        | ColumnType::Timestamp
        | ColumnType::Timestamptz
        | ColumnType::Interval
        | ColumnType::Json
        | ColumnType::Jsonb
        | ColumnType::Bytea
        | ColumnType::Array(_) => true,
    }
}

/// Read every declaration; parents come before children in the result.
pub fn tables(decls: &[&TableDecl], diagnostics: &mut Vec<Diagnostic>) -> Vec<TableSig> {
    let errors_before = diagnostics.len();
    let mut read: Vec<(TableSig, &TableDecl, Vec<Span>)> = Vec::new();
    let mut seen: HashMap<&str, Span> = HashMap::new();
    for decl in decls {
        if let Some(first) = seen.insert(&decl.name.value, decl.name.span) {
            diagnostics.push(
                Code::Duplicate
                    .at(
                        decl.name.span,
                        format!("table `{}` is declared twice", decl.name.value),
                    )
                    .label("declared again")
                    .related(first, "first declared here")
                    .help("give each table one declaration"),
            );
            continue;
        }
        let mut reader = TableReader::new(decl, diagnostics);
        reader.read();
        if let Some(result) = reader.finish() {
            read.push((result.0, decl, result.1));
        }
    }
    let all: Vec<&TableSig> = read.iter().map(|(t, _, _)| t).collect();
    for (table, _, fk_spans) in &read {
        for (fk, span) in table.foreign_keys.iter().zip(fk_spans) {
            check_reference(table, fk, *span, &all, diagnostics);
        }
    }
    if diagnostics.len() > errors_before {
        return Vec::new();
    }
    order(read, diagnostics)
}

fn table_error(span: Span, message: impl Into<String>) -> Diagnostic {
    Code::TableDeclaration.at(span, message)
}

const EXAMPLE_COLUMN: &str = "e.g. `amount numeric(10,2) not null` or `primary key (tenant, id)`";

struct TableReader<'d, 'v> {
    decl: &'d TableDecl,
    diagnostics: &'v mut Vec<Diagnostic>,
    columns: Vec<(ColumnSig, Span)>,
    key: Option<(Vec<Spanned<String>>, Span)>,
    foreign_keys: Vec<(ForeignKeySig, Vec<Spanned<String>>, Span)>,
    replica: Option<(ReplicaIdentity, Span)>,
    failed: bool,
}

impl<'d, 'v> TableReader<'d, 'v> {
    fn new(decl: &'d TableDecl, diagnostics: &'v mut Vec<Diagnostic>) -> Self {
        Self {
            decl,
            diagnostics,
            columns: Vec::new(),
            key: None,
            foreign_keys: Vec::new(),
            replica: None,
            failed: false,
        }
    }

    fn error(&mut self, diagnostic: Diagnostic) {
        self.failed = true;
        self.diagnostics.push(diagnostic);
    }

    fn read(&mut self) {
        check_name(&self.decl.name, "table", self.diagnostics);
        for line in &self.decl.lines {
            if let TableLine::Words { tokens, span } = line {
                self.line(tokens, *span);
            }
        }
    }

    fn line(&mut self, tokens: &'d [TableToken], span: Span) {
        let mut words = Words {
            tokens,
            at: 0,
            end: span,
        };
        match tokens.first().and_then(TableToken::word) {
            Some("primary") => {
                words.at = 1;
                if self.expect(&mut words, &["key"]).is_some()
                    && let Some(columns) = self.column_list(&mut words)
                {
                    self.set_key(columns, span);
                }
            }
            Some("foreign") => {
                words.at = 1;
                if self.expect(&mut words, &["key"]).is_some()
                    && let Some(columns) = self.column_list(&mut words)
                {
                    self.foreign_key(&mut words, columns, span);
                }
            }
            Some("replica") => {
                words.at = 1;
                if self.expect(&mut words, &["identity"]).is_some()
                    && let Some((word, at)) = self.expect(&mut words, &["full", "default"])
                {
                    let identity = if word == "full" {
                        ReplicaIdentity::Full
                    } else {
                        ReplicaIdentity::Default
                    };
                    if let Some((_, first)) = self.replica {
                        self.error(crate::analyzer::duplicate("`replica identity`", at, first));
                    } else {
                        self.replica = Some((identity, span));
                    }
                }
            }
            Some(_) => self.column(&mut words),
            None => self.error(
                table_error(
                    span,
                    "a table line starts with a column name or a constraint",
                )
                .label("expected a name")
                .help(EXAMPLE_COLUMN),
            ),
        }
        if !self.failed
            && let Some(extra) = tokens.get(words.at)
        {
            self.error(
                table_error(extra.span(), "unexpected words at the end of the line")
                    .label("not understood")
                    .help(EXAMPLE_COLUMN),
            );
        }
    }

    /// The next token must be one of `choices`.
    fn expect(&mut self, words: &mut Words<'d>, choices: &[&str]) -> Option<(&'d str, Span)> {
        let token = words.next();
        match token {
            Some(TableToken::Word(w)) if choices.contains(&w.value.as_str()) => {
                Some((w.value.as_str(), w.span))
            }
            _ => {
                let (span, found) = match token {
                    Some(t) => (t.span(), t.word().unwrap_or("a list").to_owned()),
                    None => (words.end_span(), "the end of the line".to_owned()),
                };
                self.error(
                    table_error(span, format!("expected {}, found {found}", list(choices)))
                        .label("here")
                        .help(help_for(&found, choices, "expected")),
                );
                None
            }
        }
    }

    fn column_list(&mut self, words: &mut Words<'d>) -> Option<Vec<Spanned<String>>> {
        match words.next() {
            Some(TableToken::List { items, .. }) => Some(items.clone()),
            other => {
                let span = other.map_or_else(|| words.end_span(), TableToken::span);
                self.error(
                    table_error(span, "expected the columns in parentheses")
                        .label("expected `(…)`")
                        .help("e.g. `primary key (tenant, account_id)`"),
                );
                None
            }
        }
    }

    fn set_key(&mut self, columns: Vec<Spanned<String>>, span: Span) {
        if let Some((_, first)) = &self.key {
            let first = *first;
            self.error(crate::analyzer::duplicate("primary key", span, first));
        } else {
            self.key = Some((columns, span));
        }
    }

    fn foreign_key(&mut self, words: &mut Words<'d>, columns: Vec<Spanned<String>>, span: Span) {
        if self.expect(words, &["references"]).is_none() {
            return;
        }
        let Some(TableToken::Word(parent)) = words.next() else {
            self.error(
                table_error(
                    words.end_span(),
                    "`references` needs the parent table's name",
                )
                .label("expected a table")
                .help("e.g. `references accounts on delete cascade`"),
            );
            return;
        };
        let cascade = match words.peek().and_then(TableToken::word) {
            Some("on") => {
                words.at += 1;
                if self.expect(words, &["delete"]).is_none()
                    || self.expect(words, &["cascade"]).is_none()
                {
                    return;
                }
                true
            }
            _ => false,
        };
        self.foreign_keys.push((
            ForeignKeySig {
                columns: columns.iter().map(|c| c.value.clone()).collect(),
                references: parent.value.clone(),
                cascade,
            },
            columns,
            span,
        ));
    }

    fn column(&mut self, words: &mut Words<'d>) {
        let Some(TableToken::Word(name)) = words.next() else {
            return;
        };
        if check_name(name, "column", self.diagnostics) {
            self.failed = true;
        }
        let Some(sql_type) = self.column_type(words) else {
            return;
        };
        let mut column = ColumnSig {
            name: name.value.clone(),
            sql_type,
            not_null: false,
            large: false,
        };
        while let Some(token) = words.next() {
            match token.word() {
                Some("primary") => {
                    if self.expect(words, &["key"]).is_some() {
                        self.set_key(vec![name.clone()], token.span());
                    }
                }
                Some("not") => {
                    if self.expect(words, &["null"]).is_some() {
                        column.not_null = true;
                    }
                }
                Some("large") => {
                    if column.sql_type == ColumnType::Text {
                        column.large = true;
                    } else {
                        self.error(
                            table_error(token.span(), "only a `text` column can be `large`")
                                .label(format!("`{}` is {}", name.value, column.sql_type))
                                .help("`large` makes the generator write TOAST-sized text"),
                        );
                    }
                }
                Some("references") => {
                    words.at -= 1;
                    self.foreign_key(words, vec![name.clone()], token.span());
                }
                _ => {
                    let found = token.word().unwrap_or("a list").to_owned();
                    self.error(
                        table_error(token.span(), format!("`{found}` is not a column option"))
                            .label("not understood")
                            .help(help_for(
                                &found,
                                &["primary", "not", "large", "references"],
                                "a column may be followed by",
                            )),
                    );
                    return;
                }
            }
            if self.failed {
                return;
            }
        }
        if let Some((_, first)) = self.columns.iter().find(|(c, _)| c.name == column.name) {
            let first = *first;
            self.error(crate::analyzer::duplicate(
                &format!("column `{}`", name.value),
                name.span,
                first,
            ));
            return;
        }
        self.columns.push((column, name.span));
    }

    /// The column's type after its name.
    fn column_type(&mut self, words: &mut Words<'d>) -> Option<ColumnType> {
        let Some(TableToken::Word(word)) = words.next() else {
            self.error(
                table_error(words.end_span(), "a column needs a type")
                    .label("expected a type")
                    .help(types_help()),
            );
            return None;
        };
        let scalar = self.scalar_type(word, words)?;
        match words.peek() {
            Some(TableToken::Word(w)) if w.value == "[]" => {
                words.at += 1;
                if let Some(TableToken::Word(again)) = words.peek()
                    && again.value == "[]"
                {
                    self.error(
                        table_error(again.span, "an array type takes one `[]`")
                            .label("a second `[]`")
                            .help(
                                "PostgreSQL's arrays of any dimension are one type: write `text[]`",
                            ),
                    );
                    return None;
                }
                Some(ColumnType::Array(Box::new(scalar)))
            }
            _ => Some(scalar),
        }
    }

    /// A column's type without its array suffix, from its first word on:
    /// its words and size as written, read by [`ColumnType::parse`].
    fn scalar_type(
        &mut self,
        word: &'d Spanned<String>,
        words: &mut Words<'d>,
    ) -> Option<ColumnType> {
        let mut text = word.value.clone();
        if word.value == "double" {
            self.expect(words, &["precision"])?;
            text.push_str(" precision");
        }
        let sized = takes_arguments(&word.value);
        let mut size_given = false;
        if sized && let Some(TableToken::List { items, .. }) = words.peek() {
            words.at += 1;
            size_given = true;
            let args: Vec<&str> = items.iter().map(|i| i.value.as_str()).collect();
            text = format!("{text}({})", args.join(","));
        }
        match ColumnType::parse(&text) {
            Ok(column_type) if size_given == sized && size_in_range(&column_type) => {
                Some(column_type)
            }
            Ok(_) | Err(TypeError::BadSize(_)) if sized => {
                let help = if word.value == "varchar" {
                    "give its length, e.g. `varchar(40)`"
                } else if matches!(word.value.as_str(), "char" | "character") {
                    "give its length, e.g. `char(8)`: values are padded with spaces to it"
                } else {
                    "give precision 1..38 and scale 0..precision, e.g. `numeric(10,2)`: Iceberg decimals have a fixed scale"
                };
                self.error(
                    table_error(word.span, format!("`{}` needs its size", word.value))
                        .label("size missing or out of range")
                        .help(help),
                );
                None
            }
            Ok(_) | Err(_) => {
                self.error(
                    table_error(
                        word.span,
                        format!(
                            "lossproof cannot generate or compare `{}` columns",
                            word.value
                        ),
                    )
                    .label("unsupported type")
                    .help(
                        match crate::suggest::did_you_mean(&word.value, type_words()) {
                            Some(best) => format!("did you mean `{best}`?"),
                            None => types_help(),
                        },
                    ),
                );
                None
            }
        }
    }

    fn finish(mut self) -> Option<(TableSig, Vec<Span>)> {
        let decl = self.decl;
        if self.columns.is_empty() && !self.failed {
            self.error(
                table_error(
                    decl.span,
                    format!("table `{}` has no columns", decl.name.value),
                )
                .label("empty table")
                .help(EXAMPLE_COLUMN),
            );
        }
        let key = if let Some((key, _)) = self.key.take() {
            key
        } else {
            {
                if !self.failed {
                    self.error(
                        table_error(
                            decl.name.span,
                            format!("table `{}` has no primary key", decl.name.value),
                        )
                        .label("no primary key")
                        .help("add `primary key (COLUMN, …)`: the reconciler compares rows by it"),
                    );
                }
                Vec::new()
            }
        };
        let mut in_key = HashSet::new();
        for column in &key {
            if !in_key.insert(column.value.as_str()) {
                self.error(
                    table_error(
                        column.span,
                        format!("`{}` is twice in the key", column.value),
                    )
                    .label("repeated")
                    .help("name each key column once"),
                );
                continue;
            }
            match self.columns.iter().find(|(c, _)| c.name == column.value) {
                None => self.unknown_column(column),
                Some((c, _)) => {
                    if !c.sql_type.can_be_key() {
                        let message =
                            format!("a key column cannot be {} (`{}`)", c.sql_type, column.value);
                        self.error(
                            table_error(column.span, message)
                                .label("not a key type")
                                .help(format!("key columns are {}", key_types())),
                        );
                    }
                }
            }
        }
        let unknown: Vec<Spanned<String>> = self
            .foreign_keys
            .iter()
            .flat_map(|(_, columns, _)| columns)
            .filter(|c| {
                !self
                    .columns
                    .iter()
                    .any(|(column, _)| column.name == c.value)
            })
            .cloned()
            .collect();
        for column in &unknown {
            self.unknown_column(column);
        }
        let fk_spans = self.foreign_keys.iter().map(|(_, _, span)| *span).collect();
        if self.failed {
            return None;
        }
        Some((
            TableSig {
                name: decl.name.value.clone(),
                primary_key: key.into_iter().map(|k| k.value).collect(),
                columns: self.columns.into_iter().map(|(c, _)| c).collect(),
                foreign_keys: self.foreign_keys.into_iter().map(|(f, _, _)| f).collect(),
                replica_identity: self.replica.map(|(r, _)| r),
            },
            fk_spans,
        ))
    }

    fn unknown_column(&mut self, column: &Spanned<String>) {
        let names: Vec<&str> = self.columns.iter().map(|(c, _)| c.name.as_str()).collect();
        let help = help_for(&column.value, &names, "its columns are");
        let message = format!(
            "table `{}` has no column `{}`",
            self.decl.name.value, column.value
        );
        self.error(
            table_error(column.span, message)
                .label("no such column")
                .help(help),
        );
    }
}

/// A line's tokens, read left to right.
struct Words<'d> {
    tokens: &'d [TableToken],
    at: usize,
    end: Span,
}

impl<'d> Words<'d> {
    fn next(&mut self) -> Option<&'d TableToken> {
        let token = self.tokens.get(self.at);
        self.at += 1;
        token
    }

    fn peek(&self) -> Option<&'d TableToken> {
        self.tokens.get(self.at)
    }

    /// Where "the end of the line" is, for "expected … here".
    fn end_span(&self) -> Span {
        Span::new(self.end.source, self.end.end, self.end.end)
    }
}

/// The types a key column may have, for its help.
fn key_types() -> String {
    let types: Vec<String> = ColumnType::EXAMPLES
        .iter()
        .filter(|t| t.can_be_key())
        .map(ColumnType::usage)
        .collect();
    let types: Vec<&str> = types.iter().map(String::as_str).collect();
    list(&types)
}

/// Names become SQL identifiers and Iceberg names unquoted: lower case,
/// letters, digits and `_`, not lossproof's own. True when it is not one.
fn check_name(name: &Spanned<String>, what: &str, diagnostics: &mut Vec<Diagnostic>) -> bool {
    let valid = name
        .value
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    let reserved = RESERVED_PREFIXES
        .iter()
        .find(|p| name.value.starts_with(*p));
    let problem = if valid {
        reserved.map(|p| format!("`{p}…` names are lossproof's own"))
    } else {
        Some(format!(
            "a {what} name is written in lower case with letters, digits and `_`"
        ))
    };
    if let Some(help) = problem {
        diagnostics.push(
            table_error(name.span, format!("`{}` cannot name a {what}", name.value))
                .label("not a usable name")
                .help(help),
        );
        return true;
    }
    false
}

/// A foreign key names a declared table, and as many columns of the same
/// types as that table's primary key.
fn check_reference(
    table: &TableSig,
    fk: &ForeignKeySig,
    span: Span,
    all: &[&TableSig],
    diagnostics: &mut Vec<Diagnostic>,
) {
    let Some(parent) = all.iter().find(|t| t.name == fk.references) else {
        let names: Vec<&str> = all.iter().map(|t| t.name.as_str()).collect();
        diagnostics.push(
            table_error(span, format!("no declared table `{}`", fk.references))
                .label("unknown table")
                .help(help_for(&fk.references, &names, "declared tables are")),
        );
        return;
    };
    if parent.name == table.name {
        diagnostics.push(
            table_error(span, "a table that references itself is not supported yet")
                .label("self-reference")
                .help(
                    "the generator writes parents before children; make the parent its own table",
                ),
        );
        return;
    }
    let types = |t: &TableSig, columns: &[String]| -> Vec<String> {
        columns
            .iter()
            .filter_map(|c| t.column(c).map(|c| c.sql_type.to_string()))
            .collect()
    };
    let ours = types(table, &fk.columns);
    let theirs = types(parent, &parent.primary_key);
    if ours != theirs {
        diagnostics.push(
            table_error(
                span,
                format!(
                    "the foreign key's columns ({}) do not match `{}`'s primary key ({})",
                    ours.join(", "),
                    parent.name,
                    theirs.join(", ")
                ),
            )
            .label("columns and types must match the key")
            .help(format!(
                "a foreign key points at the parent's primary key ({}), column for column",
                parent.primary_key.join(", ")
            )),
        );
    }
}

/// Parents before children; a cycle is an error at one of its keys.
fn order(
    read: Vec<(TableSig, &TableDecl, Vec<Span>)>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<TableSig> {
    let mut left = read;
    let mut ordered: Vec<TableSig> = Vec::new();
    while !left.is_empty() {
        let ready = left.iter().position(|(t, _, _)| {
            t.foreign_keys
                .iter()
                .all(|fk| ordered.iter().any(|o| o.name == fk.references))
        });
        let Some(i) = ready else {
            let (table, decl, spans) = &left[0];
            diagnostics.push(
                table_error(
                    spans.first().copied().unwrap_or(decl.name.span),
                    format!("the foreign keys of `{}` form a cycle", table.name),
                )
                .label("part of a cycle")
                .help("the generator inserts parents before children: keep foreign keys pointing one way"),
            );
            return Vec::new();
        };
        ordered.push(left.remove(i).0);
    }
    ordered
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::Item;
    use crate::parser::Parser;

    fn read(text: &str) -> Result<Vec<TableSig>, Vec<String>> {
        let parsed = Parser::parse(text, 0);
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
        let decls: Vec<&TableDecl> = parsed
            .file
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Table(t) => Some(t),
                _ => None,
            })
            .collect();
        let mut diagnostics = Vec::new();
        let tables = tables(&decls, &mut diagnostics);
        if diagnostics.is_empty() {
            Ok(tables)
        } else {
            Err(diagnostics.into_iter().map(|d| d.message).collect())
        }
    }

    #[test]
    fn a_declaration_reads_into_tables_parents_first() {
        let tables = read(
            "table notes <\n  note_id bigint primary key\n  tenant text not null\n  account_id bigint\n  body text large\n  foreign key (tenant, account_id) references accounts on delete cascade\n>\n\
             table accounts <\n  tenant text\n  account_id bigint\n  profile jsonb\n  amount numeric(10,2)\n  score double precision\n  primary key (tenant, account_id)\n  replica identity full\n>\n",
        )
        .unwrap();
        assert_eq!(tables[0].name, "accounts");
        assert_eq!(tables[0].primary_key, ["tenant", "account_id"]);
        assert_eq!(tables[0].replica_identity, Some(ReplicaIdentity::Full));
        assert_eq!(
            tables[0].column("amount").unwrap().sql_type.widens_to(),
            Some(ColumnType::Numeric(Some((14, 2))))
        );
        assert_eq!(
            tables[0].column("score").unwrap().sql_type,
            ColumnType::DoublePrecision
        );
        let notes = &tables[1];
        assert_eq!(notes.primary_key, ["note_id"]);
        assert!(notes.column("tenant").unwrap().not_null);
        assert!(notes.column("body").unwrap().large);
        assert_eq!(
            notes.foreign_keys,
            [ForeignKeySig {
                columns: vec!["tenant".into(), "account_id".into()],
                references: "accounts".into(),
                cascade: true
            }]
        );
    }

    #[test]
    fn mistakes_are_named() {
        let errors = read("table t <\n  id bigint\n  x geometry\n>\n").unwrap_err();
        assert!(
            errors[0].contains("cannot generate or compare `geometry`"),
            "{errors:?}"
        );
        let errors = read("table t <\n  id bigint\n>\n").unwrap_err();
        assert!(errors[0].contains("has no primary key"), "{errors:?}");
        let errors = read("table t <\n  id bigint primary key\n  p bigint references parent\n>\n")
            .unwrap_err();
        assert!(
            errors[0].contains("no declared table `parent`"),
            "{errors:?}"
        );
        let errors = read("table a <\n  id bigint primary key\n  b bigint references b\n>\ntable b <\n  id bigint primary key\n  a bigint references a\n>\n").unwrap_err();
        assert!(errors[0].contains("form a cycle"), "{errors:?}");
        let errors = read("table t <\n  id numeric(10,2) primary key\n>\n").unwrap_err();
        assert!(
            errors[0].contains("a key column cannot be numeric(10,2)"),
            "{errors:?}"
        );
        for (line, error) in [
            (
                "id varchar(8)[] primary key",
                "a key column cannot be varchar(8)[]",
            ),
            (
                "id bigint primary key\n  x int[][]",
                "an array type takes one `[]`",
            ),
            (
                "id bigint primary key\n  x text[] large",
                "only a `text` column can be `large`",
            ),
            (
                "id bigint primary key\n  x geometry[]",
                "cannot generate or compare `geometry`",
            ),
        ] {
            let errors = read(&format!("table t <\n  {line}\n>\n")).unwrap_err();
            assert!(errors[0].contains(error), "{line}: {errors:?}");
        }
    }

    /// `TYPE[]` is an array of any column type, written as the DDL writes it.
    #[test]
    fn array_types_read_as_the_ddl_writes_them() {
        let tables = read(
            "table t <\n  id bigint primary key\n  tags text[] not null\n  cents numeric(12,2)[]\n  scores double precision[]\n  ids int4[]\n>\n",
        )
        .unwrap();
        let types: Vec<String> = tables[0]
            .columns
            .iter()
            .map(|c| c.sql_type.to_string())
            .collect();
        assert_eq!(
            types,
            [
                "bigint",
                "text[]",
                "numeric(12,2)[]",
                "double precision[]",
                "integer[]"
            ]
        );
        assert!(tables[0].column("tags").unwrap().not_null);
        assert_eq!(
            tables[0].column("cents").unwrap().sql_type.widens_to(),
            None
        );
    }
}
