//! Property test: arbitrary text and mutated scenarios never panic the
//! parser, analyser, renderer or formatter, and every diagnostic's span lies
//! inside its source on character boundaries. Inputs come from a seeded
//! `ChaCha` stream, so a failure names a reproducible case.

use std::panic::{AssertUnwindSafe, catch_unwind};

use lossproof_lang::render::{Style, render};
use lossproof_lang::{Analysis, NoIncludes, Parser, format};
use lossproof_vocabulary::{Place, check};
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{RngCore, SeedableRng};

use crate::support::lp_files;

const TOKENS: &[&str] = &[
    "<",
    ">",
    "<=",
    ";",
    "\n",
    "\r\n",
    " ",
    "\t",
    "\"",
    "```",
    "```sql\n",
    "#",
    "±",
    "+-",
    "%",
    "/s",
    "30s",
    "0s",
    "2",
    "1.5",
    "-",
    "under load",
    "quiet",
    "drain within",
    "between",
    "and",
    "at",
    "every",
    "times randomly",
    "with chance",
    "use",
    "fragment",
    "include",
    "assert \"a\"",
    "expect",
    "kill",
    "consumer",
    "careless",
    "alter table orders widen amount",
    "é",
    "€",
    "𝄞",
    "\\",
    "scenario",
    "set",
    "workload orders",
    "mix",
    "consumers",
    "redeliver from start",
    "select",
    "'",
];

fn below(rng: &mut ChaCha8Rng, n: usize) -> usize {
    (rng.next_u64() % n.max(1) as u64) as usize
}

fn check_invariants(text: &str, case: &str) {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let place = Place {
            dir: std::path::Path::new("."),
            profile: None,
        };
        let analysis: Analysis = check("fuzz.lp", text, &NoIncludes, place);
        for d in &analysis.diagnostics {
            let source = &analysis.sources[d.span.source].text;
            assert!(
                d.span.start <= d.span.end && d.span.end <= source.len(),
                "span {:?} outside input",
                d.span
            );
            assert!(
                source.is_char_boundary(d.span.start) && source.is_char_boundary(d.span.end),
                "span {:?} splits a character",
                d.span
            );
            for (span, _) in &d.related {
                let source = &analysis.sources[span.source].text;
                assert!(
                    span.end <= source.len()
                        && source.is_char_boundary(span.start)
                        && source.is_char_boundary(span.end)
                );
            }
        }
        assert_eq!(analysis.plan.is_some(), !analysis.has_errors());
        let _ = render(&analysis.sources, &analysis.diagnostics, Style::PLAIN);
        if let Some(plan) = &analysis.plan {
            let _ = plan.timeline(1);
        }
        let parsed = Parser::parse(text, 0);
        if !parsed.has_errors() {
            let once = format(&parsed.file, text);
            let again = Parser::parse(&once, 0);
            assert!(
                !again.has_errors(),
                "formatted text does not parse:\n{once}"
            );
            assert_eq!(
                format(&again.file, &once),
                once,
                "formatting is not idempotent"
            );
        }
    }));
    assert!(outcome.is_ok(), "{case} failed on input {text:?}");
}

#[test]
fn arbitrary_bytes_never_panic() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x1055_900f);
    for case in 0..1500 {
        let len = below(&mut rng, 200);
        let bytes: Vec<u8> = (0..len).map(|_| (rng.next_u64() & 0xff) as u8).collect();
        check_invariants(
            &String::from_utf8_lossy(&bytes),
            &format!("bytes case {case}"),
        );
        let tokens: String = (0..below(&mut rng, 40))
            .map(|_| TOKENS[below(&mut rng, TOKENS.len())])
            .collect();
        check_invariants(&tokens, &format!("token soup case {case}"));
    }
}

#[test]
fn mutated_scenarios_never_panic() {
    let mut corpus: Vec<String> = Vec::new();
    for dir in ["scenarios", "tests/inputs/ok", "tests/inputs/err"] {
        corpus.extend(
            lp_files(dir)
                .iter()
                .map(|f| std::fs::read_to_string(f).expect("read")),
        );
    }
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for case in 0..3000 {
        let mut chars: Vec<char> = corpus[below(&mut rng, corpus.len())].chars().collect();
        for _ in 0..=below(&mut rng, 3) {
            let at = below(&mut rng, chars.len() + 1);
            match below(&mut rng, 4) {
                0 => {
                    let end = (at + below(&mut rng, 12)).min(chars.len());
                    chars.drain(at..end);
                }
                1 => {
                    let token: Vec<char> = TOKENS[below(&mut rng, TOKENS.len())].chars().collect();
                    chars.splice(at..at, token);
                }
                2 => {
                    let end = (at + below(&mut rng, 30)).min(chars.len());
                    let copy: Vec<char> = chars[at..end].to_vec();
                    let to = below(&mut rng, chars.len() + 1);
                    chars.splice(to..to, copy);
                }
                _ => chars.truncate(at),
            }
        }
        let text: String = chars.into_iter().collect();
        check_invariants(&text, &format!("mutation case {case}"));
    }
}
