//! Every word an editor should know, as JSON: what
//! `editors/vocabulary.json` holds (`lossproof vocab` prints the same).
//!
//! ```text
//! cargo run -p lossproof-vocabulary --example vocab > editors/vocabulary.json
//! node editors/generate.mjs
//! ```

fn main() {
    let words = lossproof_lang::vocabulary::Words::of(&lossproof_vocabulary::Stdlib);
    println!(
        "{}",
        serde_json::to_string_pretty(&words).expect("words are plain data")
    );
}
