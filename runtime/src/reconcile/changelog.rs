//! A change-log lake scored as what its readers derive from it: each key's
//! latest row in source order.
//!
//! Some sinks land every change event append-only (pydbzengine's Iceberg
//! handler, debezium-server-iceberg's append mode): one row per event with
//! Debezium's envelope as JSON text — `op` (`c`, `r`, `u`, `d`), `source`
//! (whose `lsn` orders the changes: two updates of one row in one
//! transaction have increasing LSNs, a snapshot read carries the
//! snapshot's), `after` (the new row) and `before` (for a delete, at least
//! the key). A reader folds each key's events by `source.lsn`:
//! `d` removes the key, any other op makes `after` its row, and a column
//! Debezium could not read (`__debezium_unavailable_value`: an unchanged
//! TOASTed value under REPLICA IDENTITY DEFAULT) keeps the previous value.
//! A replayed event (same key, same LSN) changes nothing. Values are
//! rendered by the SOURCE column's kind from their JSON form (numbers,
//! decimals as strings, timestamps as ISO-8601 text).

use std::collections::HashMap;

use arrow_array::RecordBatch;
use datafusion::prelude::SessionContext;
use serde_json::{Map, Value};

use super::canonical::{self, CanonicalError, Kind};
use super::{Error, SourceTable};

/// What Debezium writes for a column value it could not read.
pub const UNAVAILABLE: &str = "__debezium_unavailable_value";

/// The columns a change-log table must have.
pub const COLUMNS: &str = "op, source, before, after";

/// One change of a key: its LSN, and its row (`None`: deleted).
type Event = (u64, Option<Map<String, Value>>);

/// The rows the change log `sql` (returning [`COLUMNS`]) folds to, as
/// canonical (key, row) over the source's columns.
pub(super) async fn rows(
    ctx: &SessionContext,
    sql: &str,
    table: &SourceTable,
) -> Result<Vec<(String, String)>, Error> {
    let batches = ctx.sql(sql).await?.collect().await?;
    // key (canonical) -> its events
    let mut events: HashMap<String, Vec<Event>> = HashMap::new();
    let key = Key::new(table)?;
    for batch in &batches {
        for (k, event) in events_of(batch, table, &key)? {
            events.entry(k).or_default().push(event);
        }
    }
    let names = column_names(table);
    let layout = layout_of(table, &names);
    let mut out = Vec::new();
    for (_, mut changes) in events {
        // Stable: replays of one event (same LSN) stay in arrival order.
        changes.sort_by_key(|(lsn, _)| *lsn);
        let mut row: Option<Map<String, Value>> = None;
        for (_, image) in changes {
            row = image.map(|image| carried(row.as_ref(), image));
        }
        let Some(row) = row else { continue };
        out.push(canonical_row(table, &layout, &row)?);
    }
    Ok(out)
}

/// A change log folded as it grows, for a reader's view between commits
/// (the snapshot follower's mirror of a `lake changelog` table: docs/run.md,
/// "Snapshots"): each key's latest row in source order, from the events
/// read so far, folded as [`rows`] folds them. An event older than the
/// newest one applied for its key (appended out of source order, in a
/// later commit) changes nothing, as in a reader's fold by LSN; the one
/// difference: a column Debezium could not read in the newer event keeps
/// the value it took then, not the late event's.
#[derive(Debug)]
pub struct Fold {
    table: SourceTable,
    /// Each key's newest event applied: its LSN and row (`None`: deleted).
    keys: HashMap<String, Event>,
}

impl Fold {
    #[must_use]
    pub fn new(table: SourceTable) -> Self {
        Self {
            table,
            keys: HashMap::new(),
        }
    }

    /// Keys with a row now.
    #[must_use]
    pub fn rows(&self) -> usize {
        self.keys.values().filter(|(_, row)| row.is_some()).count()
    }

    /// Forget every event (to fold the log again from its first file);
    /// the keys that had a row.
    pub fn clear(&mut self) -> Vec<String> {
        self.keys
            .drain()
            .filter(|(_, (_, row))| row.is_some())
            .map(|(key, _)| key)
            .collect()
    }

