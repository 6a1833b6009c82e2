//! Helpers shared by the tests.

use std::path::{Path, PathBuf};

use lossproof_lang::{Analysis, Analyzer, FsLoader};
use lossproof_stdlib::Stdlib;

/// The repository root (tests run from the root package).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Analyse a file, naming it by its path relative to the root so rendered
/// diagnostics are the same on every machine.
pub fn analyze(path: &Path) -> Analysis {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let name = path
        .strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string();
    Analyzer::new(&Stdlib, &FsLoader).analyze(&name, &text)
}

/// Every `*.lp` file directly in `dir`, sorted.
pub fn lp_files(dir: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
        .unwrap_or_else(|e| panic!("read {dir}: {e}"))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "lp"))
        .collect();
    files.sort();
    files
}

/// Run the `lossproof` binary from the repository root, without colour.
pub fn lossproof(args: &[&std::ffi::OsStr]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_lossproof"))
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .output()
        .expect("run lossproof")
}

/// Held by every test that starts a real stack, so two stacks (two JVMs,
/// four PostgreSQL servers) never compete for the machine's cores at once.
pub fn heavy_test() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
