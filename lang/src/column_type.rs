//! [`ColumnType`]: every column type lossproof can create in a source,
//! generate values of, capture, write to a lake and compare. A type is
//! parsed once, here ([`ColumnType::parse`]), from a declared table's line
//! or from what PostgreSQL's `format_type` prints; everything after works on
//! the variant, and matches it with no `_` arm, so a new type is one variant
//! here and the compiler lists every place that must learn it: the table
//! reader's rules ([`crate::tables`]), the reconciler's canonical form, the
//! consumers' Iceberg types, the generator's values and edges.

use std::fmt;

/// A column type. Arrays hold one scalar type (PostgreSQL's arrays of any
/// dimension are one type).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ColumnType {
    SmallInt,
    Integer,
    BigInt,
    /// `numeric(P,S)`; `None`: an unconstrained `numeric` (a source table
    /// lossproof reads; a declared one must give both).
    Numeric(Option<(u32, u32)>),
    Real,
    DoublePrecision,
    Boolean,
    Text,
    /// `varchar(N)`; `None`: no length limit.
    Varchar(Option<u32>),
    /// `char(N)`: values padded with spaces to N.
    Char(u32),
    Uuid,
    Date,
    /// `time` without time zone, at any precision.
    Time,
    /// `timestamp` without time zone, at any precision.
    Timestamp,
    /// `timestamp with time zone`, at any precision.
    Timestamptz,
    Interval,
    Json,
    Jsonb,
    Bytea,
    Array(Box<ColumnType>),
}

/// Why a text is not a [`ColumnType`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeError {
    /// A type lossproof has no way to generate or compare (as written).
    Unknown(String),
    /// The type's arguments are not numbers in its range.
    BadSize(String),
    /// An array of arrays: PostgreSQL's arrays of any dimension are one type.
    NestedArray,
}

impl ColumnType {
    /// One of each scalar variant, in declaration order, sized as a
    /// declared table might (the generator's tests and the reference
    /// docs walk it).
    pub const EXAMPLES: [ColumnType; 19] = [
        Self::SmallInt,
        Self::Integer,
        Self::BigInt,
        Self::Numeric(Some((38, 10))),
        Self::Real,
        Self::DoublePrecision,
        Self::Boolean,
        Self::Text,
        Self::Varchar(Some(12)),
        Self::Char(12),
        Self::Uuid,
        Self::Date,
        Self::Time,
        Self::Timestamp,
        Self::Timestamptz,
        Self::Interval,
        Self::Json,
        Self::Jsonb,
        Self::Bytea,
    ];

    /// The type of `text`: as a declared table writes it (`numeric(10,2)`,
    /// `int4`, `double precision`, `text[]`) or as PostgreSQL's
    /// `format_type` prints it (`character varying(40)`, `timestamp(3)
    /// with time zone`, `integer[]`). Case and spaces do not matter.
    ///
    /// # Errors
    /// When it is not a type lossproof supports.
    pub fn parse(text: &str) -> Result<Self, TypeError> {
        let text = text.trim().to_ascii_lowercase();
        if let Some(element) = text.strip_suffix("[]") {
            return match Self::parse(element)? {
                Self::Array(_) => Err(TypeError::NestedArray),
                scalar => Ok(Self::Array(Box::new(scalar))),
            };
        }
        // `name(args) rest`: `timestamp(3) with time zone`.
        let (name, args, rest) = match text.split_once('(') {
            Some((name, after)) => {
                let (args, rest) = after.split_once(')').unwrap_or((after, ""));
                (name.trim(), Some(args), rest.trim())
            }
            None => (text.as_str(), None, ""),
        };
        let words: Vec<&str> = name
            .split_whitespace()
            .chain(rest.split_whitespace())
            .collect();
        let sizes = || -> Result<Vec<u32>, TypeError> {
            args.unwrap_or_default()
                .split(',')
                .filter(|a| !a.trim().is_empty())
                .map(|a| {
                    a.trim()
                        .parse()
                        .map_err(|_| TypeError::BadSize(text.clone()))
                })
                .collect()
        };
        let one_size = || -> Result<Option<u32>, TypeError> {
            match sizes()?.as_slice() {
                [] => Ok(None),
                [n] => Ok(Some(*n)),
                _ => Err(TypeError::BadSize(text.clone())),
            }
        };
        Ok(match words.as_slice() {
            ["smallint" | "int2"] => Self::SmallInt,
            ["integer" | "int" | "int4"] => Self::Integer,
            ["bigint" | "int8"] => Self::BigInt,
            ["numeric" | "decimal"] => Self::Numeric(match sizes()?.as_slice() {
                [] => None,
                [p] => Some((*p, 0)),
                [p, s] => Some((*p, *s)),
                _ => return Err(TypeError::BadSize(text.clone())),
            }),
            ["real" | "float4"] => Self::Real,
            ["double", "precision"] | ["float8"] => Self::DoublePrecision,
            ["boolean" | "bool"] => Self::Boolean,
            ["text"] => Self::Text,
            ["varchar"] | ["character", "varying"] => Self::Varchar(one_size()?),
            ["char" | "character" | "bpchar"] => Self::Char(one_size()?.unwrap_or(1)),
            ["uuid"] => Self::Uuid,
            ["date"] => Self::Date,
            ["time"] | ["time", "without", "time", "zone"] => Self::Time,
            ["timestamp"] | ["timestamp", "without", "time", "zone"] => Self::Timestamp,
            ["timestamptz"] | ["timestamp", "with", "time", "zone"] => Self::Timestamptz,
            // `interval`, or with fields (`interval day to second`).
            ["interval", ..] => Self::Interval,
            ["json"] => Self::Json,
            ["jsonb"] => Self::Jsonb,
            ["bytea"] => Self::Bytea,
            _ => return Err(TypeError::Unknown(text.clone())),
        })
    }

