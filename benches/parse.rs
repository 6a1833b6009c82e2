//! Parse + analyse a generated 10,000-line scenario (target: well under a
//! second), and the formatter and timeline on the same plan.
//!
//! Run: `cargo bench --bench parse`

use std::fmt::Write as _;
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use lossproof_lang::{Analyzer, NoIncludes, Parser, format};
use lossproof_stdlib::Stdlib;

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

fn bench(c: &mut Criterion) {
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

    let mut group = c.benchmark_group("10k-line scenario");
    group.sample_size(20);
    group.bench_function("parse", |b| b.iter(|| Parser::parse(black_box(&text), 0)));
    group.bench_function("parse+analyse", |b| {
        b.iter(|| analyzer.analyze("generated.lp", black_box(&text)));
    });
    group.bench_function("format", |b| {
        b.iter(|| format(black_box(&parsed.file), &text));
    });
    group.bench_function("timeline (one seed)", |b| {
        b.iter(|| plan.timeline(black_box(7)));
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
