//! The snapshot follower on a real lake (the SQL catalog and its files, as
//! `lossproof up` makes them): what it reads of each snapshot, and a
//! snapshot expired before it read it counted unchecked, never consistent.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use iceberg::TableCreation;
use iceberg::spec::{NestedField, PrimitiveType, Schema, Type};
use lossproof_executor::snapshots::{Checked, LakeFollower, LakeLog, LakeTables, check_log};
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
    let schema = Schema::builder()
        .with_fields(vec![
            NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
            NestedField::optional(2, "name", Type::Primitive(PrimitiveType::String)).into(),
        ])
        .with_identifier_field_ids([1])
        .build()
        .expect("schema");
    create(lake, "orders", schema).await
}

/// Table `s.<name>` of `schema`, empty.
async fn create(lake: &Lake, name: &str, schema: Schema) -> iceberg::table::Table {
    let namespace = lake.ensure_namespace("s").await.expect("namespace");
    let creation = TableCreation::builder()
        .name(name.to_owned())
        .schema(schema)
        .build();
    lake.catalog()
        .create_table(&namespace, creation)
        .await
        .unwrap_or_else(|e| panic!("create s.{name}: {e}"))
}

/// A lake of its own (in a directory removed with the first value), and a
/// runtime to drive it.
fn lake() -> (tempfile::TempDir, tokio::runtime::Runtime, Lake) {
    let state = tempfile::tempdir().expect("temp state dir");
    let rt = crate::lake::tokio();
    let lake = rt
        .block_on(Lake::open(state.path()))
        .expect("open the lake");
    (state, rt, lake)
}

/// `log` checked against `source` (of `orders` alone): what the check
/// found, and each state's (consistent, position).
fn checked(source: &SourceStates, log: LakeLog) -> (Checked, Vec<(bool, u32)>) {
    let mut checked = Checked::default();
    check_log(
        source,
        &["orders".to_owned()],
        log,
        0,
        &|| false,
        &mut checked,
    );
    let positions = checked
        .snapshots
        .iter()
        .map(|s| (s.consistent, s.position))
        .collect();
    (checked, positions)
}

/// The source table `orders (id bigint key, name text)`, as compared.
fn orders_source() -> SourceTable {
    SourceTable {
        name: "orders".to_owned(),
        key: vec!["id".to_owned()],
        columns: vec![
            ("id".to_owned(), Kind::Int),
            ("name".to_owned(), Kind::Text),
        ],
        ..SourceTable::default()
    }
}

