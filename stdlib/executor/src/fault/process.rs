//! kill / stop / pause / resume / restart of a process: a consumer under
//! test or the seed's compactor (both the run's supervised children) or a
//! stack component (`connect`, `broker`, `postgres`, `registry`); pause /
//! resume / restart of `connector` go through the Connect REST API.

use std::time::Duration;

use lossproof_runtime::Component;
use lossproof_runtime::supervisor::Supervised;
use nix::sys::signal::Signal;

use super::{Fired, Strike};
use crate::error::{Error, Result};
use crate::seed::Seed;

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
/// that are not components (the consumers, the compactor, the connector).
pub(crate) fn component_named(name: &str) -> Option<Component> {
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
pub(super) fn can_target(name: &str) -> bool {
    matches!(name, "consumer" | "connector" | "compactor") || component_named(name).is_some()
}

async fn which(seed: &Seed<'_>, strike: &Strike<'_>) -> Result<Which> {
    let target = strike
        .action
        .target
        .as_ref()
        .ok_or_else(|| Error::Unsupported(format!("`{}` has no target", strike.action.text)))?;
    Ok(match target.component.as_str() {
        "consumer" => Which::Consumers(match &target.consumer {
            Some(one) => vec![one.clone()],
            None => seed.consumers.lock().await.keys().cloned().collect(),
        }),
        "connector" => Which::Connector,
        "compactor" => Which::Compactor,
        other => match component_named(other) {
            Some(c) => Which::Component(c),
            None => {
                return Err(Error::Unsupported(format!(
                    "`{}`: {other} cannot be targeted by this fault yet",
                    strike.action.text
                )));
            }
        },
    })
}

/// Apply `each` to every consumer named, to all at once; fired if it did
/// something to any.
async fn on_consumers(
    seed: &Seed<'_>,
    names: &[String],
    verb: &str,
    each: impl AsyncFn(&mut Supervised) -> Result<bool>,
) -> Fired {
    let mut consumers = seed.consumers.lock().await;
    let mut skipped: Vec<String> = names
        .iter()
        .filter(|name| !consumers.contains_key(*name))
        .map(|name| format!("consumer {name} is not under test"))
        .collect();
    let chosen = consumers
        .iter_mut()
        .filter(|(name, _)| names.contains(name))
        .map(async |(name, consumer)| (name.as_str(), each(consumer).await));
    let mut done = Vec::new();
    for (name, acted) in futures_util::future::join_all(chosen).await {
        if acted? {
            done.push(name);
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
    seed: &Seed<'_>,
    verb: &str,
    each: impl AsyncFnOnce(&mut Supervised) -> Result<bool>,
) -> Fired {
    let mut compactor = seed.compactor.lock().await;
    let compactor = compactor
        .as_mut()
        .ok_or_else(|| Error::NotFired("the seed runs no compactor".into()))?;
    if each(compactor).await? {
        Ok(format!("{verb} the compactor"))
    } else {
        Err(Error::NotFired(format!(
            "the compactor was not in a state to {verb}"
        )))
    }
}

/// SIGKILL a supervised child and start it again at once (a crash the
/// supervisor recovers from); true if it was running.
async fn kill_and_start(c: &mut Supervised) -> Result<bool> {
    let killed = c.kill().await;
    c.start()
        .map_err(Error::io(format!("start {} again", c.name)))?;
    Ok(killed)
}

/// Stop a supervised child gracefully (if it runs) and start it.
async fn stop_and_start(c: &mut Supervised) -> Result<bool> {
    c.terminate(GRACE).await;
    c.start().map_err(Error::io(format!("start {}", c.name)))?;
    Ok(true)
}

/// Stop a supervised child gracefully; true if it was running.
async fn terminate(c: &mut Supervised) -> Result<bool> {
    Ok(c.terminate(GRACE).await)
}

fn component(seed: &Seed<'_>, c: Component) -> Result<lossproof_runtime::ProcessRecord> {
    seed.stack
        .process(c)?
        .filter(lossproof_runtime::ProcessRecord::alive)
        .ok_or_else(|| Error::NotFired(format!("{} was already down", c.name())))
}

/// `up` starts whatever is down again (bounded by its own health probes).
async fn repair(seed: &Seed<'_>) -> Result<()> {
    seed.stack.up(None, &|_| {}).await?;
    Ok(())
}

/// SIGKILL; the supervisor starts it again at once.
pub(super) async fn kill(seed: &Seed<'_>, strike: &Strike<'_>) -> Fired {
    match which(seed, strike).await? {
        Which::Consumers(names) => on_consumers(seed, &names, "killed", kill_and_start).await,
        Which::Compactor => on_compactor(seed, "killed", kill_and_start).await,
        Which::Component(c) => {
            let process = component(seed, c)?;
            let _ = process.signal(Signal::SIGKILL);
            repair(seed).await?;
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
pub(super) async fn stop(seed: &Seed<'_>, strike: &Strike<'_>) -> Fired {
    match which(seed, strike).await? {
        Which::Consumers(names) => on_consumers(seed, &names, "stopped", terminate).await,
        Which::Compactor => on_compactor(seed, "stopped", terminate).await,
        Which::Component(c) => {
            let process = component(seed, c)?;
            process.stop_async(Signal::SIGTERM, GRACE).await;
            Ok(format!("stopped {}", c.name()))
        }
        Which::Connector => {
            seed.connect.stop(&seed.names.connector).await?;
            Ok("stopped the connector".into())
        }
    }
}

/// SIGSTOP (or pause the connector).
pub(super) async fn pause(seed: &Seed<'_>, strike: &Strike<'_>) -> Fired {
    match which(seed, strike).await? {
        Which::Consumers(names) => {
            on_consumers(seed, &names, "paused", async |c: &mut Supervised| {
                Ok(c.pause())
            })
            .await
        }
        Which::Compactor => {
            on_compactor(seed, "paused", async |c: &mut Supervised| Ok(c.pause())).await
        }
        Which::Component(c) => {
            let process = component(seed, c)?;
            if process.signal(Signal::SIGSTOP) {
                Ok(format!("paused {}", c.name()))
            } else {
                Err(Error::NotFired(format!("{} could not be paused", c.name())))
            }
        }
        Which::Connector => {
            seed.connect.pause(&seed.names.connector).await?;
            Ok("paused the connector".into())
        }
    }
}

/// SIGCONT (or resume the connector).
pub(super) async fn resume(seed: &Seed<'_>, strike: &Strike<'_>) -> Fired {
    match which(seed, strike).await? {
        Which::Consumers(names) => {
            on_consumers(seed, &names, "resumed", async |c: &mut Supervised| {
                Ok(c.resume())
            })
            .await
        }
        Which::Compactor => {
            on_compactor(seed, "resumed", async |c: &mut Supervised| Ok(c.resume())).await
        }
        Which::Component(c) => {
            let process = seed
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
            seed.connect.resume(&seed.names.connector).await?;
            Ok("resumed the connector".into())
        }
    }
}

/// A graceful stop and a start (or a start if it was down).
pub(super) async fn restart(seed: &Seed<'_>, strike: &Strike<'_>) -> Fired {
    match which(seed, strike).await? {
        Which::Consumers(names) => on_consumers(seed, &names, "restarted", stop_and_start).await,
        Which::Compactor => on_compactor(seed, "restarted", stop_and_start).await,
        Which::Component(c) => {
            if let Ok(process) = component(seed, c) {
                process.stop_async(Signal::SIGTERM, GRACE).await;
            }
            repair(seed).await?;
            Ok(format!("restarted {}", c.name()))
        }
        Which::Connector => {
            seed.connect.restart(&seed.names.connector).await?;
            Ok("restarted the connector and its tasks".into())
        }
    }
}
