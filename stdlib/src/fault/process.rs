//! kill / stop / pause / resume / restart of a process: a consumer under
//! test or the seed's compactor (both the run's supervised children) or a
//! stack component (`connect`, `broker`, `postgres`, `registry`); pause /
//! resume / restart of `connector` go through the Connect REST API.

use std::time::Duration;

use lossproof_lang::plan::PlannedAction;
use lossproof_runtime::Component;
use nix::sys::signal::Signal;

use super::{Ctx, Fired};
use crate::error::{Error, Result};

const GRACE: Duration = Duration::from_secs(20);

enum Which {
    /// Consumers by name (all under test when the scenario names none).
    Consumers(Vec<String>),
    /// The seed's compaction job (`lossproof compact --every-ms`).
    Compactor,
    Component(Component),
    Connector,
}

/// The stack component a target names, if it is one; `None` for targets
/// that are not components (consumers, the connector) or not runnable yet
/// (those are in `not_yet::NOT_YET`).
pub(super) fn component_named(name: &str) -> Option<Component> {
    match name {
        "connect" => Some(Component::Connect),
        "broker" => Some(Component::Broker),
        "postgres" => Some(Component::SourcePostgres),
        "registry" => Some(Component::Registry),
        _ => None,
    }
}

/// Whether the process faults can strike target `name`.
#[cfg(test)]
pub(crate) fn can_target(name: &str) -> bool {
    matches!(name, "consumer" | "connector" | "compactor") || component_named(name).is_some()
}

async fn which(ctx: &Ctx<'_>, action: &PlannedAction) -> Result<Which> {
    let target = action
        .target
        .as_ref()
        .ok_or_else(|| Error::Unsupported(format!("`{}` has no target", action.text)))?;
    Ok(match target.component.as_str() {
        "consumer" => Which::Consumers(match &target.consumer {
            Some(one) => vec![one.clone()],
            None => ctx.consumers.lock().await.keys().cloned().collect(),
        }),
        "connector" => Which::Connector,
        "compactor" => Which::Compactor,
        other => match component_named(other) {
            Some(c) => Which::Component(c),
            None => {
                return Err(Error::Unsupported(format!(
                    "`{}`: {other} cannot be targeted by this fault yet",
                    action.text
                )));
            }
        },
    })
}

/// Apply `each` to every consumer named; fired if it did something to any.
async fn on_consumers(
    ctx: &Ctx<'_>,
    names: &[String],
    verb: &str,
    each: impl Fn(&mut lossproof_runtime::supervisor::Supervised) -> Result<bool>,
) -> Fired {
    let mut consumers = ctx.consumers.lock().await;
    let mut done = Vec::new();
    let mut skipped = Vec::new();
    for name in names {
        let Some(consumer) = consumers.get_mut(name) else {
            skipped.push(format!("consumer {name} is not under test"));
            continue;
        };
        if each(consumer)? {
            done.push(name.as_str());
        } else {
            skipped.push(format!("consumer {name} was not in a state to {verb}"));
        }
    }
    if done.is_empty() {
        Err(Error::NotFired(skipped.join("; ")))
    } else {
        Ok(format!("{verb} consumer {}", done.join(", ")))
    }
}

/// Apply `each` to the seed's compactor; fired if it did something.
async fn on_compactor(
    ctx: &Ctx<'_>,
    verb: &str,
    each: impl FnOnce(&mut lossproof_runtime::supervisor::Supervised) -> Result<bool>,
) -> Fired {
    let mut compactor = ctx.compactor.lock().await;
    let compactor = compactor
        .as_mut()
        .ok_or_else(|| Error::NotFired("the seed runs no compactor".into()))?;
    if each(compactor)? {
        Ok(format!("{verb} the compactor"))
    } else {
        Err(Error::NotFired(format!(
            "the compactor was not in a state to {verb}"
        )))
    }
}

/// SIGKILL a supervised child and start it again at once (a crash the
/// supervisor recovers from); true if it was running.
fn kill_and_start(c: &mut lossproof_runtime::supervisor::Supervised) -> Result<bool> {
    let killed = c.kill();
    c.start()
        .map_err(Error::io(format!("start {} again", c.name)))?;
    Ok(killed)
}

/// Stop a supervised child gracefully (if it runs) and start it.
fn stop_and_start(c: &mut lossproof_runtime::supervisor::Supervised) -> Result<bool> {
    c.terminate(GRACE);
    c.start().map_err(Error::io(format!("start {}", c.name)))?;
    Ok(true)
}

