//! `lossproof shrink RECORD --seed N [--consumer C]`: from a seed that
//! damaged a consumer, search for a smallest set of its fired faults, and
//! the shortest load, that still damages it, and write that as a scenario
//! `lossproof run` takes as it is (docs/run.md, "Shrinking a failing seed").
//!
//! The search is Zeller's delta debugging (ddmin) over the seed's fired
//! fault occurrences, each written back at the moment it was planned
//! (`kill consumer at 4.211s`), the seed's workload unchanged. Damage
//! depends on timing, so a candidate counts as reproducing only when every
//! one of its `--tries` runs damaged the consumer; the result is then run
//! `--tries` times again and its share of damaged runs reported.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use lossproof_executor::run::{RunRecord, SeedRecord};
use lossproof_lang::ast::Item;
use lossproof_lang::plan::{Phase, show_ms};
use lossproof_lang::{Occurrence, Parser, format};

use crate::CliResult;
use crate::replay_cli::{recorded_seed, run_once};
use crate::run_cli::Outputs;

pub(crate) struct Args<'a> {
    pub record: &'a Path,
    pub seed: u64,
    /// Default: the first of the record's consumers the seed damaged.
    pub consumer: Option<&'a str>,
    /// Runs per candidate.
    pub tries: usize,
    /// Default: the record's.
    pub time_scale: Option<f64>,
    /// No run starts after this long; the best scenario found so far is
    /// written.
    pub budget: Duration,
    /// Default: beside the scenario, `<name>.seed<N>.<consumer>.lp`.
    pub out: Option<&'a Path>,
    pub state: &'a Path,
}

/// Bisection steps per load phase when shortening it.
const LOAD_STEPS: usize = 3;

/// Whether `--budget` can stop a run: the search's can, the confirming
/// runs of a finished search cannot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Budget {
    Applies,
    Past,
}

/// What one candidate's runs showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tested {
    Reproduced,
    NotReproduced,
    /// The budget ran out, a signal came or a run failed: no more runs.
    Stopped,
}

/// A scenario to try: some of the seed's fired faults, and each load
/// phase's length (unscaled milliseconds).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Candidate {
    /// Indices into [`Shrinker::fired`], ascending.
    faults: Vec<usize>,
    loads: BTreeMap<usize, u64>,
}

pub(crate) fn shrink(args: &Args<'_>) -> CliResult<bool> {
    if args.tries == 0 {
        return Err("--tries must be at least 1".into());
    }
    let recorded = recorded_seed(args.record, args.seed)?;
    let result = recorded
        .results
        .iter()
        .find(|r| r.seed == args.seed)
        .ok_or_else(|| {
            format!(
                "{} holds no result for seed {}",
                args.record.display(),
                args.seed
            )
        })?;
    let consumer = damaged_consumer(args, &recorded.consumers, result)?;
    let time_scale = args.time_scale.unwrap_or(recorded.time_scale);
    if time_scale.is_nan() || time_scale <= 0.0 {
        return Err("--time-scale must be above 0".into());
    }
    let file = PathBuf::from(&recorded.file);
    let source = crate::scenario::read(&file)?;
    let (fired, loads) = fired_faults(&file, &source, &recorded, result)?;
    let name = file.file_stem().map_or_else(
        || "scenario".to_owned(),
        |s| s.to_string_lossy().into_owned(),
    );
    let dir = file.parent().unwrap_or(Path::new("."));
    let out = args.out.map_or_else(
        || dir.join(format!("{name}.seed{}.{consumer}.lp", args.seed)),
        Path::to_path_buf,
    );
    let runs_dir = args.state.join("runs");
    std::fs::create_dir_all(&runs_dir).map_err(|e| format!("{}: {e}", runs_dir.display()))?;
    println!(
        "shrink: seed {} of {}: {} wrong rows of {consumer} after {} fired faults; {} tries per \
         candidate, time scale {time_scale}, budget {}",
        args.seed,
        file.display(),
        result.wrong_rows[&consumer],
        fired.len(),
        args.tries,
        humantime::format_duration(args.budget)
    );
    let mut shrinker = Shrinker {
        args,
        scratch: Scratch(dir.join(format!(".{name}.shrinking.lp"))),
        run_record: runs_dir.join(format!("shrink-{}-s{}.json", recorded.run_id, args.seed)),
        file,
        source,
        fired,
        consumer,
        time_scale,
        started: Instant::now(),
        candidates: 0,
        runs: 0,
        seen: HashMap::new(),
        kept: Vec::new(),
        took_back: None,
        stopped: None,
        error: None,
    };
    let outcome = shrinker.search(loads);
    if let Some(error) = shrinker.error.take() {
        return Err(error);
    }
    let Some((best, minimal)) = outcome else {
        println!(
            "shrink: {}; nothing written",
            shrinker
                .stopped
                .as_deref()
                .unwrap_or("the seed's damage did not reproduce")
        );
        return Ok(false);
    };
    let (best, confirmed) = if minimal {
        shrinker.confirmed(best)
    } else {
        (best, None)
    };
    if let Some(error) = shrinker.error.take() {
        return Err(error);
    }
    let text = shrinker.scenario(&best, &shrinker.header(&best, confirmed))?;
    std::fs::write(&out, text).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    println!("{}", shrinker.conclusion(&best, confirmed, &out));
    Ok(minimal && confirmed.is_some_and(most))
}

