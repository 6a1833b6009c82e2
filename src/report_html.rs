//! `lossproof run … --html FILE`: one self-contained HTML page (inline SVG,
//! no scripts, no network) with the wrong rows per seed per consumer and the
//! fault timeline of one seed (the worst, or `--html-seed`).

use std::fmt::Write as _;

use lossproof_stdlib::run::{SeedRecord, Verdict};

const COLORS: [&str; 4] = ["#c0392b", "#2471a3", "#1e8449", "#7d3c98"];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The page for a run of `scenario`.
pub fn page(
    scenario: &str,
    run_id: &str,
    consumers: &[String],
    results: &[SeedRecord],
    timeline_seed: Option<u64>,
) -> String {
    let mut html = String::new();
    let _ = write!(
        html,
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>lossproof: {s}</title>\
         <style>body{{font-family:sans-serif;margin:2em;max-width:70em}}table{{border-collapse:collapse}}\
         td,th{{border:1px solid #ccc;padding:.2em .6em;text-align:right}}text{{font-size:11px}}</style></head><body>\
         <h1>{s}</h1><p>run {r}: {n} seeds, consumers {c}</p>",
        s = esc(scenario),
        r = esc(run_id),
        n = results.len(),
        c = esc(&consumers.join(", "))
    );
    html.push_str(&wrong_rows_chart(consumers, results));
    html.push_str(&seed_table(consumers, results));
    let chosen = timeline_seed
        .and_then(|s| results.iter().find(|r| r.seed == s))
        .or_else(|| {
            results
                .iter()
                .max_by_key(|r| r.wrong_rows.values().sum::<u64>())
        });
    if let Some(seed) = chosen {
        html.push_str(&fault_timeline(seed));
    }
    html.push_str("</body></html>\n");
    html
}

/// Bars: wrong rows per seed, one colour per consumer; INVALID seeds marked.
fn wrong_rows_chart(consumers: &[String], results: &[SeedRecord]) -> String {
    let max = results
        .iter()
        .flat_map(|r| r.wrong_rows.values())
        .copied()
        .max()
        .unwrap_or(0)
        .max(1);
    let group = 14 * consumers.len().max(1) + 10;
    let width = 60 + group * results.len().max(1);
    let (height, top, base) = (260, 20, 220);
    let mut svg = format!(
        "<h2>Wrong rows per seed</h2><svg width=\"{width}\" height=\"{height}\" role=\"img\">\
         <line x1=\"50\" y1=\"{base}\" x2=\"{width}\" y2=\"{base}\" stroke=\"#333\"/>\
         <text x=\"5\" y=\"{top}\">{max}</text><text x=\"5\" y=\"{base}\">0</text>"
    );
    for (i, r) in results.iter().enumerate() {
        let x0 = 55 + i * group;
        if r.verdict == Verdict::Invalid {
            let _ = write!(
                svg,
                "<text x=\"{x0}\" y=\"{}\" fill=\"#888\">INVALID</text>",
                base - 5
            );
        }
        for (j, consumer) in consumers.iter().enumerate() {
            let Some(n) = r.wrong_rows.get(consumer) else {
                continue;
            };
            let h = (*n as f64 / max as f64 * f64::from(base - top)) as usize;
            let _ = write!(
                svg,
                "<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"{h}\" fill=\"{}\"><title>seed {}: {consumer} {n} wrong rows</title></rect>",
                x0 + j * 14,
                base as usize - h,
                COLORS[j % COLORS.len()],
                r.seed
            );
        }
        let _ = write!(
            svg,
            "<text x=\"{x0}\" y=\"{}\">{}</text>",
            base + 15,
            r.seed
        );
    }
    for (j, consumer) in consumers.iter().enumerate() {
        let _ = write!(
            svg,
            "<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text>",
            60 + j * 110,
            height - 12,
            COLORS[j % COLORS.len()],
            74 + j * 110,
            height - 3,
            esc(consumer)
        );
    }
    svg.push_str("</svg>");
    svg
}

fn seed_table(consumers: &[String], results: &[SeedRecord]) -> String {
    let mut t =
        String::from("<h2>Seeds</h2><table><tr><th>seed</th><th>verdict</th><th>faults fired</th>");
    for c in consumers {
        let _ = write!(t, "<th>{} wrong rows</th>", esc(c));
    }
    t.push_str("<th>reason</th></tr>");
    for r in results {
        let _ = write!(
            t,
            "<tr><td>{}</td><td>{:?}</td><td>{}/{}</td>",
            r.seed,
            r.verdict,
            r.faults.iter().filter(|f| f.fired).count(),
            r.faults.len()
        );
        for c in consumers {
            let _ = write!(
                t,
                "<td>{}</td>",
                r.wrong_rows.get(c).map_or("-".into(), u64::to_string)
            );
        }
        let _ = write!(
            t,
            "<td style=\"text-align:left\">{}</td></tr>",
            esc(r.reason.as_deref().unwrap_or(""))
        );
    }
    t.push_str("</table>");
    t
}

/// One seed on a time axis: the workload's operations per second, the load
/// phase, every fault where it fired (or, hollow, where it was planned and
/// did not fire), the drain.
fn fault_timeline(seed: &SeedRecord) -> String {
    let total = seed.timings.total_ms.max(1) as f64;
    let width = 900.0;
    let x = |ms: u64| 40.0 + ms as f64 / total * width;
    let mut svg = format!(
        "<h2>Seed {}: faults over time</h2><svg width=\"{}\" height=\"120\" role=\"img\">\
         <rect x=\"40\" y=\"40\" width=\"{:.1}\" height=\"30\" fill=\"#d6eaf8\"><title>load</title></rect>\
         <text x=\"40\" y=\"35\">load {:.0}s</text><text x=\"{:.1}\" y=\"35\">drain + score {:.0}s</text>\
         <line x1=\"40\" y1=\"70\" x2=\"{:.1}\" y2=\"70\" stroke=\"#333\"/>",
        seed.seed,
        width + 80.0,
        x(seed.timings.load_ms) - 40.0,
        seed.timings.load_ms as f64 / 1000.0,
        x(seed.timings.load_ms) + 4.0,
        (seed.timings.total_ms - seed.timings.load_ms.min(seed.timings.total_ms)) as f64 / 1000.0,
        40.0 + width
    );
    for f in &seed.faults {
        let at = f.fired_ms.unwrap_or(f.planned_ms);
        let fill = if f.fired { "#c0392b" } else { "none" };
        let _ = write!(
            svg,
            "<circle cx=\"{:.1}\" cy=\"55\" r=\"4\" fill=\"{fill}\" stroke=\"#c0392b\"><title>+{:.1}s {}: {}</title></circle>",
            x(at),
            at as f64 / 1000.0,
            esc(&f.text),
            esc(&f.outcome)
        );
    }
    // Throughput: operations the source accepted per second, a line above
    // the load band (scaled to its own peak).
    let peak = seed
        .ops_per_second
        .iter()
        .copied()
        .max()
        .unwrap_or(0)
        .max(1);
    let points: Vec<String> = seed
        .ops_per_second
        .iter()
        .enumerate()
        .map(|(s, n)| {
            format!(
                "{:.1},{:.1}",
                x(s as u64 * 1000 + 500),
                38.0 - *n as f64 / peak as f64 * 30.0
            )
        })
        .collect();
    if !points.is_empty() {
        let _ = write!(
            svg,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"#2471a3\"><title>operations per second (peak {peak})</title></polyline>\
             <text x=\"{:.1}\" y=\"12\" fill=\"#2471a3\">peak {peak} ops/s</text>",
            points.join(" "),
            width - 60.0
        );
    }
    let _ = write!(
        svg,
        "<text x=\"40\" y=\"90\">0s</text><text x=\"{:.1}\" y=\"90\">{:.0}s</text></svg>",
        width,
        total / 1000.0
    );
    svg
}
