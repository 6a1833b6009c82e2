//! What the correct consumer keeps in the lake, and its in-memory copy.
//!
//! In namespace `correct_lp_<run>`:
//! - one table per source table, holding exactly the source's live rows in
//!   the source's current columns (no hidden columns, no deleted rows):
//!   what pyiceberg, DuckDB or dbt read. Written copy-on-write: a batch
//!   rewrites the data files holding the keys it changes (no delete files);
//! - `_lp_state`, an append-only log of the position each applied change
//!   had, per table and key, with a deleted flag: the consumer's own
//!   per-row positions and its delete memory. Tables whose names start with
//!   `_lp_` are the consumer's, never the source's;
//! - `dead_letters`: records that could not be decoded, with topic,
//!   partition, offset, key and value bytes and the error.
//!
//! Every batch is ONE catalog transaction over every table it changes
//! ([`Lake::commit_all`]), always including `_lp_state`, and every
//! snapshot of it carries the Kafka position the batch reached, per
//! topic-partition: `lossproof.offset.<topic>.<partition>` (the next offset
//! to read) and `lossproof.epoch.<topic>.<partition>` (the partition's
//! latest snapshot LSN, see [`super::position`]).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use arrow_array::{Array as _, BooleanArray, Int32Array, Int64Array, RecordBatch, StringArray};
use futures_util::{StreamExt as _, TryStreamExt as _};
use iceberg::arrow::ArrowReaderBuilder;
use iceberg::scan::FileScanTask;
use iceberg::spec::{NestedField, PrimitiveType, Schema, Type};
use iceberg::table::Table;
use iceberg::{NamespaceIdent, TableCreation, TableIdent};
use lossproof_lang::vocabulary::WorkloadSig;
use lossproof_runtime::Lake;
use lossproof_runtime::change_event::{Cell, Row};
use lossproof_runtime::lake::latest_properties;

use super::position::Position;
use crate::error::{Error, Result};

/// The consumer's own tables start with this; the reconciler and readers
/// of the source's tables never look at them.
pub const RESERVED_PREFIX: &str = "_lp_";
/// The position log.
pub const STATE_TABLE: &str = "_lp_state";
/// Undecodable records.
pub const DEAD_LETTERS: &str = "dead_letters";
/// Summary property prefixes.
pub const OFFSET_PREFIX: &str = lossproof_runtime::reconcile::gate::OFFSET_PROPERTY_PREFIX;
pub const EPOCH_PREFIX: &str = "lossproof.epoch.";

/// SQL over the lake (namespace `namespace`) returning the source
/// transaction of the newest change applied to each key: what
/// [`lossproof_runtime::reconcile::ConsumerLake::applied`] asks for.
#[must_use]
pub fn applied_sql(namespace: &str) -> String {
    format!(
        "SELECT \"table\", key, tx_id FROM (\
           SELECT \"table\", key, tx_id, row_number() OVER \
             (PARTITION BY \"table\", key ORDER BY after_commit DESC, lsn DESC, rank DESC) AS lp_newest \
           FROM \"{namespace}\".\"{STATE_TABLE}\") \
         WHERE lp_newest = 1"
    )
}

/// A topic-partition.
pub type Partition = (String, i32);

/// One source table's lake table, in memory.
pub struct TableState {
    pub source_table: String,
    pub table: Table,
    pub key_columns: Vec<String>,
    /// Live data files: their rows (in the table's current schema) and keys.
    pub files: BTreeMap<String, FileRows>,
    /// Which live file holds a key. Keys and paths are shared (`Arc<str>`):
    /// a batch moves every row of the files it rewrites, and their keys
    /// with them, without copying a string.
    pub key_file: HashMap<Arc<str>, Arc<str>>,
}

/// The keys of a file's rows, in row order.
pub type Keys = Vec<Arc<str>>;

pub struct FileRows {
    pub batch: RecordBatch,
    pub keys: Keys,
}

