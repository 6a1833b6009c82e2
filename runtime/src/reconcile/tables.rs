//! Every table an assertion can query, in one place: its name and its
//! columns ([`Table::schema`]). Whoever fills a table builds its rows
//! through [`Table::batch`], which holds them to the schema here, and
//! `check` plans every assertion against the same tables, empty
//! ([`session`]), so a name an assertion gets wrong is found before any
//! stack starts, and no table can drift from what `check` planned against.
//!
//! | table | a row is | filled by |
//! |---|---|---|
//! | `diff` | a key whose source and lake rows differ | the reconciler |
//! | `summary` | the counts of one consumer's table | the reconciler |
//! | `source_rows` | a source row, canonical | the reconciler, when an assertion reads it |
//! | `lake_rows` | a lake row, canonical | the reconciler, when an assertion reads it |
//! | `faults` | a planned fault occurrence and what became of it | the executor |
//! | `races` | one consumer lake's maintenance commits and how they fared | the executor |
//! | `dead_letters` | a record a consumer set aside | the correct consumer's lake |

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;

use super::DiffKind;

/// One table assertions see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    Diff,
    Summary,
    SourceRows,
    LakeRows,
    Faults,
    Races,
    DeadLetters,
}

/// The counts of the `races` table, in its column order (after `consumer`).
pub const RACE_COUNTS: [&str; 10] = [
    "compactions_won",
    "compactions_lost",
    "compactions_idle",
    "compactions_failed",
    "compactions_interrupted",
    "expiries_won",
    "expiries_lost",
    "snapshots_expired",
    "orphan_files_deleted",
    "consumer_conflicts",
];

impl Table {
    pub const ALL: [Self; 7] = [
        Self::Diff,
        Self::Summary,
        Self::SourceRows,
        Self::LakeRows,
        Self::Faults,
        Self::Races,
        Self::DeadLetters,
    ];

    /// Its name in SQL.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Diff => "diff",
            Self::Summary => "summary",
            Self::SourceRows => "source_rows",
            Self::LakeRows => "lake_rows",
            Self::Faults => "faults",
            Self::Races => "races",
            Self::DeadLetters => "dead_letters",
        }
    }

    /// Its columns.
    #[must_use]
    pub fn schema(self) -> SchemaRef {
        let text = |name: &str| Field::new(name, DataType::Utf8, true);
        let count = |name: &str| Field::new(name, DataType::UInt64, false);
        let fields: Vec<Field> = match self {
            Self::Diff => ["table", "key", "consumer", "kind", "source", "lake"]
                .map(text)
                .to_vec(),
            Self::Summary => ["consumer", "table"]
                .map(text)
                .into_iter()
                .chain(
                    ["rows_compared", "source_rows", "lake_rows", "wrong_rows"]
                        .into_iter()
                        .chain(DiffKind::ALL.map(DiffKind::column))
                        .map(count),
                )
                .collect(),
            Self::SourceRows => ["table", "key", "row"].map(text).to_vec(),
            Self::LakeRows => ["consumer", "table", "key", "row"].map(text).to_vec(),
            Self::Faults => vec![
                count("phase"),
                count("planned_ms"),
                count("action"),
                Field::new("fault", DataType::Utf8, false),
                Field::new("text", DataType::Utf8, false),
                Field::new("fired", DataType::Boolean, false),
                Field::new("fired_ms", DataType::UInt64, true),
                Field::new("ends_ms", DataType::UInt64, true),
                Field::new("during_load", DataType::Boolean, false),
                Field::new("outcome", DataType::Utf8, false),
            ],
            Self::Races => std::iter::once(Field::new("consumer", DataType::Utf8, false))
                .chain(RACE_COUNTS.map(count))
                .collect(),
            Self::DeadLetters => vec![
                Field::new("consumer", DataType::Utf8, false),
                Field::new("topic", DataType::Utf8, false),
                Field::new("partition", DataType::Int64, false),
                Field::new("offset", DataType::Int64, false),
                Field::new("error", DataType::Utf8, false),
            ],
        };
        Arc::new(Schema::new(fields))
    }

    /// Rows of this table from its `columns`, in schema order.
    ///
    /// # Panics
    /// When the columns are not the schema's (a bug of the table's filler,
    /// caught by its tests).
    #[must_use]
    pub fn batch(self, columns: Vec<ArrayRef>) -> RecordBatch {
        RecordBatch::try_new(self.schema(), columns)
            .unwrap_or_else(|e| panic!("the `{}` table's columns: {e}", self.name()))
    }

    /// The table with no rows.
    #[must_use]
    pub fn empty(self) -> RecordBatch {
        RecordBatch::new_empty(self.schema())
    }
}

/// A DataFusion session over every table assertions see: those in `filled`
/// as given, the others empty (for planning, every table is empty).
///
/// # Errors
/// When DataFusion refuses a table (a bug).
pub fn session(mut filled: Vec<(Table, RecordBatch)>) -> Result<SessionContext, super::Error> {
    let ctx = SessionContext::new();
    for table in Table::ALL {
        let batch = match filled.iter().position(|(t, _)| *t == table) {
            Some(at) => filled.swap_remove(at).1,
            None => table.empty(),
        };
        let provider = MemTable::try_new(table.schema(), vec![vec![batch]])?;
        ctx.register_table(table.name(), Arc::new(provider))?;
    }
    Ok(ctx)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every table is in the session, named once, with its columns.
    #[test]
    fn the_session_has_every_table() {
        let ctx = session(Vec::new()).unwrap();
        let mut names: Vec<String> = ctx
            .catalog("datafusion")
            .and_then(|c| c.schema("public"))
            .unwrap()
            .table_names();
        names.sort();
        let mut expected: Vec<&str> = Table::ALL.map(Table::name).to_vec();
        expected.sort_unstable();
        assert_eq!(names, expected);
        assert_eq!(
            Table::Summary.schema().field(3).name(),
            "source_rows",
            "{:?}",
            Table::Summary.schema()
        );
    }
}
