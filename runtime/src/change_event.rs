//! Decoding Debezium change records (Avro in the Confluent wire format, or
//! schemaless JSON) into typed row changes. Undecodable input is an error
//! value, never a panic: consumers dead-letter it (or, carelessly, log it).

use std::collections::BTreeMap;

use apache_avro::Schema;
use apache_avro::types::Value as Avro;
use serde_json::Value as Json;

mod compiled;

/// One column value, in a form that compares exactly: decimals keep their
/// digits and scale as text, never a float.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(String),
    /// A decimal's exact digits, e.g. `-12.30` for scale 2.
    Decimal(String),
    Bytes(Vec<u8>),
    /// An array column's elements (Debezium's `ARRAY`, an Avro array).
    List(Vec<Cell>),
}

pub type Row = BTreeMap<String, Cell>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeOp {
    /// `c`
    Create,
    /// `r`: a snapshot read.
    Read,
    /// `u`
    Update,
    /// `d`
    Delete,
}

/// A decoded change event.
#[derive(Debug, Clone, PartialEq)]
pub struct RowChange {
    pub op: ChangeOp,
    /// `source.table`.
    pub table: String,
    /// The record key (the primary key columns).
    pub key: Row,
    pub before: Option<Row>,
    pub after: Option<Row>,
    /// `source.lsn`: the position of the change in the source's log.
    pub lsn: u64,
    /// `source.txId`.
    pub tx_id: Option<i64>,
    /// The envelope's `transaction` block (`provide.transaction.metadata`):
    /// the transaction's id and this event's place in it; `None` for
    /// snapshot reads and without transaction metadata.
    pub transaction: Option<TxPosition>,
    /// The first element of `source.sequence` (`["lastCommitLsn","lsn"]`):
    /// the commit LSN of the transaction Debezium streamed BEFORE this
    /// change's. `None` for snapshot reads and for the first transaction
    /// streamed after a snapshot (docs/consumers.md: the order).
    pub last_commit_lsn: Option<u64>,
    /// `source.snapshot` marks a read of a blocking snapshot (`true`,
    /// `first`, `first_in_data_collection`, `last_in_data_collection`,
    /// `last`); `false` and `incremental` are not.
    pub snapshot: bool,
    /// `source.snapshot` is `first` or `last`: the first or last read of a
    /// blocking snapshot.
    pub snapshot_first: bool,
    pub snapshot_last: bool,
    /// The row schema as (column, type) pairs: a new column or a widened
    /// type changes it. Empty for schemaless JSON. Shared by every change
    /// decoded with the same writer schema.
    pub columns: std::sync::Arc<[(String, String)]>,
}

/// A change event's place in its source transaction (Debezium's
/// `transaction` block).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxPosition {
    /// The transaction: [`transaction_key`] of `transaction.id`.
    pub id: String,
    /// `transaction.total_order`: 1 to the transaction's event count.
    pub total_order: u64,
}

impl TxPosition {
    /// From the `transaction` block read as a row.
    fn of(block: &Row) -> Option<Self> {
        let id = match block.get("id")? {
            Cell::Text(id) => transaction_key(id).to_owned(),
            _ => return None,
        };
        let total_order = match block.get("total_order")? {
            Cell::Int(n) => u64::try_from(*n).ok()?,
            _ => return None,
        };
        Some(Self { id, total_order })
    }
}

/// The part of a Debezium transaction id that names the transaction. On
/// PostgreSQL the id is `"<xid>:<lsn>"` where the LSN is each record's own
/// (measured with Debezium 3.1: a transaction's BEGIN, END and every event
/// carry a different one): the xid names it (unique in a seed: no
/// wraparound within one). Elsewhere, the whole id.
#[must_use]
pub fn transaction_key(id: &str) -> &str {
    id.split_once(':').map_or(id, |(xid, _)| xid)
}

/// A record of the transaction topic (`<prefix>.transaction`): a source
/// transaction's BEGIN, or its END with how many change events it wrote to
/// each table (`"public.orders"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxMarker {
    Begin {
        id: String,
        /// The LSN in the record's id (`<xid>:<lsn>` on PostgreSQL).
        lsn: Option<u64>,
    },
    End {
        id: String,
        counts: Vec<(String, u64)>,
        lsn: Option<u64>,
    },
}

