//! `lossproof replay RECORD --seed N [--times K]`: run one seed of a run
//! record again, and with `--times K` K times, saying how reproducible it
//! is: whether the workload attempted the same operations, how far each
//! fault's firing moved against its plan, and how much the damage and the
//! verdict varied (docs/run.md, "How reproducible a seed is").

use std::fmt::Write as _;
use std::path::Path;

use lossproof_executor::run::{self, SeedRecord};

use crate::CliResult;
use crate::run_cli::{Args, Outputs, quantile};

/// Run seed `seed` of `record` again, `times` times (each into a record of
/// its own under `<state>/runs/`), then print the reproducibility summary.
/// Passes when every run did.
pub(crate) fn replay(
    record: &Path,
    seed: u64,
    state: &Path,
    keep: bool,
    times: usize,
) -> CliResult<bool> {
    let recorded = recorded_seed(record, seed)?;
    if times == 0 {
        return Err("--times must be at least 1".into());
    }
    let seeds = seed.to_string();
    let args = |outputs| Args {
        file: Path::new(&recorded.file),
        seeds: &seeds,
        partition: None,
        time_scale: recorded.time_scale,
        jobs: 1,
        state,
        profile: None,
        consumers: Some(&recorded.consumers),
        keep,
        outputs,
    };
    if times == 1 {
        return crate::run_cli::run(&args(Outputs::default()));
    }
    let runs = state.join("runs");
    std::fs::create_dir_all(&runs).map_err(|e| format!("{}: {e}", runs.display()))?;
    let outs: Vec<std::path::PathBuf> = (1..=times)
        .map(|n| runs.join(format!("replay-{}-s{seed}-{n}.json", recorded.run_id)))
        .collect();
    let mut results = Vec::new();
    let mut passed = true;
    for (n, out) in (1..).zip(&outs) {
        println!("\nreplay {n} of {times}: seed {seed} of {}", recorded.file);
        let (ran, passed_now) = run_once(&args(Outputs::default()), out)?;
        passed &= passed_now;
        let Some(result) = ran else {
            println!("replay: stopped after an interrupted run ({n} of {times})");
            break;
        };
        results.push(result);
    }
    let original = recorded.results.iter().find(|r| r.seed == seed);
    print!(
        "\n{}",
        summary(original, &results, &recorded.consumers, seed)
    );
    Ok(passed)
}

/// The run record at `record`, checked to hold `seed` and to have run on
/// the local stack (which `replay` and `shrink` start again).
pub(crate) fn recorded_seed(record: &Path, seed: u64) -> CliResult<run::RunRecord> {
    let recorded = run::RunRecord::read(record)?;
    if !recorded.seeds.contains(&seed) {
        return Err(format!(
            "seed {seed} is not in {} (seeds {:?})",
            record.display(),
            recorded.seeds
        )
        .into());
    }
    if recorded.stack.profile != "local" {
        return Err(format!(
            "{} ran on profile {}: run the seed again with `lossproof run {} --seeds {seed} --profile PROFILE.toml`",
            record.display(),
            recorded.stack.profile,
            recorded.file
        )
        .into());
    }
    Ok(recorded)
}

/// Run `args` (one seed) with its record written to `out` (no HTML), and
/// read that seed's record back (an INVALID seed's too): `None` when a
/// signal interrupted it. Also whether the run passed.
pub(crate) fn run_once(args: &Args<'_>, out: &Path) -> CliResult<(Option<SeedRecord>, bool)> {
    // A record left at `out` by an earlier run must not pass for this one's.
    let _ = std::fs::remove_file(out);
    let ran = crate::run_cli::run(&Args {
        outputs: Outputs {
            record: Some(out),
            no_html: true,
            ..args.outputs
        },
        ..*args
    });
    let passed = match ran {
        Ok(passed) => passed,
        // An INVALID seed is an error of the run, after its record is written.
        Err(e) if !out.exists() => return Err(e),
        Err(_) => false,
    };
    let result = run::RunRecord::read(out)?.results.pop().filter(|r| {
        !r.reason
            .as_deref()
            .is_some_and(|why| why.contains("interrupted by"))
    });
    Ok((result, passed))
}