/// Everything the consumer knows, as of the lake's current snapshots.
pub struct LakeState {
    pub namespace: NamespaceIdent,
    pub tables: Vec<TableState>,
    pub state_table: Table,
    pub dead_letters: Table,
    /// Next offset to read, per partition (absent: from the beginning).
    pub offsets: HashMap<Partition, i64>,
    pub epochs: HashMap<Partition, u64>,
    /// Per (table index, key): what the lake holds for it.
    pub index: Vec<HashMap<Arc<str>, Applied>>,
    /// The live data files of `_lp_state` (compacted into one when there
    /// are [`STATE_FILES_MAX`]).
    pub state_files: Vec<String>,
}

/// `_lp_state` is rewritten as one file (the newest entry per key) in the
/// batch that would make it hold more files than this.
pub const STATE_FILES_MAX: usize = 64;

/// What the lake holds for one key: the position of the newest change
/// applied, whether it was a delete, and the source transaction that made
/// it (Debezium's `source.txId`; a live reconciliation tells a change made
/// after its source snapshot from damage by it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Applied {
    pub position: Position,
    pub deleted: bool,
    pub tx_id: Option<i64>,
}

/// A top-level primitive field.
fn field(id: i32, name: &str, kind: PrimitiveType, required: bool) -> Arc<NestedField> {
    Arc::new(if required {
        NestedField::required(id, name, Type::Primitive(kind))
    } else {
        NestedField::optional(id, name, Type::Primitive(kind))
    })
}

/// The schema of `_lp_state`.
fn state_schema() -> Result<Schema> {
    use PrimitiveType::{Boolean, Int, Long, String as Text};
    Schema::builder()
        .with_fields([
            field(1, "table", Text, true),
            field(2, "key", Text, true),
            field(3, "after_commit", Long, true),
            field(4, "lsn", Long, true),
            field(5, "rank", Int, true),
            field(6, "deleted", Boolean, true),
            field(7, "tx_id", Long, false),
        ])
        .build()
        .map_err(Error::iceberg("the _lp_state schema"))
}

/// The schema of `dead_letters`.
fn dead_letter_schema() -> Result<Schema> {
    use PrimitiveType::{Binary, Int, Long, String as Text};
    Schema::builder()
        .with_fields([
            field(1, "topic", Text, true),
            field(2, "partition", Int, true),
            field(3, "offset", Long, true),
            field(4, "key", Binary, false),
            field(5, "value", Binary, false),
            field(6, "error", Text, true),
        ])
        .build()
        .map_err(Error::iceberg("the dead_letters schema"))
}

/// One row of `_lp_state`: what was applied to a key of a table.
#[derive(Debug, Clone)]
pub struct StateEntry {
    pub table: usize,
    pub key: Arc<str>,
    pub applied: Applied,
}

/// `entries` as a batch of `_lp_state` (`tables` names each entry's table),
/// built column by column.
pub fn state_batch(
    schema: &Schema,
    tables: &[TableState],
    entries: &[StateEntry],
) -> Result<RecordBatch> {
    let arrow_schema = Arc::new(
        iceberg::arrow::schema_to_arrow_schema(schema).map_err(Error::iceberg(STATE_TABLE))?,
    );
    let saturate = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    let mut columns: Vec<arrow_array::ArrayRef> = Vec::new();
    for field in arrow_schema.fields() {
        let column: arrow_array::ArrayRef = match field.name().as_str() {
            "table" => Arc::new(
                entries
                    .iter()
                    .map(|e| Some(tables[e.table].source_table.as_str()))
                    .collect::<StringArray>(),
            ),
            "key" => Arc::new(
                entries
                    .iter()
                    .map(|e| Some(&*e.key))
                    .collect::<StringArray>(),
            ),
            "after_commit" => Arc::new(
                entries
                    .iter()
                    .map(|e| Some(saturate(e.applied.position.after_commit)))
                    .collect::<Int64Array>(),
            ),
            "lsn" => Arc::new(
                entries
                    .iter()
                    .map(|e| Some(saturate(e.applied.position.lsn)))
                    .collect::<Int64Array>(),
            ),
            "rank" => Arc::new(
                entries
                    .iter()
                    .map(|e| Some(i32::from(e.applied.position.rank)))
                    .collect::<Int32Array>(),
            ),
            "deleted" => Arc::new(
                entries
                    .iter()
                    .map(|e| Some(e.applied.deleted))
                    .collect::<BooleanArray>(),
            ),
            "tx_id" => Arc::new(
                entries
                    .iter()
                    .map(|e| e.applied.tx_id)
                    .collect::<Int64Array>(),
            ),
            other => {
                return Err(Error::Corrupt(format!(
                    "{STATE_TABLE} has an unknown column {other}"
                )));
            }
        };
        columns.push(column);
    }
    RecordBatch::try_new(arrow_schema, columns).map_err(Error::arrow(STATE_TABLE))
}

