//! The lake layer (runtime/src/lake/{commit,schema,maintenance}.rs) on a
//! temporary state directory: no stack, just `Lake::open`.
//!
//! - two writers on one catalog: exactly one commit wins, the loser gets
//!   `CommitError::Conflict` naming base and head, and loses nothing after
//!   reload + retry;
//! - the careless consumer's pattern (delete keys, then append the new
//!   versions): the deletes never hit rows committed after them;
//! - overwrite, and replace (compaction) with identical rows, refused when
//!   its inputs changed; the compaction's data sequence number keeps older
//!   equality deletes applying;
//! - type widening accepted and refused per the spec; old files read back;
//! - snapshot expiry + orphan deletion leave exactly the referenced files;
//! - summary properties found through parents, and carried forward;
//! - manifest merging keeps the manifest count bounded; a writer keeping
//!   its newest snapshots keeps its metadata bounded;
//! - the `total-*` summary counts match the live files after every commit;
//! - pyiceberg reads the result of append, overwrite, widening, compaction
//!   and maintenance, and refuses equality deletes (as docs/lake.md says).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use arrow_array::cast::AsArray as _;
use arrow_array::types::{Decimal128Type, Float32Type, Float64Type, Int32Type, Int64Type};
use arrow_array::{
    Array as _, ArrayRef, Decimal128Array, Float32Array, Float64Array, Int32Array, Int64Array,
    RecordBatch, StringArray, new_null_array,
};
use arrow_schema::DataType;
use futures_util::TryStreamExt as _;
use iceberg::spec::{DataContentType, NestedField, NestedFieldRef, PrimitiveType, Schema, Type};
use iceberg::table::Table;
use iceberg::{TableCreation, TableIdent};
use lossproof_runtime::Lake;
use lossproof_runtime::lake::{
    self, Commit, CommitError, MaintenanceError, Retain, SchemaChange, SchemaError,
    latest_properties, latest_property, write_data_files, write_equality_deletes,
};
use serde_json::{Value, json};

use crate::lake::{PY_PRELUDE, pyiceberg, tokio};

const NS: &str = "layer";
const OFFSETS: &str = "lossproof.offsets";

/// A row of the test table: id (required long, the key), v (string), n
/// (int, widened to long), f (float, widened to double), amount
/// (decimal(10,2) as its unscaled value, widened to decimal(12,2)).
#[derive(Debug, Clone, PartialEq)]
struct Row {
    id: i64,
    v: Option<String>,
    n: Option<i64>,
    f: Option<f64>,
    amount: Option<i128>,
}

fn row(id: i64, v: &str) -> Row {
    Row {
        id,
        v: Some(v.to_owned()),
        n: Some(id * 10),
        f: Some(id as f64 + 0.5),
        amount: Some(i128::from(id) * 100 + 25),
    }
}

fn rows(ids: impl IntoIterator<Item = i64>, v: &str) -> Vec<Row> {
    ids.into_iter().map(|id| row(id, v)).collect()
}

fn ident(name: &str) -> TableIdent {
    TableIdent::from_strs([NS, name]).expect("ident")
}

fn schema() -> Schema {
    Schema::builder()
        .with_fields(vec![
            NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
            NestedField::optional(2, "v", Type::Primitive(PrimitiveType::String)).into(),
            NestedField::optional(3, "n", Type::Primitive(PrimitiveType::Int)).into(),
            NestedField::optional(4, "f", Type::Primitive(PrimitiveType::Float)).into(),
            NestedField::optional(
                5,
                "amount",
                Type::Primitive(PrimitiveType::Decimal {
                    precision: 10,
                    scale: 2,
                }),
            )
            .into(),
        ])
        .with_identifier_field_ids([1])
        .build()
        .expect("schema")
}

async fn create(lake: &Lake, name: &str) -> Table {
    let namespace = lake.ensure_namespace(NS).await.expect("namespace");
    let creation = TableCreation::builder()
        .name(name.to_owned())
        .schema(schema())
        .build();
    lake.catalog()
        .create_table(&namespace, creation)
        .await
        .expect("create table")
}

/// `rows` as one batch in `table`'s current Arrow schema; a column the rows
/// do not know (added later) is all NULL.
fn batch(table: &Table, rows: &[Row]) -> RecordBatch {
    let arrow = Arc::new(
        iceberg::arrow::schema_to_arrow_schema(table.metadata().current_schema())
            .expect("arrow schema"),
    );
    let columns: Vec<ArrayRef> = arrow
        .fields()
        .iter()
        .map(|field| -> ArrayRef {
            let dt = field.data_type();
            match (field.name().as_str(), dt) {
                ("id", DataType::Int64) => {
                    Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.id)))
                }
                ("v", DataType::Utf8) => {
                    Arc::new(rows.iter().map(|r| r.v.as_deref()).collect::<StringArray>())
                }
                ("n", DataType::Int32) => Arc::new(
                    rows.iter()
                        .map(|r| r.n.map(|n| i32::try_from(n).expect("n fits an int")))
                        .collect::<Int32Array>(),
                ),
                ("n", DataType::Int64) => {
                    Arc::new(rows.iter().map(|r| r.n).collect::<Int64Array>())
                }
                ("f", DataType::Float32) => Arc::new(
                    rows.iter()
                        .map(|r| r.f.map(|f| f as f32))
                        .collect::<Float32Array>(),
                ),
                ("f", DataType::Float64) => {
                    Arc::new(rows.iter().map(|r| r.f).collect::<Float64Array>())
                }
                ("amount", DataType::Decimal128(p, s)) => Arc::new(
                    rows.iter()
                        .map(|r| r.amount)
                        .collect::<Decimal128Array>()
                        .with_precision_and_scale(*p, *s)
                        .expect("decimal"),
                ),
                (name, dt) if !matches!(name, "id" | "v" | "n" | "f" | "amount") => {
                    new_null_array(dt, rows.len())
                }
                (name, dt) => panic!("column {name} is {dt:?}"),
            }
        })
        .collect();
    RecordBatch::try_new(arrow, columns).expect("batch")
}

/// The rows of `batches`, sorted by id (n, f and amount read whatever
/// width the table has now).
fn read_rows(batches: &[RecordBatch]) -> Vec<Row> {
    let mut out = Vec::new();
    for batch in batches {
        let column = |name: &str| {
            batch
                .column_by_name(name)
                .unwrap_or_else(|| panic!("no column {name} in {:?}", batch.schema()))
        };
        let (ids, v, n, f, amount) = (
            column("id"),
            column("v"),
            column("n"),
            column("f"),
            column("amount"),
        );
        for i in 0..batch.num_rows() {
            out.push(Row {
                id: ids.as_primitive::<Int64Type>().value(i),
                v: (!v.is_null(i)).then(|| v.as_string::<i32>().value(i).to_owned()),
                n: (!n.is_null(i)).then(|| match n.data_type() {
                    DataType::Int32 => i64::from(n.as_primitive::<Int32Type>().value(i)),
                    DataType::Int64 => n.as_primitive::<Int64Type>().value(i),
                    other => panic!("n is {other:?}"),
                }),
                f: (!f.is_null(i)).then(|| match f.data_type() {
                    DataType::Float32 => f64::from(f.as_primitive::<Float32Type>().value(i)),
                    DataType::Float64 => f.as_primitive::<Float64Type>().value(i),
                    other => panic!("f is {other:?}"),
                }),
                amount: (!amount.is_null(i))
                    .then(|| amount.as_primitive::<Decimal128Type>().value(i)),
            });
        }
    }
    out.sort_by(|a, b| a.id.cmp(&b.id).then_with(|| a.v.cmp(&b.v)));
    out
}

fn sorted(mut rows: Vec<Row>) -> Vec<Row> {
    rows.sort_by(|a, b| a.id.cmp(&b.id).then_with(|| a.v.cmp(&b.v)));
    rows
}

async fn scan(lake: &Lake, name: &str) -> Vec<Row> {
    read_rows(&lake.scan(&ident(name)).await.expect("scan"))
}

/// Commit, then check the new snapshot's `total-*` counts against its live
/// files.
async fn commit(lake: &Lake, base: &Table, commit: Commit) -> Table {
    let table = lake.commit(base, commit).await.expect("commit");
    check_totals(lake, &table).await;
    table
}

async fn append(lake: &Lake, table: &Table, rows: &[Row]) -> Table {
    let files = write_data_files(table, vec![batch(table, rows)])
        .await
        .expect("write");
    commit(lake, table, Commit::append(files)).await
}

async fn delete_keys(lake: &Lake, table: &Table, ids: &[i64]) -> Table {
    let keys: Vec<Row> = ids.iter().map(|id| row(*id, "")).collect();
    let files = write_equality_deletes(table, vec![1], vec![batch(table, &keys)])
        .await
        .expect("write deletes");
    commit(lake, table, Commit::row_delta(files)).await
}

/// A live file of the current snapshot, read from its manifests.
#[derive(Debug, Clone)]
struct Live {
    path: String,
    content: DataContentType,
    sequence_number: i64,
    records: u64,
    size: u64,
}

async fn live_files(table: &Table) -> Vec<Live> {
    lake::live_files(table)
        .await
        .expect("live files")
        .into_iter()
        .map(|f| Live {
            path: f.path,
            content: f.content,
            sequence_number: f.sequence_number.expect("sequence number"),
            records: f.records,
            size: f.bytes,
        })
        .collect()
}

fn data_paths(live: &[Live]) -> BTreeSet<String> {
    live.iter()
        .filter(|l| l.content == DataContentType::Data)
        .map(|l| l.path.clone())
        .collect()
}