    /// Fold in one batch of change-log rows ([`COLUMNS`]): each key it
    /// touched with its canonical row now (`None`: no row).
    ///
    /// # Errors
    /// An event without a row image or an LSN, or a value the source
    /// column's kind cannot read.
    pub fn apply(&mut self, batch: &RecordBatch) -> Result<Vec<(String, Option<String>)>, Error> {
        let key = Key::new(&self.table)?;
        let mut events = events_of(batch, &self.table, &key)?;
        // Stable: each key's events in LSN order, replays in arrival order.
        events.sort_by_key(|(_, (lsn, _))| *lsn);
        let mut touched: Vec<String> = Vec::new();
        for (k, (lsn, image)) in events {
            let previous = self.keys.get(&k);
            if previous.is_some_and(|(newest, _)| lsn < *newest) {
                continue;
            }
            let row = image.map(|image| carried(previous.and_then(|(_, row)| row.as_ref()), image));
            touched.push(k.clone());
            self.keys.insert(k, (lsn, row));
        }
        touched.sort_unstable();
        touched.dedup();
        let names = column_names(&self.table);
        let layout = layout_of(&self.table, &names);
        touched
            .into_iter()
            .map(|k| {
                let row = match self.keys.get(&k) {
                    Some((_, Some(row))) => Some(canonical_row(&self.table, &layout, row)?.1),
                    _ => None,
                };
                Ok((k, row))
            })
            .collect()
    }
}

/// The events of one batch of change-log rows, each with its key, in the
/// order read.
fn events_of(
    batch: &RecordBatch,
    table: &SourceTable,
    key: &Key<'_>,
) -> Result<Vec<(String, Event)>, Error> {
    let bad = |what: String| Error::Column {
        table: table.name.clone(),
        column: "source".into(),
        source: CanonicalError::Unsupported(what),
    };
    let column = |name: &str| {
        batch
            .column_by_name(name)
            .and_then(canonical::arrow_text)
            .ok_or_else(|| bad(format!("the change log has no text column `{name}`")))
    };
    let (ops, sources, befores, afters) = (
        column("op")?,
        column("source")?,
        column("before")?,
        column("after")?,
    );
    let mut events = Vec::with_capacity(batch.num_rows());
    for i in 0..batch.num_rows() {
        let op = ops[i].as_deref().unwrap_or_default();
        let lsn = sources[i]
            .as_deref()
            .and_then(|s| serde_json::from_str::<Value>(s).ok())
            .and_then(|s| s.get("lsn").and_then(Value::as_u64))
            .ok_or_else(|| bad(format!("an event with no `source.lsn`: {:?}", sources[i])))?;
        let image = if op == "d" { &befores[i] } else { &afters[i] };
        let Some(Value::Object(image)) = image
            .as_deref()
            .and_then(|t| serde_json::from_str::<Value>(t).ok())
        else {
            return Err(bad(format!("a `{op}` event with no row image")));
        };
        events.push((key.of(table, &image)?, (lsn, (op != "d").then_some(image))));
    }
    Ok(events)
}

/// `image` with each column Debezium could not read taken from the row
/// before it, when there is one.
fn carried(
    previous: Option<&Map<String, Value>>,
    mut image: Map<String, Value>,
) -> Map<String, Value> {
    if let Some(previous) = previous {
        for (column, value) in &mut image {
            if value.as_str() == Some(UNAVAILABLE)
                && let Some(old) = previous.get(column)
            {
                value.clone_from(old);
            }
        }
    }
    image
}

fn column_names(table: &SourceTable) -> Vec<&str> {
    table.columns.iter().map(|(n, _)| n.as_str()).collect()
}

fn layout_of<'a>(table: &SourceTable, names: &[&'a str]) -> canonical::Layout<'a> {
    canonical::Layout::new(
        names.to_vec(),
        table
            .key
            .iter()
            .filter_map(|k| names.iter().position(|n| n == k))
            .collect(),
    )
}

/// A folded row as canonical (key, row) over the source's columns.
fn canonical_row(
    table: &SourceTable,
    layout: &canonical::Layout<'_>,
    row: &Map<String, Value>,
) -> Result<(String, String), Error> {
    let values = table
        .columns
        .iter()
        .map(|(name, kind)| rendered(table, name, *kind, row.get(name)))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((layout.key(&values), layout.row(&values)))
}

/// A table's key columns with their kinds, laid out once for [`Key::of`].
struct Key<'a> {
    columns: Vec<(&'a str, Kind)>,
    layout: canonical::Layout<'a>,
}