/// Decode a transaction-topic record (Avro).
///
/// # Errors
/// Not framed, an unknown schema, or not a BEGIN/END record.
pub fn decode_transaction<'s>(
    value: Option<&[u8]>,
    schema: &dyn Fn(u32) -> Option<&'s WriterSchema>,
) -> Result<TxMarker, DecodeError> {
    let value = value.ok_or(DecodeError::Empty)?;
    let (id, body, writer) = framed(value, schema)?;
    let json = cell_tree(&generic(id, body, writer)?, writer.schema, &writer.names);
    let not = |why: &str| DecodeError::NotAnEnvelope(format!("transaction record: {why}"));
    let full = json["id"].as_str().ok_or_else(|| not("no id"))?;
    let tx = transaction_key(full).to_owned();
    let lsn = full.split_once(':').and_then(|(_, lsn)| lsn.parse().ok());
    match json["status"].as_str() {
        Some("BEGIN") => Ok(TxMarker::Begin { id: tx, lsn }),
        Some("END") => {
            let counts = json["data_collections"]
                .as_array()
                .ok_or_else(|| not("an END without data_collections"))?
                .iter()
                .map(|c| {
                    let name = c["data_collection"]
                        .as_str()
                        .ok_or_else(|| not("a collection without a name"))?;
                    let count = c["event_count"]
                        .as_u64()
                        .or_else(|| c["event_count"].as_str().and_then(|t| t.parse().ok()))
                        .ok_or_else(|| not("a collection without event_count"))?;
                    Ok((name.to_owned(), count))
                })
                .collect::<Result<_, DecodeError>>()?;
            Ok(TxMarker::End {
                id: tx,
                counts,
                lsn,
            })
        }
        other => Err(not(&format!("status {other:?}"))),
    }
}

/// What a change-topic record decodes to.
#[derive(Debug, Clone, PartialEq)]
pub enum ChangeRecord {
    Change(RowChange),
    /// The null-valued record Debezium sends after a delete, so log
    /// compaction can drop the key.
    Tombstone {
        key: Row,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("record has neither key nor value")]
    Empty,
    #[error("not in the Confluent wire format (magic byte 0 + 4-byte schema id): {0}")]
    NotFramed(String),
    #[error("schema id {0} is unknown to the registry")]
    UnknownSchema(u32),
    #[error("Avro payload does not match schema {id}: {reason}")]
    Avro { id: u32, reason: String },
    #[error("not JSON: {0}")]
    Json(String),
    #[error("not a Debezium change envelope: {0}")]
    NotAnEnvelope(String),
}

/// Why a writer schema could not be fetched from the registry.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("GET {url}: {source}")]
    Http {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("GET {url}: no `schema` in {body}")]
    NoSchema { url: String, body: String },
    #[error("schema {id} does not parse: {source}")]
    Schema {
        id: u32,
        #[source]
        source: apache_avro::Error,
    },
}

/// A writer schema ready to decode with: parsed, its named types resolved
/// and its datum reader built ONCE (per registry id), not per record —
/// resolving Debezium's envelope schema for every record cost more than
/// decoding it.
///
/// The schema is leaked to get the `'static` lifetime the resolved names
/// and the reader borrow it with: a process holds one per registry id it
/// meets (one per table and schema version), for as long as it runs.
pub struct WriterSchema {
    schema: &'static Schema,
    names: Names<'static>,
    reader: apache_avro::reader::datum::GenericDatumReader<'static>,
    /// The row's (column, type) pairs, for an envelope schema.
    columns: std::sync::Arc<[(String, String)]>,
    /// The fast reader, for the schemas it covers (`compiled`'s doc).
    compiled: Option<compiled::Compiled>,
}

impl WriterSchema {
    pub fn new(schema: Schema) -> Result<Self, apache_avro::Error> {
        let schema: &'static Schema = Box::leak(Box::new(schema));
        let reader = apache_avro::reader::datum::GenericDatumReader::builder(schema).build()?;
        let names = names_of(schema);
        let columns = match schema {
            Schema::Record(record) => ["after", "before"]
                .iter()
                .find_map(|f| record.lookup.get(*f).copied())
                .map(|i| columns_of(&record.fields[i].schema, &names))
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        let compiled = compiled::Compiled::new(schema, &names);
        Ok(Self {
            schema,
            names,
            reader,
            columns: columns.into(),
            compiled,
        })
    }

    #[must_use]
    pub fn schema(&self) -> &Schema {
        self.schema
    }
}

impl std::fmt::Debug for WriterSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriterSchema")
            .field("schema", self.schema)
            .finish_non_exhaustive()
    }
}

