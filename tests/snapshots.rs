//! The snapshot follower on a real lake (the SQL catalog and its files, as
//! `lossproof up` makes them): what it reads of each snapshot, and a
//! snapshot expired before it read it counted unchecked, never consistent.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use iceberg::TableCreation;
use iceberg::spec::{NestedField, PrimitiveType, Schema, Type};
use lossproof_executor::snapshots::{Checked, LakeFollower, LakeTables, check_log};
use lossproof_runtime::Lake;
use lossproof_runtime::lake::Retain;
use lossproof_runtime::reconcile::SourceTable;
use lossproof_runtime::reconcile::canonical::Kind;
use lossproof_runtime::reconcile::states::{Shown, SourceStates};

fn rows(table: &iceberg::table::Table, rows: &[(i64, &str)]) -> RecordBatch {
    let schema = Arc::new(
        iceberg::arrow::schema_to_arrow_schema(table.metadata().current_schema())
            .expect("arrow schema"),
    );
    let ids: ArrayRef = Arc::new(Int64Array::from(
        rows.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
    ));
    let names: ArrayRef = Arc::new(StringArray::from(
        rows.iter().map(|(_, n)| Some(*n)).collect::<Vec<_>>(),
    ));
    RecordBatch::try_new(schema, vec![ids, names]).expect("batch")
}

/// `table` with `rows` appended, in a snapshot of their own.
async fn append(
    lake: &Lake,
    table: &iceberg::table::Table,
    rows: &[(i64, &str)],
) -> iceberg::table::Table {
    lake.append(table, vec![self::rows(table, rows)], HashMap::new())
        .await
        .expect("append")
}

/// `s.orders (id bigint key, name text)`, empty.
async fn create_orders(lake: &Lake) -> iceberg::table::Table {
    let namespace = lake.ensure_namespace("s").await.expect("namespace");
    let schema = Schema::builder()
        .with_fields(vec![
            NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
            NestedField::optional(2, "name", Type::Primitive(PrimitiveType::String)).into(),
        ])
        .with_identifier_field_ids([1])
        .build()
        .expect("schema");
    let creation = TableCreation::builder()
        .name("orders".to_owned())
        .schema(schema)
        .build();
    lake.catalog()
        .create_table(&namespace, creation)
        .await
        .expect("create s.orders")
}

#[test]
fn a_snapshot_expired_before_it_was_read_is_counted_unchecked() {
    let state = tempfile::tempdir().expect("temp state dir");
    let rt = crate::lake::tokio();
    let lake = rt
        .block_on(Lake::open(state.path()))
        .expect("open the lake");
    let source_table = SourceTable {
        name: "orders".to_owned(),
        key: vec!["id".to_owned()],
        columns: vec![
            ("id".to_owned(), Kind::Int),
            ("name".to_owned(), Kind::Text),
        ],
        ..SourceTable::default()
    };
    let log = rt.block_on(async {
        let table = create_orders(&lake).await;
        let clock = Instant::now();
        let mut follower = LakeFollower::new(LakeTables {
            consumer: "c".to_owned(),
            namespace: "s".to_owned(),
            tables: vec![source_table.clone()],
            changelogs: None,
            not_checked: None,
        });
        let table = append(&lake, &table, &[(1, "a"), (2, "b")]).await;
        follower.look(&lake, clock).await;
        // Two more snapshots; all but the newest expire before the next look.
        let table = append(&lake, &table, &[(3, "c")]).await;
        let table = append(&lake, &table, &[(4, "d")]).await;
        let expired = lake
            .expire_snapshots(&table, Retain::Last(1))
            .await
            .expect("expire");
        assert_eq!(expired.snapshot_ids.len(), 2, "{expired:?}");
        follower.look(&lake, clock).await;
        follower.finish()
    });
    assert_eq!(log.failed, None);
    assert_eq!(log.unchecked, 1, "the second snapshot was never read");
    assert_eq!(
        log.seen.len(),
        2,
        "the first snapshot, then the newest read whole"
    );
    let keys = |i: usize| {
        let mut keys: Vec<(String, bool)> = log.seen[i]
            .changes
            .iter()
            .map(|(k, shown)| (k.clone(), matches!(shown, Shown::Row(_))))
            .collect();
        keys.sort();
        keys
    };
    assert_eq!(
        keys(0),
        vec![("id=1".to_owned(), true), ("id=2".to_owned(), true)]
    );
    // Read whole: every key it shows (the mirror compares them all again).
    assert_eq!(
        keys(1),
        vec![
            ("id=1".to_owned(), true),
            ("id=2".to_owned(), true),
            ("id=3".to_owned(), true),
            ("id=4".to_owned(), true)
        ]
    );

    // Checked against a source that wrote the same rows in three
    // transactions: both states read are states it had, and the summary
    // says one snapshot went unchecked, so `consistent` cannot hold.
    let row_of = |seen: &lossproof_executor::snapshots::Seen, key: &str| match seen
        .changes
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, s)| s.clone())
    {
        Some(Shown::Row(hash)) => hash,
        other => panic!("{key}: {other:?}"),
    };
    let mut source = SourceStates::new(vec![11, 12, 13]);
    source.version(0, "id=1".into(), 1, Some(row_of(&log.seen[1], "id=1")));
    source.version(0, "id=2".into(), 1, Some(row_of(&log.seen[1], "id=2")));
    source.version(0, "id=3".into(), 2, Some(row_of(&log.seen[1], "id=3")));
    source.version(0, "id=4".into(), 3, Some(row_of(&log.seen[1], "id=4")));
    let mut checked = Checked::default();
    check_log(
        &source,
        &["orders".to_owned()],
        log,
        0,
        &|| false,
        &mut checked,
    );
    let positions: Vec<(bool, u32)> = checked
        .snapshots
        .iter()
        .map(|s| (s.consistent, s.position))
        .collect();
    assert_eq!(positions, vec![(true, 1), (true, 3)]);
    let summary = &checked.consumers[0];
    assert_eq!(
        (summary.checked, summary.inconsistent, summary.unchecked),
        (2, 0, 1)
    );
}
