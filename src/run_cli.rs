//! `lossproof run FILE --seeds 1..50`: the product's main job. Every seed is
//! run against the local stack (started once, reused), scored, and reported
//! as a distribution over seeds.
//!
//! Exit codes: 0 every seed PASS, 1 any FAIL, 2 any INVALID or a stack error.

use std::path::{Path, PathBuf};
use std::time::Instant;

use lossproof_runtime::Stack;
use lossproof_stdlib::consumers;
use lossproof_stdlib::run::{self, SeedRecord, Verdict};

use crate::scenario;

pub struct Args<'a> {
    pub file: &'a Path,
    pub seeds: &'a str,
    pub state: &'a Path,
    pub consumers: Option<&'a [String]>,
    pub keep: bool,
    pub out: Option<&'a Path>,
    pub junit: Option<&'a Path>,
    pub html: Option<&'a Path>,
}

/// `7`, `1..50` (inclusive), `1,4,9`, or a mix (`1..3,9`).
pub fn parse_seeds(spec: &str) -> Result<Vec<u64>, String> {
    let bad = |part: &str| {
        format!("--seeds: `{part}` is not a seed (7), a range (1..50) or a list (1,4,9)")
    };
    let mut seeds = Vec::new();
    for part in spec.split(',').map(str::trim) {
        if let Some((a, b)) = part.split_once("..") {
            let (a, b): (u64, u64) = (
                a.parse().map_err(|_| bad(part))?,
                b.parse().map_err(|_| bad(part))?,
            );
            if a > b {
                return Err(format!("--seeds: the range `{part}` is empty"));
            }
            seeds.extend(a..=b);
        } else {
            seeds.push(part.parse().map_err(|_| bad(part))?);
        }
    }
    let mut seen = std::collections::HashSet::new();
    seeds.retain(|s| seen.insert(*s));
    Ok(seeds)
}

/// The plan, if it can be run as asked; every refusal says why.
fn preflight(
    args: &Args<'_>,
) -> Result<(lossproof_lang::Plan, Vec<String>, run::Locations), String> {
    let analysis = scenario::analyze(args.file)?;
    scenario::print_diagnostics(&analysis);
    let plan = analysis
        .plan
        .ok_or_else(|| format!("{} has errors: nothing was run", args.file.display()))?;
    let locations = run::Locations::of(&plan, &analysis.sources);
    let missing = crate::check::not_yet_lines(&analysis.sources, &plan);
    if !missing.is_empty() {
        return Err(format!(
            "{} uses what lossproof cannot run yet (nothing was run):\n  {}",
            args.file.display(),
            missing.join("\n  ")
        ));
    }
    let consumers: Vec<String> = args
        .consumers
        .map_or_else(|| plan.consumers.clone(), <[String]>::to_vec);
    if let Some(c) = consumers.iter().find(|c| consumers::program(c).is_none()) {
        let programs: Vec<&str> = consumers::PROGRAMS.iter().map(|p| p.name).collect();
        return Err(format!(
            "consumer {c} does not exist as a program yet; run the others with --consumers {}",
            programs.join(",")
        ));
    }
    if let Some(why) = run::nothing_to_judge(&plan, &consumers) {
        return Err(format!(
            "{}: {why}; nothing was run (a seed that checks nothing cannot PASS)",
            args.file.display()
        ));
    }
    Ok((plan, consumers, locations))
}

pub fn run(args: &Args<'_>) -> Result<bool, String> {
    let seeds = parse_seeds(args.seeds)?;
    let (plan, consumers, locations) = preflight(args)?;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let run_id = format!(
        "{}{stamp}",
        plan.scenario
            .replace(|c: char| !c.is_ascii_alphanumeric(), "")
    );
    let stack = Stack::open(args.state).map_err(|e| e.to_string())?;
    let runtime = crate::stack_cli::runtime()?;
    let interrupt = runtime.block_on(async { run::interrupt_on_signals() })?;
    let options = run::Options {
        interrupt: interrupt.clone(),
        locations,
        state: args.state.to_path_buf(),
        program: std::env::current_exe().map_err(|e| format!("where is lossproof? {e}"))?,
        consumers: consumers.clone(),
        run_id: run_id.clone(),
        keep: args.keep,
    };
    eprintln!(
        "lossproof run {}: scenario {}, seeds {}, consumers {} (run id {run_id})",
        args.file.display(),
        plan.scenario,
        args.seeds,
        consumers.join(", ")
    );
    let results = runtime.block_on(async {
        stack
            .up(&|line| eprintln!("  {line}"))
            .await
            .map_err(|e| format!("the stack: {e}"))?;
        let mut results = Vec::new();
        for (i, seed) in seeds.iter().enumerate() {
            if let Some(signal) = *interrupt.borrow() {
                return Err(format!("{signal} before seed {seed}: nothing more was run"));
            }
            let started = Instant::now();
            let prefix = format!("[seed {}/{} ({seed})]", i + 1, seeds.len());
            let progress = |line: &str| {
                eprintln!("{prefix} {:>6.1}s  {line}", started.elapsed().as_secs_f64());
            };
            // On SIGINT/SIGTERM the seed stops, cleans up and is INVALID;
            // the run ends after it (its record is still written).
            let record = run::run_seed(&stack, &plan, *seed, &options, &progress).await;
            eprintln!("{prefix} {}", seed_line(&record));
            results.push(record);
            if let Some(signal) = *interrupt.borrow() {
                eprintln!(
                    "lossproof run: {signal}: stopped after {} of {} seeds (the stack stays up; `lossproof down` stops it)",
                    results.len(),
                    seeds.len()
                );
                break;
            }
        }
        Ok::<_, String>(results)
    })?;

    print_report(&results, &consumers, args.file);
    write_outputs(
        args,
        &plan.scenario,
        &run_id,
        &seeds,
        &consumers,
        &results,
        &stack,
    )?;
    if results.iter().any(|r| r.verdict == Verdict::Invalid) {
        return Err(format!(
            "{} of {} seeds INVALID (not scored)",
            results
                .iter()
                .filter(|r| r.verdict == Verdict::Invalid)
                .count(),
            results.len()
        ));
    }
    Ok(results.iter().all(|r| r.verdict == Verdict::Pass))
}