fn summary(table: &Table, key: &str) -> Option<String> {
    table
        .metadata()
        .current_snapshot()
        .expect("a snapshot")
        .summary()
        .additional_properties
        .get(key)
        .cloned()
}

fn total(table: &Table, key: &str) -> u64 {
    summary(table, key)
        .unwrap_or_else(|| panic!("no {key} in the summary"))
        .parse()
        .expect("a count")
}

/// The `total-*` counts equal what the live files add up to, and with no
/// delete files `total-records` is the row count a scan returns.
async fn check_totals(lake: &Lake, table: &Table) {
    let live = live_files(table).await;
    let (deletes, data): (Vec<&Live>, Vec<&Live>) = live
        .iter()
        .partition(|l| l.content != DataContentType::Data);
    let context = || {
        format!(
            "{:?}",
            table.metadata().current_snapshot().map(|s| s.summary())
        )
    };
    assert_eq!(
        total(table, "total-data-files"),
        data.len() as u64,
        "{}",
        context()
    );
    assert_eq!(
        total(table, "total-delete-files"),
        deletes.len() as u64,
        "{}",
        context()
    );
    assert_eq!(
        total(table, "total-records"),
        data.iter().map(|l| l.records).sum::<u64>(),
        "{}",
        context()
    );
    assert_eq!(
        total(table, "total-equality-deletes"),
        deletes.iter().map(|l| l.records).sum::<u64>(),
        "{}",
        context()
    );
    assert_eq!(
        total(table, "total-files-size"),
        live.iter().map(|l| l.size).sum::<u64>(),
        "{}",
        context()
    );
    if deletes.is_empty() {
        let scanned = lake.scan(table.identifier()).await.expect("scan");
        let count: usize = scanned.iter().map(RecordBatch::num_rows).sum();
        assert_eq!(total(table, "total-records"), count as u64, "{}", context());
    }
}

fn local(location: &str) -> PathBuf {
    PathBuf::from(location.strip_prefix("file://").unwrap_or(location))
}

fn files_under(dir: &Path) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.insert(path);
        }
    }
    out
}

fn table_files(table: &Table) -> BTreeSet<PathBuf> {
    let root = local(table.metadata().location());
    let mut out = files_under(&root.join("data"));
    out.extend(files_under(&root.join("metadata")));
    out
}

#[test]
fn two_writers_exactly_one_wins_and_the_loser_retries() {
    let state = tempfile::tempdir().expect("temp state dir");
    tokio().block_on(async {
        let a = Lake::open(state.path()).await.expect("lake a");
        let b = Lake::open(state.path()).await.expect("lake b");
        two_writers_on(&a, &b).await;
    });
}

/// A consumer paused (`pause consumer`) or killed while it reads the local
/// lake's catalog holds up no other consumer's commit: the catalog's sqlite
/// file is in WAL mode, where a reader's open transaction and a writer do not
/// block each other. In sqlite's default rollback-journal mode the commit
/// below waits out the reader's lock for the 5 s busy timeout and fails
/// "database is locked"; a team's own catalog file keeps the mode it has.
#[test]
fn a_reader_stopped_mid_read_holds_up_no_commit() {
    use sqlx::ConnectOptions as _;
    let state = tempfile::tempdir().expect("temp state dir");
    tokio().block_on(async {
        let lake = Lake::open(state.path()).await.expect("lake");
        let table = create(&lake, "orders").await;
        let catalog_db = state.path().join("lake/catalog.db");
        let mut reader = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(&catalog_db)
            .connect()
            .await
            .expect("a reader's connection");
        sqlx::query("BEGIN")
            .execute(&mut reader)
            .await
            .expect("begin");
        let tables: i64 = sqlx::query_scalar("SELECT count(*) FROM iceberg_tables")
            .fetch_one(&mut reader)
            .await
            .expect("read the catalog");
        assert_eq!(tables, 1);

        // The reader is stopped here, inside its transaction; a commit lands.
        append(&lake, &table, &rows(1..=3, "a")).await;
        assert_eq!(scan(&lake, "orders").await, rows(1..=3, "a"));
        sqlx::query("COMMIT")
            .execute(&mut reader)
            .await
            .expect("commit the read");

        let other = state.path().join("team/catalog.db");
        let team = Lake::open_catalog(&other, &state.path().join("team/warehouse"))
            .await
            .expect("a team's catalog");
        create(&team, "orders").await;
        let mode = |path: PathBuf| async move {
            let mut c = sqlx::sqlite::SqliteConnectOptions::new()
                .filename(path)
                .connect()
                .await
                .expect("connect");
            sqlx::query_scalar::<_, String>("PRAGMA journal_mode")
                .fetch_one(&mut c)
                .await
                .expect("journal mode")
        };
        assert_eq!(mode(catalog_db).await, "wal");
        assert_eq!(
            mode(other).await,
            "delete",
            "a team's catalog is left as found"
        );
    });
}

/// The same race on the aws stack's lake: Glue on moto, files in its S3
/// (with lossproof's moto, which enforces Glue's `VersionId` as AWS does).
#[cfg(feature = "aws")]
#[test]
fn two_writers_on_glue_exactly_one_wins_and_the_loser_retries() {
    let logs = tempfile::tempdir().expect("temp logs");
    let tools = lossproof_runtime::tools::Tools::from_env();
    let moto = lossproof_runtime::nightly::Moto::start(
        &tools,
        &logs.path().join("moto.log"),
        Duration::from_mins(1),
    )
    .expect("moto server");
    lossproof_runtime::nightly::provision(&tools, &moto.endpoint(), &logs.path().join("p.log"))
        .expect("the lake bucket");
    let at = lossproof_runtime::nightly::emulated_lake(moto.endpoint());
    tokio().block_on(async {
        let a = Lake::open_at(&at).await.expect("lake a");
        let b = Lake::open_at(&at).await.expect("lake b");
        assert!(!a.commits_tables_atomically());
        two_writers_on(&a, &b).await;
        // Dropping the namespace removes its files from S3 too.
        let table = a
            .catalog()
            .load_table(&ident("orders"))
            .await
            .expect("load");
        let metadata = table.metadata_location().expect("location").to_owned();
        assert!(table.file_io().exists(&metadata).await.expect("exists"));
        a.drop_namespace(NS).await.expect("drop");
        assert!(!table.file_io().exists(&metadata).await.expect("exists"));
    });
}

/// Two writers commit against one base at once: exactly one wins, the
/// loser gets a conflict naming both and loses nothing on retry.
async fn two_writers_on(a: &Lake, b: &Lake) {
    let table = create(a, "orders").await;
    append(a, &table, &rows(1..=3, "a")).await;

    // Both read the same base.
    let base_a = a
        .catalog()
        .load_table(&ident("orders"))
        .await
        .expect("load a");
    let base_b = b
        .catalog()
        .load_table(&ident("orders"))
        .await
        .expect("load b");
    let base = base_a.metadata_location().expect("location").to_owned();
    assert_eq!(base_b.metadata_location(), Some(base.as_str()));
    let files_a = write_data_files(&base_a, vec![batch(&base_a, &rows(10..=12, "a"))])
        .await
        .expect("write a");
    let files_b = write_data_files(&base_b, vec![batch(&base_b, &rows(20..=22, "b"))])
        .await
        .expect("write b");

    // Both commit at once: exactly one wins.
    let (ra, rb) = tokio::join!(
        a.commit(&base_a, Commit::append(files_a.clone())),
        b.commit(&base_b, Commit::append(files_b.clone()))
    );
    let (winner, error, loser, loser_files) = match (ra, rb) {
        (Ok(t), Err(e)) => (t, e, b, files_b),
        (Err(e), Ok(t)) => (t, e, a, files_a),
        (ra, rb) => panic!(
            "exactly one commit must win: {:?} / {:?}",
            ra.map(|t| t.metadata_location().map(str::to_owned)),
            rb.map(|t| t.metadata_location().map(str::to_owned))
        ),
    };
    let winner_location = winner.metadata_location().expect("location").to_owned();
    let CommitError::Conflict {
        table,
        base: seen_base,
        head,
    } = &error
    else {
        panic!("the loser gets a conflict, not {error}");
    };
    assert_eq!(table, &ident("orders"));
    assert_eq!(seen_base, &base);
    assert_eq!(head, &winner_location);
    assert!(error.is_conflict());
    let message = error.to_string();
    assert!(
        message.contains(&base) && message.contains(&winner_location),
        "{message}"
    );

    // The loser reloads and retries with the files it wrote: nothing lost.
    let reloaded = loser
        .catalog()
        .load_table(&ident("orders"))
        .await
        .expect("reload");
    assert_eq!(reloaded.metadata_location(), Some(winner_location.as_str()));
    let after = loser
        .commit(&reloaded, Commit::append(loser_files))
        .await
        .expect("retry after reload");
    check_totals(loser, &after).await;
    let mut expected = rows(1..=3, "a");
    expected.extend(rows(10..=12, "a"));
    expected.extend(rows(20..=22, "b"));
    assert_eq!(scan(a, "orders").await, sorted(expected.clone()));
    assert_eq!(scan(b, "orders").await, sorted(expected));

    // A commit against the now stale winner's table is refused too.
    let late = write_data_files(&winner, vec![batch(&winner, &rows(30..=30, "c"))])
        .await
        .expect("write");
    let error = a
        .commit(&winner, Commit::append(late))
        .await
        .expect_err("stale base");
    assert!(error.is_conflict(), "{error}");
    assert_eq!(scan(a, "orders").await.len(), 9);
}

