//! One canonical string per row, so a source row and a lake row compare
//! equal exactly when they hold the same values, whatever each side's
//! representation:
//!
//! | value | canonical form |
//! |---|---|
//! | NULL | `∅` (never produced by any other value: text is always quoted) |
//! | smallint, integer, bigint (any width in the lake) | decimal digits: `-42` |
//! | numeric / decimal | normalised: no trailing fraction zeros, no `-0`: `10.50` and `10.5` → `10.5`, `3.00` → `3`; `NaN`, `inf`, `-inf` |
//! | timestamp with time zone | the UTC instant, microseconds always shown: `2026-11-30T03:51:11.123400Z` |
//! | timestamp without time zone | its wall clock read as UTC, the same form (a lake that stores it either way compares equal) |
//! | date | `YYYY-MM-DD` |
//! | time (without time zone) | `HH:MM:SS.ffffff` |
//! | text, varchar, uuid, enum label | JSON string (`"a\"b"`): quotes, backslashes, separators and control characters escaped; `""` ≠ `∅`; a uuid in lowercase hex with dashes (also from Iceberg's 16-byte uuid) |
//! | character(n) | as text, without the trailing spaces PostgreSQL pads it with |
//! | json, jsonb | canonical JSON (parsed; keys sorted; numbers and strings as serde_json writes them) as a JSON string |
//! | bytea | `\x` and lowercase hex, PostgreSQL's output |
//! | boolean | `true` / `false` |
//! | real, double precision | shortest round-trip decimal (`0.1`, `1e300`), `NaN`, `inf`, `-inf`; `-0.0` → `0` |
//! | interval | its three parts as PostgreSQL stores them, months, days and the time in seconds (exact to the microsecond): `P14M3DT14706.78S`, `P-14M3DT-14706.78S`, `P0M0DT0S`; from Debezium's ISO 8601 string (`interval.handling.mode=string`: `P1Y2M3DT4H5M6.78S`, each part signed) |
//! | array of any type above | its elements' canonical forms in brackets, no spaces: `[1,∅,-3]`, `["a","b,c"]`, `[]` (empty, not NULL); a multidimensional array nests: `[[1,2],[3,4]]`; lower bounds are not part of the value (Debezium and Iceberg lists have none) |
//!
//! The source's values are read in PostgreSQL's binary format
//! ([`Stored::write`]); a change event's as text
//! ([`Kind::from_source_text`]); the lake's from Arrow, by the source
//! column's kind ([`arrow_renderer_for`]; an array from an Arrow list of
//! any layout). Any other type (ranges, geometric types, composite types,
//! domains) is an error naming the column
//! ([`CanonicalError::Unsupported`]), never a silent string compare.
//!
//! A row is `name=value` for every column, sorted by column name, joined by
//! `, `; a primary key is the same over the key columns in key order.

use std::fmt::Write as _;
use std::sync::Arc;

use arrow_array::cast::AsArray as _;
use arrow_array::types::{
    Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType, UInt32Type, UInt64Type,
};
use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType, TimeUnit};
use lossproof_lang::ColumnType;

/// The NULL marker.
pub const NULL: &str = "∅";

/// A type or a value the canonical form does not cover: an error naming
/// it, never a silent string compare.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CanonicalError {
    #[error("the reconciler has no canonical form for `{0}` yet")]
    Unsupported(String),
    #[error("`{value}` is not a valid {kind:?} value")]
    BadValue { kind: Kind, value: String },
}

/// How a source column's values are read and rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Int,
    Decimal,
    /// `timestamp with time zone`, and `timestamp` (its wall clock read as UTC).
    Timestamptz,
    /// text, varchar, uuid, enums.
    Text,
    Bool,
    Float,
    /// `character(n)`: trailing spaces are not part of the value.
    Char,
    /// json, jsonb: canonical JSON (keys sorted, numbers as serde_json prints them).
    Json,
    Date,
    /// `time` (without time zone).
    Time,
    Bytea,
    /// `interval`: months, days and microseconds, kept apart as PostgreSQL
    /// keeps them (`1 mon` is not `30 days`).
    Interval,
    /// An array of values of the element kind (never itself an array:
    /// PostgreSQL's multidimensional arrays are one type).
    Array(&'static Kind),
}

impl Kind {
    /// The kind of a `PostgreSQL` type as `format_type` prints it.
    pub fn of_sql(sql_type: &str) -> Result<Self, CanonicalError> {
        let unsupported = || CanonicalError::Unsupported(sql_type.to_owned());
        let column_type = ColumnType::parse(sql_type).map_err(|_| unsupported())?;
        Self::of(&column_type).map_err(|_| unsupported())
    }

    /// How values of `column_type` are compared.
    pub fn of(column_type: &ColumnType) -> Result<Self, CanonicalError> {
        Ok(match column_type {
            ColumnType::SmallInt | ColumnType::Integer | ColumnType::BigInt => Self::Int,
            ColumnType::Text | ColumnType::Varchar(_) | ColumnType::Uuid => Self::Text,
            ColumnType::Json | ColumnType::Jsonb => Self::Json,
            ColumnType::Boolean => Self::Bool,
            ColumnType::Real | ColumnType::DoublePrecision => Self::Float,
            ColumnType::Date => Self::Date,
            ColumnType::Bytea => Self::Bytea,
            ColumnType::Interval => Self::Interval,
            // A timestamp's wall clock is read as UTC.
            ColumnType::Timestamptz | ColumnType::Timestamp => Self::Timestamptz,
            ColumnType::Time => Self::Time,
            ColumnType::Numeric(_) => Self::Decimal,
            ColumnType::Char(_) => Self::Char,
            ColumnType::Array(element) => Self::of(element)?.array()?,
        })
    }

    /// The kind of an array of this kind's values.
    pub fn array(self) -> Result<Self, CanonicalError> {
        Ok(Self::Array(match self {
            Self::Int => &Self::Int,
            Self::Decimal => &Self::Decimal,
            Self::Timestamptz => &Self::Timestamptz,
            Self::Text => &Self::Text,
            Self::Bool => &Self::Bool,
            Self::Float => &Self::Float,
            Self::Char => &Self::Char,
            Self::Json => &Self::Json,
            Self::Date => &Self::Date,
            Self::Time => &Self::Time,
            Self::Bytea => &Self::Bytea,
            Self::Interval => &Self::Interval,
            Self::Array(_) => {
                return Err(CanonicalError::Unsupported("an array of arrays".into()));
            }
        }))
    }

    /// Canonical form of a value given as text: an integer, a decimal, a
    /// timestamp as epoch microseconds, text, `true`/`false` (or `t`/`f`), a
    /// float (`NaN`, `Infinity`), an array as a JSON array of such values;
    /// what change events carry (`changelog.rs`).
    pub fn from_source_text(self, text: Option<&str>) -> Result<String, CanonicalError> {
        let mut out = String::new();
        self.write_source_text(text, &mut out)?;
        Ok(out)
    }

    /// [`Kind::from_source_text`], appended to `out` (nothing is appended
    /// on an error), with no allocation of its own.
    pub fn write_source_text(
        self,
        text: Option<&str>,
        out: &mut String,
    ) -> Result<(), CanonicalError> {
        let Some(t) = text else {
            out.push_str(NULL);
            return Ok(());
        };
        let bad = || CanonicalError::BadValue {
            kind: self,
            value: t.to_owned(),
        };
        match self {
            // PostgreSQL prints integers canonically: copy them as they are.
            Self::Int if is_canonical_int(t) => out.push_str(t),
            Self::Int => {
                let _ = write!(out, "{}", t.parse::<i128>().map_err(|_| bad())?);
            }
            Self::Decimal => match t {
                "NaN" => out.push_str("NaN"),
                "Infinity" => out.push_str("inf"),
                "-Infinity" => out.push_str("-inf"),
                _ if decimal_into(t, out) => {}
                _ => return Err(bad()),
            },
            // Epoch microseconds, or ISO 8601 (an array element of a
            // change event in JSON).
            Self::Timestamptz => timestamp_micros_into(
                t.parse()
                    .ok()
                    .or_else(|| {
                        chrono::DateTime::parse_from_rfc3339(t)
                            .ok()
                            .map(|t| t.timestamp_micros())
                    })
                    .ok_or_else(bad)?,
                out,
            ),
            Self::Text => quoted_into(t, out),
            Self::Char => quoted_into(t.trim_end_matches(' '), out),
            Self::Json => json_into(t, out),
            // Days since 1970-01-01 (Debezium's `Date`).
            Self::Date => date_into(
                t.parse::<i32>()
                    .ok()
                    .and_then(|d| d.checked_add(UNIX_EPOCH_DAYS_CE)),
                out,
            )
            .ok_or_else(bad)?,
            // Microseconds since midnight (Debezium's `MicroTime`).
            Self::Time => time_into(t.parse().ok(), out).ok_or_else(bad)?,
            Self::Bytea => {
                let hex = t.strip_prefix("\\x").ok_or_else(bad)?;
                if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Err(bad());
                }
                out.push_str("\\x");
                out.push_str(&hex.to_ascii_lowercase());
            }
            // Debezium's ISO 8601 interval string.
            Self::Interval => interval_into(iso_interval(t).ok_or_else(bad)?, out),
            Self::Bool => out.push_str(match t {
                "true" | "t" => "true",
                "false" | "f" => "false",
                _ => return Err(bad()),
            }),
            Self::Float => out.push_str(&float(match t {
                "NaN" => f64::NAN,
                "Infinity" => f64::INFINITY,
                "-Infinity" => f64::NEG_INFINITY,
                _ => t.parse().map_err(|_| bad())?,
            })),
            Self::Array(element) => {
                let value: serde_json::Value = serde_json::from_str(t).map_err(|_| bad())?;
                let start = out.len();
                json_array_into(*element, &value, out).inspect_err(|_| out.truncate(start))?;
            }
        }
        Ok(())
    }
}

/// A JSON array (nested for more dimensions) of `element` values, each
/// as [`Kind::write_source_text`] reads it.
fn json_array_into(
    element: Kind,
    value: &serde_json::Value,
    out: &mut String,
) -> Result<(), CanonicalError> {
    use serde_json::Value;
    match value {
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json_array_into(element, item, out)?;
            }
            out.push(']');
            Ok(())
        }
        Value::Null => element.write_source_text(None, out),
        Value::String(s) => element.write_source_text(Some(s), out),
        other => element.write_source_text(Some(&other.to_string()), out),
    }
}

