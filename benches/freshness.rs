//! `cargo bench --profile perf --bench freshness -- --state DIR [--rows N]
//! [--rate OPS] [--seeds S]`: how far behind the source each consumer's
//! lake is, as a reader sees it, on a preloaded table: a phase with no
//! fault, then a phase where the correct consumer is killed every 10 s.
//! It runs `lossproof run` (this profile's build, so the consumers are
//! optimised) on the running local stack (`lossproof up --state DIR`) and
//! prints each consumer's lag next to the goals of docs/benchmarks.md
//! ("Freshness"). Figures, not a test.

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use common::BenchResult;
use lossproof_executor::freshness::{FreshnessRecord, percentile};
use lossproof_executor::run::{RunRecord, SeedRecord};
use lossproof_executor::snapshots::SnapshotRow;

#[allow(dead_code)] // helpers the stack benchmarks share; this one runs `lossproof` instead
mod common;

/// The goal: the correct consumer's lag p99 at most this with no fault,
/// and back under it within [`RECOVERY_MS`] of each kill.
const GOAL_MS: u64 = 2000;
const RECOVERY_MS: u64 = 5000;
/// Each phase's length, and when the kills come in the second.
const PHASE_S: u64 = 30;
const KILL_EVERY_S: u64 = 10;
/// The first seconds of the first phase are the consumers' first batches
/// after the preload's snapshot: not counted as "no fault".
const WARM_UP_MS: u64 = 5000;

#[derive(clap::Parser)]
struct Args {
    #[arg(long, default_value = ".lossproof")]
    state: PathBuf,
    /// Orders preloaded (the `orders` table's rows; customers a tenth,
    /// items about three per order).
    #[arg(long, default_value_t = 1_000_000)]
    rows: u64,
    /// Workload operations per second (an operation is about four change
    /// events: 250/s is about 1,000 source changes/s).
    #[arg(long, default_value_t = 250)]
    rate: u64,
    #[arg(long, default_value = "1")]
    seeds: String,
}

fn main() -> std::process::ExitCode {
    let args = <Args as clap::Parser>::parse_from(common::args());
    common::exit(measure(&args))
}

fn scenario(rows: u64, rate: u64) -> String {
    format!(
        "scenario bench-freshness\n\
         workload orders rate {rate}/s connections 4 preload {rows}\n\
         consumers careless, correct\n\
         under load {PHASE_S}s <\n>\n\
         under load {PHASE_S}s <\n  kill consumer correct every {KILL_EVERY_S}s\n>\n\
         drain within 10m\n\
         expect consumer correct clean\n"
    )
}

fn measure(args: &Args) -> BenchResult<bool> {
    let dir = std::env::temp_dir().join("lossproof-bench-freshness");
    std::fs::create_dir_all(&dir)?;
    let file = dir.join("bench-freshness.lp");
    std::fs::write(&file, scenario(args.rows, args.rate))?;
    let out = dir.join("run.json");
    let started = Instant::now();
    let status = Command::new(env!("CARGO_BIN_EXE_lossproof"))
        .arg("run")
        .arg(&file)
        .args(["--seeds", &args.seeds])
        .arg("--state")
        .arg(&args.state)
        .arg("--out")
        .arg(&out)
        .status()?;
    eprintln!(
        "bench: lossproof run: exit {status} in {:.0}s",
        started.elapsed().as_secs_f64()
    );
    let record = RunRecord::read(&out)?;
    println!();
    println!(
        "freshness at {} preloaded orders, {} operations/s; {PHASE_S}s with no fault, then {PHASE_S}s \
         killing the correct consumer every {KILL_EVERY_S}s (the build: {})",
        args.rows,
        args.rate,
        env!("CARGO_BIN_EXE_lossproof")
    );
    println!(
        "{:>5} {:>9} {:>9} {:>11} {:>11} {:>10} {:>10}  recovery after each kill (s)",
        "seed", "consumer", "rate", "p50 calm s", "p99 calm s", "max calm s", "max kill s"
    );
    let mut met = true;
    for seed in &record.results {
        let rate = seed.schedule.as_ref().map_or(0.0, |s| s.achieved_ops_per_s);
        let kills: Vec<u64> = seed
            .faults
            .iter()
            .filter(|f| f.fired && f.fault == "kill")
            .filter_map(|f| f.fired_ms)
            .collect();
        let second_phase = seed
            .faults
            .iter()
            .filter_map(|f| f.due_ms.zip(Some(f.planned_ms)))
            .map(|(due, planned)| due - planned)
            .next()
            .unwrap_or(u64::MAX);
        for lag in seed.freshness.iter().filter(|f| f.method == "probe") {
            let calm = window(lag, WARM_UP_MS, second_phase);
            let kill = window(lag, second_phase, u64::MAX);
            let recovery: Vec<String> = kills
                .iter()
                .map(|k| {
                    recovered(lag, *k).map_or_else(
                        || "never".to_owned(),
                        |ms| format!("{:.1}", ms as f64 / 1000.0),
                    )
                })
                .collect();
            println!(
                "{:>5} {:>9} {:>9.0} {:>11.1} {:>11.1} {:>10.1} {:>10.1}  {}",
                seed.seed,
                lag.consumer,
                rate,
                secs(percentile(&calm, 50)),
                secs(percentile(&calm, 99)),
                secs(calm.last().copied().unwrap_or(0)),
                secs(kill.last().copied().unwrap_or(0)),
                recovery.join(" ")
            );
        }
        met &= goals(seed, &kills, second_phase);
    }
    check_cost(&record, args.rows);
    Ok(met)
}

