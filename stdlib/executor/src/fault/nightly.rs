//! `run nightly`: the nightly workflow (compact -> reconcile -> dbt marts,
//! Step Functions on moto server) on the seed's correct-consumer lake, run
//! as `lossproof nightly` (src/nightly_cli.rs) so a scenario and a person at
//! a terminal run exactly the same thing. Meant for a quiet phase: its
//! Reconcile waits for the pipeline to drain, and load that never stops
//! makes it INVALID.
//!
//! It fired when the workflow ran to an end, whichever: its outcome is
//! `nightly SUCCEEDED: ...` or `nightly FAILED at <state> (<error>): ...`,
//! which assertions read from the `faults` table.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use lossproof_runtime::debezium::CaptureNames;
use lossproof_runtime::nightly::Report;

use super::{Fired, Strike};
use crate::error::Error;
use crate::seed::Seed;

/// How much sooner than the fault's own limit (its vocabulary row) the
/// workflow must end (`nightly --timeout-s`), and the process report.
const REPORT_TIME: Duration = Duration::from_mins(1);

pub(crate) async fn run(seed: &Seed<'_>, strike: &Strike<'_>) -> Fired {
    let process_limit = strike.limit.saturating_sub(REPORT_TIME);
    let workflow_limit = process_limit.saturating_sub(REPORT_TIME);
    if !seed.consumers.lock().await.contains_key("correct") {
        return Err(Error::NotFired(
            "the nightly builds its marts from the correct consumer's lake, and this run has no `correct` consumer".to_owned(),
        ));
    }
    let run = run_id(&seed.names);
    let state = seed.stack.state().root();
    let mut command = tokio::process::Command::new(lossproof_runtime::process::this_exe());
    command
        .arg0(lossproof_runtime::process::this_exe_name())
        .args(["nightly", "--run", run, "--consumer", "correct", "--state"])
        .arg(state)
        .args(["--timeout-s", &workflow_limit.as_secs().to_string()])
        .env(
            lossproof_runtime::supervisor::PARENT_PID_VAR,
            std::process::id().to_string(),
        )
        .stdin(Stdio::null())
        .kill_on_drop(true);
    if let Some(profile) = seed.options.profile.as_deref() {
        command.arg("--profile").arg(profile);
    }
    let started = std::time::Instant::now();
    let output = tokio::time::timeout(process_limit, command.output())
        .await
        .map_err(|_| {
            Error::NotFired(format!(
                "`lossproof nightly` did not end within {} s",
                process_limit.as_secs()
            ))
        })?
        .map_err(Error::io("run `lossproof nightly`"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let Some(written) = stdout.lines().find_map(|l| l.strip_prefix("report: ")) else {
        // Exit 2: it could not run (no moto, no dbt project, a stack error).
        return Err(Error::NotFired(format!(
            "`lossproof nightly` could not run: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    };
    let report: Report = std::fs::read_to_string(written)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .ok_or_else(|| Error::NotFired(format!("the nightly's report {written} is unreadable")))?;
    // "moto server on 127.0.0.1:P: ready in 1.4 s, 55 MB resident" (one
    // started for this nightly) or "moto server of the aws stack on
    // http://127.0.0.1:P: 120 MB resident", then "moto server after the
    // workflow: 160 MB resident".
    let (whose, moto_start) = stdout
        .lines()
        .filter(|l| !l.starts_with("moto server after"))
        .find_map(|l| l.strip_prefix("moto server ")?.split_once(": "))
        .map_or(("moto server", "?"), |(place, figures)| {
            if place.starts_with("of the aws stack") {
                ("the aws stack's moto server", figures)
            } else {
                ("moto server", figures)
            }
        });
    let moto_end = stdout
        .lines()
        .find_map(|l| l.strip_prefix("moto server after the workflow: "))
        .unwrap_or("?");
    Ok(format!(
        "{} ({:.1} s; {whose} {moto_start}, {moto_end} after)",
        outcome(&report),
        started.elapsed().as_secs_f64()
    ))
}

/// The id `lossproof nightly --run` takes for the seed named `names`: it
/// names everything as `CaptureNames::for_run(id)` does, and the seed's
/// topic prefix without its `lp_` is such an id.
fn run_id(names: &CaptureNames) -> &str {
    let prefix = &names.topic_prefix;
    prefix.strip_prefix("lp_").unwrap_or(prefix)
}

/// Where a seed's `run nightly` keeps its marts (`lossproof nightly`'s
/// default for the seed; removed with the seed's data).
#[must_use]
pub(crate) fn marts_dir(state_root: &Path, names: &CaptureNames) -> PathBuf {
    lossproof_runtime::nightly::marts_dir(state_root, run_id(names))
}

/// One line: the status, the failed state and error, each attempt.
#[must_use]
pub(crate) fn outcome(report: &Report) -> String {
    let steps: Vec<String> = report
        .attempts
        .iter()
        .map(|a| {
            format!(
                "{} {} {:.1} s",
                a.state,
                a.error.as_deref().unwrap_or("ok"),
                a.seconds
            )
        })
        .collect();
    match report.failed_state.as_deref() {
        Some(state) => format!(
            "nightly {} at {state} ({}): {}",
            report.status,
            report.error.as_deref().unwrap_or("no error given"),
            steps.join(", ")
        ),
        None => format!("nightly {}: {}", report.status, steps.join(", ")),
    }
}