impl Kind {
    /// The order of two canonical values of this kind as a sorted read of
    /// each side gives it: the source's `ORDER BY` ([`Kind::order_expr`])
    /// and the lake's (DataFusion's, `NULLS LAST`). Integers, decimals and
    /// floats by value, text by its bytes (PostgreSQL's `COLLATE "C"`),
    /// timestamps by instant (their canonical text, years 0 to 9999),
    /// `false` before `true`, NULL last. A pair of values whose canonical
    /// text cannot be ordered this way (a year past 9999) compares as text:
    /// the merge then finds a side out of order and falls back to the
    /// in-memory comparison, never to a wrong diff.
    #[must_use]
    pub fn cmp_canonical(self, a: &str, b: &str) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        if a == b {
            return Ordering::Equal;
        }
        match (a == NULL, b == NULL) {
            (true, _) => return Ordering::Greater,
            (_, true) => return Ordering::Less,
            _ => {}
        }
        match self {
            Self::Int => cmp_int(a, b),
            Self::Decimal => cmp_decimal(a, b),
            Self::Text | Self::Char | Self::Json => cmp_quoted(a, b),
            Self::Float => {
                let value = |t: &str| t.parse::<f64>().unwrap_or(f64::NAN);
                let (x, y) = (value(a), value(b));
                // NaN after every number, as PostgreSQL orders it.
                match (x.is_nan(), y.is_nan()) {
                    (true, true) => Ordering::Equal,
                    (true, false) => Ordering::Greater,
                    (false, true) => Ordering::Less,
                    (false, false) => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
                }
            }
            // Fixed-width text in value order; bytes as hex: byte order.
            // Intervals as text: a key of them sorts differently on the
            // source, and the merge then compares in memory (see above).
            Self::Timestamptz
            | Self::Bool
            | Self::Date
            | Self::Time
            | Self::Bytea
            | Self::Interval
            | Self::Array(_) => a.cmp(b),
        }
    }

    /// The source's `ORDER BY` term for column `c` that sorts as
    /// [`Kind::cmp_canonical`]: text-like columns by bytes.
    #[must_use]
    pub fn order_expr(self, c: &str) -> String {
        match self {
            Self::Text | Self::Char | Self::Json => format!("{c}::text COLLATE \"C\""),
            _ => c.to_owned(),
        }
    }
}

/// Two canonical decimals by value (`-2` < `-1.5` < `0` < `0.25` < `3`).
fn cmp_decimal(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    fn split(t: &str) -> (bool, &str, &str) {
        let (negative, digits) = t.strip_prefix('-').map_or((false, t), |d| (true, d));
        let (int_part, frac) = digits.split_once('.').unwrap_or((digits, ""));
        (negative, int_part, frac)
    }
    let ((na, ia, fa), (nb, ib, fb)) = (split(a), split(b));
    let magnitude = ia
        .len()
        .cmp(&ib.len())
        .then_with(|| ia.cmp(ib))
        .then_with(|| fa.cmp(fb));
    match (na, nb) {
        (false, true) => Ordering::Greater,
        (true, false) => Ordering::Less,
        (false, false) => magnitude,
        (true, true) => magnitude.reverse(),
    }
}

/// Two canonical (JSON-quoted) texts by the bytes of the text they quote.
fn cmp_quoted(a: &str, b: &str) -> std::cmp::Ordering {
    fn inner(t: &str) -> Option<&str> {
        t.strip_prefix('"').and_then(|t| t.strip_suffix('"'))
    }
    match (inner(a), inner(b)) {
        (Some(x), Some(y)) if !x.contains('\\') && !y.contains('\\') => x.cmp(y),
        _ => {
            let text = |t: &str| serde_json::from_str::<String>(t).unwrap_or_else(|_| t.to_owned());
            text(a).cmp(&text(b))
        }
    }
}

/// How a source column's values are stored in PostgreSQL's binary format:
/// one variant per way of reading, chosen once per column from its type
/// ([`Stored::of`], a match over every [`ColumnType`] with no catch-all, so
/// a new column type must say how it is read), or from the type the server
/// sends ([`Stored::of_wire`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stored {
    /// smallint, integer, bigint: big-endian, 2, 4 or 8 bytes.
    Int,
    Numeric,
    /// timestamp and timestamptz: microseconds since 2000-01-01.
    Micros,
    /// text, varchar and enum labels: UTF-8.
    Utf8,
    /// character(n): UTF-8 padded with spaces.
    Bpchar,
    Json,
    /// A version byte (1), then the JSON text.
    Jsonb,
    /// Days since 2000-01-01.
    Date,
    /// Microseconds since midnight.
    Time,
    Bytea,
    /// Microseconds (i64), days (i32), months (i32).
    Interval,
    /// 16 bytes.
    Uuid,
    Bool,
    Float4,
    Float8,
    /// Dimensions, then each element as its own type is stored.
    Array(Box<Stored>),
}

impl Stored {
    /// How values of `column_type` are stored.
    #[must_use]
    pub fn of(column_type: &ColumnType) -> Self {
        match column_type {
            ColumnType::SmallInt | ColumnType::Integer | ColumnType::BigInt => Self::Int,
            ColumnType::Numeric(_) => Self::Numeric,
            ColumnType::Timestamp | ColumnType::Timestamptz => Self::Micros,
            ColumnType::Text | ColumnType::Varchar(_) => Self::Utf8,
            ColumnType::Char(_) => Self::Bpchar,
            ColumnType::Json => Self::Json,
            ColumnType::Jsonb => Self::Jsonb,
            ColumnType::Date => Self::Date,
            ColumnType::Time => Self::Time,
            ColumnType::Bytea => Self::Bytea,
            ColumnType::Interval => Self::Interval,
            ColumnType::Uuid => Self::Uuid,
            ColumnType::Boolean => Self::Bool,
            ColumnType::Real => Self::Float4,
            ColumnType::DoublePrecision => Self::Float8,
            ColumnType::Array(element) => Self::Array(Box::new(Self::of(element))),
        }
    }

    /// How a column the server sends as `ty` is stored: an enum by its
    /// labels, an array by its element, any other type as
    /// [`ColumnType::parse`] reads its name.
    pub fn of_wire(ty: &tokio_postgres::types::Type) -> Result<Self, CanonicalError> {
        use tokio_postgres::types::Kind as Wire;
        match ty.kind() {
            Wire::Enum(_) => Ok(Self::Utf8),
            Wire::Array(member) => Ok(Self::Array(Box::new(Self::of_wire(member)?))),
            _ => ColumnType::parse(ty.name())
                .map(|t| Self::of(&t))
                .map_err(|_| CanonicalError::Unsupported(ty.name().to_owned())),
        }
    }

    /// How a column the reconciler reads as `kind` (from its declared type,
    /// [`Kind::of_sql`]) is stored, as the server sends it (`ty`); a type
    /// that does not hold what `kind` reads is [`CanonicalError::Unsupported`],
    /// never a guess.
    pub fn of_column(ty: &tokio_postgres::types::Type, kind: Kind) -> Result<Self, CanonicalError> {
        let stored = Self::of_wire(ty)?;
        if stored.kind() == kind {
            Ok(stored)
        } else {
            Err(CanonicalError::Unsupported(format!(
                "{ty} read as {kind:?}"
            )))
        }
    }

    /// The kind of value it holds.
    fn kind(&self) -> Kind {
        match self {
            Self::Int => Kind::Int,
            Self::Numeric => Kind::Decimal,
            Self::Micros => Kind::Timestamptz,
            Self::Utf8 | Self::Uuid => Kind::Text,
            Self::Bpchar => Kind::Char,
            Self::Json | Self::Jsonb => Kind::Json,
            Self::Date => Kind::Date,
            Self::Time => Kind::Time,
            Self::Bytea => Kind::Bytea,
            Self::Interval => Kind::Interval,
            Self::Bool => Kind::Bool,
            Self::Float4 | Self::Float8 => Kind::Float,
            Self::Array(element) => element.kind().array().unwrap_or(Kind::Text),
        }
    }

    /// The canonical form of `raw` (a value stored so; `None`: NULL),
    /// appended to `out`: read as it is stored, no cast, no text rendering
    /// on the server.
    pub fn write(&self, raw: Option<&[u8]>, out: &mut String) -> Result<(), CanonicalError> {
        let Some(b) = raw else {
            out.push_str(NULL);
            return Ok(());
        };
        let bad = || CanonicalError::BadValue {
            kind: self.kind(),
            value: format!("{self:?} value {b:02x?}"),
        };
        let int = |b: &[u8]| -> Option<i64> {
            Some(match b.len() {
                2 => i64::from(i16::from_be_bytes(b.try_into().ok()?)),
                4 => i64::from(i32::from_be_bytes(b.try_into().ok()?)),
                8 => i64::from_be_bytes(b.try_into().ok()?),
                _ => return None,
            })
        };
        let utf8 = |b| std::str::from_utf8(b).map_err(|_| bad());
        match self {
            Self::Int => out.push_str(itoa::Buffer::new().format(int(b).ok_or_else(bad)?)),
            Self::Numeric => {
                if !numeric_binary_into(b, out) {
                    return Err(bad());
                }
            }
            // Microseconds since 2000-01-01 UTC; ±infinity are the extremes.
            Self::Micros => {
                let micros = int(b)
                    .filter(|m| *m != i64::MAX && *m != i64::MIN)
                    .ok_or_else(bad)?;
                timestamp_micros_into(
                    micros.checked_add(POSTGRES_EPOCH_MICROS).ok_or_else(bad)?,
                    out,
                );
            }
            Self::Utf8 => quoted_into(utf8(b)?, out),
            Self::Bpchar => quoted_into(utf8(b)?.trim_end_matches(' '), out),
            Self::Json => json_into(utf8(b)?, out),
            Self::Jsonb => match b.split_first() {
                Some((1, rest)) => json_into(utf8(rest)?, out),
                _ => return Err(bad()),
            },
            Self::Date => {
                let days = i32::from_be_bytes(b.try_into().map_err(|_| bad())?);
                date_into(days.checked_add(POSTGRES_EPOCH_DAYS_CE), out).ok_or_else(bad)?;
            }
            Self::Time => time_into(int(b), out).ok_or_else(bad)?,
            Self::Bytea => bytes_into(b, out),
            Self::Interval => {
                let (micros, rest) = b.split_at_checked(8).ok_or_else(bad)?;
                let (days, months) = rest.split_at_checked(4).ok_or_else(bad)?;
                interval_into(
                    Interval {
                        months: i64::from(i32::from_be_bytes(
                            months.try_into().map_err(|_| bad())?,
                        )),
                        days: i64::from(i32::from_be_bytes(days.try_into().map_err(|_| bad())?)),
                        micros: i128::from(i64::from_be_bytes(
                            micros.try_into().map_err(|_| bad())?,
                        )),
                    },
                    out,
                );
            }
            Self::Uuid => {
                let bytes: [u8; 16] = b.try_into().map_err(|_| bad())?;
                uuid_into(&bytes, out);
            }
            Self::Bool => out.push_str(match b {
                [0] => "false",
                [1] => "true",
                _ => return Err(bad()),
            }),
            Self::Float4 => {
                let v = f32::from_be_bytes(b.try_into().map_err(|_| bad())?);
                out.push_str(&float(f64::from(v)));
            }
            Self::Float8 => {
                out.push_str(&float(f64::from_be_bytes(b.try_into().map_err(|_| bad())?)));
            }
            Self::Array(element) => {
                array_binary_into(element, b, out).unwrap_or_else(|| Err(bad()))?;
            }
        }
        Ok(())
    }
}

