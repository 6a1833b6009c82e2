//! `lossproof check FILE|DIR… [--strict] [--profile PROFILE.toml]`: a
//! folder is every scenario file directly in it.

use std::path::{Path, PathBuf};

use crate::CliResult;
use crate::scenario;

pub(crate) fn run(paths: &[PathBuf], strict: bool, profile: Option<&Path>) -> CliResult<bool> {
    let profile = profile.map(lossproof_runtime::Profile::load).transpose()?;
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let found = lossproof_vocabulary::check::scenario_files(path)
                .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
            if found.is_empty() {
                return Err(format!("`{}` has no scenario file (`*.lp`)", path.display()).into());
            }
            files.extend(found);
        } else {
            files.push(path.clone());
        }
    }
    let mut failed = 0;
    for file in &files {
        let analysis = scenario::check(file, profile.as_ref().map(|p| p.name.as_str()))?;
        scenario::print_diagnostics(&analysis);
        let mut errors = analysis.diagnostics.len();
        if strict && let Some(plan) = &analysis.plan {
            let lines = not_yet_lines(&analysis.sources, plan);
            for line in &lines {
                println!("{line}");
            }
            errors += lines.len();
        }
        if errors == 0 {
            println!("ok  {}", file.display());
        } else {
            failed += 1;
            println!(
                "{errors} error{}  {}",
                if errors == 1 { "" } else { "s" },
                file.display()
            );
        }
    }
    if files.len() > 1 {
        println!("checked {} files: {} with errors", files.len(), failed);
    }
    Ok(failed == 0)
}

/// One line per use of something `run` cannot execute yet:
/// `scenarios/x.lp:12:3: fault `cut network …` cannot run yet: needs the fault proxy (issue 16)`.
pub(crate) fn not_yet_lines(
    sources: &[lossproof_lang::Source],
    plan: &lossproof_lang::Plan,
) -> Vec<String> {
    lossproof_vocabulary::not_yet::uses(plan)
        .into_iter()
        .map(|u| {
            let place = u.span.map_or_else(
                || sources.first().map(|s| s.name.clone()).unwrap_or_default(),
                |span| lossproof_lang::render::location(sources, span),
            );
            format!("{place}: {} cannot run yet: {}", u.what, u.why)
        })
        .collect()
}
