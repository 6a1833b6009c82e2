//! `cargo bench --profile dev --bench jobs -- --state DIR [--scenario F]
//! [--seeds S] [--jobs 1,2,4,8]`: the pace of `lossproof run` one seed at a
//! time and with `--jobs N`, on the running local stack (`lossproof up
//! --state DIR`). For each N: wall time, seeds/hour, the mean per-seed
//! overhead (wall time of a seed minus its load phases), and each
//! consumer's wrong rows (median and max over the seeds) — so a shift in
//! damage under contention shows next to the speed-up. Figures, not a
//! test (docs/benchmarks.md).

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use common::BenchResult;
use lossproof_executor::run::RunRecord;

#[allow(dead_code)] // helpers the stack benchmarks share; this one runs `lossproof` instead
mod common;

#[derive(clap::Parser)]
struct Args {
    #[arg(long, default_value = ".lossproof")]
    state: PathBuf,
    #[arg(long, default_value = "scenarios/crash.lp")]
    scenario: PathBuf,
    #[arg(long, default_value = "1..8")]
    seeds: String,
    /// The `--jobs` values to compare.
    #[arg(long, value_delimiter = ',', default_values_t = [1, 2, 4, 8])]
    jobs: Vec<usize>,
}

fn main() -> std::process::ExitCode {
    let args = <Args as clap::Parser>::parse_from(common::args());
    common::exit(compare(&args))
}

fn compare(args: &Args) -> BenchResult<bool> {
    let mut rows = Vec::new();
    for &jobs in &args.jobs {
        let out = std::env::temp_dir().join(format!("lossproof-bench-jobs-{jobs}.json"));
        let started = Instant::now();
        let status = Command::new(env!("CARGO_BIN_EXE_lossproof"))
            .arg("run")
            .arg(&args.scenario)
            .args(["--seeds", &args.seeds, "--jobs", &jobs.to_string()])
            .arg("--state")
            .arg(&args.state)
            .arg("--out")
            .arg(&out)
            .status()?;
        let wall = started.elapsed().as_secs_f64();
        let record = RunRecord::read(&out)?;
        eprintln!("bench: --jobs {jobs}: exit {status} in {wall:.0}s");
        rows.push((jobs, wall, record));
    }
    println!();
    println!(
        "{} --seeds {} on this machine ({} cores)",
        args.scenario.display(),
        args.seeds,
        std::thread::available_parallelism().map_or(0, std::num::NonZero::get)
    );
    println!(
        "{:>5} {:>6} {:>8} {:>11} {:>15}  wrong rows per consumer (median / max over seeds)",
        "jobs", "seeds", "wall s", "seeds/hour", "overhead s/seed"
    );
    for (jobs, wall, record) in &rows {
        let seeds = record.results.len();
        #[allow(clippy::cast_precision_loss)]
        let overhead = record
            .results
            .iter()
            .map(|r| r.timings.total_ms.saturating_sub(r.timings.load_ms) as f64 / 1000.0)
            .sum::<f64>()
            / seeds.max(1) as f64;
        let damage: Vec<String> = record
            .consumers
            .iter()
            .map(|c| {
                let mut wrong: Vec<u64> = record
                    .results
                    .iter()
                    .filter_map(|r| r.wrong_rows.get(c).copied())
                    .collect();
                wrong.sort_unstable();
                match (wrong.get(wrong.len() / 2), wrong.last()) {
                    (Some(median), Some(max)) => format!("{c} {median} / {max}"),
                    _ => format!("{c} not scored"),
                }
            })
            .collect();
        #[allow(clippy::cast_precision_loss)]
        let per_hour = seeds as f64 * 3600.0 / wall.max(1.0);
        println!(
            "{jobs:>5} {seeds:>6} {wall:>8.0} {per_hour:>11.0} {overhead:>15.1}  {}",
            damage.join(", ")
        );
    }
    Ok(true)
}
