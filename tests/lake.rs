//! The local lake, both ways, on the files `lossproof up` creates (no stack
//! is started: the lake is a sqlite catalog and a warehouse folder).
//!
//! - iceberg-rust creates `careless.orders`, appends rows with `fast_append`
//!   and a snapshot summary property; pyiceberg reads the exact rows and the
//!   property.
//! - pyiceberg creates `correct.orders` and appends rows; iceberg-rust reads
//!   the exact rows and pyiceberg's summary property.
//! - Both wrote the same `catalog_name` ([`lake::CATALOG_NAME`]).
//!
//! pyiceberg runs from the bootstrap's virtualenv (`Tools::pyiceberg_python`).

use std::collections::HashMap;
use std::process::Command;
use std::sync::Arc;

use arrow_array::cast::AsArray as _;
use arrow_array::types::{Decimal128Type, Int64Type, TimestampMicrosecondType};
use arrow_array::{
    Array as _, ArrayRef, BooleanArray, Decimal128Array, Int64Array, RecordBatch, StringArray,
    TimestampMicrosecondArray,
};
use arrow_schema::{DataType, TimeUnit};
use iceberg::spec::{NestedField, PrimitiveType, Schema, Type};
use iceberg::{NamespaceIdent, TableCreation, TableIdent};
use lossproof_runtime::{Lake, Tools, lake};
use serde_json::{Value, json};

/// How long one pyiceberg script may run (it takes ~2 s).
const PYTHON_LIMIT_S: &str = "120";

/// One row of the test tables: id, name, amount (decimal(10,2) as the
/// unscaled i128 and its text), `updated_at` (microseconds since the epoch,
/// UTC), deleted.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    id: i64,
    name: Option<&'static str>,
    amount_unscaled: Option<i128>,
    amount_text: Option<&'static str>,
    updated_at_us: Option<i64>,
    deleted: bool,
}

/// The rows both sides write: a NULL in each nullable column, a negative
/// decimal below one, the largest decimal(10,2), non-ASCII text, a timestamp
/// with microseconds and one just before the epoch.
fn rows() -> Vec<Row> {
    vec![
        Row {
            id: 1,
            name: Some("Ada"),
            amount_unscaled: Some(1234),
            amount_text: Some("12.34"),
            updated_at_us: Some(1_704_164_645_123_456), // 2024-01-02T03:04:05.123456Z
            deleted: false,
        },
        Row {
            id: 2,
            name: None,
            amount_unscaled: Some(-5),
            amount_text: Some("-0.05"),
            updated_at_us: None,
            deleted: true,
        },
        Row {
            id: 3,
            name: Some("Zoë ✓"),
            amount_unscaled: Some(9_999_999_999),
            amount_text: Some("99999999.99"),
            updated_at_us: Some(-1), // 1969-12-31T23:59:59.999999Z
            deleted: false,
        },
        Row {
            id: 4,
            name: Some(""),
            amount_unscaled: None,
            amount_text: None,
            updated_at_us: Some(0),
            deleted: false,
        },
    ]
}

/// The rows as the pyiceberg scripts print them (decimals as text).
fn rows_json() -> Value {
    Value::Array(
        rows()
            .iter()
            .map(|r| json!([r.id, r.name, r.amount_text, r.updated_at_us, r.deleted]))
            .collect(),
    )
}

pub(crate) fn tokio() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn orders_schema() -> Schema {
    Schema::builder()
        .with_fields(vec![
            NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
            NestedField::optional(2, "name", Type::Primitive(PrimitiveType::String)).into(),
            NestedField::optional(
                3,
                "amount",
                Type::Primitive(PrimitiveType::Decimal {
                    precision: 10,
                    scale: 2,
                }),
            )
            .into(),
            NestedField::optional(4, "updated_at", Type::Primitive(PrimitiveType::Timestamptz))
                .into(),
            NestedField::required(5, "deleted", Type::Primitive(PrimitiveType::Boolean)).into(),
        ])
        .build()
        .expect("schema")
}

/// The rows as one batch in the table's Arrow schema (field ids included).
fn orders_batch(schema: &Schema) -> RecordBatch {
    let arrow = Arc::new(iceberg::arrow::schema_to_arrow_schema(schema).expect("arrow schema"));
    let DataType::Timestamp(TimeUnit::Microsecond, tz) = arrow.field(3).data_type().clone() else {
        panic!("timestamptz maps to {:?}", arrow.field(3).data_type());
    };
    let rows = rows();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.id))),
        Arc::new(rows.iter().map(|r| r.name).collect::<StringArray>()),
        Arc::new(
            rows.iter()
                .map(|r| r.amount_unscaled)
                .collect::<Decimal128Array>()
                .with_precision_and_scale(10, 2)
                .expect("decimal(10,2)"),
        ),
        Arc::new(
            rows.iter()
                .map(|r| r.updated_at_us)
                .collect::<TimestampMicrosecondArray>()
                .with_timezone_opt(tz),
        ),
        Arc::new(
            rows.iter()
                .map(|r| Some(r.deleted))
                .collect::<BooleanArray>(),
        ),
    ];
    RecordBatch::try_new(arrow, columns).expect("batch")
}