/// An array in PostgreSQL's binary format (dimensions, a has-NULL flag,
/// the element type, each dimension's length and lower bound, then every
/// element, `-1` for NULL) as its canonical form; `None` where the bytes
/// are not such an array. Nothing is appended on a failure.
fn array_binary_into(
    element: &Stored,
    b: &[u8],
    out: &mut String,
) -> Option<Result<(), CanonicalError>> {
    let start = out.len();
    let mut at = b;
    let written = (|| {
        let dimensions = usize::try_from(be_i32(&mut at)?).ok()?;
        let (_has_null, _element_oid) = (be_i32(&mut at)?, be_i32(&mut at)?);
        let mut lengths = Vec::with_capacity(dimensions);
        for _ in 0..dimensions {
            lengths.push(usize::try_from(be_i32(&mut at)?).ok()?);
            be_i32(&mut at)?; // the lower bound: not part of the value
        }
        if lengths.is_empty() {
            out.push_str("[]");
            return Some(Ok(()));
        }
        array_level_into(element, &lengths, &mut at, out)
    })();
    let written = match written {
        Some(Ok(())) if !at.is_empty() => None, // bytes after the last element
        other => other,
    };
    if !matches!(written, Some(Ok(()))) {
        out.truncate(start);
    }
    written
}

/// One dimension of an array ([`array_binary_into`]): `lengths[0]`
/// elements, or arrays of the next dimensions, in brackets.
fn array_level_into(
    element: &Stored,
    lengths: &[usize],
    at: &mut &[u8],
    out: &mut String,
) -> Option<Result<(), CanonicalError>> {
    let (length, inner) = lengths.split_first()?;
    out.push('[');
    for i in 0..*length {
        if i > 0 {
            out.push(',');
        }
        let written = if inner.is_empty() {
            let raw = match be_i32(at)? {
                -1 => None,
                n => {
                    let (value, rest) = at.split_at_checked(usize::try_from(n).ok()?)?;
                    *at = rest;
                    Some(value)
                }
            };
            element.write(raw, out)
        } else {
            array_level_into(element, inner, at, out)?
        };
        if written.is_err() {
            return Some(written);
        }
    }
    out.push(']');
    Some(Ok(()))
}

/// The next big-endian `i32` of `at`, which moves past it.
fn be_i32(at: &mut &[u8]) -> Option<i32> {
    let (head, rest) = at.split_first_chunk::<4>()?;
    *at = rest;
    Some(i32::from_be_bytes(*head))
}

/// 2000-01-01T00:00:00Z, PostgreSQL's epoch, in Unix microseconds.
const POSTGRES_EPOCH_MICROS: i64 = 946_684_800_000_000;
/// 1970-01-01 and 2000-01-01 as days since 0001-01-01 (chrono's day numbers).
const UNIX_EPOCH_DAYS_CE: i32 = 719_163;
const POSTGRES_EPOCH_DAYS_CE: i32 = 730_120;

/// A date (days since 0001-01-01) as `YYYY-MM-DD`; `None` out of range.
fn date_into(days_ce: Option<i32>, out: &mut String) -> Option<()> {
    let date = chrono::NaiveDate::from_num_days_from_ce_opt(days_ce?)?;
    let _ = write!(out, "{}", date.format("%Y-%m-%d"));
    Some(())
}

/// A time of day (microseconds since midnight) as `HH:MM:SS.ffffff`;
/// `None` out of range (24:00:00 included: PostgreSQL allows it).
fn time_into(micros: Option<i64>, out: &mut String) -> Option<()> {
    let micros = micros.filter(|m| (0..=86_400_000_000).contains(m))?;
    let (secs, frac) = (micros / 1_000_000, micros % 1_000_000);
    let _ = write!(
        out,
        "{:02}:{:02}:{:02}.{frac:06}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    );
    Some(())
}

/// [`time_into`] of a lake's time of day (microseconds), or a mark no
/// source value has if it is out of range.
fn time_or_mark(micros: i64, out: &mut String) {
    if time_into(Some(micros), out).is_none() {
        out.push_str("?time");
    }
}

/// An interval's parts as PostgreSQL keeps them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Interval {
    months: i64,
    days: i64,
    micros: i128,
}

/// `P{months}M{days}DT{seconds}S`, the seconds exact, without trailing
/// fraction zeros.
fn interval_into(i: Interval, out: &mut String) {
    let sign = if i.micros < 0 { "-" } else { "" };
    let (secs, frac) = (
        i.micros.unsigned_abs() / 1_000_000,
        i.micros.unsigned_abs() % 1_000_000,
    );
    let _ = write!(out, "P{}M{}DT{sign}{secs}", i.months, i.days);
    if frac != 0 {
        let digits = format!("{frac:06}");
        let _ = write!(out, ".{}", digits.trim_end_matches('0'));
    }
    out.push('S');
}

/// Debezium's interval string (ISO 8601, each part signed:
/// `P1Y2M3DT4H5M6.78S`, `P-1Y-2M3DT-4H-5M-6.78S`, `PT0S`); the seconds
/// rounded to the microsecond (Debezium's come from a double).
fn iso_interval(text: &str) -> Option<Interval> {
    let rest = text.strip_prefix('P')?;
    if rest.is_empty() || rest.ends_with('T') {
        return None;
    }
    let (date, time) = rest.split_once('T').unwrap_or((rest, ""));
    let mut parts = Interval {
        months: 0,
        days: 0,
        micros: 0,
    };
    // Each part: an optionally signed number, then its unit letter.
    let mut each = |section: &str, in_time: bool| -> Option<()> {
        let mut number = String::new();
        for c in section.chars() {
            if c.is_ascii_digit() || c == '-' || c == '+' || c == '.' {
                number.push(c);
                continue;
            }
            let whole = || number.parse::<i64>().ok();
            match (in_time, c) {
                (false, 'Y') => parts.months += whole()?.checked_mul(12)?,
                (false, 'M') => parts.months += whole()?,
                (false, 'W') => parts.days += whole()?.checked_mul(7)?,
                (false, 'D') => parts.days += whole()?,
                (true, 'H') => parts.micros += i128::from(whole()?) * 3_600_000_000,
                (true, 'M') => parts.micros += i128::from(whole()?) * 60_000_000,
                (true, 'S') => parts.micros += seconds_micros(&number)?,
                _ => return None,
            }
            number.clear();
        }
        number.is_empty().then_some(())
    };
    each(date, false)?;
    each(time, true)?;
    Some(parts)
}

/// `-6.780000000000000248` seconds -> -6_780_000 microseconds (half away
/// from zero).
fn seconds_micros(text: &str) -> Option<i128> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (whole, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if whole.is_empty() && frac.is_empty()
        || !whole
            .bytes()
            .chain(frac.bytes())
            .all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let whole: i128 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let padded = format!("{frac:0<7}");
    let micros: i128 = padded[..6].parse().ok()?;
    let round_up = padded.as_bytes()[6] >= b'5';
    let magnitude = whole.checked_mul(1_000_000)? + micros + i128::from(round_up);
    Some(if negative { -magnitude } else { magnitude })
}

/// A uuid's 16 bytes as PostgreSQL writes it (lowercase hex, dashes), quoted
/// like text.
fn uuid_into(bytes: &[u8], out: &mut String) {
    let mut hex = String::with_capacity(36);
    for (i, byte) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            hex.push('-');
        }
        let _ = write!(hex, "{byte:02x}");
    }
    quoted_into(&hex, out);
}

/// Bytes as PostgreSQL's hex output: `\x` and two lowercase digits each.
fn bytes_into(bytes: &[u8], out: &mut String) {
    out.reserve(2 + 2 * bytes.len());
    out.push_str("\\x");
    for byte in bytes {
        let _ = write!(out, "{byte:02x}");
    }
}

/// JSON text in canonical form (parsed; keys sorted; numbers and strings as
/// serde_json writes them), quoted like text; text that is not JSON is
/// quoted as it is (and so differs from any JSON value's form).
fn json_into(text: &str, out: &mut String) {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value) => quoted_into(&value.to_string(), out),
        Err(_) => quoted_into(text, out),
    }
}