/// `--consumer`, checked to have been damaged by the seed, or the first
/// of `consumers` the seed damaged.
fn damaged_consumer(
    args: &Args<'_>,
    consumers: &[String],
    result: &SeedRecord,
) -> CliResult<String> {
    let Some(c) = args.consumer else {
        return consumers
            .iter()
            .find(|c| result.wrong_rows.get(*c).is_some_and(|n| *n > 0))
            .cloned()
            .ok_or_else(|| {
                format!(
                    "seed {} damaged none of its consumers ({:?}): nothing to shrink",
                    args.seed, result.wrong_rows
                )
                .into()
            });
    };
    let wrong = result.wrong_rows.get(c).ok_or_else(|| {
        format!(
            "seed {} scored no consumer {c} (it scored: {})",
            args.seed,
            consumers.join(", ")
        )
    })?;
    if *wrong == 0 {
        return Err(format!(
            "seed {} left {c} with 0 wrong rows: shrink looks for the faults that damage a consumer",
            args.seed
        )
        .into());
    }
    Ok(c.to_owned())
}

/// The seed's fired occurrences at their planned moments on the unscaled
/// timeline (what the scenario file says), and each load phase's length;
/// refused when the file no longer plans what the record says it did.
fn fired_faults(
    file: &Path,
    source: &str,
    recorded: &RunRecord,
    result: &SeedRecord,
) -> CliResult<(Vec<Occurrence>, BTreeMap<usize, u64>)> {
    let plan = crate::scenario::check_text(file, source, None)
        .plan
        .ok_or_else(|| format!("{} has errors now: fix it first", file.display()))?;
    let scaled = plan.time_scaled(recorded.time_scale).timeline(result.seed);
    if scaled.occurrences != result.planned {
        return Err(format!(
            "{} changed since the run: seed {}'s faults are no longer the ones recorded; run it again",
            file.display(),
            result.seed
        )
        .into());
    }
    let fired = result
        .faults
        .iter()
        .filter(|f| f.fired)
        .map(|f| Occurrence {
            phase: f.phase,
            offset_ms: (f.planned_ms as f64 / recorded.time_scale).round() as u64,
            action: f.action,
            fault: f.fault.clone(),
            text: f.text.clone(),
        })
        .collect();
    let loads = plan
        .phases
        .iter()
        .enumerate()
        .filter_map(|(i, p)| match p {
            Phase::Load { duration_ms, .. } => Some((i, *duration_ms)),
            _ => None,
        })
        .collect();
    Ok((fired, loads))
}

/// The candidate scenario file, beside the original (its includes and its
/// consumers' commands resolve as they do there), removed when done.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

