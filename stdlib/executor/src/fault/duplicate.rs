//! `duplicate N%`: from the moment it fires until its phase ends, N% of the
//! records that reach the change topics are sent again, as producer retries
//! after lost acknowledgements would — each copy lands later in the
//! partition than its original, after newer changes. Which records are
//! copied is drawn from the seed.
//!
//! A copy carries the header [`COPY_HEADER`] and is never copied again (so
//! N% stays N% of what the pipeline and other faults wrote, not compounding
//! over its own copies); junk records (`inject junk`, header
//! [`super::junk::JUNK_HEADER`]) are copied like any record and counted as
//! junk. What it did is counted ([`crate::run::FaultCounts`]): the records
//! it could copy, the copies by kind, the sends that failed.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use lossproof_lang::plan::ArgValue;
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{RngCore as _, SeedableRng as _};
use rdkafka::consumer::{BaseConsumer, Consumer as _};
use rdkafka::message::{BorrowedMessage, Header, Headers as _, OwnedHeaders};
use rdkafka::producer::{BaseProducer, BaseRecord, DeliveryResult, Producer as _, ProducerContext};
use rdkafka::{ClientContext, Message as _, Offset, TopicPartitionList};

use super::{Fired, Strike};
use crate::error::Error;
use crate::run::FaultCounts;
use crate::seed::Seed;

/// The header every copy carries (its value: the occurrence's index).
pub(super) const COPY_HEADER: &str = "lossproof-copy";

/// How often a send refused because the producer's queue is full is tried
/// again (polling for deliveries in between) before it counts as an error.
const SEND_TRIES: u32 = 50;

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
    let (occurrence, counted) = (strike.occurrence, seed.counts.clone());
    // A thread of its own (the Kafka clients block) until the phase ends
    // (bounded by it), or the seed ends first; the fault has fired once it
    // reads from the topics' ends.
    let (started, reading) = tokio::sync::oneshot::channel();
    let thread = std::thread::spawn(move || {
        let failed = Arc::new(Undelivered::default());
        let (reader, producer) = match from_the_end(&kafka, &topics, &failed) {
            Ok(clients) => {
                let _ = started.send(Ok(()));
                clients
            }
            Err(e) => {
                let _ = started.send(Err(e));
                return;
            }
        };
        let mut counts = FaultCounts::default();
        let occurrence_text = occurrence.to_string();
        let copy_header = OwnedHeaders::new().insert(Header {
            key: COPY_HEADER,
            value: Some(occurrence_text.as_str()),
        });
        while Instant::now() < until && alive.strong_count() > 0 {
            let Some(Ok(message)) = reader.poll(Duration::from_millis(200)) else {
                continue;
            };
            if has_header(&message, COPY_HEADER) {
                continue;
            }
            counts.considered += 1;
            if (rng.next_u64() % 10_000) as f64 / 100.0 >= share {
                continue;
            }
            // Into the original's partition, as a producer's retry lands,
            // with the original's headers and the copy's own.
            let mut headers = copy_header.clone();
            if let Some(original) = message.headers() {
                for header in original.iter() {
                    headers = headers.insert(header);
                }
            }
            let junk = has_header(&message, super::junk::JUNK_HEADER);
            let mut record = BaseRecord::<[u8], [u8], Box<bool>>::with_opaque_to(
                message.topic(),
                Box::new(junk),
            )
            .partition(message.partition())
            .headers(headers);
            if let Some(key) = message.key() {
                record = record.key(key);
            }
            if let Some(value) = message.payload() {
                record = record.payload(value);
            }
            match (send(&producer, record), junk) {
                (true, false) => counts.copied += 1,
                (true, true) => counts.junk += 1,
                (false, _) => counts.send_errors += 1,
            }
        }
        // Whatever the broker did not acknowledge was not delivered (a send
        // still queued when the flush gives up is reported failed as the
        // producer is dropped: flushed first, then dropped, then counted).
        let _ = producer.flush(Duration::from_secs(10));
        drop(producer);
        for (delivered, failures) in [
            (&mut counts.copied, &failed.copies),
            (&mut counts.junk, &failed.junk),
        ] {
            let failures = failures.load(Ordering::Relaxed).min(*delivered);
            *delivered -= failures;
            counts.send_errors += failures;
        }
        counted
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(occurrence, counts);
    });
    seed.producing
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(thread);
    reading
        .await
        .map_err(|_| Error::Internal("the duplicating thread ended before it started"))??;
    Ok(format!(
        "re-sending {share}% of the records reaching the change topics (never its own copies) until the phase ends"
    ))
}

fn has_header(message: &BorrowedMessage<'_>, key: &str) -> bool {
    message
        .headers()
        .is_some_and(|headers| headers.iter().any(|h| h.key == key))
}

/// Send `record`, waiting for room while the producer's queue is full
/// (bounded); false if it could not be sent.
fn send(
    producer: &BaseProducer<Deliveries>,
    mut record: BaseRecord<'_, [u8], [u8], Box<bool>>,
) -> bool {
    for _ in 0..SEND_TRIES {
        match producer.send(record) {
            Ok(()) => {
                producer.poll(Duration::ZERO);
                return true;
            }
            Err((
                rdkafka::error::KafkaError::MessageProduction(
                    rdkafka::types::RDKafkaErrorCode::QueueFull,
                ),
                back,
            )) => {
                record = back;
                producer.poll(Duration::from_millis(100));
            }
            Err(_) => return false,
        }
    }
    false
}

/// The copies the broker did not acknowledge, by kind.
#[derive(Default)]
struct Undelivered {
    copies: AtomicU64,
    junk: AtomicU64,
}

/// Counts into [`Undelivered`] (each send's opaque: whether it is junk).
struct Deliveries(Arc<Undelivered>);

impl ClientContext for Deliveries {}

impl ProducerContext for Deliveries {
    type DeliveryOpaque = Box<bool>;

    fn delivery(&self, result: &DeliveryResult<'_>, junk: Box<bool>) {
        if result.is_err() {
            let counter = if *junk { &self.0.junk } else { &self.0.copies };
            counter.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A reader of `topics` from their current ends (every record that
/// arrives from now on is a candidate), and a producer.
fn from_the_end(
    kafka: &lossproof_runtime::profile::Kafka,
    topics: &[String],
    failed: &Arc<Undelivered>,
) -> Result<(BaseConsumer, BaseProducer<Deliveries>), Error> {
    let reader: BaseConsumer = kafka
        .client_config()
        .set("group.id", "lossproof-duplicate")
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .create()
        .map_err(Error::kafka("kafka client"))?;
    let producer: BaseProducer<Deliveries> = kafka
        .client_config()
        .create_with_context(Deliveries(failed.clone()))
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
