//! Where `include "…"` files come from. Reading source is the only I/O the
//! language crate does.

use std::path::{Component, Path, PathBuf};

pub trait Loader {
    /// Load `path` as included from the file called `from`. Returns the
    /// file's canonical name (used to read each file once) and its text.
    fn load(&self, from: &str, path: &str) -> Result<(String, String), String>;
}

/// Resolves includes relative to the including file, on the file system.
pub struct FsLoader;

impl Loader for FsLoader {
    fn load(&self, from: &str, path: &str) -> Result<(String, String), String> {
        let full = normalize(&Path::new(from).parent().unwrap_or(Path::new("")).join(path));
        let text = std::fs::read_to_string(&full).map_err(|e| e.to_string().to_lowercase())?;
        Ok((full.display().to_string(), text))
    }
}

/// Refuses every include: for analysing text that has no file (tests, fuzzing).
pub struct NoIncludes;

impl Loader for NoIncludes {
    fn load(&self, _from: &str, _path: &str) -> Result<(String, String), String> {
        Err("includes are not available here".to_owned())
    }
}

/// `a/b/../c` -> `a/c`, without touching the file system, so names stay as
/// relative as the user wrote them (stable in messages) and one file has
/// one name (each is read once).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir
                if matches!(out.components().next_back(), Some(Component::Normal(_))) =>
            {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}
