//! Step 3 of a seed: the drain gate (between phases and at the end),
//! stopping the consumers once it is over, and what they said meanwhile
//! (their messages, the compactor's record).

use std::collections::BTreeMap;
use std::time::Duration;

use lossproof_consumers::{Message, Messages};
use lossproof_runtime::debezium;
use lossproof_runtime::reconcile::gate;

use crate::error::{Error, Result};
use crate::fault::maintenance::Races;
use crate::seed::Seed;

/// Bring the pipeline to the source's current end, bounded by `limit`:
/// stopped or paused consumers run again (faults measure damage, not
/// liveness), then the gate must hold — connector RUNNING, slot at the
/// source's LSN as of now, every consumer at the end of every topic.
pub(super) async fn drain(
    seed: &Seed<'_>,
    positions: &[gate::ConsumerPosition],
    limit: Duration,
) -> Result<()> {
    for consumer in seed.consumers.lock().await.values_mut() {
        consumer.resume();
        consumer
            .start()
            .map_err(Error::io(format!("restart consumer {}", consumer.name)))?;
    }
    // A consumer reading the source itself confirms only what it captures:
    // its target is the drain marker's transaction (which every other slot
    // passes too), not the WAL's end.
    let final_lsn = if positions.iter().any(|p| p.slot.is_some()) {
        crate::own::drain_marker(&seed.source).await?
    } else {
        debezium::current_lsn(&seed.source).await?
    };
    gate::wait_scoreable(
        &seed.connect,
        &seed.names,
        &seed.source,
        final_lsn,
        &seed.endpoints.kafka,
        positions,
        Some(&seed.lake),
        limit,
    )
    .await?;
    Ok(())
}

/// Wait until the connector's initial snapshot of a preload reached every
/// consumer's lake (each consumer on its own, side by side), bounded by
/// five minutes plus three per 100,000 preloaded orders (a debug build's
/// consumers take about one per 100,000 at batch 10,000); how long each took
/// from now (set-up just started the connector and the consumers).
pub(super) async fn snapshot_reached(
    seed: &Seed<'_>,
    positions: &[gate::ConsumerPosition],
    preloaded: &crate::workload::preload::Preloaded,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<super::record::SnapshotRecord> {
    let started = std::time::Instant::now();
    let limit = Duration::from_mins(5) + Duration::from_mins(3 * preloaded.orders / 100_000);
    let topics = lossproof_consumers::topics(&seed.names, &seed.workload);
    crate::workload::preload::wait_in_topics(
        &seed.endpoints.kafka,
        &topics,
        preloaded,
        started + limit,
    )
    .await?;
    let lsn = debezium::current_lsn(&seed.source).await?;
    let each = positions.iter().map(|position| async move {
        gate::wait_scoreable(
            &seed.connect,
            &seed.names,
            &seed.source,
            lsn,
            &seed.endpoints.kafka,
            std::slice::from_ref(position),
            Some(&seed.lake),
            limit,
        )
        .await
        .map(|()| (position.consumer.clone(), super::millis(started.elapsed())))
    });
    let reached: BTreeMap<String, u64> = futures_util::future::try_join_all(each)
        .await?
        .into_iter()
        .collect();
    for (consumer, ms) in &reached {
        progress(&format!(
            "the snapshot of the preload reached {consumer}'s lake in {:.1}s",
            *ms as f64 / 1000.0
        ));
    }
    Ok(super::record::SnapshotRecord {
        orders: preloaded.orders,
        rows: preloaded.customers + preloaded.orders + preloaded.items,
        preload_ms: super::millis(preloaded.elapsed),
        reached_ms: reached,
        followed_ms: None,
    })
}

/// How long a consumer may take to finish the batch in hand once asked to
/// stop.
const STOP_GRACE: Duration = Duration::from_secs(30);

/// Stop every consumer gracefully, all at once (each finishes the batch in
/// hand); what each told the executor meanwhile ([`Message`]s), by name.
pub(super) async fn stop_consumers(seed: &Seed<'_>) -> BTreeMap<String, Vec<Message>> {
    let mut consumers = seed.consumers.lock().await;
    futures_util::future::join_all(
        consumers
            .values_mut()
            .map(|consumer| consumer.terminate(STOP_GRACE)),
    )
    .await;
    consumers
        .keys()
        .map(|name| (name.clone(), Messages::read(&seed.messages_of(name))))
        .collect()
}

/// The reasons of the consumers that stopped on purpose (a
/// [`Message::Fatal`]), from what they `said`.
pub(super) fn stopped_on_purpose(said: &BTreeMap<String, Vec<Message>>) -> Vec<String> {
    said.iter()
        .flat_map(|(name, messages)| {
            messages.iter().filter_map(move |m| match m {
                Message::Fatal { reason } => Some(format!("consumer {name} stopped: {reason}")),
                Message::Conflict { .. } => None,
            })
        })
        .collect()
}

/// The seed's races, per consumer lake: the maintenance faults' commits
/// (`compact table`, `expire snapshots`), the compactor's rounds, and the
/// consumers' own commits the lake's base check refused (the
/// [`Message::Conflict`]s they `said`).
pub(super) fn races(
    seed: &Seed<'_>,
    said: &BTreeMap<String, Vec<Message>>,
) -> BTreeMap<String, Races> {
    let mut races = seed
        .races
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    if let Ok(text) = std::fs::read_to_string(seed.logs.join(super::setup::COMPACTOR_RECORD)) {
        for (consumer, compactor) in crate::fault::maintenance::tally_record(&text) {
            *races.entry(consumer).or_default() += &compactor;
        }
    }
    for consumer in &seed.options.consumers {
        let conflicts = said
            .get(consumer)
            .into_iter()
            .flatten()
            .filter(|m| matches!(m, Message::Conflict { .. }))
            .count() as u64;
        if conflicts > 0 || races.contains_key(consumer) {
            races
                .entry(consumer.clone())
                .or_default()
                .consumer_conflicts = conflicts;
        }
    }
    races
}
