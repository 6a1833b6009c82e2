//! `lossproof run … --html FILE` and `lossproof report … --html FILE`: one
//! self-contained page (inline SVG and CSS; no script, no network), per
//! consumer side by side:
//!
//! - damage by kind per seed (stacked bars, one colour per diff kind);
//! - the distribution over seeds (a CDF: it still reads at 500 seeds);
//! - the faults of the worst seed over time (each with its name, `.lp` place
//!   and outcome on hover), under the workload's operations per second;
//! - freshness: each consumer's lag over time in the seed with the worst
//!   moment, faults on the same axis, and the distribution of each seed's
//!   lag p99;
//! - sample diff rows of the worst seed, source and lake side by side, the
//!   columns that differ marked;
//! - every seed in a table.
//!
//! Legends and labels are HTML next to the charts, never SVG text that a
//! chart's edge can cut.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use lossproof_executor::run::{FreshnessRecord, RunRecord, SeedRecord, Verdict};
use lossproof_runtime::reconcile::{DiffKind, DiffRow, canonical};

/// One colour per diff kind, in `DiffKind::ALL` order.
const KIND_COLORS: [&str; 7] = [
    "#c0392b", "#8e44ad", "#d68910", "#2471a3", "#117a65", "#7f8c8d", "#b3b6b7",
];
const CHART_W: f64 = 520.0;
const CHART_H: f64 = 220.0;
/// Room for the y axis' labels, right of the last x label, and under the
/// x axis.
const LEFT: f64 = 56.0;
const RIGHT: f64 = 28.0;
const BOTTOM: f64 = 36.0;
/// Where the plotting area ends on the right.
const PLOT_END: f64 = CHART_W - RIGHT;

