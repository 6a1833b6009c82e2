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
//! | `freshness` | one consumer's lag at one moment of the seed | the executor's freshness follower |
//! | `freshness_summary` | one consumer's lag over the seed: p50, p99, max | the executor's freshness follower |
//! | `snapshots` | one lake state a consumer published, checked against the source's states | the executor's snapshot follower |
//! | `snapshot_summary` | one consumer's snapshots: checked, inconsistent, unchecked | the executor's snapshot follower |
//! | `snapshot_keys` | one wrong key of an inconsistent state, with its kind | the executor's snapshot follower |
//! | `capture_loss` | a key whose last source change never reached its topic, and the consumer it would have been charged to | the reconciler's capture check |
//! | `blame` | a wrong row and a fault occurrence whose effect window holds its key's last source change (or none) | the executor's blame |

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
    Freshness,
    FreshnessSummary,
    Snapshots,
    SnapshotSummary,
    SnapshotKeys,
    CaptureLoss,
    Blame,
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
    pub const ALL: [Self; 14] = [
        Self::Diff,
        Self::Summary,
        Self::SourceRows,
        Self::LakeRows,
        Self::Faults,
        Self::Races,
        Self::DeadLetters,
        Self::Freshness,
        Self::FreshnessSummary,
        Self::Snapshots,
        Self::SnapshotSummary,
        Self::SnapshotKeys,
        Self::CaptureLoss,
        Self::Blame,
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
            Self::Freshness => "freshness",
            Self::FreshnessSummary => "freshness_summary",
            Self::Snapshots => "snapshots",
            Self::SnapshotSummary => "snapshot_summary",
            Self::SnapshotKeys => "snapshot_keys",
            Self::CaptureLoss => "capture_loss",
            Self::Blame => "blame",
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
            Self::Faults => faults_fields(),
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
            Self::Freshness => ["consumer", "table", "method"]
                .map(|n| Field::new(n, DataType::Utf8, false))
                .into_iter()
                .chain(["t_ms", "lag_ms"].map(count))
                .collect(),
            Self::FreshnessSummary => ["consumer", "table", "method"]
                .map(|n| Field::new(n, DataType::Utf8, false))
                .into_iter()
                .chain(
                    [
                        "samples",
                        "sample_ms",
                        "p50_ms",
                        "p99_ms",
                        "max_ms",
                        "snapshots",
                    ]
                    .map(count),
                )
                .collect(),
            Self::Snapshots => vec![
                Field::new("consumer", DataType::Utf8, false),
                Field::new("tables", DataType::Utf8, false),
                Field::new("snapshot", DataType::Int64, false),
                count("committed_ms"),
                count("seen_ms"),
                Field::new("operation", DataType::Utf8, false),
                Field::new("consistent", DataType::Boolean, false),
                count("position"),
                Field::new("txid", DataType::Int64, true),
                count("torn"),
                count("vanished"),
                count("regressed"),
                count("wrong"),
                count("unclassified"),
            ],
            Self::SnapshotSummary => std::iter::once(Field::new("consumer", DataType::Utf8, false))
                .chain(["checked", "inconsistent", "unchecked", "worst"].map(count))
                .chain([
                    Field::new("followed_to_end", DataType::Boolean, false),
                    Field::new("note", DataType::Utf8, true),
                ])
                .collect(),
            Self::SnapshotKeys => vec![
                Field::new("consumer", DataType::Utf8, false),
                Field::new("snapshot", DataType::Int64, false),
                Field::new("table", DataType::Utf8, false),
                Field::new("key", DataType::Utf8, false),
                Field::new("kind", DataType::Utf8, false),
                Field::new("txid", DataType::Int64, true),
            ],
            Self::CaptureLoss => vec![
                Field::new("table", DataType::Utf8, false),
                Field::new("key", DataType::Utf8, false),
                Field::new("consumer", DataType::Utf8, false),
                // The diff row the consumer would have been charged with.
                Field::new("kind", DataType::Utf8, false),
                Field::new("txid", DataType::Int64, false),
                // `write` or `delete`: what the lost change did.
                Field::new("change", DataType::Utf8, false),
            ],
            Self::Blame => blame_fields(),
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

/// The `blame` table's columns.
fn blame_fields() -> Vec<Field> {
    vec![
        Field::new("consumer", DataType::Utf8, false),
        Field::new("table", DataType::Utf8, false),
        Field::new("key", DataType::Utf8, false),
        Field::new("kind", DataType::Utf8, false),
        // The fault occurrence (NULL: no fault's window holds the key's
        // last change), as the `faults` table has it.
        Field::new("fault", DataType::Utf8, true),
        Field::new("text", DataType::Utf8, true),
        Field::new("place", DataType::Utf8, true),
        Field::new("action", DataType::UInt64, true),
        Field::new("planned_ms", DataType::UInt64, true),
        Field::new("fired_ms", DataType::UInt64, true),
        // The key's last source change, ms of the seed's clock (NULL: not
        // known).
        Field::new("changed_ms", DataType::Int64, true),
    ]
}

/// The `faults` table's columns.
fn faults_fields() -> Vec<Field> {
    let count = |name: &str| Field::new(name, DataType::UInt64, false);
    vec![
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
        Field::new("due_ms", DataType::UInt64, true),
        Field::new("drift_ms", DataType::UInt64, true),
        Field::new("done_ms", DataType::UInt64, true),
        // What it produced, in records (`duplicate`, `inject junk`).
        Field::new("considered", DataType::UInt64, true),
        Field::new("copied", DataType::UInt64, true),
        Field::new("junk", DataType::UInt64, true),
        Field::new("send_errors", DataType::UInt64, true),
    ]
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
