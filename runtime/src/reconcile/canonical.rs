//! One canonical string per row, so a source row and a lake row compare
//! equal exactly when they hold the same values, whatever each side's
//! representation:
//!
//! | value | canonical form |
//! |---|---|
//! | NULL | `∅` (never produced by any other value: text is always quoted) |
//! | integer (any width) | decimal digits: `-42` |
//! | decimal / numeric | normalised: no trailing fraction zeros, no `-0`: `10.50` and `10.5` → `10.5`, `3.00` → `3` |
//! | timestamp with time zone | the UTC instant, microseconds always shown: `2026-11-30T03:51:11.123400Z` |
//! | text | JSON string (`"a\"b"`): quotes, backslashes, separators and control characters escaped; `""` ≠ `∅` |
//! | boolean | `true` / `false` |
//! | float | shortest round-trip decimal (`0.1`, `1e300`), `NaN`, `inf`, `-inf`; `-0.0` → `0` |
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

/// The NULL marker.
pub const NULL: &str = "∅";

/// How a source column's values are read and rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Int,
    Decimal,
    Timestamptz,
    Text,
    Bool,
    Float,
}

impl Kind {
    /// The kind of a `PostgreSQL` type as `format_type` prints it.
    pub fn of_sql(sql_type: &str) -> Result<Self, String> {
        let t = sql_type.to_ascii_lowercase();
        Ok(match t.as_str() {
            "smallint" | "integer" | "bigint" => Self::Int,
            "text" | "character varying" | "uuid" => Self::Text,
            "boolean" => Self::Bool,
            "real" | "double precision" => Self::Float,
            "timestamp with time zone" | "timestamptz" => Self::Timestamptz,
            _ if t.starts_with("numeric") => Self::Decimal,
            _ if t.starts_with("character varying") => Self::Text,
            _ => {
                return Err(format!(
                    "the reconciler has no canonical form for `{sql_type}` yet"
                ));
            }
        })
    }

    /// The SQL that reads column `c` as text PostgreSQL renders exactly
    /// (timestamps as epoch microseconds, exact).
    #[must_use]
    pub fn source_expr(self, c: &str) -> String {
        match self {
            Self::Timestamptz => format!("(extract(epoch from {c}) * 1000000)::bigint::text"),
            Self::Float => format!("{c}::float8::text"),
            Self::Int | Self::Decimal | Self::Text | Self::Bool => format!("{c}::text"),
        }
    }

    /// Canonical form of the text [`Kind::source_expr`] produced.
    pub fn from_source_text(self, text: Option<&str>) -> Result<String, String> {
        let Some(t) = text else {
            return Ok(NULL.to_owned());
        };
        let bad = || format!("`{t}` is not a valid {self:?} value");
        Ok(match self {
            Self::Int => t.parse::<i128>().map_err(|_| bad())?.to_string(),
            Self::Decimal => decimal(t).ok_or_else(bad)?,
            Self::Timestamptz => timestamp_micros(t.parse().map_err(|_| bad())?),
            Self::Text => quoted(t),
            Self::Bool => match t {
                "true" | "t" => "true".into(),
                "false" | "f" => "false".into(),
                _ => return Err(bad()),
            },
            Self::Float => float(match t {
                "NaN" => f64::NAN,
                "Infinity" => f64::INFINITY,
                "-Infinity" => f64::NEG_INFINITY,
                _ => t.parse().map_err(|_| bad())?,
            }),
        })
    }
}

/// `10.50` → `10.5`, `-0.00` → `0`, `007` → `7`; `None` if not a decimal.
#[must_use]
pub fn decimal(text: &str) -> Option<String> {
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
        return None;
    }
    let int_part = int_part.trim_start_matches('0');
    let frac = frac.trim_end_matches('0');
    let int_part = if int_part.is_empty() { "0" } else { int_part };
    let zero = int_part == "0" && frac.is_empty();
    let mut out = String::new();
    if negative && !zero {
        out.push('-');
    }
    out.push_str(int_part);
    if !frac.is_empty() {
        out.push('.');
        out.push_str(frac);
    }
    Some(out)
}

/// An unscaled decimal (Arrow's `Decimal128`) in canonical form.
#[must_use]
pub fn decimal_unscaled(value: i128, scale: i8) -> String {
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
    let secs = micros.div_euclid(1_000_000);
    let frac = micros.rem_euclid(1_000_000);
    match chrono::DateTime::from_timestamp(secs, 0) {
        Some(t) => format!("{}.{frac:06}Z", t.format("%Y-%m-%dT%H:%M:%S")),
        None => format!("@{micros}us"),
    }
}

/// Text as a JSON string literal.
#[must_use]
pub fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| format!("{text:?}"))
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

/// Canonical form of every value of an Arrow column.
pub fn arrow_column(array: &ArrayRef) -> Result<Vec<String>, String> {
    let n = array.len();
    let each = |f: &dyn Fn(usize) -> String| -> Vec<String> {
        (0..n)
            .map(|i| {
                if array.is_null(i) {
                    NULL.to_owned()
                } else {
                    f(i)
                }
            })
            .collect()
    };
    Ok(match array.data_type() {
        DataType::Int8 => each(&|i| array.as_primitive::<Int8Type>().value(i).to_string()),
        DataType::Int16 => each(&|i| array.as_primitive::<Int16Type>().value(i).to_string()),
        DataType::Int32 => each(&|i| array.as_primitive::<Int32Type>().value(i).to_string()),
        DataType::Int64 => each(&|i| array.as_primitive::<Int64Type>().value(i).to_string()),
        DataType::UInt32 => each(&|i| array.as_primitive::<UInt32Type>().value(i).to_string()),
        DataType::UInt64 => each(&|i| array.as_primitive::<UInt64Type>().value(i).to_string()),
        DataType::Float32 => {
            each(&|i| float(f64::from(array.as_primitive::<Float32Type>().value(i))))
        }
        DataType::Float64 => each(&|i| float(array.as_primitive::<Float64Type>().value(i))),
        DataType::Boolean => each(&|i| array.as_boolean().value(i).to_string()),
        DataType::Utf8 => each(&|i| quoted(array.as_string::<i32>().value(i))),
        DataType::LargeUtf8 => each(&|i| quoted(array.as_string::<i64>().value(i))),
        DataType::Utf8View => each(&|i| quoted(array.as_string_view().value(i))),
        DataType::Decimal128(_, scale) => {
            let scale = *scale;
            each(&|i| {
                decimal_unscaled(
                    array
                        .as_primitive::<arrow_array::types::Decimal128Type>()
                        .value(i),
                    scale,
                )
            })
        }
        DataType::Timestamp(unit, _) => {
            let micros = |i: usize| -> i64 {
                match unit {
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
                }
            };
            each(&|i| timestamp_micros(micros(i)))
        }
        other => {
            return Err(format!(
                "the reconciler has no canonical form for Arrow {other} yet"
            ));
        }
    })
}

/// An Arrow column of strings (for the diff tables).
#[must_use]
pub fn strings<'a>(values: impl IntoIterator<Item = Option<&'a str>>) -> ArrayRef {
    Arc::new(values.into_iter().collect::<arrow_array::StringArray>())
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
