//! The `lossproof` binary as a user runs it.

use std::process::Output;

fn lossproof(args: &[&str]) -> Output {
    let args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
    crate::support::lossproof(&args)
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn check_passes_the_suite_and_fails_a_broken_file() {
    // A folder is every scenario file in it.
    let ok = lossproof(&["check", "scenarios"]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );

    let bad = lossproof(&["check", "tests/inputs/err/05-unknown-target.lp"]);
    assert_eq!(bad.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stderr.contains("lp::check::unknown-target"), "{stderr}");
    assert!(stderr.contains("did you mean `consumer`?"), "{stderr}");

    let missing = lossproof(&["check", "no/such/file.lp"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot read `no/such/file.lp`"));
}

#[test]
fn explain_is_the_same_for_a_seed_and_differs_between_seeds() {
    let seven = lossproof(&["explain", "scenarios/crash.lp", "--seed", "7"]);
    assert!(seven.status.success());
    assert_eq!(
        stdout(&seven),
        stdout(&lossproof(&[
            "explain",
            "scenarios/crash.lp",
            "--seed",
            "7"
        ]))
    );
    assert_ne!(
        stdout(&seven),
        stdout(&lossproof(&[
            "explain",
            "scenarios/crash.lp",
            "--seed",
            "8"
        ]))
    );
    assert!(stdout(&seven).contains("scenario crash  seed 7"));
    assert!(stdout(&seven).contains("kill consumer"));

    let json = lossproof(&["explain", "scenarios/crash.lp", "--seed", "7", "--json"]);
    let value: serde_json::Value =
        serde_json::from_slice(&json.stdout).expect("explain --json prints JSON");
    assert_eq!(value["timeline"]["seed"], 7);
    assert_eq!(value["plan"]["scenario"], "crash");
    assert!(
        value["timeline"]["occurrences"]
            .as_array()
            .is_some_and(|o| o.len() > 20)
    );
}

/// A scenario's own tables: `explain` prints them, parents first, with
/// their keys and foreign keys (a snapshot of the whole text).
#[test]
fn explain_shows_a_declared_schema() {
    let output = lossproof(&["explain", "scenarios/own-schema/clean.lp", "--seed", "1"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    insta::assert_snapshot!(stdout(&output));
}

#[test]
fn fmt_rewrites_checks_and_refuses_broken_files() {
    let dir = std::env::temp_dir().join(format!("lossproof-fmt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("messy.lp");
    let path = file.display().to_string();
    std::fs::write(&file, "# keep me\nunder load 30s <kill consumer every 2s;alter table orders widen amount># and me\n").expect("write");

    assert_eq!(lossproof(&["fmt", "--check", &path]).status.code(), Some(1));
    assert!(lossproof(&["fmt", &path]).status.success());
    assert_eq!(
        std::fs::read_to_string(&file).expect("read"),
        "# keep me\nunder load 30s <\n  kill consumer every 2s\n  alter table orders widen amount\n> # and me\n"
    );
    assert!(lossproof(&["fmt", "--check", &path]).status.success());

    let broken = "under load 30s < kill consumer every >\n";
    std::fs::write(&file, broken).expect("write");
    assert_eq!(lossproof(&["fmt", &path]).status.code(), Some(1));
    assert_eq!(
        std::fs::read_to_string(&file).expect("read"),
        broken,
        "a broken file is left alone"
    );
    std::fs::remove_dir_all(&dir).expect("clean up");
}

/// An assertion naming a table the reconciler does not have is an error at
/// the assertion's SQL, found by `check` before any stack exists.
#[test]
fn check_plans_assertions_against_the_reconcilers_tables() {
    let bad = lossproof(&["check", "tests/inputs/plan/unknown-table.lp"]);
    let text = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(1), "{text}");
    assert!(text.contains("lp::check::sql-does-not-plan"), "{text}");
    assert!(
        text.contains("table 'datafusion.public.dif' not found"),
        "{text}"
    );
    assert!(
        text.contains("unknown-table.lp:6:"),
        "points into the file: {text}"
    );
}

/// `check --strict` also reports what `run` cannot execute yet, each use
/// with its place and reason (`lossproof_vocabulary::not_yet`); a scenario that
/// only uses what exists passes it.
#[test]
fn check_strict_reports_what_cannot_run_yet() {
    let input = "tests/inputs/run/too-many-partitions.lp";
    let strict = lossproof(&["check", "--strict", input]);
    assert_eq!(strict.status.code(), Some(1));
    let out = stdout(&strict);
    assert!(
        out.contains(&format!(
            "{input}: `set partitions 32` cannot run yet: tested up to 16"
        )),
        "{out}"
    );
    let plain = lossproof(&["check", input]);
    assert!(plain.status.success(), "without --strict it is valid");
    for shipped in [
        "scenarios/compaction-race.lp",
        "scenarios/ordinary-week.lp",
        "scenarios/compactor-crash.lp",
    ] {
        let runnable = lossproof(&["check", "--strict", shipped]);
        assert!(
            runnable.status.success(),
            "{shipped}: {}",
            stdout(&runnable)
        );
    }
    let fine = lossproof(&["check", "--strict", "scenarios/crash.lp"]);
    assert!(fine.status.success(), "{}", stdout(&fine));
}

/// `check --profile` loads an external profile (its secret from the
/// environment, never echoed) and refuses, at its place, each fault that
/// profile gives lossproof no way to strike: a kill of the team's broker.
/// Faults through interfaces (`restart connector`: Connect's REST API) and
/// on lossproof's own processes (`kill consumer`) pass.
#[test]
fn check_with_a_profile_refuses_what_it_cannot_strike() {
    let run = |secret: Option<&str>| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_lossproof"));
        command
            .args([
                "check",
                "--profile",
                "tests/inputs/profile/staging.toml",
                "tests/inputs/profile/kill-broker.lp",
                "scenarios/crash.lp",
            ])
            .current_dir(crate::support::root())
            .env("NO_COLOR", "1")
            .env_remove("LOSSPROOF_TEST_PG_PASSWORD");
        if let Some(secret) = secret {
            command.env("LOSSPROOF_TEST_PG_PASSWORD", secret);
        }
        command.output().expect("run lossproof")
    };
    let out = run(Some("hunter2-in-the-env"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("lp::check::cannot-strike")
            && text.contains("`kill broker` cannot run on profile staging")
            && text.contains("tests/inputs/profile/kill-broker.lp:7:3"),
        "{text}"
    );
    assert_eq!(
        text.matches("lp::check::cannot-strike").count(),
        1,
        "only the broker kill is refused: {text}"
    );
    assert!(text.contains("ok  scenarios/crash.lp"), "{text}");
    assert!(!text.contains("hunter2"), "the secret never shows: {text}");

    let missing = run(None);
    let text = String::from_utf8_lossy(&missing.stderr);
    assert_eq!(missing.status.code(), Some(2), "{text}");
    assert!(
        text.contains("staging.toml") && text.contains("LOSSPROOF_TEST_PG_PASSWORD is not set"),
        "{text}"
    );
}
