//! `fill broker [for L]`: the broker's storage stops accepting writes for
//! L (or to the end of the block), as a full disk would.
//!
//! The local broker (nisshi) keeps every record, offset and group in a
//! `PostgreSQL` database. Filling that cluster's disk for real is neither
//! portable nor safe on a shared machine, so the fault does what a full
//! disk does to the database's clients: every write fails, reads work. The
//! database is made read-only (`default_transaction_read_only`) and its
//! sessions are ended, so the broker reconnects into sessions that refuse
//! writes; when the fault ends it is made writable and the sessions are
//! ended again. What the broker and its clients then do (produce errors
//! and retries in Connect, offset commits failing, a task that fails after
//! its delivery timeout) is what the fault measures: docs/run.md.
//!
//! The storage is made writable again by a task when the fault ends, and
//! on every clean-up path of the seed and by `lossproof up` (a run killed
//! with SIGKILL cannot leave the broker read-only for the next one).

use lossproof_runtime::stack::set_broker_storage_writable;

use super::{Fired, Strike};
use crate::seed::Seed;

pub(super) async fn fill(seed: &Seed<'_>, strike: &Strike<'_>) -> Fired {
    let ports = seed.endpoints.local_ports("`fill broker`")?;
    let ended = set_broker_storage_writable(&ports, false).await?;
    let lasts = strike.acts_for.unwrap_or_default();
    let alive = seed.alive().clone();
    tokio::spawn(async move {
        tokio::time::sleep(lasts).await;
        // A seed that ended meanwhile made it writable in its clean-up.
        if alive.upgrade().is_some() {
            let _ = set_broker_storage_writable(&ports, true).await;
        }
    });
    Ok(format!(
        "the broker's storage refuses writes for {:.1}s ({ended} storage sessions ended)",
        lasts.as_secs_f64()
    ))
}
