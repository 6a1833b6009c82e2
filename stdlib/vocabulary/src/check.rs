//! The one check a scenario gets before anything runs, whoever asks:
//! `lossproof check`, `lossproof run`, the language server and the tests
//! all call [`check`] (the executor adds the planning of every assertion's
//! SQL on top, `lossproof_executor::check`). It is the analyser's work plus
//! what needs to know where the scenario will run: the programs of its own
//! consumers, found from its folder as `run` will start them, and the
//! faults the stack it is pointed at gives lossproof no way to strike.

use std::path::{Path, PathBuf};

use lossproof_lang::diagnostic::Diagnostic;
use lossproof_lang::{Analysis, Analyzer, Code, Loader, Plan};

use crate::Stdlib;
use crate::reach;

/// Where a scenario will run, as far as a check can know it.
#[derive(Debug, Clone, Copy)]
pub struct Place<'a> {
    /// Its folder: a declared consumer's program with a `/` is found there.
    pub dir: &'a Path,
    /// The external profile it will run on (its name), if not the local
    /// stack.
    pub profile: Option<&'a str>,
}

/// Analyse `text` (named `name`, its includes read through `loader`) and
/// check its plan against `place`. A plan comes back only when there is no
/// diagnostic.
#[must_use]
pub fn check(name: &str, text: &str, loader: &dyn Loader, place: Place<'_>) -> Analysis {
    let mut analysis = Analyzer::new(&Stdlib, loader).analyze(name, text);
    if let Some(plan) = &analysis.plan {
        let mut found = missing_programs(plan, place.dir);
        if let Some(profile) = place.profile {
            found.extend(cannot_strike(plan, profile));
        }
        if !found.is_empty() {
            analysis.diagnostics.extend(found);
            analysis.plan = None;
        }
    }
    analysis
}

/// Every scenario file (`*.lp`) directly in `dir`, sorted: what `lossproof
/// check DIR` checks.
///
/// # Errors
/// When the folder cannot be read.
pub fn scenario_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|x| x == "lp") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// The folder a scenario file's own consumers run in: the file's.
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

/// A diagnostic at each fault the external profile `profile` gives
/// lossproof no way to strike ([`reach`]).
fn cannot_strike(plan: &Plan, profile: &str) -> Vec<Diagnostic> {
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

/// A diagnostic at each declared consumer whose program cannot be found
/// from `dir` as `run` would start it.
fn missing_programs(plan: &Plan, dir: &Path) -> Vec<Diagnostic> {
    plan.declared
        .iter()
        .filter_map(|d| {
            let program = d.command.first()?;
            let why = find_program(program, dir).err()?;
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

/// Where `program` (a command's first word) is, as the run will start it
/// from `dir`: a path with a `/` relative to `dir`, a bare name on `PATH`.
/// The error says what was looked at.
///
/// # Errors
/// When it is not there or not an executable file.
pub fn find_program(program: &str, dir: &Path) -> Result<PathBuf, String> {
    use std::os::unix::fs::PermissionsExt as _;
    let executable = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let path = dir.join(program.strip_prefix("./").unwrap_or(program));
        return if executable(&path) {
            Ok(path)
        } else if path.exists() {
            Err(format!("{} is not an executable file", path.display()))
        } else {
            Err(format!("{} does not exist", path.display()))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| executable(p))
        .ok_or_else(|| {
            format!(
                "`{program}` is not on PATH ({})",
                std::env::var("PATH").unwrap_or_default()
            )
        })
}