/// The axis' top: the smallest `4 × step` at or above `max`, with a step of
/// 1, 2 or 5 times a power of ten (so 1,921 gets 0, 500, … 2,000 and 1 gets
/// 0, 1, … 4: whole, round ticks).
fn nice_max(max: u64) -> u64 {
    let quarter = max.div_ceil(4).max(1);
    let mut magnitude = 1;
    while magnitude * 10 <= quarter {
        magnitude *= 10;
    }
    let step = [1, 2, 5, 10]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= quarter)
        .unwrap_or(10 * magnitude);
    4 * step
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em;color:#222}\
h1{margin-bottom:.2em}h2{margin-top:1.6em}\
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:right;vertical-align:top}\
th{background:#f4f6f7}td.l,th.l{text-align:left}\
.side{display:grid;grid-template-columns:repeat(auto-fit,minmax(560px,1fr));gap:1.5em}\
.side>*{min-width:0;overflow-x:auto}figure{margin:0 0 1em 0}\
.legend span{display:inline-block;margin-right:1em;white-space:nowrap}\
.legend i{display:inline-block;width:.9em;height:.9em;margin-right:.3em;vertical-align:-.1em}\
svg text{font-size:11px;fill:#333}.axis{stroke:#333}.grid{stroke:#ddd}\
td.diff{background:#fadbd8;font-weight:bold}code{font-size:90%}\
.pass{color:#1e8449}.fail{color:#c0392b}.invalid{color:#7f8c8d}";

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The page for a run (or a merged report) of `record`.
#[must_use]
pub(crate) fn page(record: &RunRecord) -> String {
    let results = &record.results;
    let count = |v: Verdict| results.iter().filter(|r| r.verdict == v).count();
    let mut html = String::new();
    let _ = write!(
        html,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>lossproof: {s}</title><style>{STYLE}</style></head><body>\
         <h1>{s}</h1><p>run <code>{r}</code>: {n} seeds{scale}, consumers {c}: \
         <span class=\"pass\">{p} PASS</span>, <span class=\"fail\">{f} FAIL</span>, \
         <span class=\"invalid\">{i} INVALID</span></p>",
        s = esc(&record.scenario),
        r = esc(&record.run_id),
        n = results.len(),
        scale = if (record.time_scale - 1.0).abs() > f64::EPSILON {
            format!(" at time scale {}", record.time_scale)
        } else {
            String::new()
        },
        c = esc(&record.consumers.join(", ")),
        p = count(Verdict::Pass),
        f = count(Verdict::Fail),
        i = count(Verdict::Invalid),
    );
    html.push_str(&summary_table(&record.consumers, results));
    html.push_str("<h2>Damage by kind, per seed</h2>");
    html.push_str(&kind_legend());
    html.push_str("<div class=\"side\">");
    for consumer in &record.consumers {
        html.push_str(&damage_chart(consumer, results));
    }
    html.push_str("</div><h2>Distribution over seeds</h2><div class=\"side\">");
    for consumer in &record.consumers {
        html.push_str(&distribution_chart(consumer, results));
    }
    html.push_str("</div>");
    html.push_str(&freshness_section(&record.consumers, results));
    html.push_str(&snapshots_section(&record.consumers, results));
    if let Some(worst) = worst_seed(results) {
        html.push_str(&fault_timeline(worst));
        html.push_str(&damage_by_fault(&record.consumers, worst));
        html.push_str(&samples(&record.consumers, worst));
    }
    html.push_str(&seed_table(&record.consumers, results));
    html.push_str("</body></html>\n");
    html
}

/// The scored seed with the most wrong rows over all consumers (the first
/// of equals), else the first seed.
fn worst_seed(results: &[SeedRecord]) -> Option<&SeedRecord> {
    results
        .iter()
        .rev()
        .max_by_key(|r| r.wrong_rows.values().sum::<u64>())
}

/// Wrong rows per kind of one consumer in one seed (over its tables).
fn kinds_of(seed: &SeedRecord, consumer: &str) -> BTreeMap<DiffKind, u64> {
    let mut out = BTreeMap::new();
    for s in seed.summary.iter().filter(|s| s.consumer == consumer) {
        for (kind, n) in &s.counts.by_kind {
            *out.entry(*kind).or_insert(0) += n;
        }
    }
    out
}

fn kind_legend() -> String {
    let mut html = String::from("<p class=\"legend\">");
    for (kind, color) in DiffKind::ALL.iter().zip(KIND_COLORS) {
        let _ = write!(
            html,
            "<span><i style=\"background:{color}\"></i>{}</span>",
            kind.as_str()
        );
    }
    html.push_str("<span><i style=\"background:#eee;border:1px solid #999\"></i>INVALID (not scored)</span></p>");
    html
}

/// Per consumer: scored seeds, damaged seeds, min / median / p90 / max.
fn summary_table(consumers: &[String], results: &[SeedRecord]) -> String {
    let mut t = String::from(
        "<table><tr><th class=\"l\">consumer</th><th>scored seeds</th><th>damaged</th>\
         <th>min</th><th>median</th><th>p90</th><th>max</th><th class=\"l\">worst seed</th></tr>",
    );
    for consumer in consumers {
        let mut scored: Vec<(u64, u64)> = results
            .iter()
            .filter(|r| r.on_schedule())
            .filter_map(|r| r.wrong_rows.get(consumer).map(|n| (*n, r.seed)))
            .collect();
        scored.sort_unstable();
        let _ = write!(t, "<tr><td class=\"l\">{}</td>", esc(consumer));
        if scored.is_empty() {
            t.push_str(
                "<td>0</td><td colspan=\"6\" class=\"l\">no seed on schedule was scored \
                 (see the seeds' table)</td></tr>",
            );
            continue;
        }
        let at = |q: f64| {
            #[allow(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                clippy::cast_precision_loss
            )]
            let i = ((scored.len() - 1) as f64 * q).round() as usize;
            scored[i].0
        };
        let damaged = scored.iter().filter(|(n, _)| *n > 0).count();
        let (worst, seed) = scored[scored.len() - 1];
        let _ = write!(
            t,
            "<td>{}</td><td>{damaged}</td><td>{}</td><td>{}</td><td>{}</td><td>{worst}</td><td class=\"l\">{}</td></tr>",
            scored.len(),
            at(0.0),
            at(0.5),
            at(0.9),
            if worst > 0 {
                format!("seed {seed}")
            } else {
                "-".into()
            }
        );
    }
    t.push_str("</table>");
    t
}

/// Axes with `ticks` labelled values on y (0 to `max`), in chart space.
fn axes(svg: &mut String, max: u64, y_label: &str, x_label: &str) {
    let base = CHART_H - BOTTOM;
    for k in 0..=4u32 {
        let y = base - f64::from(k) / 4.0 * (base - 10.0);
        let value = max / 4 * u64::from(k);
        let _ = write!(
            svg,
            "<line class=\"grid\" x1=\"{LEFT}\" x2=\"{PLOT_END}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{value}</text>",
            LEFT - 4.0,
            y + 4.0
        );
    }
    let _ = write!(
        svg,
        "<line class=\"axis\" x1=\"{LEFT}\" x2=\"{PLOT_END}\" y1=\"{base}\" y2=\"{base}\"/>\
         <line class=\"axis\" x1=\"{LEFT}\" x2=\"{LEFT}\" y1=\"10\" y2=\"{base}\"/>\
         <text x=\"12\" y=\"{:.1}\" transform=\"rotate(-90 12 {:.1})\" text-anchor=\"middle\">{}</text>\
         <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
        base / 2.0,
        base / 2.0,
        esc(y_label),
        LEFT + (PLOT_END - LEFT) / 2.0,
        CHART_H - 4.0,
        esc(x_label)
    );
}

/// Stacked bars: one per seed, wrong rows by kind; INVALID seeds grey.
fn damage_chart(consumer: &str, results: &[SeedRecord]) -> String {
    let base = CHART_H - BOTTOM;
    let max = nice_max(
        results
            .iter()
            .filter_map(|r| r.wrong_rows.get(consumer))
            .copied()
            .max()
            .unwrap_or(0),
    );
    #[allow(clippy::cast_precision_loss)]
    let slot = (PLOT_END - LEFT - 4.0) / results.len().max(1) as f64;
    let bar = (slot * 0.8).max(1.0);
    let mut svg = format!(
        "<figure><figcaption><b>{}</b></figcaption><svg viewBox=\"0 0 {CHART_W} {CHART_H}\" width=\"{CHART_W}\" height=\"{CHART_H}\" role=\"img\" aria-label=\"wrong rows by kind per seed, {}\">",
        esc(consumer),
        esc(consumer)
    );
    axes(&mut svg, max, "wrong rows", "seed");
    // Seed labels: all of them when they fit, else about 10.
    let every = (results.len() / 10).max(1);
    for (i, r) in results.iter().enumerate() {
        #[allow(clippy::cast_precision_loss)]
        let x = LEFT + 2.0 + slot * i as f64 + (slot - bar) / 2.0;
        if i % every == 0 {
            let _ = write!(
                svg,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                x + bar / 2.0,
                base + 13.0,
                r.seed
            );
        }
        let Some(total) = r.wrong_rows.get(consumer) else {
            let _ = write!(
                svg,
                "<rect x=\"{x:.1}\" y=\"10\" width=\"{bar:.1}\" height=\"{:.1}\" fill=\"#eee\"><title>seed {}: {:?} (not scored){}</title></rect>",
                base - 10.0,
                r.seed,
                r.verdict,
                r.reason
                    .as_deref()
                    .map(|why| format!(": {}", esc(why)))
                    .unwrap_or_default()
            );
            continue;
        };
        let mut y = base;
        for (kind, color) in DiffKind::ALL.iter().zip(KIND_COLORS) {
            let n = kinds_of(r, consumer).get(kind).copied().unwrap_or(0);
            if n == 0 {
                continue;
            }
            #[allow(clippy::cast_precision_loss)]
            let h = n as f64 / max as f64 * (base - 10.0);
            y -= h;
            let _ = write!(
                svg,
                "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{bar:.1}\" height=\"{h:.1}\" fill=\"{color}\"><title>seed {}: {n} {} of {total} wrong rows</title></rect>",
                r.seed,
                kind.as_str()
            );
        }
    }
    svg.push_str("</svg></figure>");
    svg
}

/// The empirical CDF of wrong rows over the scored seeds: at x wrong rows,
/// the share of seeds with at most x.
fn distribution_chart(consumer: &str, results: &[SeedRecord]) -> String {
    let values: Vec<u64> = results
        .iter()
        .filter(|r| r.on_schedule())
        .filter_map(|r| r.wrong_rows.get(consumer).copied())
        .collect();
    cdf_chart(consumer, values, "scored seeds", "wrong rows")
}

/// The empirical CDF of each seed's lag p99 (ms) over the seeds that
/// measured it.
fn lag_distribution_chart(consumer: &str, results: &[SeedRecord]) -> String {
    let values: Vec<u64> = results
        .iter()
        .filter(|r| r.on_schedule())
        .filter_map(|r| r.lag_of(consumer).map(|f| f.p99_ms))
        .collect();
    cdf_chart(consumer, values, "seeds", "lag p99 (ms)")
}

/// An empirical CDF of `values` over `of` (seeds): at x, the share with at
/// most x `what`.
fn cdf_chart(consumer: &str, mut values: Vec<u64>, of: &str, what: &str) -> String {
    let base = CHART_H - BOTTOM;
    values.sort_unstable();
    let mut svg = format!(
        "<figure><figcaption><b>{}</b>: share of {} {of} with at most x {what}</figcaption>\
         <svg viewBox=\"0 0 {CHART_W} {CHART_H}\" width=\"{CHART_W}\" height=\"{CHART_H}\" role=\"img\" aria-label=\"distribution of {what}, {}\">",
        esc(consumer),
        values.len(),
        esc(consumer)
    );
    let max = nice_max(values.last().copied().unwrap_or(0));
    // y: 0 to 100 %, labelled like the other charts' axes.
    axes(&mut svg, 100, "% of seeds", what);
    for k in 0..=4u32 {
        let value = max / 4 * u64::from(k);
        let x = LEFT + f64::from(k) / 4.0 * (PLOT_END - LEFT);
        let _ = write!(
            svg,
            "<text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{value}</text>",
            base + 13.0
        );
    }
    if values.is_empty() {
        svg.push_str("</svg></figure>");
        return svg;
    }
    #[allow(clippy::cast_precision_loss)]
    let point = |v: u64, share: f64| {
        (
            LEFT + v as f64 / max as f64 * (PLOT_END - LEFT),
            base - share * (base - 10.0),
        )
    };
    let mut path = String::new();
    let (x0, y0) = point(0, 0.0);
    let _ = write!(path, "M{x0:.1},{y0:.1}");
    #[allow(clippy::cast_precision_loss)]
    let n = values.len() as f64;
    for (i, v) in values.iter().enumerate() {
        #[allow(clippy::cast_precision_loss)]
        let (before, after) = (i as f64 / n, (i + 1) as f64 / n);
        let (x, y) = point(*v, before);
        let (_, y2) = point(*v, after);
        let _ = write!(path, " L{x:.1},{y:.1} L{x:.1},{y2:.1}");
    }
    let (x_end, y_end) = point(max, 1.0);
    let _ = write!(path, " L{x_end:.1},{y_end:.1}");
    let median = values[values.len() / 2];
    let _ = write!(
        svg,
        "<path d=\"{path}\" fill=\"none\" stroke=\"#2471a3\" stroke-width=\"2\"><title>{consumer}: min {} median {median} max {}</title></path></svg></figure>",
        values[0],
        values[values.len() - 1],
        consumer = esc(consumer)
    );
    svg
}

/// Colours of the consumers' lag lines, in the run's consumer order.
const LAG_COLORS: [&str; 4] = ["#c0392b", "#1e8449", "#2471a3", "#8e44ad"];

/// Freshness: the seed with the worst lag, each consumer's lag over its
/// phases with the faults on the same time axis; then the distribution of
/// each seed's p99. Nothing when no seed measured a lag.
fn freshness_section(consumers: &[String], results: &[SeedRecord]) -> String {
    let Some(seed) = results
        .iter()
        .filter(|r| r.freshness.iter().any(|f| !f.lags_ms.is_empty()))
        .max_by_key(|r| r.freshness.iter().map(|f| f.max_ms).max().unwrap_or(0))
    else {
        return String::new();
    };
    let mut html = format!(
        "<h2>Freshness</h2><p>How far behind the source a reader of each lake was (the probe's \
         newest beat in the lake's current snapshot, every 100 ms of the phases; docs/run.md). \
         Seed {}, the one with the worst moment; faults fired are the red marks on the same time \
         axis.</p>",
        seed.seed
    );
    html.push_str(&lag_timeline(consumers, seed));
    html.push_str("<h3>Lag p99 over seeds</h3><div class=\"side\">");
    for consumer in consumers {
        html.push_str(&lag_distribution_chart(consumer, results));
    }
    html.push_str("</div>");
    html
}

/// One seed's lag per consumer over time (a line each), the faults where
/// they fired (vertical marks, name and outcome on hover).
fn lag_timeline(consumers: &[String], seed: &SeedRecord) -> String {
    let width = 900.0;
    let base = 240.0 - BOTTOM;
    // Below the time axis: a row of inconsistent-snapshot marks per consumer.
    #[allow(clippy::cast_precision_loss)]
    let height = 246.0 + 8.0 * consumers.len() as f64;
    let lines: Vec<(usize, &FreshnessRecord)> = consumers
        .iter()
        .enumerate()
        .filter_map(|(i, c)| seed.lag_of(c).map(|f| (i, f)))
        .collect();
    let end = lines
        .iter()
        .filter_map(|(_, f)| f.t_ms.last().map(|t| t + f.step_ms))
        .max()
        .unwrap_or(0)
        .max(seed.timings.load_ms)
        .max(1);
    let top = nice_max(lines.iter().map(|(_, f)| f.max_ms).max().unwrap_or(0));
    #[allow(clippy::cast_precision_loss)]
    let x = |ms: u64| LEFT + ms as f64 / end as f64 * width;
    #[allow(clippy::cast_precision_loss)]
    let y = |ms: u64| base - ms as f64 / top as f64 * (base - 10.0);
    #[allow(clippy::cast_precision_loss)]
    let secs = |ms: u64| ms as f64 / 1000.0;
    let mut svg = format!(
        "<svg viewBox=\"0 0 {w:.0} {height:.0}\" width=\"{w:.0}\" height=\"{height:.0}\" role=\"img\" aria-label=\"lag over time\">",
        w = width + LEFT + 40.0
    );
    for k in 0..=4u64 {
        let ms = top / 4 * k;
        let _ = write!(
            svg,
            "<line class=\"grid\" x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{:.1}s</text>",
            LEFT + width,
            LEFT - 4.0,
            y(ms) + 4.0,
            secs(ms),
            y = y(ms)
        );
    }
    for k in 0..=5u64 {
        let ms = end * k / 5;
        let _ = write!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{:.0}s</text>",
            x(ms),
            base + 14.0,
            secs(ms)
        );
    }
    let _ = write!(
        svg,
        "<line class=\"axis\" x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{base}\" y2=\"{base}\"/>\
         <line class=\"axis\" x1=\"{LEFT}\" x2=\"{LEFT}\" y1=\"10\" y2=\"{base}\"/>\
         <text x=\"12\" y=\"{:.1}\" transform=\"rotate(-90 12 {:.1})\" text-anchor=\"middle\">lag</text>",
        LEFT + width,
        base / 2.0,
        base / 2.0
    );
    for f in seed.faults.iter().filter(|f| f.fired) {
        let at = f.fired_ms.unwrap_or(f.planned_ms);
        let _ = write!(
            svg,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"10\" y2=\"{base}\" stroke=\"#c0392b\" stroke-dasharray=\"3 3\" stroke-width=\"1.5\"><title>{} ({})\n+{:.1}s: {}</title></line>",
            esc(&f.text),
            esc(&f.location),
            secs(at),
            esc(&f.outcome),
            x = x(at)
        );
    }
    let mut legend = String::from("<p class=\"legend\">");
    for (i, f) in &lines {
        let color = LAG_COLORS[i % LAG_COLORS.len()];
        svg.push_str(&lag_lines(f, color, &x, &y));
        let _ = write!(
            legend,
            "<span><i style=\"background:{color}\"></i>{} (p99 {:.1}s, max {:.1}s)</span>",
            esc(&f.consumer),
            secs(f.p99_ms),
            secs(f.max_ms)
        );
    }
    svg.push_str(&inconsistent_marks(consumers, seed, &x, base));
    svg.push_str("</svg>");
    legend.push_str("<span><i style=\"background:#c0392b;width:.2em\"></i>fault fired</span>");
    if seed.snapshots.iter().any(|s| !s.consistent) {
        legend.push_str("<span>&#9650; a snapshot that was not a state the source had (its consumer's colour; hover: what was wrong)</span>");
    }
    legend.push_str("</p>");
    svg.push_str(&legend);
    svg
}

/// A triangle under the time axis for every inconsistent snapshot, a row
/// per consumer in its lag line's colour.
fn inconsistent_marks(
    consumers: &[String],
    seed: &SeedRecord,
    x: &dyn Fn(u64) -> f64,
    base: f64,
) -> String {
    let mut svg = String::new();
    for (i, consumer) in consumers.iter().enumerate() {
        let color = LAG_COLORS[i % LAG_COLORS.len()];
        #[allow(clippy::cast_precision_loss)]
        let row = base + 22.0 + 8.0 * i as f64;
        for s in seed
            .snapshots
            .iter()
            .filter(|s| &s.consumer == consumer && !s.consistent)
        {
            let at = x(s.seen_ms);
            let _ = write!(
                svg,
                "<path d=\"M{:.1} {:.1} l3.5 6 h-7 z\" fill=\"{color}\"><title>{}: {} at {:.1}s: torn {}, vanished {}, regressed {}, wrong {}{}{}</title></path>",
                at,
                row - 6.0,
                esc(consumer),
                esc(&s.tables.join(", ")),
                s.seen_ms as f64 / 1000.0,
                s.torn,
                s.vanished,
                s.regressed,
                s.wrong,
                if s.unclassified == 0 {
                    String::new()
                } else {
                    format!(", {} more not classified", s.unclassified)
                },
                if s.sample.is_empty() {
                    String::new()
                } else {
                    format!("\n{}", esc(&s.sample.join("\n")))
                }
            );
        }
    }
    svg
}

/// Per seed and consumer: the snapshots checked against the source's
/// states, how many were not a state it had, and the worst.
fn snapshots_section(consumers: &[String], results: &[SeedRecord]) -> String {
    if results.iter().all(|r| r.consistency.is_empty()) {
        return String::new();
    }
    let mut html = String::from(
        "<h2>Snapshots</h2><p>Every snapshot each consumer published, checked against the \
         source's state after each of its transactions (docs/run.md, \"Snapshots\"): \
         inconsistent ones showed readers a state the source never had (part of a transaction, \
         a key missing, a key gone back in time). On the lag plot above they are the triangles \
         under the time axis.</p><table><tr><th>seed</th>",
    );
    for c in consumers {
        let _ = write!(html, "<th>{}: inconsistent / checked</th>", esc(c));
    }
    html.push_str("</tr>");
    for r in results {
        let _ = write!(html, "<tr><td>{}</td>", r.seed);
        for c in consumers {
            let cell = r.consistency_of(c).map_or_else(
                || "-".to_owned(),
                |x| {
                    let mut cell = format!("{} / {}", x.inconsistent, x.checked);
                    if x.worst > 0 {
                        let _ = write!(cell, " (worst {} keys)", x.worst);
                    }
                    if x.unchecked > 0 {
                        let _ = write!(cell, ", {} unchecked", x.unchecked);
                    }
                    if let Some(note) = &x.note {
                        let _ = write!(cell, " <small>{}</small>", esc(note));
                    }
                    cell
                },
            );
            let _ = write!(html, "<td>{cell}</td>");
        }
        html.push_str("</tr>");
    }
    html.push_str("</table>");
    html
}

/// One consumer's lag as polylines, one per stretch of samples: none is
/// drawn across a quiet phase, where the probe did not beat.
fn lag_lines(
    f: &FreshnessRecord,
    color: &str,
    x: &dyn Fn(u64) -> f64,
    y: &dyn Fn(u64) -> f64,
) -> String {
    let mut stretches: Vec<Vec<String>> = Vec::new();
    let mut last: Option<u64> = None;
    for (t, lag) in f.t_ms.iter().zip(&f.lags_ms) {
        if last.is_none_or(|l| t - l > f.step_ms) {
            stretches.push(Vec::new());
        }
        last = Some(*t);
        if let Some(points) = stretches.last_mut() {
            points.push(format!("{:.1},{:.1}", x(*t), y(*lag)));
        }
    }
    #[allow(clippy::cast_precision_loss)]
    let secs = |ms: u64| ms as f64 / 1000.0;
    let mut svg = String::new();
    for points in stretches {
        let _ = write!(
            svg,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"1.5\"><title>{}: p50 {:.1}s, p99 {:.1}s, max {:.1}s</title></polyline>",
            points.join(" "),
            esc(&f.consumer),
            secs(f.p50_ms),
            secs(f.p99_ms),
            secs(f.max_ms)
        );
    }
    svg
}

/// One seed on a time axis: its load, the workload's operations per second,
/// every fault where it fired (hollow where it was planned and did not
/// fire), and a table of its actions with their `.lp` places.
fn fault_timeline(seed: &SeedRecord) -> String {
    let total = seed.timings.total_ms.max(1);
    let width = 900.0;
    #[allow(clippy::cast_precision_loss)]
    let x = |ms: u64| LEFT + ms as f64 / total as f64 * width;
    #[allow(clippy::cast_precision_loss)]
    let secs = |ms: u64| ms as f64 / 1000.0;
    let mut svg = format!(
        "<h2>Seed {}: faults over time</h2><p>The seed with the most wrong rows. Hover a mark for the \
         fault, its place in the scenario and what it did.</p>\
         <svg viewBox=\"0 0 {w:.0} 130\" width=\"{w:.0}\" height=\"130\" role=\"img\" aria-label=\"faults over time\">\
         <rect x=\"{LEFT}\" y=\"45\" width=\"{:.1}\" height=\"30\" fill=\"#d6eaf8\"><title>load: {:.1}s</title></rect>\
         <line class=\"axis\" x1=\"{LEFT}\" y1=\"75\" x2=\"{:.1}\" y2=\"75\"/>",
        seed.seed,
        x(seed.timings.load_ms) - LEFT,
        secs(seed.timings.load_ms),
        LEFT + width,
        w = width + LEFT + 40.0
    );
    for k in 0..=5u32 {
        let ms = total * u64::from(k) / 5;
        let _ = write!(
            svg,
            "<text x=\"{:.1}\" y=\"92\" text-anchor=\"middle\">{:.0}s</text>",
            x(ms),
            secs(ms)
        );
    }
    for f in &seed.faults {
        let at = f.fired_ms.unwrap_or(f.planned_ms);
        let fill = if f.fired { "#c0392b" } else { "white" };
        let _ = write!(
            svg,
            "<circle cx=\"{:.1}\" cy=\"60\" r=\"5\" fill=\"{fill}\" stroke=\"#c0392b\"><title>{} ({})\n+{:.1}s: {}</title></circle>",
            x(at),
            esc(&f.text),
            esc(&f.location),
            secs(at),
            esc(&f.outcome)
        );
    }
    let peak = seed
        .ops_per_second
        .iter()
        .copied()
        .max()
        .unwrap_or(0)
        .max(1);
    #[allow(clippy::cast_precision_loss)]
    let points: Vec<String> = seed
        .ops_per_second
        .iter()
        .enumerate()
        .map(|(s, n)| {
            format!(
                "{:.1},{:.1}",
                x(s as u64 * 1000 + 500),
                42.0 - *n as f64 / peak as f64 * 30.0
            )
        })
        .collect();
    if !points.is_empty() {
        let _ = write!(
            svg,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"#2471a3\"><title>operations per second the source accepted (peak {peak})</title></polyline>",
            points.join(" ")
        );
    }
    svg.push_str("</svg>");
    let _ = write!(
        svg,
        "<p class=\"legend\"><span><i style=\"background:#d6eaf8\"></i>load ({:.0}s)</span>\
         <span><i style=\"background:#2471a3\"></i>operations/s (peak {peak})</span>\
         <span><i style=\"background:#c0392b\"></i>fault fired</span>\
         <span><i style=\"background:white;border:1px solid #c0392b\"></i>planned, not fired</span></p>",
        secs(seed.timings.load_ms)
    );
    // The actions, once each: where written, how often planned and fired.
    let mut actions: BTreeMap<usize, (&str, &str, usize, usize)> = BTreeMap::new();
    for f in &seed.faults {
        let entry = actions
            .entry(f.action)
            .or_insert((f.text.as_str(), f.location.as_str(), 0, 0));
        entry.2 += 1;
        entry.3 += usize::from(f.fired);
    }
    svg.push_str(
        "<table><tr><th class=\"l\">fault</th><th class=\"l\">written at</th><th>planned</th><th>fired</th></tr>",
    );
    for (text, location, planned, fired) in actions.values() {
        let _ = write!(
            svg,
            "<tr><td class=\"l\">{}</td><td class=\"l\"><code>{}</code></td><td>{planned}</td><td>{fired}</td></tr>",
            esc(text),
            esc(location)
        );
    }
    svg.push_str("</table>");
    svg
}

/// The worst seed's wrong rows per consumer by the fault occurrences they
/// are charged to (`lossproof_executor::blame`), the most first, each with
/// a bar of its share; then the rows charged to no fault.
fn damage_by_fault(consumers: &[String], seed: &SeedRecord) -> String {
    if seed.damage_by_fault.is_empty() {
        return String::new();
    }
    let mut html = format!(
        "<h2>Seed {}: damage by fault</h2><p>Each wrong row is charged to the fault occurrences \
         whose effect window holds its key's last source change: the changes in flight when it \
         fired (within the consumer's lag then) until it stopped acting, a schema change's to the \
         end of the seed (its table's keys); of a repeated statement's occurrences, the last that \
         holds it. Rows two faults hold count for both; <i>alone</i> counts those one fault holds \
         by itself (docs/run.md, \"Blame: damage by fault\")</p>",
        seed.seed
    );
    for consumer in consumers {
        let wrong = seed.wrong_rows.get(consumer).copied().unwrap_or(0);
        let mut charged: Vec<&lossproof_executor::blame::FaultDamage> = seed
            .damage_by_fault
            .iter()
            .filter(|d| &d.consumer == consumer)
            .collect();
        if wrong == 0 || charged.is_empty() {
            continue;
        }
        // The most first, no fault last.
        charged.sort_by_key(|d| (d.fault.is_none(), std::cmp::Reverse(d.rows)));
        let _ = write!(
            html,
            "<p><b>{}</b>: {wrong} wrong rows</p><table><tr><th class=\"l\">fault</th>\
             <th>fired at</th><th class=\"l\">written at</th><th>wrong rows</th><th>alone</th>\
             <th class=\"l\">share</th></tr>",
            esc(consumer)
        );
        for d in charged {
            let fault = d.fault.and_then(|i| seed.faults.get(i));
            #[allow(clippy::cast_precision_loss)]
            let share = d.rows as f64 / wrong.max(1) as f64;
            let _ = write!(
                html,
                "<tr><td class=\"l\">{}</td><td>{}</td><td class=\"l\"><code>{}</code></td>\
                 <td>{}</td><td>{}</td><td class=\"l\"><svg width=\"204\" height=\"12\">\
                 <rect width=\"{:.0}\" height=\"12\" fill=\"{}\"/></svg> {:.0}%</td></tr>",
                fault.map_or_else(|| "<i>no fault</i>".to_owned(), |f| esc(&f.text)),
                fault
                    .and_then(|f| f.fired_ms)
                    .map_or_else(String::new, |ms| format!("{:.2}s", ms as f64 / 1000.0)),
                fault.map_or("", |f| f.location.as_str()),
                d.rows,
                d.alone,
                share * 200.0,
                if fault.is_some() { "#c0392b" } else { "#999" },
                share * 100.0
            );
        }
        html.push_str("</table>");
    }
    html
}

/// The worst seed's sample diff rows per consumer: key and kind, then each
/// column's source and lake value, the columns that differ marked.
fn samples(consumers: &[String], seed: &SeedRecord) -> String {
    let mut html = format!(
        "<h2>Seed {}: what the damage looks like</h2><p>A few diff rows per consumer (of every kind \
         found). Columns whose source and lake values differ are marked.</p><div>",
        seed.seed
    );
    for consumer in consumers {
        let rows: Vec<&DiffRow> = seed
            .samples
            .iter()
            .filter(|r| &r.consumer == consumer)
            .collect();
        let _ = write!(html, "<div><b>{}</b>", esc(consumer));
        if rows.is_empty() {
            html.push_str(if seed.wrong_rows.get(consumer).is_some_and(|n| *n > 0) {
                "<p>(no sample in this record)</p>"
            } else {
                "<p>no wrong rows</p>"
            });
            html.push_str("</div>");
            continue;
        }
        html.push_str(
            "<table><tr><th class=\"l\">table</th><th class=\"l\">key</th><th class=\"l\">kind</th>\
             <th class=\"l\">column</th><th class=\"l\">source</th><th class=\"l\">lake</th></tr>",
        );
        for row in rows {
            let source = row
                .source
                .as_deref()
                .map(canonical::columns)
                .unwrap_or_default();
            let lake = row
                .lake
                .as_deref()
                .map(canonical::columns)
                .unwrap_or_default();
            let mut names: Vec<&str> = source.iter().map(|(n, _)| n.as_str()).collect();
            for (n, _) in &lake {
                if !names.contains(&n.as_str()) {
                    names.push(n);
                }
            }
            let value = |side: &[(String, String)], name: &str| {
                side.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone())
            };
            let span = names.len().max(1);
            let _ = write!(
                html,
                "<tr><td class=\"l\" rowspan=\"{span}\">{}</td><td class=\"l\" rowspan=\"{span}\"><code>{}</code></td><td class=\"l\" rowspan=\"{span}\">{}</td>",
                esc(&row.table),
                esc(&row.key),
                row.kind.as_str()
            );
            if names.is_empty() {
                html.push_str("<td></td><td></td><td></td></tr>");
                continue;
            }
            for (i, name) in names.iter().enumerate() {
                if i > 0 {
                    html.push_str("<tr>");
                }
                let (s, l) = (value(&source, name), value(&lake, name));
                let class = if s == l { "l" } else { "l diff" };
                let show = |v: Option<String>| v.map_or_else(|| "—".to_owned(), |v| esc(&v));
                let _ = write!(
                    html,
                    "<td class=\"l\"><code>{}</code></td><td class=\"{class}\"><code>{}</code></td><td class=\"{class}\"><code>{}</code></td></tr>",
                    esc(name),
                    show(s),
                    show(l)
                );
            }
        }
        html.push_str("</table></div>");
    }
    html.push_str("</div>");
    html
}