/// JUnit XML for CI systems: one test case per seed and assertion (an
/// INVALID seed is one errored case; an assertion not evaluated is skipped,
/// with the reason).
fn junit_xml(scenario: &str, results: &[SeedRecord]) -> String {
    use std::fmt::Write as _;
    let esc = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
    };
    let mut cases = String::new();
    let (mut tests, mut failures, mut errors, mut skipped) = (0, 0, 0, 0);
    for r in results {
        let time = r.timings.total_ms as f64 / 1000.0;
        if r.verdict == Verdict::Invalid {
            tests += 1;
            errors += 1;
            let _ = writeln!(
                cases,
                "    <testcase classname=\"{}\" name=\"seed {} (INVALID)\" time=\"{time:.3}\"><error message=\"{}\"/></testcase>",
                esc(scenario),
                r.seed,
                esc(r.reason.as_deref().unwrap_or("invalid"))
            );
            continue;
        }
        for a in &r.assertions {
            tests += 1;
            let name = format!("seed {}: {} ({})", r.seed, a.name, a.location);
            let body = match a.passed {
                Some(true) => String::new(),
                Some(false) => {
                    failures += 1;
                    let got = a.got.clone().or_else(|| a.note.clone()).unwrap_or_default();
                    format!(
                        "<failure message=\"got {}\">{}</failure>",
                        esc(&got),
                        esc(&a.sql)
                    )
                }
                None => {
                    skipped += 1;
                    format!(
                        "<skipped message=\"{}\"/>",
                        esc(a.note.as_deref().unwrap_or_default())
                    )
                }
            };
            let _ = writeln!(
                cases,
                "    <testcase classname=\"{}\" name=\"{}\" time=\"{time:.3}\">{body}</testcase>",
                esc(scenario),
                esc(&name)
            );
        }
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\">\n{cases}  </testsuite>\n</testsuites>\n",
        esc(scenario)
    )
}

/// The run record, and the JUnit XML and HTML report if asked for.
fn write_outputs(
    args: &Args<'_>,
    scenario: &str,
    run_id: &str,
    seeds: &[u64],
    consumers: &[String],
    results: &[SeedRecord],
    stack: &Stack,
) -> Result<(), String> {
    let record = run::RunRecord {
        lossproof_version: env!("CARGO_PKG_VERSION").to_owned(),
        scenario: scenario.to_owned(),
        // Absolute, so `replay` works from any directory.
        file: std::fs::canonicalize(args.file)
            .unwrap_or_else(|_| args.file.to_path_buf())
            .display()
            .to_string(),
        run_id: run_id.to_owned(),
        seeds: seeds.to_vec(),
        consumers: consumers.to_vec(),
        results: results.to_vec(),
    };
    let out: PathBuf = args.out.map_or_else(
        || {
            stack
                .state()
                .root()
                .join("runs")
                .join(format!("{run_id}.json"))
        },
        Path::to_path_buf,
    );
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let text = serde_json::to_string_pretty(&record).map_err(|e| e.to_string())?;
    std::fs::write(&out, text + "\n").map_err(|e| format!("write {}: {e}", out.display()))?;
    println!("run record: {}", out.display());
    if let Some(html) = args.html {
        let page = crate::report_html::page(scenario, run_id, consumers, results, None);
        std::fs::write(html, page).map_err(|e| format!("write {}: {e}", html.display()))?;
        println!("HTML report: {}", html.display());
    }
    if let Some(junit) = args.junit {
        std::fs::write(junit, junit_xml(scenario, results))
            .map_err(|e| format!("write {}: {e}", junit.display()))?;
        println!("JUnit XML: {}", junit.display());
    }
    Ok(())
}

