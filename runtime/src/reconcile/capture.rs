//! What capture lost: the keys whose last source change never reached
//! their topic (docs/run.md, "Capture loss").
//!
//! The source's history (`lossproof_history`, [`super::source`]) holds
//! every change with the transaction that made it, written by the source
//! itself; every Debezium change event carries its transaction
//! (`source.txId`). A key some consumer got wrong whose LAST change has no
//! event for that key and transaction in the table's topic was never
//! delivered: no consumer could have it right, so it is charged to
//! capture, not to the consumers.
//!
//! A snapshot read (the connector's initial snapshot, or a recreated
//! connector's) carries the snapshot's transaction, not the writer's: it
//! delivers the key's last change when that change committed before the
//! snapshot's position (the read's `source.lsn`), by the commit LSNs the
//! source's own logical decoding gives ([`super::source::commit_order`]; a
//! change committed before lossproof started following is before every
//! snapshot). Only what is certain is charged to capture: every key of a
//! table whose key columns are not integers or text is left to the
//! consumers (their events' keys are not rendered here).

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use rdkafka::consumer::{Consumer as _, StreamConsumer};
use rdkafka::message::Message as _;
use rdkafka::{Offset, TopicPartitionList};

use super::canonical::{self, Kind};
use super::error::Error;
use super::source::{self, SourceTable};
use crate::change_event::{self, Cell, ChangeRecord, Schemas};

/// A key whose last source change never reached its topic.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Lost {
    pub table: String,
    /// Canonical primary key (`id=7`), as in the `diff` table.
    pub key: String,
    /// The source transaction of the lost change.
    pub xid: i64,
    /// The lost change deleted the key.
    pub deleted: bool,
}

/// Where the capture check reads.
pub struct Topics<'a> {
    pub kafka: &'a crate::profile::Kafka,
    pub registry: &'a crate::profile::Http,
    /// Each table with its topic.
    pub tables: &'a [(SourceTable, String)],
}

/// Source changes capture never delivered: (table, key, transaction).
pub type Undelivered = HashSet<(String, String, i64)>;

/// Keys' last source changes: (table, key) → transaction.
pub type LastChange = HashMap<(String, String), i64>;

/// What the capture check found.
#[derive(Debug, Default)]
pub struct Capture {
    /// The keys of `wanted` whose last source change never reached the
    /// topic, in table and key order.
    pub lost: Vec<Lost>,
    /// When any was: every source change (table, key, transaction) of any
    /// key that never reached the topic, earlier changes of keys whose last
    /// one arrived included (what the snapshot check leaves out of the
    /// source's history).
    pub undelivered: Undelivered,
    /// Every key of `wanted` with a source change: (table, key) → the
    /// transaction of its last change (what blame times the key by).
    pub last_change: LastChange,
}

/// The keys of `wanted` (table → keys) whose last source change has no
/// change event in the table's topic, and when there are some, or when
/// `every_key` asks for it, every change of any key that has none.
/// `commits`: each followed transaction's commit LSN
/// ([`super::source::commit_order`]). Each topic is read from its start to
/// its end now (twice when something was lost and not `every_key`), within
/// `limit` in all.
///
/// `every_key` is for the snapshot check: a change capture lost in the
/// middle of a key's history (a recreated connector resuming past a
/// transaction whose key was changed again later) leaves no damage at the
/// end, but every lake state in between shows it.
///
/// # Errors
/// When the history or a topic cannot be read (within `limit`).
#[allow(clippy::implicit_hasher)] // the reconciler's own maps
pub async fn check(
    client: &tokio_postgres::Client,
    topics: &Topics<'_>,
    commits: &HashMap<i64, u64>,
    wanted: &HashMap<String, HashSet<String>>,
    every_key: bool,
    limit: Duration,
) -> Result<Capture, Error> {
    let mut reader = Reader {
        kafka: topics.kafka,
        schemas: Schemas::new(topics.registry),
        commits,
        deadline: Instant::now() + limit,
    };
    let mut out = Capture::default();
    for (table, topic) in topics.tables {
        let keys = wanted.get(&table.name).filter(|k| !k.is_empty());
        if keys.is_none() && !every_key {
            continue;
        }
        let read = if every_key { None } else { keys };
        for (key, changes) in reader.changes(client, table, topic, read).await? {
            if every_key {
                for (xid, _, delivered) in &changes {
                    if !delivered {
                        out.undelivered
                            .insert((table.name.clone(), key.clone(), *xid));
                    }
                }
            }
            if !keys.is_some_and(|keys| keys.contains(&key)) {
                continue;
            }
            let Some(&(xid, deleted, delivered)) = changes.last() else {
                continue;
            };
            out.last_change
                .insert((table.name.clone(), key.clone()), xid);
            if !delivered {
                out.lost.push(Lost {
                    table: table.name.clone(),
                    key,
                    xid,
                    deleted,
                });
            }
        }
    }
    out.lost
        .sort_by(|a, b| (&a.table, &a.key).cmp(&(&b.table, &b.key)));
    if out.lost.is_empty() || every_key {
        return Ok(out);
    }
    for (table, topic) in topics.tables {
        for (key, changes) in reader.changes(client, table, topic, None).await? {
            for (xid, _, delivered) in changes {
                if !delivered {
                    out.undelivered
                        .insert((table.name.clone(), key.clone(), xid));
                }
            }
        }
    }
    Ok(out)
}