/// A `numeric` in PostgreSQL's binary format (digit count, weight of the
/// first base-10000 digit, sign, display scale, digits) appended in
/// canonical form (`NaN`, `inf`, `-inf` as a float's); false for malformed
/// bytes.
fn numeric_binary_into(b: &[u8], out: &mut String) -> bool {
    let word = |i: usize| b.get(i..i + 2).map(|w| u16::from_be_bytes([w[0], w[1]]));
    let (Some(ndigits), Some(weight), Some(sign)) = (word(0), word(2), word(4)) else {
        return false;
    };
    // The weight is a signed 16-bit number (negative: a fraction below 1).
    let (ndigits, weight) = (
        usize::from(ndigits),
        i32::from(i16::from_be_bytes(weight.to_be_bytes())),
    );
    if b.len() != 8 + 2 * ndigits {
        return false;
    }
    // NaN and the infinities as a float's are written.
    match sign {
        0x0000 | 0x4000 => {}
        0xC000 => {
            out.push_str("NaN");
            return true;
        }
        0xD000 => {
            out.push_str("inf");
            return true;
        }
        0xF000 => {
            out.push_str("-inf");
            return true;
        }
        _ => return false,
    }
    let digit = |g: i32| {
        usize::try_from(g)
            .ok()
            .filter(|g| *g < ndigits)
            .and_then(|g| word(8 + 2 * g))
            .unwrap_or(0)
    };
    if ndigits == 0 {
        out.push('0');
        return true;
    }
    if sign == 0x4000 {
        out.push('-');
    }
    // The integer part: groups 0..=weight, the first without its zeros.
    let four = |d: u16, out: &mut String| {
        let mut text = *b"0000";
        put_digits(&mut text, u32::from(d));
        out.push_str(std::str::from_utf8(&text).unwrap_or_default());
    };
    let mut started = false;
    for g in 0..=weight {
        let d = digit(g);
        if started {
            four(d, out);
        } else if d != 0 {
            out.push_str(itoa::Buffer::new().format(d));
            started = true;
        }
    }
    if !started {
        out.push('0');
    }
    // The fraction: groups after `weight`, without trailing zeros.
    let last = i32::try_from(ndigits).unwrap_or(i32::MAX) - 1;
    if last > weight {
        out.push('.');
        for g in weight + 1..=last {
            four(digit(g), out);
        }
        let trimmed = out.trim_end_matches('0').len();
        out.truncate(trimmed);
        if out.ends_with('.') {
            out.pop();
        }
    }
    true
}

/// True if `t` is exactly what `t.parse::<i128>()?.to_string()` gives:
/// an optional `-`, then at most 38 digits without a leading zero (`0`
/// alone, never `-0`).
fn is_canonical_int(t: &str) -> bool {
    let digits = t.strip_prefix('-').unwrap_or(t).as_bytes();
    !digits.is_empty()
        && digits.len() <= 38
        && digits.iter().all(u8::is_ascii_digit)
        && (digits[0] != b'0' || (digits.len() == 1 && digits.len() == t.len()))
}

/// `10.50` → `10.5`, `-0.00` → `0`, `007` → `7`; `None` if not a decimal.
#[must_use]
pub fn decimal(text: &str) -> Option<String> {
    let mut out = String::new();
    decimal_into(text, &mut out).then_some(out)
}

/// [`decimal`] appended to `out`; false (nothing appended) if not a decimal.
fn decimal_into(text: &str, out: &mut String) -> bool {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (int_part, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if (int_part.is_empty() && frac.is_empty())
        || !int_part
            .bytes()
            .chain(frac.bytes())
            .all(|b| b.is_ascii_digit())
    {
        return false;
    }
    let int_part = int_part.trim_start_matches('0');
    let frac = frac.trim_end_matches('0');
    let int_part = if int_part.is_empty() { "0" } else { int_part };
    let zero = int_part == "0" && frac.is_empty();
    if negative && !zero {
        out.push('-');
    }
    out.push_str(int_part);
    if !frac.is_empty() {
        out.push('.');
        out.push_str(frac);
    }
    true
}

/// An unscaled decimal (Arrow's `Decimal128`) in canonical form.
#[must_use]
pub fn decimal_unscaled(value: i128, scale: i8) -> String {
    let mut out = String::new();
    decimal_unscaled_into(value, scale, &mut out);
    out
}

/// Two integers' canonical forms by value: as written (an optional `-`,
/// digits without leading zeros) by sign, length and digits, without
/// parsing them (the merge compares two keys for every row); anything else
/// parsed, and text that does not parse by its bytes.
fn cmp_int(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    fn parts(text: &str) -> Option<(bool, &[u8])> {
        let (negative, digits) = match text.as_bytes() {
            [b'-', rest @ ..] => (true, rest),
            digits => (false, digits),
        };
        let canonical = match digits {
            [b'0'] => !negative,
            [first, ..] => *first != b'0' && digits.iter().all(u8::is_ascii_digit),
            [] => false,
        };
        canonical.then_some((negative, digits))
    }
    match (parts(a), parts(b)) {
        (Some((false, _)), Some((true, _))) => Ordering::Greater,
        (Some((true, _)), Some((false, _))) => Ordering::Less,
        (Some((negative, x)), Some((_, y))) => {
            let by_magnitude = x.len().cmp(&y.len()).then_with(|| x.cmp(y));
            if negative {
                by_magnitude.reverse()
            } else {
                by_magnitude
            }
        }
        _ => match (a.parse::<i128>(), b.parse::<i128>()) {
            (Ok(x), Ok(y)) => x.cmp(&y),
            _ => a.cmp(b),
        },
    }
}

/// [`decimal_unscaled`] appended to `out`, by arithmetic: the integer
/// part, then the fraction without its trailing zeros; no sign on zero.
fn decimal_unscaled_into(value: i128, scale: i8, out: &mut String) {
    if scale <= 0 || scale > 38 {
        out.push_str(&decimal_unscaled_text(value, scale));
        return;
    }
    let digits = scale.unsigned_abs() as usize;
    let unit = 10u128.pow(u32::from(scale.unsigned_abs()));
    let magnitude = value.unsigned_abs();
    let (int_part, mut frac) = (magnitude / unit, magnitude % unit);
    if value < 0 && magnitude != 0 {
        out.push('-');
    }
    out.push_str(itoa::Buffer::new().format(int_part));
    if frac != 0 {
        let mut width = digits;
        while frac % 10 == 0 {
            frac /= 10;
            width -= 1;
        }
        let mut text = itoa::Buffer::new();
        let frac = text.format(frac);
        out.push('.');
        out.extend(std::iter::repeat_n('0', width.saturating_sub(frac.len())));
        out.push_str(frac);
    }
}

/// [`decimal_unscaled`] through text (any scale).
fn decimal_unscaled_text(value: i128, scale: i8) -> String {
    if scale <= 0 {
        let factor = 10i128.pow(u32::from(scale.unsigned_abs()));
        return (value * factor).to_string();
    }
    let digits = value.unsigned_abs().to_string();
    let scale = scale as usize;
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (int_part, frac) = padded.split_at(padded.len() - scale);
    let sign = if value < 0 { "-" } else { "" };
    decimal(&format!("{sign}{int_part}.{frac}")).unwrap_or_default()
}

/// Microseconds since the epoch as a UTC instant with six fraction digits.
#[must_use]
pub fn timestamp_micros(micros: i64) -> String {
    let mut out = String::with_capacity(27);
    timestamp_micros_into(micros, &mut out);
    out
}

/// [`timestamp_micros`] appended to `out`: years 0 to 9999 digit by digit
/// (what chrono's `%Y-%m-%dT%H:%M:%S` prints for them), others through chrono.
fn timestamp_micros_into(micros: i64, out: &mut String) {
    let secs = micros.div_euclid(1_000_000);
    let frac = micros.rem_euclid(1_000_000);
    let day = secs.div_euclid(86_400);
    let Some(date) = day_prefix(day) else {
        match chrono::DateTime::from_timestamp(secs, 0) {
            Some(t) => {
                let _ = write!(out, "{}.{frac:06}Z", t.format("%Y-%m-%dT%H:%M:%S"));
            }
            None => {
                let _ = write!(out, "@{micros}us");
            }
        }
        return;
    };
    let of_day = secs.rem_euclid(86_400);
    let mut time = *b"00:00:00.000000Z";
    put_digits(&mut time[0..2], (of_day / 3600) as u32);
    put_digits(&mut time[3..5], (of_day / 60 % 60) as u32);
    put_digits(&mut time[6..8], (of_day % 60) as u32);
    put_digits(&mut time[9..15], frac.unsigned_abs() as u32);
    out.push_str(std::str::from_utf8(&date).unwrap_or_default());
    out.push_str(std::str::from_utf8(&time).unwrap_or_default());
}

/// `YYYY-MM-DDT` of day `day` (days since 1970-01-01), written digit by
/// digit for years 0 to 9999 (what chrono's `%Y-%m-%d` prints for them);
/// `None` for other years. Rows of one table come in runs of one day: the
/// last day's prefix is kept per thread.
fn day_prefix(day: i64) -> Option<[u8; 11]> {
    use chrono::Datelike as _;
    thread_local! {
        static LAST: std::cell::Cell<(i64, [u8; 11])> = const { std::cell::Cell::new((i64::MIN, [0; 11])) };
    }
    let (cached, prefix) = LAST.with(std::cell::Cell::get);
    if cached == day {
        return Some(prefix);
    }
    let date = i32::try_from(day)
        .ok()
        .and_then(|d| d.checked_add(UNIX_EPOCH_DAYS_CE))
        .and_then(chrono::NaiveDate::from_num_days_from_ce_opt)
        .filter(|d| (0..=9999).contains(&d.year()))?;
    let mut prefix = *b"0000-00-00T";
    put_digits(&mut prefix[0..4], date.year().unsigned_abs());
    put_digits(&mut prefix[5..7], date.month());
    put_digits(&mut prefix[8..10], date.day());
    LAST.with(|last| last.set((day, prefix)));
    Some(prefix)
}

/// The last `digits.len()` decimal digits of `value` into `digits`, zero-padded.
fn put_digits(digits: &mut [u8], mut value: u32) {
    for digit in digits.iter_mut().rev() {
        *digit = b'0' + (value % 10) as u8;
        value /= 10;
    }
}

/// Text as a JSON string literal.
#[must_use]
pub fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    quoted_into(text, &mut out);
    out
}

/// [`quoted`] appended to `out`: text with nothing serde_json escapes
/// (control characters, `"`, `\\`) is copied between quotes as it is.
fn quoted_into(text: &str, out: &mut String) {
    if text.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push('"');
        out.push_str(text);
        out.push('"');
    } else {
        out.push_str(&serde_json::to_string(text).unwrap_or_else(|_| format!("{text:?}")));
    }
}

