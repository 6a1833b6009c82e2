//! Loading a scenario file through the one check every command shares
//! (check, explain, fmt, lsp, run): [`lossproof_executor::check`].

use std::io::IsTerminal;
use std::path::Path;

use crate::CliResult;
use lossproof_lang::render::{Style, render};
use lossproof_lang::{Analysis, FsLoader};
use lossproof_vocabulary::Place;
use lossproof_vocabulary::check::scenario_dir;

/// Read a scenario file, with an error that names it.
pub(crate) fn read(path: &Path) -> CliResult<String> {
    std::fs::read_to_string(path).map_err(|e| {
        format!(
            "cannot read `{}`: {}",
            path.display(),
            e.to_string().to_lowercase()
        )
        .into()
    })
}

/// Check the scenario file at `path` as it will run (from its folder, on
/// `profile` if given) through the one check every command shares
/// ([`lossproof_executor::check`]).
pub(crate) fn check(path: &Path, profile: Option<&str>) -> CliResult<Analysis> {
    let text = read(path)?;
    Ok(check_text(path, &text, profile))
}

/// [`check`] of `text` as the file at `path` (its includes resolve
/// relative to it).
pub(crate) fn check_text(path: &Path, text: &str, profile: Option<&str>) -> Analysis {
    let dir = scenario_dir(path);
    lossproof_executor::check(
        &path.display().to_string(),
        text,
        &FsLoader,
        Place { dir: &dir, profile },
    )
}

/// Print an analysis' diagnostics to stderr, in colour on a terminal.
pub(crate) fn print_diagnostics(analysis: &Analysis) {
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
