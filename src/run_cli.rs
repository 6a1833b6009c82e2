//! `lossproof run FILE --seeds 1..50`: the product's main job. Every seed is
//! run against the local stack (started once, reused), scored, and reported
//! as a distribution over seeds.
//!
//! Exit codes: 0 every seed PASS, 1 any FAIL, 2 any INVALID or a stack error.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use lossproof_executor::run::{self, SeedRecord, Verdict};
use lossproof_runtime::Stack;

use crate::CliResult;
use crate::scenario;

#[derive(Clone, Copy)]
pub(crate) struct Args<'a> {
    pub file: &'a Path,
    pub seeds: &'a str,
    /// `K/N` or `count:K/N`: run only the K-th of N shares of the seeds.
    pub partition: Option<&'a str>,
    /// `--time-scale F`: every duration of the timeline times F.
    pub time_scale: f64,
    /// `--jobs N`: seeds run at once on the one stack.
    pub jobs: usize,
    pub state: &'a Path,
    /// `--profile P.toml`: a team's own components instead of the local stack.
    pub profile: Option<&'a Path>,
    pub consumers: Option<&'a [String]>,
    pub keep: bool,
    pub outputs: Outputs<'a>,
}

/// Where a run's (or a merged report's) record, JUnit XML and HTML go.
#[derive(Clone, Copy, Default)]
pub(crate) struct Outputs<'a> {
    /// Default: `<state>/runs/<run id>.json` for a run; none for a report.
    pub record: Option<&'a Path>,
    pub junit: Option<&'a Path>,
    /// Default (neither `html` nor `no_html`): beside the run record.
    pub html: Option<&'a Path>,
    pub no_html: bool,
    /// Nothing on the terminal but errors (a run inside `shrink`, which
    /// prints its own line per run).
    pub quiet: bool,
}

/// The seeds of `--partition K/N` (or nextest's `count:K/N`).
fn partition_of(seeds: &[u64], spec: &str) -> CliResult<Vec<u64>> {
    let bad = || format!("--partition: `{spec}` is not K/N (e.g. 1/4: the first of four shares)");
    let (k, n) = spec
        .strip_prefix("count:")
        .unwrap_or(spec)
        .split_once('/')
        .ok_or_else(bad)?;
    let (k, n) = (
        k.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    Ok(run::partition(seeds, k, n)?)
}

/// `7`, `1..50` (inclusive), `1,4,9`, or a mix (`1..3,9`).
pub(crate) fn parse_seeds(spec: &str) -> CliResult<Vec<u64>> {
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
                return Err(format!("--seeds: the range `{part}` is empty").into());
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
    profile: Option<&lossproof_runtime::Profile>,
) -> CliResult<(lossproof_lang::Plan, Vec<String>, run::Locations)> {
    // On an external profile, what it cannot strike is refused up front,
    // at its place in the file, like any other error.
    let analysis = scenario::check(args.file, profile.map(|p| p.name.as_str()))?;
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
        )
        .into());
    }
    let consumers: Vec<String> = args
        .consumers
        .map_or_else(|| plan.consumers.clone(), <[String]>::to_vec);
    if let Some(c) = consumers.iter().find(|c| {
        lossproof_consumers::find(c).is_none() && !plan.declared.iter().any(|d| &d.name == *c)
    }) {
        let programs: Vec<&str> = lossproof_consumers::ALL
            .iter()
            .map(|p| p.name())
            .chain(plan.declared.iter().map(|d| d.name.as_str()))
            .collect();
        return Err(format!(
            "consumer {c} is neither lossproof's nor declared by the scenario; its consumers: --consumers {}",
            programs.join(",")
        )
        .into());
    }
    if let Some(why) = run::nothing_to_judge(&plan, &consumers) {
        return Err(format!(
            "{}: {why}; nothing was run (a seed that checks nothing cannot PASS)",
            args.file.display()
        )
        .into());
    }
    Ok((plan, consumers, locations))
}

