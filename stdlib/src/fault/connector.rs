//! `recreate connector` and `drop slot`: what a rebuilt pipeline does to the
//! capture itself.

use std::time::Duration;

use lossproof_lang::plan::PlannedAction;
use lossproof_runtime::debezium;

use super::{Ctx, Fired};

/// Delete the connector and create it again under the same name and
/// configuration (its slot and stored offsets stay, as in a redeploy).
pub async fn recreate(ctx: &Ctx<'_>, _action: &PlannedAction) -> Fired {
    ctx.connect.delete(&ctx.names.connector).await?;
    debezium::start(
        ctx.connect,
        ctx.names,
        ctx.connector_config,
        ctx.source,
        Duration::from_mins(1),
    )
    .await?;
    Ok(format!(
        "deleted and re-created connector {}",
        ctx.names.connector
    ))
}

/// Drop the replication slot under the running connector (its walsender is
/// terminated first).
pub async fn drop_slot(ctx: &Ctx<'_>, _action: &PlannedAction) -> Fired {
    debezium::drop_slot(ctx.source, &ctx.names.slot, Duration::ZERO).await?;
    Ok(format!("dropped replication slot {}", ctx.names.slot))
}
