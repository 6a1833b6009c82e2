//! The state file: `registry.json` in the state directory, replaced
//! atomically (write a temporary file, sync it, rename it over the old one)
//! so a registry killed at any moment leaves either the old or the new state.
//! A lock on `registry.lock` keeps a second registry off the same directory.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write as _};
use std::path::{Path, PathBuf};

use crate::RegistryError;
use crate::state::{FORMAT, State};

const STATE_FILE: &str = "registry.json";
const TEMP_FILE: &str = "registry.json.tmp";
const LOCK_FILE: &str = "registry.lock";

/// The open state directory. Dropping it releases the lock.
#[derive(Debug)]
pub(crate) struct Store {
    dir: PathBuf,
    _lock: File,
}

impl Store {
    /// Create the directory if needed, take its lock and read the state in it
    /// (an empty state if there is none yet).
    pub(crate) fn open(dir: &Path) -> Result<(Self, State), RegistryError> {
        fs::create_dir_all(dir)
            .map_err(|e| RegistryError::storage(format!("create {}", dir.display()), e))?;
        let lock_path = dir.join(LOCK_FILE);
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| RegistryError::storage(format!("open {}", lock_path.display()), e))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => {
                return Err(RegistryError::StateLocked(dir.to_path_buf()));
            }
            Err(fs::TryLockError::Error(e)) => {
                return Err(RegistryError::storage(
                    format!("lock {}", lock_path.display()),
                    e,
                ));
            }
        }
        let store = Self {
            dir: dir.to_path_buf(),
            _lock: lock,
        };
        let state = store.load()?;
        Ok((store, state))
    }

    fn load(&self) -> Result<State, RegistryError> {
        let path = self.dir.join(STATE_FILE);
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(State::default()),
            Err(e) => {
                return Err(RegistryError::storage(
                    format!("read {}", path.display()),
                    e,
                ));
            }
        };
        let state: State =
            serde_json::from_slice(&bytes).map_err(|e| RegistryError::CorruptState {
                path: path.clone(),
                message: e.to_string(),
            })?;
        if state.format != FORMAT {
            return Err(RegistryError::CorruptState {
                path,
                message: format!(
                    "format {} is not the format this registry reads ({FORMAT})",
                    state.format
                ),
            });
        }
        Ok(state)
    }

    /// Replace the state on disk with `state`. When this returns `Ok`, the new
    /// state survives the process being killed.
    pub(crate) fn save(&self, state: &State) -> Result<(), RegistryError> {
        let temp = self.dir.join(TEMP_FILE);
        let target = self.dir.join(STATE_FILE);
        let bytes = serde_json::to_vec_pretty(state).expect("the state always serialises");
        let write = || -> std::io::Result<()> {
            let mut file = File::create(&temp)?;
            file.write_all(&bytes)?;
            file.sync_all()?;
            drop(file);
            fs::rename(&temp, &target)?;
            // Make the rename itself durable; not every platform can sync a
            // directory, and the rename is already atomic without it.
            if let Ok(dir) = File::open(&self.dir) {
                let _ = dir.sync_all();
            }
            Ok(())
        };
        write().map_err(|e| RegistryError::storage(format!("write {}", target.display()), e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{SubjectState, VersionEntry};

    #[test]
    fn saved_state_reads_back_and_no_temporary_file_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let mut state = State {
            next_id: 3,
            ..State::default()
        };
        state.schemas.insert(2, "\"string\"".into());
        state.subjects.insert(
            "s".into(),
            SubjectState {
                compatibility: None,
                versions: vec![VersionEntry {
                    version: 1,
                    id: 2,
                    deleted: true,
                }],
            },
        );
        {
            let (store, empty) = Store::open(dir.path()).unwrap();
            assert_eq!(empty, State::default());
            store.save(&state).unwrap();
        }
        let (_store, read) = Store::open(dir.path()).unwrap();
        assert_eq!(read, state);
        assert!(!dir.path().join(TEMP_FILE).exists());
    }

    #[test]
    fn a_second_registry_cannot_open_the_same_directory() {
        let dir = tempfile::tempdir().unwrap();
        let first = Store::open(dir.path()).unwrap();
        assert!(matches!(
            Store::open(dir.path()),
            Err(RegistryError::StateLocked(_))
        ));
        drop(first);
        Store::open(dir.path()).unwrap();
    }

    #[test]
    fn a_damaged_or_foreign_state_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(STATE_FILE), b"{not json").unwrap();
        assert!(matches!(
            Store::open(dir.path()),
            Err(RegistryError::CorruptState { .. })
        ));
        let mut future = serde_json::to_value(State::default()).unwrap();
        future["format"] = 99.into();
        fs::write(dir.path().join(STATE_FILE), future.to_string()).unwrap();
        assert!(matches!(
            Store::open(dir.path()),
            Err(RegistryError::CorruptState { .. })
        ));
    }
}