/// The seeds this run executes (`--seeds`, then `--partition`), once the
/// other options are known to be in range.
fn seeds_to_run(args: &Args<'_>) -> CliResult<Vec<u64>> {
    if !(0.001..=100.0).contains(&args.time_scale) {
        return Err(format!(
            "--time-scale {}: a factor from 0.001 to 100 (0.1 runs the scenario in a tenth of its time)",
            args.time_scale
        )
        .into());
    }
    if !(1..=16).contains(&args.jobs) {
        return Err(format!("--jobs {}: from 1 to 16 seeds at once", args.jobs).into());
    }
    let seeds = parse_seeds(args.seeds)?;
    let Some(spec) = args.partition else {
        return Ok(seeds);
    };
    let share = partition_of(&seeds, spec)?;
    if share.is_empty() {
        return Err(format!(
            "--partition {spec} of --seeds {}: this share has no seed",
            args.seeds
        )
        .into());
    }
    Ok(share)
}

pub(crate) fn run(args: &Args<'_>) -> CliResult<bool> {
    let seeds = seeds_to_run(args)?;
    let profile = args
        .profile
        .map(lossproof_runtime::Profile::load)
        .transpose()?;
    let (plan, consumers, locations) = preflight(args, profile.as_ref())?;
    if args.jobs > 1 {
        shared_faults_refused(&plan, &locations, args.jobs)?;
    }
    #[allow(clippy::float_cmp)] // exactly the default: the plan as written
    let plan = if args.time_scale == 1.0 {
        plan
    } else {
        plan.time_scaled(args.time_scale)
    };
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let run_id = format!(
        "{}{stamp}",
        plan.scenario
            .replace(|c: char| !c.is_ascii_alphanumeric(), "")
    );
    let stack = match profile {
        Some(profile) => Stack::external(args.state, profile)?,
        None => Stack::open(args.state)?,
    };
    let runtime = crate::stack_cli::runtime()?;
    let interrupt = runtime.block_on(async { run::interrupt_on_signals() })?;
    let options = run::Options {
        interrupt: interrupt.clone(),
        locations,
        state: args.state.to_path_buf(),
        // Absolute: the consumers and the compactor load it too.
        profile: args
            .profile
            .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())),
        // This very build, even if the file at its path is rebuilt mid-run.
        program: lossproof_runtime::process::this_exe(),
        scenario_dir: lossproof_vocabulary::check::scenario_dir(args.file),
        consumers: consumers.clone(),
        run_id: run_id.clone(),
        keep: args.keep,
    };
    let quiet = args.outputs.quiet;
    if !quiet {
        announce(args, &plan, &seeds, &consumers, &run_id);
    }
    let started = Instant::now();
    let stack = Arc::new(stack);
    let plan = Arc::new(plan);
    let (components, results) = runtime.block_on(async {
        let components = stack_ready(&stack, quiet).await?;
        let results = run_seeds(
            &stack,
            &plan,
            &Arc::new(options),
            &seeds,
            (args.jobs, quiet),
        )
        .await?;
        CliResult::Ok((components, results))
    })?;
    let elapsed = started.elapsed().as_secs_f64();
    if !quiet {
        eprintln!(
            "lossproof run: {} seeds in {:.0}s with --jobs {}: {:.0} seeds/hour",
            results.len(),
            elapsed,
            args.jobs,
            results.len() as f64 * 3600.0 / elapsed.max(1.0)
        );
    }

    let record = run::RunRecord {
        lossproof_version: env!("CARGO_PKG_VERSION").to_owned(),
        scenario: plan.scenario.clone(),
        // Absolute, so `replay` works from any directory.
        file: std::fs::canonicalize(args.file)
            .unwrap_or_else(|_| args.file.to_path_buf())
            .display()
            .to_string(),
        run_id: run_id.clone(),
        seeds,
        consumers,
        time_scale: args.time_scale,
        stack: run::StackRecord {
            profile: stack
                .profile()
                .map_or_else(|| "local".to_owned(), |p| p.name.clone()),
            components,
        },
        results,
    };
    let default_out = stack
        .state()
        .root()
        .join("runs")
        .join(format!("{run_id}.json"));
    conclude(&record, &args.outputs, Some(&default_out))
}