#[test]
fn deletes_then_appends_keep_exactly_the_new_versions() {
    let state = tempfile::tempdir().expect("temp state dir");
    tokio().block_on(async {
        let lake = Lake::open(state.path()).await.expect("lake");
        let table = create(&lake, "orders").await;
        let table = append(&lake, &table, &rows(1..=5, "a")).await;

        // The careless consumer: delete the keys, then append the new versions.
        let table = delete_keys(&lake, &table, &[2, 4]).await;
        assert_eq!(
            table
                .metadata()
                .current_snapshot()
                .expect("snapshot")
                .summary()
                .operation
                .as_str(),
            "delete"
        );
        assert_eq!(
            scan(&lake, "orders").await,
            sorted([1, 3, 5].map(|id| row(id, "a")).to_vec())
        );
        let table = append(&lake, &table, &rows([2, 4], "b")).await;
        let expected = sorted(vec![
            row(1, "a"),
            row(2, "b"),
            row(3, "a"),
            row(4, "b"),
            row(5, "a"),
        ]);
        assert_eq!(scan(&lake, "orders").await, expected);

        // Deletes and the new version in ONE row delta: the deletes apply to
        // older snapshots only.
        let keys = write_equality_deletes(&table, vec![1], vec![batch(&table, &[row(3, "")])])
            .await
            .expect("deletes");
        let mut files = write_data_files(&table, vec![batch(&table, &[row(3, "c")])])
            .await
            .expect("data");
        files.extend(keys);
        let table = commit(&lake, &table, Commit::row_delta(files)).await;
        assert_eq!(
            table
                .metadata()
                .current_snapshot()
                .expect("snapshot")
                .summary()
                .operation
                .as_str(),
            "overwrite"
        );
        let expected = sorted(vec![
            row(1, "a"),
            row(2, "b"),
            row(3, "c"),
            row(4, "b"),
            row(5, "a"),
        ]);
        assert_eq!(scan(&lake, "orders").await, expected);

        // A later delete hits the appended version.
        let table = delete_keys(&lake, &table, &[2]).await;
        let expected = sorted(vec![row(1, "a"), row(3, "c"), row(4, "b"), row(5, "a")]);
        assert_eq!(scan(&lake, "orders").await, expected);
        assert_eq!(total(&table, "total-equality-deletes"), 4);

        // A fresh DataFusion session reads through lossproof's own
        // equality-delete application (runtime/src/lake/read.rs): it must
        // agree with iceberg-rust's scan above, sequence numbers included.
        let ctx = lake.session(&[NS]).await.expect("session");
        let batches = ctx
            .sql("SELECT id, v FROM layer.orders ORDER BY id")
            .await
            .expect("sql")
            .collect()
            .await
            .expect("collect");
        let mut seen = Vec::new();
        for batch in &batches {
            let ids = batch.column(0).as_primitive::<Int64Type>();
            let v = batch.column(1);
            for i in 0..batch.num_rows() {
                let text = match v.data_type() {
                    DataType::Utf8 => v.as_string::<i32>().value(i).to_owned(),
                    DataType::Utf8View => v.as_string_view().value(i).to_owned(),
                    other => panic!("v is {other:?}"),
                };
                seen.push((ids.value(i), text));
            }
        }
        assert_eq!(
            seen,
            [(1, "a"), (3, "c"), (4, "b"), (5, "a")]
                .map(|(id, v)| (id, v.to_owned()))
                .to_vec()
        );
    });
}

#[test]
#[allow(clippy::too_many_lines)] // One scenario, step by step.
fn overwrite_and_compaction() {
    let state = tempfile::tempdir().expect("temp state dir");
    tokio().block_on(async {
        let lake = Lake::open(state.path()).await.expect("lake");
        let table = create(&lake, "orders").await;
        let table = append(&lake, &table, &rows(1..=3, "a")).await;
        let file_a = data_paths(&live_files(&table).await)
            .into_iter()
            .next()
            .expect("file a");
        let table = append(&lake, &table, &rows(4..=6, "a")).await;

        // Overwrite: file A out, its rows rewritten in.
        let files = write_data_files(&table, vec![batch(&table, &rows(1..=3, "b"))])
            .await
            .expect("write");
        let table = commit(
            &lake,
            &table,
            Commit::overwrite(vec![file_a.clone()], files),
        )
        .await;
        let live = data_paths(&live_files(&table).await);
        assert_eq!(live.len(), 2);
        assert!(!live.contains(&file_a), "{file_a} is still live");
        assert_eq!(summary(&table, "deleted-data-files").as_deref(), Some("1"));
        let mut expected = rows(1..=3, "b");
        expected.extend(rows(4..=6, "a"));
        assert_eq!(scan(&lake, "orders").await, sorted(expected));

        // Removing it again: it is not live any more.
        let error = lake
            .commit(&table, Commit::overwrite(vec![file_a.clone()], Vec::new()))
            .await
            .expect_err("file a is gone");
        assert!(
            matches!(&error, CommitError::InputGone { path, .. } if *path == file_a),
            "{error}"
        );

        // Deletes and a new version, then a compaction of everything.
        let table = delete_keys(&lake, &table, &[5]).await;
        let table = append(&lake, &table, &[row(5, "c")]).await;
        let before = scan(&lake, "orders").await;
        assert_eq!(before.len(), 6);
        let compacted = compact(&lake, &table).await.expect("compaction");
        check_totals(&lake, &compacted).await;
        assert_eq!(
            scan(&lake, "orders").await,
            before,
            "compaction changed rows"
        );
        let live = live_files(&compacted).await;
        assert_eq!(live.len(), 1, "one data file and no delete file: {live:?}");
        assert_eq!(live[0].content, DataContentType::Data);
        assert_eq!(
            compacted
                .metadata()
                .current_snapshot()
                .expect("snapshot")
                .summary()
                .operation
                .as_str(),
            "replace"
        );
        assert_eq!(total(&compacted, "total-delete-files"), 0);
        assert_eq!(total(&compacted, "total-records"), 6);

        // A compaction computed on a stale table: conflict.
        let outdated = compacted.clone();
        let table = append(&lake, &compacted, &[row(7, "a")]).await;
        let error = compact(&lake, &outdated).await.expect_err("stale base");
        assert!(error.is_conflict(), "{error}");
        // Its inputs reused on the new head after they were overwritten: gone.
        let inputs: Vec<String> = live_files(&outdated)
            .await
            .into_iter()
            .map(|l| l.path)
            .collect();
        let table = commit(
            &lake,
            &table,
            Commit::overwrite(
                inputs.clone(),
                write_data_files(&table, vec![batch(&table, &before)])
                    .await
                    .expect("write"),
            ),
        )
        .await;
        let rewritten = write_data_files(&table, vec![batch(&table, &before)])
            .await
            .expect("write");
        let error = lake
            .commit(
                &table,
                Commit::replace(
                    inputs.clone(),
                    rewritten,
                    table.metadata().last_sequence_number(),
                ),
            )
            .await
            .expect_err("inputs gone");
        assert!(
            matches!(&error, CommitError::InputGone { path, .. } if *path == inputs[0]),
            "{error}"
        );
        // Recomputed on the head, it goes through.
        let mut expected = before.clone();
        expected.push(row(7, "a"));
        compact(&lake, &table).await.expect("recomputed compaction");
        assert_eq!(scan(&lake, "orders").await, sorted(expected));
    });
}

/// Compaction: every live row (deletes applied) into one file, replacing
/// every live data and delete file.
async fn compact(lake: &Lake, base: &Table) -> Result<Table, CommitError> {
    compact_with(lake, base, HashMap::new()).await
}

async fn compact_with(
    lake: &Lake,
    base: &Table,
    properties: HashMap<String, String>,
) -> Result<Table, CommitError> {
    let live = live_files(base).await;
    let rows = read_rows(
        &base
            .scan()
            .select_all()
            .build()
            .expect("scan")
            .to_arrow()
            .await
            .expect("arrow")
            .try_collect::<Vec<_>>()
            .await
            .expect("read"),
    );
    let files = write_data_files(base, vec![batch(base, &rows)])
        .await
        .expect("write");
    let sequence = base
        .metadata()
        .current_snapshot()
        .expect("snapshot")
        .sequence_number();
    lake.commit(
        base,
        Commit::replace(live.into_iter().map(|l| l.path).collect(), files, sequence)
            .with_properties(properties),
    )
    .await
}