/// A row as read back: id, name, unscaled amount, `updated_at` (µs), deleted.
type ReadRow = (i64, Option<String>, Option<i128>, Option<i64>, bool);

/// Read back rows from Arrow batches, checking each column's type exactly.
fn read_rows(batches: &[RecordBatch]) -> Vec<ReadRow> {
    let mut out = Vec::new();
    for batch in batches {
        let column = |name: &str| {
            batch
                .column_by_name(name)
                .unwrap_or_else(|| panic!("no column `{name}` in {:?}", batch.schema()))
        };
        let ids = column("id").as_primitive::<Int64Type>();
        let names = column("name");
        let amounts = column("amount").as_primitive::<Decimal128Type>();
        assert_eq!(amounts.data_type(), &DataType::Decimal128(10, 2));
        let updated = column("updated_at").as_primitive::<TimestampMicrosecondType>();
        assert!(
            matches!(updated.data_type(), DataType::Timestamp(TimeUnit::Microsecond, Some(tz)) if tz.as_ref() == "+00:00" || tz.as_ref() == "UTC"),
            "updated_at is {:?}",
            updated.data_type()
        );
        let deleted = column("deleted").as_boolean();
        for i in 0..batch.num_rows() {
            let name = if names.is_null(i) {
                None
            } else {
                Some(match names.data_type() {
                    DataType::Utf8 => names.as_string::<i32>().value(i).to_owned(),
                    DataType::LargeUtf8 => names.as_string::<i64>().value(i).to_owned(),
                    DataType::Utf8View => names.as_string_view().value(i).to_owned(),
                    other => panic!("name is {other:?}"),
                })
            };
            out.push((
                ids.value(i),
                name,
                (!amounts.is_null(i)).then(|| amounts.value(i)),
                (!updated.is_null(i)).then(|| updated.value(i)),
                deleted.value(i),
            ));
        }
    }
    out.sort_by_key(|r| r.0);
    out
}

fn expected_rows() -> Vec<ReadRow> {
    rows()
        .into_iter()
        .map(|r| {
            (
                r.id,
                r.name.map(str::to_owned),
                r.amount_unscaled,
                r.updated_at_us,
                r.deleted,
            )
        })
        .collect()
}

/// Run a pyiceberg script on the lake (bounded); its last stdout line is JSON.
pub(crate) fn pyiceberg(lake: &Lake, script: &str) -> Value {
    let python = Tools::from_env().pyiceberg_python();
    assert!(
        python.is_file(),
        "{} is missing: run `bash runtime/bootstrap.sh`",
        python.display()
    );
    python_json(
        "pyiceberg",
        &python,
        PYTHON_LIMIT_S,
        &["-c", script],
        &[
            ("LAKE_CATALOG", lake::CATALOG_NAME.to_owned()),
            ("LAKE_URI", lake.pyiceberg_uri()),
            ("LAKE_WAREHOUSE", lake.warehouse_uri()),
            ("LAKE_DB", lake.catalog_db().to_string_lossy().into_owned()),
            ("ROWS", rows_json().to_string()),
        ],
    )
}