/// Writer schemas fetched from the schema registry by id, cached (an id
/// never changes meaning). Fetch before decoding with [`Schemas::fetch_for`],
/// then hand [`Schemas::lookup`] to [`decode_avro`]. A clone is cheap (it
/// shares the schemas and the HTTP client), e.g. to decode on other threads.
#[derive(Debug, Clone)]
pub struct Schemas {
    http: reqwest::Client,
    registry: crate::profile::Http,
    by_id: BTreeMap<u32, std::sync::Arc<WriterSchema>>,
}

impl Schemas {
    /// Schemas of `registry`.
    #[must_use]
    pub fn new(registry: &crate::profile::Http) -> Self {
        Self {
            http: reqwest::Client::builder()
                .timeout(std::time::Duration::from_secs(10))
                .build()
                .unwrap_or_default(),
            registry: registry.clone(),
            by_id: BTreeMap::new(),
        }
    }

    /// Fetch the schemas `key` and `value` are framed with, unless cached.
    /// Unframed input and unknown ids are left for [`decode_avro`] to report.
    pub async fn fetch_for(
        &mut self,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
    ) -> Result<(), FetchError> {
        for bytes in [key, value].into_iter().flatten() {
            let Ok((id, _)) = frame(bytes) else { continue };
            if self.by_id.contains_key(&id) {
                continue;
            }
            let path = format!("/schemas/ids/{id}");
            let url = format!("{}{path}", self.registry.url);
            let response = self
                .registry
                .request(&self.http, reqwest::Method::GET, &path)
                .send()
                .await
                .map_err(|source| FetchError::Http {
                    url: url.clone(),
                    source,
                })?;
            if response.status() == reqwest::StatusCode::NOT_FOUND {
                continue;
            }
            let body: Json = response.json().await.map_err(|source| FetchError::Http {
                url: url.clone(),
                source,
            })?;
            let text = body["schema"]
                .as_str()
                .ok_or_else(|| FetchError::NoSchema {
                    url: url.clone(),
                    body: body.to_string(),
                })?;
            let bad = |source| FetchError::Schema { id, source };
            let schema = Schema::parse_str(text).map_err(bad)?;
            let prepared = WriterSchema::new(schema).map_err(bad)?;
            self.by_id.insert(id, prepared.into());
        }
        Ok(())
    }

    /// The cached schema with registry id `id`.
    #[must_use]
    pub fn lookup(&self, id: u32) -> Option<&WriterSchema> {
        self.by_id.get(&id).map(|s| &**s)
    }
}

/// Split a Confluent-framed record into its schema id and Avro body.
pub fn frame(bytes: &[u8]) -> Result<(u32, &[u8]), DecodeError> {
    match bytes {
        [0, a, b, c, d, body @ ..] => Ok((u32::from_be_bytes([*a, *b, *c, *d]), body)),
        [] => Err(DecodeError::NotFramed("empty".into())),
        [m, ..] if *m != 0 => Err(DecodeError::NotFramed(format!("magic byte {m}"))),
        _ => Err(DecodeError::NotFramed(format!(
            "{} bytes, need at least 5",
            bytes.len()
        ))),
    }
}

/// Decode an Avro record (key and value as they come off the topic);
/// `schema` resolves registry ids (cache them: ids never change meaning).
pub fn decode_avro<'s>(
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    schema: &dyn Fn(u32) -> Option<&'s WriterSchema>,
) -> Result<ChangeRecord, DecodeError> {
    let key = match key {
        Some(bytes) => {
            let (id, mut body, writer) = framed(bytes, schema)?;
            match &writer.compiled {
                Some(compiled) => compiled
                    .read_row(&mut body)
                    .map_err(|reason| DecodeError::Avro { id, reason })?,
                None => row_from_avro(&generic(id, body, writer)?, writer.schema, &writer.names)?,
            }
            .unwrap_or_default()
        }
        None => Row::new(),
    };
    let Some(value) = value else {
        return without_value(key);
    };
    let (id, mut body, writer) = framed(value, schema)?;
    if let Some(compiled) = &writer.compiled {
        let envelope = compiled
            .read_envelope(&mut body)
            .map_err(|reason| DecodeError::Avro { id, reason })?;
        let mut source = envelope
            .source
            .ok_or_else(|| DecodeError::NotAnEnvelope("no `source`".into()))?;
        source.transaction = envelope.transaction;
        let Some(op) = envelope.op else {
            return Err(DecodeError::NotAnEnvelope("`op` is not a string".into()));
        };
        return change(
            &op,
            key,
            envelope.before,
            envelope.after,
            source,
            writer.columns.clone(),
        );
    }
    let envelope = generic(id, body, writer)?;
    let (schema, names) = (writer.schema, &writer.names);
    let (Avro::Record(fields), Schema::Record(record)) = (&envelope, schema) else {
        return Err(DecodeError::NotAnEnvelope(
            "the value is not a record".into(),
        ));
    };
    let field = |name: &str| {
        let index = record.lookup.get(name).copied()?;
        Some((&fields[index].1, &record.fields[index].schema))
    };
    let row = |name: &str| -> Result<Option<Row>, DecodeError> {
        field(name).map_or(Ok(None), |(v, s)| row_from_avro(v, s, names))
    };
    let source = field("source").ok_or_else(|| DecodeError::NotAnEnvelope("no `source`".into()))?;
    let source = source_view(source.0, source.1, names);
    let op = match field("op").map(|(v, s)| cell(v, s, names)) {
        Some(Cell::Text(op)) => op,
        other => return Err(DecodeError::NotAnEnvelope(format!("`op` is {other:?}"))),
    };
    let mut source = compiled::Source::from_json(&source);
    source.transaction = row("transaction")?.as_ref().and_then(TxPosition::of);
    change(
        &op,
        key,
        row("before")?,
        row("after")?,
        source,
        writer.columns.clone(),
    )
}

