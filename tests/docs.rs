//! Documentation and editor files that must stay in step with the code.

use lossproof_lang::Code;
use lossproof_lang::vocabulary::{Vocabulary, Words, compile_pattern, usage};
use lossproof_stdlib::Stdlib;

use crate::support::root;

#[test]
fn every_diagnostic_code_is_documented() {
    let doc =
        std::fs::read_to_string(root().join("docs/diagnostics.md")).expect("docs/diagnostics.md");
    for code in Code::ALL {
        assert!(
            doc.contains(&format!("## `{}`", code.as_str())),
            "docs/diagnostics.md lacks `{code}`"
        );
    }
}

#[test]
fn every_fault_and_shorthand_is_in_the_language_reference() {
    let doc = std::fs::read_to_string(root().join("docs/language.md")).expect("docs/language.md");
    for fault in Stdlib.faults() {
        let written = usage(&compile_pattern(fault.pattern));
        assert!(doc.contains(&written), "docs/language.md lacks `{written}`");
    }
    for shorthand in Stdlib.shorthands() {
        let written = format!("expect {}", usage(&compile_pattern(shorthand.pattern)));
        assert!(doc.contains(&written), "docs/language.md lacks `{written}`");
    }
}

/// Editors generate their keyword lists from `editors/vocabulary.json`;
/// this keeps that file equal to the stdlib, so a new fault reaches them.
#[test]
fn editor_vocabulary_matches_the_stdlib() {
    let path = root().join("editors/vocabulary.json");
    let text = std::fs::read_to_string(&path).expect("editors/vocabulary.json");
    let committed: Words = serde_json::from_str(&text).expect("vocabulary.json parses");
    assert_eq!(
        committed,
        Words::of(&Stdlib),
        "regenerate it: cargo run -- vocab > editors/vocabulary.json && node editors/generate.mjs"
    );
}

/// The template consumer stays short enough to read in one sitting (the
/// docs promise under 150 lines), and the packages its README tells users
/// to install are the ones the tests run it with (runtime/bootstrap.sh).
#[test]
fn the_template_consumer_is_short_and_its_requirements_are_what_the_tests_install() {
    let consumer = std::fs::read_to_string(root().join("scenarios/bring-your-own/consumer.py"))
        .expect("the template consumer");
    let lines = consumer.lines().count();
    assert!(lines < 150, "consumer.py has {lines} lines");
    let requirements =
        std::fs::read_to_string(root().join("scenarios/bring-your-own/requirements.txt"))
            .expect("requirements.txt");
    let mut pinned: Vec<&str> = requirements
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let bootstrap = std::fs::read_to_string(root().join("runtime/bootstrap.sh")).unwrap();
    let pins = |var: &str| -> Vec<String> {
        let line = bootstrap
            .lines()
            .find(|l| l.starts_with(&format!("{var}=(")))
            .unwrap_or_else(|| panic!("{var} in bootstrap.sh"));
        line.split('"')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    };
    let version = bootstrap
        .lines()
        .find_map(|l| l.strip_prefix("PYICEBERG_VERSION="))
        .unwrap();
    let mut installed: Vec<String> = pins("BYO_PINS")
        .into_iter()
        .flat_map(|p| {
            if p == "${PYICEBERG_PINS[@]}" {
                pins("PYICEBERG_PINS")
            } else {
                vec![p]
            }
        })
        .map(|p| p.replace("$PYICEBERG_VERSION", version))
        .collect();
    pinned.sort_unstable();
    installed.sort();
    assert_eq!(pinned, installed);
}