    /// The wider type `alter table T widen C` changes a column to, if any.
    #[must_use]
    pub fn widens_to(&self) -> Option<Self> {
        match self {
            Self::SmallInt => Some(Self::Integer),
            Self::Integer => Some(Self::BigInt),
            Self::Numeric(Some((p, s))) if *p < 38 => {
                Some(Self::Numeric(Some(((p + 4).min(38), *s))))
            }
            Self::Varchar(Some(n)) => {
                Some(Self::Varchar(Some(n.saturating_mul(2).min(10_485_760))))
            }
            Self::Numeric(_)
            | Self::Varchar(None)
            | Self::BigInt
            | Self::Real
            | Self::DoublePrecision
            | Self::Boolean
            | Self::Text
            | Self::Char(_)
            | Self::Uuid
            | Self::Date
            | Self::Time
            | Self::Timestamp
            | Self::Timestamptz
            | Self::Interval
            | Self::Json
            | Self::Jsonb
            | Self::Bytea
            | Self::Array(_) => None,
        }
    }

    /// Whether a primary-key column may have this type (the generator
    /// makes unique values of it from each connection's own key space).
    #[must_use]
    pub fn can_be_key(&self) -> bool {
        match self {
            Self::Integer | Self::BigInt | Self::Text | Self::Varchar(_) | Self::Uuid => true,
            Self::SmallInt
            | Self::Numeric(_)
            | Self::Real
            | Self::DoublePrecision
            | Self::Boolean
            | Self::Char(_)
            | Self::Date
            | Self::Time
            | Self::Timestamp
            | Self::Timestamptz
            | Self::Interval
            | Self::Json
            | Self::Jsonb
            | Self::Bytea
            | Self::Array(_) => false,
        }
    }

    /// The element type of an array type.
    #[must_use]
    pub fn element(&self) -> Option<&Self> {
        match self {
            Self::Array(element) => Some(element),
            _ => None,
        }
    }

    /// How the type is written in help texts: `numeric(P,S)` for every
    /// numeric, `text[]` for an array of text.
    #[must_use]
    pub fn usage(&self) -> String {
        match self {
            Self::Numeric(_) => "numeric(P,S)".to_owned(),
            Self::Varchar(_) => "varchar(N)".to_owned(),
            Self::Char(_) => "char(N)".to_owned(),
            Self::Array(element) => format!("{}[]", element.usage()),
            Self::SmallInt
            | Self::Integer
            | Self::BigInt
            | Self::Real
            | Self::DoublePrecision
            | Self::Boolean
            | Self::Text
            | Self::Uuid
            | Self::Date
            | Self::Time
            | Self::Timestamp
            | Self::Timestamptz
            | Self::Interval
            | Self::Json
            | Self::Jsonb
            | Self::Bytea => self.to_string(),
        }
    }

    /// Its first word (`double` for `double precision`), for "did you
    /// mean" and completion.
    #[must_use]
    pub fn word(&self) -> &'static str {
        match self {
            Self::SmallInt => "smallint",
            Self::Integer => "integer",
            Self::BigInt => "bigint",
            Self::Numeric(_) => "numeric",
            Self::Real => "real",
            Self::DoublePrecision => "double",
            Self::Boolean => "boolean",
            Self::Text => "text",
            Self::Varchar(_) => "varchar",
            Self::Char(_) => "char",
            Self::Uuid => "uuid",
            Self::Date => "date",
            Self::Time => "time",
            Self::Timestamp => "timestamp",
            Self::Timestamptz => "timestamptz",
            Self::Interval => "interval",
            Self::Json => "json",
            Self::Jsonb => "jsonb",
            Self::Bytea => "bytea",
            Self::Array(element) => element.word(),
        }
    }
}