/// The local stack up (a profile's is the team's to run), and the
/// versions of its components, printed unless `quiet`.
async fn stack_ready(
    stack: &Stack,
    quiet: bool,
) -> CliResult<std::collections::BTreeMap<String, String>> {
    if stack.profile().is_none() {
        stack
            .up(None, &|line| {
                if !quiet {
                    eprintln!("  {line}");
                }
            })
            .await
            .map_err(|e| format!("the stack: {e}"))?;
    }
    let components = lossproof_runtime::versions::probe(&stack.endpoints()?).await;
    for (component, version) in components.iter().filter(|_| !quiet) {
        eprintln!("  {component:<10} {version}");
    }
    Ok(components)
}

/// The run's first line: what runs, on which seeds, as which run id.
fn announce(
    args: &Args<'_>,
    plan: &lossproof_lang::Plan,
    seeds: &[u64],
    consumers: &[String],
    run_id: &str,
) {
    eprintln!(
        "lossproof run {}: scenario {}, seeds {}{}, consumers {}{}{} (run id {run_id})",
        args.file.display(),
        plan.scenario,
        args.seeds,
        args.partition
            .map(|p| format!(" share {p}: {seeds:?}"))
            .unwrap_or_default(),
        consumers.join(", "),
        if (args.time_scale - 1.0).abs() > f64::EPSILON {
            format!(", time scale {}", args.time_scale)
        } else {
            String::new()
        },
        args.profile
            .map(|p| format!(", profile {}", p.display()))
            .unwrap_or_default()
    );
}

/// Seeds running at once share the stack's processes and its network links:
/// a fault that strikes one (`kill connect`, `restart broker`, `cut network
/// to broker`) would strike every seed under way, so such a scenario runs
/// one seed at a time.
fn shared_faults_refused(
    plan: &lossproof_lang::Plan,
    locations: &run::Locations,
    jobs: usize,
) -> CliResult<()> {
    let shared: Vec<String> = plan
        .actions
        .iter()
        .enumerate()
        .filter(|(_, a)| lossproof_vocabulary::reach::strikes_shared(a))
        .map(|(i, a)| {
            format!(
                "{} ({})",
                a.text,
                locations.actions.get(i).map_or("", String::as_str)
            )
        })
        .collect();
    if shared.is_empty() {
        return Ok(());
    }
    Err(format!(
        "--jobs {jobs}: these faults strike a process or a network link every seed under way shares, so they would \
         hit all {jobs} seeds at once; run this scenario with --jobs 1:\n  {}",
        shared.join("\n  ")
    )
    .into())
}

/// Run `seeds`, `jobs` at a time (each a task of its own, isolated by its
/// own database, connector, slot, topics, groups and namespaces); their
/// records in the order of `seeds`. After SIGINT/SIGTERM no seed starts:
/// those under way stop, are cleaned up and recorded INVALID.
async fn run_seeds(
    stack: &Arc<Stack>,
    plan: &Arc<lossproof_lang::Plan>,
    options: &Arc<run::Options>,
    seeds: &[u64],
    (jobs, quiet): (usize, bool),
) -> CliResult<Vec<SeedRecord>> {
    let interrupt = options.interrupt.clone();
    let total = seeds.len();
    let mut pending = seeds.iter().copied().enumerate();
    let mut running = tokio::task::JoinSet::new();
    let mut done = Vec::new();
    let mut lost = Vec::new();
    loop {
        while running.len() < jobs.max(1) && interrupt.borrow().is_none() {
            let Some((i, seed)) = pending.next() else {
                break;
            };
            let (stack, plan, options) = (stack.clone(), plan.clone(), options.clone());
            running.spawn(async move {
                let started = Instant::now();
                let prefix = format!("[seed {}/{total} ({seed})]", i + 1);
                let progress = |line: &str| {
                    if !quiet {
                        eprintln!("{prefix} {:>6.1}s  {line}", started.elapsed().as_secs_f64());
                    }
                };
                let record = run::run_seed(&stack, &plan, seed, &options, &progress).await;
                if !quiet {
                    eprintln!("{prefix} {}", seed_line(&record));
                    for line in lossproof_executor::blame::lines(&record) {
                        eprintln!("{prefix}   damage by fault: {line}");
                    }
                }
                (i, record)
            });
        }
        // Every task is joined, even after one failed: dropping the set
        // would abort seeds under way before their clean-up.
        match running.join_next().await {
            Some(Ok(finished)) => done.push(finished),
            Some(Err(e)) => lost.push(e.to_string()),
            None => break,
        }
    }
    if !lost.is_empty() {
        return Err(format!("a seed's task failed: {}", lost.join("; ")).into());
    }
    if let Some(signal) = *interrupt.borrow() {
        if done.is_empty() {
            return Err(format!("{signal} before the first seed: nothing was run").into());
        }
        eprintln!(
            "lossproof run: {signal}: stopped after {} of {total} seeds (the stack stays up; `lossproof down` stops it)",
            done.len()
        );
    }
    done.sort_by_key(|(i, _)| *i);
    Ok(done.into_iter().map(|(_, record)| record).collect())
}