/// One row of `dead_letters`.
#[must_use]
pub fn dead_letter_row(
    (topic, partition): &Partition,
    offset: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    error: &str,
) -> Row {
    let bytes = |b: Option<&[u8]>| b.map_or(Cell::Null, |b| Cell::Bytes(b.to_vec()));
    [
        ("topic".to_owned(), Cell::Text(topic.clone())),
        ("partition".to_owned(), Cell::Int(i64::from(*partition))),
        ("offset".to_owned(), Cell::Int(offset)),
        ("key".to_owned(), bytes(key)),
        ("value".to_owned(), bytes(value)),
        ("error".to_owned(), Cell::Text(error.to_owned())),
    ]
    .into()
}

pub use lossproof_runtime::lake::read::row_keys;

impl LakeState {
    /// Create what is missing and read the lake's state. Refuses a lake
    /// whose tables hold rows but whose position is unknown.
    pub async fn open(
        lake: &Lake,
        namespace: &str,
        prefix: &str,
        workload: &WorkloadSig,
    ) -> Result<Self> {
        let ns = lake
            .ensure_namespace(namespace)
            .await
            .map_err(Error::iceberg(format!("namespace {namespace}")))?;
        let create = async |name: &str, schema: Schema| -> Result<()> {
            let ident = TableIdent::new(ns.clone(), name.to_owned());
            if !lake
                .catalog()
                .table_exists(&ident)
                .await
                .map_err(Error::iceberg(ident.to_string()))?
            {
                let creation = TableCreation::builder()
                    .name(name.to_owned())
                    .schema(schema)
                    .build();
                lake.catalog()
                    .create_table(&ns, creation)
                    .await
                    .map_err(Error::iceberg(format!("create {ident}")))?;
            }
            Ok(())
        };
        for table in &workload.tables {
            create(
                &format!("{prefix}{}", table.name),
                super::super::iceberg_schema(table)?,
            )
            .await?;
        }
        create(&format!("{prefix}{STATE_TABLE}"), state_schema()?).await?;
        create(&format!("{prefix}{DEAD_LETTERS}"), dead_letter_schema()?).await?;
        let mut state = Self {
            state_table: load(lake, &ns, &format!("{prefix}{STATE_TABLE}")).await?,
            dead_letters: load(lake, &ns, &format!("{prefix}{DEAD_LETTERS}")).await?,
            namespace: ns,
            tables: Vec::new(),
            offsets: HashMap::new(),
            epochs: HashMap::new(),
            index: Vec::new(),
            state_files: Vec::new(),
        };
        state.reload(lake, prefix, workload).await?;
        Ok(state)
    }