#[test]
fn a_snapshot_expired_before_it_was_read_is_counted_unchecked() {
    let (_state, rt, lake) = lake();
    let log = rt.block_on(async {
        let table = create_orders(&lake).await;
        let clock = Instant::now();
        let mut follower = LakeFollower::new(LakeTables {
            consumer: "c".to_owned(),
            namespace: "s".to_owned(),
            tables: vec![orders_source()],
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
    let (checked, positions) = checked(&source, log);
    assert_eq!(positions, vec![(true, 1), (true, 3)]);
    let summary = &checked.consumers[0];
    assert_eq!(
        (summary.checked, summary.inconsistent, summary.unchecked),
        (2, 0, 1)
    );
}

/// `s.<name> (op, source, before, after)`, all text: a change log as
/// Debezium-based sinks land one (`lake changelog`), empty.
async fn create_change_log(lake: &Lake, name: &str) -> iceberg::table::Table {
    let fields: Vec<iceberg::spec::NestedFieldRef> = ["op", "source", "before", "after"]
        .iter()
        .zip(1..)
        .map(|(n, id)| NestedField::optional(id, *n, Type::Primitive(PrimitiveType::String)).into())
        .collect();
    let schema = Schema::builder()
        .with_fields(fields)
        .build()
        .expect("schema");
    create(lake, name, schema).await
}

/// One change event as a change log holds it: (op, LSN, before, after).
type Event<'a> = (&'a str, u64, Option<&'a str>, Option<&'a str>);

/// `events` as rows of the change log `table`.
fn change_log_batch(table: &iceberg::table::Table, events: &[Event<'_>]) -> RecordBatch {
    let schema = Arc::new(
        iceberg::arrow::schema_to_arrow_schema(table.metadata().current_schema())
            .expect("arrow schema"),
    );
    let column = |f: &dyn Fn(&Event<'_>) -> Option<String>| {
        Arc::new(StringArray::from(events.iter().map(f).collect::<Vec<_>>())) as ArrayRef
    };
    let columns = vec![
        column(&|e| Some(e.0.to_owned())),
        column(&|e| Some(format!(r#"{{"lsn": {}}}"#, e.1))),
        column(&|e| e.2.map(str::to_owned)),
        column(&|e| e.3.map(str::to_owned)),
    ];
    RecordBatch::try_new(schema, columns).expect("batch")
}

/// A change log followed commit by commit shows, after each commit, each
/// key's latest event by LSN, as its readers fold it: checked against a
/// source that made the same changes in two transactions, both states are
/// states the source had.
#[test]
fn a_change_log_is_followed_as_its_readers_fold_it() {
    use lossproof_runtime::reconcile::canonical::{Layout, quoted};
    use lossproof_runtime::reconcile::states::row_hash;
    let (_state, rt, lake) = lake();
    let log = rt.block_on(async {
        let table = create_change_log(&lake, "run_public_orders").await;
        let commit = |table: iceberg::table::Table, events: &[Event<'_>]| {
            let batch = change_log_batch(&table, events);
            let lake = &lake;
            async move {
                lake.append(&table, vec![batch], HashMap::new())
                    .await
                    .expect("append")
            }
        };
        let clock = Instant::now();
        let mut follower = LakeFollower::new(LakeTables {
            consumer: "sink".to_owned(),
            namespace: "s".to_owned(),
            tables: vec![orders_source()],
            changelogs: Some(vec!["run_public_orders".to_owned()]),
            not_checked: None,
        });
        let a = r#"{"id": 1, "name": "a"}"#;
        let b = r#"{"id": 2, "name": "b"}"#;
        let table = commit(table, &[("c", 10, None, Some(a)), ("c", 11, None, Some(b))]).await;
        follower.look(&lake, clock).await;
        // The second transaction: 1 updated, 2 deleted; and a late copy
        // of 1's insert (an older LSN: changes nothing).
        commit(
            table,
            &[
                ("u", 30, None, Some(r#"{"id": 1, "name": "z"}"#)),
                ("d", 31, Some(b), None),
                ("c", 10, None, Some(a)),
            ],
        )
        .await;
        follower.look(&lake, clock).await;
        follower.finish()
    });
    assert_eq!(log.failed, None);
    assert_eq!(log.seen.len(), 2, "{:?}", log.seen);
    let layout = Layout::new(vec!["id", "name"], vec![0]);
    let row = |id: i64, name: &str| row_hash(&layout.row(&[id.to_string(), quoted(name)]));
    let key = |id: i64| layout.key(&[id.to_string(), String::new()]);
    let mut source = SourceStates::new(vec![11, 12]);
    source.version(0, key(1), 1, Some(row(1, "a")));
    source.version(0, key(2), 1, Some(row(2, "b")));
    source.version(0, key(1), 2, Some(row(1, "z")));
    source.version(0, key(2), 2, None);
    let mut shown: Vec<(String, Shown)> = log.seen[1].changes.clone();
    shown.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        shown,
        vec![(key(1), Shown::Row(row(1, "z"))), (key(2), Shown::Absent)]
    );
    let (_, positions) = checked(&source, log);
    assert_eq!(positions, vec![(true, 1), (true, 2)]);
}

/// A column the lake renamed in place (same field id, as the correct
/// consumer renames) before the follower first read the table: the files
/// written after the rename are read under the column's first name, as an
/// Iceberg reader resolves it, never as lacking the column.
#[test]
fn a_column_renamed_before_the_first_look_is_read_by_its_field_id() {
    use lossproof_runtime::lake::SchemaChange;
    use lossproof_runtime::reconcile::canonical::{Layout, quoted};
    use lossproof_runtime::reconcile::states::row_hash;
    let (_state, rt, lake) = lake();
    let log = rt.block_on(async {
        let table = create_orders(&lake).await;
        let table = append(&lake, &table, &[(1, "a")]).await;
        let table = lake
            .evolve_schema(&table, &[SchemaChange::rename("name", "label")])
            .await
            .expect("rename");
        append(&lake, &table, &[(2, "b")]).await;
        let mut follower = LakeFollower::new(LakeTables {
            consumer: "c".to_owned(),
            namespace: "s".to_owned(),
            tables: vec![orders_source()],
            changelogs: None,
            not_checked: None,
        });
        follower.look(&lake, Instant::now()).await;
        follower.finish()
    });
    assert_eq!(log.failed, None);
    let layout = Layout::new(vec!["id", "name"], vec![0]);
    let mut shown: Vec<(String, Shown)> = log.seen.iter().flat_map(|s| s.changes.clone()).collect();
    shown.sort_by(|a, b| a.0.cmp(&b.0));
    let row = |id: i64, name: &str| {
        let values = [id.to_string(), quoted(name)];
        (
            layout.key(&values),
            Shown::Row(row_hash(&layout.row(&values))),
        )
    };
    assert_eq!(shown, vec![row(1, "a"), row(2, "b")]);
}