fn seed_line(record: &SeedRecord) -> String {
    let fired = record.faults.iter().filter(|f| f.fired).count();
    let wrong: Vec<String> = record
        .wrong_rows
        .iter()
        .map(|(c, n)| format!("{c} {n} wrong"))
        .collect();
    let mut line = format!(
        "{:?} in {:.1}s: {} of {} faults fired ({} during load), {}",
        record.verdict,
        record.timings.total_ms as f64 / 1000.0,
        fired,
        record.faults.len(),
        record
            .faults
            .iter()
            .filter(|f| f.fired && f.during_load)
            .count(),
        if wrong.is_empty() {
            "not scored".to_owned()
        } else {
            wrong.join(", ")
        }
    );
    if let Some(reason) = &record.reason {
        line.push_str(" — ");
        line.push_str(reason);
    }
    line
}

/// Per consumer: wrong rows by seed, the distribution, the worst seed.
fn print_report(results: &[SeedRecord], consumers: &[String], file: &Path) {
    println!();
    println!("{:<6} {:<8} {:>8}  WRONG ROWS", "SEED", "VERDICT", "FAULTS");
    for r in results {
        let wrong: Vec<String> = consumers
            .iter()
            .map(|c| {
                r.wrong_rows
                    .get(c)
                    .map_or_else(|| format!("{c} -"), |n| format!("{c} {n}"))
            })
            .collect();
        println!(
            "{:<6} {:<8} {:>8}  {}",
            r.seed,
            format!("{:?}", r.verdict).to_uppercase(),
            format!(
                "{}/{}",
                r.faults.iter().filter(|f| f.fired).count(),
                r.faults.len()
            ),
            wrong.join(", ")
        );
    }
    let overheads: Vec<f64> = results
        .iter()
        .map(|r| r.timings.total_ms.saturating_sub(r.timings.load_ms) as f64 / 1000.0)
        .collect();
    if !overheads.is_empty() {
        println!(
            "per-seed overhead (wall time minus load): mean {:.1}s, max {:.1}s (drain {:.1}s, reconcile {:.1}s on average)",
            overheads.iter().sum::<f64>() / overheads.len() as f64,
            overheads.iter().copied().fold(0.0, f64::max),
            results
                .iter()
                .map(|r| r.timings.drain_ms as f64)
                .sum::<f64>()
                / 1000.0
                / results.len() as f64,
            results
                .iter()
                .map(|r| r.timings.reconcile_ms as f64)
                .sum::<f64>()
                / 1000.0
                / results.len() as f64,
        );
    }
    println!();
    for consumer in consumers {
        let mut scored: Vec<(u64, u64)> = results
            .iter()
            .filter_map(|r| r.wrong_rows.get(consumer).map(|n| (*n, r.seed)))
            .collect();
        if scored.is_empty() {
            println!("{consumer}: no seed was scored");
            continue;
        }
        scored.sort_unstable();
        let values: Vec<u64> = scored.iter().map(|(n, _)| *n).collect();
        let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
        let damaged = values.iter().filter(|n| **n > 0).count();
        let (worst, worst_seed) = scored[scored.len() - 1];
        println!(
            "{consumer}: wrong rows over {} scored seeds: min {} median {} p90 {} max {}; damaged in {damaged}/{} seeds ({:.0}%)",
            values.len(),
            values[0],
            at(0.5),
            at(0.9),
            worst,
            values.len(),
            damaged as f64 * 100.0 / values.len() as f64
        );
        if worst > 0 {
            println!(
                "  worst: seed {worst_seed} ({worst} wrong rows); replay: lossproof run {} --seeds {worst_seed} --consumers {consumer} --keep",
                file.display()
            );
        }
    }
}

/// `lossproof replay RECORD --seed N`: run one seed of a recorded run again,
/// with the recorded scenario file and consumers.
pub fn replay(record: &Path, seed: u64, state: &Path, keep: bool) -> Result<bool, String> {
    let recorded = run::RunRecord::read(record)?;
    if !recorded.seeds.contains(&seed) {
        return Err(format!(
            "seed {seed} is not in {} (seeds {:?})",
            record.display(),
            recorded.seeds
        ));
    }
    let (file, consumers) = (recorded.file, recorded.consumers);
    let seeds = seed.to_string();
    run(&Args {
        file: Path::new(&file),
        seeds: &seeds,
        state,
        consumers: Some(&consumers),
        keep,
        out: None,
        junit: None,
        html: None,
    })
}

#[cfg(test)]
mod tests {
    use super::parse_seeds;

    #[test]
    fn seeds_are_single_ranges_and_lists() {
        assert_eq!(parse_seeds("7").unwrap(), [7]);
        assert_eq!(parse_seeds("1..3").unwrap(), [1, 2, 3]);
        assert_eq!(parse_seeds("1,4,9").unwrap(), [1, 4, 9]);
        assert_eq!(parse_seeds("1..3,2,9").unwrap(), [1, 2, 3, 9]);
        assert!(parse_seeds("3..1").unwrap_err().contains("empty"));
        assert!(parse_seeds("x").unwrap_err().contains("`x`"));
    }
}