#[test]
fn the_compaction_job_races_writers_by_the_base_check() {
    // `Lake::compact` (what `compact table T` and `lossproof compact` run):
    // it loses to a writer that committed after it read, wins otherwise,
    // never changes a row, carries the writers' `lossproof.*` properties and
    // leaves no delete file; a writer computed against the table before the
    // compaction then gets a conflict, and after reloading loses nothing.
    let state = tempfile::tempdir().expect("temp state dir");
    tokio().block_on(async {
        let lake = Lake::open(state.path()).await.expect("lake");
        let table = create(&lake, "orders").await;
        let table = append(&lake, &table, &rows(1..=3, "a")).await;
        let table = delete_keys(&lake, &table, &[2]).await;
        let files = write_data_files(&table, vec![batch(&table, &[row(2, "b")])])
            .await
            .expect("write");
        let offsets = HashMap::from([(OFFSETS.to_owned(), "0:42".to_owned())]);
        let table = commit(
            &lake,
            &table,
            Commit::append(files).with_properties(offsets.clone()),
        )
        .await;
        let table = append(&lake, &table, &rows(4..=5, "a")).await;

        // A writer commits after the compaction read: the compaction loses
        // and nothing it wrote becomes visible.
        let read_by_compaction = table.clone();
        let table = append(&lake, &table, &[row(6, "a")]).await;
        let before = scan(&lake, "orders").await;
        let lost = lake
            .compact_from(&read_by_compaction)
            .await
            .expect("compaction");
        assert!(matches!(lost, lake::Compacted::Lost { .. }), "{lost:?}");
        assert_eq!(scan(&lake, "orders").await, before);

        // Run again on the head, it wins: same rows, one data file, no
        // delete file, the offsets on its own snapshot.
        let won = lake.compact(&ident("orders")).await.expect("compaction");
        let lake::Compacted::Won {
            data_files_in,
            delete_files_in,
            data_files_out,
            rows: compacted_rows,
            ..
        } = won
        else {
            panic!("the compaction on the head lost: {won:?}");
        };
        assert_eq!(
            (
                data_files_in,
                delete_files_in,
                data_files_out,
                compacted_rows
            ),
            (4, 1, 1, 6)
        );
        assert_eq!(
            scan(&lake, "orders").await,
            before,
            "compaction changed rows"
        );
        let compacted = lake
            .catalog()
            .load_table(&ident("orders"))
            .await
            .expect("load");
        check_totals(&lake, &compacted).await;
        assert_eq!(summary(&compacted, OFFSETS).as_deref(), Some("0:42"));
        let live = lake::live_files(&compacted).await.expect("live files");
        assert_eq!(live.len(), 1, "{live:?}");
        assert_eq!(live[0].content, DataContentType::Data);

        // The writer that read before the compaction: refused, then after a
        // reload its rows land next to the compacted ones.
        let files = write_data_files(&table, vec![batch(&table, &[row(7, "a")])])
            .await
            .expect("write");
        let error = lake
            .commit(&table, Commit::append(files))
            .await
            .expect_err("stale writer");
        assert!(error.is_conflict(), "{error}");
        append(&lake, &compacted, &[row(7, "a")]).await;
        let mut expected = before.clone();
        expected.push(row(7, "a"));
        assert_eq!(scan(&lake, "orders").await, sorted(expected));

        // Two data files again, then one: compacted; one alone: nothing to do.
        assert!(matches!(
            lake.compact(&ident("orders")).await.expect("compaction"),
            lake::Compacted::Won { .. }
        ));
        assert_eq!(
            lake.compact(&ident("orders")).await.expect("compaction"),
            lake::Compacted::NothingToDo { data_files: 1 }
        );
    });
}

#[test]
fn compaction_keeps_older_deletes_applying() {
    // A compaction that copies rows WITHOUT applying deletes must keep its
    // inputs' data sequence number, or an older equality delete stops
    // applying and a deleted version comes back.
    let state = tempfile::tempdir().expect("temp state dir");
    tokio().block_on(async {
        let lake = Lake::open(state.path()).await.expect("lake");
        let table = create(&lake, "orders").await;
        let table = append(&lake, &table, &rows(1..=3, "a")).await;
        let [file_a] = live_files(&table).await.try_into().expect("one file");
        let table = delete_keys(&lake, &table, &[2]).await;
        let table = append(&lake, &table, &[row(2, "b")]).await;
        let expected = sorted(vec![row(1, "a"), row(2, "b"), row(3, "a")]);
        assert_eq!(scan(&lake, "orders").await, expected);

        // Rewrite file A as is (key 2's old version included).
        let copy = write_data_files(&table, vec![batch(&table, &rows(1..=3, "a"))])
            .await
            .expect("write");
        let table = commit(
            &lake,
            &table,
            Commit::replace(vec![file_a.path.clone()], copy, file_a.sequence_number),
        )
        .await;
        let live = live_files(&table).await;
        let copied = live
            .iter()
            .find(|l| l.content == DataContentType::Data && l.records == 3)
            .expect("the copy");
        assert_eq!(copied.sequence_number, file_a.sequence_number, "{live:?}");
        assert_eq!(
            scan(&lake, "orders").await,
            expected,
            "the delete of key 2 still applies"
        );
    });
}

#[test]
fn a_read_in_key_order_sorts_only_where_file_key_ranges_overlap() {
    // The reconciler reads a lake table ORDER BY its key. The table's scan
    // answers DataFusion's sort pushdown: no SortExec over the table, the
    // files read in the order of their key ranges (Iceberg's bounds), each
    // group of overlapping files sorted on its own. Files here are written
    // out of key order, each unsorted inside, two of them overlapping, and
    // an equality delete applies to a file of one group.
    let state = tempfile::tempdir().expect("temp state dir");
    tokio().block_on(async {
        let lake = Lake::open(state.path()).await.expect("lake");
        let table = create(&lake, "ordered").await;
        let table = append(&lake, &table, &rows([30, 10, 20], "a")).await;
        let table = append(&lake, &table, &rows([5, 1, 3], "b")).await;
        let table = append(&lake, &table, &rows([50, 40], "c")).await;
        let table = append(&lake, &table, &rows([60, 45], "d")).await;
        let table = delete_keys(&lake, &table, &[20]).await;
        let _ = append(&lake, &table, &[row(20, "e")]).await;
        let expected = [1, 3, 5, 10, 20, 30, 40, 45, 50, 60];

        let plan = |sql: &'static str| planned(&lake, sql);

        // The reconciler's query: no sort, the scan in key order.
        let (shown, ids) = plan(
            "SELECT * FROM (SELECT * FROM layer.ordered) AS lp_view ORDER BY id ASC NULLS LAST",
        )
        .await;
        assert!(!shown.contains("SortExec"), "{shown}");
        assert!(
            shown.contains("LakeScanExec: layer.ordered, in key order (id)"),
            "{shown}"
        );
        // Groups: [1, 5], [10, 30] with [20, 20], [40, 50] with [45, 60].
        assert!(
            shown.contains("files_read=5, files_skipped=0, sorted_groups=3"),
            "{shown}"
        );
        assert_eq!(ids, expected);
        // A key range (a distributed worker's bucket): the files outside it
        // skipped, the filter applied by the scan, still no sort.
        let (shown, ids) = plan(
            "SELECT * FROM (SELECT * FROM layer.ordered) AS lp_filtered \
             WHERE (lp_filtered.\"id\" >= 10 AND lp_filtered.\"id\" < 45) ORDER BY id ASC NULLS LAST",
        )
        .await;
        assert!(!shown.contains("SortExec") && !shown.contains("FilterExec"), "{shown}");
        assert!(shown.contains("files with id in [10, 45]"), "{shown}");
        assert!(
            shown.contains("files_read=4, files_skipped=1, sorted_groups=2"),
            "{shown}"
        );
        assert_eq!(ids, [10, 20, 30, 40]);
        // A filter the scan does not apply itself stays DataFusion's.
        let (shown, ids) =
            plan("SELECT id FROM layer.ordered WHERE length(v) = 1 AND id > 40 ORDER BY id").await;
        assert!(shown.contains("FilterExec"), "{shown}");
        assert_eq!(ids, [45, 50, 60]);
        // A projection keeping the key too.
        let (shown, ids) = plan("SELECT id, v FROM layer.ordered ORDER BY id").await;
        assert!(!shown.contains("SortExec"), "{shown}");
        assert_eq!(ids, expected);

        // Any other order is DataFusion's sort, over the files as they come.
        let (shown, ids) = plan("SELECT id FROM layer.ordered ORDER BY id DESC").await;
        assert!(shown.contains("SortExec"), "{shown}");
        assert!(!shown.contains("in key order"), "{shown}");
        assert_eq!(ids, expected.iter().rev().copied().collect::<Vec<_>>());
        let (shown, ids) = plan("SELECT id FROM layer.ordered ORDER BY v, id").await;
        assert!(shown.contains("SortExec"), "{shown}");
        assert_eq!(ids, [10, 30, 1, 3, 5, 40, 50, 45, 60, 20]);
        // No order asked for: no sort at all.
        let (shown, ids) = plan("SELECT id FROM layer.ordered").await;
        assert!(
            !shown.contains("SortExec") && !shown.contains("in key order"),
            "{shown}"
        );
        assert_eq!(ids.len(), expected.len());

        // A compaction writes the rows in key order (so its files' key
        // ranges never overlap): read back without any ORDER BY.
        let table = lake
            .catalog()
            .load_table(&ident("ordered"))
            .await
            .expect("load");
        let compacted = lake.compact_from(&table).await.expect("compaction");
        assert!(
            matches!(compacted, lake::Compacted::Won { .. }),
            "{compacted:?}"
        );
        let (_, ids) = plan("SELECT id FROM layer.ordered").await;
        assert_eq!(ids, expected);
        let (shown, _) = plan("SELECT id FROM layer.ordered ORDER BY id").await;
        assert!(shown.contains("sorted_groups=1"), "{shown}");
    });
}

/// `sql` over a fresh session of the lake: its physical plan as `EXPLAIN
/// ANALYZE` shows it (with each node's metrics, once run), and the `id`s
/// it returns, in order.
async fn planned(lake: &Lake, sql: &str) -> (String, Vec<i64>) {
    use datafusion::physical_plan::collect;
    use datafusion::physical_plan::display::DisplayableExecutionPlan;
    let ctx = lake.session(&[NS]).await.expect("session");
    let plan = ctx
        .sql(sql)
        .await
        .expect("plan")
        .create_physical_plan()
        .await
        .expect("physical plan");
    let batches = collect(plan.clone(), ctx.task_ctx()).await.expect("run");
    let shown = DisplayableExecutionPlan::with_metrics(plan.as_ref())
        .indent(true)
        .to_string();
    let ids = batches
        .iter()
        .flat_map(|b| {
            let ids = b.column_by_name("id").expect("id");
            ids.as_primitive::<Int64Type>().values().to_vec()
        })
        .collect();
    (shown, ids)
}

