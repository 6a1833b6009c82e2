//! `recreate connector` and `drop slot`: what a rebuilt pipeline does to the
//! capture itself.

use std::time::Duration;

use lossproof_runtime::debezium;

use super::{Fired, Strike};
use crate::error::Error;
use crate::seed::Seed;

/// Delete the connector and create it again under the same name and
/// configuration (its slot and stored offsets stay, as in a redeploy).
pub(super) async fn recreate(seed: &Seed<'_>, _strike: &Strike<'_>) -> Fired {
    let config = seed.connector.get().ok_or(Error::Internal(
        "a fault fired before the connector was set up",
    ))?;
    seed.connect.delete(&seed.names.connector).await?;
    debezium::start(
        &seed.connect,
        &seed.names,
        config,
        &seed.source,
        Duration::from_mins(1),
    )
    .await?;
    Ok(format!(
        "deleted and re-created connector {}",
        seed.names.connector
    ))
}

/// Drop the replication slot under the running connector (its walsender is
/// terminated first).
pub(super) async fn drop_slot(seed: &Seed<'_>, _strike: &Strike<'_>) -> Fired {
    debezium::drop_slot(&seed.source, &seed.names.slot, Duration::ZERO).await?;
    Ok(format!("dropped replication slot {}", seed.names.slot))
}
