//! A writer schema compiled into a reader for Debezium's envelope: Avro's
//! binary encoding read straight into [`Row`]s and the five `source` fields
//! a change keeps, without building `apache_avro`'s generic value tree
//! first (a `String` per field name, a node per value, then a second pass
//! to convert it: most of what decoding cost).
//!
//! Only what a Debezium envelope needs is compiled: rows whose columns are
//! scalars, arrays of scalars, or nullable ones. Any other schema (a nested
//! record in a row, a map column, a timestamp-nanos logical type …) has no compiled
//! reader, and `decode_avro` takes the generic `apache_avro` path for it.
//! Both paths give the same result for the same bytes, checked by the
//! tests below on every shape they share, malformed input included.

use apache_avro::Schema;
use apache_avro::schema::InnerDecimalSchema;

use super::{Cell, Names, Row, decimal_text, resolve};

/// How one value is laid out in Avro's binary encoding.
#[derive(Debug)]
pub(super) enum Node {
    Null,
    Bool,
    /// `int` and `long` (and their date/time logical types): zig-zag varints.
    Long {
        int: bool,
    },
    Float,
    Double,
    Bytes,
    Text,
    Enum(Vec<String>),
    Fixed(usize),
    /// `bytes` (no size) or `fixed` (a size) holding a decimal's unscaled value.
    Decimal {
        scale: usize,
        size: Option<usize>,
    },
    Union(Vec<Node>),
    Record(Vec<(String, Node)>),
    Array(Box<Node>),
    Map(Box<Node>),
}

/// The part of `source` a change keeps.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Source {
    pub lsn: Option<i64>,
    pub table: Option<String>,
    pub tx_id: Option<i64>,
    pub sequence: Option<String>,
    pub snapshot: Option<String>,
    /// The envelope's `transaction` block (a sibling of `source`, kept
    /// here to reach the change with it).
    pub transaction: Option<super::TxPosition>,
}