    /// Read everything again from the lake's current snapshots (after a
    /// conflict, a schema change, or at start).
    pub async fn reload(
        &mut self,
        lake: &Lake,
        prefix: &str,
        workload: &WorkloadSig,
    ) -> Result<()> {
        let ns = self.namespace.clone();
        self.state_table = load(lake, &ns, &format!("{prefix}{STATE_TABLE}")).await?;
        self.dead_letters = load(lake, &ns, &format!("{prefix}{DEAD_LETTERS}")).await?;
        let properties = latest_properties(&self.state_table, "lossproof.");
        self.offsets = parse_positions(&properties, OFFSET_PREFIX)?;
        self.epochs = parse_positions(&properties, EPOCH_PREFIX)?
            .into_iter()
            .map(|(p, e)| (p, u64::try_from(e).unwrap_or(0)))
            .collect();
        self.tables.clear();
        for sig in &workload.tables {
            let table = load(lake, &ns, &format!("{prefix}{}", sig.name)).await?;
            let mut state = TableState {
                source_table: sig.name.clone(),
                table,
                key_columns: sig.primary_key.clone(),
                files: BTreeMap::new(),
                key_file: HashMap::new(),
            };
            state.load_files().await?;
            // Rows but no offsets: not this consumer's table, or its state
            // was lost. Except where commits of several tables are not
            // atomic (Glue): a crash between the swaps of the FIRST batch
            // leaves its tables ahead of `_lp_state`, each carrying this
            // consumer's offsets; replaying from the start applies again
            // exactly what they hold.
            let ahead_of_state = !lake.commits_tables_atomically()
                && !latest_properties(&state.table, OFFSET_PREFIX).is_empty();
            if self.offsets.is_empty() && !state.key_file.is_empty() && !ahead_of_state {
                return Err(Error::LostOffsets(format!(
                    "refusing to start: {} holds {} rows but the lake stores no Kafka offsets \
                     for it ({} has none): it was not written by this consumer, or its state was lost; \
                     rebuild it (--rebuild) instead of guessing where to resume",
                    state.table.identifier(),
                    state.key_file.len(),
                    self.state_table.identifier()
                )));
            }
            self.tables.push(state);
        }
        self.index = vec![HashMap::new(); self.tables.len()];
        self.state_files = live_files(&self.state_table).await?;
        let names: HashMap<&str, usize> = self
            .tables
            .iter()
            .enumerate()
            .map(|(i, t)| (t.source_table.as_str(), i))
            .collect();
        for batch in lossproof_runtime::lake::read::visible_rows(&self.state_table)
            .await
            .map_err(Error::iceberg(self.state_table.identifier().to_string()))?
        {
            let col = |name: &str| {
                batch
                    .column_by_name(name)
                    .ok_or_else(|| Error::Corrupt(format!("{STATE_TABLE} has no column {name}")))
            };
            let (tables, keys) = (col("table")?, col("key")?);
            let tables = tables.as_any().downcast_ref::<StringArray>();
            let keys = keys.as_any().downcast_ref::<StringArray>();
            let commits = col("after_commit")?;
            let commits = commits.as_any().downcast_ref::<Int64Array>();
            let lsns = col("lsn")?;
            let lsns = lsns.as_any().downcast_ref::<Int64Array>();
            let ranks = col("rank")?;
            let ranks = ranks.as_any().downcast_ref::<Int32Array>();
            let deleted = col("deleted")?;
            let deleted = deleted.as_any().downcast_ref::<BooleanArray>();
            let (Some(tables), Some(keys), Some(commits), Some(lsns), Some(ranks), Some(deleted)) =
                (tables, keys, commits, lsns, ranks, deleted)
            else {
                return Err(Error::Corrupt(format!(
                    "{STATE_TABLE} has unexpected column types"
                )));
            };
            // Absent from a state table written before it existed.
            let tx_ids = batch.column_by_name("tx_id");
            let tx_ids = tx_ids.and_then(|c| c.as_any().downcast_ref::<Int64Array>());
            for i in 0..batch.num_rows() {
                let Some(&t) = names.get(tables.value(i)) else {
                    continue;
                };
                let applied = Applied {
                    position: Position {
                        after_commit: u64::try_from(commits.value(i)).unwrap_or(0),
                        lsn: u64::try_from(lsns.value(i)).unwrap_or(0),
                        rank: u8::try_from(ranks.value(i)).unwrap_or(0),
                    },
                    deleted: deleted.value(i),
                    tx_id: tx_ids.and_then(|c| c.is_valid(i).then(|| c.value(i))),
                };
                let entry = self.index[t]
                    .entry(Arc::from(keys.value(i)))
                    .or_insert(applied);
                if applied.position > entry.position {
                    *entry = applied;
                }
            }
        }
        Ok(())
    }