/// What following and checking every snapshot cost per state, per
/// consumer: its changed keys, the follower's read of what it changed and
/// the check (issue: "per-snapshot check time flat in table size"; compare
/// the figures of two `--rows`).
fn check_cost(record: &RunRecord, rows: u64) {
    println!();
    println!(
        "snapshot check cost per state at {rows} preloaded orders (the first state, the preload's snapshot, left out)"
    );
    println!(
        "{:>5} {:>9} {:>7} {:>13} {:>12} {:>12} {:>12} {:>12}",
        "seed",
        "consumer",
        "states",
        "keys p50/max",
        "read p50 ms",
        "read p99 ms",
        "check p50 us",
        "check p99 us"
    );
    for seed in &record.results {
        for consumer in seed.consistency.iter().map(|c| c.consumer.as_str()) {
            let states: Vec<_> = seed
                .snapshots
                .iter()
                .filter(|s| s.consumer == consumer)
                .skip(1)
                .collect();
            let sorted = |f: &dyn Fn(&&SnapshotRow) -> u64| {
                let mut v: Vec<u64> = states.iter().map(f).collect();
                v.sort_unstable();
                v
            };
            let keys = sorted(&|s| s.changed);
            let read = sorted(&|s| s.read_us);
            let check = sorted(&|s| s.check_us);
            println!(
                "{:>5} {:>9} {:>7} {:>13} {:>12.1} {:>12.1} {:>12} {:>12}",
                seed.seed,
                consumer,
                states.len(),
                format!(
                    "{}/{}",
                    percentile(&keys, 50),
                    keys.last().copied().unwrap_or(0)
                ),
                percentile(&read, 50) as f64 / 1000.0,
                percentile(&read, 99) as f64 / 1000.0,
                percentile(&check, 50),
                percentile(&check, 99)
            );
        }
    }
}

/// The sorted lags of `lag` sampled in `[from, to)` ms of the seed.
fn window(lag: &FreshnessRecord, from: u64, to: u64) -> Vec<u64> {
    let mut out: Vec<u64> = samples(lag)
        .filter(|(t, _)| (from..to).contains(t))
        .map(|(_, l)| l)
        .collect();
    out.sort_unstable();
    out
}

fn samples(lag: &FreshnessRecord) -> impl Iterator<Item = (u64, u64)> + '_ {
    lag.t_ms.iter().copied().zip(lag.lags_ms.iter().copied())
}

/// How long after the kill at `kill_ms` the lag was back under the goal for
/// good (until the next kill or the end), if it was.
fn recovered(lag: &FreshnessRecord, kill_ms: u64) -> Option<u64> {
    let after: Vec<(u64, u64)> = samples(lag)
        .filter(|(t, _)| *t >= kill_ms && *t < kill_ms + KILL_EVERY_S * 1000)
        .collect();
    let last_over = after.iter().rposition(|(_, l)| *l > GOAL_MS);
    match last_over {
        None => Some(0),
        Some(i) => after.get(i + 1).map(|(t, _)| t - kill_ms),
    }
}

fn secs(ms: u64) -> f64 {
    ms as f64 / 1000.0
}

/// Print the goals for the correct consumer in `seed`; whether all held.
fn goals(seed: &SeedRecord, kills: &[u64], second_phase: u64) -> bool {
    let Some(correct) = seed
        .freshness
        .iter()
        .find(|f| f.consumer == "correct" && f.method == "probe")
    else {
        println!(
            "seed {}: the correct consumer's lag was not measured",
            seed.seed
        );
        return false;
    };
    let calm = percentile(&window(correct, WARM_UP_MS, second_phase), 99);
    let calm_met = calm <= GOAL_MS;
    println!(
        "  {} correct's lag p99 with no fault at most {:.1}s: {:.2}s",
        if calm_met { "met    " } else { "NOT MET" },
        secs(GOAL_MS),
        secs(calm)
    );
    let mut all = calm_met;
    for kill in kills {
        let back = recovered(correct, *kill);
        let met = back.is_some_and(|ms| ms <= RECOVERY_MS);
        all &= met;
        println!(
            "  {} back under {:.1}s within {:.0}s of the kill at {:.1}s: {}",
            if met { "met    " } else { "NOT MET" },
            secs(GOAL_MS),
            secs(RECOVERY_MS),
            secs(*kill),
            back.map_or_else(|| "never".to_owned(), |ms| format!("{:.1}s", secs(ms)))
        );
    }
    if !seed.on_schedule() {
        println!(
            "  seed {} was off schedule: {}",
            seed.seed,
            seed.schedule
                .as_ref()
                .map(|s| s.off.join("; "))
                .unwrap_or_default()
        );
    }
    all
}
