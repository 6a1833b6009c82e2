//! The state directory: one folder per component, the ports and pids of the
//! running stack (`stack.json`), and a lock so two commands never start or
//! stop the same stack at once.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::fd::AsRawFd as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::component::{Component, StackProfile};
use crate::error::{Error, IoContext as _, Result};
use crate::ports::Ports;
use crate::process::ProcessRecord;

#[derive(Debug, Clone)]
pub struct StateDir {
    root: PathBuf,
}

/// What `stack.json` records.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StackRecord {
    pub ports: Option<Ports>,
    pub processes: BTreeMap<Component, ProcessRecord>,
    /// Milliseconds from start to healthy, per component, at the last `up`.
    pub startup_ms: BTreeMap<Component, u64>,
    /// Where each `PostgreSQL` cluster's files are (the state dir, or a
    /// fallback the `postgres` user can reach).
    pub postgres_dirs: BTreeMap<Component, PathBuf>,
    /// Which components this stack runs (`up --profile`); `local` in a
    /// record written before profiles existed.
    #[serde(default)]
    pub profile: StackProfile,
}

impl StateDir {
    /// The state directory at `root`, created if missing.
    pub fn open(root: &Path) -> Result<Self> {
        std::fs::create_dir_all(root).context(|| format!("create state dir {}", root.display()))?;
        let root = std::fs::canonicalize(root).context(|| format!("resolve {}", root.display()))?;
        Ok(Self { root })
    }

    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// A component's folder (created if missing).
    pub fn component_dir(&self, component: Component) -> Result<PathBuf> {
        let dir = self.root.join(component.name());
        std::fs::create_dir_all(&dir).context(|| format!("create {}", dir.display()))?;
        Ok(dir)
    }

    #[must_use]
    pub fn log_path(&self, component: Component) -> PathBuf {
        self.root
            .join(component.name())
            .join(format!("{}.log", component.name()))
    }

    fn record_path(&self) -> PathBuf {
        self.root.join("stack.json")
    }

    pub fn load(&self) -> Result<StackRecord> {
        let path = self.record_path();
        match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| Error::State {
                path,
                reason: e.to_string(),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(StackRecord::default()),
            Err(e) => Err(Error::Io {
                what: format!("read {}", path.display()),
                source: e,
            }),
        }
    }

    /// Write atomically (temp file + rename): a crash never leaves half a record.
    ///
    /// # Panics
    /// Never: a record always serialises.
    pub fn save(&self, record: &StackRecord) -> Result<()> {
        let path = self.record_path();
        let tmp = path.with_extension("json.tmp");
        let text = serde_json::to_string_pretty(record).expect("records serialise");
        std::fs::write(&tmp, text).context(|| format!("write {}", tmp.display()))?;
        std::fs::rename(&tmp, &path).context(|| format!("write {}", path.display()))
    }

    /// Hold the state dir's lock (bounded wait): released when dropped.
    pub fn lock(&self, wait: Duration) -> Result<Lock> {
        let path = self.root.join("lock");
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .context(|| format!("open {}", path.display()))?;
        let deadline = Instant::now() + wait;
        loop {
            // SAFETY-free: flock through nix on a descriptor we own.
            #[allow(deprecated)]
            match nix::fcntl::flock(
                file.as_raw_fd(),
                nix::fcntl::FlockArg::LockExclusiveNonblock,
            ) {
                Ok(()) => return Ok(Lock { _file: file }),
                Err(_) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(_) => {
                    return Err(Error::Setup(format!(
                        "another lossproof command holds {} (waited {}s)",
                        path.display(),
                        wait.as_secs()
                    )));
                }
            }
        }
    }
}

/// The state dir's lock; released on drop (the kernel releases it if the
/// process dies, so a `SIGKILLed` `up` never leaves it stuck).
pub struct Lock {
    _file: File,
}
