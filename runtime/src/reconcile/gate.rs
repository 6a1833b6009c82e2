//! The gate before any score: a run is reconciled only when it is provably
//! drained and alive. Otherwise it is INVALID, with the reason — never a
//! count (a dead connector looks exactly like a drained stream; FINDINGS.md).
//!
//! Drained means, all at once:
//! 1. the connector and its task are RUNNING;
//! 2. the replication slot confirmed the source's final LSN (captured after
//!    the workload's last write);
//! 3. every consumer group's committed position is at the end of every topic;
//!    for a consumer that keeps its offsets in the lake, the offsets its
//!    latest commit stored are at the end too (the group is only a mirror).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer as _};
use rdkafka::{Offset, TopicPartitionList};

use crate::ConnectClient;
use crate::debezium::{self, CaptureNames, NotDrained};

/// A consumer whose position the gate checks.
#[derive(Debug, Clone)]
pub struct ConsumerPosition {
    pub consumer: String,
    pub group: String,
    pub topics: Vec<String>,
    /// `(namespace, table)` whose latest snapshots' summary stores the
    /// consumer's offsets as `lossproof.offset.<topic>.<partition>` (the next
    /// offset to read), if it keeps them in the lake.
    pub lake_offsets: Option<(String, String)>,
    /// The replication slot of a consumer that reads the source itself
    /// (no topics, no group): drained when it confirmed the final LSN.
    pub slot: Option<String>,
}

/// Summary property prefix of offsets stored in the lake, see
/// [`ConsumerPosition::lake_offsets`].
pub const OFFSET_PROPERTY_PREFIX: &str = "lossproof.offset.";

/// Why a run cannot be scored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Invalid {
    #[error("not drained: {0}")]
    NotDrained(NotDrained),
    #[error("consumer {consumer} is behind on {topic}: committed {committed}, topic end {end}")]
    ConsumerBehind {
        consumer: String,
        topic: String,
        committed: i64,
        end: i64,
    },
    #[error(
        "consumer {consumer}'s lake is behind on {topic}: its commits stored offset {stored}, topic end {end}"
    )]
    LakeBehind {
        consumer: String,
        topic: String,
        stored: i64,
        end: i64,
    },
    #[error(
        "consumer {consumer}'s replication slot {slot} is behind: confirmed {confirmed}, the source's final LSN {target}"
    )]
    SlotBehind {
        consumer: String,
        slot: String,
        confirmed: String,
        target: String,
    },
    #[error(
        "{consumer} keeps no Kafka offsets in its lake: nothing says which of its snapshots covers the source's"
    )]
    NotLive { consumer: String },
    #[error("cannot check: {0}")]
    Unreachable(String),
}

