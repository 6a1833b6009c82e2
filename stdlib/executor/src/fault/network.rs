//! Network faults, set on the fault proxy's links (`lossproof netproxy`,
//! docs/network.md): `broker` (every Kafka client), `postgres` (Debezium's
//! connections to the source) and `registry`. Each lasts its `for` length
//! or to the end of its phase, whichever comes first; the proxy ends it
//! itself then, and the seed's clean-up clears what is left.

use std::time::Duration;

use lossproof_lang::plan::PlannedAction;
use lossproof_runtime::debezium::CaptureNames;
use lossproof_runtime::netproxy::{FaultKind, FaultRequest, NetProxy};

use super::{Fired, Strike, count_arg, duration_arg};
use crate::error::Error;
use crate::seed::Seed;

/// `delay network to T D [jitter J] [for L]`.
pub async fn delay(seed: &Seed<'_>, strike: &Strike<'_>) -> Fired {
    let ms = duration_arg(strike.action, "delay").ok_or_else(|| missing(strike.action, "delay"))?;
    let jitter_ms = duration_arg(strike.action, "jitter").unwrap_or(0);
    set(seed, strike, FaultKind::Delay { ms, jitter_ms }).await
}

/// `limit network to T N kilobytes per second [for L]`.
pub async fn limit(seed: &Seed<'_>, strike: &Strike<'_>) -> Fired {
    let kilobytes =
        count_arg(strike.action, "rate").ok_or_else(|| missing(strike.action, "rate"))?;
    set(
        seed,
        strike,
        FaultKind::Limit {
            bytes_per_second: kilobytes.saturating_mul(1000),
        },
    )
    .await
}

/// `cut network to T for L`.
pub async fn cut(seed: &Seed<'_>, strike: &Strike<'_>) -> Fired {
    set(seed, strike, FaultKind::Cut).await
}

/// `reset network to T`.
pub async fn reset(seed: &Seed<'_>, strike: &Strike<'_>) -> Fired {
    set(seed, strike, FaultKind::Reset).await
}

/// `blackhole network to T for L`.
pub async fn blackhole(seed: &Seed<'_>, strike: &Strike<'_>) -> Fired {
    set(seed, strike, FaultKind::Blackhole).await
}

/// `delay close to T D [for L]`.
pub async fn slow_close(seed: &Seed<'_>, strike: &Strike<'_>) -> Fired {
    let ms = duration_arg(strike.action, "delay").ok_or_else(|| missing(strike.action, "delay"))?;
    set(seed, strike, FaultKind::SlowClose { ms }).await
}

/// Who sets a seed's network faults: clean-up clears them all by this.
#[must_use]
pub fn owner(names: &CaptureNames) -> String {
    names.connector.clone()
}

async fn set(seed: &Seed<'_>, strike: &Strike<'_>, fault: FaultKind) -> Fired {
    let link = strike
        .action
        .target
        .as_ref()
        .map(|t| t.component.as_str())
        .ok_or_else(|| missing(strike.action, "target"))?;
    let for_ms = strike
        .acts_for
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    if for_ms == 0 && fault != FaultKind::Reset {
        return Err(Error::NotFired(format!(
            "its phase ends now: no time left for it to act on the {link} link"
        )));
    }
    let request = FaultRequest {
        owner: owner(&seed.names),
        fault: fault.clone(),
        for_ms,
        seed: seed.number,
        stream: strike.occurrence as u64,
    };
    let ack = NetProxy::new(seed.endpoints.local_ports("a network fault")?.netproxy)
        .set(link, &request)
        .await?;
    let open = ack.open_connections;
    if fault == FaultKind::Reset && open == 0 {
        return Err(Error::NotFired(format!(
            "no connection was open on the {link} link to reset"
        )));
    }
    let seconds = Duration::from_millis(for_ms).as_secs_f64();
    Ok(match fault {
        FaultKind::Reset => format!("reset {open} open connection(s) on the {link} link"),
        FaultKind::Delay { ms, jitter_ms } => format!(
            "{ms}±{jitter_ms} ms added each way on the {link} link for {seconds:.1}s ({open} connection(s) open)"
        ),
        FaultKind::Limit { bytes_per_second } => format!(
            "{bytes_per_second} bytes/s each way on the {link} link for {seconds:.1}s ({open} connection(s) open)"
        ),
        FaultKind::Cut => format!(
            "the {link} link cut for {seconds:.1}s: new connections refused, {open} open one(s) stalled"
        ),
        FaultKind::Blackhole => format!(
            "the {link} link drops every byte for {seconds:.1}s ({open} connection(s) open)"
        ),
        FaultKind::SlowClose { ms } => {
            format!("closes on the {link} link arrive {ms} ms late for {seconds:.1}s")
        }
    })
}

fn missing(action: &PlannedAction, arg: &str) -> Error {
    Error::Unsupported(format!("`{}` has no {arg}", action.text))
}