    /// The summary properties of a commit that reached `offsets`/`epochs`.
    #[must_use]
    pub fn properties(
        offsets: &HashMap<Partition, i64>,
        epochs: &HashMap<Partition, u64>,
    ) -> HashMap<String, String> {
        let mut properties = HashMap::new();
        for ((topic, partition), offset) in offsets {
            properties.insert(
                format!("{OFFSET_PREFIX}{topic}.{partition}"),
                offset.to_string(),
            );
        }
        for ((topic, partition), epoch) in epochs {
            properties.insert(
                format!("{EPOCH_PREFIX}{topic}.{partition}"),
                epoch.to_string(),
            );
        }
        properties
    }
}

/// `lossproof.offset.<topic>.<partition>` properties as a map (the topic
/// may contain dots; the partition is after the last one).
fn parse_positions(
    properties: &HashMap<String, String>,
    prefix: &str,
) -> Result<HashMap<Partition, i64>> {
    let mut out = HashMap::new();
    for (key, value) in properties {
        let Some(rest) = key.strip_prefix(prefix) else {
            continue;
        };
        let bad = || Error::Corrupt(format!("unreadable lake position {key}={value}"));
        let (topic, partition) = rest.rsplit_once('.').ok_or_else(bad)?;
        let partition: i32 = partition.parse().map_err(|_| bad())?;
        let value: i64 = value.parse().map_err(|_| bad())?;
        out.insert((topic.to_owned(), partition), value);
    }
    Ok(out)
}

/// The live data files of `table`'s current snapshot.
async fn live_files(table: &Table) -> Result<Vec<String>> {
    if table.metadata().current_snapshot().is_none() {
        return Ok(Vec::new());
    }
    let ident = table.identifier();
    let tasks: Vec<FileScanTask> = table
        .scan()
        .select_all()
        .build()
        .map_err(Error::iceberg(ident.to_string()))?
        .plan_files()
        .await
        .map_err(Error::iceberg(ident.to_string()))?
        .try_collect()
        .await
        .map_err(Error::iceberg(ident.to_string()))?;
    Ok(tasks.into_iter().map(|t| t.data_file_path).collect())
}

pub async fn load(lake: &Lake, ns: &NamespaceIdent, name: &str) -> Result<Table> {
    let ident = TableIdent::new(ns.clone(), name.to_owned());
    lake.catalog()
        .load_table(&ident)
        .await
        .map_err(Error::iceberg(ident.to_string()))
}