impl Source {
    /// The same fields of a JSON view of `source` (the generic and the
    /// schemaless paths).
    pub(super) fn from_json(source: &serde_json::Value) -> Self {
        let text = |f: &str| source[f].as_str().map(str::to_owned);
        Self {
            lsn: source["lsn"].as_u64().and_then(|l| i64::try_from(l).ok()),
            table: text("table"),
            tx_id: source["txId"].as_i64(),
            sequence: text("sequence"),
            snapshot: text("snapshot"),
            transaction: None,
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub(super) enum SourceField {
    Lsn,
    Table,
    TxId,
    Sequence,
    Snapshot,
}

#[derive(Debug)]
pub(super) enum EnvelopeField {
    Before(Node),
    After(Node),
    Source(Vec<(Option<SourceField>, Node)>),
    Transaction(Node),
    Op(Node),
    Other(Node),
}

/// A compiled writer schema: a row record (a key) or a change envelope.
#[derive(Debug)]
pub(super) enum Compiled {
    Row(Node),
    Envelope(Vec<EnvelopeField>),
}

/// What an envelope decodes to, before it becomes a `RowChange`.
pub(super) struct Envelope {
    pub op: Option<String>,
    pub before: Option<Row>,
    pub after: Option<Row>,
    pub source: Option<Source>,
    pub transaction: Option<super::TxPosition>,
}

/// Nesting deeper than any Debezium schema (and a guard against recursive
/// named types).
const DEPTH: usize = 16;

impl Compiled {
    /// The compiled reader of `schema`, if it has one (see the module doc).
    pub(super) fn new(schema: &Schema, names: &Names<'_>) -> Option<Self> {
        let Schema::Record(record) = resolve(schema, names) else {
            return None;
        };
        let is_envelope = ["op", "source"]
            .iter()
            .all(|f| record.lookup.contains_key(*f));
        if !is_envelope {
            let row = node(schema, names, 0)?;
            return row_shaped(&row).then_some(Self::Row(row));
        }
        let mut fields = Vec::new();
        for field in &record.fields {
            let compiled = node(&field.schema, names, 0)?;
            fields.push(match field.name.as_str() {
                "before" | "after" if !row_shaped(&compiled) => return None,
                "before" => EnvelopeField::Before(compiled),
                "after" => EnvelopeField::After(compiled),
                "op" => EnvelopeField::Op(compiled),
                "transaction" => EnvelopeField::Transaction(compiled),
                "source" => {
                    let Node::Record(parts) = compiled else {
                        return None;
                    };
                    EnvelopeField::Source(
                        parts
                            .into_iter()
                            .map(|(name, node)| {
                                let kept = match name.as_str() {
                                    "lsn" => Some(SourceField::Lsn),
                                    "table" => Some(SourceField::Table),
                                    "txId" => Some(SourceField::TxId),
                                    "sequence" => Some(SourceField::Sequence),
                                    "snapshot" => Some(SourceField::Snapshot),
                                    _ => None,
                                };
                                (kept, node)
                            })
                            .collect(),
                    )
                }
                _ => EnvelopeField::Other(compiled),
            });
        }
        Some(Self::Envelope(fields))
    }

    pub(super) fn read_row(&self, body: &mut &[u8]) -> Result<Option<Row>, String> {
        match self {
            Self::Row(node) => row(node, body),
            Self::Envelope(_) => Err("an envelope schema where a key was expected".into()),
        }
    }

    pub(super) fn read_envelope(&self, body: &mut &[u8]) -> Result<Envelope, String> {
        let Self::Envelope(fields) = self else {
            return Err("the value is not a record".into());
        };
        let mut out = Envelope {
            op: None,
            before: None,
            after: None,
            source: None,
            transaction: None,
        };
        for field in fields {
            match field {
                EnvelopeField::Before(node) => out.before = row(node, body)?,
                EnvelopeField::After(node) => out.after = row(node, body)?,
                EnvelopeField::Op(node) => {
                    out.op = match cell(node, body)? {
                        Cell::Text(op) => Some(op),
                        _ => None,
                    };
                }
                EnvelopeField::Source(parts) => {
                    let mut source = Source::default();
                    for (kept, node) in parts {
                        let Some(kept) = kept else {
                            skip(node, body)?;
                            continue;
                        };
                        let value = cell(node, body)?;
                        let (int, text) = match value {
                            Cell::Int(i) => (Some(i), None),
                            Cell::Text(t) | Cell::Decimal(t) => (None, Some(t)),
                            _ => (None, None),
                        };
                        match kept {
                            SourceField::Lsn => source.lsn = int,
                            SourceField::TxId => source.tx_id = int,
                            SourceField::Table => source.table = text,
                            SourceField::Sequence => source.sequence = text,
                            SourceField::Snapshot => source.snapshot = text,
                        }
                    }
                    out.source = Some(source);
                }
                EnvelopeField::Transaction(node) => {
                    out.transaction = row(node, body)?.as_ref().and_then(super::TxPosition::of);
                }
                EnvelopeField::Other(node) => skip(node, body)?,
            }
        }
        Ok(out)
    }
}

fn node(schema: &Schema, names: &Names<'_>, depth: usize) -> Option<Node> {
    if depth > DEPTH {
        return None;
    }
    Some(match resolve(schema, names) {
        Schema::Null => Node::Null,
        Schema::Boolean => Node::Bool,
        Schema::Int | Schema::Date | Schema::TimeMillis => Node::Long { int: true },
        Schema::Long
        | Schema::TimeMicros
        | Schema::TimestampMillis
        | Schema::TimestampMicros
        | Schema::LocalTimestampMillis
        | Schema::LocalTimestampMicros => Node::Long { int: false },
        Schema::Float => Node::Float,
        Schema::Double => Node::Double,
        Schema::Bytes => Node::Bytes,
        Schema::String => Node::Text,
        Schema::Enum(e) => Node::Enum(e.symbols.clone()),
        Schema::Fixed(f) => Node::Fixed(f.size),
        Schema::Decimal(d) => Node::Decimal {
            scale: d.scale,
            size: match &d.inner {
                InnerDecimalSchema::Bytes => None,
                InnerDecimalSchema::Fixed(f) => Some(f.size),
            },
        },
        Schema::Union(u) => Node::Union(
            u.variants()
                .iter()
                .map(|v| node(v, names, depth + 1))
                .collect::<Option<_>>()?,
        ),
        Schema::Record(r) => Node::Record(
            r.fields
                .iter()
                .map(|f| Some((f.name.clone(), node(&f.schema, names, depth + 1)?)))
                .collect::<Option<_>>()?,
        ),
        Schema::Array(a) => Node::Array(Box::new(node(&a.items, names, depth + 1)?)),
        Schema::Map(m) => Node::Map(Box::new(node(&m.types, names, depth + 1)?)),
        // Uuid, BigDecimal, nanosecond timestamps, Duration, unresolved
        // references: the generic path.
        _ => return None,
    })
}

/// A record of scalars and arrays of scalars, or a union of null and such
/// a record.
fn row_shaped(node: &Node) -> bool {
    match node {
        Node::Record(columns) => columns.iter().all(|(_, c)| column(c)),
        Node::Union(variants) => variants
            .iter()
            .all(|v| matches!(v, Node::Null) || row_shaped(v)),
        _ => false,
    }
}

/// A scalar, an array of scalars, or a union of them.
fn column(node: &Node) -> bool {
    match node {
        Node::Array(items) => scalar(items),
        Node::Union(variants) => variants.iter().all(column),
        other => scalar(other),
    }
}

fn scalar(node: &Node) -> bool {
    match node {
        Node::Record(_) | Node::Array(_) | Node::Map(_) => false,
        Node::Union(variants) => variants.iter().all(scalar),
        _ => true,
    }
}

fn row(node: &Node, body: &mut &[u8]) -> Result<Option<Row>, String> {
    match node {
        Node::Null => Ok(None),
        Node::Union(variants) => row(branch(variants, body)?, body),
        Node::Record(columns) => {
            let mut out = Row::new();
            for (name, column) in columns {
                out.insert(name.clone(), cell(column, body)?);
            }
            Ok(Some(out))
        }
        other => Err(format!("expected a row record, found {other:?}")),
    }
}

fn cell(node: &Node, body: &mut &[u8]) -> Result<Cell, String> {
    Ok(match node {
        Node::Null => Cell::Null,
        Node::Bool => match take(body, 1)? {
            [0] => Cell::Bool(false),
            [1] => Cell::Bool(true),
            other => return Err(format!("invalid boolean byte {other:?}")),
        },
        Node::Long { int } => Cell::Int(long(body, *int)?),
        Node::Float => Cell::Float(f64::from(f32::from_le_bytes(array(body)?))),
        Node::Double => Cell::Float(f64::from_le_bytes(array(body)?)),
        Node::Bytes => Cell::Bytes(sized(body)?.to_vec()),
        Node::Text => Cell::Text(text(body)?.to_owned()),
        Node::Enum(symbols) => Cell::Text(symbol(symbols, body)?.to_owned()),
        Node::Fixed(size) => Cell::Bytes(take(body, *size)?.to_vec()),
        Node::Decimal { scale, size } => {
            let unscaled = match size {
                Some(size) => take(body, *size)?,
                None => sized(body)?,
            };
            Cell::Decimal(decimal_text(unscaled, *scale))
        }
        Node::Union(variants) => cell(branch(variants, body)?, body)?,
        Node::Array(items) => {
            let mut list = Vec::new();
            blocks(body, |body| {
                list.push(cell(items, body)?);
                Ok(())
            })?;
            Cell::List(list)
        }
        Node::Record(_) | Node::Map(_) => {
            return Err(format!("expected a scalar, found {node:?}"));
        }
    })
}

/// Read past a value without keeping it.
fn skip(node: &Node, body: &mut &[u8]) -> Result<(), String> {
    match node {
        Node::Union(variants) => skip(branch(variants, body)?, body),
        Node::Record(fields) => fields.iter().try_for_each(|(_, f)| skip(f, body)),
        Node::Array(items) => blocks(body, |body| skip(items, body)),
        Node::Map(values) => blocks(body, |body| {
            text(body)?;
            skip(values, body)
        }),
        Node::Text => text(body).map(drop),
        Node::Bytes | Node::Decimal { size: None, .. } => sized(body).map(drop),
        Node::Enum(symbols) => symbol(symbols, body).map(drop),
        other => cell(other, body).map(drop),
    }
}

/// Array and map items come in blocks: a count (negative: followed by the
/// block's size in bytes), the items, until a count of zero.
fn blocks(
    body: &mut &[u8],
    mut item: impl FnMut(&mut &[u8]) -> Result<(), String>,
) -> Result<(), String> {
    loop {
        let count = long(body, false)?;
        if count == 0 {
            return Ok(());
        }
        if count < 0 {
            long(body, false)?; // the block's size in bytes
        }
        for _ in 0..count.unsigned_abs() {
            item(body)?;
        }
    }
}

fn branch<'n>(variants: &'n [Node], body: &mut &[u8]) -> Result<&'n Node, String> {
    let index = long(body, false)?;
    usize::try_from(index)
        .ok()
        .and_then(|i| variants.get(i))
        .ok_or_else(|| {
            format!(
                "union index {index} out of range ({} variants)",
                variants.len()
            )
        })
}

fn symbol<'s>(symbols: &'s [String], body: &mut &[u8]) -> Result<&'s str, String> {
    let index = long(body, true)?;
    usize::try_from(index)
        .ok()
        .and_then(|i| symbols.get(i))
        .map(String::as_str)
        .ok_or_else(|| format!("enum index {index} out of range"))
}