struct Shrinker<'a> {
    args: &'a Args<'a>,
    scratch: Scratch,
    /// Where each run's record goes (read back, then removed).
    run_record: PathBuf,
    file: PathBuf,
    source: String,
    fired: Vec<Occurrence>,
    consumer: String,
    time_scale: f64,
    started: Instant,
    candidates: usize,
    runs: usize,
    seen: HashMap<Candidate, Tested>,
    /// Every candidate that reproduced, in the order the search kept them
    /// (each smaller than the one before, or the same faults on a shorter
    /// load).
    kept: Vec<Candidate>,
    /// When the result had to be taken back to a larger one that the search
    /// kept: the smaller one's fault count and confirming runs.
    took_back: Option<(usize, (usize, usize))>,
    /// Why the search stopped early.
    stopped: Option<String>,
    error: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl Shrinker<'_> {
    /// The whole search: the seed's fired faults first (they must
    /// reproduce), then no fault at all, then ddmin, then the loads.
    /// `None` when not even the full set reproduced; else the best
    /// candidate and whether the search finished (it is 1-minimal).
    fn search(&mut self, loads: BTreeMap<usize, u64>) -> Option<(Candidate, bool)> {
        let all = Candidate {
            faults: (0..self.fired.len()).collect(),
            loads,
        };
        if self.test(&all) != Tested::Reproduced {
            if self.stopped.is_none() {
                self.stopped = Some(format!(
                    "the seed's fired faults did not damage {} in every one of {} tries: \
                     timing decided it (try more --tries, or another seed)",
                    self.consumer, self.args.tries
                ));
            }
            return None;
        }
        let none = Candidate {
            faults: Vec::new(),
            ..all.clone()
        };
        let faults = match self.test(&none) {
            Tested::Reproduced => Vec::new(),
            Tested::Stopped => return Some((all, false)),
            Tested::NotReproduced => ddmin(all.faults.clone(), |subset| {
                self.test(&Candidate {
                    faults: subset.to_vec(),
                    loads: all.loads.clone(),
                })
            }),
        };
        let best = Candidate {
            faults,
            loads: all.loads,
        };
        if self.stopped.is_some() {
            return Some((best, false));
        }
        let best = self.shorten_loads(best);
        let finished = self.stopped.is_none();
        Some((best, finished))
    }

    /// Each load phase bisected between just after its last kept fault
    /// and its length, keeping the shortest that reproduces.
    fn shorten_loads(&mut self, mut best: Candidate) -> Candidate {
        let phases: Vec<usize> = best.loads.keys().copied().collect();
        for phase in phases {
            let last = best
                .faults
                .iter()
                .map(|&i| &self.fired[i])
                .filter(|o| o.phase == phase)
                .map(|o| o.offset_ms)
                .max();
            // Whole seconds, at least one after the last fault.
            let mut lo = last.map_or(1000, |t| (t / 1000 + 1) * 1000);
            let mut hi = best.loads[&phase];
            for _ in 0..LOAD_STEPS {
                let mid = u64::midpoint(lo, hi) / 1000 * 1000;
                if mid <= lo || mid >= hi {
                    break;
                }
                let mut shorter = best.clone();
                shorter.loads.insert(phase, mid);
                match self.test(&shorter) {
                    Tested::Reproduced => {
                        hi = mid;
                        best = shorter;
                    }
                    Tested::NotReproduced => lo = mid,
                    Tested::Stopped => return best,
                }
            }
        }
        best
    }

    /// Whether `candidate` damages the consumer in every one of its tries
    /// (the first clean run decides it does not). A majority would let a
    /// fault that damages one run in three pass for the cause, and the
    /// result then reproduce as rarely.
    fn test(&mut self, candidate: &Candidate) -> Tested {
        if self.stopped.is_some() {
            return Tested::Stopped;
        }
        if let Some(tested) = self.seen.get(candidate) {
            return *tested;
        }
        self.candidates += 1;
        let tries = self.args.tries;
        let mut tested = Tested::Reproduced;
        for attempt in 1..=tries {
            let Some(wrong) = self.run(candidate, Budget::Applies) else {
                return Tested::Stopped;
            };
            println!(
                "shrink: candidate {} ({} of {} faults, {}), try {attempt} of {tries}: {wrong} wrong; \
                 {} runs in {}",
                self.candidates,
                candidate.faults.len(),
                self.fired.len(),
                loads_text(candidate),
                self.runs,
                elapsed(self.started)
            );
            if wrong == 0 {
                tested = Tested::NotReproduced;
                break;
            }
        }
        if tested == Tested::Reproduced {
            self.kept.push(candidate.clone());
        }
        self.seen.insert(candidate.clone(), tested);
        tested
    }

    /// The result and how often it damaged the consumer when run
    /// `--tries` times more. A result that did so in fewer than half of
    /// them passed the search's tries by luck: then each larger candidate
    /// the search kept on its way (the longest load of each set of
    /// faults) is confirmed in turn, smallest first, and the first that
    /// damages the consumer in most runs is the result.
    fn confirmed(&mut self, best: Candidate) -> (Candidate, Option<(usize, usize)>) {
        let first = self.confirm(&best);
        let Some(share) = first.filter(|c| !most(*c)) else {
            return (best, first);
        };
        let mut sets = std::collections::HashSet::from([best.faults.clone()]);
        let earlier: Vec<Candidate> = self
            .kept
            .iter()
            .filter(|c| sets.insert(c.faults.clone()))
            .cloned()
            .collect();
        for candidate in earlier.into_iter().rev() {
            println!(
                "shrink: {} faults damaged {} in {} of {} confirming runs: confirming the {} \
                 faults the search kept before them",
                best.faults.len(),
                self.consumer,
                share.0,
                share.1,
                candidate.faults.len()
            );
            let Some(confirmed) = self.confirm(&candidate) else {
                break;
            };
            if most(confirmed) {
                self.took_back = Some((best.faults.len(), share));
                return (candidate, Some(confirmed));
            }
        }
        (best, first)
    }

    /// `candidate` run `--tries` times more: (damaged, runs), `None` if
    /// stopped.
    fn confirm(&mut self, best: &Candidate) -> Option<(usize, usize)> {
        let mut damaged = 0;
        for attempt in 1..=self.args.tries {
            let wrong = self.run(best, Budget::Past)?;
            damaged += usize::from(wrong > 0);
            println!(
                "shrink: confirming, try {attempt} of {}: {wrong} wrong",
                self.args.tries
            );
        }
        Some((damaged, self.args.tries))
    }

    /// One run of `candidate`: the consumer's wrong rows, `None` when the
    /// search must stop (why in `stopped` or `error`).
    fn run(&mut self, candidate: &Candidate, budget: Budget) -> Option<u64> {
        if budget == Budget::Applies && self.started.elapsed() >= self.args.budget {
            self.stopped = Some(format!(
                "the budget ({}) ran out",
                humantime::format_duration(self.args.budget)
            ));
            return None;
        }
        let text = match self.scenario(candidate, "") {
            Ok(text) => text,
            Err(e) => {
                self.error = Some(e);
                return None;
            }
        };
        if let Err(e) = std::fs::write(&self.scratch.0, text) {
            self.error = Some(format!("cannot write {}: {e}", self.scratch.0.display()).into());
            return None;
        }
        self.runs += 1;
        let seeds = self.args.seed.to_string();
        let consumers = [self.consumer.clone()];
        let ran = run_once(
            &crate::run_cli::Args {
                file: &self.scratch.0,
                seeds: &seeds,
                partition: None,
                time_scale: self.time_scale,
                jobs: 1,
                state: self.args.state,
                profile: None,
                consumers: Some(&consumers),
                keep: false,
                outputs: Outputs {
                    quiet: true,
                    ..Outputs::default()
                },
            },
            &self.run_record,
        );
        let _ = std::fs::remove_file(&self.run_record);
        match ran {
            Err(e) => {
                self.error = Some(e);
                None
            }
            Ok((None, _)) => {
                self.stopped = Some("interrupted".to_owned());
                None
            }
            Ok((Some(seed), _)) => {
                if let Some(why) = seed.reason.as_ref().filter(|_| seed.wrong_rows.is_empty()) {
                    println!(
                        "shrink: run {} not scored, counted as not damaged: {why}",
                        self.runs
                    );
                }
                Some(seed.wrong_rows.get(&self.consumer).copied().unwrap_or(0))
            }
        }
    }

    fn scenario(&self, candidate: &Candidate, header: &str) -> CliResult<String> {
        let kept: Vec<&Occurrence> = candidate.faults.iter().map(|&i| &self.fired[i]).collect();
        scenario_text(
            &self.source,
            &kept,
            &candidate.loads,
            &self.consumer,
            header,
        )
    }

    /// `4 fired faults -> 1 (load 19s) in 8 candidates, 9 runs, 2m`.
    fn summary(&self, best: &Candidate) -> String {
        format!(
            "{} fired faults -> {} ({}) in {} candidates, {} runs, {}",
            self.fired.len(),
            best.faults.len(),
            loads_text(best),
            self.candidates,
            self.runs,
            elapsed(self.started)
        )
    }

    /// How the search ended: how often its result damaged the consumer in
    /// the confirming runs, or why it is not minimal.
    fn outcome(&self, confirmed: Option<(usize, usize)>) -> String {
        match confirmed {
            Some((damaged, tries)) => {
                let mut text = format!(
                    "damaged {} in {damaged} of {tries} confirming runs",
                    self.consumer
                );
                if let Some((fewer, (d, t))) = self.took_back {
                    let _ = write!(
                        text,
                        " (the {fewer} faults the search ended with damaged it in only {d} of {t}: \
                         these are the fewest it kept that damage it in most runs)"
                    );
                }
                text
            }
            None => format!(
                "NOT minimal: the search stopped early ({})",
                self.stopped.as_deref().unwrap_or("unknown")
            ),
        }
    }

    /// The comment the written scenario starts with.
    fn header(&self, best: &Candidate, confirmed: Option<(usize, usize)>) -> String {
        format!(
            "Shrunk by `lossproof shrink` from seed {} of {}: {}.\nResult: {}.\n\
             Run it: lossproof run FILE --seeds {}{} (`expect consumer {} clean` fails while it reproduces).\n",
            self.args.seed,
            self.file.display(),
            self.summary(best),
            self.outcome(confirmed),
            self.args.seed,
            if (self.time_scale - 1.0).abs() > f64::EPSILON {
                format!(" --time-scale {}", self.time_scale)
            } else {
                String::new()
            },
            self.consumer
        )
    }

    /// What `shrink` prints at the end.
    fn conclusion(
        &self,
        best: &Candidate,
        confirmed: Option<(usize, usize)>,
        out: &Path,
    ) -> String {
        let mut text = format!(
            "shrink: {}; {}",
            self.summary(best),
            self.outcome(confirmed)
        );
        for &i in &best.faults {
            let o = &self.fired[i];
            let _ = write!(text, "\n  {} at {}", o.text, show_ms(o.offset_ms));
        }
        let _ = write!(text, "\nwrote {}", out.display());
        text
    }
}

