//! Loading a scenario file through the one parse+analyse path every command
//! shares (check, explain, fmt, lsp, run).

use std::io::IsTerminal;
use std::path::Path;

use lossproof_lang::render::{Style, render};
use lossproof_lang::{Analysis, Analyzer, FsLoader};
use lossproof_stdlib::Stdlib;

/// Read a scenario file, with an error that names it.
pub fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| {
        format!(
            "cannot read `{}`: {}",
            path.display(),
            e.to_string().to_lowercase()
        )
    })
}

/// Analyse the text of the scenario file at `path` (its includes resolve
/// relative to it).
pub fn analyze_text(path: &Path, text: &str) -> Analysis {
    Analyzer::new(&Stdlib, &FsLoader).analyze(&path.display().to_string(), text)
}

/// Read and analyse a scenario file.
pub fn analyze(path: &Path) -> Result<Analysis, String> {
    Ok(analyze_text(path, &read(path)?))
}

/// Print an analysis' diagnostics to stderr, in colour on a terminal.
pub fn print_diagnostics(analysis: &Analysis) {
    if analysis.diagnostics.is_empty() {
        return;
    }
    let stderr = std::io::stderr();
    let color = stderr.is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let width = if color { 120 } else { Style::PLAIN.width };
    eprint!(
        "{}",
        render(
            &analysis.sources,
            &analysis.diagnostics,
            Style { color, width }
        )
    );
}