/// The schema id, the Avro body and the writer schema of a framed record.
fn framed<'b, 's>(
    bytes: &'b [u8],
    schema: &dyn Fn(u32) -> Option<&'s WriterSchema>,
) -> Result<(u32, &'b [u8], &'s WriterSchema), DecodeError> {
    let (id, body) = frame(bytes)?;
    let writer = schema(id).ok_or(DecodeError::UnknownSchema(id))?;
    Ok((id, body, writer))
}

/// `apache_avro`'s generic value of a body, for schemas without a compiled
/// reader.
fn generic(id: u32, mut body: &[u8], writer: &WriterSchema) -> Result<Avro, DecodeError> {
    writer
        .reader
        .read_value(&mut body)
        .map_err(|e| DecodeError::Avro {
            id,
            reason: e.to_string(),
        })
}

/// Decode a schemaless JSON record (`value.converter.schemas.enable=false`).
pub fn decode_json(key: Option<&[u8]>, value: Option<&[u8]>) -> Result<ChangeRecord, DecodeError> {
    let parse = |bytes: &[u8]| {
        serde_json::from_slice::<Json>(bytes).map_err(|e| DecodeError::Json(e.to_string()))
    };
    let key = match key {
        Some(bytes) => json_row(&parse(bytes)?).unwrap_or_default(),
        None => Row::new(),
    };
    let Some(value) = value else {
        return without_value(key);
    };
    let envelope = parse(value)?;
    let op = envelope["op"]
        .as_str()
        .ok_or_else(|| DecodeError::NotAnEnvelope("no `op`".into()))?;
    let mut source = compiled::Source::from_json(&envelope["source"]);
    source.transaction = json_row(&envelope["transaction"])
        .as_ref()
        .and_then(TxPosition::of);
    change(
        op,
        key,
        json_row(&envelope["before"]),
        json_row(&envelope["after"]),
        source,
        Vec::new().into(),
    )
}

/// A record with no value: Debezium's tombstone after a delete, if it has
/// a key; otherwise nothing at all.
fn without_value(key: Row) -> Result<ChangeRecord, DecodeError> {
    if key.is_empty() {
        Err(DecodeError::Empty)
    } else {
        Ok(ChangeRecord::Tombstone { key })
    }
}

fn change(
    op: &str,
    key: Row,
    before: Option<Row>,
    after: Option<Row>,
    source: compiled::Source,
    columns: std::sync::Arc<[(String, String)]>,
) -> Result<ChangeRecord, DecodeError> {
    let op = match op {
        "c" => ChangeOp::Create,
        "r" => ChangeOp::Read,
        "u" => ChangeOp::Update,
        "d" => ChangeOp::Delete,
        other => return Err(DecodeError::NotAnEnvelope(format!("unknown op `{other}`"))),
    };
    let lsn = source
        .lsn
        .and_then(|l| u64::try_from(l).ok())
        .ok_or_else(|| DecodeError::NotAnEnvelope("no `source.lsn`".into()))?;
    let table = source.table.unwrap_or_default();
    Ok(ChangeRecord::Change(RowChange {
        op,
        table,
        key,
        before,
        after,
        lsn,
        tx_id: source.tx_id,
        transaction: source.transaction,
        last_commit_lsn: source.sequence.as_deref().and_then(last_commit_lsn),
        snapshot_first: source.snapshot.as_deref() == Some("first"),
        snapshot_last: source.snapshot.as_deref() == Some("last"),
        snapshot: matches!(
            source.snapshot.as_deref(),
            Some(
                "true" | "first" | "first_in_data_collection" | "last_in_data_collection" | "last"
            )
        ),
        columns,
    }))
}