/// Damaged in at least half of the runs: (damaged, runs).
fn most((damaged, runs): (usize, usize)) -> bool {
    2 * damaged >= runs
}

/// `load 60s` or `loads 60s, 10s`.
fn loads_text(candidate: &Candidate) -> String {
    let loads: Vec<String> = candidate.loads.values().map(|ms| show_ms(*ms)).collect();
    format!(
        "load{} {}",
        if loads.len() == 1 { "" } else { "s" },
        loads.join(", ")
    )
}

fn elapsed(since: Instant) -> String {
    humantime::format_duration(Duration::from_secs(since.elapsed().as_secs())).to_string()
}

/// Zeller's ddmin: a 1-minimal subset of `items` (removing any one element
/// stops it reproducing) for which `test` still reproduces, given that
/// `items` itself does. When `test` says [`Tested::Stopped`], the smallest
/// reproducing subset found so far.
fn ddmin<T: Clone>(mut items: Vec<T>, mut test: impl FnMut(&[T]) -> Tested) -> Vec<T> {
    let mut n = 2;
    while items.len() >= 2 {
        let chunks = split(&items, n);
        let mut reduced = None;
        for chunk in &chunks {
            match test(chunk) {
                Tested::Reproduced => {
                    reduced = Some((chunk.clone(), 2));
                    break;
                }
                Tested::Stopped => return items,
                Tested::NotReproduced => {}
            }
        }
        // With two chunks, each one's complement is the other.
        if reduced.is_none() && n > 2 {
            for skip in 0..chunks.len() {
                let complement: Vec<T> = chunks
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != skip)
                    .flat_map(|(_, c)| c.iter().cloned())
                    .collect();
                match test(&complement) {
                    Tested::Reproduced => {
                        reduced = Some((complement, (n - 1).max(2)));
                        break;
                    }
                    Tested::Stopped => return items,
                    Tested::NotReproduced => {}
                }
            }
        }
        match reduced {
            Some((smaller, granularity)) => {
                items = smaller;
                n = granularity;
            }
            None if n >= items.len() => break,
            None => n = (2 * n).min(items.len()),
        }
    }
    items
}