/// A zig-zag varint; `int` checks it fits 32 bits.
fn long(body: &mut &[u8], int: bool) -> Result<i64, String> {
    let mut raw = 0u64;
    for shift in (0..64).step_by(7) {
        let [byte, rest @ ..] = *body else {
            return Err("unexpected end of input in a varint".into());
        };
        *body = rest;
        raw |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            let value = (raw >> 1).cast_signed() ^ -(raw & 1).cast_signed();
            if int && i32::try_from(value).is_err() {
                return Err(format!("int out of range: {value}"));
            }
            return Ok(value);
        }
    }
    Err("varint longer than 10 bytes".into())
}

fn take<'b>(body: &mut &'b [u8], n: usize) -> Result<&'b [u8], String> {
    if body.len() < n {
        return Err(format!(
            "unexpected end of input: need {n} bytes, {} left",
            body.len()
        ));
    }
    let (head, rest) = body.split_at(n);
    *body = rest;
    Ok(head)
}

fn array<const N: usize>(body: &mut &[u8]) -> Result<[u8; N], String> {
    let bytes = take(body, N)?;
    Ok(bytes.try_into().unwrap_or([0; N]))
}

fn sized<'b>(body: &mut &'b [u8]) -> Result<&'b [u8], String> {
    let len = long(body, false)?;
    let len = usize::try_from(len).map_err(|_| format!("negative length {len}"))?;
    take(body, len)
}

