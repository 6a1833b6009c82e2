//! The seeded generator every declared schema gets (`table NAME < … >`):
//! valid inserts, updates, deletes and cascading deletes for any tables
//! the language accepts, deterministic per seed and connection.
//!
//! Like the orders generator, each connection draws from its own ChaCha
//! stream and owns the rows it inserted (fresh keys come from its own key
//! space: `c+1, c+1+C, …`), so its operations never depend on how the
//! connections interleave, and a child always references a parent its own
//! connection wrote and has not deleted.
//!
//! The operation kinds, as a workload's `mix` names them:
//!
//! | kind | what it does |
//! |---|---|
//! | `insert` | one row of a table whose parents all have a live row (roots first) |
//! | `update` | some non-key, non-foreign-key columns of one live row; a `large` column only one update in five, so most updates leave the TOAST-sized value untouched |
//! | `delete` | one row of a table no other table references |
//! | `cascade` | one row of a table others reference `on delete cascade`: its children (and theirs) go with it |
//!
//! A kind with nothing to act on falls back to an insert. Values by type:
//! integers and numerics within their range, doubles exact in binary,
//! text with the occasional empty string and non-ASCII letters, `large`
//! text 4,000 random characters (pglz cannot shrink them, so PostgreSQL
//! stores them out of line), uuids, jsonb objects, timestamps on the
//! workload's clock; a nullable column is NULL one time in eight.
//!
//! One value in six is an EDGE of its type instead ([`edges`]): integer
//! extremes, numerics at full precision, `NaN`, infinities and `-0` for
//! floats, dates and timestamps before 1970 and after 2038, midnight and
//! the last microsecond of a day, emoji, combining characters, control
//! characters, quotes and long text, empty bytea and JSON with unsorted
//! keys and `2.50`. Edges come from a ChaCha stream of their own (same
//! seed and connection), so every seed's operations, keys and ordinary
//! values are the same with or without them.

use std::fmt;
use std::fmt::Write as _;

use lossproof_lang::ColumnType;
use lossproof_lang::vocabulary::TableSig;
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{RngCore as _, SeedableRng as _};

use super::generator::Draws;

/// One value in this many is an edge of its type.
const EDGE_ONE_IN: u64 = 6;

/// The workload's epoch (2026-01-01T00:00:00Z) in Unix milliseconds.
const EPOCH_MS: i64 = 1_767_225_600_000;

/// Characters of a `large` text: random over 62 symbols, incompressible.
const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const LARGE_CHARS: usize = 4_000;
const WORDS: [&str; 8] = [
    "alpha", "bravo", "café", "delta", "écho", "foxtrot", "golf ☕", "hotel",
];

/// One intended operation on a declared table. Values are SQL text (cast
/// to the column's type when written); `None` is NULL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowOp {
    Insert {
        table: usize,
        values: Vec<(String, Option<String>)>,
    },
    Update {
        table: usize,
        key: Vec<(String, String)>,
        set: Vec<(String, Option<String>)>,
    },
    /// `cascade`: a row others reference; the database deletes its children.
    Delete {
        table: usize,
        key: Vec<(String, String)>,
        cascade: bool,
    },
}

impl RowOp {
    /// The kind, as the workload's `mix` names it.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            RowOp::Insert { .. } => "insert",
            RowOp::Update { .. } => "update",
            RowOp::Delete { cascade: false, .. } => "delete",
            RowOp::Delete { cascade: true, .. } => "cascade",
        }
    }

    /// The statement and its parameters, every value cast from text to its
    /// column's type (names are checked identifiers: `lossproof_lang::tables`).
    #[must_use]
    pub fn sql(&self, tables: &[TableSig]) -> (String, Vec<Option<String>>) {
        let type_of = |t: &TableSig, c: &str| {
            t.column(c)
                .map_or_else(|| "text".to_owned(), |c| c.sql_type.to_string())
        };
        let mut params: Vec<Option<String>> = Vec::new();
        let mut param = |t: &TableSig, column: &str, value: Option<String>| {
            params.push(value);
            format!("${}::text::{}", params.len(), type_of(t, column))
        };
        let sql = match self {
            RowOp::Insert { table, values } => {
                let t = &tables[*table];
                let names: Vec<&str> = values.iter().map(|(c, _)| c.as_str()).collect();
                let placeholders: Vec<String> =
                    values.iter().map(|(c, v)| param(t, c, v.clone())).collect();
                format!(
                    "INSERT INTO {} ({}) VALUES ({})",
                    t.name,
                    names.join(", "),
                    placeholders.join(", ")
                )
            }
            RowOp::Update { table, key, set } => {
                let t = &tables[*table];
                let set: Vec<String> = set
                    .iter()
                    .map(|(c, v)| format!("{c} = {}", param(t, c, v.clone())))
                    .collect();
                let filter: Vec<String> = key
                    .iter()
                    .map(|(c, v)| format!("{c} = {}", param(t, c, Some(v.clone()))))
                    .collect();
                format!(
                    "UPDATE {} SET {} WHERE {}",
                    t.name,
                    set.join(", "),
                    filter.join(" AND ")
                )
            }
            RowOp::Delete { table, key, .. } => {
                let t = &tables[*table];
                let filter: Vec<String> = key
                    .iter()
                    .map(|(c, v)| format!("{c} = {}", param(t, c, Some(v.clone()))))
                    .collect();
                format!("DELETE FROM {} WHERE {}", t.name, filter.join(" AND "))
            }
        };
        (sql, params)
    }
}

