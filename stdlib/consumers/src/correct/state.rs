//! What the correct consumer keeps in the lake, and its in-memory copy.
//!
//! In namespace `correct_lp_<run>`:
//! - one table per source table, holding exactly the source's live rows in
//!   the source's current columns (no hidden columns, no deleted rows):
//!   what pyiceberg, DuckDB or dbt read. Written merge-on-read: a batch
//!   appends the new row versions and a position delete file for the rows
//!   they replace (never rewriting a row it does not change);
//! - `_lp_state`, one live row per (table, key) ever seen: the position of
//!   the newest applied change and a deleted flag, the consumer's per-row
//!   positions and its delete memory; merge-on-read too (a key's previous
//!   row is position-deleted when a newer one is appended), folded when its
//!   dead rows outnumber its live ones. Tables whose names start with
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

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{Array as _, BooleanArray, Int32Array, Int64Array, RecordBatch, StringArray};
use iceberg::spec::{NestedField, PrimitiveType, Schema, Type};
use iceberg::table::Table;
use iceberg::{NamespaceIdent, TableCreation, TableIdent};
use lossproof_lang::vocabulary::WorkloadSig;
use lossproof_runtime::Lake;
use lossproof_runtime::change_event::{Cell, Row};
use lossproof_runtime::lake::{latest_properties, latest_properties_on};

use super::index::{Followed, KeyIndex, Location, Synced};
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
/// The branch a snapshot too large to commit whole is staged on, part by
/// part, until it is complete and published on `main` in one catalog
/// commit (docs/consumers.md, "Transactions"). A start drops it: what was
/// staged is read again from the offsets on `main`.
pub const STAGING: &str = "lossproof-staging";

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

/// One source table's lake table.
pub struct TableState {
    pub source_table: String,
    pub table: Table,
    pub key_columns: Vec<String>,
}

/// Everything the consumer knows, as of the lake's current snapshots: the
/// tables, the position the lake reached, and the key index that says what
/// the lake holds per key (on local disk, [`super::index`]).
pub struct LakeState {
    pub namespace: NamespaceIdent,
    pub tables: Vec<TableState>,
    pub state_table: Table,
    pub dead_letters: Table,
    /// Next offset to read, per partition (absent: from the beginning).
    pub offsets: HashMap<Partition, i64>,
    pub epochs: HashMap<Partition, u64>,
    pub index: KeyIndex,
}

/// `_lp_state` is folded (rewritten with its deletes applied) once its dead
/// rows are at least its live rows and at least this many: each fold then
/// rewrites no more rows than changes were applied since the last one, so
/// its cost per change stays constant whatever the number of keys.
pub const STATE_FOLD_MIN_DEAD: u64 = 10_000;

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
        // One live row per (table, key): what a fold sorts by.
        .with_identifier_field_ids([1, 2])
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
    /// Create the tables that are missing (the source's, `_lp_state`,
    /// `dead_letters`), empty.
    pub async fn create_tables(
        lake: &Lake,
        namespace: &str,
        prefix: &str,
        workload: &WorkloadSig,
    ) -> Result<NamespaceIdent> {
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
        Ok(ns)
    }

    /// Create what is missing, read the lake's position and bring the key
    /// index at `index` in step with the lake. Refuses a lake whose tables
    /// hold rows but whose position is unknown.
    pub async fn open(
        lake: &Lake,
        namespace: &str,
        prefix: &str,
        workload: &WorkloadSig,
        index: &std::path::Path,
    ) -> Result<(Self, Synced)> {
        let ns = Self::create_tables(lake, namespace, prefix, workload).await?;
        let index = {
            let path = index.to_owned();
            tokio::task::spawn_blocking(move || KeyIndex::open(&path))
                .await
                .map_err(|e| Error::Index(format!("open: {e}")))??
        };
        // Parts of a snapshot staged by a run that stopped before it could
        // publish them: dropped, and read again from main's offsets.
        let mut dropped = 0;
        let names = workload.tables.iter().map(|t| t.name.as_str());
        for name in names.chain([STATE_TABLE, DEAD_LETTERS]) {
            let table = load(lake, &ns, &format!("{prefix}{name}")).await?;
            if has_staged(&table) {
                lake.drop_branch(&table, STAGING).await?;
                dropped += 1;
            }
        }
        let mut state = Self {
            state_table: load(lake, &ns, &format!("{prefix}{STATE_TABLE}")).await?,
            dead_letters: load(lake, &ns, &format!("{prefix}{DEAD_LETTERS}")).await?,
            namespace: ns,
            tables: Vec::new(),
            offsets: HashMap::new(),
            epochs: HashMap::new(),
            index,
        };
        let mut synced = state.reload(lake, prefix, workload).await?;
        synced.unstaged = dropped;
        Ok((state, synced))
    }

    /// Read the lake's current snapshots again (after a conflict, a schema
    /// change, or at start) and bring the key index in step with them:
    /// nothing is read when it already is (see [`super::index::sync`]).
    pub async fn reload(
        &mut self,
        lake: &Lake,
        prefix: &str,
        workload: &WorkloadSig,
    ) -> Result<Synced> {
        let ns = self.namespace.clone();
        self.state_table = load(lake, &ns, &format!("{prefix}{STATE_TABLE}")).await?;
        self.dead_letters = load(lake, &ns, &format!("{prefix}{DEAD_LETTERS}")).await?;
        let properties = latest_properties_on(&self.state_table, STAGING, "lossproof.");
        self.offsets = parse_positions(&properties, OFFSET_PREFIX)?;
        self.epochs = parse_positions(&properties, EPOCH_PREFIX)?
            .into_iter()
            .map(|(p, e)| (p, u64::try_from(e).unwrap_or(0)))
            .collect();
        self.tables.clear();
        for sig in &workload.tables {
            let table = load(lake, &ns, &format!("{prefix}{}", sig.name)).await?;
            // Rows but no offsets: not this consumer's table, or its state
            // was lost. Except where commits of several tables are not
            // atomic (Glue): a crash between the swaps of the FIRST batch
            // leaves its tables ahead of `_lp_state`, each carrying this
            // consumer's offsets; replaying from the start applies again
            // exactly what they hold.
            let ahead_of_state = !lake.commits_tables_atomically()
                && !latest_properties(&table, OFFSET_PREFIX).is_empty();
            let rows = live_rows(&table);
            if self.offsets.is_empty() && rows > 0 && !ahead_of_state {
                return Err(Error::LostOffsets(format!(
                    "refusing to start: {} holds {rows} rows but the lake stores no Kafka offsets \
                     for it ({} has none): it was not written by this consumer, or its state was lost; \
                     rebuild it (--rebuild) instead of guessing where to resume",
                    table.identifier(),
                    self.state_table.identifier()
                )));
            }
            self.tables.push(TableState {
                source_table: sig.name.clone(),
                table,
                key_columns: sig.primary_key.clone(),
            });
        }
        let followed = self.followed();
        super::index::sync(&self.index, &followed).await
    }

    /// Whether some table has snapshot parts staged and not yet published
    /// ([`STAGING`]).
    #[must_use]
    pub fn staging(&self) -> bool {
        self.tables
            .iter()
            .map(|t| &t.table)
            .chain([&self.state_table, &self.dead_letters])
            .any(has_staged)
    }

    /// The tables the key index follows: the source's, then `_lp_state`.
    #[must_use]
    pub fn followed(&self) -> Vec<Followed<'_>> {
        self.tables
            .iter()
            .map(|t| Followed {
                name: &t.source_table,
                table: &t.table,
                key_columns: Some(&t.key_columns),
            })
            .chain([Followed {
                name: STATE_TABLE,
                table: &self.state_table,
                key_columns: None,
            }])
            .collect()
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