/// `sequence[0]` of Debezium's `["lastCommitLsn","lsn"]` (a JSON text),
/// if present and not null.
fn last_commit_lsn(sequence: &str) -> Option<u64> {
    let parsed: Json = serde_json::from_str(sequence).ok()?;
    let first = parsed.get(0)?;
    first
        .as_str()
        .and_then(|t| t.parse().ok())
        .or_else(|| first.as_u64())
}

fn json_row(value: &Json) -> Option<Row> {
    let object = value.as_object()?;
    Some(
        object
            .iter()
            .map(|(k, v)| {
                let cell = match v {
                    Json::Null => Cell::Null,
                    Json::Bool(b) => Cell::Bool(*b),
                    Json::Number(n) => n
                        .as_i64()
                        .map_or_else(|| Cell::Float(n.as_f64().unwrap_or(f64::NAN)), Cell::Int),
                    Json::String(s) => Cell::Text(s.clone()),
                    other => Cell::Text(other.to_string()),
                };
                (k.clone(), cell)
            })
            .collect(),
    )
}

/// Named types of a schema, so `"type": "Value"` references resolve.
type Names<'s> = apache_avro::schema::NamesRef<'s>;

fn names_of(schema: &Schema) -> Names<'_> {
    apache_avro::schema::ResolvedSchema::try_from(schema)
        .map(|r| r.get_names().clone())
        .unwrap_or_default()
}

fn resolve<'a>(schema: &'a Schema, names: &Names<'a>) -> &'a Schema {
    match schema {
        Schema::Ref { name } => names.get(name).copied().unwrap_or(schema),
        other => other,
    }
}

/// Strip a nullable union down to the branch the value took, following
/// named references.
fn branch<'a>(value: &'a Avro, schema: &'a Schema, names: &Names<'a>) -> (&'a Avro, &'a Schema) {
    let schema = resolve(schema, names);
    match (value, schema) {
        (Avro::Union(index, inner), Schema::Union(union)) => {
            match union.variants().get(*index as usize) {
                Some(variant) => branch(inner, variant, names),
                None => (inner, schema),
            }
        }
        _ => (value, schema),
    }
}

fn row_from_avro<'a>(
    value: &'a Avro,
    schema: &'a Schema,
    names: &Names<'a>,
) -> Result<Option<Row>, DecodeError> {
    match branch(value, schema, names) {
        (Avro::Null, _) => Ok(None),
        (Avro::Record(fields), Schema::Record(record)) => Ok(Some(
            fields
                .iter()
                .zip(&record.fields)
                .map(|((name, v), f)| (name.clone(), cell(v, &f.schema, names)))
                .collect(),
        )),
        (other, _) => Err(DecodeError::NotAnEnvelope(format!(
            "expected a row record, found {other:?}"
        ))),
    }
}

fn cell<'a>(value: &'a Avro, schema: &'a Schema, names: &Names<'a>) -> Cell {
    match branch(value, schema, names) {
        (Avro::Null, _) => Cell::Null,
        (Avro::Boolean(b), _) => Cell::Bool(*b),
        (Avro::Int(i) | Avro::Date(i) | Avro::TimeMillis(i), _) => Cell::Int(i64::from(*i)),
        (
            Avro::Long(l)
            | Avro::TimeMicros(l)
            | Avro::TimestampMillis(l)
            | Avro::TimestampMicros(l)
            | Avro::LocalTimestampMillis(l)
            | Avro::LocalTimestampMicros(l),
            _,
        ) => Cell::Int(*l),
        (Avro::Float(f), _) => Cell::Float(f64::from(*f)),
        (Avro::Double(d), _) => Cell::Float(*d),
        (Avro::String(s) | Avro::Enum(_, s), _) => Cell::Text(s.clone()),
        (Avro::Decimal(d), Schema::Decimal(decimal)) => Cell::Decimal(
            Vec::<u8>::try_from(d).map_or_else(|_| "?".into(), |b| decimal_text(&b, decimal.scale)),
        ),
        (Avro::Bytes(b), Schema::Decimal(decimal)) => Cell::Decimal(decimal_text(b, decimal.scale)),
        (Avro::Bytes(b) | Avro::Fixed(_, b), _) => Cell::Bytes(b.clone()),
        (Avro::Array(items), Schema::Array(array)) => Cell::List(
            items
                .iter()
                .map(|item| cell(item, &array.items, names))
                .collect(),
        ),
        (other, _) => Cell::Text(format!("{other:?}")),
    }
}