/// `lossproof report RECORD...`: the records merged into one run, reported
/// and written like a run's.
pub(crate) fn report(records: &[PathBuf], outputs: &Outputs<'_>) -> CliResult<bool> {
    let read = records
        .iter()
        .map(|path| run::RunRecord::read(path))
        .collect::<Result<Vec<_>, _>>()?;
    let merged = run::RunRecord::merge(read)?;
    eprintln!(
        "lossproof report: {} records of scenario {}, {} seeds, consumers {}",
        records.len(),
        merged.scenario,
        merged.seeds.len(),
        merged.consumers.join(", ")
    );
    // The HTML report goes beside the merged record, else beside the one
    // record read (several: `<first>-merged.html`).
    let beside = if let [one] = records {
        one.with_extension("html")
    } else {
        let first = &records[0];
        let stem = first.file_stem().unwrap_or_default().to_string_lossy();
        first.with_file_name(format!("{stem}-merged.html"))
    };
    let html = outputs
        .record
        .map_or(beside, |record| record.with_extension("html"));
    let outputs = Outputs {
        html: outputs
            .html
            .or((!outputs.no_html).then_some(html.as_path())),
        ..*outputs
    };
    conclude(&merged, &outputs, None)
}

/// Print the distribution, write the record (to `outputs.record`, else
/// `default_out`), JUnit and HTML; the exit status: `Ok(true)` every seed
/// PASS, `Ok(false)` any FAIL, `Err` any INVALID.
fn conclude(
    record: &run::RunRecord,
    outputs: &Outputs<'_>,
    default_out: Option<&Path>,
) -> CliResult<bool> {
    let results = &record.results;
    if !outputs.quiet {
        print_report(results, &record.consumers, Path::new(&record.file));
    }
    write_outputs(record, outputs, default_out)?;
    if results.iter().any(|r| r.verdict == Verdict::Invalid) {
        return Err(format!(
            "{} of {} seeds INVALID (not scored)",
            results
                .iter()
                .filter(|r| r.verdict == Verdict::Invalid)
                .count(),
            results.len()
        )
        .into());
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
    record: &run::RunRecord,
    outputs: &Outputs<'_>,
    default_out: Option<&Path>,
) -> CliResult<()> {
    let write = |path: &Path, text: String| -> CliResult<()> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        std::fs::write(path, text).map_err(|e| format!("write {}: {e}", path.display()))?;
        Ok(())
    };
    if let Some(out) = outputs.record.or(default_out) {
        write(out, serde_json::to_string_pretty(record)? + "\n")?;
        if !outputs.quiet {
            println!("run record: {}", out.display());
        }
    }
    let beside = outputs
        .record
        .or(default_out)
        .map(|record| record.with_extension("html"));
    if let Some(html) = outputs
        .html
        .or(beside.as_deref().filter(|_| !outputs.no_html))
    {
        write(html, crate::report_html::page(record))?;
        println!("HTML report: {}", html.display());
    }
    if let Some(junit) = outputs.junit {
        write(junit, junit_xml(&record.scenario, &record.results))?;
        println!("JUnit XML: {}", junit.display());
    }
    Ok(())
}

