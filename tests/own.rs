//! Consumers of a scenario's own (`consumer NAME command "…"`,
//! docs/bring-your-own.md) on the real stack: lossproof starts, kills and
//! scores a program it did not write, the template consumer of
//! `scenarios/bring-your-own/`, and catches its deliberately broken
//! variant losing rows.

use std::path::Path;

use crate::stack::up_own_stack;

/// `lossproof run FILE --seeds SEEDS` on the stack in `state`, with the
/// template consumer's virtualenv first on `PATH` (its `python3` has
/// confluent-kafka, fastavro and pyiceberg): exit code, output, record.
pub(crate) fn run_own(
    state: &Path,
    file: &str,
    seeds: &str,
) -> (Option<i32>, String, serde_json::Value) {
    let venv = lossproof_runtime::Tools::from_env().byo_venv();
    assert!(
        venv.join(".complete").is_file(),
        "the template consumer's virtualenv {} is missing: bash runtime/bootstrap.sh installs it",
        venv.display()
    );
    let path = std::ffi::OsString::from(format!(
        "{}:{}",
        venv.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    ));
    let out = state.join(format!(
        "{}.json",
        Path::new(file).file_stem().unwrap().to_str().unwrap()
    ));
    crate::run::run_in_env(state, file, seeds, &[], &out, &[("PATH", &path)])
}

#[test]
fn the_template_consumer_holds_under_kills_and_its_commit_first_variant_loses_rows() {
    let _serial = crate::support::heavy_test();
    let (state, _guard) = up_own_stack("own");
    let (code, text, record) = run_own(&state, "tests/inputs/own/kills.lp", "1..2");
    let seeds = record["results"]
        .as_array()
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(seeds.len(), 2, "{text}");
    let mut lost = Vec::new();
    for seed in seeds {
        // Scored (drained, gated) and the template clean on every seed.
        assert_eq!(seed["verdict"], "PASS", "{seed}\n{text}");
        assert_eq!(seed["wrong_rows"]["template"], 0, "{seed}");
        let summary = seed["summary"].as_array().unwrap();
        let compared: u64 = summary
            .iter()
            .filter(|s| s["consumer"] == "template")
            .map(|s| s["compared"].as_u64().unwrap())
            .sum();
        assert!(compared > 1000, "the template's lake was compared: {seed}");
        let faults = seed["faults"].as_array().unwrap();
        assert!(
            faults.iter().all(|f| f["fired"] == true
                && f["outcome"]
                    .as_str()
                    .is_some_and(|o| o.contains("template") && o.contains("commit_first"))),
            "every kill struck both programs: {seed}"
        );
        lost.push(seed["wrong_rows"]["commit_first"].as_u64().unwrap());
    }
    eprintln!("commit_first wrong rows per seed: {lost:?}");
    assert!(
        lost.iter().any(|n| *n > 0),
        "committing offsets before the write loses rows on some seed: {lost:?}\n{text}"
    );
    assert_eq!(code, Some(0), "{text}");
    // Each program ran in the scenario's folder with the contract's
    // variables, and its process group is gone with the seed.
    let log = std::fs::read_dir(state.join("runs"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("template.log"))
        .find(|p| p.is_file())
        .expect("the template's log");
    assert!(
        std::fs::read_to_string(&log).unwrap().contains("applied "),
        "{}",
        log.display()
    );
    assert!(
        crate::support::processes_mentioning(Path::new("bring-your-own/consumer.py")).is_empty(),
        "no template consumer outlives its seed"
    );
}

#[test]
fn a_declared_consumer_that_exits_at_once_makes_the_seed_invalid_with_its_log() {
    let _serial = crate::support::heavy_test();
    let (state, _guard) = up_own_stack("own-exits");
    let (code, text, record) = run_own(&state, "tests/inputs/own/exits.lp", "1");
    assert_eq!(code, Some(2), "{text}");
    let seed = &record["results"][0];
    assert_eq!(seed["verdict"], "INVALID", "{text}");
    let reason = seed["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("consumer broken (tests/inputs/own/exits.lp:4:1: `python3 -c")
            && reason.contains("exited within 2 s")
            && reason.contains("no such sink"),
        "the reason names the consumer, where it is declared, and quotes its log: {reason}"
    );
}