/// Run `python ARGS…` with `env`, bounded by `limit_s` seconds; it must
/// succeed, and its last stdout line is JSON (`what` names it in failures).
pub(crate) fn python_json(
    what: &str,
    python: &std::path::Path,
    limit_s: &str,
    args: &[&str],
    env: &[(&str, String)],
) -> Value {
    let output = Command::new("timeout")
        .args(["-k", "5", limit_s])
        .arg(python)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap_or_else(|e| panic!("run {what}: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{what} script failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

/// Opens the lake's catalog the way dbt and the reconciler will.
pub(crate) const PY_PRELUDE: &str = r#"
import datetime, decimal, json, os, sqlite3
from pyiceberg.catalog.sql import SqlCatalog
catalog = SqlCatalog(os.environ["LAKE_CATALOG"], uri=os.environ["LAKE_URI"], warehouse=os.environ["LAKE_WAREHOUSE"])
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
def catalog_names():
    db = sqlite3.connect(os.environ["LAKE_DB"])
    names = {r[0] for r in db.execute("SELECT catalog_name FROM iceberg_tables UNION SELECT catalog_name FROM iceberg_namespace_properties")}
    db.close()
    return sorted(names)
"#;

/// pyiceberg reads what iceberg-rust wrote.
const PY_READ_CARELESS: &str = r#"
table = catalog.load_table("careless.orders")
rows = []
for r in table.scan().to_arrow().sort_by("id").to_pylist():
    ts = r["updated_at"]
    rows.append([
        r["id"],
        r["name"],
        None if r["amount"] is None else str(r["amount"]),
        None if ts is None else (ts - EPOCH) // datetime.timedelta(microseconds=1),
        r["deleted"],
    ])
schema = table.schema()
print(json.dumps({
    "rows": rows,
    "types": {f.name: str(f.field_type) for f in schema.fields},
    "required": {f.name: f.required for f in schema.fields},
    "summary": table.current_snapshot().summary.additional_properties,
    "tables": [".".join(t) for t in catalog.list_tables("careless")],
    "catalog_names": catalog_names(),
}))
"#;

/// pyiceberg writes what iceberg-rust will read.
const PY_WRITE_CORRECT: &str = r#"
import pyarrow as pa
from pyiceberg.schema import Schema
from pyiceberg.types import BooleanType, DecimalType, LongType, NestedField, StringType, TimestamptzType
catalog.create_namespace("correct")
table = catalog.create_table("correct.orders", schema=Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "name", StringType(), required=False),
    NestedField(3, "amount", DecimalType(10, 2), required=False),
    NestedField(4, "updated_at", TimestamptzType(), required=False),
    NestedField(5, "deleted", BooleanType(), required=True),
))
rows = [{
    "id": r[0],
    "name": r[1],
    "amount": None if r[2] is None else decimal.Decimal(r[2]),
    "updated_at": None if r[3] is None else EPOCH + datetime.timedelta(microseconds=r[3]),
    "deleted": r[4],
} for r in json.loads(os.environ["ROWS"])]
table.append(pa.Table.from_pylist(rows, schema=table.schema().as_arrow()),
             snapshot_properties={"lossproof.offsets": "written-by-pyiceberg"})
print(json.dumps({"catalog_names": catalog_names()}))
"#;

#[test]
fn iceberg_rust_and_pyiceberg_read_each_others_writes() {
    let state = tempfile::tempdir().expect("temp state dir");
    let rt = tokio();
    let lake = rt
        .block_on(Lake::open(state.path()))
        .expect("open the lake");
    assert!(
        lake.catalog_db().is_file(),
        "{}",
        lake.catalog_db().display()
    );
    assert!(lake.warehouse().is_dir(), "{}", lake.warehouse().display());
    // Opening again (the next `lossproof up`) works on the existing files.
    drop(
        rt.block_on(Lake::open(state.path()))
            .expect("reopen the lake"),
    );

    // iceberg-rust writes, pyiceberg reads.
    let offsets = r#"{"orders":{"0":41,"1":7}}"#;
    rt.block_on(async {
        let namespace = lake.ensure_namespace("careless").await.expect("namespace");
        let creation = TableCreation::builder()
            .name("orders".to_owned())
            .schema(orders_schema())
            .build();
        let table = lake
            .catalog()
            .create_table(&namespace, creation)
            .await
            .expect("create careless.orders");
        let batch = orders_batch(table.metadata().current_schema());
        let table = lake
            .append(
                &table,
                vec![batch],
                HashMap::from([("lossproof.offsets".to_owned(), offsets.to_owned())]),
            )
            .await
            .expect("fast_append");
        let summary = &table
            .metadata()
            .current_snapshot()
            .expect("a snapshot")
            .summary()
            .additional_properties;
        assert_eq!(
            summary.get("lossproof.offsets").map(String::as_str),
            Some(offsets)
        );
    });
    let read = pyiceberg(&lake, &format!("{PY_PRELUDE}{PY_READ_CARELESS}"));
    assert_eq!(
        read["rows"],
        rows_json(),
        "pyiceberg's rows of careless.orders"
    );
    assert_eq!(
        read["types"],
        json!({"id": "long", "name": "string", "amount": "decimal(10, 2)",
               "updated_at": "timestamptz", "deleted": "boolean"})
    );
    assert_eq!(
        read["required"],
        json!({"id": true, "name": false, "amount": false, "updated_at": false, "deleted": true})
    );
    assert_eq!(read["summary"]["lossproof.offsets"], offsets);
    assert_eq!(read["tables"], json!(["careless.orders"]));
    assert_eq!(read["catalog_names"], json!([lake::CATALOG_NAME]));

    // pyiceberg writes, iceberg-rust reads.
    let written = pyiceberg(&lake, &format!("{PY_PRELUDE}{PY_WRITE_CORRECT}"));
    assert_eq!(written["catalog_names"], json!([lake::CATALOG_NAME]));
    let ident = TableIdent::from_strs(["correct", "orders"]).expect("ident");
    let batches = rt.block_on(lake.scan(&ident)).expect("scan correct.orders");
    assert_eq!(
        read_rows(&batches),
        expected_rows(),
        "iceberg-rust's rows of correct.orders"
    );
    rt.block_on(async {
        let correct = NamespaceIdent::new("correct".to_owned());
        let tables = lake.catalog().list_tables(&correct).await.expect("list");
        assert_eq!(tables, vec![ident.clone()]);
        let table = lake.catalog().load_table(&ident).await.expect("load");
        let snapshot = table.metadata().current_snapshot().expect("a snapshot");
        assert_eq!(
            snapshot
                .summary()
                .additional_properties
                .get("lossproof.offsets")
                .map(String::as_str),
            Some("written-by-pyiceberg")
        );
    });
    // iceberg-rust still reads its own table after pyiceberg used the catalog.
    let careless = TableIdent::from_strs(["careless", "orders"]).expect("ident");
    let own = rt
        .block_on(lake.scan(&careless))
        .expect("scan careless.orders");
    assert_eq!(read_rows(&own), expected_rows());
}