/// A float in its shortest round-trip form.
#[must_use]
pub fn float(value: f64) -> String {
    if value.is_nan() {
        "NaN".into()
    } else if value.is_infinite() {
        if value > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        }
    } else if value == 0.0 {
        "0".into()
    } else {
        format!("{value}")
    }
}

/// `name=value, …` over `columns` sorted by name.
#[must_use]
pub fn row(mut columns: Vec<(&str, String)>) -> String {
    columns.sort_by(|a, b| a.0.cmp(b.0));
    join(&columns)
}

/// `name=value, …` in the given (key) order.
#[must_use]
pub fn join(columns: &[(&str, String)]) -> String {
    let mut out = String::new();
    for (i, (name, value)) in columns.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{name}={value}");
    }
    out
}

/// A canonical row ([`row`], [`join`]) back as its (name, value) pairs: a
/// `, ` inside a quoted value does not split it.
#[must_use]
pub fn columns(row: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let (mut current, mut quoted, mut escaped) = (String::new(), false, false);
    let mut chars = row.chars().peekable();
    while let Some(c) = chars.next() {
        if quoted {
            quoted = escaped || c != '"';
            escaped = !escaped && c == '\\';
        } else if c == '"' {
            quoted = true;
        } else if c == ',' && chars.peek() == Some(&' ') {
            chars.next();
            out.push(std::mem::take(&mut current));
            continue;
        }
        current.push(c);
    }
    out.push(current);
    out.into_iter()
        .map(|pair| match pair.split_once('=') {
            Some((name, value)) => (name.to_owned(), value.to_owned()),
            None => (String::new(), pair),
        })
        .collect()
}

/// The renderer of a lake column holding values of a source column of
/// `kind`: what only the source's type tells apart (a `character(n)`'s
/// padding, JSON text, a uuid stored as 16 bytes, bytes, dates and times),
/// then [`arrow_renderer`] for the rest.
pub fn arrow_renderer_for(array: &ArrayRef, kind: Kind) -> Result<Renderer<'_>, CanonicalError> {
    /// The `i`-th string of any of Arrow's string layouts.
    fn text<'a>(array: &'a ArrayRef) -> Option<Box<dyn Fn(usize) -> &'a str + 'a>> {
        Some(match array.data_type() {
            DataType::Utf8 => {
                let values = array.as_string::<i32>();
                Box::new(|i| values.value(i))
            }
            DataType::LargeUtf8 => {
                let values = array.as_string::<i64>();
                Box::new(|i| values.value(i))
            }
            DataType::Utf8View => {
                let values = array.as_string_view();
                Box::new(|i| values.value(i))
            }
            _ => return None,
        })
    }
    /// The `i`-th value of any of Arrow's binary layouts.
    fn bytes<'a>(array: &'a ArrayRef) -> Option<Box<dyn Fn(usize) -> &'a [u8] + 'a>> {
        Some(match array.data_type() {
            DataType::Binary => {
                let values = array.as_binary::<i32>();
                Box::new(|i| values.value(i))
            }
            DataType::LargeBinary => {
                let values = array.as_binary::<i64>();
                Box::new(|i| values.value(i))
            }
            DataType::BinaryView => {
                let values = array.as_binary_view();
                Box::new(|i| values.value(i))
            }
            DataType::FixedSizeBinary(_) => {
                let values = array.as_fixed_size_binary();
                Box::new(|i| values.value(i))
            }
            _ => return None,
        })
    }
    Ok(match (kind, text(array), bytes(array), array.data_type()) {
        (Kind::Char, Some(get), _, _) => each(array, move |i, out| {
            quoted_into(get(i).trim_end_matches(' '), out);
        }),
        (Kind::Json, Some(get), _, _) => each(array, move |i, out| json_into(get(i), out)),
        // Iceberg's uuid: 16 bytes, as PostgreSQL writes a uuid.
        (Kind::Text, _, Some(get), DataType::FixedSizeBinary(16)) => {
            each(array, move |i, out| uuid_into(get(i), out))
        }
        (Kind::Bytea, _, Some(get), _) => each(array, move |i, out| bytes_into(get(i), out)),
        // A sink that keeps Debezium's interval string.
        (Kind::Interval, Some(get), _, _) => {
            each(array, move |i, out| match iso_interval(get(i)) {
                Some(interval) => interval_into(interval, out),
                None => out.push_str("?interval"),
            })
        }
        (
            Kind::Array(element),
            _,
            _,
            DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..),
        ) => list(array, Some(*element))?,
        (_, _, _, DataType::Date32) => {
            let values = array.as_primitive::<arrow_array::types::Date32Type>();
            each(array, move |i, out| {
                let days = values.value(i).checked_add(UNIX_EPOCH_DAYS_CE);
                if date_into(days, out).is_none() {
                    out.push_str("?date");
                }
            })
        }
        (_, _, _, DataType::Time64(TimeUnit::Microsecond)) => {
            let values = array.as_primitive::<arrow_array::types::Time64MicrosecondType>();
            each(array, move |i, out| time_or_mark(values.value(i), out))
        }
        (_, _, _, DataType::Time64(TimeUnit::Nanosecond)) => {
            let values = array.as_primitive::<arrow_array::types::Time64NanosecondType>();
            each(array, move |i, out| {
                time_or_mark(values.value(i) / 1_000, out);
            })
        }
        _ => arrow_renderer(array)?,
    })
}

/// A renderer of an Arrow list column of any layout: each list's values
/// in brackets, rendered by the source's element kind (`None`: by their
/// Arrow type alone); a list of lists (a multidimensional array) nests.
fn list(array: &ArrayRef, element: Option<Kind>) -> Result<Renderer<'_>, CanonicalError> {
    type Bounds<'a> = Box<dyn Fn(usize) -> (usize, usize) + 'a>;
    let as_usize = |o: i64| usize::try_from(o).unwrap_or(0);
    let (values, bounds): (&ArrayRef, Bounds<'_>) = match array.data_type() {
        DataType::List(_) => {
            let lists = array.as_list::<i32>();
            (
                lists.values(),
                Box::new(move |i| {
                    let o = lists.value_offsets();
                    (as_usize(o[i].into()), as_usize(o[i + 1].into()))
                }),
            )
        }
        DataType::LargeList(_) => {
            let lists = array.as_list::<i64>();
            (
                lists.values(),
                Box::new(move |i| {
                    let o = lists.value_offsets();
                    (as_usize(o[i]), as_usize(o[i + 1]))
                }),
            )
        }
        DataType::FixedSizeList(_, _) => {
            let lists = array.as_fixed_size_list();
            (
                lists.values(),
                Box::new(move |i| {
                    let start = as_usize(lists.value_offset(i).into());
                    (start, start + as_usize(lists.value_length().into()))
                }),
            )
        }
        other => {
            return Err(CanonicalError::Unsupported(format!(
                "Arrow {other} as a list"
            )));
        }
    };
    let render = match (values.data_type(), element) {
        (DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..), _) => {
            list(values, element)?
        }
        (_, Some(kind)) => arrow_renderer_for(values, kind)?,
        (_, None) => arrow_renderer(values)?,
    };
    Ok(each(array, move |i, out| {
        let (start, end) = bounds(i);
        out.push('[');
        for j in start..end {
            if j > start {
                out.push(',');
            }
            render(j, out);
        }
        out.push(']');
    }))
}

/// Canonical form of every value of an Arrow column.
pub fn arrow_column(array: &ArrayRef) -> Result<Vec<String>, CanonicalError> {
    let render = arrow_renderer(array)?;
    Ok((0..array.len())
        .map(|i| {
            let mut value = String::new();
            render(i, &mut value);
            value
        })
        .collect())
}

/// Appends the canonical form of value `i` of a column to a string.
pub type Renderer<'a> = Box<dyn Fn(usize, &mut String) + 'a>;

/// A renderer that writes NULL for a null value and `f` for the others.
fn each<'a>(array: &'a ArrayRef, f: impl Fn(usize, &mut String) + 'a) -> Renderer<'a> {
    Box::new(move |i, out| {
        if array.is_null(i) {
            out.push_str(NULL);
        } else {
            f(i, out);
        }
    })
}

/// A [`Renderer`] of `array`'s values ([`arrow_column`] renders them all):
/// the column's type is looked at once, not once per value.
pub fn arrow_renderer(array: &ArrayRef) -> Result<Renderer<'_>, CanonicalError> {
    fn number<T: arrow_array::ArrowPrimitiveType>(array: &ArrayRef) -> Renderer<'_>
    where
        T::Native: itoa::Integer,
    {
        let values = array.as_primitive::<T>();
        each(array, move |i, out| {
            out.push_str(itoa::Buffer::new().format(values.value(i)));
        })
    }
    Ok(match array.data_type() {
        DataType::Int8 => number::<Int8Type>(array),
        DataType::Int16 => number::<Int16Type>(array),
        DataType::Int32 => number::<Int32Type>(array),
        DataType::Int64 => number::<Int64Type>(array),
        DataType::UInt32 => number::<UInt32Type>(array),
        DataType::UInt64 => number::<UInt64Type>(array),
        DataType::Float32 => {
            let values = array.as_primitive::<Float32Type>();
            each(array, move |i, out| {
                out.push_str(&float(f64::from(values.value(i))));
            })
        }
        DataType::Float64 => {
            let values = array.as_primitive::<Float64Type>();
            each(array, move |i, out| out.push_str(&float(values.value(i))))
        }
        DataType::Boolean => {
            let values = array.as_boolean();
            each(array, move |i, out| {
                out.push_str(if values.value(i) { "true" } else { "false" });
            })
        }
        DataType::Utf8 => {
            let values = array.as_string::<i32>();
            each(array, move |i, out| quoted_into(values.value(i), out))
        }
        DataType::LargeUtf8 => {
            let values = array.as_string::<i64>();
            each(array, move |i, out| quoted_into(values.value(i), out))
        }
        DataType::Utf8View => {
            let values = array.as_string_view();
            each(array, move |i, out| quoted_into(values.value(i), out))
        }
        DataType::Decimal128(_, scale) => {
            let scale = *scale;
            let values = array.as_primitive::<arrow_array::types::Decimal128Type>();
            each(array, move |i, out| {
                decimal_unscaled_into(values.value(i), scale, out);
            })
        }
        DataType::Timestamp(unit, _) => {
            let unit = *unit;
            each(array, move |i, out| {
                let micros = match unit {
                    TimeUnit::Second => {
                        array.as_primitive::<TimestampSecondType>().value(i) * 1_000_000
                    }
                    TimeUnit::Millisecond => {
                        array.as_primitive::<TimestampMillisecondType>().value(i) * 1_000
                    }
                    TimeUnit::Microsecond => {
                        array.as_primitive::<TimestampMicrosecondType>().value(i)
                    }
                    TimeUnit::Nanosecond => {
                        array.as_primitive::<TimestampNanosecondType>().value(i) / 1_000
                    }
                };
                timestamp_micros_into(micros, out);
            })
        }
        DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..) => {
            list(array, None)?
        }
        other => {
            return Err(CanonicalError::Unsupported(format!("Arrow {other}")));
        }
    })
}