fn seed_line(record: &SeedRecord) -> String {
    use std::fmt::Write as _;
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
    let lost = record.capture_lost_keys();
    if lost > 0 {
        let _ = write!(
            line,
            ", capture lost {lost} key{} (their last change never reached the topics: not charged to the consumers)",
            if lost == 1 { "" } else { "s" }
        );
    }
    if let Some(note) = &record.capture_note {
        let _ = write!(line, " [{note}]");
    }
    if let Some(schedule) = &record.schedule {
        line.push_str(&schedule_text(schedule));
    }
    let lags: Vec<String> = record
        .lags()
        .map(|f| format!("{} {}", f.consumer, lag_text(f)))
        .collect();
    if !lags.is_empty() {
        line.push_str("; lag p99/max ");
        line.push_str(&lags.join(", "));
    }
    let states: Vec<String> = record.consistency.iter().map(consistency_text).collect();
    if !states.is_empty() {
        line.push_str("; snapshots ");
        line.push_str(&states.join(", "));
    }
    if let Some(reason) = &record.reason {
        line.push_str(" — ");
        line.push_str(reason);
    }
    line
}

/// `; rate 198/200 ops/s, fault drift p99 0.02s`, and why the seed is off
/// schedule if it is.
fn schedule_text(schedule: &lossproof_executor::run::ScheduleRecord) -> String {
    use std::fmt::Write as _;
    let mut text = String::new();
    if schedule.planned_ops_per_s > 0.0 {
        let _ = write!(
            text,
            "; rate {:.0}/{:.0} ops/s",
            schedule.achieved_ops_per_s, schedule.planned_ops_per_s
        );
    }
    let _ = write!(
        text,
        "; fault drift p99 {:.2}s",
        schedule.drift_p99_ms as f64 / 1000.0
    );
    if !schedule.on_schedule() {
        let _ = write!(
            text,
            "; OFF SCHEDULE (not counted in the distribution): {}",
            schedule.off.join("; ")
        );
    }
    text
}

/// A consumer's snapshots in a seed: `careless 26/28 inconsistent (worst
/// 663 keys)`, `correct 0/2 inconsistent`, or why they were not checked.
fn consistency_text(c: &lossproof_executor::snapshots::ConsistencyRecord) -> String {
    use std::fmt::Write as _;
    if c.checked == 0 {
        return format!(
            "{} {}",
            c.consumer,
            c.note.as_deref().unwrap_or("none checked")
        );
    }
    let mut text = format!(
        "{} {}/{} inconsistent",
        c.consumer, c.inconsistent, c.checked
    );
    if c.worst > 0 {
        let _ = write!(text, " (worst {} keys)", c.worst);
    }
    if c.unchecked > 0 {
        let _ = write!(text, ", {} unchecked", c.unchecked);
    }
    if let Some(note) = &c.note {
        let _ = write!(text, " [{note}]");
    }
    text
}

/// A consumer's lag in a seed as `p99/max` seconds (`0.2/1.4s`).
fn lag_text(freshness: &lossproof_executor::run::FreshnessRecord) -> String {
    format!(
        "{:.1}/{:.1}s",
        freshness.p99_ms as f64 / 1000.0,
        freshness.max_ms as f64 / 1000.0
    )
}

/// One line per seed: verdict (`*`: off schedule), faults fired, each
/// consumer's wrong rows and lag.
fn print_seed_table(results: &[SeedRecord], consumers: &[String]) {
    println!(
        "{:<6} {:<8} {:>8}  WRONG ROWS (LAG p99/max)",
        "SEED", "VERDICT", "FAULTS"
    );
    for r in results {
        let wrong: Vec<String> = consumers
            .iter()
            .map(|c| {
                let lag = r
                    .lag_of(c)
                    .map_or_else(String::new, |f| format!(" ({})", lag_text(f)));
                r.wrong_rows
                    .get(c)
                    .map_or_else(|| format!("{c} -{lag}"), |n| format!("{c} {n}{lag}"))
            })
            .collect();
        println!(
            "{:<6} {:<8} {:>8}  {}",
            r.seed,
            format!("{:?}{}", r.verdict, if r.on_schedule() { "" } else { "*" }).to_uppercase(),
            format!(
                "{}/{}",
                r.faults.iter().filter(|f| f.fired).count(),
                r.faults.len()
            ),
            wrong.join(", ")
        );
    }
}