/// The fields of `source` a change keeps, as JSON (the others, a dozen
/// per record, are never converted).
fn source_view<'a>(value: &'a Avro, schema: &'a Schema, names: &Names<'a>) -> Json {
    const KEPT: [&str; 5] = ["lsn", "table", "txId", "sequence", "snapshot"];
    match branch(value, schema, names) {
        (Avro::Record(fields), Schema::Record(record)) => Json::Object(
            fields
                .iter()
                .zip(&record.fields)
                .filter(|((n, _), _)| KEPT.contains(&n.as_str()))
                .map(|((n, v), f)| (n.clone(), cell_tree(v, &f.schema, names)))
                .collect(),
        ),
        (v, s) => cell_tree(v, s, names),
    }
}

/// A small JSON view of a nested record (for `source`).
fn cell_tree<'a>(value: &'a Avro, schema: &'a Schema, names: &Names<'a>) -> Json {
    match branch(value, schema, names) {
        (Avro::Record(fields), Schema::Record(record)) => Json::Object(
            fields
                .iter()
                .zip(&record.fields)
                .map(|((n, v), f)| (n.clone(), cell_tree(v, &f.schema, names)))
                .collect(),
        ),
        (Avro::Array(items), Schema::Array(array)) => Json::Array(
            items
                .iter()
                .map(|v| cell_tree(v, &array.items, names))
                .collect(),
        ),
        (v, s) => cell_json(cell(v, s, names)),
    }
}

fn cell_json(cell: Cell) -> Json {
    match cell {
        Cell::Null => Json::Null,
        Cell::Bool(b) => Json::Bool(b),
        Cell::Int(i) => Json::from(i),
        Cell::Float(f) => Json::from(f),
        Cell::Text(t) | Cell::Decimal(t) => Json::String(t),
        Cell::Bytes(b) => Json::from(b),
        Cell::List(items) => Json::Array(items.into_iter().map(cell_json).collect()),
    }
}

/// (column, type) pairs of a row schema (through the nullable union).
fn columns_of<'a>(schema: &'a Schema, names: &Names<'a>) -> Vec<(String, String)> {
    let record = match resolve(schema, names) {
        Schema::Union(union) => union
            .variants()
            .iter()
            .find_map(|v| match resolve(v, names) {
                Schema::Record(r) => Some(r),
                _ => None,
            }),
        Schema::Record(r) => Some(r),
        _ => None,
    };
    record
        .map(|r| {
            r.fields
                .iter()
                .map(|f| (f.name.clone(), type_name(&f.schema, names)))
                .collect()
        })
        .unwrap_or_default()
}

fn type_name<'a>(schema: &'a Schema, names: &Names<'a>) -> String {
    match resolve(schema, names) {
        Schema::Union(union) => union
            .variants()
            .iter()
            .filter(|v| !matches!(v, Schema::Null))
            .map(|v| type_name(v, names))
            .collect::<Vec<_>>()
            .join("|"),
        Schema::Decimal(d) => format!("decimal({},{})", d.precision, d.scale),
        Schema::Array(a) => format!("array<{}>", type_name(&a.items, names)),
        other => format!("{:?}", apache_avro::schema::SchemaKind::from(other)).to_lowercase(),
    }
}