/// Whether `table` has snapshot parts staged on [`STAGING`].
#[must_use]
pub fn has_staged(table: &Table) -> bool {
    table.metadata().snapshot_for_ref(STAGING).is_some()
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

/// The rows a reader of `table`'s current snapshot sees, from its summary
/// (records minus position deletes; 0 without a snapshot).
#[must_use]
pub fn live_rows(table: &Table) -> u64 {
    summary_count(table, "total-records")
        .saturating_sub(summary_count(table, "total-position-deletes"))
}

/// A count of `table`'s current snapshot summary (`total-records`,
/// `total-position-deletes`; 0 when absent).
#[must_use]
pub fn summary_count(table: &Table, name: &str) -> u64 {
    table
        .metadata()
        .current_snapshot()
        .and_then(|s| {
            s.summary()
                .additional_properties
                .get(name)?
                .parse::<u64>()
                .ok()
        })
        .unwrap_or(0)
}

pub async fn load(lake: &Lake, ns: &NamespaceIdent, name: &str) -> Result<Table> {
    let ident = TableIdent::new(ns.clone(), name.to_owned());
    lake.catalog()
        .load_table(&ident)
        .await
        .map_err(Error::iceberg(ident.to_string()))
}

impl TableState {
    /// The lake's value of text column `column` in the data row at `row`
    /// (`None`: NULL, or no such column in that file).
    pub async fn stored_text(
        &self,
        index: &KeyIndex,
        row: Location,
        column: &str,
    ) -> Result<Option<String>> {
        use arrow_array::cast::AsArray as _;
        let path = index.path_of(row.file)?;
        let batches = lossproof_runtime::lake::read::file_rows(&self.table, &path, &[column])
            .await
            .map_err(Error::iceberg(format!(
                "{}: {path}",
                self.table.identifier()
            )))?;
        let mut at = usize::try_from(row.pos).unwrap_or(usize::MAX);
        for batch in batches {
            if at >= batch.num_rows() {
                at -= batch.num_rows();
                continue;
            }
            let Some(values) = batch.column_by_name(column) else {
                return Ok(None);
            };
            if !values.is_valid(at) {
                return Ok(None);
            }
            return Ok(match values.as_string_opt::<i32>() {
                Some(v) => Some(v.value(at).to_owned()),
                None => values
                    .as_string_opt::<i64>()
                    .map(|v| v.value(at).to_owned()),
            });
        }
        Err(Error::Corrupt(format!(
            "{}: {path} has no row {} (the key index points past its end)",
            self.table.identifier(),
            row.pos
        )))
    }
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
