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
    let bad = |what: String| Error::Column {
        table: table.name.clone(),
        column: "source".into(),
        source: CanonicalError::Unsupported(what),
    };
    // key (canonical) -> its events
    let mut events: HashMap<String, Vec<Event>> = HashMap::new();
    let key = Key::new(table)?;
    for batch in &batches {
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
            events
                .entry(key.of(table, &image)?)
                .or_default()
                .push((lsn, (op != "d").then_some(image)));
        }
    }
    let names: Vec<&str> = table.columns.iter().map(|(n, _)| n.as_str()).collect();
    let layout = canonical::Layout::new(
        names.clone(),
        table
            .key
            .iter()
            .filter_map(|k| names.iter().position(|n| n == k))
            .collect(),
    );
    let mut out = Vec::new();
    for (_, mut changes) in events {
        // Stable: replays of one event (same LSN) stay in arrival order.
        changes.sort_by_key(|(lsn, _)| *lsn);
        let mut row: Option<Map<String, Value>> = None;
        for (_, image) in changes {
            row = image.map(|mut image| {
                if let Some(previous) = &row {
                    for (column, value) in &mut image {
                        if value.as_str() == Some(UNAVAILABLE)
                            && let Some(old) = previous.get(column)
                        {
                            value.clone_from(old);
                        }
                    }
                }
                image
            });
        }
        let Some(row) = row else { continue };
        let values = table
            .columns
            .iter()
            .map(|(name, kind)| rendered(table, name, *kind, row.get(name)))
            .collect::<Result<Vec<_>, _>>()?;
        out.push((layout.key(&values), layout.row(&values)));
    }
    Ok(out)
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
        }
    }

    /// `(op, lsn, before, after)` events, in the order they were appended.
    async fn fold(events: &[(&str, u64, Option<&str>, Option<&str>)]) -> Vec<(String, String)> {
        let schema = Arc::new(Schema::new(
            ["op", "source", "before", "after"]
                .map(|n| Field::new(n, DataType::Utf8, true))
                .to_vec(),
        ));
        let column = |values: Vec<Option<String>>| Arc::new(StringArray::from(values)) as _;
        let batch = RecordBatch::try_new(
            schema.clone(),
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
        .unwrap();
        let ctx = SessionContext::new();
        ctx.register_table(
            "log",
            Arc::new(MemTable::try_new(schema, vec![vec![batch]]).unwrap()),
        )
        .unwrap();
        let mut rows = rows(&ctx, &format!("SELECT {COLUMNS} FROM log"), &orders())
            .await
            .unwrap();
        rows.sort();
        rows
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