fn component(ctx: &Ctx<'_>, c: Component) -> Result<lossproof_runtime::ProcessRecord> {
    ctx.stack
        .process(c)?
        .filter(lossproof_runtime::ProcessRecord::alive)
        .ok_or_else(|| Error::NotFired(format!("{} was already down", c.name())))
}

/// `up` starts whatever is down again (bounded by its own health probes).
async fn repair(ctx: &Ctx<'_>) -> Result<()> {
    ctx.stack.up(None, &|_| {}).await?;
    Ok(())
}

/// SIGKILL; the supervisor starts it again at once.
pub async fn kill(ctx: &Ctx<'_>, action: &PlannedAction) -> Fired {
    match which(ctx, action).await? {
        Which::Consumers(names) => on_consumers(ctx, &names, "killed", kill_and_start).await,
        Which::Compactor => on_compactor(ctx, "killed", kill_and_start).await,
        Which::Component(c) => {
            let process = component(ctx, c)?;
            let _ = process.signal(Signal::SIGKILL);
            repair(ctx).await?;
            Ok(format!(
                "killed {} (pid {}); started again",
                c.name(),
                process.pid
            ))
        }
        Which::Connector => Err(Error::Unsupported(
            "a connector is not a process: use `restart connector`".into(),
        )),
    }
}

/// SIGTERM; it stays down until `restart` (or the drain).
pub async fn stop(ctx: &Ctx<'_>, action: &PlannedAction) -> Fired {
    match which(ctx, action).await? {
        Which::Consumers(names) => {
            on_consumers(ctx, &names, "stopped", |c| Ok(c.terminate(GRACE))).await
        }
        Which::Compactor => on_compactor(ctx, "stopped", |c| Ok(c.terminate(GRACE))).await,
        Which::Component(c) => {
            let process = component(ctx, c)?;
            tokio::task::spawn_blocking(move || process.stop(Signal::SIGTERM, GRACE)).await?;
            Ok(format!("stopped {}", c.name()))
        }
        Which::Connector => {
            ctx.connect.stop(&ctx.names.connector).await?;
            Ok("stopped the connector".into())
        }
    }
}

/// SIGSTOP (or pause the connector).
pub async fn pause(ctx: &Ctx<'_>, action: &PlannedAction) -> Fired {
    match which(ctx, action).await? {
        Which::Consumers(names) => on_consumers(ctx, &names, "paused", |c| Ok(c.pause())).await,
        Which::Compactor => on_compactor(ctx, "paused", |c| Ok(c.pause())).await,
        Which::Component(c) => {
            let process = component(ctx, c)?;
            if process.signal(Signal::SIGSTOP) {
                Ok(format!("paused {}", c.name()))
            } else {
                Err(Error::NotFired(format!("{} could not be paused", c.name())))
            }
        }
        Which::Connector => {
            ctx.connect.pause(&ctx.names.connector).await?;
            Ok("paused the connector".into())
        }
    }
}

/// SIGCONT (or resume the connector).
pub async fn resume(ctx: &Ctx<'_>, action: &PlannedAction) -> Fired {
    match which(ctx, action).await? {
        Which::Consumers(names) => on_consumers(ctx, &names, "resumed", |c| Ok(c.resume())).await,
        Which::Compactor => on_compactor(ctx, "resumed", |c| Ok(c.resume())).await,
        Which::Component(c) => {
            let process = ctx
                .stack
                .process(c)?
                .ok_or_else(|| Error::NotFired(format!("{} is not running", c.name())))?;
            if process.signal(Signal::SIGCONT) {
                Ok(format!("resumed {}", c.name()))
            } else {
                Err(Error::NotFired(format!(
                    "{} could not be resumed",
                    c.name()
                )))
            }
        }
        Which::Connector => {
            ctx.connect.resume(&ctx.names.connector).await?;
            Ok("resumed the connector".into())
        }
    }
}

/// A graceful stop and a start (or a start if it was down).
pub async fn restart(ctx: &Ctx<'_>, action: &PlannedAction) -> Fired {
    match which(ctx, action).await? {
        Which::Consumers(names) => on_consumers(ctx, &names, "restarted", stop_and_start).await,
        Which::Compactor => on_compactor(ctx, "restarted", stop_and_start).await,
        Which::Component(c) => {
            if let Ok(process) = component(ctx, c) {
                tokio::task::spawn_blocking(move || process.stop(Signal::SIGTERM, GRACE)).await?;
            }
            repair(ctx).await?;
            Ok(format!("restarted {}", c.name()))
        }
        Which::Connector => {
            ctx.connect.restart(&ctx.names.connector).await?;
            Ok("restarted the connector and its tasks".into())
        }
    }
}