/// The widening tests' rows: the extremes of each old type, and NULLs.
fn narrow_rows() -> Vec<Row> {
    vec![
        Row {
            id: 1,
            v: Some("min".to_owned()),
            n: Some(i64::from(i32::MIN)),
            f: Some(-0.125),
            amount: Some(-9_999_999_999),
        },
        Row {
            id: 2,
            v: None,
            n: None,
            f: None,
            amount: None,
        },
        row(3, "max"),
    ]
}

fn decimal(precision: u32, scale: u32) -> PrimitiveType {
    PrimitiveType::Decimal { precision, scale }
}

#[test]
#[allow(clippy::too_many_lines)] // One scenario, step by step.
fn schema_changes_outside_the_spec_are_refused() {
    let state = tempfile::tempdir().expect("temp state dir");
    tokio().block_on(async {
        let lake = Lake::open(state.path()).await.expect("lake");
        let table = create(&lake, "orders").await;
        let table = append(&lake, &table, &narrow_rows()).await;
        let before = table.metadata_location().expect("location").to_owned();

        // Refused: each names the column and both types, and writes nothing.
        let refusals = [
            (
                SchemaChange::widen("id", PrimitiveType::Int),
                "id",
                "long",
                "int",
            ),
            (
                SchemaChange::widen("v", PrimitiveType::Long),
                "v",
                "string",
                "long",
            ),
            (
                SchemaChange::widen("n", PrimitiveType::Double),
                "n",
                "int",
                "double",
            ),
            (
                SchemaChange::widen("n", PrimitiveType::String),
                "n",
                "int",
                "string",
            ),
            (
                SchemaChange::widen("f", PrimitiveType::Long),
                "f",
                "float",
                "long",
            ),
            (
                SchemaChange::widen("amount", decimal(12, 3)),
                "amount",
                "decimal(10, 2)",
                "decimal(12, 3)",
            ),
            (
                SchemaChange::widen("amount", decimal(9, 2)),
                "amount",
                "decimal(10, 2)",
                "decimal(9, 2)",
            ),
            (
                SchemaChange::widen("amount", decimal(39, 2)),
                "amount",
                "decimal(10, 2)",
                "decimal(39, 2)",
            ),
            (
                SchemaChange::widen("amount", PrimitiveType::Double),
                "amount",
                "decimal(10, 2)",
                "double",
            ),
            (
                SchemaChange::widen("nope", PrimitiveType::Long),
                "nope",
                "absent",
                "long",
            ),
            (
                SchemaChange::add_column("v", PrimitiveType::Long),
                "v",
                "string",
                "long",
            ),
        ];
        for (change, column, from, to) in refusals {
            let error = lake
                .evolve_schema(&table, std::slice::from_ref(&change))
                .await
                .expect_err("refused");
            assert_refused(&error, column, from, to);
        }

        // Schemas handed in whole: requiredness, new ids (dropping a non-key
        // column is allowed: tests/correct.rs; renaming one:
        // `a_rename_keeps_the_field_id`).
        let current = table.metadata().current_schema().clone();
        let edit = |f: &dyn Fn(&mut Vec<NestedField>)| {
            let mut fields: Vec<NestedField> = current
                .as_struct()
                .fields()
                .iter()
                .map(|f| NestedField::clone(f))
                .collect();
            f(&mut fields);
            Schema::builder()
                .with_fields(fields.into_iter().map(NestedFieldRef::from))
                .with_identifier_field_ids(current.identifier_field_ids())
                .build()
                .expect("schema")
        };
        let whole = [
            (edit(&|f| f[1].required = true), "v", "string", "string"),
            (
                edit(&|f| {
                    f.push(NestedField::required(
                        6,
                        "note",
                        Type::Primitive(PrimitiveType::String),
                    ));
                }),
                "note",
                "absent",
                "string",
            ),
            (
                // Field id 5 handed to another column: a rename and a type change.
                edit(&|f| {
                    f.remove(4);
                    f.push(NestedField::optional(
                        5,
                        "other",
                        Type::Primitive(PrimitiveType::Long),
                    ));
                }),
                "amount",
                "decimal(10, 2)",
                "long",
            ),
        ];
        for (schema, column, from, to) in whole {
            let error = lake
                .update_schema(&table, schema)
                .await
                .expect_err("refused");
            assert_refused(&error, column, from, to);
        }
        // Required -> optional is legal Iceberg, but refused here (an
        // optional column cannot stay an identifier field: drop that too).
        let optional_id = Schema::builder()
            .with_fields(current.as_struct().fields().iter().map(|f| {
                let mut f = NestedField::clone(f);
                f.required = false;
                NestedFieldRef::from(f)
            }))
            .build()
            .expect("schema");
        let error = lake
            .update_schema(&table, optional_id)
            .await
            .expect_err("refused");
        assert_refused(&error, "id", "long", "long");
        let reloaded = lake
            .catalog()
            .load_table(&ident("orders"))
            .await
            .expect("load");
        assert_eq!(
            reloaded.metadata_location(),
            Some(before.as_str()),
            "a refusal wrote nothing"
        );
    });
}

#[test]
fn a_rename_keeps_the_field_id() {
    // Renaming `v` to `label`: files written before read under the new
    // name (readers resolve columns by field id); a name in use or a column
    // that does not exist is refused.
    let state = tempfile::tempdir().expect("temp state dir");
    tokio().block_on(async {
        let lake = Lake::open(state.path()).await.expect("lake");
        let table = create(&lake, "orders").await;
        let table = append(&lake, &table, &rows(1..=3, "old")).await;
        let id = |t: &Table, name: &str| {
            t.metadata()
                .current_schema()
                .field_by_name(name)
                .map(|f| f.id)
        };
        let v_id = id(&table, "v").expect("v");
        for (change, column) in [
            (SchemaChange::rename("v", "n"), "n"),
            (SchemaChange::rename("nope", "label"), "nope"),
        ] {
            let error = lake
                .evolve_schema(&table, std::slice::from_ref(&change))
                .await
                .expect_err("refused");
            assert!(
                matches!(&error, SchemaError::Refused { column: c, .. } if c == column),
                "{error}"
            );
        }
        let renamed = lake
            .evolve_schema(&table, &[SchemaChange::rename("v", "label")])
            .await
            .expect("rename");
        assert_eq!(id(&renamed, "label"), Some(v_id));
        assert_eq!(id(&renamed, "v"), None);
        let batches = lake.scan(&ident("orders")).await.expect("scan");
        let mut labels: Vec<String> = Vec::new();
        for batch in &batches {
            let column = batch.column_by_name("label").expect("a `label` column");
            labels.extend(
                column
                    .as_string::<i32>()
                    .iter()
                    .map(|v| v.unwrap_or_default().to_owned()),
            );
        }
        assert_eq!(labels, vec!["old"; 3], "old files read under the new name");
    });
}