impl<'a> Key<'a> {
    fn new(table: &'a SourceTable) -> Result<Self, Error> {
        let columns: Vec<(&str, Kind)> = table
            .key_columns()?
            .into_iter()
            .map(|(_, name, kind)| (name, kind))
            .collect();
        let names: Vec<&str> = columns.iter().map(|(n, _)| *n).collect();
        let layout = canonical::Layout::new(names, (0..columns.len()).collect());
        Ok(Self { columns, layout })
    }

    /// The canonical key of a row image.
    fn of(&self, table: &SourceTable, image: &Map<String, Value>) -> Result<String, Error> {
        let values = self
            .columns
            .iter()
            .map(|(name, kind)| rendered(table, name, *kind, image.get(*name)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(self.layout.key(&values))
    }
}

/// One JSON value in the canonical form of the source column's kind.
fn rendered(
    table: &SourceTable,
    column: &str,
    kind: Kind,
    value: Option<&Value>,
) -> Result<String, Error> {
    let text = match value {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(json_string(kind, s)),
        Some(Value::Bool(b)) => Some(b.to_string()),
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(other) => Some(other.to_string()),
    };
    kind.from_source_text(text.as_deref())
        .map_err(|source| Error::Column {
            table: table.name.clone(),
            column: column.to_owned(),
            source,
        })
}

/// A JSON string as the text [`Kind::from_source_text`] reads: a
/// timestamp's ISO-8601 form becomes epoch microseconds (what the source
/// side reads), anything else is as it is.
fn json_string(kind: Kind, s: &str) -> String {
    match kind {
        Kind::Timestamptz => chrono::DateTime::parse_from_rfc3339(s)
            .map_or_else(|_| s.to_owned(), |t| t.timestamp_micros().to_string()),
        _ => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{RecordBatch, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    use datafusion::datasource::MemTable;

    use super::*;

    fn orders() -> SourceTable {
        SourceTable {
            name: "orders".into(),
            key: vec!["order_id".into()],
            columns: vec![
                ("order_id".into(), Kind::Int),
                ("amount".into(), Kind::Decimal),
                ("note".into(), Kind::Text),
                ("updated_at".into(), Kind::Timestamptz),
            ],
            filter: None,
            bucket: None,
            types: std::collections::BTreeMap::new(),
        }
    }

    type Events<'a> = [(&'a str, u64, Option<&'a str>, Option<&'a str>)];

    /// `(op, lsn, before, after)` events, in the order they were appended.
    async fn fold(events: &Events<'_>) -> Vec<(String, String)> {
        let batch = batch(events);
        let ctx = SessionContext::new();
        ctx.register_table(
            "log",
            Arc::new(MemTable::try_new(batch.schema(), vec![vec![batch]]).unwrap()),
        )
        .unwrap();
        let mut rows = rows(&ctx, &format!("SELECT {COLUMNS} FROM log"), &orders())
            .await
            .unwrap();
        rows.sort();
        rows
    }

    /// The events as one batch of change-log rows.
    fn batch(events: &Events<'_>) -> RecordBatch {
        let schema = Arc::new(Schema::new(
            ["op", "source", "before", "after"]
                .map(|n| Field::new(n, DataType::Utf8, true))
                .to_vec(),
        ));
        let column = |values: Vec<Option<String>>| Arc::new(StringArray::from(values)) as _;
        RecordBatch::try_new(
            schema,
            vec![
                column(events.iter().map(|e| Some(e.0.to_owned())).collect()),
                column(
                    events
                        .iter()
                        .map(|e| Some(format!(r#"{{"lsn": {}, "txId": 7}}"#, e.1)))
                        .collect(),
                ),
                column(events.iter().map(|e| e.2.map(str::to_owned)).collect()),
                column(events.iter().map(|e| e.3.map(str::to_owned)).collect()),
            ],
        )
        .unwrap()
    }

    /// The follower's fold, commit by commit, ends where the reconciler's
    /// fold of the whole log does; a late copy of an older event changes
    /// nothing, and a column Debezium could not read keeps its value.
    #[tokio::test]
    async fn a_log_folded_commit_by_commit_shows_each_key_latest_row() {
        let first = row(1, "2.50", "a", "2026-12-02T15:33:22Z");
        let other = row(2, "1.00", "x", "2026-12-02T15:33:22Z");
        let later = format!(
            r#"{{"order_id": 1, "amount": "3.00", "note": "{UNAVAILABLE}", "updated_at": "2026-12-02T15:33:23Z"}}"#
        );
        let commits: [&Events<'_>; 2] = [
            &[("c", 10, None, Some(&first)), ("c", 11, None, Some(&other))],
            &[
                ("u", 30, None, Some(&later)),
                ("d", 31, Some(&other), None),
                ("c", 10, None, Some(&first)),
            ],
        ];
        let mut follower = Fold::new(orders());
        let shown = follower.apply(&batch(commits[0])).unwrap();
        let at_first = fold(commits[0]).await;
        assert_eq!(
            shown,
            at_first
                .iter()
                .map(|(k, r)| (k.clone(), Some(r.clone())))
                .collect::<Vec<_>>()
        );
        let shown = follower.apply(&batch(commits[1])).unwrap();
        let whole = fold(&commits.concat()).await;
        assert_eq!(whole.len(), 1);
        assert!(whole[0].1.contains(&canonical::quoted("a")), "{whole:?}");
        assert_eq!(
            shown,
            [
                (whole[0].0.clone(), Some(whole[0].1.clone())),
                (at_first[1].0.clone(), None)
            ]
        );
        assert_eq!(follower.rows(), 1);
    }

    fn row(id: u64, amount: &str, note: &str, at: &str) -> String {
        format!(
            r#"{{"order_id": {id}, "amount": "{amount}", "note": "{note}", "updated_at": "{at}"}}"#
        )
    }

    #[tokio::test]
    async fn each_key_is_its_latest_change_by_lsn_whatever_the_arrival_order() {
        let first = row(1, "2.50", "a", "2026-12-02T15:33:22.374632Z");
        let second = row(1, "3.00", "b", "2026-12-02T15:33:23Z");
        let other = row(2, "1.00", "x", "1969-07-20T20:17:40Z");
        let rows = fold(&[
            ("u", 30, None, Some(&second)),
            ("c", 10, None, Some(&first)),
            // A replay of an event already in the log changes nothing.
            ("c", 10, None, Some(&first)),
            ("c", 20, None, Some(&other)),
        ])
        .await;
        let expected = orders();
        let layout_row = |values: [&str; 4]| {
            let names: Vec<&str> = expected.columns.iter().map(|(n, _)| n.as_str()).collect();
            let values: Vec<String> = values.iter().map(|v| (*v).to_owned()).collect();
            let layout = canonical::Layout::new(names, vec![0]);
            (layout.key(&values), layout.row(&values))
        };
        let mut want = vec![
            layout_row([
                "1",
                "3",
                &canonical::quoted("b"),
                &canonical::timestamp_micros(1_796_225_603_000_000),
            ]),
            layout_row([
                "2",
                "1",
                &canonical::quoted("x"),
                &canonical::timestamp_micros(-14_182_940_000_000),
            ]),
        ];
        want.sort();
        assert_eq!(rows, want);
    }

    #[tokio::test]
    async fn a_delete_removes_the_key_and_a_later_insert_brings_it_back() {
        let born = row(5, "1.00", "n", "2026-12-02T00:00:00Z");
        let key_only = r#"{"order_id": 5, "amount": null, "note": null, "updated_at": null}"#;
        assert!(
            fold(&[("c", 1, None, Some(&born)), ("d", 2, Some(key_only), None)])
                .await
                .is_empty()
        );
        let again = fold(&[
            ("d", 2, Some(key_only), None),
            ("c", 1, None, Some(&born)),
            ("c", 3, None, Some(&born)),
        ])
        .await;
        assert_eq!(again.len(), 1);
    }

    #[tokio::test]
    async fn an_unavailable_toasted_value_keeps_the_previous_one() {
        let long = "t".repeat(5000);
        let first = row(9, "1.00", &long, "2026-12-02T00:00:00Z");
        let update = row(9, "2.00", UNAVAILABLE, "2026-12-02T00:00:01Z");
        let rows = fold(&[("c", 1, None, Some(&first)), ("u", 2, None, Some(&update))]).await;
        assert_eq!(rows.len(), 1);
        assert!(
            rows[0].1.contains(&canonical::quoted(&long)),
            "{}",
            rows[0].1
        );
        assert!(!rows[0].1.contains(UNAVAILABLE));
    }
}