/// Reads each table's history and topic for [`check`].
struct Reader<'a> {
    kafka: &'a crate::profile::Kafka,
    schemas: Schemas,
    commits: &'a HashMap<i64, u64>,
    deadline: Instant,
}

impl Reader<'_> {
    /// Each key's source changes (of `keys`, or every key): (transaction,
    /// deleted, delivered), in the order written. Nothing for a table whose
    /// key [`key_text`] cannot render.
    async fn changes(
        &mut self,
        client: &tokio_postgres::Client,
        table: &SourceTable,
        topic: &str,
        keys: Option<&HashSet<String>>,
    ) -> Result<HashMap<String, Vec<(i64, bool, bool)>>, Error> {
        let Some(key_columns) = renderable_key(table)? else {
            return Ok(HashMap::new());
        };
        let mut changes: HashMap<String, Vec<(i64, bool)>> = HashMap::new();
        for (xid, key, row) in source::versions(client, table, &[], None, |_| ()).await? {
            if keys.is_none_or(|k| k.contains(&key)) {
                changes.entry(key).or_default().push((xid, row.is_none()));
            }
        }
        let delivered = delivered(self, topic, &key_columns, keys).await?;
        Ok(changes
            .into_iter()
            .map(|(key, changes)| {
                let arrived = delivered.get(&key);
                let changes = changes
                    .into_iter()
                    .map(|(xid, deleted)| {
                        let committed = self.commits.get(&xid).copied().unwrap_or(0);
                        (
                            xid,
                            deleted,
                            arrived.is_some_and(|d| d.holds(xid, committed)),
                        )
                    })
                    .collect();
                (key, changes)
            })
            .collect())
    }
}

/// The key columns of `table` in key order, if every one is an integer or
/// text (the kinds whose event values [`key_text`] renders); `None`
/// otherwise.
fn renderable_key(table: &SourceTable) -> Result<Option<Vec<(String, Kind)>>, Error> {
    let columns = table.key_columns()?;
    Ok(columns
        .iter()
        .all(|(_, _, kind)| matches!(kind, Kind::Int | Kind::Text))
        .then(|| {
            columns
                .iter()
                .map(|(_, name, kind)| ((*name).to_owned(), *kind))
                .collect()
        }))
}

/// The canonical key ([`canonical::join`]) of a change event's key, if
/// each column is there with the kind expected.
fn key_text(columns: &[(String, Kind)], key: &change_event::Row) -> Option<String> {
    let values: Option<Vec<(&str, String)>> = columns
        .iter()
        .map(|(name, kind)| {
            let value = match (kind, key.get(name)?) {
                (Kind::Int, Cell::Int(v)) => v.to_string(),
                (Kind::Text, Cell::Text(v)) => canonical::quoted(v),
                _ => return None,
            };
            Some((name.as_str(), value))
        })
        .collect();
    values.map(|v| canonical::join(&v))
}

/// What a topic delivered of one key.
#[derive(Debug, Default, PartialEq, Eq)]
struct Delivered {
    /// The transactions of its change events (snapshot reads aside).
    transactions: HashSet<i64>,
    /// The latest position (`source.lsn`) of a snapshot read of it.
    read_at: Option<u64>,
}