/// How reproducible seed `seed` was over `runs` (with the `original`
/// run's verdict and damage, when the record holds it).
fn summary(
    original: Option<&SeedRecord>,
    runs: &[SeedRecord],
    consumers: &[String],
    seed: u64,
) -> String {
    let mut out = format!("seed {seed}, run {} times:\n", runs.len());
    if runs.is_empty() {
        return out;
    }
    workload_line(runs, &mut out);
    faults_line(runs, &mut out);
    // The damage and the verdict.
    for consumer in consumers {
        let wrong = runs
            .iter()
            .filter_map(|r| r.wrong_rows.get(consumer).copied());
        let scored = runs
            .iter()
            .filter(|r| r.wrong_rows.contains_key(consumer))
            .count();
        let (min, median, max) = spread(wrong);
        let damaged = runs
            .iter()
            .filter(|r| r.wrong_rows.get(consumer).is_some_and(|n| *n > 0))
            .count();
        let _ = write!(
            out,
            "  {consumer}: wrong rows min {min} median {median} max {max} over {scored} scored runs; damaged in {damaged}"
        );
        if let Some(n) = original.and_then(|o| o.wrong_rows.get(consumer)) {
            let _ = write!(out, " (the recorded run: {n})");
        }
        out.push('\n');
    }
    let lost = spread(runs.iter().map(|r| r.capture_lost_keys() as u64));
    if lost.2 > 0 {
        let _ = writeln!(
            out,
            "  capture lost keys: min {} median {} max {}",
            lost.0, lost.1, lost.2
        );
    }
    let mut verdicts: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    for r in runs {
        *verdicts.entry(format!("{:?}", r.verdict)).or_default() += 1;
    }
    let tally: Vec<String> = verdicts.iter().map(|(v, n)| format!("{v} {n}")).collect();
    let _ = write!(
        out,
        "  verdicts: {}{}",
        tally.join(", "),
        if verdicts.len() == 1 {
            " (all agree)"
        } else {
            " (they disagree: the verdict depends on timing)"
        }
    );
    if let Some(o) = original {
        let _ = write!(out, "; the recorded run: {:?}", o.verdict);
    }
    out.push('\n');
    out
}

/// Whether the runs attempted the same operations (and why not).
fn workload_line(runs: &[SeedRecord], out: &mut String) {
    let digests: std::collections::BTreeSet<&str> =
        runs.iter().map(|r| r.workload_digest.as_str()).collect();
    let ops = spread(runs.iter().map(|r| r.workload_ops));
    let prefixes: std::collections::BTreeSet<&str> = runs
        .iter()
        .map(|r| r.workload_prefix_digest.as_str())
        .collect();
    if digests.len() == 1 {
        let _ = writeln!(
            *out,
            "  workload: the same operations every time (digest {}, {} operations)",
            digests.first().copied().unwrap_or_default(),
            ops.0
        );
    } else if prefixes.len() == 1 && !prefixes.contains("") {
        let _ = writeln!(
            *out,
            "  workload: the same operations every time, {}..{} of them: timing decides how many \
             (the initial customers are created unpaced, a connection the source held up more \
             than a second skips what it owes beyond that, a phase ends at a time, not a count); \
             each connection's first {} operations per phase identical (digest {})",
            ops.0,
            ops.2,
            lossproof_executor::workload::runner::PREFIX_OPS,
            prefixes.first().copied().unwrap_or_default()
        );
    } else {
        let _ = writeln!(
            *out,
            "  workload: {} different operation digests over {} runs ({}..{} operations), their \
             first operations too: the same seed generated different operations (a bug in \
             lossproof: please report it)",
            digests.len(),
            runs.len(),
            ops.0,
            ops.2
        );
    }
}