/// `items` in `n` contiguous chunks whose lengths differ by at most one.
fn split<T: Clone>(items: &[T], n: usize) -> Vec<Vec<T>> {
    let (size, extra) = (items.len() / n, items.len() % n);
    let mut chunks = Vec::with_capacity(n);
    let mut start = 0;
    for i in 0..n {
        let end = start + size + usize::from(i < extra);
        chunks.push(items[start..end].to_vec());
        start = end;
    }
    chunks
}

/// The scenario `source` rewritten to fire only `kept`, each at its
/// moment (`TEXT at TIME` in its phase, windows, fragments and includes
/// gone), with each load phase as long as `loads` says, only `consumer`
/// under test, and one assertion: `expect consumer CONSUMER clean`.
/// Comments give way to `header`. Formatted as `lossproof fmt` would.
fn scenario_text(
    source: &str,
    kept: &[&Occurrence],
    loads: &BTreeMap<usize, u64>,
    consumer: &str,
    header: &str,
) -> CliResult<String> {
    let parsed = Parser::parse(source, 0);
    if parsed.has_errors() {
        return Err("the scenario no longer parses: fix it first".into());
    }
    let block = |phase: usize| -> String {
        let mut text = "<\n".to_owned();
        for o in kept.iter().filter(|o| o.phase == phase) {
            let _ = writeln!(text, "  {} at {}", o.text, show_ms(o.offset_ms));
        }
        text.push('>');
        text
    };
    // (start, end, replacement) in the source.
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let mut phase = 0;
    let mut consumers_line = false;
    let mut after_name = 0;
    for item in &parsed.file.items {
        let span = item.span();
        match item {
            Item::Comment(_)
            | Item::Include { .. }
            | Item::Fragment { .. }
            | Item::Expect { .. }
            | Item::Assert(_) => edits.push((span.start, span.end, String::new())),
            Item::Scenario { .. } => after_name = span.end,
            Item::Consumers { .. } => {
                consumers_line = true;
                edits.push((span.start, span.end, format!("consumers {consumer}")));
            }
            Item::Load { duration, body, .. } => {
                if let Some(ms) = loads.get(&phase) {
                    edits.push((duration.span.start, duration.span.end, show_ms(*ms)));
                }
                edits.push((body.span.start, body.span.end, block(phase)));
                phase += 1;
            }
            Item::Quiet { body, .. } => {
                match body {
                    Some(body) => edits.push((body.span.start, body.span.end, block(phase))),
                    None if kept.iter().any(|o| o.phase == phase) => {
                        edits.push((span.end, span.end, format!(" {}", block(phase))));
                    }
                    None => {}
                }
                phase += 1;
            }
            Item::Drain { .. } => phase += 1,
            _ => {}
        }
    }
    if !consumers_line {
        edits.push((after_name, after_name, format!("\nconsumers {consumer}")));
    }
    edits.sort_by_key(|e| std::cmp::Reverse(e.0));
    let mut text = source.trim_start_matches('\u{feff}').to_owned();
    let bom = source.len() - text.len();
    for (start, end, replacement) in edits {
        text.replace_range(start - bom..end - bom, &replacement);
    }
    let mut out = String::new();
    for line in header.lines() {
        let _ = writeln!(out, "# {line}");
    }
    out.push_str(text.trim_start());
    let _ = write!(out, "\n\nexpect consumer {consumer} clean\n");
    let parsed = Parser::parse(&out, 0);
    if parsed.has_errors() {
        return Err(format!(
            "lossproof shrink wrote a scenario that does not parse (a bug):\n{out}"
        )
        .into());
    }
    Ok(format(&parsed.file, &out))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake test: reproduces when the subset holds every one of `needed`.
    fn needs(needed: &[usize]) -> impl FnMut(&[usize]) -> Tested + '_ {
        move |subset| {
            if needed.iter().all(|n| subset.contains(n)) {
                Tested::Reproduced
            } else {
                Tested::NotReproduced
            }
        }
    }

    #[test]
    fn ddmin_finds_the_one_fault_that_matters() {
        assert_eq!(ddmin((0..29).collect(), needs(&[17])), [17]);
        assert_eq!(ddmin((0..1).collect(), needs(&[0])), [0]);
    }

    #[test]
    fn ddmin_keeps_every_fault_of_a_combination() {
        assert_eq!(ddmin((0..16).collect(), needs(&[2, 13])), [2, 13]);
        assert_eq!(ddmin((0..7).collect(), needs(&[0, 3, 6])), [0, 3, 6]);
    }

    #[test]
    fn ddmin_stopped_keeps_the_smallest_reproducing_set_so_far() {
        let mut calls = 0;
        let found = ddmin((0..8).collect(), |subset: &[usize]| {
            calls += 1;
            match calls {
                // The first half reproduces; then the search is stopped.
                1 if subset == [0, 1, 2, 3] => Tested::Reproduced,
                1 => Tested::NotReproduced,
                _ => Tested::Stopped,
            }
        });
        assert_eq!(found, [0, 1, 2, 3]);
    }

    #[test]
    fn split_makes_nearly_equal_chunks() {
        assert_eq!(
            split(&[1, 2, 3, 4, 5], 3),
            vec![vec![1, 2], vec![3, 4], vec![5]]
        );
        assert_eq!(split(&[1, 2], 2), vec![vec![1], vec![2]]);
    }

    fn occurrence(phase: usize, offset_ms: u64, text: &str) -> Occurrence {
        Occurrence {
            phase,
            offset_ms,
            action: 0,
            fault: String::new(),
            text: text.to_owned(),
        }
    }

    #[test]
    fn the_scenario_fires_only_the_kept_faults_at_their_moments() {
        let source = "\u{feff}# An old comment.\nscenario crash\ninclude \"faults.lp\"\n\
                      workload orders rate 200/s\nconsumers careless, correct\n\n\
                      under load 60s <\n  kill consumer every 2s±500ms # often\n  between 10s and 20s <\n    use crash-loop\n  >\n>\n\
                      quiet 5s\ndrain within 120s\n\nexpect consumer correct clean\nassert \"x\"\n```\nselect 1\n```\n";
        let kill = occurrence(0, 4211, "kill consumer");
        let widen = occurrence(0, 20_000, "alter table orders widen amount");
        let text = scenario_text(
            source,
            &[&kill, &widen],
            &BTreeMap::from([(0, 30_000)]),
            "careless",
            "Shrunk.\nRun it.",
        )
        .unwrap();
        assert_eq!(
            text,
            "# Shrunk.\n# Run it.\nscenario crash\n\nworkload orders rate 200/s\nconsumers careless\n\n\
             under load 30s <\n  kill consumer at 4.211s\n  alter table orders widen amount at 20s\n>\n\
             quiet 5s\ndrain within 120s\n\nexpect consumer careless clean\n"
        );
    }

    #[test]
    fn a_quiet_phase_gets_a_block_and_a_missing_consumers_line_is_added() {
        let source = "scenario q\nunder load 10s <\n  kill consumer at 2s\n>\nquiet 10s\n";
        let nightly = occurrence(1, 5000, "run nightly");
        let text = scenario_text(source, &[&nightly], &BTreeMap::new(), "correct", "H").unwrap();
        assert_eq!(
            text,
            "# H\nscenario q\nconsumers correct\nunder load 10s < >\nquiet 10s <\n  run nightly at 5s\n>\n\n\
             expect consumer correct clean\n"
        );
    }
}