impl Delivered {
    /// Whether the change of transaction `xid`, committed at LSN
    /// `committed`, reached the topic: an event of its own, or a snapshot
    /// read taken after it (which shows it or a later version).
    fn holds(&self, xid: i64, committed: u64) -> bool {
        self.transactions.contains(&xid) || self.read_at.is_some_and(|at| at >= committed)
    }
}

/// What `topic` delivered of each of `keys` (or of every key), read from
/// its start to its end now.
async fn delivered(
    reader: &mut Reader<'_>,
    topic: &str,
    key_columns: &[(String, Kind)],
    keys: Option<&HashSet<String>>,
) -> Result<HashMap<String, Delivered>, Error> {
    let (kafka, deadline) = (reader.kafka, reader.deadline);
    let schemas = &mut reader.schemas;
    let unreadable = |what: String| Error::Topic(format!("{topic}: {what}"));
    let ends = super::gate::ends(kafka, topic)
        .await
        .map_err(|e| unreadable(e.to_string()))?;
    let mut remaining: HashMap<i32, i64> = ends.into_iter().filter(|(_, end)| *end > 0).collect();
    let mut out: HashMap<String, Delivered> = HashMap::new();
    if remaining.is_empty() {
        return Ok(out);
    }
    let consumer: StreamConsumer = kafka
        .client_config()
        .set("group.id", "lossproof-capture-check")
        .set("enable.auto.commit", "false")
        .create()
        .map_err(|e| unreadable(format!("kafka client: {e}")))?;
    let mut assignment = TopicPartitionList::new();
    for partition in remaining.keys() {
        assignment
            .add_partition_offset(topic, *partition, Offset::Beginning)
            .map_err(|e| unreadable(e.to_string()))?;
    }
    consumer
        .assign(&assignment)
        .map_err(|e| unreadable(format!("assign: {e}")))?;
    while !remaining.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        let message = match tokio::time::timeout(left, consumer.recv()).await {
            Err(_) => return Err(unreadable("not read to its end in time".to_owned())),
            Ok(Err(e)) => return Err(unreadable(e.to_string())),
            Ok(Ok(message)) => message.detach(),
        };
        if remaining
            .get(&message.partition())
            .is_some_and(|end| message.offset() >= end - 1)
        {
            remaining.remove(&message.partition());
        }
        // Junk and records of other schemas decode to nothing: skipped.
        if schemas
            .fetch_for(message.key(), message.payload())
            .await
            .is_err()
        {
            continue;
        }
        let Ok(ChangeRecord::Change(change)) =
            change_event::decode_avro(message.key(), message.payload(), &|id| schemas.lookup(id))
        else {
            continue;
        };
        let Some(key) =
            key_text(key_columns, &change.key).filter(|k| keys.is_none_or(|keys| keys.contains(k)))
        else {
            continue;
        };
        let arrived = out.entry(key).or_default();
        if change.snapshot || change.op == change_event::ChangeOp::Read {
            arrived.read_at = arrived.read_at.max(Some(change.lsn));
        } else {
            arrived.transactions.extend(change.tx_id);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_arrived_by_its_own_event_or_a_later_snapshot_read() {
        let streamed = Delivered {
            transactions: HashSet::from([7]),
            read_at: None,
        };
        assert!(streamed.holds(7, 500));
        assert!(!streamed.holds(8, 400), "another transaction's change");
        let read = Delivered {
            transactions: HashSet::new(),
            read_at: Some(1000),
        };
        assert!(read.holds(8, 1000), "committed at the read's position");
        assert!(read.holds(8, 0), "committed before lossproof followed");
        assert!(!read.holds(9, 1001), "committed after the read");
    }

    #[test]
    fn an_event_key_renders_as_the_diff_key() {
        let columns = vec![
            ("order_id".to_owned(), Kind::Int),
            ("sku".to_owned(), Kind::Text),
        ];
        let key: change_event::Row = [
            ("order_id".to_owned(), Cell::Int(7)),
            ("sku".to_owned(), Cell::Text("a\"b".to_owned())),
        ]
        .into_iter()
        .collect();
        assert_eq!(
            key_text(&columns, &key).as_deref(),
            Some(r#"order_id=7, sku="a\"b""#)
        );
        let wrong_kind: change_event::Row = [("order_id".to_owned(), Cell::Text("7".to_owned()))]
            .into_iter()
            .collect();
        assert_eq!(key_text(&columns[..1], &wrong_kind), None);
    }
}
