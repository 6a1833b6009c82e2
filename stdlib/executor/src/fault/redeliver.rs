//! `redeliver from start [N times]`: every consumer's group is rewound to
//! the beginning of every topic, so the whole stream is delivered again.

use std::time::Duration;

use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer as _};
use rdkafka::{Offset, TopicPartitionList};

use super::{Fired, Strike, count_arg};
use crate::error::Error;
use crate::seed::Seed;

/// For each consumer: stop it gracefully (it leaves its group), commit
/// offset 0 for every topic as its group, start it again.
pub(super) async fn from_start(seed: &Seed<'_>, strike: &Strike<'_>) -> Fired {
    let times = count_arg(strike.action, "times").unwrap_or(1);
    let topics = lossproof_consumers::topics(&seed.names, &seed.workload);
    let mut consumers = seed.consumers.lock().await;
    for round in 0..times {
        for (name, consumer) in consumers.iter_mut() {
            consumer.terminate(Duration::from_secs(20)).await;
            let group = lossproof_consumers::group(name, &seed.names);
            // The Kafka client's calls block: on the blocking pool.
            let (kafka, topics) = (seed.endpoints.kafka.clone(), topics.clone());
            tokio::task::spawn_blocking(move || rewind(&kafka, &group, &topics)).await??;
            consumer
                .start()
                .map_err(Error::io(format!("restart consumer {name}")))?;
        }
        if round + 1 < times {
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    }
    Ok(format!(
        "rewound {} to the start of {} topics, {times} time(s)",
        consumers.keys().cloned().collect::<Vec<_>>().join(", "),
        topics.len()
    ))
}

fn rewind(
    kafka: &lossproof_runtime::profile::Kafka,
    group: &str,
    topics: &[String],
) -> Result<(), Error> {
    let client: BaseConsumer = kafka
        .client_config()
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .create()
        .map_err(Error::kafka("kafka client"))?;
    let mut list = TopicPartitionList::new();
    for topic in topics {
        for partition in lossproof_runtime::reconcile::gate::partitions_of(&client, topic)
            .map_err(Error::kafka(format!("partitions of {topic}")))?
        {
            list.add_partition_offset(topic, partition, Offset::Offset(0))
                .map_err(Error::kafka("rewind"))?;
        }
    }
    client
        .commit(&list, CommitMode::Sync)
        .map_err(Error::kafka(format!("rewind group {group}")))
}
