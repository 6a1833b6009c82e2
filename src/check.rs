//! `lossproof check FILE… [--strict] [--profile PROFILE.toml]`

use std::path::{Path, PathBuf};

use lossproof_lang::Code;
use lossproof_stdlib::reach;

use crate::CliResult;
use crate::scenario;

pub fn run(files: &[PathBuf], strict: bool, profile: Option<&Path>) -> CliResult<bool> {
    let profile = profile.map(lossproof_runtime::Profile::load).transpose()?;
    let mut failed = 0;
    for file in files {
        let mut analysis = scenario::analyze(file)?;
        if let (Some(profile), Some(plan)) = (&profile, &analysis.plan) {
            let refused = cannot_strike(plan, &profile.name);
            analysis.diagnostics.extend(refused);
        }
        if let Some(plan) = &analysis.plan {
            let missing = missing_programs(plan, &scenario_dir(file));
            analysis.diagnostics.extend(missing);
        }
        scenario::print_diagnostics(&analysis);
        let mut errors = analysis.diagnostics.iter().filter(|d| d.is_error()).count();
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
pub fn not_yet_lines(
    sources: &[lossproof_lang::Source],
    plan: &lossproof_lang::Plan,
) -> Vec<String> {
    lossproof_stdlib::not_yet::uses(plan)
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

/// A diagnostic at each fault the external profile `profile` gives
/// lossproof no way to strike (`lossproof_stdlib::reach`).
pub fn cannot_strike(
    plan: &lossproof_lang::Plan,
    profile: &str,
) -> Vec<lossproof_lang::diagnostic::Diagnostic> {
    reach::refusals(plan, reach::Stack::External)
        .into_iter()
        .map(|r| {
            Code::CannotStrike
                .at(
                    r.span,
                    format!("`{}` cannot run on profile {profile}", r.text),
                )
                .label(if r.target.is_empty() {
                    "not on this stack".to_owned()
                } else {
                    format!("{} is not lossproof's to strike there", r.target)
                })
                .help(r.why)
        })
        .collect()
}

/// The folder a scenario's own consumers run in: the scenario file's.
#[must_use]
pub fn scenario_dir(file: &Path) -> PathBuf {
    let dir = file.parent().unwrap_or(Path::new("."));
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf())
}

/// A diagnostic at each declared consumer whose program cannot be found
/// from `dir` (the scenario's folder) as `run` would start it.
pub fn missing_programs(
    plan: &lossproof_lang::Plan,
    dir: &Path,
) -> Vec<lossproof_lang::diagnostic::Diagnostic> {
    plan.declared
        .iter()
        .filter_map(|d| {
            let program = d.command.first()?;
            let why = lossproof_stdlib::own::find_program(program, dir).err()?;
            Some(
                Code::CommandNotFound
                    .at(
                        d.command_span,
                        format!("consumer `{}`: cannot find `{program}`", d.name),
                    )
                    .label("program not found")
                    .help(format!(
                        "{why}; a path with a `/` is relative to the scenario's folder"
                    )),
            )
        })
        .collect()
}
