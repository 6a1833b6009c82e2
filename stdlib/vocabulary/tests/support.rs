//! Helpers shared by the tests.

use std::path::{Path, PathBuf};

use lossproof_lang::{Analysis, FsLoader, Loader};
use lossproof_vocabulary::{Place, check};

/// The repository root.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root")
}

/// Check a file as `lossproof check` does (less the SQL planning, which
/// needs the executor), naming it by its path relative to the root so
/// rendered diagnostics are the same on every machine.
pub(crate) fn analyze(path: &Path) -> Analysis {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let name = path
        .strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string();
    let dir = lossproof_vocabulary::check::scenario_dir(path);
    // Relative includes resolve from where the tests run: the root.
    std::env::set_current_dir(root()).expect("the repository root");
    check(
        &name,
        &text,
        &FsLoader,
        Place {
            dir: &dir,
            profile: None,
        },
    )
}

/// Check `text` named `name`, its includes read through `loader`.
pub(crate) fn check_with(loader: &dyn Loader, name: &str, text: &str) -> Analysis {
    std::env::set_current_dir(root()).expect("the repository root");
    check(
        name,
        text,
        loader,
        Place {
            dir: &root(),
            profile: None,
        },
    )
}

/// Every `*.lp` file directly in `dir` (relative to the root), sorted.
pub(crate) fn lp_files(dir: &str) -> Vec<PathBuf> {
    lossproof_vocabulary::check::scenario_files(&root().join(dir))
        .unwrap_or_else(|e| panic!("read {dir}: {e}"))
}