/// Per consumer: wrong rows by seed, the distribution, the worst seed.
fn print_report(results: &[SeedRecord], consumers: &[String], file: &Path) {
    println!();
    print_seed_table(results, consumers);
    let overheads: Vec<f64> = results
        .iter()
        .map(|r| r.timings.total_ms.saturating_sub(r.timings.load_ms) as f64 / 1000.0)
        .collect();
    if !overheads.is_empty() {
        let mean = |each: fn(&SeedRecord) -> u64| {
            results.iter().map(|r| each(r) as f64).sum::<f64>() / 1000.0 / results.len() as f64
        };
        println!(
            "per-seed overhead (wall time minus load): mean {:.1}s, max {:.1}s (drain {:.1}s, reconcile {:.1}s, \
             snapshots {:.1}s: the follower's last look and the check, on average)",
            overheads.iter().sum::<f64>() / overheads.len() as f64,
            overheads.iter().copied().fold(0.0, f64::max),
            mean(|r| r.timings.drain_ms),
            mean(|r| r.timings.reconcile_ms),
            mean(|r| r.timings.snapshots_ms),
        );
    }
    let off: Vec<String> = results
        .iter()
        .filter(|r| !r.on_schedule())
        .map(|r| r.seed.to_string())
        .collect();
    if !off.is_empty() {
        println!(
            "* off schedule, not counted below (docs/run.md, \"On schedule\"): seed {}",
            off.join(", ")
        );
    }
    println!();
    for consumer in consumers {
        let mut scored: Vec<(u64, u64)> = results
            .iter()
            .filter(|r| r.on_schedule())
            .filter_map(|r| r.wrong_rows.get(consumer).map(|n| (*n, r.seed)))
            .collect();
        if scored.is_empty() {
            if off.is_empty() {
                println!("{consumer}: no seed was scored");
            } else {
                println!(
                    "{consumer}: no seed on schedule was scored ({} off schedule, marked *)",
                    off.len()
                );
            }
            continue;
        }
        scored.sort_unstable();
        let values: Vec<u64> = scored.iter().map(|(n, _)| *n).collect();
        let at = |q: f64| quantile(&values, q);
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
            let blamed = results
                .iter()
                .find(|r| r.seed == worst_seed)
                .and_then(|r| lossproof_executor::blame::line(r, consumer));
            if let Some(line) = blamed {
                println!("  damage by fault in seed {worst_seed}: {line}");
            }
        }
        if let Some(lag) = lag_line(results, consumer) {
            println!("  {lag}");
        }
        if let Some(states) = snapshots_line(results, consumer) {
            println!("  {states}");
        }
        if let Some(races) = races_line(results, consumer) {
            println!("  {races}");
        }
    }
}

/// Consumer `consumer`'s lag over the seeds that measured it: the
/// distribution of each seed's p99, and the worst moment.
fn lag_line(results: &[SeedRecord], consumer: &str) -> Option<String> {
    let measured: Vec<(u64, &lossproof_executor::run::FreshnessRecord)> = results
        .iter()
        .filter(|r| r.on_schedule())
        .filter_map(|r| r.lag_of(consumer).map(|f| (r.seed, f)))
        .collect();
    let (seed, worst) = measured.iter().max_by_key(|(_, f)| f.max_ms)?;
    let mut p99s: Vec<u64> = measured.iter().map(|(_, f)| f.p99_ms).collect();
    p99s.sort_unstable();
    let s = |ms: u64| ms as f64 / 1000.0;
    Some(format!(
        "lag p99 over {} seeds: min {:.1}s median {:.1}s max {:.1}s; worst moment {:.1}s behind (seed {seed})",
        p99s.len(),
        s(quantile(&p99s, 0.0)),
        s(quantile(&p99s, 0.5)),
        s(quantile(&p99s, 1.0)),
        s(worst.max_ms),
    ))
}

