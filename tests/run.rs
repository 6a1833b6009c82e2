//! `lossproof run` on the real local stack: seeds are executed, faults land
//! while the workload runs and are recorded, the same seed plans the same
//! timeline, a dead connector makes a seed INVALID (never a count), and no
//! consumer process outlives the run — after a normal exit or Ctrl-C.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::stack::{StackGuard, lossproof, ok};

fn input(name: &str) -> String {
    crate::support::root()
        .join("tests/inputs/run")
        .join(name)
        .display()
        .to_string()
}

/// `lossproof run FILE --seeds SEEDS --consumers careless --out OUT`.
fn run(
    state: &Path,
    file: &str,
    seeds: &str,
    out: &Path,
) -> (Option<i32>, String, serde_json::Value) {
    let output = lossproof(
        state,
        &[
            "run",
            file,
            "--seeds",
            seeds,
            "--consumers",
            "careless",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let record = std::fs::read_to_string(out)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(serde_json::Value::Null);
    (output.status.code(), text, record)
}

/// Pids of consumer processes started for the stack in `state`.
fn consumers_of(state: &Path) -> Vec<i32> {
    let needle = state.display().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            cmdline.contains("consumer careless") && cmdline.contains(&needle)
        })
        .collect()
}

#[test]
fn run_executes_seeds_and_refuses_to_score_a_dead_connector() {
    let _serial = crate::support::heavy_test();
    let state = std::env::temp_dir().join(format!("lossproof-run-{}", std::process::id()));
    let _guard = StackGuard(state.clone());
    ok(&lossproof(&state, &["up"]));

    // A scored seed: every kill fired while the workload ran.
    let (code, text, first) = run(&state, &input("short.lp"), "3", &state.join("first.json"));
    assert!(matches!(code, Some(0 | 1)), "scored, PASS or FAIL: {text}");
    let seed = &first["results"][0];
    assert_eq!(seed["seed"], 3);
    let per_second: Vec<u64> = seed["ops_per_second"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(serde_json::Value::as_u64)
        .collect();
    assert!(
        per_second.len() >= 5 && per_second.iter().sum::<u64>() > 0,
        "throughput per second: {per_second:?}"
    );
    assert!(
        seed["verdict"] == "PASS" || seed["verdict"] == "FAIL",
        "{seed:#}"
    );
    assert!(seed["wrong_rows"]["careless"].is_u64(), "{seed:#}");
    let faults = seed["faults"].as_array().unwrap();
    assert_eq!(
        faults.len(),
        2,
        "kill every 2s in [0s, 6s): at 2s and 4s: {faults:#?}"
    );
    for fault in faults {
        assert_eq!(fault["fired"], true, "{fault:#}");
        assert_eq!(
            fault["during_load"], true,
            "a kill must land while the workload runs: {fault:#}"
        );
    }
    assert!(
        text.contains("careless: wrong rows over 1 scored seeds"),
        "{text}"
    );
    assert!(
        consumers_of(&state).is_empty(),
        "no consumer outlives the run"
    );

    // The same seed plans the same timeline.
    let (_, text, second) = run(&state, &input("short.lp"), "3", &state.join("second.json"));
    assert_eq!(
        first["results"][0]["planned"], second["results"][0]["planned"],
        "same seed, same timeline: {text}"
    );
    assert_ne!(
        first["run_id"], second["run_id"],
        "every run has its own id"
    );

    replay_plans_the_recorded_timeline(&state, &first);

    // A connector paused mid-run never drains: INVALID, with the reason.
    let (code, text, dead) = run(
        &state,
        &input("dead-connector.lp"),
        "1",
        &state.join("dead.json"),
    );
    assert_eq!(code, Some(2), "{text}");
    let seed = &dead["results"][0];
    assert_eq!(seed["verdict"], "INVALID", "{seed:#}");
    assert!(
        seed["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("not running"),
        "{seed:#}"
    );
    assert!(
        seed["wrong_rows"]
            .as_object()
            .is_none_or(serde_json::Map::is_empty),
        "never a count: {seed:#}"
    );
    assert!(
        consumers_of(&state).is_empty(),
        "no consumer outlives an INVALID run"
    );

    ctrl_c_leaves_no_consumer(&state);
}

/// `replay` runs a recorded seed again: the same planned timeline; a seed
/// the record does not hold is refused.
fn replay_plans_the_recorded_timeline(state: &Path, first: &serde_json::Value) {
    let replayed = lossproof(
        state,
        &[
            "replay",
            state.join("first.json").to_str().unwrap(),
            "--seed",
            "3",
        ],
    );
    let text = String::from_utf8_lossy(&replayed.stdout).into_owned();
    let path = text
        .lines()
        .find_map(|l| l.strip_prefix("run record: "))
        .unwrap_or_else(|| panic!("replay prints its record: {text}"));
    let third: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(
        first["results"][0]["planned"], third["results"][0]["planned"],
        "{text}"
    );
    let wrong = lossproof(
        state,
        &[
            "replay",
            state.join("first.json").to_str().unwrap(),
            "--seed",
            "4",
        ],
    );
    assert_eq!(wrong.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("seed 4 is not in"));
}

fn ctrl_c_leaves_no_consumer(state: &Path) {
    use std::io::BufRead as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_lossproof"))
        .args([
            "run",
            &input("short.lp"),
            "--seeds",
            "5",
            "--consumers",
            "careless",
            "--state",
        ])
        .arg(state)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_mins(1);
    loop {
        let line = rx.recv_timeout(Duration::from_secs(1)).unwrap_or_default();
        if line.contains("phase 1") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the run never reached its load phase"
        );
    }
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        !consumers_of(state).is_empty(),
        "the consumer runs during the load"
    );
    let pid = nix::unistd::Pid::from_raw(child.id().cast_signed());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "run did not exit within 30 s of Ctrl-C"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(status.code(), Some(2), "interrupted is exit 2");
    assert!(
        consumers_of(state).is_empty(),
        "Ctrl-C leaves no consumer running"
    );
}