fn text<'b>(body: &mut &'b [u8]) -> Result<&'b str, String> {
    std::str::from_utf8(sized(body)?).map_err(|e| format!("string is not UTF-8: {e}"))
}

#[cfg(test)]
mod tests {
    use apache_avro::types::Value as Avro;

    use super::super::tests::framed;
    use super::super::{DecodeError, WriterSchema, decode_avro};
    use super::*;

    /// A Debezium-shaped envelope: every scalar type a row may hold, the
    /// full `source` block, a `transaction` block and a field of nested
    /// arrays and maps to read past.
    const ENVELOPE: &str = r#"{"type":"record","name":"Envelope","namespace":"lp.public.orders","fields":[
      {"name":"before","type":["null",{"type":"record","name":"Value","fields":[
        {"name":"id","type":"int"},
        {"name":"customer_id","type":["null","long"],"default":null},
        {"name":"amount","type":["null",{"type":"bytes","logicalType":"decimal","precision":12,"scale":2}],"default":null},
        {"name":"exact","type":{"type":"fixed","name":"Exact","size":9,"logicalType":"decimal","precision":20,"scale":4}},
        {"name":"status","type":["null","string"],"default":null},
        {"name":"paid","type":["null","boolean"],"default":null},
        {"name":"price","type":"double"},
        {"name":"ratio","type":"float"},
        {"name":"day","type":{"type":"int","logicalType":"date"}},
        {"name":"at","type":["null",{"type":"long","logicalType":"timestamp-micros"}],"default":null},
        {"name":"kind","type":{"type":"enum","name":"Kind","symbols":["web","shop","phone"]}},
        {"name":"blob","type":["null","bytes"],"default":null},
        {"name":"tag","type":{"type":"fixed","name":"Tag","size":3}},
        {"name":"scores","type":["null",{"type":"array","items":["null","int"]}],"default":null},
        {"name":"words","type":{"type":"array","items":"string"}}]}],"default":null},
      {"name":"after","type":["null","Value"],"default":null},
      {"name":"source","type":{"type":"record","name":"Source","namespace":"io.debezium.connector.postgresql","fields":[
        {"name":"version","type":"string"},{"name":"connector","type":"string"},{"name":"name","type":"string"},
        {"name":"ts_ms","type":"long"},
        {"name":"snapshot","type":[{"type":"string","connect.default":"false"},"null"],"default":"false"},
        {"name":"db","type":"string"},{"name":"sequence","type":["null","string"],"default":null},
        {"name":"ts_us","type":["null","long"],"default":null},
        {"name":"schema","type":"string"},{"name":"table","type":"string"},
        {"name":"txId","type":["null","long"],"default":null},{"name":"lsn","type":["null","long"],"default":null},
        {"name":"xmin","type":["null","long"],"default":null}]}},
      {"name":"transaction","type":["null",{"type":"record","name":"block","namespace":"event","fields":[
        {"name":"id","type":"string"},{"name":"total_order","type":"long"},{"name":"data_collection_order","type":"long"}]}],"default":null},
      {"name":"extra","type":{"type":"array","items":{"type":"map","values":["null","string"]}}},
      {"name":"op","type":"string"},
      {"name":"ts_ms","type":["null","long"],"default":null}]}"#;

    const KEY: &str = r#"{"type":"record","name":"Key","namespace":"lp.public.orders","fields":[{"name":"id","type":"int"}]}"#;

    /// splitmix64: the test's values, the same on every run.
    struct Draw(u64);

    impl Draw {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
        fn opt(&mut self, value: impl FnOnce(&mut Self) -> Avro) -> Avro {
            if self.below(4) == 0 {
                Avro::Union(0, Box::new(Avro::Null))
            } else {
                Avro::Union(1, Box::new(value(self)))
            }
        }
        fn text(&mut self) -> String {
            let len = self.below(12);
            (0..len)
                .map(|_| ['a', 'Z', '7', ' ', 'é', '€', '"'][self.below(7) as usize])
                .collect()
        }
    }

    #[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]
    fn row(d: &mut Draw) -> Avro {
        let cents = (d.next() as i64) >> (d.below(60) + 4);
        let amount =
            d.opt(|_| Avro::Decimal(apache_avro::Decimal::from(cents.to_be_bytes().to_vec())));
        let exact = Avro::Decimal(apache_avro::Decimal::from(
            (i128::from(d.next()) << 8).to_be_bytes()[7..].to_vec(),
        ));
        let customer = d.opt(|d| Avro::Long(d.next() as i64));
        let status = d.opt(|d| Avro::String(d.text()));
        let paid = d.opt(|d| Avro::Boolean(d.below(2) == 0));
        let blob = d.opt(|d| Avro::Bytes(d.text().into_bytes()));
        let at = d.opt(|d| Avro::TimestampMicros(d.next() as i64 >> 8));
        Avro::Record(vec![
            ("id".into(), Avro::Int(d.next() as i32)),
            ("customer_id".into(), customer),
            ("amount".into(), amount),
            ("exact".into(), exact),
            ("status".into(), status),
            ("paid".into(), paid),
            ("price".into(), Avro::Double(d.next() as f64 / 1e9)),
            ("ratio".into(), Avro::Float(d.below(1000) as f32 / 7.0)),
            ("day".into(), Avro::Date(d.below(40_000) as i32)),
            ("at".into(), at),
            ("kind".into(), {
                let i = d.below(3) as u32;
                Avro::Enum(i, ["web", "shop", "phone"][i as usize].into())
            }),
            ("blob".into(), blob),
            ("tag".into(), Avro::Fixed(3, vec![1, 2, d.below(256) as u8])),
            (
                "scores".into(),
                d.opt(|d| {
                    Avro::Array(
                        (0..d.below(4))
                            .map(|_| d.opt(|d| Avro::Int(d.next() as i32)))
                            .collect(),
                    )
                }),
            ),
            (
                "words".into(),
                Avro::Array((0..d.below(3)).map(|_| Avro::String(d.text())).collect()),
            ),
        ])
    }

    #[allow(clippy::cast_possible_wrap)]
    fn envelope(d: &mut Draw) -> Avro {
        let op = ["c", "u", "d", "r"][d.below(4) as usize];
        let sequence = d.opt(|d| {
            Avro::String(format!(
                r#"["{}","{}"]"#,
                d.below(1 << 40),
                d.below(1 << 40)
            ))
        });
        let snapshot = if d.below(3) == 0 {
            Avro::Union(1, Box::new(Avro::Null))
        } else {
            Avro::Union(
                0,
                Box::new(Avro::String(
                    ["false", "true", "last"][d.below(3) as usize].into(),
                )),
            )
        };
        let extra = Avro::Array(
            (0..d.below(3))
                .map(|i| {
                    Avro::Map(
                        (0..d.below(3))
                            .map(|j| (format!("k{i}{j}"), d.opt(|d| Avro::String(d.text()))))
                            .collect(),
                    )
                })
                .collect(),
        );
        let before = if op == "c" || op == "r" {
            Avro::Union(0, Box::new(Avro::Null))
        } else {
            Avro::Union(1, Box::new(row(d)))
        };
        let after = if op == "d" {
            Avro::Union(0, Box::new(Avro::Null))
        } else {
            Avro::Union(1, Box::new(row(d)))
        };
        let transaction = d.opt(|d| {
            Avro::Record(vec![
                ("id".into(), Avro::String(d.text())),
                ("total_order".into(), Avro::Long(d.below(100) as i64)),
                (
                    "data_collection_order".into(),
                    Avro::Long(d.below(100) as i64),
                ),
            ])
        });
        let tx_id = d.opt(|d| Avro::Long(d.below(1 << 31) as i64));
        let lsn = Avro::Union(1, Box::new(Avro::Long(d.below(1 << 40) as i64)));
        let source = Avro::Record(vec![
            ("version".into(), Avro::String("3.0.0.Final".into())),
            ("connector".into(), Avro::String("postgresql".into())),
            ("name".into(), Avro::String("lp".into())),
            ("ts_ms".into(), Avro::Long(d.below(1 << 41) as i64)),
            ("snapshot".into(), snapshot),
            ("db".into(), Avro::String("source".into())),
            ("sequence".into(), sequence),
            ("ts_us".into(), Avro::Union(0, Box::new(Avro::Null))),
            ("schema".into(), Avro::String("public".into())),
            (
                "table".into(),
                Avro::String(["orders", "customers"][d.below(2) as usize].into()),
            ),
            ("txId".into(), tx_id),
            ("lsn".into(), lsn),
            ("xmin".into(), Avro::Union(0, Box::new(Avro::Null))),
        ]);
        let ts = d.opt(|d| Avro::Long(d.below(1 << 41) as i64));
        Avro::Record(vec![
            ("before".into(), before),
            ("after".into(), after),
            ("source".into(), source),
            ("transaction".into(), transaction),
            ("extra".into(), extra),
            ("op".into(), Avro::String(op.into())),
            ("ts_ms".into(), ts),
        ])
    }

    /// Schema ids 1 (key) and 2 (envelope) with compiled readers, 11 and
    /// 12 the same schemas on the generic path only.
    fn prepared() -> std::collections::BTreeMap<u32, WriterSchema> {
        let parse = |text: &str| Schema::parse_str(text).unwrap();
        let mut out = std::collections::BTreeMap::new();
        for (id, text) in [(1, KEY), (2, ENVELOPE)] {
            let fast = WriterSchema::new(parse(text)).unwrap();
            assert!(fast.compiled.is_some(), "schema {id} compiles");
            let mut slow = WriterSchema::new(parse(text)).unwrap();
            slow.compiled = None;
            out.insert(id, fast);
            out.insert(id + 10, slow);
        }
        out
    }

    /// The bytes of one record, framed with `id` instead.
    fn reframed(bytes: &[u8], id: u32) -> Vec<u8> {
        let mut out = bytes.to_vec();
        out[1..5].copy_from_slice(&id.to_be_bytes());
        out
    }

    #[test]
    fn compiled_and_generic_readers_agree_on_every_record() {
        let schemas = prepared();
        let lookup = |id| schemas.get(&id);
        let (key_schema, value_schema) = (
            Schema::parse_str(KEY).unwrap(),
            Schema::parse_str(ENVELOPE).unwrap(),
        );
        let mut d = Draw(7);
        for n in 0..500 {
            let key = framed(
                1,
                &key_schema,
                Avro::Record(vec![("id".into(), Avro::Int(n))]),
            );
            let value = framed(2, &value_schema, envelope(&mut d));
            let fast = decode_avro(Some(&key), Some(&value), &lookup);
            let slow = decode_avro(
                Some(&reframed(&key, 11)),
                Some(&reframed(&value, 12)),
                &lookup,
            );
            assert!(fast.is_ok(), "record {n}: {fast:?}");
            assert_eq!(fast, slow, "record {n}");
            if let Ok(super::super::ChangeRecord::Change(change)) = &fast {
                let row = change.after.as_ref().or(change.before.as_ref()).unwrap();
                assert!(matches!(row["words"], Cell::List(_)), "{row:?}");
                assert!(
                    matches!(row["scores"], Cell::List(_) | Cell::Null),
                    "{row:?}"
                );
                assert_eq!(change.columns[13].1, "array<int>");
            }
        }
    }

    #[test]
    fn compiled_and_generic_readers_refuse_the_same_damaged_records() {
        let schemas = prepared();
        let lookup = |id| schemas.get(&id);
        let value_schema = Schema::parse_str(ENVELOPE).unwrap();
        let mut d = Draw(11);
        let mut refused = 0;
        for n in 0..60 {
            let value = framed(2, &value_schema, envelope(&mut d));
            // Every truncation, and bytes overwritten at random.
            let mut damaged: Vec<Vec<u8>> = (5..value.len()).map(|l| value[..l].to_vec()).collect();
            for _ in 0..40 {
                let mut bytes = value.clone();
                let at = 5 + d.below((bytes.len() - 5) as u64) as usize;
                bytes[at] = d.below(256) as u8;
                damaged.push(bytes);
            }
            for bytes in damaged {
                let fast = decode_avro(None, Some(&bytes), &lookup);
                let slow = decode_avro(None, Some(&reframed(&bytes, 12)), &lookup);
                match (&fast, &slow) {
                    (Ok(fast), Ok(slow)) => assert_eq!(fast, slow, "record {n}"),
                    (Err(_), Err(_)) => refused += 1,
                    // apache_avro reads a union, string or boolean cut off
                    // by the end of the input as null; the compiled
                    // reader refuses the record (it is junk, not a null).
                    (Err(DecodeError::Avro { reason, .. }), Ok(_))
                        if reason.contains("end of input") =>
                    {
                        refused += 1;
                    }
                    _ => panic!("record {n}: compiled {fast:?}, generic {slow:?}"),
                }
            }
        }
        assert!(refused > 1000, "damage was refused {refused} times");
    }

    #[test]
    fn schemas_outside_the_compiled_shapes_take_the_generic_path() {
        let nested = r#"{"type":"record","name":"Envelope","fields":[
          {"name":"after","type":["null",{"type":"record","name":"V","fields":[
            {"name":"tags","type":{"type":"map","values":"string"}}]}]},
          {"name":"source","type":{"type":"record","name":"S","fields":[{"name":"lsn","type":"long"}]}},
          {"name":"op","type":"string"}]}"#;
        let uuid = r#"{"type":"record","name":"K","fields":[{"name":"id","type":{"type":"string","logicalType":"uuid"}}]}"#;
        for text in [nested, uuid] {
            let schema = WriterSchema::new(Schema::parse_str(text).unwrap()).unwrap();
            assert!(schema.compiled.is_none(), "{text}");
        }
    }
}
