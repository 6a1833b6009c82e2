//! Supervised child processes of a run (the consumers under test): each in
//! its own process group, its output appended to a log file, killable at any
//! instant, stopped without blocking an async worker ([`Supervised::terminate`]),
//! and killed — group-wide — when dropped, so nothing outlives the
//! run (normal exit, error, panic or Ctrl-C unwinding through `run`). A run
//! SIGKILLed cannot drop anything: its children then die with it through
//! [`die_with_parent`].

use std::ffi::OsString;
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// The environment variable through which a supervised child learns the
/// pid of the process that started it (see [`die_with_parent`]).
pub const PARENT_PID_VAR: &str = "LOSSPROOF_PARENT_PID";

/// Called first by a program [`Supervised`] starts (the consumers, the
/// compactor): when the process that started it dies — even SIGKILLed,
/// with no chance to stop its children — the kernel SIGKILLs this one
/// (`PR_SET_PDEATHSIG`). Without [`PARENT_PID_VAR`] (a program run by hand)
/// nothing changes. If the parent is already gone when this runs (it died
/// between starting the child and this call), the process exits at once.
pub fn die_with_parent() {
    let Some(parent) = std::env::var(PARENT_PID_VAR)
        .ok()
        .and_then(|p| p.parse::<i32>().ok())
    else {
        return;
    };
    if nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).is_err()
        || nix::unistd::getppid().as_raw() != parent
    {
        eprintln!("the process that started this one is gone: exiting");
        std::process::exit(2);
    }
}

/// One supervised program.
#[derive(Debug)]
pub struct Supervised {
    pub name: String,
    program: PathBuf,
    args: Vec<OsString>,
    log: PathBuf,
    envs: Vec<(OsString, OsString)>,
    dir: Option<PathBuf>,
    child: Option<Child>,
    paused: bool,
    /// Times it was started.
    pub starts: u32,
}

impl Supervised {
    /// A program to supervise (not started yet).
    #[must_use]
    pub fn new(name: &str, program: PathBuf, args: Vec<OsString>, log: PathBuf) -> Self {
        Self {
            name: name.to_owned(),
            program,
            args,
            log,
            envs: Vec::new(),
            dir: None,
            child: None,
            paused: false,
            starts: 0,
        }
    }

    /// Also set `key` to `value` in its environment.
    #[must_use]
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.envs.push((key.into(), value.into()));
        self
    }

    /// Start it in `dir` (by default: where lossproof runs).
    #[must_use]
    pub fn current_dir(mut self, dir: PathBuf) -> Self {
        self.dir = Some(dir);
        self
    }

    /// Its log file.
    #[must_use]
    pub fn log(&self) -> &std::path::Path {
        &self.log
    }

    /// Its process group's resident memory (0 when not running).
    #[must_use]
    pub fn rss_bytes(&self) -> u64 {
        self.group()
            .map_or(0, |group| crate::process::group_rss_bytes(group.as_raw()))
    }

    /// Start it (no-op if it is running).
    pub fn start(&mut self) -> std::io::Result<()> {
        if self.running() {
            return Ok(());
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)?;
        let mut command = Command::new(&self.program);
        if self.program == std::path::Path::new(crate::process::THIS_EXE) {
            command.arg0(crate::process::this_exe_name());
        }
        if let Some(dir) = &self.dir {
            command.current_dir(dir);
        }
        let child = command
            .args(&self.args)
            .process_group(0)
            .env(PARENT_PID_VAR, std::process::id().to_string())
            .envs(self.envs.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()?;
        self.child = Some(child);
        self.paused = false;
        self.starts += 1;
        Ok(())
    }

    /// Whether it is running (reaps it if it exited).
    pub fn running(&mut self) -> bool {
        match self.child.as_mut().map(Child::try_wait) {
            Some(Ok(None)) => true,
            Some(_) => {
                self.child = None;
                false
            }
            None => false,
        }
    }

    fn group(&self) -> Option<Pid> {
        self.child
            .as_ref()
            .and_then(|c| i32::try_from(c.id()).ok())
            .map(Pid::from_raw)
    }

    /// SIGKILL its process group and reap it. False if it was not running.
    pub async fn kill(&mut self) -> bool {
        if !self.running() {
            return false;
        }
        if let Some(group) = self.group() {
            let _ = killpg(group, Signal::SIGKILL);
        }
        // A SIGKILLed process is gone within milliseconds; one stuck in
        // the kernel (uninterruptible I/O) is left to the reaper thread
        // after the bound rather than stall the caller's worker.
        self.wait_gone(KILL_REAP).await;
        if let Some(child) = self.child.take() {
            reap_elsewhere(child);
        }
        self.paused = false;
        true
    }

    /// SIGTERM (a graceful stop), then SIGKILL after `grace`. False if it
    /// was not running. Waits asynchronously: the caller's worker goes on
    /// with other tasks meanwhile.
    pub async fn terminate(&mut self, grace: Duration) -> bool {
        if !self.running() {
            return false;
        }
        if let Some(group) = self.group() {
            if self.paused {
                let _ = killpg(group, Signal::SIGCONT);
            }
            let _ = killpg(group, Signal::SIGTERM);
        }
        if self.wait_gone(grace).await {
            return true;
        }
        self.kill().await
    }

    /// Poll until it has exited (reaped) or `limit` passed; whether it has.
    async fn wait_gone(&mut self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            if !self.running() {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// SIGSTOP: it freezes, holding its connections. False if not running.
    pub fn pause(&mut self) -> bool {
        let Some(group) = self.group().filter(|_| !self.paused) else {
            return false;
        };
        let paused = killpg(group, Signal::SIGSTOP).is_ok();
        self.paused = paused;
        paused
    }

    /// SIGCONT after a pause. False if it was not paused.
    pub fn resume(&mut self) -> bool {
        let Some(group) = self.group().filter(|_| self.paused) else {
            return false;
        };
        let resumed = killpg(group, Signal::SIGCONT).is_ok();
        self.paused = !resumed;
        resumed
    }
}

/// A SIGKILLed process is gone within milliseconds, unless stuck in the
/// kernel: how long [`Supervised::kill`] waits to reap it itself.
const KILL_REAP: Duration = Duration::from_secs(5);

/// Reap `child` on a thread of its own (a process must be waited for, or
/// it stays a zombie), without blocking the caller.
fn reap_elsewhere(mut child: Child) {
    if matches!(child.try_wait(), Ok(Some(_))) {
        return;
    }
    std::thread::spawn(move || {
        let _ = child.wait();
    });
}

/// A supervised program never outlives its handle: dropping it (an error,
/// a panic or Ctrl-C unwinding through a seed) SIGKILLs its group, and the
/// reaping happens on a thread of its own, so no async worker blocks.
impl Drop for Supervised {
    fn drop(&mut self) {
        if let Some(group) = self.group() {
            let _ = killpg(group, Signal::SIGKILL);
        }
        if let Some(child) = self.child.take() {
            reap_elsewhere(child);
        }
    }
}