/// Why a seed FAILED or is INVALID, its workload's rate and its faults'
/// drift, and why it is off schedule if it is.
fn reason_of(r: &SeedRecord) -> String {
    let mut parts: Vec<String> = r.reason.iter().cloned().collect();
    let lost = r.capture_lost_keys();
    if lost > 0 {
        parts.push(format!(
            "capture lost {lost} keys: their last change never reached the topics (not charged to the consumers)"
        ));
    }
    parts.extend(r.capture_note.iter().cloned());
    if let Some(s) = &r.schedule {
        if s.planned_ops_per_s > 0.0 {
            parts.push(format!(
                "rate {:.0}/{:.0} ops/s",
                s.achieved_ops_per_s, s.planned_ops_per_s
            ));
        }
        parts.push(format!("fault drift p99 {} ms", s.drift_p99_ms));
        if !s.on_schedule() {
            parts.push(format!(
                "OFF SCHEDULE, not counted in the distributions: {}",
                s.off.join("; ")
            ));
        }
    }
    parts.join("; ")
}

fn seed_table(consumers: &[String], results: &[SeedRecord]) -> String {
    let mut t = String::from(
        "<h2>Seeds</h2><table><tr><th>seed</th><th class=\"l\">verdict</th><th>faults fired</th>",
    );
    for c in consumers {
        let _ = write!(
            t,
            "<th>{c} wrong rows</th><th>{c} lag p99 / max</th>",
            c = esc(c)
        );
    }
    t.push_str("<th class=\"l\">reason, rate, schedule</th></tr>");
    for r in results {
        let class = match r.verdict {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Invalid => "invalid",
        };
        let _ = write!(
            t,
            "<tr><td>{}</td><td class=\"l {class}\">{:?}</td><td>{}/{}</td>",
            r.seed,
            r.verdict,
            r.faults.iter().filter(|f| f.fired).count(),
            r.faults.len()
        );
        for c in consumers {
            #[allow(clippy::cast_precision_loss)]
            let lag = r.lag_of(c).map_or_else(
                || "-".to_owned(),
                |f| {
                    format!(
                        "{:.1}s / {:.1}s",
                        f.p99_ms as f64 / 1000.0,
                        f.max_ms as f64 / 1000.0
                    )
                },
            );
            let _ = write!(
                t,
                "<td>{}</td><td>{lag}</td>",
                r.wrong_rows.get(c).map_or("-".into(), u64::to_string)
            );
        }
        let _ = write!(t, "<td class=\"l\">{}</td></tr>", esc(&reason_of(r)));
    }
    t.push_str("</table>");
    t
}

#[cfg(test)]
mod tests {
    use super::nice_max;

    #[test]
    fn axes_end_on_round_numbers_in_four_whole_steps() {
        for (max, top) in [
            (0, 4),
            (1, 4),
            (3, 4),
            (5, 8),
            (9, 20),
            (40, 40),
            (41, 80),
            (1921, 2000),
            (2001, 4000),
        ] {
            assert_eq!(nice_max(max), top, "max {max}");
        }
    }
}
