//! Snapshot tests over valid and invalid `.lp` inputs, and the scenario suite.

use lossproof_lang::render::{Style, render};
use lossproof_lang::{ColumnType, Parser, format};

use crate::support::{analyze, lp_files};

#[test]
fn there_are_at_least_30_valid_and_30_invalid_inputs() {
    assert!(lp_files("tests/inputs/ok").len() >= 30);
    assert!(lp_files("tests/inputs/err").len() >= 30);
}

/// Each valid input: no diagnostics, and its plan plus seed 7's timeline.
#[test]
fn valid_inputs_snapshot_plan_and_timeline() {
    insta::glob!("../../../tests/inputs", "ok/*.lp", |path| {
        let analysis = analyze(path);
        assert!(
            analysis.diagnostics.is_empty(),
            "{}",
            render(&analysis.sources, &analysis.diagnostics, Style::PLAIN)
        );
        let plan = analysis.plan.expect("a plan without errors");
        insta::assert_yaml_snapshot!(
            serde_json::json!({ "plan": plan, "timeline": plan.timeline(7) })
        );
    });
}

/// Each invalid input: at least one error, no plan, and every diagnostic
/// rendered without colour at a fixed width.
#[test]
fn invalid_inputs_snapshot_diagnostics() {
    insta::glob!("../../../tests/inputs", "err/*.lp", |path| {
        let analysis = analyze(path);
        assert!(analysis.has_errors(), "{} should not check", path.display());
        assert!(analysis.plan.is_none());
        insta::assert_snapshot!(render(
            &analysis.sources,
            &analysis.diagnostics,
            Style::PLAIN
        ));
    });
}

#[test]
fn every_invalid_input_reports_every_problem_in_one_pass() {
    let analysis = analyze(&crate::support::root().join("tests/inputs/err/39-many-errors.lp"));
    let codes: Vec<&str> = analysis
        .diagnostics
        .iter()
        .map(|d| d.code.as_str())
        .collect();
    assert_eq!(
        codes,
        [
            "lp::check::missing-unit",
            "lp::check::unknown-fault",
            "lp::check::zero-period",
            "lp::check::missing-unit",
            "lp::check::unknown-consumer",
        ]
    );
}

/// Every scenario in the suite checks clean.
#[test]
fn scenarios_check_clean() {
    let files = lp_files("scenarios");
    for required in [
        "crash",
        "redeliver",
        "widen",
        "compaction-race",
        "recreate-connector",
        "junk",
        "duplicates",
    ] {
        assert!(
            files
                .iter()
                .any(|f| f.file_stem().is_some_and(|s| s == required)),
            "scenarios/{required}.lp is missing"
        );
    }
    for file in files {
        let analysis = analyze(&file);
        assert!(
            analysis.diagnostics.is_empty(),
            "{}",
            render(&analysis.sources, &analysis.diagnostics, Style::PLAIN)
        );
        assert!(!analysis.plan.expect("plan").phases.is_empty());
    }
}

/// Formatting is canonical for the suite and idempotent for every input.
#[test]
fn formatting_is_idempotent_and_the_suite_is_formatted() {
    let mut files = lp_files("scenarios");
    files.extend(lp_files("tests/inputs/ok"));
    for file in files {
        let text = std::fs::read_to_string(&file).expect("read");
        let once = format(&Parser::parse(&text, 0).file, &text);
        let reparsed = Parser::parse(&once, 0);
        assert!(
            !reparsed.has_errors(),
            "formatted {} does not parse:\n{once}",
            file.display()
        );
        let twice = format(&reparsed.file, &once);
        assert_eq!(once, twice, "formatting {} twice differs", file.display());
        if file.starts_with(crate::support::root().join("scenarios")) {
            assert_eq!(
                text,
                once,
                "{} is not formatted; run `lossproof fmt`",
                file.display()
            );
        }
        // Formatting never changes what a scenario means.
        let before = crate::support::check_with(&lossproof_lang::FsLoader, "x.lp", &text)
            .plan
            .map(|p| p.timeline(3));
        let after = crate::support::check_with(&lossproof_lang::FsLoader, "x.lp", &once)
            .plan
            .map(|p| p.timeline(3));
        let strip = |t: Option<lossproof_lang::Timeline>| {
            t.map(|t| {
                t.occurrences
                    .iter()
                    .map(|o| (o.phase, o.offset_ms, o.text.clone()))
                    .collect::<Vec<_>>()
            })
        };
        assert_eq!(
            strip(before),
            strip(after),
            "formatting changed the timeline of {}",
            file.display()
        );
    }
}

#[test]
fn formatting_keeps_comments_and_splits_statements() {
    let text = "# top\nunder load 30s < kill consumer every 2s+-500ms; alter table orders widen amount > # end\n\n\n# last\n";
    let formatted = format(&Parser::parse(text, 0).file, text);
    assert_eq!(
        formatted,
        "# top\nunder load 30s <\n  kill consumer every 2s±500ms\n  alter table orders widen amount\n> # end\n\n# last\n"
    );
}

