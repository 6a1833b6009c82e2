//! `lossproof fmt [--check] FILE…`

use std::path::PathBuf;

use lossproof_lang::{Parser, format};

use crate::CliResult;
use crate::scenario;

pub(crate) fn run(files: &[PathBuf], check: bool) -> CliResult<bool> {
    let mut ok = true;
    for file in files {
        let text = scenario::read(file)?;
        let parsed = Parser::parse(&text, 0);
        if parsed.has_errors() {
            // A file that does not parse cannot be formatted without losing
            // what could not be read: say why and leave it alone.
            let analysis = scenario::check_text(file, &text, None);
            scenario::print_diagnostics(&analysis);
            println!("not formatted (syntax errors)  {}", file.display());
            ok = false;
            continue;
        }
        let formatted = format(&parsed.file, &text);
        if formatted == text {
            continue;
        }
        if check {
            println!("would reformat  {}", file.display());
            ok = false;
        } else {
            std::fs::write(file, formatted)
                .map_err(|e| format!("cannot write `{}`: {e}", file.display()))?;
            println!("formatted  {}", file.display());
        }
    }
    Ok(ok)
}