/// The type as a DDL writes it (`numeric(10,2)`, `double precision`,
/// `text[]`); [`ColumnType::parse`] reads it back.
impl fmt::Display for ColumnType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Numeric(Some((p, s))) => write!(f, "numeric({p},{s})"),
            Self::Numeric(None) => f.write_str("numeric"),
            Self::Varchar(Some(n)) => write!(f, "varchar({n})"),
            Self::Varchar(None) => f.write_str("varchar"),
            Self::Char(n) => write!(f, "char({n})"),
            Self::DoublePrecision => f.write_str("double precision"),
            Self::Array(element) => write!(f, "{element}[]"),
            Self::SmallInt
            | Self::Integer
            | Self::BigInt
            | Self::Real
            | Self::Boolean
            | Self::Text
            | Self::Uuid
            | Self::Date
            | Self::Time
            | Self::Timestamp
            | Self::Timestamptz
            | Self::Interval
            | Self::Json
            | Self::Jsonb
            | Self::Bytea => f.write_str(self.word()),
        }
    }
}

impl fmt::Display for TypeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unknown(word) => {
                write!(f, "lossproof cannot generate or compare `{word}` columns")
            }
            Self::BadSize(text) => write!(f, "`{text}` has a size that is not a number in range"),
            Self::NestedArray => f.write_str("an array type takes one `[]`"),
        }
    }
}

impl std::error::Error for TypeError {}

/// In files (a seed's `tables.json`) a type is its DDL text.
impl serde::Serialize for ColumnType {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for ColumnType {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every example prints as a DDL and reads back as itself, alone and
    /// as an array; their words are all different.
    #[test]
    fn every_type_round_trips_through_its_text() {
        let mut words = std::collections::HashSet::new();
        for ty in ColumnType::EXAMPLES {
            assert_eq!(ColumnType::parse(&ty.to_string()), Ok(ty.clone()), "{ty}");
            let array = ColumnType::Array(Box::new(ty.clone()));
            assert_eq!(ColumnType::parse(&array.to_string()), Ok(array), "{ty}[]");
            assert!(words.insert(ty.word()), "{} twice", ty.word());
        }
    }

    /// What PostgreSQL's `format_type` prints reads as the same types.
    #[test]
    fn postgres_spellings_read() {
        for (text, ty) in [
            ("character varying(40)", ColumnType::Varchar(Some(40))),
            ("character varying", ColumnType::Varchar(None)),
            ("character(8)", ColumnType::Char(8)),
            ("numeric", ColumnType::Numeric(None)),
            ("NUMERIC(10, 2)", ColumnType::Numeric(Some((10, 2)))),
            ("timestamp(3) with time zone", ColumnType::Timestamptz),
            ("timestamp without time zone", ColumnType::Timestamp),
            ("time(6) without time zone", ColumnType::Time),
            ("interval day to second", ColumnType::Interval),
            (
                "double precision[]",
                ColumnType::Array(Box::new(ColumnType::DoublePrecision)),
            ),
            ("int4", ColumnType::Integer),
        ] {
            assert_eq!(ColumnType::parse(text), Ok(ty), "{text}");
        }
        for (text, error) in [
            (
                "time with time zone",
                TypeError::Unknown("time with time zone".into()),
            ),
            ("int4range", TypeError::Unknown("int4range".into())),
            ("text[][]", TypeError::NestedArray),
            ("varchar(x)", TypeError::BadSize("varchar(x)".into())),
        ] {
            assert_eq!(ColumnType::parse(text), Err(error), "{text}");
        }
    }

    #[test]
    fn widening_goes_one_step_up() {
        let widen = |t: &str| {
            ColumnType::parse(t)
                .unwrap()
                .widens_to()
                .map(|w| w.to_string())
        };
        assert_eq!(widen("smallint").as_deref(), Some("integer"));
        assert_eq!(widen("integer").as_deref(), Some("bigint"));
        assert_eq!(widen("numeric(10,2)").as_deref(), Some("numeric(14,2)"));
        assert_eq!(widen("numeric(38,2)"), None);
        assert_eq!(widen("varchar(40)").as_deref(), Some("varchar(80)"));
        assert_eq!(widen("text[]"), None);
    }
}