/// A text column's values (`None` for NULL); `None` if `array` is not text.
#[must_use]
pub fn arrow_text(array: &ArrayRef) -> Option<Vec<Option<String>>> {
    let owned = |v: Option<&str>| v.map(str::to_owned);
    Some(match array.data_type() {
        DataType::Utf8 => array.as_string::<i32>().iter().map(owned).collect(),
        DataType::LargeUtf8 => array.as_string::<i64>().iter().map(owned).collect(),
        DataType::Utf8View => array.as_string_view().iter().map(owned).collect(),
        _ => return None,
    })
}

/// `-?[0-9]+` that fits an `i64`; `None` for anything else (NULL, a value
/// past `i64`), which [`Kind::cmp_canonical`] then orders.
#[must_use]
pub fn plain_i64(text: &str) -> Option<i64> {
    let (negative, digits) = match text.as_bytes() {
        [b'-', rest @ ..] => (true, rest),
        digits => (false, digits),
    };
    if digits.is_empty() || digits.len() > 18 {
        return None;
    }
    let mut value: i64 = 0;
    for digit in digits {
        if !digit.is_ascii_digit() {
            return None;
        }
        value = value * 10 + i64::from(digit - b'0');
    }
    Some(if negative { -value } else { value })
}

/// One row of either side of a reconciliation: its canonical row, then its
/// canonical key, in one string (one allocation per row and side), as
/// [`Layout::write`] writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keyed {
    /// The row, then the key.
    text: String,
    /// Where the row ends in `text`.
    split: usize,
    /// Byte ranges of each key value in the key (in key order), when the
    /// key has more than one column; a one-column key's value is
    /// everything after `name=`.
    pub spans: Vec<(u32, u32)>,
    /// A one-column key's value as an `i64`, if it is written as one
    /// ([`plain_i64`]; the merge orders integer keys by it).
    int: Option<i64>,
}

impl Keyed {
    /// The row of canonical `values` (in `layout`'s column order).
    #[must_use]
    pub fn new(layout: &Layout<'_>, values: &[String]) -> Self {
        let Ok(keyed) = layout.clone().write(|i, out| {
            out.push_str(&values[i]);
            Ok::<_, std::convert::Infallible>(())
        });
        keyed
    }

    /// The canonical key.
    #[must_use]
    pub fn key(&self) -> &str {
        &self.text[self.split..]
    }

    /// The canonical row.
    #[must_use]
    pub fn row(&self) -> &str {
        &self.text[..self.split]
    }

    /// A one-column key's value as an `i64`, if it is written as one.
    #[must_use]
    pub fn int(&self) -> Option<i64> {
        self.int
    }

    /// (key, row), each a string of its own (a diff row, a row table).
    #[must_use]
    pub fn to_pair(&self) -> (String, String) {
        (self.key().to_owned(), self.row().to_owned())
    }
}

/// One table's columns, laid out once for [`row`] (by name) and the key,
/// so each row is joined straight from its rendered values.
#[derive(Debug, Clone)]
pub struct Layout<'a> {
    names: Vec<&'a str>,
    by_name: Vec<usize>,
    key: Vec<usize>,
    /// [`Layout::write`]'s scratch space: each column's byte range in the
    /// row being written, reused row after row.
    ranges: Vec<(usize, usize)>,
    /// The length of the last row [`Layout::write`] wrote (the next one's
    /// capacity).
    last: usize,
}

impl<'a> Layout<'a> {
    /// Columns `names` (in the order values come in); the key is the
    /// columns at `key`, in that order.
    #[must_use]
    pub fn new(names: Vec<&'a str>, key: Vec<usize>) -> Self {
        let mut by_name: Vec<usize> = (0..names.len()).collect();
        // Stable, like `row`'s sort.
        by_name.sort_by(|a, b| names[*a].cmp(names[*b]));
        Self {
            ranges: vec![(0, 0); names.len()],
            names,
            by_name,
            key,
            last: 0,
        }
    }

    /// `row(names zipped with values)`.
    #[must_use]
    pub fn row(&self, values: &[String]) -> String {
        self.join(&self.by_name, values)
    }

    /// `join` of the key columns.
    #[must_use]
    pub fn key(&self, values: &[String]) -> String {
        self.join(&self.key, values)
    }

    /// [`Layout::row`] followed by [`Layout::key`] in one string, written
    /// straight from the columns' values ([`Keyed`]): `render(i, out)`
    /// appends column `i`'s canonical value to `out`, column after column
    /// in name order; the key's values are copied from the row's.
    pub fn write<E>(
        &mut self,
        mut render: impl FnMut(usize, &mut String) -> Result<(), E>,
    ) -> Result<Keyed, E> {
        let mut text = String::with_capacity(self.last);
        for (n, &i) in self.by_name.iter().enumerate() {
            self.label(&mut text, n, i);
            let start = text.len();
            render(i, &mut text)?;
            self.ranges[i] = (start, text.len());
        }
        let split = text.len();
        let int = match self.key.as_slice() {
            [i] => plain_i64(&text[self.ranges[*i].0..self.ranges[*i].1]),
            _ => None,
        };
        let mut spans = Vec::new();
        if self.key.len() > 1 {
            spans.reserve_exact(self.key.len());
        }
        for (n, &i) in self.key.iter().enumerate() {
            self.label(&mut text, n, i);
            let start = text.len() - split;
            text.extend_from_within(self.ranges[i].0..self.ranges[i].1);
            if self.key.len() > 1 {
                spans.push((start as u32, (text.len() - split) as u32));
            }
        }
        self.last = text.len();
        Ok(Keyed {
            text,
            split,
            spans,
            int,
        })
    }

    fn join(&self, order: &[usize], values: &[String]) -> String {
        let len = order
            .iter()
            .map(|i| self.names[*i].len() + 1 + values[*i].len())
            .sum::<usize>()
            + 2 * order.len().saturating_sub(1);
        let mut out = String::with_capacity(len);
        for (n, &i) in order.iter().enumerate() {
            self.label(&mut out, n, i);
            out.push_str(&values[i]);
        }
        out
    }

    /// `name=` of column `i`, the `n`th of a row or key (after `, ` but
    /// the first).
    fn label(&self, out: &mut String, n: usize, i: usize) {
        if n > 0 {
            out.push_str(", ");
        }
        out.push_str(self.names[i]);
        out.push('=');
    }
}