impl TableState {
    /// Read every live data file with its rows and keys. The consumer
    /// writes no delete files: a table with some was written by someone
    /// else, and is refused.
    pub async fn load_files(&mut self) -> Result<()> {
        self.files.clear();
        self.key_file.clear();
        if self.table.metadata().current_snapshot().is_none() {
            return Ok(());
        }
        let ident = self.table.identifier().clone();
        let scan = self
            .table
            .scan()
            .select_all()
            .build()
            .map_err(Error::iceberg(ident.to_string()))?;
        let tasks: Vec<FileScanTask> = scan
            .plan_files()
            .await
            .map_err(Error::iceberg(ident.to_string()))?
            .try_collect()
            .await
            .map_err(Error::iceberg(ident.to_string()))?;
        let schema = Arc::new(
            iceberg::arrow::schema_to_arrow_schema(self.table.metadata().current_schema())
                .map_err(Error::iceberg(ident.to_string()))?,
        );
        for task in tasks {
            if !task.deletes.is_empty() {
                return Err(Error::Refused(format!(
                    "{ident}: {} has delete files applied to it; the correct consumer writes \
                     copy-on-write only and cannot index such a table",
                    task.data_file_path
                )));
            }
            let path = task.data_file_path.clone();
            let reader =
                ArrowReaderBuilder::new(self.table.file_io().clone(), iceberg::Runtime::current())
                    .build();
            let batches: Vec<RecordBatch> = reader
                .read(futures_util::stream::iter([Ok(task)]).boxed())
                .map_err(Error::iceberg(ident.to_string()))?
                .stream()
                .try_collect()
                .await
                .map_err(Error::iceberg(format!("{ident}: {path}")))?;
            let batches = batches
                .into_iter()
                .map(|b| conform(&b, &schema))
                .collect::<Result<Vec<_>, _>>()?;
            let batch = arrow_select::concat::concat_batches(&schema, &batches)
                .map_err(Error::arrow(format!("{ident}: {path}")))?;
            let keys: Keys = row_keys(&batch, &self.key_columns)?
                .into_iter()
                .map(Arc::from)
                .collect();
            let shared: Arc<str> = Arc::from(path.as_str());
            for key in &keys {
                self.key_file.insert(key.clone(), shared.clone());
            }
            self.files.insert(path, FileRows { batch, keys });
        }
        Ok(())
    }

    /// Rows to write for a batch: every row of the files holding `changed`
    /// keys, except those keys, plus `upserts` (in the current schema).
    /// Returns (the files to remove, the rows, their keys).
    pub fn rewrite(
        &self,
        changed: &HashSet<&str>,
        upserts: RecordBatch,
        upsert_keys: Keys,
    ) -> Result<(Vec<String>, RecordBatch, Keys)> {
        let schema = upserts.schema();
        let mut removed: Vec<String> = changed
            .iter()
            .filter_map(|k| self.key_file.get(*k).map(ToString::to_string))
            .collect();
        removed.sort();
        removed.dedup();
        let mut parts = Vec::new();
        let mut keys = Vec::new();
        for path in &removed {
            let file = &self.files[path];
            let keep: Vec<bool> = file.keys.iter().map(|k| !changed.contains(&**k)).collect();
            let kept = arrow_select::filter::filter_record_batch(
                &file.batch,
                &BooleanArray::from(keep.clone()),
            )
            .map_err(Error::arrow(path.as_str()))?;
            parts.push(conform(&kept, &schema)?);
            keys.extend(
                file.keys
                    .iter()
                    .zip(&keep)
                    .filter(|(_, k)| **k)
                    .map(|(key, _)| key.clone()),
            );
        }
        parts.push(upserts);
        keys.extend(upsert_keys);
        let rows = arrow_select::concat::concat_batches(&schema, &parts)
            .map_err(Error::arrow("the rewritten rows"))?;
        Ok((removed, rows, keys))
    }

    /// The lake's value of text column `column` for `key`, if the lake
    /// holds the key (and the value is not NULL).
    #[must_use]
    pub fn stored_text(&self, key: &str, column: &str) -> Option<String> {
        use arrow_array::cast::AsArray as _;
        let path = self.key_file.get(key)?;
        let file = self.files.get(&**path)?;
        let row = file.keys.iter().position(|k| &**k == key)?;
        let values = file.batch.column_by_name(column)?;
        if !values.is_valid(row) {
            return None;
        }
        match values.as_string_opt::<i32>() {
            Some(v) => Some(v.value(row).to_owned()),
            None => Some(values.as_string_opt::<i64>()?.value(row).to_owned()),
        }
    }

