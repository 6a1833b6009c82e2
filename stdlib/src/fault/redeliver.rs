//! `redeliver from start [N times]`: every consumer's group is rewound to
//! the beginning of every topic, so the whole stream is delivered again.

use std::time::Duration;

use lossproof_lang::plan::PlannedAction;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer as _};
use rdkafka::{Offset, TopicPartitionList};

use super::{Ctx, Fired, count_arg};
use crate::error::Error;

/// For each consumer: stop it gracefully (it leaves its group), commit
/// offset 0 for every topic as its group, start it again.
pub async fn from_start(ctx: &Ctx<'_>, action: &PlannedAction) -> Fired {
    let times = count_arg(action, "times").unwrap_or(1);
    let topics = crate::consumer::topics(ctx.names, ctx.workload);
    let mut consumers = ctx.consumers.lock().await;
    for round in 0..times {
        for (name, consumer) in consumers.iter_mut() {
            consumer.terminate(Duration::from_secs(20));
            let group = crate::consumer::group(name, ctx.names);
            rewind(&ctx.endpoints.kafka, &group, &topics)?;
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