/// An Arrow column of strings (for the diff tables).
#[must_use]
pub fn strings<'a>(values: impl IntoIterator<Item = Option<&'a str>>) -> ArrayRef {
    Arc::new(values.into_iter().collect::<arrow_array::StringArray>())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PostgreSQL's binary `numeric`: (weight, negative, base-10000 digits).
    fn numeric(weight: i16, negative: bool, digits: &[u16]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend((digits.len() as u16).to_be_bytes());
        b.extend(weight.to_be_bytes());
        b.extend((if negative { 0x4000u16 } else { 0 }).to_be_bytes());
        b.extend(4u16.to_be_bytes());
        for d in digits {
            b.extend(d.to_be_bytes());
        }
        b
    }

    #[test]
    fn canonical_rows_split_into_columns_outside_quotes() {
        let row = r#"amount=12.50, note="a, \"b\", c", order_id=7, status=∅"#;
        assert_eq!(
            columns(row),
            [
                ("amount".into(), "12.50".into()),
                ("note".into(), r#""a, \"b\", c""#.into()),
                ("order_id".into(), "7".into()),
                ("status".into(), "∅".into()),
            ]
        );
    }

    #[test]
    fn timestamps_written_from_the_cached_day_are_chronos() {
        // Runs of one day, day changes, before 1970, microseconds at both ends.
        let mut micros = -90_000_000_000i64;
        for step in 0..20_000i64 {
            micros += 7_777_777 * (step % 13) + 999_999;
            let expected = chrono::DateTime::from_timestamp_micros(micros)
                .unwrap()
                .format("%Y-%m-%dT%H:%M:%S%.6fZ")
                .to_string();
            assert_eq!(timestamp_micros(micros), expected, "{micros}");
        }
    }

    /// Every value of a lake column rendered by a source column's kind.
    fn rendered_as(array: &ArrayRef, kind: Kind) -> Vec<String> {
        let render = arrow_renderer_for(array, kind).unwrap();
        (0..array.len())
            .map(|i| {
                let mut out = String::new();
                render(i, &mut out);
                out
            })
            .collect()
    }

    #[test]
    fn lake_columns_render_as_the_source_kind_reads() {
        use arrow_array::{
            BinaryArray, Date32Array, FixedSizeBinaryArray, StringArray, Time64MicrosecondArray,
        };
        let render = |array: ArrayRef, kind: Kind| rendered_as(&array, kind);
        assert_eq!(
            render(
                Arc::new(Date32Array::from(vec![Some(-1), None])),
                Kind::Date
            ),
            ["1969-12-31", NULL]
        );
        assert_eq!(
            render(
                Arc::new(Time64MicrosecondArray::from(vec![45_296_000_001])),
                Kind::Time
            ),
            ["12:34:56.000001"]
        );
        assert_eq!(
            render(Arc::new(StringArray::from(vec!["ab  "])), Kind::Char),
            ["\"ab\""]
        );
        assert_eq!(
            render(
                Arc::new(StringArray::from(vec!["{\"b\":1,\"a\":[true]}"])),
                Kind::Json
            ),
            [quoted("{\"a\":[true],\"b\":1}")]
        );
        assert_eq!(
            render(
                Arc::new(BinaryArray::from(vec![&[0u8, 255][..]])),
                Kind::Bytea
            ),
            ["\\x00ff"]
        );
        let uuid = FixedSizeBinaryArray::try_from_iter([[0x12u8; 16]].into_iter()).unwrap();
        assert_eq!(
            render(Arc::new(uuid), Kind::Text),
            ["\"12121212-1212-1212-1212-121212121212\""]
        );
    }

    /// PostgreSQL's binary array of `member` with dimensions `lengths`
    /// (lower bounds 1, or 0 when `zero_based`) and `elements` (`None`:
    /// NULL), row-major.
    fn binary_array(lengths: &[i32], zero_based: bool, elements: &[Option<Vec<u8>>]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(i32::try_from(lengths.len()).unwrap().to_be_bytes());
        b.extend(i32::from(elements.iter().any(Option::is_none)).to_be_bytes());
        b.extend(23i32.to_be_bytes()); // the element type's oid, not read
        for length in lengths {
            b.extend(length.to_be_bytes());
            b.extend(i32::from(!zero_based).to_be_bytes());
        }
        for element in elements {
            match element {
                None => b.extend((-1i32).to_be_bytes()),
                Some(bytes) => {
                    b.extend(i32::try_from(bytes.len()).unwrap().to_be_bytes());
                    b.extend(bytes);
                }
            }
        }
        b
    }

    #[test]
    fn arrays_render_their_elements_alike_on_every_side() {
        use arrow_array::builder::{Int32Builder, ListBuilder, StringBuilder};
        use tokio_postgres::types::Type;
        let int_array = Kind::of_sql("integer[]").unwrap();
        assert_eq!(int_array, Kind::Array(&Kind::Int));
        assert_eq!(
            Kind::of_sql("numeric(12,2)[]"),
            Ok(Kind::Array(&Kind::Decimal))
        );
        assert_eq!(
            Kind::of_sql("timestamp with time zone[]"),
            Ok(Kind::Array(&Kind::Timestamptz))
        );
        assert_eq!(
            Kind::of_sql("int4range[]"),
            Err(CanonicalError::Unsupported("int4range[]".into()))
        );
        assert!(Kind::Array(&Kind::Int).array().is_err());
        // The source: binary, one and two dimensions, NULL elements, empty.
        let four = |v: i32| Some(v.to_be_bytes().to_vec());
        let one = binary_array(&[3], false, &[four(1), None, four(-3)]);
        assert_eq!(
            read(int_array, &Type::INT4_ARRAY, &one).unwrap(),
            "[1,∅,-3]"
        );
        let zero_based = binary_array(&[3], true, &[four(1), None, four(-3)]);
        assert_eq!(
            read(int_array, &Type::INT4_ARRAY, &zero_based).unwrap(),
            "[1,∅,-3]",
            "lower bounds are not part of the value"
        );
        let two = binary_array(&[2, 2], false, &[four(1), four(2), four(3), four(4)]);
        assert_eq!(
            read(int_array, &Type::INT4_ARRAY, &two).unwrap(),
            "[[1,2],[3,4]]"
        );
        let empty = binary_array(&[], false, &[]);
        assert_eq!(read(int_array, &Type::INT4_ARRAY, &empty).unwrap(), "[]");
        let text_array = Kind::Array(&Kind::Text);
        let texts = binary_array(
            &[2],
            false,
            &[Some(b"b,c".to_vec()), Some(b"\"q\"".to_vec())],
        );
        assert_eq!(
            read(text_array, &Type::TEXT_ARRAY, &texts).unwrap(),
            r#"["b,c","\"q\""]"#
        );
        // Malformed: truncated, trailing bytes, an element of the wrong size.
        assert!(read(int_array, &Type::INT4_ARRAY, &one[..one.len() - 1]).is_err());
        assert!(
            read(
                int_array,
                &Type::INT4_ARRAY,
                &[one.clone(), vec![0]].concat()
            )
            .is_err()
        );
        let short = binary_array(&[1], false, &[Some(vec![1, 2, 3])]);
        assert!(read(int_array, &Type::INT4_ARRAY, &short).is_err());
        assert!(
            read(int_array, &Type::INT4, &1i32.to_be_bytes()).is_err(),
            "a scalar is not an array"
        );
        // A change event's JSON array (timestamps as ISO 8601 or micros).
        let text = |kind: Kind, t: &str| kind.from_source_text(Some(t)).unwrap();
        assert_eq!(text(int_array, "[1,null,-3]"), "[1,∅,-3]");
        assert_eq!(text(int_array, "[[1,2],[3,4]]"), "[[1,2],[3,4]]");
        assert_eq!(text(text_array, r#"["b,c","\"q\""]"#), r#"["b,c","\"q\""]"#);
        assert_eq!(
            text(
                Kind::Array(&Kind::Timestamptz),
                r#"["1969-12-31T23:59:59.999999Z", 0]"#
            ),
            "[1969-12-31T23:59:59.999999Z,1970-01-01T00:00:00.000000Z]"
        );
        assert!(int_array.from_source_text(Some("[1,\"x\"]")).is_err());
        assert!(int_array.from_source_text(Some("{1,2}")).is_err());
        // The lake: an Arrow list, its NULL apart from an empty list.
        let mut ints = ListBuilder::new(Int32Builder::new());
        ints.append_value([Some(1), None, Some(-3)]);
        ints.append_null();
        ints.append_value([]);
        let ints: ArrayRef = Arc::new(ints.finish());
        let mut texts = ListBuilder::new(StringBuilder::new());
        texts.append_value([Some("b,c"), Some("\"q\"")]);
        let texts: ArrayRef = Arc::new(texts.finish());
        assert_eq!(rendered_as(&ints, int_array), ["[1,∅,-3]", NULL, "[]"]);
        assert_eq!(rendered_as(&texts, text_array), [r#"["b,c","\"q\""]"#]);
        assert_eq!(
            arrow_column(&ints).unwrap(),
            ["[1,∅,-3]", NULL, "[]"],
            "without the source's kind too"
        );
    }

    #[test]
    fn intervals_keep_months_days_and_microseconds_apart() {
        use tokio_postgres::types::Type;
        let text = |t: &str| Kind::Interval.from_source_text(Some(t)).unwrap();
        assert_eq!(text("P1Y2M3DT4H5M6.78S"), "P14M3DT14706.78S");
        assert_eq!(text("P-1Y-2M3DT-4H-5M-6.78S"), "P-14M3DT-14706.78S");
        assert_eq!(text("PT0S"), "P0M0DT0S");
        assert_eq!(text("PT100H"), "P0M0DT360000S");
        assert_eq!(text("PT0.000001S"), "P0M0DT0.000001S");
        // Debezium's seconds come from a double: rounded to the microsecond.
        assert_eq!(text("PT6.780000000000000248S"), "P0M0DT6.78S");
        assert_eq!(text("PT-0.0000005S"), "P0M0DT-0.000001S");
        assert_eq!(text("P2W"), "P0M14DT0S");
        for bad in ["", "P", "1Y", "P1X", "PT1Y", "P1.5D", "P1", "PTS"] {
            assert!(Kind::Interval.from_source_text(Some(bad)).is_err(), "{bad}");
        }
        // PostgreSQL's binary interval: microseconds, days, months.
        let mut b = (-14_706_780_000i64).to_be_bytes().to_vec();
        b.extend(3i32.to_be_bytes());
        b.extend((-14i32).to_be_bytes());
        assert_eq!(
            read(Kind::Interval, &Type::INTERVAL, &b).unwrap(),
            "P-14M3DT-14706.78S"
        );
        assert!(read(Kind::Interval, &Type::INTERVAL, &b[..15]).is_err());
        let lake = Arc::new(arrow_array::StringArray::from(vec![
            "P1Y2M3DT4H5M6.78S",
            "junk",
        ]));
        let array: ArrayRef = lake;
        let render = arrow_renderer_for(&array, Kind::Interval).unwrap();
        let rendered: Vec<String> = (0..2)
            .map(|i| {
                let mut out = String::new();
                render(i, &mut out);
                out
            })
            .collect();
        assert_eq!(rendered, ["P14M3DT14706.78S", "?interval"]);
        assert_eq!(Kind::of_sql("interval"), Ok(Kind::Interval));
        assert_eq!(Kind::of_sql("interval day to second"), Ok(Kind::Interval));
    }

    /// `kind`'s canonical form of binary value `b` of a column the server
    /// sends as `ty`, as the source reader reads it.
    fn read(
        kind: Kind,
        ty: &tokio_postgres::types::Type,
        b: &[u8],
    ) -> Result<String, CanonicalError> {
        let mut out = String::new();
        Stored::of_column(ty, kind)?
            .write(Some(b), &mut out)
            .map(|()| out)
    }

    #[test]
    fn binary_values_read_as_their_text_reads() {
        use tokio_postgres::types::Type;
        for (b, text) in [
            (numeric(0, false, &[12, 5000]), "12.5"),
            (numeric(-1, false, &[1]), "0.0001"),
            (numeric(-2, false, &[1000]), "0.00001"),
            (numeric(1, false, &[1]), "10000"),
            (numeric(1, true, &[12, 3456, 7890]), "-123456.789"),
            (numeric(2, false, &[9, 0, 0, 5]), "900000000.0005"),
            (numeric(0, false, &[]), "0"),
        ] {
            assert_eq!(
                read(Kind::Decimal, &Type::NUMERIC, &b).unwrap(),
                decimal(text).unwrap(),
                "{text}"
            );
        }
        let nan = [0, 0, 0, 0, 0xC0, 0, 0, 0];
        assert_eq!(read(Kind::Decimal, &Type::NUMERIC, &nan).unwrap(), "NaN");
        assert_eq!(
            Kind::Decimal.from_source_text(Some("-Infinity")).unwrap(),
            "-inf"
        );
    }

    #[test]
    fn binary_dates_times_bytes_and_json_read_as_their_text_reads() {
        use tokio_postgres::types::Type;
        // 2000-01-01 + 1 day; 1969-12-31 (before both epochs).
        assert_eq!(
            read(Kind::Date, &Type::DATE, &1i32.to_be_bytes()).unwrap(),
            "2000-01-02"
        );
        assert_eq!(
            read(Kind::Date, &Type::DATE, &(-10_957i32).to_be_bytes()).unwrap(),
            "1970-01-01"
        );
        assert_eq!(
            Kind::Date.from_source_text(Some("-1")).unwrap(),
            "1969-12-31"
        );
        assert_eq!(
            read(Kind::Time, &Type::TIME, &45_296_000_001i64.to_be_bytes()).unwrap(),
            "12:34:56.000001"
        );
        assert_eq!(
            Kind::Time.from_source_text(Some("45296000001")).unwrap(),
            "12:34:56.000001"
        );
        assert_eq!(
            read(Kind::Bytea, &Type::BYTEA, &[0, 0xab, 0x10]).unwrap(),
            "\\x00ab10"
        );
        assert_eq!(
            Kind::Bytea.from_source_text(Some("\\x00AB10")).unwrap(),
            "\\x00ab10"
        );
        assert_eq!(read(Kind::Char, &Type::BPCHAR, b"ab  ").unwrap(), "\"ab\"");
        // jsonb's and json's text, and the lake's, all to one canonical JSON.
        let jsonb = [
            b"\x01".as_slice(),
            "{\"b\": [1, 2.5], \"a\": \"é\"}".as_bytes(),
        ]
        .concat();
        let canonical = read(Kind::Json, &Type::JSONB, &jsonb).unwrap();
        assert_eq!(
            canonical,
            read(
                Kind::Json,
                &Type::JSON,
                b"{ \"a\":\"\\u00e9\",\"b\":[1,2.5] }"
            )
            .unwrap()
        );
        assert_eq!(canonical, quoted("{\"a\":\"é\",\"b\":[1,2.5]}"));
        assert_eq!(
            read(Kind::Int, &Type::INT2, &(-7i16).to_be_bytes()).unwrap(),
            "-7"
        );
        assert_eq!(
            read(Kind::Int, &Type::INT8, &i64::MIN.to_be_bytes()).unwrap(),
            i64::MIN.to_string()
        );
        // 2026-11-30T03:51:11.1234Z: microseconds since 2000-01-01.
        let micros = 1_796_010_671_123_400i64 - POSTGRES_EPOCH_MICROS;
        assert_eq!(
            read(Kind::Timestamptz, &Type::TIMESTAMPTZ, &micros.to_be_bytes()).unwrap(),
            Kind::Timestamptz
                .from_source_text(Some("1796010671123400"))
                .unwrap()
        );
        assert!(
            read(
                Kind::Timestamptz,
                &Type::TIMESTAMPTZ,
                &i64::MAX.to_be_bytes()
            )
            .is_err(),
            "infinity"
        );
        let uuid = [
            0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0, 1, 2, 3, 4, 5, 6, 7,
        ];
        assert_eq!(
            read(Kind::Text, &Type::UUID, &uuid).unwrap(),
            "\"12345678-9abc-def0-0001-020304050607\""
        );
        assert_eq!(
            read(Kind::Float, &Type::FLOAT4, &0.1f32.to_be_bytes()).unwrap(),
            float(f64::from(0.1f32))
        );
        assert_eq!(read(Kind::Bool, &Type::BOOL, &[1]).unwrap(), "true");
        assert!(matches!(
            read(Kind::Int, &Type::TEXT, b"1"),
            Err(CanonicalError::Unsupported(_))
        ));
    }

    #[test]
    fn equal_values_in_different_representations_are_one_string() {
        assert_eq!(decimal("10.50"), decimal("10.5"));
        assert_eq!(decimal("10.50").unwrap(), "10.5");
        assert_eq!(decimal("3.00").unwrap(), "3");
        assert_eq!(decimal("-0.00").unwrap(), "0");
        assert_eq!(decimal("007.10").unwrap(), "7.1");
        assert_eq!(decimal(".5").unwrap(), "0.5");
        assert_eq!(decimal_unscaled(1050, 2), "10.5");
        assert_eq!(decimal_unscaled(-5, 2), "-0.05");
        assert_eq!(decimal_unscaled(0, 2), "0");
        assert_eq!(decimal_unscaled(12, -2), "1200");
        assert_eq!(decimal("1e5"), None);
        assert_eq!(decimal("-"), None);
    }

    #[test]
    fn different_values_stay_different() {
        assert_ne!(quoted(""), NULL, "the empty string is not NULL");
        assert_ne!(
            quoted("∅"),
            NULL,
            "text that looks like the marker is quoted"
        );
        assert_ne!(decimal("10.5"), decimal("10.05"));
        assert_eq!(quoted("a\"b, c=d"), r#""a\"b, c=d""#);
        let a = row(vec![("b", quoted("x, a=1")), ("a", "2".into())]);
        let b = row(vec![("b", quoted("x")), ("a", "1".into())]);
        assert_ne!(a, b);
        assert_eq!(b, r#"a=1, b="x""#, "sorted by column name");
    }

    #[test]
    fn timestamps_are_utc_instants() {
        assert_eq!(
            timestamp_micros(1_796_010_671_123_400),
            "2026-11-30T03:51:11.123400Z"
        );
        assert_eq!(timestamp_micros(-1), "1969-12-31T23:59:59.999999Z");
        assert_eq!(
            Kind::Timestamptz
                .from_source_text(Some("1796010671123400"))
                .unwrap(),
            timestamp_micros(1_796_010_671_123_400)
        );
    }

    #[test]
    fn floats_and_source_text() {
        assert_eq!(float(0.1), "0.1");
        assert_eq!(float(-0.0), "0");
        assert_eq!(float(f64::NAN), "NaN");
        assert_eq!(
            Kind::Float.from_source_text(Some("0.1")).unwrap(),
            float(0.1)
        );
        assert_eq!(
            Kind::Float.from_source_text(Some("-Infinity")).unwrap(),
            "-inf"
        );
        assert_eq!(Kind::Int.from_source_text(Some("-42")).unwrap(), "-42");
        assert_eq!(Kind::Bool.from_source_text(Some("true")).unwrap(), "true");
        assert_eq!(Kind::Text.from_source_text(None).unwrap(), NULL);
        assert!(Kind::Int.from_source_text(Some("x")).is_err());
        assert!(Kind::of_sql("geometry").is_err());
        assert_eq!(Kind::of_sql("numeric(14,2)").unwrap(), Kind::Decimal);
    }

    #[test]
    fn arrow_columns_render_like_the_source() {
        let decimals: ArrayRef = Arc::new(
            arrow_array::Decimal128Array::from(vec![Some(1050), None])
                .with_precision_and_scale(10, 2)
                .unwrap(),
        );
        assert_eq!(arrow_column(&decimals).unwrap(), ["10.5", NULL]);
        let stamps: ArrayRef = Arc::new(
            arrow_array::TimestampMicrosecondArray::from(vec![1_796_010_671_123_400])
                .with_timezone("+00:00"),
        );
        assert_eq!(
            arrow_column(&stamps).unwrap()[0],
            Kind::Timestamptz
                .from_source_text(Some("1796010671123400"))
                .unwrap()
        );
        let texts: ArrayRef = Arc::new(arrow_array::StringArray::from(vec![Some(""), None]));
        assert_eq!(arrow_column(&texts).unwrap(), [quoted(""), NULL.to_owned()]);
    }

    /// The fast paths give exactly what the plain formatting gives.
    #[test]
    fn fast_paths_match_the_plain_forms() {
        for micros in [
            0,
            -1,
            1_796_010_671_123_400,
            -62_167_219_200_000_000, // 0000-01-01
            -62_167_219_200_000_001, // the microsecond before: year -1
            253_402_300_799_999_999, // 9999-12-31T23:59:59.999999
            253_402_300_800_000_000, // 10000-01-01
            -30_610_224_000_000_000, // 1000-01-01
            i64::MAX,
            i64::MIN,
        ] {
            let secs = micros.div_euclid(1_000_000);
            let frac = micros.rem_euclid(1_000_000);
            let plain = match chrono::DateTime::from_timestamp(secs, 0) {
                Some(t) => format!("{}.{frac:06}Z", t.format("%Y-%m-%dT%H:%M:%S")),
                None => format!("@{micros}us"),
            };
            assert_eq!(timestamp_micros(micros), plain, "{micros}");
        }
        for text in [
            "",
            "plain",
            "a\"b",
            "back\\slash",
            "tab\t",
            "nul\u{0}",
            "del\u{7f}",
            "∅ é",
        ] {
            assert_eq!(
                quoted(text),
                serde_json::to_string(text).unwrap(),
                "{text:?}"
            );
        }
        for t in [
            "0",
            "-0",
            "7",
            "-42",
            "007",
            "+5",
            "-007",
            "12345678901234567890123456789012345678",
        ] {
            let plain = t.parse::<i128>().unwrap().to_string();
            assert_eq!(Kind::Int.from_source_text(Some(t)).unwrap(), plain, "{t}");
        }
        assert!(Kind::Int.from_source_text(Some("")).is_err());
        assert!(Kind::Int.from_source_text(Some("-")).is_err());
        for (value, scale) in [
            (0, 2),
            (1050, 2),
            (-5, 2),
            (-1000, 3),
            (100, 2),
            (123_456_789, 5),
            (i128::MAX, 38),
            (i128::MIN + 1, 38),
            (12, -2),
            (7, 0),
        ] {
            assert_eq!(
                decimal_unscaled(value, scale),
                decimal_unscaled_text(value, scale),
                "{value} scale {scale}"
            );
        }
        let names = vec!["b", "a", "c"];
        let values = vec![quoted("x, a=1"), "2".to_owned(), NULL.to_owned()];
        let layout = Layout::new(names.clone(), vec![2, 0]);
        let pairs: Vec<(&str, String)> = names.into_iter().zip(values.clone()).collect();
        assert_eq!(layout.row(&values), row(pairs.clone()));
        assert_eq!(
            layout.key(&values),
            join(&[pairs[2].clone(), pairs[0].clone()])
        );
    }
}
