//! `duplicate N%`: from the moment it fires until its phase ends, N% of the
//! change events are sent again, as producer retries after lost
//! acknowledgements would — each copy lands later in the partition than its
//! original, after newer changes. Which events are copied is drawn from the
//! seed.

use std::time::{Duration, Instant};

use lossproof_lang::plan::{ArgValue, PlannedAction};
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{RngCore as _, SeedableRng as _};
use rdkafka::Message as _;
use rdkafka::consumer::{BaseConsumer, Consumer as _};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer as _};
use rdkafka::{Offset, TopicPartitionList};

use super::{Ctx, Fired};
use crate::error::Error;

#[allow(clippy::unused_async)] // every fault has the registry's async signature
pub async fn duplicate(ctx: &Ctx<'_>, action: &PlannedAction) -> Fired {
    let share = match action.args.get("share") {
        Some(ArgValue::Percent(p)) => *p,
        other => {
            return Err(Error::Unsupported(format!(
                "`{}` has no share ({other:?})",
                action.text
            )));
        }
    };
    let topics = crate::consumer::topics(ctx.names, ctx.workload);
    let mut rng = ChaCha8Rng::seed_from_u64(ctx.seed);
    rng.set_stream(ctx.occurrence as u64);
    let until = ctx.phase_end;
    let reader: BaseConsumer = ctx
        .endpoints
        .kafka
        .client_config()
        .set("group.id", "lossproof-duplicate")
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .create()
        .map_err(Error::kafka("kafka client"))?;
    let producer: BaseProducer = ctx
        .endpoints
        .kafka
        .client_config()
        .create()
        .map_err(Error::kafka("kafka producer"))?;
    // From now on: every record that arrives from here is a candidate.
    let mut from = TopicPartitionList::new();
    for topic in &topics {
        for partition in lossproof_runtime::reconcile::gate::partitions_of(&reader, topic)
            .map_err(Error::kafka(format!("partitions of {topic}")))?
        {
            let start = reader
                .fetch_watermarks(topic, partition, Duration::from_secs(5))
                .map_or(Offset::Beginning, |(_, high)| Offset::Offset(high));
            from.add_partition_offset(topic, partition, start)
                .map_err(Error::kafka("assign"))?;
        }
    }
    reader.assign(&from).map_err(Error::kafka("assign"))?;
    // A thread of its own until the phase ends (bounded by it), or the
    // seed ends first.
    let alive = ctx.seed_alive.clone();
    std::thread::spawn(move || {
        while Instant::now() < until && alive.strong_count() > 0 {
            let Some(Ok(message)) = reader.poll(Duration::from_millis(200)) else {
                continue;
            };
            if (rng.next_u64() % 10_000) as f64 / 100.0 >= share {
                continue;
            }
            // Into the original's partition, as a producer's retry lands.
            let mut record =
                BaseRecord::<[u8], [u8]>::to(message.topic()).partition(message.partition());
            if let Some(key) = message.key() {
                record = record.key(key);
            }
            if let Some(value) = message.payload() {
                record = record.payload(value);
            }
            let _ = producer.send(record);
            producer.poll(Duration::ZERO);
        }
        let _ = producer.flush(Duration::from_secs(10));
    });
    Ok(format!(
        "re-sending {share}% of the change events until the phase ends"
    ))
}