/// Each planned fault occurrence's drift (fired minus planned) over the
/// runs.
fn faults_line(runs: &[SeedRecord], out: &mut String) {
    let occurrences = runs.iter().map(|r| r.faults.len()).max().unwrap_or(0);
    if occurrences > 0 {
        let mut spreads: Vec<(u64, usize)> = Vec::new();
        let mut drifts: Vec<u64> = Vec::new();
        let mut unfired = 0;
        for i in 0..occurrences {
            let fired: Vec<u64> = runs
                .iter()
                .filter_map(|r| r.faults.get(i))
                .filter_map(|f| f.drift_ms.filter(|_| f.fired))
                .collect();
            unfired += runs.len() - fired.len();
            if let (Some(min), Some(max)) = (fired.iter().min(), fired.iter().max()) {
                spreads.push((max - min, i));
            }
            drifts.extend(fired);
        }
        drifts.sort_unstable();
        spreads.sort_unstable();
        let _ = write!(
            out,
            "  faults: {occurrences} planned occurrences; {unfired} of {} did not fire",
            occurrences * runs.len()
        );
        if let (Some(_), Some((widest, at))) = (drifts.last(), spreads.last()) {
            let widest_fault = runs
                .iter()
                .find_map(|r| r.faults.get(*at))
                .map(|f| format!("{} ({})", f.text, f.location))
                .unwrap_or_default();
            let medians: Vec<u64> = spreads.iter().map(|(s, _)| *s).collect();
            let _ = write!(
                out,
                "; fired minus planned: median {}, max {}; spread over the runs per occurrence: \
                 median {}, widest {} ({widest_fault})",
                secs(quantile(&drifts, 0.5)),
                secs(quantile(&drifts, 1.0)),
                secs(quantile(&medians, 0.5)),
                secs(*widest)
            );
        }
        out.push('\n');
    }
}

/// Min, median and max (zeros when empty).
fn spread(values: impl Iterator<Item = u64>) -> (u64, u64, u64) {
    let mut sorted: Vec<u64> = values.collect();
    if sorted.is_empty() {
        return (0, 0, 0);
    }
    sorted.sort_unstable();
    (sorted[0], quantile(&sorted, 0.5), sorted[sorted.len() - 1])
}

#[allow(clippy::cast_precision_loss)] // milliseconds, printed
fn secs(ms: u64) -> String {
    format!("{:.2}s", ms as f64 / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lossproof_executor::run::{FaultRecord, Verdict};

    fn seed_run(
        digest: &str,
        careless: u64,
        drifts: &[Option<u64>],
        verdict: Verdict,
    ) -> SeedRecord {
        let mut r = SeedRecord::new(3, "r".into());
        r.verdict = verdict;
        r.workload_digest = digest.into();
        r.workload_ops = 1000;
        r.wrong_rows.insert("careless".into(), careless);
        r.faults = drifts
            .iter()
            .map(|d| FaultRecord {
                fired: d.is_some(),
                drift_ms: *d,
                text: "kill consumer careless".into(),
                location: "crash.lp:9:3".into(),
                ..FaultRecord::default()
            })
            .collect();
        r
    }

    #[test]
    fn the_summary_says_what_varied_and_what_did_not() {
        let runs = [
            seed_run("ab", 10, &[Some(10), Some(20)], Verdict::Fail),
            seed_run("ab", 0, &[Some(30), None], Verdict::Pass),
            seed_run("ab", 40, &[Some(10), Some(520)], Verdict::Fail),
        ];
        let text = summary(None, &runs, &["careless".to_owned()], 3);
        assert!(text.contains("seed 3, run 3 times"), "{text}");
        assert!(
            text.contains("the same operations every time (digest ab, 1000 operations)"),
            "{text}"
        );
        assert!(text.contains("1 of 6 did not fire"), "{text}");
        assert!(
            text.contains("widest 0.50s (kill consumer careless (crash.lp:9:3))"),
            "{text}"
        );
        assert!(
            text.contains(
                "careless: wrong rows min 0 median 10 max 40 over 3 scored runs; damaged in 2"
            ),
            "{text}"
        );
        assert!(
            text.contains("verdicts: Fail 2, Pass 1 (they disagree"),
            "{text}"
        );
        let mut other = [
            seed_run("ab", 1, &[], Verdict::Fail),
            seed_run("cd", 1, &[], Verdict::Fail),
        ];
        let text = summary(None, &other, &["careless".to_owned()], 3);
        assert!(text.contains("2 different operation digests over 2 runs (1000..1000 operations), their first operations too: the same seed generated different operations"), "{text}");
        assert!(text.contains("(all agree)"), "{text}");
        other[1].workload_ops = 990;
        let text = summary(None, &other, &["careless".to_owned()], 3);
        assert!(
            text.contains("(990..1000 operations), their first operations too"),
            "{text}"
        );
        for run in &mut other {
            run.workload_prefix_digest = "ef".into();
        }
        let text = summary(None, &other, &["careless".to_owned()], 3);
        assert!(
            text.contains(
                "the same operations every time, 990..1000 of them: timing decides how many"
            ),
            "{text}"
        );
        assert!(text.contains("identical (digest ef)"), "{text}");
    }
}
