//! The set-up every run, test and benchmark shares: the workload's tables
//! created afresh in the source, and a Debezium connector capturing them
//! under a run's names.

use std::time::Duration;

use lossproof_lang::vocabulary::WorkloadSig;
use lossproof_runtime::debezium::{self, CaptureNames, Encoding};
use lossproof_runtime::profile::Kafka;
use lossproof_runtime::{ConnectClient, Endpoints};

use crate::error::{Error, Result};

/// How a run captures its source.
#[derive(Debug, Clone, Copy)]
pub struct Capture {
    /// `set replica_identity full`.
    pub replica_identity_full: bool,
    /// Partitions per change topic.
    pub partitions: i32,
    /// `preload N` (the `orders` workload): `(orders, seed)`.
    pub preload: Option<(u64, u64)>,
    /// How long the connector may take to start running.
    pub limit: Duration,
}

impl Capture {
    /// One partition per topic, no preload, REPLICA IDENTITY DEFAULT.
    #[must_use]
    pub fn plain(limit: Duration) -> Self {
        Self {
            replica_identity_full: false,
            partitions: 1,
            preload: None,
            limit,
        }
    }
}

/// What [`capture`] set up.
#[derive(Debug, Clone)]
pub struct Captured {
    /// The connector's configuration (what `recreate connector` puts back).
    pub config: serde_json::Value,
    pub preloaded: Option<super::preload::Preloaded>,
}

/// Re-create `workload`'s tables (and the reconciler's history table) in
/// the source, preload them when asked ([`super::preload`]), create the
/// change topics with `partitions` partitions each (Debezium keys every
/// record by primary key, so one key stays in one partition, in order),
/// then start a connector capturing them as `names` and wait (bounded by
/// `limit`) until it runs: its initial snapshot carries the preloaded rows.
pub async fn capture(
    source: &tokio_postgres::Client,
    connect: &ConnectClient,
    endpoints: &Endpoints,
    names: &CaptureNames,
    workload: &WorkloadSig,
    how: &Capture,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<Captured> {
    source
        .batch_execute(&super::ddl(workload, how.replica_identity_full))
        .await
        .map_err(Error::pg("create the source tables"))?;
    let preloaded = match how.preload {
        Some((orders, seed)) => Some(super::preload(source, orders, seed, progress).await?),
        None => None,
    };
    create_topics(
        &endpoints.kafka,
        &lossproof_consumers::topics(names, workload),
        how.partitions,
    )
    .await?;
    // One partition: the transactions in commit order.
    create_topics(&endpoints.kafka, &[names.transaction_topic()], 1).await?;
    let tables: Vec<String> = workload
        .tables
        .iter()
        .map(|t| format!("public.{}", t.name))
        .collect();
    let tables: Vec<&str> = tables.iter().map(String::as_str).collect();
    let config = debezium::config(names, endpoints, &names.database, &tables, Encoding::Avro);
    debezium::start(connect, names, &config, source, how.limit).await?;
    Ok(Captured { config, preloaded })
}

/// Create `topics` with `partitions` partitions each (one replica); a topic
/// that exists already is an error, since its partitions would be unknown.
async fn create_topics(kafka: &Kafka, topics: &[String], partitions: i32) -> Result<()> {
    use rdkafka::admin::{NewTopic, TopicReplication};
    let admin = admin(kafka)?;
    let new: Vec<NewTopic> = topics
        .iter()
        .map(|t| NewTopic::new(t, partitions, TopicReplication::Fixed(1)))
        .collect();
    let results = admin
        .create_topics(&new, &options())
        .await
        .map_err(Error::kafka("create the change topics"))?;
    for result in results {
        if let Err((topic, code)) = result {
            return Err(Error::kafka(format!("create topic {topic}"))(
                rdkafka::error::KafkaError::AdminOp(code),
            ));
        }
    }
    Ok(())
}

/// Delete the consumer groups `groups` (absent ones are no error).
pub(crate) async fn delete_groups(kafka: &Kafka, groups: &[String]) -> Result<()> {
    if groups.is_empty() {
        return Ok(());
    }
    let refs: Vec<&str> = groups.iter().map(String::as_str).collect();
    admin(kafka)?
        .delete_groups(&refs, &options())
        .await
        .map_err(Error::kafka("delete consumer groups"))?;
    Ok(())
}

/// Every topic's name (a blocking metadata request, at most 5 s).
pub(crate) async fn topic_names(kafka: &Kafka) -> Result<Vec<String>> {
    let admin = admin(kafka)?;
    // The client's metadata call blocks: on the blocking pool.
    tokio::task::spawn_blocking(move || {
        let metadata = admin
            .inner()
            .fetch_metadata(None, Duration::from_secs(5))
            .map_err(Error::kafka("list topics"))?;
        Ok(metadata
            .topics()
            .iter()
            .map(|t| t.name().to_owned())
            .collect())
    })
    .await?
}

/// Delete every topic of the capture with topic prefix `prefix`
/// ([`lossproof_runtime::debezium::owned_by`]: its heartbeat topic too).
pub(crate) async fn delete_topics(kafka: &Kafka, prefix: &str) -> Result<()> {
    let admin = admin(kafka)?;
    let topics: Vec<String> = topic_names(kafka)
        .await?
        .into_iter()
        .filter(|t| lossproof_runtime::debezium::owned_by(prefix, t))
        .collect();
    if topics.is_empty() {
        return Ok(());
    }
    let refs: Vec<&str> = topics.iter().map(String::as_str).collect();
    admin
        .delete_topics(&refs, &options())
        .await
        .map_err(Error::kafka("delete topics"))?;
    Ok(())
}

type Admin = rdkafka::admin::AdminClient<rdkafka::client::DefaultClientContext>;

/// An admin client of `kafka`.
fn admin(kafka: &Kafka) -> Result<Admin> {
    kafka
        .client_config()
        .create()
        .map_err(Error::kafka("kafka admin"))
}

/// Admin operations wait at most 10 s for the broker.
fn options() -> rdkafka::admin::AdminOptions {
    rdkafka::admin::AdminOptions::new().operation_timeout(Some(Duration::from_secs(10)))
}
