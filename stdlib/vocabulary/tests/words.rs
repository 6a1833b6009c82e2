//! The documents and editor files that must stay in step with the
//! vocabulary: the diagnostics reference, the language reference, the
//! editors' word lists.

use lossproof_lang::Code;
use lossproof_lang::vocabulary::{Vocabulary, Words, compile_pattern, usage};
use lossproof_vocabulary::Stdlib;

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
        "regenerate it: cargo run -p lossproof-vocabulary --example vocab > editors/vocabulary.json && node editors/generate.mjs"
    );
}