#[test]
#[allow(clippy::too_many_lines)] // One scenario, step by step.
fn widening_reads_old_files_with_the_new_types() {
    let state = tempfile::tempdir().expect("temp state dir");
    tokio().block_on(async {
        let lake = Lake::open(state.path()).await.expect("lake");
        let table = create(&lake, "orders").await;
        let old_rows = narrow_rows();
        let table = append(&lake, &table, &old_rows).await;
        let current = table.metadata().current_schema().clone();

        // Accepted: int -> long, float -> double, decimal(10,2) -> (12,2),
        // and a new optional column.
        let widened = lake
            .evolve_schema(
                &table,
                &[
                    SchemaChange::widen("n", PrimitiveType::Long),
                    SchemaChange::widen("f", PrimitiveType::Double),
                    SchemaChange::widen("amount", decimal(12, 2)),
                    SchemaChange::add_column("note", PrimitiveType::String),
                ],
            )
            .await
            .expect("widen");
        let schema = widened.metadata().current_schema();
        assert_ne!(schema.schema_id(), current.schema_id());
        let types: Vec<(i32, String, String, bool)> = schema
            .as_struct()
            .fields()
            .iter()
            .map(|f| (f.id, f.name.clone(), f.field_type.to_string(), f.required))
            .collect();
        assert_eq!(
            types,
            [
                (1, "id", "long", true),
                (2, "v", "string", false),
                (3, "n", "long", false),
                (4, "f", "double", false),
                (5, "amount", "decimal(12, 2)", false),
                (6, "note", "string", false),
            ]
            .map(|(id, name, ty, required)| (id, name.to_owned(), ty.to_owned(), required))
            .to_vec()
        );
        assert_eq!(schema.identifier_field_ids().collect::<Vec<_>>(), vec![1]);

        // The schema change is a snapshot of its own, with no file change:
        // iceberg-rust scans read the schema of the snapshot they scan.
        let marker = widened.metadata().current_snapshot().expect("snapshot");
        assert_eq!(marker.schema_id(), Some(schema.schema_id()));
        assert_eq!(marker.summary().operation.as_str(), "replace");
        assert_eq!(
            marker.parent_snapshot_id(),
            table.metadata().current_snapshot_id()
        );
        assert_eq!(
            live_files(&widened).await.len(),
            live_files(&table).await.len()
        );
        check_totals(&lake, &widened).await;

        // DataFusion (a fresh session) sees the new column and types at once.
        let ctx = lake.session(&[NS]).await.expect("session");
        let batches = ctx
            .sql("SELECT id, n, f, amount, note FROM layer.orders ORDER BY id")
            .await
            .expect("sql")
            .collect()
            .await
            .expect("collect");
        let n: Vec<Option<i64>> = batches
            .iter()
            .flat_map(|b| {
                b.column(1)
                    .as_primitive::<Int64Type>()
                    .iter()
                    .collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(n, old_rows.iter().map(|r| r.n).collect::<Vec<_>>());
        assert!(
            batches
                .iter()
                .all(|b| b.column(4).null_count() == b.num_rows())
        );

        // Old files read back with the new types, values equal.
        let batches = lake.scan(&ident("orders")).await.expect("scan");
        let arrow = batches[0].schema();
        assert_eq!(
            arrow.field_with_name("n").expect("n").data_type(),
            &DataType::Int64
        );
        assert_eq!(
            arrow.field_with_name("f").expect("f").data_type(),
            &DataType::Float64
        );
        assert_eq!(
            arrow.field_with_name("amount").expect("amount").data_type(),
            &DataType::Decimal128(12, 2)
        );
        assert!(
            batches
                .iter()
                .all(|b| b.column_by_name("note").expect("note").null_count() == b.num_rows())
        );
        assert_eq!(read_rows(&batches), sorted(old_rows.clone()));

        // New rows use the new range.
        let big = Row {
            id: 4,
            v: Some("big".to_owned()),
            n: Some(5_000_000_000),
            f: Some(1e300),
            amount: Some(999_999_999_999),
        };
        let table = append(&lake, &widened, std::slice::from_ref(&big)).await;
        let mut expected = old_rows.clone();
        expected.push(big);
        assert_eq!(scan(&lake, "orders").await, sorted(expected));

        // Narrowing back is refused now that the column is long.
        let error = lake
            .evolve_schema(&table, &[SchemaChange::widen("n", PrimitiveType::Int)])
            .await
            .expect_err("narrowing");
        assert_refused(&error, "n", "long", "int");
        // Widening to the type it has is no change: nothing written.
        let same = lake
            .evolve_schema(&table, &[SchemaChange::widen("n", PrimitiveType::Long)])
            .await
            .expect("no change");
        assert_eq!(same.metadata_location(), table.metadata_location());
        // A schema change against a stale table: conflict.
        let error = lake
            .evolve_schema(
                &widened,
                &[SchemaChange::add_column("late", PrimitiveType::Int)],
            )
            .await
            .expect_err("stale");
        assert!(error.is_conflict(), "{error}");
    });
}

fn assert_refused(error: &SchemaError, column: &str, from: &str, to: &str) {
    let SchemaError::Refused {
        column: c,
        from: f,
        to: t,
        ..
    } = error
    else {
        panic!("expected a refusal for {column} {from} -> {to}, got {error}");
    };
    assert_eq!(
        (c.as_str(), f.as_str(), t.as_str()),
        (column, from, to),
        "{error}"
    );
    let message = error.to_string();
    assert!(
        message.contains(&format!("`{column}`")) && message.contains(from) && message.contains(to),
        "{message}"
    );
}

#[test]
#[allow(clippy::too_many_lines)] // One scenario, step by step.
fn expiry_and_orphan_deletion_keep_exactly_the_referenced_files() {
    let state = tempfile::tempdir().expect("temp state dir");
    tokio().block_on(async {
        let lake = Lake::open(state.path()).await.expect("lake");
        let mut table = create(&lake, "orders").await;
        for id in 1..=5 {
            let files = write_data_files(&table, vec![batch(&table, &[row(id, "a")])])
                .await
                .expect("write");
            table = commit(
                &lake,
                &table,
                Commit::append(files)
                    .with_properties([(OFFSETS.to_owned(), id.to_string())].into()),
            )
            .await;
        }
        let first = data_paths(&live_files(&table).await)
            .into_iter()
            .next()
            .expect("a file");
        let files = write_data_files(&table, vec![batch(&table, &[row(9, "b")])])
            .await
            .expect("write");
        let table = commit(&lake, &table, Commit::overwrite(vec![first], files)).await;
        let table = delete_keys(&lake, &table, &[2]).await;
        let table = compact(&lake, &table).await.expect("compaction");
        let expected = scan(&lake, "orders").await;
        assert_eq!(expected.len(), 4);

        // The offsets are found behind the compaction, which did not carry them.
        assert_eq!(summary(&table, OFFSETS), None);
        assert_eq!(latest_property(&table, OFFSETS).as_deref(), Some("5"));

        // Leftovers: a commit that lost (its manifests, list and metadata
        // file stay) and a data file never committed.
        let stale_files = write_data_files(&table, vec![batch(&table, &[row(50, "x")])])
            .await
            .expect("write");
        let table = append(&lake, &table, &[row(6, "a")]).await;
        let outdated = lake
            .catalog()
            .load_table(&ident("orders"))
            .await
            .expect("load");
        let table = append(&lake, &table, &[row(7, "a")]).await;
        let error = lake
            .commit(&outdated, Commit::append(stale_files.clone()))
            .await
            .expect_err("stale");
        assert!(error.is_conflict());
        let never = write_data_files(&table, vec![batch(&table, &[row(60, "x")])])
            .await
            .expect("write");
        let mut expected = expected;
        expected.extend([row(6, "a"), row(7, "a")]);
        let expected = sorted(expected);

        // Within the grace period nothing goes.
        let on_disk = table_files(&table);
        let report = lake
            .delete_orphan_files(&ident("orders"), Duration::from_hours(1))
            .await
            .expect("orphans");
        assert!(report.deleted.is_empty(), "{report:?}");
        assert_eq!(table_files(&table), on_disk);
        for leftover in stale_files.iter().chain(&never) {
            assert!(
                report.young.contains(&local(leftover.file_path())),
                "{report:?}"
            );
        }

        // Expire all but the 2 newest snapshots.
        let snapshots = table.metadata().snapshots().len();
        let expired = lake
            .expire_snapshots(&table, Retain::Last(2))
            .await
            .expect("expire");
        assert_eq!(expired.snapshot_ids.len(), snapshots - 2);
        let table = expired.table;
        assert_eq!(table.metadata().snapshots().len(), 2);
        assert!(
            table
                .metadata()
                .snapshot_by_id(expired.snapshot_ids[0])
                .is_none()
        );
        // The walk to the offsets now stops at an expired parent.
        assert_eq!(latest_property(&table, OFFSETS), None);
        // Expiry alone deletes no file.
        assert_eq!(
            table_files(&table).len(),
            on_disk.len() + 1,
            "one new metadata file"
        );

        // With no grace, everything unreferenced goes.
        let report = lake
            .delete_orphan_files(&ident("orders"), Duration::ZERO)
            .await
            .expect("orphans");
        assert!(report.young.is_empty(), "{report:?}");
        for leftover in stale_files.iter().chain(&never) {
            assert!(
                report.deleted.contains(&local(leftover.file_path())),
                "{report:?}"
            );
        }
        let remaining = table_files(&table);
        assert_eq!(remaining, referenced_files(&table).await, "{report:?}");
        assert_eq!(report.referenced, remaining.len());
        // Data files on disk: exactly the live files of the remaining snapshots.
        let mut live_data = BTreeSet::new();
        for snapshot in table.metadata().snapshots() {
            let list = table
                .manifest_list_reader(snapshot)
                .load()
                .await
                .expect("list");
            for manifest_file in list.entries() {
                let manifest = manifest_file
                    .load_manifest(table.file_io())
                    .await
                    .expect("manifest");
                live_data.extend(
                    manifest
                        .entries()
                        .iter()
                        .filter(|e| e.is_alive())
                        .map(|e| local(e.file_path())),
                );
            }
        }
        let data_dir = local(table.metadata().location()).join("data");
        let on_disk_data: BTreeSet<PathBuf> = remaining
            .iter()
            .filter(|p| p.starts_with(&data_dir))
            .cloned()
            .collect();
        assert_eq!(on_disk_data, live_data);
        // Metadata files: the current one and the ones its log lists, no other.
        let json: BTreeSet<PathBuf> = remaining
            .iter()
            .filter(|p| p.to_string_lossy().ends_with(".metadata.json"))
            .cloned()
            .collect();
        let mut logged: BTreeSet<PathBuf> = table
            .metadata()
            .metadata_log()
            .iter()
            .map(|l| local(&l.metadata_file))
            .collect();
        logged.insert(local(table.metadata_location().expect("location")));
        assert_eq!(json, logged);

        // The table reads, and takes commits.
        assert_eq!(scan(&lake, "orders").await, expected);
        append(&lake, &table, &[row(8, "a")]).await;
        assert_eq!(scan(&lake, "orders").await.len(), expected.len() + 1);
    });
}

#[test]
fn expiry_by_time_and_against_a_stale_table() {
    let state = tempfile::tempdir().expect("temp state dir");
    tokio().block_on(async {
        let lake = Lake::open(state.path()).await.expect("lake");
        let mut table = create(&lake, "orders").await;
        for id in 1..=3 {
            table = append(&lake, &table, &[row(id, "a")]).await;
        }
        // Retain::NewerThan: the epoch keeps all, the future only the current.
        let all = lake
            .expire_snapshots(&table, Retain::NewerThan(SystemTime::UNIX_EPOCH))
            .await
            .expect("expire nothing");
        assert!(all.snapshot_ids.is_empty());
        assert_eq!(all.table.metadata_location(), table.metadata_location());
        let future = SystemTime::now() + Duration::from_hours(1);
        let one = lake
            .expire_snapshots(&table, Retain::NewerThan(future))
            .await
            .expect("expire");
        assert_eq!(one.table.metadata().snapshots().len(), 1);
        // Against a stale table: conflict.
        let error = lake
            .expire_snapshots(&table, Retain::Last(1))
            .await
            .expect_err("stale");
        assert!(error.is_conflict(), "{error}");
        let error = lake
            .delete_orphan_files(
                &TableIdent::from_strs([NS, "missing"]).expect("ident"),
                Duration::ZERO,
            )
            .await
            .expect_err("no such table");
        assert!(matches!(error, MaintenanceError::Iceberg { .. }), "{error}");
        assert_eq!(scan(&lake, "orders").await, rows(1..=3, "a"));
    });
}

/// Every file the table references, computed here from the metadata (the
/// test's own walk, not the one `delete_orphan_files` uses).
async fn referenced_files(table: &Table) -> BTreeSet<PathBuf> {
    let meta = table.metadata();
    let mut out = BTreeSet::new();
    out.insert(local(table.metadata_location().expect("location")));
    out.extend(meta.metadata_log().iter().map(|l| local(&l.metadata_file)));
    for snapshot in meta.snapshots() {
        out.insert(local(snapshot.manifest_list()));
        let list = table
            .manifest_list_reader(snapshot)
            .load()
            .await
            .expect("list");
        for manifest_file in list.entries() {
            out.insert(local(&manifest_file.manifest_path));
            let manifest = manifest_file
                .load_manifest(table.file_io())
                .await
                .expect("manifest");
            out.extend(
                manifest
                    .entries()
                    .iter()
                    .filter(|e| e.is_alive())
                    .map(|e| local(e.file_path())),
            );
        }
    }
    out
}

#[test]
fn compaction_carries_the_writers_properties_forward() {
    let state = tempfile::tempdir().expect("temp state dir");
    tokio().block_on(async {
        let lake = Lake::open(state.path()).await.expect("lake");
        let mut table = create(&lake, "orders").await;
        for (id, offsets) in [(1, "a"), (2, "b")] {
            let files = write_data_files(&table, vec![batch(&table, &[row(id, "a")])])
                .await
                .expect("write");
            let properties = [
                (OFFSETS.to_owned(), offsets.to_owned()),
                (format!("lossproof.run{id}"), id.to_string()),
                ("other".to_owned(), "not carried".to_owned()),
            ];
            table = commit(
                &lake,
                &table,
                Commit::append(files).with_properties(properties.into()),
            )
            .await;
        }
        let carried = latest_properties(&table, "lossproof.");
        assert_eq!(
            carried,
            [
                (OFFSETS, "b"),
                ("lossproof.run1", "1"),
                ("lossproof.run2", "2")
            ]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .into()
        );
        let table = compact_with(&lake, &table, carried)
            .await
            .expect("compaction");
        assert_eq!(summary(&table, OFFSETS).as_deref(), Some("b"));
        assert_eq!(summary(&table, "other"), None);
        let table = lake
            .expire_snapshots(&table, Retain::Last(1))
            .await
            .expect("expire")
            .table;
        assert_eq!(table.metadata().snapshots().len(), 1);
        assert_eq!(latest_property(&table, OFFSETS).as_deref(), Some("b"));
        assert_eq!(
            latest_property(&table, "lossproof.run1").as_deref(),
            Some("1")
        );
    });
}

#[test]
fn manifest_merging_keeps_the_manifest_count_bounded() {
    let state = tempfile::tempdir().expect("temp state dir");
    tokio().block_on(async {
        let lake = Lake::open(state.path()).await.expect("lake");
        let mut table = create(&lake, "orders").await;
        let commits = i64::try_from(lake::MERGE_MIN_COUNT).expect("small") + 5;
        let mut most = 0;
        for id in 1..=commits {
            let files = write_data_files(&table, vec![batch(&table, &[row(id, "a")])])
                .await
                .expect("write");
            table = lake
                .commit(&table, Commit::append(files))
                .await
                .expect("commit");
            let snapshot = table.metadata().current_snapshot().expect("snapshot");
            let manifests = table
                .manifest_list_reader(snapshot)
                .load()
                .await
                .expect("list")
                .entries()
                .len();
            most = most.max(manifests);
        }
        assert!(most <= lake::MERGE_MIN_COUNT + 1, "{most} manifests");
        let snapshot = table.metadata().current_snapshot().expect("snapshot");
        let manifests = table
            .manifest_list_reader(snapshot)
            .load()
            .await
            .expect("list")
            .entries()
            .len();
        assert!(manifests < 10, "merged: {manifests} manifests");
        check_totals(&lake, &table).await;
        assert_eq!(scan(&lake, "orders").await, rows(1..=commits, "a"));
    });
}

/// A compaction committed when the table has enough manifests to merge
/// still lists every file it removed as deleted by its snapshot: the
/// snapshot follower (docs/run.md, "Snapshots") learns of a removal only
/// from those entries. Merging had dropped them, and the follower saw
/// every key of a compacted `order_items` twice (`scenarios/freshness.lp`,
/// the correct consumer flagged with 4,470 wrong keys in one state).
#[test]
fn a_compaction_that_merges_manifests_still_lists_what_it_removed() {
    let state = tempfile::tempdir().expect("temp state dir");
    tokio().block_on(async {
        let lake = Lake::open(state.path()).await.expect("lake");
        let mut table = create(&lake, "orders").await;
        // One manifest per append: a commit merges when the manifests it
        // carries over are more than the threshold, so after these appends
        // (none merged) the compaction's rewritten manifests are merged.
        let commits = i64::try_from(lake::MERGE_MIN_COUNT).expect("small") + 1;
        for id in 1..=commits {
            table = append(&lake, &table, &[row(id, "a")]).await;
        }
        let live: BTreeSet<String> = lake::live_files(&table)
            .await
            .expect("live files")
            .into_iter()
            .map(|f| f.path)
            .collect();
        let won = lake.compact(&ident("orders")).await.expect("compaction");
        assert!(matches!(won, lake::Compacted::Won { .. }), "{won:?}");
        let table = lake
            .catalog()
            .load_table(&ident("orders"))
            .await
            .expect("load");
        let snapshot = table.metadata().current_snapshot_id().expect("snapshot");
        let changes = lake::history::changes(&table, snapshot)
            .await
            .expect("changes");
        let removed: BTreeSet<String> = changes
            .iter()
            .filter(|c| !c.added)
            .map(|c| c.path.clone())
            .collect();
        assert_eq!(
            (removed.len(), removed == live),
            (live.len(), true),
            "every file the compaction replaced, listed as removed by it"
        );
        assert_eq!(changes.iter().filter(|c| c.added).count(), 1);
        check_totals(&lake, &table).await;
        assert_eq!(scan(&lake, "orders").await, rows(1..=commits, "a"));
    });
}

#[test]
fn a_writer_keeping_snapshots_bounds_its_metadata() {
    let state = tempfile::tempdir().expect("temp state dir");
    tokio().block_on(async {
        let lake = Lake::open(state.path()).await.expect("lake");
        let mut table = create(&lake, "orders").await;
        let keep = 4;
        let mut most = 0;
        let mut ids = Vec::new();
        for id in 1..=20 {
            let files = write_data_files(&table, vec![batch(&table, &[row(id, "a")])])
                .await
                .expect("write");
            let parent = table.metadata().current_snapshot_id();
            table = lake
                .commit(
                    &table,
                    Commit::append(files)
                        .with_properties(HashMap::from([(OFFSETS.to_owned(), id.to_string())]))
                        .keeping_snapshots(keep),
                )
                .await
                .expect("commit");
            let meta = table.metadata();
            most = most.max(meta.snapshots().len());
            let current = meta.current_snapshot().expect("snapshot");
            ids.push(current.snapshot_id());
            // The new snapshot and its parent always stay (a reader one
            // commit behind, the key index, finds its snapshot).
            assert_eq!(current.parent_snapshot_id(), parent);
            assert!(parent.is_none_or(|p| meta.snapshot_by_id(p).is_some()));
            // The history is the kept snapshots, newest last.
            assert_eq!(
                meta.history().last().map(|h| h.snapshot_id),
                Some(current.snapshot_id())
            );
        }
        assert_eq!(most, keep + keep / 2, "at most 1.5 x keep snapshots");
        let kept: Vec<i64> = {
            let mut kept: Vec<_> = table.metadata().snapshots().collect();
            kept.sort_by_key(|s| s.sequence_number());
            kept.iter().map(|s| s.snapshot_id()).collect()
        };
        assert!(kept.len() >= keep, "{kept:?}");
        assert_eq!(kept, ids[ids.len() - kept.len()..], "the newest are kept");
        // Nothing of the table's rows or the writer's properties is lost.
        assert_eq!(latest_property(&table, OFFSETS), Some("20".to_owned()));
        check_totals(&lake, &table).await;
        assert_eq!(scan(&lake, "orders").await, rows(1..=20, "a"));
    });
}

/// pyiceberg's rows of a table: [id, v, n, f, amount as text, note].
fn py_rows(table: &str) -> String {
    format!(
        r#"
table = catalog.load_table("{table}")
try:
    arrow = table.scan().to_arrow().sort_by("id")
except Exception as e:
    print(json.dumps({{"error": f"{{type(e).__name__}}: {{e}}"}}))
    raise SystemExit(0)
out = []
for r in arrow.to_pylist():
    out.append([r["id"], r["v"], r["n"], r["f"], None if r["amount"] is None else str(r["amount"]), r.get("note")])
print(json.dumps({{
    "rows": out,
    "types": {{f.name: str(f.field_type) for f in table.schema().fields}},
    "operation": str(table.current_snapshot().summary.operation.value),
}}))
"#
    )
}

fn expected_py(rows: &[Row], scale: u32) -> Value {
    Value::Array(
        rows.iter()
            .map(|r| {
                json!([
                    r.id,
                    r.v,
                    r.n,
                    r.f,
                    r.amount.map(|a| decimal_text(a, scale)),
                    Value::Null
                ])
            })
            .collect(),
    )
}

fn decimal_text(unscaled: i128, scale: u32) -> String {
    let sign = if unscaled < 0 { "-" } else { "" };
    let digits = format!(
        "{:0>width$}",
        unscaled.unsigned_abs(),
        width = scale as usize + 1
    );
    let (int, frac) = digits.split_at(digits.len() - scale as usize);
    format!("{sign}{int}.{frac}")
}

#[test]
#[allow(clippy::too_many_lines)] // One scenario, step by step.
fn pyiceberg_reads_every_commit_kind_but_equality_deletes() {
    let docs =
        std::fs::read_to_string(crate::support::root().join("docs/lake.md")).expect("docs/lake.md");
    assert!(
        docs.contains("pyiceberg 0.12 cannot read equality deletes"),
        "docs/lake.md must say that pyiceberg cannot read equality deletes"
    );
    let state = tempfile::tempdir().expect("temp state dir");
    let rt = tokio();
    let lake = rt.block_on(Lake::open(state.path())).expect("lake");
    let name = "layer.orders";
    let read = |lake: &Lake| pyiceberg(lake, &format!("{PY_PRELUDE}{}", py_rows(name)));

    // Append and overwrite.
    let table = rt.block_on(async {
        let table = create(&lake, "orders").await;
        let table = append(&lake, &table, &rows(1..=3, "a")).await;
        let table = append(&lake, &table, &rows(4..=5, "a")).await;
        let first = data_paths(&live_files(&table).await);
        let old = live_files(&table)
            .await
            .into_iter()
            .find(|l| l.records == 3)
            .expect("file")
            .path;
        assert!(first.contains(&old));
        let files = write_data_files(&table, vec![batch(&table, &rows(1..=3, "b"))])
            .await
            .expect("write");
        commit(&lake, &table, Commit::overwrite(vec![old], files)).await
    });
    let mut expected = rows(1..=3, "b");
    expected.extend(rows(4..=5, "a"));
    let got = read(&lake);
    assert_eq!(got["rows"], expected_py(&expected, 2), "{got}");
    assert_eq!(got["operation"], "overwrite");
    assert_eq!(got["types"]["n"], "int");

    // Widening and a new column.
    let table = rt.block_on(async {
        let table = lake
            .evolve_schema(
                &table,
                &[
                    SchemaChange::widen("n", PrimitiveType::Long),
                    SchemaChange::widen("f", PrimitiveType::Double),
                    SchemaChange::widen(
                        "amount",
                        PrimitiveType::Decimal {
                            precision: 12,
                            scale: 2,
                        },
                    ),
                    SchemaChange::add_column("note", PrimitiveType::String),
                ],
            )
            .await
            .expect("widen");
        let big = Row {
            id: 6,
            v: None,
            n: Some(5_000_000_000),
            f: Some(0.25),
            amount: Some(999_999_999_999),
        };
        append(&lake, &table, &[big]).await
    });
    expected.push(Row {
        id: 6,
        v: None,
        n: Some(5_000_000_000),
        f: Some(0.25),
        amount: Some(999_999_999_999),
    });
    let got = read(&lake);
    assert_eq!(got["rows"], expected_py(&expected, 2), "{got}");
    assert_eq!(
        got["types"],
        json!({"id": "long", "v": "string", "n": "long", "f": "double",
               "amount": "decimal(12, 2)", "note": "string"})
    );

    // Equality deletes: pyiceberg 0.12 refuses the table.
    let table = rt.block_on(async {
        let table = delete_keys(&lake, &table, &[2]).await;
        append(&lake, &table, &[row(2, "c")]).await
    });
    let got = read(&lake);
    let error = got["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("does not yet support equality deletes"),
        "{got}"
    );

    // Compaction (no delete file left), expiry, orphan deletion: it reads.
    rt.block_on(async {
        let table = compact(&lake, &table).await.expect("compaction");
        let table = lake
            .expire_snapshots(&table, Retain::Last(1))
            .await
            .expect("expire")
            .table;
        let report = lake
            .delete_orphan_files(table.identifier(), Duration::ZERO)
            .await
            .expect("orphans");
        assert!(!report.deleted.is_empty());
    });
    expected.retain(|r| r.id != 2);
    expected.push(row(2, "c"));
    let expected = sorted(expected);
    let got = read(&lake);
    assert_eq!(got["rows"], expected_py(&expected, 2), "{got}");
    assert_eq!(got["operation"], "replace");
    let ours = rt.block_on(scan(&lake, "orders"));
    assert_eq!(ours, expected);
    let seen: HashSet<i64> = ours.iter().map(|r| r.id).collect();
    assert_eq!(seen.len(), ours.len());
}

/// A deletion vector (Iceberg v3's position deletes: a blob in a Puffin
/// file), which iceberg-rust 0.10.1 cannot read, is refused with the
/// file's name and the reason, never read as if it deleted nothing (which
/// would count its deleted rows as live). Committed as a sink writing one
/// would (a delete entry pointing at a Puffin blob of a data file); the
/// reader refuses it before opening it. The reconciler's scan and the
/// compaction read through the same step (`runtime/src/lake/read.rs`).
#[test]
fn a_deletion_vector_is_refused_by_name() {
    let state = tempfile::tempdir().expect("temp state dir");
    tokio().block_on(async {
        let lake = Lake::open(state.path()).await.expect("lake");
        let table = create(&lake, "vectors").await;
        let table = append(&lake, &table, &rows(1..=3, "a")).await;
        let data = live_files(&table).await.remove(0).path;
        let vector_path = format!("{}/data/00001-dv.puffin", table.metadata().location());
        let vector = iceberg::spec::DataFileBuilder::default()
            .content(DataContentType::PositionDeletes)
            .file_path(vector_path.clone())
            .file_format(iceberg::spec::DataFileFormat::Puffin)
            .partition_spec_id(table.metadata().default_partition_spec_id())
            .record_count(1)
            .file_size_in_bytes(64)
            .referenced_data_file(Some(data))
            .content_offset(Some(4))
            .content_size_in_bytes(Some(40))
            .build()
            .expect("a deletion vector's entry");
        let table = lake
            .commit(&table, Commit::row_delta(vec![vector]))
            .await
            .expect("commit");
        let why = lake::read::visible_rows(&table)
            .await
            .expect_err("a deletion vector is refused")
            .to_string();
        assert!(
            why.contains(&vector_path)
                && why.contains("deletion vector")
                && why.contains("refusing"),
            "names the file and the reason: {why}"
        );
    });
}

/// Write-audit-publish, as the correct consumer stages a snapshot too large
/// to commit whole: commits on a branch leave `main` (what readers scan) as
/// it was; publishing moves `main` past all of them at once, in ONE
/// snapshot that adds every file the branch added (the branch's snapshots
/// never in `main`'s history). A branch dropped unpublished leaves `main`
/// untouched; publishing after `main` moved is refused.
#[test]
fn commits_staged_on_a_branch_are_published_at_once() {
    let state = tempfile::tempdir().expect("temp state dir");
    tokio().block_on(async {
        let lake = Lake::open(state.path()).await.expect("lake");
        let table = create(&lake, "staged").await;
        let table = append(&lake, &table, &rows(1..=2, "main")).await;
        let before = table.metadata().current_snapshot_id().expect("a snapshot");
        let mut staged = table;
        for part in 1..=3 {
            staged = stage(&lake, &staged, &rows(part * 10..=part * 10 + 2, "part")).await;
            assert_eq!(
                scan(&lake, "staged").await,
                rows(1..=2, "main"),
                "main as it was"
            );
        }
        let published = commit(
            &lake,
            &staged,
            Commit::append(Vec::new()).publishing("stage"),
        )
        .await;
        assert!(published.metadata().snapshot_for_ref("stage").is_none());
        let mut all = rows(1..=2, "main");
        for part in 1..=3 {
            all.extend(rows(part * 10..=part * 10 + 2, "part"));
        }
        assert_eq!(scan(&lake, "staged").await, sorted(all.clone()));
        let since = lake::history::since(&published, before).expect("main's history");
        assert_eq!(since.len(), 1, "one snapshot on main: {since:?}");
        let added = lake::history::added_files(&published, since[0])
            .await
            .expect("its files");
        assert_eq!(added.len(), 3, "it adds the three parts' files");
        assert_eq!(summary(&published, "added-records").as_deref(), Some("9"));

        // Main moved since the branch left it: refused, nothing lost.
        let branched = stage(&lake, &published, &rows(50..=50, "y")).await;
        let moved = append(&lake, &branched, &rows(60..=60, "main")).await;
        all.extend(rows(60..=60, "main"));
        let refused = lake
            .commit(&moved, Commit::append(Vec::new()).publishing("stage"))
            .await
            .expect_err("main moved since the branch left it");
        assert!(refused.is_conflict(), "{refused}");
        let published = lake
            .drop_branch(&moved, "stage")
            .await
            .expect("drop the branch");

        let again = stage(&lake, &published, &rows(99..=99, "x")).await;
        let dropped = lake
            .drop_branch(&again, "stage")
            .await
            .expect("drop the branch");
        assert!(dropped.metadata().snapshot_for_ref("stage").is_none());
        assert_eq!(scan(&lake, "staged").await, sorted(all));
    });
}

/// Append `rows` to `table` on branch `stage`.
async fn stage(lake: &Lake, table: &Table, rows: &[Row]) -> Table {
    let files = write_data_files(table, vec![batch(table, rows)])
        .await
        .expect("write");
    lake.commit(table, Commit::append(files).on_branch("stage"))
        .await
        .expect("a commit on the branch")
}