/// Canonical text of an operation: what the digest is computed over.
impl fmt::Display for RowOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |values: &[(String, Option<String>)]| {
            values
                .iter()
                .map(|(c, v)| format!("{c}={v:?}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let key = |key: &[(String, String)]| {
            key.iter()
                .map(|(c, v)| format!("{c}={v:?}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        match self {
            RowOp::Insert { table, values } => write!(f, "insert #{table} {}", show(values)),
            RowOp::Update { table, key: k, set } => {
                write!(f, "update #{table} {} set {}", key(k), show(set))
            }
            RowOp::Delete {
                table,
                key: k,
                cascade,
            } => {
                write!(f, "delete #{table} {} cascade={cascade}", key(k))
            }
        }
    }
}

/// A row this connection wrote and has not deleted: its key and foreign-key
/// columns, as written.
#[derive(Debug, Clone)]
struct LiveRow {
    values: Vec<(String, String)>,
}

impl LiveRow {
    fn get(&self, column: &str) -> Option<&str> {
        self.values
            .iter()
            .find(|(c, _)| c == column)
            .map(|(_, v)| v.as_str())
    }
}

/// One connection's generator over declared tables.
pub struct TableGenerator {
    draws: Draws,
    /// Whether, and which, edge replaces a value: a stream of its own.
    edges: Box<ChaCha8Rng>,
    tables: std::sync::Arc<Vec<TableSig>>,
    /// Per table, the rows this connection owns.
    live: Vec<Vec<LiveRow>>,
}

impl TableGenerator {
    /// `tables` parents first (as `lossproof_lang::tables` orders them);
    /// `mix` in percent for insert, update, delete, cascade.
    #[must_use]
    pub fn new(
        tables: std::sync::Arc<Vec<TableSig>>,
        seed: u64,
        connection: u64,
        connections: u64,
        mix: [f64; 4],
    ) -> Self {
        let mut edges = ChaCha8Rng::seed_from_u64(seed);
        edges.set_stream(connection + (1 << 32));
        Self {
            draws: Draws::new(seed, connection, connections, mix),
            edges: Box::new(edges),
            live: vec![Vec::new(); tables.len()],
            tables,
        }
    }

    fn below(&mut self, n: u64) -> u64 {
        self.draws.below(n)
    }

    fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }

    /// The next operation.
    pub fn next_op(&mut self) -> RowOp {
        let op = match self.draws.kind() {
            1 => self.update(),
            2 => self.delete(false),
            3 => self.delete(true),
            _ => None,
        };
        op.unwrap_or_else(|| self.insert())
    }

    /// One row of the workload's start (`rows N`): an insert.
    pub fn initial_row(&mut self) -> RowOp {
        self.insert()
    }

    fn pick<T>(&mut self, items: &[T]) -> Option<usize> {
        (!items.is_empty()).then(|| usize::try_from(self.below(items.len() as u64)).expect("index"))
    }

    fn insert(&mut self) -> RowOp {
        self.draws.tick();
        let tables = self.tables.clone();
        let insertable: Vec<usize> = (0..tables.len())
            .filter(|t| {
                tables[*t].foreign_keys.iter().all(|fk| {
                    tables
                        .iter()
                        .position(|p| p.name == fk.references)
                        .is_some_and(|p| !self.live[p].is_empty())
                })
            })
            .collect();
        let table = insertable[self
            .pick(&insertable)
            .expect("a root table is always insertable")];
        self.insert_into(table)
    }

    fn insert_into(&mut self, table: usize) -> RowOp {
        let tables = self.tables.clone();
        let sig = &tables[table];
        let mut values: Vec<(String, Option<String>)> = Vec::new();
        // Foreign keys first: a live parent's key.
        for fk in &sig.foreign_keys {
            let parent_index = tables
                .iter()
                .position(|p| p.name == fk.references)
                .expect("checked above");
            let row = self
                .pick(&self.live[parent_index].clone())
                .expect("checked above");
            let parent_row = self.live[parent_index][row].clone();
            for (column, parent_column) in fk.columns.iter().zip(&tables[parent_index].primary_key)
            {
                if !values.iter().any(|(c, _)| c == column) {
                    values.push((
                        column.clone(),
                        parent_row.get(parent_column).map(str::to_owned),
                    ));
                }
            }
        }
        // The key columns no foreign key set: the last one unique to this
        // row, the ones before it from a small domain (a tenant, a region).
        let fresh: Vec<&String> = sig
            .primary_key
            .iter()
            .filter(|k| !values.iter().any(|(c, _)| c == *k))
            .collect();
        let n = self.draws.key();
        for (i, column) in fresh.iter().enumerate() {
            let sql_type = &sig.column(column).expect("a declared key column").sql_type;
            let value = if i + 1 == fresh.len() { n } else { n % 5 };
            values.push(((*column).clone(), Some(key_value(sql_type, value))));
        }
        let key: Vec<(String, String)> = sig
            .primary_key
            .iter()
            .map(|k| {
                let v = values
                    .iter()
                    .find(|(c, _)| c == k)
                    .and_then(|(_, v)| v.clone());
                (k.clone(), v.unwrap_or_default())
            })
            .collect();
        if fresh.is_empty()
            && self.live[table]
                .iter()
                .any(|r| key.iter().all(|(c, v)| r.get(c) == Some(v)))
        {
            // A key made only of a parent's key, and that parent has its
            // row already: write a root row instead (there is always one).
            let root = tables
                .iter()
                .position(|t| t.foreign_keys.is_empty())
                .expect("a cycle-free schema has a root");
            return self.insert_into(root);
        }
        for column in &sig.columns {
            if values.iter().any(|(c, _)| *c == column.name) {
                continue;
            }
            let value = if !column.not_null && self.chance(8) {
                None
            } else {
                Some(self.value(&column.sql_type, column.large))
            };
            values.push((column.name.clone(), value));
        }
        let mut kept = key;
        for fk in &sig.foreign_keys {
            for column in &fk.columns {
                if !kept.iter().any(|(c, _)| c == column)
                    && let Some((_, Some(v))) = values.iter().find(|(c, _)| c == column)
                {
                    kept.push((column.clone(), v.clone()));
                }
            }
        }
        self.live[table].push(LiveRow { values: kept });
        RowOp::Insert { table, values }
    }

    fn update(&mut self) -> Option<RowOp> {
        let tables = self.tables.clone();
        let candidates: Vec<usize> = (0..tables.len())
            .filter(|t| !self.live[*t].is_empty() && !updatable(&tables[*t]).is_empty())
            .collect();
        let table = candidates[self.pick(&candidates)?];
        let row = self.pick(&self.live[table].clone())?;
        self.draws.tick();
        let sig = &tables[table];
        let columns = updatable(sig);
        let mut set = Vec::new();
        for column in &columns {
            let chosen = if column.large {
                self.chance(5)
            } else {
                self.chance(2)
            };
            if chosen {
                let value = if !column.not_null && self.chance(8) {
                    None
                } else {
                    Some(self.value(&column.sql_type, column.large))
                };
                set.push((column.name.clone(), value));
            }
        }
        if set
            .iter()
            .all(|(c, _)| sig.column(c).is_some_and(|c| c.large))
        {
            // At least one ordinary column changes, so most updates of a
            // table with a large column leave that column untouched.
            if let Some(column) = columns.iter().find(|c| !c.large) {
                set.push((
                    column.name.clone(),
                    Some(self.value(&column.sql_type, false)),
                ));
            }
        }
        if set.is_empty() {
            let column = columns[0];
            set.push((
                column.name.clone(),
                Some(self.value(&column.sql_type, column.large)),
            ));
        }
        let key = key_of(sig, &self.live[table][row]);
        Some(RowOp::Update { table, key, set })
    }

    /// `cascade`: a row of a table others reference on delete cascade;
    /// else a row of a table nothing references.
    fn delete(&mut self, cascade: bool) -> Option<RowOp> {
        let tables = self.tables.clone();
        let candidates: Vec<usize> = (0..tables.len())
            .filter(|t| !self.live[*t].is_empty())
            .filter(|t| {
                let children: Vec<_> = tables
                    .iter()
                    .flat_map(|c| &c.foreign_keys)
                    .filter(|fk| fk.references == tables[*t].name)
                    .collect();
                if cascade {
                    !children.is_empty() && children.iter().all(|fk| fk.cascade)
                } else {
                    children.is_empty()
                }
            })
            .collect();
        let table = candidates[self.pick(&candidates)?];
        let row = self.pick(&self.live[table].clone())?;
        let removed = self.live[table].remove(row);
        let key = key_of(&tables[table], &removed);
        self.forget_children(table, &removed);
        Some(RowOp::Delete {
            table,
            key,
            cascade,
        })
    }

    /// The database deletes a row's children on cascade: so does the model.
    fn forget_children(&mut self, table: usize, row: &LiveRow) {
        let tables = self.tables.clone();
        let parent = &tables[table];
        for (c, child) in tables.iter().enumerate() {
            for fk in child
                .foreign_keys
                .iter()
                .filter(|fk| fk.references == parent.name)
            {
                let matches = |r: &LiveRow| {
                    fk.columns
                        .iter()
                        .zip(&parent.primary_key)
                        .all(|(col, pcol)| r.get(col) == row.get(pcol))
                };
                let (gone, kept): (Vec<LiveRow>, Vec<LiveRow>) = std::mem::take(&mut self.live[c])
                    .into_iter()
                    .partition(matches);
                self.live[c] = kept;
                for g in &gone {
                    self.forget_children(c, g);
                }
            }
        }
    }

    /// A value of `column_type`: an ordinary one, or one time in
    /// [`EDGE_ONE_IN`] an edge of the type (never for a `large` column: its
    /// point is its size).
    fn value(&mut self, column_type: &ColumnType, large: bool) -> String {
        if let ColumnType::Array(element) = column_type {
            return self.array_value(element);
        }
        let ordinary = self.ordinary_value(column_type, large);
        if large || !self.edges.next_u64().is_multiple_of(EDGE_ONE_IN) {
            return ordinary;
        }
        let mut choices = edges(column_type);
        if choices.is_empty() {
            return ordinary;
        }
        let pick = usize::try_from(self.edges.next_u64() % choices.len() as u64).expect("small");
        choices.swap_remove(pick)
    }

    /// An array of `element` as PostgreSQL's array literal: up to three
    /// values of the element type (each may be one of its edges), a NULL
    /// element one time in eight; one time in [`EDGE_ONE_IN`] the array's
    /// own edges instead, empty or holding only a NULL.
    fn array_value(&mut self, element: &ColumnType) -> String {
        if self.edges.next_u64().is_multiple_of(EDGE_ONE_IN) {
            let edge = if self.edges.next_u64().is_multiple_of(2) {
                "{}"
            } else {
                "{NULL}"
            };
            return edge.to_owned();
        }
        let len = self.below(4);
        let items: Vec<String> = (0..len)
            .map(|_| {
                if self.chance(8) {
                    "NULL".to_owned()
                } else {
                    array_element_literal(&self.value(element, false))
                }
            })
            .collect();
        format!("{{{}}}", items.join(","))
    }

    /// A value of `column_type` from the main stream.
    #[allow(clippy::too_many_lines)] // one arm per type, read top to bottom
    fn ordinary_value(&mut self, column_type: &ColumnType, large: bool) -> String {
        let signed = |g: &mut Self, range: u64| {
            i64::try_from(g.below(range)).expect("small") - i64::try_from(range / 2).expect("small")
        };
        match column_type {
            ColumnType::SmallInt => signed(self, 60_000).to_string(),
            ColumnType::Integer => signed(self, 2_000_000_000).to_string(),
            ColumnType::BigInt => signed(self, 2_000_000_000_000).to_string(),
            ColumnType::Boolean => (self.below(2) == 0).to_string(),
            // Exact in binary single precision.
            ColumnType::Real => {
                let units = signed(self, 1 << 22);
                format!("{}", units as f64 / 64.0)
            }
            // Exact in binary, so every reader gets the same double.
            ColumnType::DoublePrecision => {
                let units = signed(self, 1 << 40);
                format!("{}", units as f64 / 1024.0)
            }
            // An unconstrained numeric holds any numeric(38,10).
            ColumnType::Numeric(size) => {
                let (p, s) = size.unwrap_or((38, 10));
                let whole_digits = (p - s).min(15);
                let whole = self.below(10u64.pow(whole_digits));
                let fraction: String = (0..s)
                    .map(|_| char::from(b'0' + u8::try_from(self.below(10)).expect("digit")))
                    .collect();
                let sign = if self.chance(4) { "-" } else { "" };
                if s == 0 {
                    format!("{sign}{whole}")
                } else {
                    format!("{sign}{whole}.{fraction}")
                }
            }
            ColumnType::Text if large => self.letters(LARGE_CHARS as u64),
            ColumnType::Text => {
                if self.chance(10) {
                    String::new()
                } else {
                    let word = WORDS[usize::try_from(self.below(8)).expect("small")];
                    format!("{word} {}", self.below(1_000_000))
                }
            }
            // Shorter than its length: PostgreSQL pads it.
            ColumnType::Char(n) => {
                let len = self.below(u64::from((*n).min(24)) + 1);
                self.letters(len)
            }
            ColumnType::Varchar(n) => {
                let len = 1 + self.below(u64::from(n.unwrap_or(24).min(24)));
                self.letters(len)
            }
            ColumnType::Uuid => uuid(self.draws.bits(), self.draws.bits()),
            // 1900-01-01 .. 2100-12-31.
            ColumnType::Date => {
                let day = chrono::NaiveDate::from_ymd_opt(1900, 1, 1).expect("a date")
                    + chrono::Days::new(self.below(73_414));
                day.format("%Y-%m-%d").to_string()
            }
            ColumnType::Time => time_of_day(self.below(86_400_000_000)),
            // 1900-01-01 .. 2100-12-31, to the microsecond.
            ColumnType::Timestamp => {
                let micros = i64::try_from(self.below(6_342_969_600_000_000)).expect("small")
                    - 2_208_988_800_000_000;
                chrono::DateTime::from_timestamp_micros(micros)
                    .expect("within chrono's range")
                    .naive_utc()
                    .format("%Y-%m-%d %H:%M:%S%.6f")
                    .to_string()
            }
            ColumnType::Timestamptz => {
                let ms = EPOCH_MS + self.draws.clock_ms;
                chrono::DateTime::from_timestamp_millis(ms)
                    .expect("within chrono's range")
                    .format("%Y-%m-%d %H:%M:%S%.3f+00")
                    .to_string()
            }
            // Months, days and a time, each signed, kept apart by PostgreSQL.
            ColumnType::Interval => format!(
                "{} mons {} days {} microseconds",
                signed(self, 2_400),
                signed(self, 60),
                signed(self, 172_800_000_000)
            ),
            ColumnType::Bytea => {
                let len = 1 + self.below(24);
                let mut hex = String::from("\\x");
                for _ in 0..len {
                    let _ = write!(hex, "{:02x}", self.below(256));
                }
                hex
            }
            ColumnType::Json => format!(
                r#"{{"z": {}, "a": [{}, "{}"], "m": {{"y": null, "b": {}}}}}"#,
                signed(self, 2_000_000),
                self.below(1000) as f64 / 8.0,
                WORDS[usize::try_from(self.below(8)).expect("small")],
                self.below(2) == 0,
            ),
            ColumnType::Jsonb => format!(
                r#"{{"n": {}, "ok": {}, "tags": ["{}", "t{}"], "nested": {{"x": {}}}}}"#,
                signed(self, 2_000_000),
                self.below(2) == 0,
                WORDS[usize::try_from(self.below(8)).expect("small")],
                self.below(100),
                self.below(10_000) as f64 / 4.0
            ),
            ColumnType::Array(element) => self.array_value(element),
        }
    }

    /// `len` random letters and digits.
    fn letters(&mut self, len: u64) -> String {
        (0..len)
            .map(|_| char::from(ALPHABET[usize::try_from(self.below(62)).expect("small")]))
            .collect()
    }
}

/// A value as an element of an array literal: double-quoted, its quotes
/// and backslashes escaped, so any text (commas, braces, `NULL`) is itself.
fn array_element_literal(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// The columns an update may change: neither key nor foreign key.
fn updatable(table: &TableSig) -> Vec<&lossproof_lang::vocabulary::ColumnSig> {
    table
        .columns
        .iter()
        .filter(|c| !table.is_key(&c.name))
        .filter(|c| {
            !table
                .foreign_keys
                .iter()
                .any(|fk| fk.columns.contains(&c.name))
        })
        .collect()
}

fn key_of(table: &TableSig, row: &LiveRow) -> Vec<(String, String)> {
    table
        .primary_key
        .iter()
        .map(|k| (k.clone(), row.get(k).unwrap_or_default().to_owned()))
        .collect()
}

/// A key column's value made from `n`.
/// `HH:MM:SS.ffffff` of `micros` after midnight.
fn time_of_day(micros: u64) -> String {
    let (s, us) = (micros / 1_000_000, micros % 1_000_000);
    format!("{:02}:{:02}:{:02}.{us:06}", s / 3600, s / 60 % 60, s % 60)
}

/// The edges of `column_type` as SQL text: the values a type's canonical
/// form is most likely to get wrong on one side.
fn edges(column_type: &ColumnType) -> Vec<String> {
    let strings = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect();
    match column_type {
        ColumnType::SmallInt => strings(&["-32768", "32767", "0"]),
        ColumnType::Integer => strings(&["-2147483648", "2147483647", "0"]),
        ColumnType::BigInt => strings(&["-9223372036854775808", "9223372036854775807", "0"]),
        ColumnType::Real | ColumnType::DoublePrecision => {
            strings(&["NaN", "Infinity", "-Infinity", "-0", "0", "1e-30", "3.4e38"])
        }
        ColumnType::Numeric(size) => {
            let (p, s) = size.unwrap_or((38, 10));
            let (p, s) = (p as usize, s as usize);
            let max = format!(
                "{}{}",
                "9".repeat(p - s),
                if s == 0 {
                    String::new()
                } else {
                    format!(".{}", "9".repeat(s))
                }
            );
            let mut v = vec![max.clone(), format!("-{max}"), "0".to_owned()];
            if s > 0 {
                v.push(format!("0.{}1", "0".repeat(s - 1)));
            }
            v
        }
        ColumnType::Boolean | ColumnType::Array(_) => Vec::new(),
        ColumnType::Text => vec![
            String::new(),
            "👩‍👩‍👧‍👦 family, 🏳️‍🌈 flag".to_owned(),
            "e\u{301}te\u{301} (combining), Å vs A\u{30a}".to_owned(),
            " leading and trailing ".to_owned(),
            "tab\tnew\nline\r".to_owned(),
            r#"quote " backslash \ comma, equals= ∅"#.to_owned(),
            // Long, yet under the TOAST threshold: stored inline.
            "long ".repeat(300),
        ],
        ColumnType::Char(n) => {
            let n = (*n).min(24) as usize;
            vec![String::new(), "é".repeat(n), format!("{:<n$}", "x")]
        }
        ColumnType::Varchar(_) => strings(&["", "ü"]),
        ColumnType::Uuid => strings(&[
            "00000000-0000-0000-0000-000000000000",
            "ffffffff-ffff-ffff-ffff-ffffffffffff",
        ]),
        ColumnType::Date => strings(&[
            "1969-12-31",
            "1970-01-01",
            "2038-01-19",
            "2038-01-20",
            "1900-01-01",
            "2100-12-31",
            "2000-02-29",
        ]),
        ColumnType::Time => strings(&["00:00:00", "23:59:59.999999", "12:00:00.000001"]),
        ColumnType::Timestamp => strings(&[
            "1969-12-31 23:59:59.999999",
            "1970-01-01 00:00:00",
            "2038-01-19 03:14:07",
            "2038-01-19 03:14:08",
            "1900-01-01 00:00:00.000001",
            "2100-12-31 23:59:59.999999",
        ]),
        ColumnType::Timestamptz => strings(&[
            "1969-12-31 23:59:59.999999+00",
            "2038-01-19 03:14:08+00",
            "2100-12-31 23:59:59.999999+00",
        ]),
        ColumnType::Bytea => strings(&["\\x", "\\x00", "\\xff00ff"]),
        ColumnType::Interval => strings(&[
            "0",
            "1 year 2 mons 3 days 04:05:06.78",
            "-1 years -2 mons +3 days -04:05:06.78",
            "100 hours",
            "00:00:00.000001",
            "-1 day +00:00:00.000001",
            "1000 years",
        ]),
        ColumnType::Json | ColumnType::Jsonb => strings(&[
            "{}",
            "[]",
            r#"{"b": 2.50, "a": [1e2, -0, "é\u00e9"], "c": {"z": null, "a": "x"}}"#,
            r#""just a string""#,
            "12345678901234567890",
        ]),
    }
}

/// A key column's value made from `n` (keys are of the types
/// `ColumnType::can_be_key` allows).
fn key_value(column_type: &ColumnType, n: i64) -> String {
    match column_type {
        ColumnType::Integer | ColumnType::BigInt | ColumnType::Varchar(_) => n.to_string(),
        ColumnType::Uuid => uuid(0, n.unsigned_abs()),
        ColumnType::Text
        | ColumnType::SmallInt
        | ColumnType::Numeric(_)
        | ColumnType::Real
        | ColumnType::DoublePrecision
        | ColumnType::Boolean
        | ColumnType::Char(_)
        | ColumnType::Date
        | ColumnType::Time
        | ColumnType::Timestamp
        | ColumnType::Timestamptz
        | ColumnType::Interval
        | ColumnType::Json
        | ColumnType::Jsonb
        | ColumnType::Bytea
        | ColumnType::Array(_) => format!("k{n}"),
    }
}

fn uuid(high: u64, low: u64) -> String {
    let hex = format!("{high:016x}{low:016x}");
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::workload::generator::{FNV_OFFSET, fnv1a};

    /// Every type's values include its edges and ordinary values, the
    /// edges from their own stream: the same seed draws the same values.
    #[test]
    fn every_type_draws_edges_and_ordinary_values() {
        // Every type a declared table can have, sized.
        for sql_type in &ColumnType::EXAMPLES {
            if *sql_type == ColumnType::Boolean {
                continue; // no edges: both values are ordinary
            }
            let draw = || {
                let mut g = TableGenerator::new(schema(), 7, 0, 1, [100.0, 0.0, 0.0, 0.0]);
                (0..600)
                    .map(|_| g.value(sql_type, false))
                    .collect::<Vec<_>>()
            };
            let values = draw();
            assert_eq!(values, draw(), "{sql_type}: deterministic per seed");
            let edges = edges(sql_type);
            let at_edge = values.iter().filter(|v| edges.contains(v)).count();
            assert!(
                (40..200).contains(&at_edge),
                "{sql_type}: {at_edge} edges in 600"
            );
        }
        let mut g = TableGenerator::new(schema(), 7, 0, 1, [100.0, 0.0, 0.0, 0.0]);
        assert!(
            (0..100).all(|_| g.value(&ColumnType::Text, true).len() == LARGE_CHARS),
            "large: never an edge"
        );
    }

    /// An array column's values are array literals of the element type's
    /// values and edges, NULL elements, and the array's own edges.
    #[test]
    fn arrays_hold_element_values_nulls_and_their_own_edges() {
        let draw = || {
            let mut g = TableGenerator::new(schema(), 7, 0, 1, [100.0, 0.0, 0.0, 0.0]);
            (0..600)
                .map(|_| g.value(&ColumnType::Array(Box::new(ColumnType::Text)), false))
                .collect::<Vec<_>>()
        };
        let values = draw();
        assert_eq!(values, draw(), "deterministic per seed");
        assert!(
            values
                .iter()
                .all(|v| v.starts_with('{') && v.ends_with('}'))
        );
        for edge in ["{}", "{NULL}"] {
            assert!(values.iter().any(|v| v == edge), "{edge}");
        }
        assert!(values.iter().any(|v| v.contains(",NULL")), "NULL elements");
        // A text edge with quotes and a backslash, escaped.
        assert!(
            values
                .iter()
                .any(|v| v.contains(r#""quote \" backslash \\ comma, equals= ∅""#)),
            "{values:?}"
        );
        assert_eq!(array_element_literal(r#"a"b\c,{}"#), r#""a\"b\\c,{}""#);
    }

    fn schema() -> Arc<Vec<TableSig>> {
        let text = include_str!("../../../../scenarios/own-schema/tables.lp");
        let parsed = lossproof_lang::Parser::parse(text, 0);
        let decls: Vec<_> = parsed
            .file
            .items
            .iter()
            .filter_map(|i| match i {
                lossproof_lang::ast::Item::Table(t) => Some(t),
                _ => None,
            })
            .collect();
        let mut diagnostics = Vec::new();
        let tables = lossproof_lang::tables::tables(&decls, &mut diagnostics);
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        Arc::new(tables)
    }

    const MIX: [f64; 4] = [50.0, 30.0, 15.0, 5.0];

    /// A table's rows by key, as the operations left them.
    type Model = std::collections::BTreeMap<Vec<String>, Vec<(String, Option<String>)>>;

    fn digest(seed: u64) -> u64 {
        let tables = schema();
        let mut total = FNV_OFFSET;
        for connection in 0..3 {
            let mut g = TableGenerator::new(tables.clone(), seed, connection, 3, MIX);
            for _ in 0..1500 {
                total = fnv1a(total, g.next_op().to_string().as_bytes());
            }
        }
        total
    }

    #[test]
    fn same_seed_same_operations() {
        assert_eq!(digest(4), digest(4));
        assert_ne!(digest(4), digest(5));
    }

    /// Replaying the operations on a model of the tables never breaks a
    /// key or a foreign key, and every kind occurs.
    #[test]
    fn operations_keep_keys_and_references_valid() {
        let tables = schema();
        let mut g = TableGenerator::new(tables.clone(), 9, 1, 2, MIX);
        let mut rows: Vec<Model> = vec![Model::default(); tables.len()];
        let mut kinds = std::collections::BTreeMap::new();
        let mut untouched_large = 0;
        for _ in 0..5000 {
            let op = g.next_op();
            *kinds.entry(op.kind()).or_insert(0) += 1;
            let key_of = |t: usize, values: &[(String, Option<String>)]| -> Vec<String> {
                tables[t]
                    .primary_key
                    .iter()
                    .map(|k| {
                        values
                            .iter()
                            .find(|(c, _)| c == k)
                            .unwrap()
                            .1
                            .clone()
                            .unwrap()
                    })
                    .collect()
            };
            match &op {
                RowOp::Insert { table, values } => {
                    for fk in &tables[*table].foreign_keys {
                        let p = tables.iter().position(|t| t.name == fk.references).unwrap();
                        let parent_key: Vec<String> = fk
                            .columns
                            .iter()
                            .map(|c| {
                                values
                                    .iter()
                                    .find(|(n, _)| n == c)
                                    .unwrap()
                                    .1
                                    .clone()
                                    .unwrap()
                            })
                            .collect();
                        assert!(rows[p].contains_key(&parent_key), "{op}: no parent");
                    }
                    let key = key_of(*table, values);
                    assert!(
                        rows[*table].insert(key, values.clone()).is_none(),
                        "{op}: key reused"
                    );
                }
                RowOp::Update { table, key, set } => {
                    let key: Vec<String> = key.iter().map(|(_, v)| v.clone()).collect();
                    assert!(rows[*table].contains_key(&key), "{op}: no such row");
                    let large = tables[*table].columns.iter().any(|c| c.large);
                    if large
                        && !set
                            .iter()
                            .any(|(c, _)| tables[*table].column(c).unwrap().large)
                    {
                        untouched_large += 1;
                    }
                }
                RowOp::Delete { table, key, .. } => {
                    let key: Vec<String> = key.iter().map(|(_, v)| v.clone()).collect();
                    assert!(rows[*table].remove(&key).is_some(), "{op}: no such row");
                    // ON DELETE CASCADE, as the database does it.
                    let mut gone = vec![(*table, key)];
                    while let Some((t, key)) = gone.pop() {
                        for (c, child) in tables.iter().enumerate() {
                            for fk in child
                                .foreign_keys
                                .iter()
                                .filter(|fk| fk.references == tables[t].name)
                            {
                                let doomed: Vec<Vec<String>> = rows[c]
                                    .iter()
                                    .filter(|(_, v)| {
                                        fk.columns.iter().zip(&key).all(|(col, k)| {
                                            v.iter().find(|(n, _)| n == col).unwrap().1.as_deref()
                                                == Some(k)
                                        })
                                    })
                                    .map(|(k, _)| k.clone())
                                    .collect();
                                for d in doomed {
                                    rows[c].remove(&d);
                                    gone.push((c, d));
                                }
                            }
                        }
                    }
                }
            }
        }
        for kind in ["insert", "update", "delete", "cascade"] {
            assert!(kinds.get(kind).copied().unwrap_or(0) > 50, "{kinds:?}");
        }
        assert!(
            untouched_large > 50,
            "updates leaving the large column alone: {untouched_large}"
        );
    }
}
