//! `duplicate N%`: from the moment it fires until its phase ends, N% of the
//! change events are sent again, as producer retries after lost
//! acknowledgements would — each copy lands later in the partition than its
//! original, after newer changes. Which events are copied is drawn from the
//! seed.

use std::time::{Duration, Instant};

use lossproof_lang::plan::ArgValue;
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{RngCore as _, SeedableRng as _};
use rdkafka::Message as _;
use rdkafka::consumer::{BaseConsumer, Consumer as _};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer as _};
use rdkafka::{Offset, TopicPartitionList};

use super::{Fired, Strike};
use crate::error::Error;
use crate::seed::Seed;

pub(super) async fn duplicate(seed: &Seed<'_>, strike: &Strike<'_>) -> Fired {
    let share = match strike.action.args.get("share") {
        Some(ArgValue::Percent(p)) => *p,
        other => {
            return Err(Error::Unsupported(format!(
                "`{}` has no share ({other:?})",
                strike.action.text
            )));
        }
    };
    let topics = lossproof_consumers::topics(&seed.names, &seed.workload);
    let mut rng = ChaCha8Rng::seed_from_u64(seed.number);
    rng.set_stream(strike.occurrence as u64);
    let until = strike.phase_end;
    let kafka = seed.endpoints.kafka.clone();
    let alive = seed.alive();
    // A thread of its own (the Kafka clients block) until the phase ends
    // (bounded by it), or the seed ends first; the fault has fired once it
    // reads from the topics' ends.
    let (started, reading) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let clients = from_the_end(&kafka, &topics);
        let (reader, producer) = match clients {
            Ok(clients) => {
                let _ = started.send(Ok(()));
                clients
            }
            Err(e) => {
                let _ = started.send(Err(e));
                return;
            }
        };
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
    reading
        .await
        .map_err(|_| Error::Internal("the duplicating thread ended before it started"))??;
    Ok(format!(
        "re-sending {share}% of the change events until the phase ends"
    ))
}

/// A reader of `topics` from their current ends (every record that
/// arrives from now on is a candidate), and a producer.
fn from_the_end(
    kafka: &lossproof_runtime::profile::Kafka,
    topics: &[String],
) -> Result<(BaseConsumer, BaseProducer), Error> {
    let reader: BaseConsumer = kafka
        .client_config()
        .set("group.id", "lossproof-duplicate")
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .create()
        .map_err(Error::kafka("kafka client"))?;
    let producer: BaseProducer = kafka
        .client_config()
        .create()
        .map_err(Error::kafka("kafka producer"))?;
    let mut from = TopicPartitionList::new();
    for topic in topics {
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
    Ok((reader, producer))
}