/// Unscaled big-endian two's complement -> exact decimal text.
fn decimal_text(bytes: &[u8], scale: usize) -> String {
    let mut n: i128 = if bytes.first().is_some_and(|b| b & 0x80 != 0) {
        -1
    } else {
        0
    };
    for byte in bytes.iter().take(16) {
        n = (n << 8) | i128::from(*byte);
    }
    let digits = n.unsigned_abs().to_string();
    let sign = if n < 0 { "-" } else { "" };
    if scale == 0 {
        return format!("{sign}{digits}");
    }
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (int, frac) = padded.split_at(padded.len() - scale);
    format!("{sign}{int}.{frac}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_gives_the_previous_commit_lsn_or_none() {
        assert_eq!(
            last_commit_lsn(r#"["24023928","24023960"]"#),
            Some(24_023_928)
        );
        assert_eq!(
            last_commit_lsn(r#"[null,"24023960"]"#),
            None,
            "snapshot reads, first transaction after a snapshot"
        );
        assert_eq!(last_commit_lsn("not json"), None);
    }

    fn envelope_schema(amount_precision: u32) -> Schema {
        let row = format!(
            r#"{{"type":"record","name":"Value","namespace":"lp.public.t","fields":[
              {{"name":"id","type":"int"}},
              {{"name":"name","type":["null","string"],"default":null}},
              {{"name":"amount","type":["null",{{"type":"bytes","logicalType":"decimal","precision":{amount_precision},"scale":2}}],"default":null}}]}}"#
        );
        Schema::parse_str(&format!(
            r#"{{"type":"record","name":"Envelope","namespace":"lp.public.t","fields":[
              {{"name":"before","type":["null",{row}],"default":null}},
              {{"name":"after","type":["null","Value"],"default":null}},
              {{"name":"source","type":{{"type":"record","name":"Source","fields":[
                 {{"name":"table","type":"string"}},{{"name":"lsn","type":["null","long"]}},{{"name":"txId","type":["null","long"]}}]}}}},
              {{"name":"op","type":"string"}}]}}"#
        ))
        .unwrap()
    }

    fn key_schema() -> Schema {
        Schema::parse_str(r#"{"type":"record","name":"Key","fields":[{"name":"id","type":"int"}]}"#)
            .unwrap()
    }

    /// `value` in the Confluent wire format under registry id `id`.
    pub(super) fn framed(id: u32, schema: &Schema, value: Avro) -> Vec<u8> {
        let mut out = vec![0];
        out.extend(id.to_be_bytes());
        let writer = apache_avro::writer::datum::GenericDatumWriter::builder(schema)
            .build()
            .unwrap();
        out.extend(writer.write_value_to_vec(value).unwrap());
        out
    }

    fn row(id: i32, name: Option<&str>, cents: Option<i64>) -> Avro {
        Avro::Record(vec![
            ("id".into(), Avro::Int(id)),
            (
                "name".into(),
                Avro::Union(
                    u32::from(name.is_some()),
                    Box::new(name.map_or(Avro::Null, |n| Avro::String(n.into()))),
                ),
            ),
            (
                "amount".into(),
                Avro::Union(
                    u32::from(cents.is_some()),
                    Box::new(cents.map_or(Avro::Null, |c| {
                        Avro::Decimal(apache_avro::Decimal::from(c.to_be_bytes().to_vec()))
                    })),
                ),
            ),
        ])
    }

    fn update(schema: &Schema) -> Vec<u8> {
        framed(
            2,
            schema,
            Avro::Record(vec![
                (
                    "before".into(),
                    Avro::Union(1, Box::new(row(1, Some("one"), Some(150)))),
                ),
                (
                    "after".into(),
                    Avro::Union(1, Box::new(row(1, None, Some(-1230)))),
                ),
                (
                    "source".into(),
                    Avro::Record(vec![
                        ("table".into(), Avro::String("t".into())),
                        (
                            "lsn".into(),
                            Avro::Union(1, Box::new(Avro::Long(26_365_024))),
                        ),
                        ("txId".into(), Avro::Union(1, Box::new(Avro::Long(771)))),
                    ]),
                ),
                ("op".into(), Avro::String("u".into())),
            ]),
        )
    }

    /// A framed key record `{id}` under schema id 1.
    fn key(id: i32) -> Vec<u8> {
        framed(
            1,
            &key_schema(),
            Avro::Record(vec![("id".into(), Avro::Int(id))]),
        )
    }

    fn schemas(id: u32) -> Option<&'static WriterSchema> {
        static PREPARED: std::sync::LazyLock<BTreeMap<u32, WriterSchema>> =
            std::sync::LazyLock::new(|| {
                [
                    (1, key_schema()),
                    (2, envelope_schema(10)),
                    (3, envelope_schema(14)),
                ]
                .into_iter()
                .map(|(id, s)| (id, WriterSchema::new(s).unwrap()))
                .collect()
            });
        PREPARED.get(&id)
    }

    #[test]
    fn decodes_an_avro_update_exactly() {
        let key = key(1);
        let record =
            decode_avro(Some(&key), Some(&update(&envelope_schema(10))), &schemas).unwrap();
        let ChangeRecord::Change(change) = record else {
            panic!("{record:?}")
        };
        assert_eq!(change.op, ChangeOp::Update);
        assert_eq!(change.table, "t");
        assert_eq!(change.lsn, 26_365_024);
        assert_eq!(change.tx_id, Some(771));
        assert_eq!(change.key, Row::from([("id".into(), Cell::Int(1))]));
        let before = change.before.unwrap();
        let after = change.after.unwrap();
        assert_eq!(before["amount"], Cell::Decimal("1.50".into()));
        assert_eq!(after["amount"], Cell::Decimal("-12.30".into()));
        assert_eq!(
            after["name"],
            Cell::Null,
            "NULL stays NULL, not an empty string"
        );
        assert_eq!(
            change.columns[2],
            ("amount".to_owned(), "decimal(10,2)".to_owned())
        );
    }

    #[test]
    fn a_widened_column_changes_the_schema_fingerprint() {
        let key = key(1);
        let narrow =
            decode_avro(Some(&key), Some(&update(&envelope_schema(10))), &schemas).unwrap();
        let mut wide_bytes = update(&envelope_schema(14));
        wide_bytes[4] = 3;
        let wide = decode_avro(Some(&key), Some(&wide_bytes), &schemas).unwrap();
        let columns = |r: &ChangeRecord| match r {
            ChangeRecord::Change(c) => c.columns.to_vec(),
            ChangeRecord::Tombstone { .. } => vec![],
        };
        assert_ne!(columns(&narrow), columns(&wide));
        assert_eq!(columns(&wide)[2].1, "decimal(14,2)");
    }

    #[test]
    fn tombstones_and_bad_input_are_values_not_panics() {
        let key = key(7);
        assert_eq!(
            decode_avro(Some(&key), None, &schemas),
            Ok(ChangeRecord::Tombstone {
                key: Row::from([("id".into(), Cell::Int(7))])
            })
        );
        assert_eq!(decode_avro(None, None, &schemas), Err(DecodeError::Empty));
        assert!(matches!(
            decode_avro(None, Some(b"junk"), &schemas),
            Err(DecodeError::NotFramed(_))
        ));
        assert_eq!(
            decode_avro(None, Some(&[0, 0, 0, 0, 9, 1]), &schemas),
            Err(DecodeError::UnknownSchema(9))
        );
        let mut truncated = update(&envelope_schema(10));
        truncated.truncate(12);
        assert!(matches!(
            decode_avro(None, Some(&truncated), &schemas),
            Err(DecodeError::Avro { id: 2, .. })
        ));
        // Arbitrary bytes, framed or not: always an error value.
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        for len in 0..300 {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    (state & 0xff) as u8
                })
                .collect();
            let mut framed_junk = vec![0, 0, 0, 0, 2];
            framed_junk.extend(&bytes);
            let _ = decode_avro(None, Some(&bytes), &schemas);
            let _ = decode_avro(Some(&framed_junk), Some(&framed_junk), &schemas);
            let _ = decode_json(Some(&bytes), Some(&bytes));
        }
    }

    #[test]
    fn decodes_schemaless_json() {
        let value = br#"{"before":null,"after":{"id":4,"name":"four","amount":"4.00"},
            "source":{"table":"chain","lsn":26365400,"txId":780},"op":"c","ts_ms":1}"#;
        let record = decode_json(Some(br#"{"id":4}"#), Some(value)).unwrap();
        let ChangeRecord::Change(change) = record else {
            panic!("{record:?}")
        };
        assert_eq!(
            (change.op, change.lsn, change.table.as_str()),
            (ChangeOp::Create, 26_365_400, "chain")
        );
        assert_eq!(change.after.unwrap()["amount"], Cell::Text("4.00".into()));
        assert_eq!(
            decode_json(Some(br#"{"id":4}"#), None),
            Ok(ChangeRecord::Tombstone {
                key: Row::from([("id".into(), Cell::Int(4))])
            })
        );
        assert!(matches!(
            decode_json(None, Some(b"{\"op\":\"x\",\"source\":{\"lsn\":1}}")),
            Err(DecodeError::NotAnEnvelope(_))
        ));
    }

    #[test]
    fn decimal_text_is_exact() {
        assert_eq!(decimal_text(&[0x03, 0xe7], 2), "9.99");
        assert_eq!(decimal_text(&[0xff, 0xfb], 2), "-0.05");
        assert_eq!(decimal_text(&[0x05], 0), "5");
        assert_eq!(decimal_text(&[0x01], 3), "0.001");
    }
}