/// The plan for a seed is identical every time (the "unseed" check), and a
/// scenario that asks for randomness gives different seeds different plans.
#[test]
fn same_seed_same_timeline_different_seed_different_timeline() {
    let plan = analyze(&crate::support::root().join("scenarios/crash.lp"))
        .plan
        .expect("plan");
    assert_eq!(plan.timeline(7), plan.timeline(7));
    assert_ne!(plan.timeline(7).occurrences, plan.timeline(8).occurrences);
    // Without randomness, every seed gives the same offsets.
    let fixed = crate::support::check_with(
        &lossproof_lang::NoIncludes,
        "fixed.lp",
        "under load 10s < kill consumer every 2s >",
    )
    .plan
    .expect("plan");
    assert_eq!(fixed.timeline(1).occurrences, fixed.timeline(2).occurrences);
    let offsets: Vec<u64> = fixed
        .timeline(1)
        .occurrences
        .iter()
        .map(|o| o.offset_ms)
        .collect();
    assert_eq!(offsets, [2000, 4000, 6000, 8000]);
}

/// `run --time-scale 0.1`: every duration of the timeline shrinks ten
/// times, drain limits and settings stay, and the scaled timeline is the
/// unscaled one shrunk (offsets of `every` without jitter exactly).
#[test]
fn a_time_scaled_plan_runs_the_same_story_faster() {
    use lossproof_lang::plan::{ArgValue, Phase};
    let plan = crate::support::check_with(&lossproof_lang::NoIncludes,
            "scaled.lp",
            "under load 60s <\n  kill consumer every 2s\n  between 10s and 20s < restart consumer at 5s >\n  \
             cut network to broker for 8s at 30s\n>\ndrain within 120s\nset autocommit_interval 5s\n",
        )
        .plan
        .expect("plan");
    let scaled = plan.time_scaled(0.1);
    assert!(matches!(
        scaled.phases[0],
        Phase::Load {
            duration_ms: 6_000,
            ..
        }
    ));
    assert!(
        matches!(
            scaled.phases[1],
            Phase::Drain {
                timeout_ms: 120_000,
                ..
            }
        ),
        "a drain limit is not the scenario's time: {:?}",
        scaled.phases[1]
    );
    assert_eq!(
        scaled.settings, plan.settings,
        "settings are the pipeline's"
    );
    let offsets = |p: &lossproof_lang::Plan| -> Vec<(usize, u64)> {
        p.timeline(1)
            .occurrences
            .iter()
            .map(|o| (o.action, o.offset_ms))
            .collect()
    };
    let expected: Vec<(usize, u64)> = offsets(&plan)
        .into_iter()
        .map(|(a, ms)| (a, ms / 10))
        .collect();
    assert_eq!(offsets(&scaled), expected);
    let cut = scaled
        .actions
        .iter()
        .find(|a| a.text.starts_with("cut network"))
        .expect("the cut");
    assert!(
        cut.args.values().any(|v| *v == ArgValue::DurationMs(800)),
        "{:?}",
        cut.args
    );
    // Tiny factors never make an empty window or a zero period.
    let tiny = plan.time_scaled(0.000_01);
    for seed in 0..20 {
        assert!(!tiny.timeline(seed).occurrences.is_empty());
    }
}

#[test]
fn jitter_and_windows_stay_inside_their_bounds() {
    let plan = crate::support::check_with(&lossproof_lang::NoIncludes,
            "bounds.lp",
            "under load 60s <\n  between 10s and 20s <\n    kill consumer every 1s±900ms\n    pause broker 50 times randomly\n  >\n>\n",
        )
        .plan
        .expect("plan");
    for seed in 0..200 {
        for o in plan.timeline(seed).occurrences {
            assert!(
                (10_000..20_000).contains(&o.offset_ms),
                "seed {seed}: {o:?}"
            );
        }
    }
}

#[test]
fn chance_fires_about_as_often_as_asked() {
    let plan = crate::support::check_with(
        &lossproof_lang::NoIncludes,
        "chance.lp",
        "under load 1000s < kill consumer every 1s with chance 30% >",
    )
    .plan
    .expect("plan");
    let fired: usize = (0..20)
        .map(|seed| plan.timeline(seed).occurrences.len())
        .sum();
    // 20 seeds x 999 chances at 30%: 5994 expected; 5 sigma is about 300.
    assert!((5700..6300).contains(&fired), "fired {fired} of 19980");
}

/// The real pipeline's every-type scenario (tests/schema.rs) declares a
/// column of every column type, and an array of each but the two Debezium
/// does not deliver whole (their own scenario, `lossy-arrays.lp`): a new
/// type cannot skip it.
#[test]
fn the_every_type_scenario_has_every_type() {
    let tables = |file: &str| {
        let analysis = analyze(&crate::support::root().join(file));
        let plan = analysis.plan.expect("a scenario that checks");
        plan.workload.tables
    };
    let declared: Vec<ColumnType> = tables("tests/inputs/schema/types.lp")
        .into_iter()
        .chain(tables("tests/inputs/schema/lossy-arrays.lp"))
        .flat_map(|t| t.columns)
        .map(|c| c.sql_type)
        .collect();
    for scalar in ColumnType::EXAMPLES {
        let array = ColumnType::Array(Box::new(scalar.clone()));
        for wanted in [scalar, array] {
            assert!(
                declared.iter().any(|d| d.word() == wanted.word()
                    && d.element().is_some() == wanted.element().is_some()),
                "tests/inputs/schema/types.lp has no `{}` column",
                wanted.usage()
            );
        }
    }
}
