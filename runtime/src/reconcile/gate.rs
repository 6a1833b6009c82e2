//! The gate before any score: a run is reconciled only when it is provably
//! drained and alive. Otherwise it is INVALID, with the reason — never a
//! count (a dead connector looks exactly like a drained stream; FINDINGS.md).
//!
//! Drained means, all at once:
//! 1. the connector and its task are RUNNING;
//! 2. the replication slot confirmed the source's final LSN (captured after
//!    the workload's last write);
//! 3. every consumer group's committed position is at the end of every topic.

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
}

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
    #[error("cannot check: {0}")]
    Unreachable(String),
}

/// Wait (bounded by `limit`) until the run is drained; the error says why not.
pub async fn wait_scoreable(
    connect: &ConnectClient,
    names: &CaptureNames,
    source: &tokio_postgres::Client,
    final_lsn: u64,
    broker_port: u16,
    consumers: &[ConsumerPosition],
    limit: Duration,
) -> Result<(), Invalid> {
    let deadline = Instant::now() + limit;
    debezium::wait_drained(connect, names, source, final_lsn, limit)
        .await
        .map_err(|e| Invalid::Unreachable(e.to_string()))?
        .map_err(Invalid::NotDrained)?;
    loop {
        let behind = behind(broker_port, consumers).await?;
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

/// The first consumer/topic whose committed offset is short of the topic's
/// end, if any.
async fn behind(
    broker_port: u16,
    consumers: &[ConsumerPosition],
) -> Result<Option<Invalid>, Invalid> {
    let consumers = consumers.to_vec();
    tokio::task::spawn_blocking(move || {
        for c in &consumers {
            let watcher: BaseConsumer = rdkafka::ClientConfig::new()
                .set("bootstrap.servers", format!("127.0.0.1:{broker_port}"))
                .set("group.id", &c.group)
                .set("enable.auto.commit", "false")
                .create()
                .map_err(|e| Invalid::Unreachable(format!("kafka client: {e}")))?;
            for topic in &c.topics {
                let (_, end) = watcher
                    .fetch_watermarks(topic, 0, Duration::from_secs(5))
                    .map_err(|e| Invalid::Unreachable(format!("end of {topic}: {e}")))?;
                let mut list = TopicPartitionList::new();
                list.add_partition(topic, 0);
                let committed = watcher
                    .committed_offsets(list, Duration::from_secs(5))
                    .map_err(|e| Invalid::Unreachable(format!("{}'s offsets: {e}", c.group)))?
                    .find_partition(topic, 0)
                    .map_or(-1, |p| match p.offset() {
                        Offset::Offset(o) => o,
                        _ => -1,
                    });
                if end > 0 && committed < end {
                    return Ok(Some(Invalid::ConsumerBehind {
                        consumer: c.consumer.clone(),
                        topic: topic.clone(),
                        committed,
                        end,
                    }));
                }
            }
        }
        Ok(None)
    })
    .await
    .map_err(|e| Invalid::Unreachable(e.to_string()))?
}
