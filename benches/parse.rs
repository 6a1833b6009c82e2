//! Parse + analyse a generated 10,000-line scenario (target: well under a
//! second), and the formatter and timeline on the same plan: each timed
//! over `--runs` runs (after one warm-up), median and slowest printed.
//! Figures, not a test (docs/benchmarks.md).
//!
//! Run: `cargo bench --bench parse [-- --runs N]`

use std::fmt::Write as _;
use std::hint::black_box;
use std::time::{Duration, Instant};

use lossproof_lang::{Analyzer, NoIncludes, Parser, format};
use lossproof_vocabulary::Stdlib;

/// A scenario of `lines` lines: a header, fragments, and phases full of
/// varied faults with every kind of schedule.
fn scenario(lines: usize) -> String {
    let statements = [
        "kill consumer every 2s±500ms",
        "alter table orders widen amount at 20s",
        "restart connect 3 times randomly",
        "pause broker every 7s with chance 30%",
        "inject junk into topic orders 10 messages at 5s",
        "delay network to broker 200ms for 2s at 9s",
        "# a comment between statements",
        "use chaos",
    ];
    let mut out = String::from(
        "scenario generated\nworkload orders rate 500/s connections 8\nconsumers careless, correct\n\
         fragment chaos <\n  kill consumer careless every 3s\n>\n",
    );
    let mut written = 6;
    while written < lines {
        out.push_str("under load 10m <\n");
        written += 1;
        for i in 0..1000.min(lines.saturating_sub(written + 2)) {
            let _ = writeln!(out, "  {}", statements[i % statements.len()]);
        }
        written += 1000.min(lines.saturating_sub(written + 2));
        out.push_str(">\n");
        written += 1;
    }
    out.push_str("expect consumer correct clean\n");
    out
}

#[derive(clap::Parser)]
struct Args {
    /// Timed runs of each step (one untimed warm-up first).
    #[arg(long, default_value_t = 20)]
    runs: usize,
}

/// Run `f` once to warm up, then `runs` times; print the median and the
/// slowest run.
fn time<T>(name: &str, runs: usize, mut f: impl FnMut() -> T) {
    black_box(f());
    let mut took: Vec<Duration> = (0..runs.max(1))
        .map(|_| {
            let started = Instant::now();
            black_box(f());
            started.elapsed()
        })
        .collect();
    took.sort_unstable();
    println!(
        "10k-line scenario / {name:<20} median {:>9.3} ms   slowest {:>9.3} ms   ({} runs)",
        took[took.len() / 2].as_secs_f64() * 1e3,
        took[took.len() - 1].as_secs_f64() * 1e3,
        took.len()
    );
}

fn main() {
    // `cargo bench` passes `--bench`; it is not ours.
    let args = <Args as clap::Parser>::parse_from(std::env::args().filter(|a| a != "--bench"));
    let text = scenario(10_000);
    assert!(text.lines().count() >= 10_000);
    let analyzer = Analyzer::new(&Stdlib, &NoIncludes);
    let analysis = analyzer.analyze("generated.lp", &text);
    assert!(
        analysis.diagnostics.is_empty(),
        "the generated scenario must check clean"
    );
    let plan = analysis.plan.expect("plan");
    let parsed = Parser::parse(&text, 0);

    time("parse", args.runs, || Parser::parse(black_box(&text), 0));
    time("parse+analyse", args.runs, || {
        analyzer.analyze("generated.lp", black_box(&text))
    });
    time("format", args.runs, || {
        format(black_box(&parsed.file), &text)
    });
    time("timeline (one seed)", args.runs, || {
        plan.timeline(black_box(7))
    });
}