/// Wait (bounded by `limit`) until the run is drained; the error says why not.
#[allow(clippy::too_many_arguments)] // the run's names, clients and positions, each once
pub async fn wait_scoreable(
    connect: &ConnectClient,
    names: &CaptureNames,
    source: &tokio_postgres::Client,
    final_lsn: u64,
    kafka: &crate::profile::Kafka,
    consumers: &[ConsumerPosition],
    lake: Option<&crate::Lake>,
    limit: Duration,
) -> Result<(), Invalid> {
    let deadline = Instant::now() + limit;
    debezium::wait_drained(connect, names, source, final_lsn, limit)
        .await
        .map_err(|e| Invalid::Unreachable(e.to_string()))?
        .map_err(Invalid::NotDrained)?;
    loop {
        let mut behind = slot_behind(source, consumers, final_lsn).await?;
        if behind.is_none() {
            behind = self::behind(kafka, consumers).await?;
        }
        if behind.is_none()
            && let Some(lake) = lake
        {
            behind = lake_behind(lake, consumers, &topic_ends(kafka, consumers).await?).await?;
        }
        match behind {
            None => break,
            Some(invalid) if Instant::now() >= deadline => return Err(invalid),
            Some(_) => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
    // The connector could have died while the consumers caught up.
    debezium::drained_now(connect, names, source, final_lsn)
        .await
        .map_err(|e| Invalid::Unreachable(e.to_string()))?
        .map_err(Invalid::NotDrained)
}

/// The first consumer reading the source itself whose slot has not
/// confirmed `target` (the source's final LSN), if any.
async fn slot_behind(
    source: &tokio_postgres::Client,
    consumers: &[ConsumerPosition],
    target: u64,
) -> Result<Option<Invalid>, Invalid> {
    for c in consumers {
        let Some(slot) = &c.slot else { continue };
        let confirmed = source
            .query_opt(
                "SELECT (confirmed_flush_lsn - '0/0'::pg_lsn)::bigint FROM pg_replication_slots WHERE slot_name = $1",
                &[slot],
            )
            .await
            .map_err(|e| Invalid::Unreachable(format!("slot {slot}: {e}")))?
            .and_then(|row| row.get::<_, Option<i64>>(0))
            .and_then(|v| u64::try_from(v).ok())
            .unwrap_or(0);
        if confirmed < target {
            return Ok(Some(Invalid::SlotBehind {
                consumer: c.consumer.clone(),
                slot: slot.clone(),
                confirmed: debezium::show_lsn(confirmed),
                target: debezium::show_lsn(target),
            }));
        }
    }
    Ok(None)
}

/// Wait (bounded by `limit`) until every consumer's lake holds every
/// change committed before `lsn` (a live source's snapshot, see
/// [`super::live`]): the connector is running and the slot confirmed `lsn`
/// (every such change is in Kafka), then the offsets each lake stores reach
/// the topics' ends of that moment. A consumer that keeps no offsets in its
/// lake cannot be placed against `lsn`: [`Invalid::NotLive`].
#[allow(clippy::too_many_arguments)] // the run's names, clients and positions, each once
pub async fn wait_covered(
    connect: &ConnectClient,
    names: &CaptureNames,
    source: &tokio_postgres::Client,
    lsn: u64,
    kafka: &crate::profile::Kafka,
    consumers: &[ConsumerPosition],
    lake: &crate::Lake,
    limit: Duration,
) -> Result<(), Invalid> {
    if let Some(c) = consumers.iter().find(|c| c.lake_offsets.is_none()) {
        return Err(Invalid::NotLive {
            consumer: c.consumer.clone(),
        });
    }
    let deadline = Instant::now() + limit;
    debezium::wait_drained(connect, names, source, lsn, limit)
        .await
        .map_err(|e| Invalid::Unreachable(e.to_string()))?
        .map_err(Invalid::NotDrained)?;
    // Past this moment's ends: every change up to `lsn`, and perhaps more.
    let ends = topic_ends(kafka, consumers).await?;
    loop {
        match lake_behind(lake, consumers, &ends).await? {
            None => return Ok(()),
            Some(invalid) if Instant::now() >= deadline => return Err(invalid),
            Some(_) => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
}

/// Every partition of the topics `consumers` read, with its end offset now.
async fn topic_ends(
    kafka: &crate::profile::Kafka,
    consumers: &[ConsumerPosition],
) -> Result<Ends, Invalid> {
    let mut out = Ends::new();
    for c in consumers.iter().filter(|c| c.lake_offsets.is_some()) {
        for topic in &c.topics {
            if out.keys().any(|(t, _)| t == topic) {
                continue;
            }
            for (partition, end) in ends(kafka, topic).await? {
                out.insert((topic.clone(), partition), end);
            }
        }
    }
    Ok(out)
}

/// (topic, partition) → end offset.
type Ends = HashMap<(String, i32), i64>;

/// The first consumer/topic whose offsets stored in the lake are short of
/// `ends`, if any.
async fn lake_behind(
    lake: &crate::Lake,
    consumers: &[ConsumerPosition],
    ends: &Ends,
) -> Result<Option<Invalid>, Invalid> {
    for c in consumers {
        let Some((namespace, table)) = &c.lake_offsets else {
            continue;
        };
        let ident = iceberg::TableIdent::new(
            iceberg::NamespaceIdent::new(namespace.clone()),
            table.clone(),
        );
        let table = iceberg::Catalog::load_table(lake.catalog(), &ident)
            .await
            .map_err(|e| Invalid::Unreachable(format!("{ident}: {e}")))?;
        let stored = stored_offsets(&table);
        for ((topic, partition), end) in ends.iter().filter(|((t, _), _)| c.topics.contains(t)) {
            let stored = stored
                .get(&(topic.clone(), *partition))
                .copied()
                .unwrap_or(0);
            if *end > 0 && stored < *end {
                return Ok(Some(Invalid::LakeBehind {
                    consumer: c.consumer.clone(),
                    topic: format!("{topic}[{partition}]"),
                    stored,
                    end: *end,
                }));
            }
        }
    }
    Ok(None)
}

/// The Kafka offsets a writer stored in `table`'s snapshots
/// (`lossproof.offset.<topic>.<partition>` = the next offset to read), the
/// latest of each along the current snapshot's ancestry, by (topic,
/// partition); a value that does not read as an offset is left out.
#[must_use]
pub fn stored_offsets(table: &iceberg::table::Table) -> HashMap<(String, i32), i64> {
    crate::lake::latest_properties(table, OFFSET_PROPERTY_PREFIX)
        .into_iter()
        .filter_map(|(key, value)| {
            let (topic, partition) = key.strip_prefix(OFFSET_PROPERTY_PREFIX)?.rsplit_once('.')?;
            Some((
                (topic.to_owned(), partition.parse().ok()?),
                value.parse().ok()?,
            ))
        })
        .collect()
}

/// The partitions of `topic` (as the broker's metadata has them now).
pub fn partitions_of<C: rdkafka::consumer::ConsumerContext>(
    client: &BaseConsumer<C>,
    topic: &str,
) -> Result<Vec<i32>, rdkafka::error::KafkaError> {
    let metadata = client.fetch_metadata(Some(topic), Duration::from_secs(5))?;
    Ok(metadata
        .topics()
        .iter()
        .filter(|t| t.name() == topic)
        .flat_map(|t| {
            t.partitions()
                .iter()
                .map(rdkafka::metadata::MetadataPartition::id)
        })
        .collect())
}

/// Each partition of `topic` with its end offset.
/// Each partition of `topic` with its end offset now.
pub async fn ends(kafka: &crate::profile::Kafka, topic: &str) -> Result<Vec<(i32, i64)>, Invalid> {
    let topic = topic.to_owned();
    let config = kafka.client_config();
    tokio::task::spawn_blocking(move || {
        let client: BaseConsumer = config
            .create()
            .map_err(|e| Invalid::Unreachable(format!("kafka client: {e}")))?;
        partitions_of(&client, &topic)
            .map_err(|e| Invalid::Unreachable(format!("partitions of {topic}: {e}")))?
            .into_iter()
            .map(|p| {
                client
                    .fetch_watermarks(&topic, p, Duration::from_secs(5))
                    .map(|(_, end)| (p, end))
                    .map_err(|e| Invalid::Unreachable(format!("end of {topic}[{p}]: {e}")))
            })
            .collect()
    })
    .await
    .map_err(|e| Invalid::Unreachable(e.to_string()))?
}

/// The first consumer/topic whose committed offset is short of the topic's
/// end, if any.
async fn behind(
    kafka: &crate::profile::Kafka,
    consumers: &[ConsumerPosition],
) -> Result<Option<Invalid>, Invalid> {
    let consumers = consumers.to_vec();
    let config = kafka.client_config();
    tokio::task::spawn_blocking(move || {
        for c in &consumers {
            let watcher: BaseConsumer = config
                .clone()
                .set("group.id", &c.group)
                .set("enable.auto.commit", "false")
                .create()
                .map_err(|e| Invalid::Unreachable(format!("kafka client: {e}")))?;
            for topic in &c.topics {
                for partition in partitions_of(&watcher, topic)
                    .map_err(|e| Invalid::Unreachable(format!("partitions of {topic}: {e}")))?
                {
                    let (_, end) = watcher
                        .fetch_watermarks(topic, partition, Duration::from_secs(5))
                        .map_err(|e| {
                            Invalid::Unreachable(format!("end of {topic}[{partition}]: {e}"))
                        })?;
                    let mut list = TopicPartitionList::new();
                    list.add_partition(topic, partition);
                    let committed = watcher
                        .committed_offsets(list, Duration::from_secs(5))
                        .map_err(|e| Invalid::Unreachable(format!("{}'s offsets: {e}", c.group)))?
                        .find_partition(topic, partition)
                        .map_or(-1, |p| match p.offset() {
                            Offset::Offset(o) => o,
                            _ => -1,
                        });
                    if end > 0 && committed < end {
                        return Ok(Some(Invalid::ConsumerBehind {
                            consumer: c.consumer.clone(),
                            topic: format!("{topic}[{partition}]"),
                            committed,
                            end,
                        }));
                    }
                }
            }
        }
        Ok(None)
    })
    .await
    .map_err(|e| Invalid::Unreachable(e.to_string()))?
}
