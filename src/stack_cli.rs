//! `lossproof up`, `down`, `status`, `logs`: the local stack.

use std::path::Path;
use std::time::Instant;

use crate::CliResult;
use lossproof_runtime::{Component, Stack};

/// The async runtime every stack-facing command runs on (two workers: the
/// machines this targets have two cores).
pub(crate) fn runtime() -> CliResult<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}").into())
}

/// Run `work` to its end as a task on `runtime`'s workers rather than on
/// the calling thread (which `block_on` would use): a reconciliation's
/// source reader then runs on the worker that drives its PostgreSQL
/// connection, which hands it rows without waking another thread for each
/// batch the socket delivers.
pub(crate) fn on_worker<F>(runtime: &tokio::runtime::Runtime, work: F) -> F::Output
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    match runtime.block_on(runtime.spawn(work)) {
        Ok(output) => output,
        Err(e) => match e.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(e) => panic!("the runtime dropped its work: {e}"),
        },
    }
}

/// The stack in `state` and its ports, for commands that need it running;
/// the error says how to start it (with this state directory).
/// The stack a command acts on: the one `up` started in `state`, or the
/// external components `profile` names (`state` then holds only
/// lossproof's records and logs).
pub(crate) fn running(
    state: &Path,
    profile: Option<&Path>,
) -> CliResult<(Stack, lossproof_runtime::Endpoints)> {
    let stack = match profile {
        Some(profile) => Stack::external(state, lossproof_runtime::Profile::load(profile)?)?,
        None => Stack::open(state)?,
    };
    let endpoints = stack
        .endpoints()
        .map_err(|e| format!("{e} --state {}", state.display()))?;
    Ok((stack, endpoints))
}

fn say(line: &str) {
    eprintln!("  {line}");
}

pub(crate) fn up(
    state: &Path,
    profile: Option<lossproof_runtime::StackProfile>,
) -> CliResult<bool> {
    let stack = Stack::open(state)?;
    eprintln!("lossproof up: state in {}", stack.state().root().display());
    let started = Instant::now();
    runtime()?.block_on(stack.up(profile, &say))?;
    eprintln!("stack healthy in {:.1}s", started.elapsed().as_secs_f64());
    Ok(true)
}

pub(crate) fn down(state: &Path, purge: bool) -> CliResult<bool> {
    if !state.exists() {
        eprintln!("lossproof down: no stack in {}", state.display());
        return Ok(true);
    }
    let stack = Stack::open(state)?;
    stack.down(purge, &say)?;
    Ok(true)
}

pub(crate) fn status(state: &Path, verbose: bool, json: bool) -> CliResult<bool> {
    let stack = Stack::open(state)?;
    let report = runtime()?.block_on(stack.status())?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).expect("status serialises")
        );
        return Ok(report.all_healthy());
    }
    println!("state dir: {}", report.state_dir.display());
    println!("profile:   {}", report.profile);
    println!(
        "{:<16} {:<10} {:>7} {:>6}  DETAIL",
        "COMPONENT", "STATE", "PID", "PORT"
    );
    for c in &report.components {
        println!(
            "{:<16} {:<10} {:>7} {:>6}  {}",
            c.component.name(),
            c.state,
            c.pid.map_or("-".to_owned(), |p| p.to_string()),
            c.port.map_or("-".to_owned(), |p| p.to_string()),
            c.detail
        );
    }
    if !report.connectors.is_empty() {
        println!("\n{:<40} {:<10} TASKS", "CONNECTOR", "STATE");
        for c in &report.connectors {
            println!("{:<40} {:<10} {}", c.name, c.state, c.tasks.join(" "));
            if let Some(failure) = &c.failure {
                println!("  failure: {failure}");
            }
        }
    }
    if !report.slots.is_empty() {
        println!("\n{:<40} {:<7} LAG", "REPLICATION SLOT", "ACTIVE");
        for s in &report.slots {
            println!(
                "{:<40} {:<7} {}",
                s.slot,
                s.active,
                s.lag_bytes.map_or("-".to_owned(), |b| format!("{b} bytes"))
            );
        }
    }
    if verbose {
        println!("\n{:<16} {:>12} {:>12}", "COMPONENT", "STARTUP", "RSS");
        let mut total_rss = 0;
        let mut total_ms = 0;
        for c in &report.components {
            total_rss += c.rss_bytes;
            total_ms += c.startup_ms.unwrap_or(0);
            println!(
                "{:<16} {:>12} {:>9.1} MB",
                c.component.name(),
                c.startup_ms
                    .map_or("-".to_owned(), |ms| format!("{:.1}s", ms as f64 / 1000.0)),
                c.rss_bytes as f64 / 1e6
            );
        }
        println!(
            "{:<16} {:>12} {:>9.1} MB",
            "total",
            format!("{:.1}s", total_ms as f64 / 1000.0),
            total_rss as f64 / 1e6
        );
    }
    Ok(report.all_healthy())
}

pub(crate) fn logs(state: &Path, component: &str, lines: usize) -> CliResult<bool> {
    let Some(component) = Component::from_name(component) else {
        let names: Vec<&str> = Component::ALL.iter().map(|c| c.name()).collect();
        return Err(format!(
            "unknown component `{component}`; components are {}",
            names.join(", ")
        )
        .into());
    };
    let stack = Stack::open(state)?;
    println!("{}", stack.tail(component, lines));
    Ok(true)
}