/// Consumer `consumer`'s snapshots over the seeds that checked them: how
/// many were not states the source had, and the seed with the most.
fn snapshots_line(results: &[SeedRecord], consumer: &str) -> Option<String> {
    use std::fmt::Write as _;
    let checked: Vec<(u64, &lossproof_executor::snapshots::ConsistencyRecord)> = results
        .iter()
        .filter(|r| r.on_schedule())
        .filter_map(|r| {
            r.consistency_of(consumer)
                .filter(|c| c.checked > 0)
                .map(|c| (r.seed, c))
        })
        .collect();
    let (seed, worst) = checked
        .iter()
        .max_by_key(|(_, c)| (c.inconsistent, c.worst))?;
    let states: u64 = checked.iter().map(|(_, c)| c.checked).sum();
    let bad: u64 = checked.iter().map(|(_, c)| c.inconsistent).sum();
    let unchecked: u64 = checked.iter().map(|(_, c)| c.unchecked).sum();
    let in_seeds = checked.iter().filter(|(_, c)| c.inconsistent > 0).count();
    let mut line = format!(
        "snapshots over {} seeds: {bad} of {states} not a state the source had, in {in_seeds}/{} seeds",
        checked.len(),
        checked.len()
    );
    if worst.inconsistent > 0 {
        let _ = write!(
            line,
            "; worst seed {seed} ({} inconsistent, up to {} wrong keys in one)",
            worst.inconsistent, worst.worst
        );
    }
    if unchecked > 0 {
        let _ = write!(line, "; {unchecked} expired before they were read");
    }
    Some(line)
}

/// The value at share `q` of `sorted` (not empty), rounding to the nearest
/// index: what the run report's min, median, p90 and max are.
pub(crate) fn quantile(sorted: &[u64], q: f64) -> u64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// Consumer `consumer`'s commit races summed over the seeds (`compact
/// table`, `expire snapshots`, and its own refused commits), if any seed
/// recorded one.
fn races_line(results: &[SeedRecord], consumer: &str) -> Option<String> {
    let mut sum = lossproof_executor::fault::maintenance::Races::default();
    let mut any = false;
    for r in results.iter().filter_map(|r| r.races.get(consumer)) {
        any = true;
        sum += r;
    }
    any.then(|| {
        format!(
            "commit races in its lake: compactions won {}, lost {}, idle {}{}; expiries won {}, lost {} ({} snapshots, {} orphan files deleted); its own commits refused {}",
            sum.compactions_won,
            sum.compactions_lost,
            sum.compactions_idle,
            if sum.compactions_failed + sum.compactions_interrupted > 0 {
                format!(
                    ", failed {}, killed mid-way {}",
                    sum.compactions_failed, sum.compactions_interrupted
                )
            } else {
                String::new()
            },
            sum.expiries_won,
            sum.expiries_lost,
            sum.snapshots_expired,
            sum.orphan_files_deleted,
            sum.consumer_conflicts
        )
    })
}

/// `lossproof clean --run RUN`: remove what run RUN's seeds left behind.
pub(crate) fn clean(run_id: &str, state: &Path, profile: Option<&Path>) -> CliResult<bool> {
    let (stack, _) = crate::stack_cli::running(state, profile)?;
    let runtime = crate::stack_cli::runtime()?;
    let (seeds, failed) = runtime.block_on(run::clean_run(&stack, run_id))?;
    if seeds.is_empty() {
        eprintln!("lossproof clean: nothing of run {run_id} is left");
    }
    for seed in &seeds {
        eprintln!("lossproof clean: removed what seed run {seed} left");
    }
    for error in &failed {
        eprintln!("lossproof clean: could not remove: {error}");
    }
    Ok(failed.is_empty())
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
        assert!(
            parse_seeds("3..1")
                .unwrap_err()
                .to_string()
                .contains("empty")
        );
        assert!(parse_seeds("x").unwrap_err().to_string().contains("`x`"));
    }
}
