//! Step 3 of a seed: the drain gate (between phases and at the end), and
//! stopping the consumers once it is over.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use lossproof_runtime::Lake;
use lossproof_runtime::debezium;
use lossproof_runtime::reconcile::gate;
use lossproof_runtime::supervisor::Supervised;

use crate::error::{Error, Result};
use crate::fault::Ctx;

/// Bring the pipeline to the source's current end, bounded by `limit`:
/// stopped or paused consumers run again (faults measure damage, not
/// liveness), then the gate must hold — connector RUNNING, slot at the
/// source's LSN as of now, every consumer at the end of every topic.
pub(super) async fn drain(
    ctx: &Ctx<'_>,
    positions: &[gate::ConsumerPosition],
    lake: &Lake,
    limit: Duration,
) -> Result<()> {
    for consumer in ctx.consumers.lock().await.values_mut() {
        consumer.resume();
        consumer
            .start()
            .map_err(Error::io(format!("restart consumer {}", consumer.name)))?;
    }
    // A consumer reading the source itself confirms only what it captures:
    // its target is the drain marker's transaction (which every other slot
    // passes too), not the WAL's end.
    let final_lsn = if positions.iter().any(|p| p.slot.is_some()) {
        crate::own::drain_marker(ctx.source).await?
    } else {
        debezium::current_lsn(ctx.source).await?
    };
    gate::wait_scoreable(
        ctx.connect,
        ctx.names,
        ctx.source,
        final_lsn,
        &ctx.endpoints.kafka,
        positions,
        Some(lake),
        limit,
    )
    .await?;
    Ok(())
}

/// Stop every consumer gracefully (it finishes the batch in hand); the
/// `fatal: …` lines of those that had stopped on purpose.
pub(super) async fn stop_consumers(
    consumers: &tokio::sync::Mutex<BTreeMap<String, Supervised>>,
    logs: &Path,
) -> Vec<String> {
    let mut stopped = Vec::new();
    for consumer in consumers.lock().await.values_mut() {
        consumer.terminate(Duration::from_secs(30));
        if let Some(line) = fatal_line(&logs.join(format!("{}.log", consumer.name))) {
            stopped.push(format!("consumer {} stopped: {line}", consumer.name));
        }
    }
    stopped
}

/// The line a consumer's log ends with when it stopped on purpose
/// (`fatal: …`, exit 3), if any.
fn fatal_line(log: &std::path::Path) -> Option<String> {
    let text = std::fs::read_to_string(log).ok()?;
    text.lines()
        .rev()
        .find_map(|l| l.strip_prefix("fatal: ").map(str::to_owned))
}

/// How many of a consumer's commits the base check refused, from its log:
/// the lines quoting a `CommitError::Conflict` or `InputGone` (each consumer
/// logs every refused commit once, with the error's text).
pub(super) fn conflicts_logged(log: &Path) -> u64 {
    let Ok(text) = std::fs::read_to_string(log) else {
        return 0;
    };
    text.lines()
        .filter(|l| {
            l.contains("commit conflict on ")
                || l.contains("is not a live file of the table any more")
        })
        .count() as u64
}