    /// After a commit: `removed` are gone, `added` (one file) holds `rows`.
    pub fn committed(&mut self, removed: &[String], added: Option<(String, RecordBatch, Keys)>) {
        for path in removed {
            if let Some(file) = self.files.remove(path) {
                for key in &file.keys {
                    if self.key_file.get(key).is_some_and(|p| **p == **path) {
                        self.key_file.remove(key);
                    }
                }
            }
        }
        if let Some((path, batch, keys)) = added {
            let shared: Arc<str> = Arc::from(path.as_str());
            for key in &keys {
                self.key_file.insert(key.clone(), shared.clone());
            }
            self.files.insert(path, FileRows { batch, keys });
        }
    }
}

/// `batch` in `schema` (same columns by name; types cast where a widened
/// column still reads narrower, missing columns NULL).
pub fn conform(batch: &RecordBatch, schema: &arrow_schema::SchemaRef) -> Result<RecordBatch> {
    let mut columns = Vec::new();
    for field in schema.fields() {
        let column = match batch.column_by_name(field.name()) {
            Some(c) if c.data_type() == field.data_type() => c.clone(),
            Some(c) => arrow_cast::cast(c, field.data_type()).map_err(Error::arrow(format!(
                "column {}: cannot read {} as {}",
                field.name(),
                c.data_type(),
                field.data_type()
            )))?,
            None => arrow_array::new_null_array(field.data_type(), batch.num_rows()),
        };
        columns.push(column);
    }
    RecordBatch::try_new_with_options(
        schema.clone(),
        columns,
        &arrow_array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
    )
    .map_err(Error::arrow("a conformed batch"))
}

/// The `dead_letters` table assertions see: one row per dead letter of each
/// `(consumer, namespace)` that has one (`consumer`, `topic`, `partition`,
/// `offset`, `error`).
pub async fn dead_letters_batch(
    lake: &Lake,
    consumers: &[(String, String)],
) -> Result<RecordBatch> {
    let (mut consumer, mut topic, mut partition, mut offset, mut error) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (name, namespace) in consumers {
        let ident = TableIdent::new(
            NamespaceIdent::new(namespace.clone()),
            DEAD_LETTERS.to_owned(),
        );
        if !lake.catalog().table_exists(&ident).await.unwrap_or(false) {
            continue;
        }
        let table = lake
            .catalog()
            .load_table(&ident)
            .await
            .map_err(Error::iceberg(ident.to_string()))?;
        for batch in lossproof_runtime::lake::read::visible_rows(&table)
            .await
            .map_err(Error::iceberg(ident.to_string()))?
        {
            let col = |n: &str| {
                batch
                    .column_by_name(n)
                    .cloned()
                    .ok_or_else(|| Error::Corrupt(format!("{ident}: no column {n}")))
            };
            let (t, p, o, e) = (
                col("topic")?,
                col("partition")?,
                col("offset")?,
                col("error")?,
            );
            let (Some(t), Some(p), Some(o), Some(e)) = (
                t.as_any().downcast_ref::<StringArray>(),
                p.as_any().downcast_ref::<Int32Array>(),
                o.as_any().downcast_ref::<Int64Array>(),
                e.as_any().downcast_ref::<StringArray>(),
            ) else {
                return Err(Error::Corrupt(format!("{ident}: unexpected column types")));
            };
            for i in 0..batch.num_rows() {
                consumer.push(name.clone());
                topic.push(t.value(i).to_owned());
                partition.push(i64::from(p.value(i)));
                offset.push(o.value(i));
                error.push(e.value(i).to_owned());
            }
        }
    }
    Ok(lossproof_runtime::reconcile::Table::DeadLetters.batch(vec![
        Arc::new(StringArray::from(consumer)),
        Arc::new(StringArray::from(topic)),
        Arc::new(Int64Array::from(partition)),
        Arc::new(Int64Array::from(offset)),
        Arc::new(StringArray::from(error)),
    ]))
}
