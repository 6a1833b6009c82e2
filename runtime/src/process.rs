//! Child processes in their own process group, recorded by pid AND start
//! time, so a recycled pid is never mistaken for ours, and stopped group-wide
//! (a JVM or a postmaster leaves children that signalling one pid would miss).

use std::fs::File;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

use crate::error::{IoContext as _, Result};

/// A process lossproof started: the leader of its own process group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessRecord {
    pub pid: i32,
    /// Start time in clock ticks since boot (`/proc/PID/stat` field 22).
    pub start_ticks: u64,
}

impl ProcessRecord {
    /// Start `command` detached in a new process group, its stdout and stderr
    /// appended to `log`. The process outlives the caller until stopped.
    ///
    /// # Panics
    /// If the kernel hands out a pid above `i32::MAX` (it never does).
    pub fn spawn(command: &mut Command, log: &Path) -> Result<Self> {
        let out = File::options()
            .create(true)
            .append(true)
            .open(log)
            .context(|| format!("open {}", log.display()))?;
        let err = out
            .try_clone()
            .context(|| format!("open {}", log.display()))?;
        let child = command
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .context(|| format!("start {}", command.get_program().to_string_lossy()))?;
        let pid = i32::try_from(child.id()).expect("pids fit in i32");
        // Not waited for: the process belongs to the stack, not to this
        // command; once we exit, init reaps it.
        drop(child);
        let start_ticks = start_ticks(pid).unwrap_or(0);
        Ok(Self { pid, start_ticks })
    }

    /// Whether this exact process is still running (not a zombie, not a
    /// different process that got the same pid).
    #[must_use]
    pub fn alive(&self) -> bool {
        match stat(self.pid) {
            Some((state, ticks)) => state != 'Z' && state != 'X' && ticks == self.start_ticks,
            None => false,
        }
    }

    /// Stop the whole process group: `signal`, up to `grace` to exit, then
    /// SIGKILL. Returns once the leader is gone (bounded: `grace` + 5s).
    pub fn stop(&self, signal: Signal, grace: Duration) {
        if !self.alive() {
            // The leader is gone; its group may still hold children.
            let _ = killpg(Pid::from_raw(self.pid), Signal::SIGKILL);
            return;
        }
        let _ = killpg(Pid::from_raw(self.pid), signal);
        if !self.wait_gone(grace) {
            let _ = killpg(Pid::from_raw(self.pid), Signal::SIGKILL);
            self.wait_gone(Duration::from_secs(5));
        }
        // Stragglers that ignored the signal or were slow to follow the leader.
        let _ = killpg(Pid::from_raw(self.pid), Signal::SIGKILL);
    }

    /// [`ProcessRecord::stop`] on the blocking pool: how an async caller
    /// stops a component without holding up the other tasks of its worker.
    pub async fn stop_async(self, signal: Signal, grace: Duration) {
        let _ = tokio::task::spawn_blocking(move || self.stop(signal, grace)).await;
    }

    /// Send `signal` to the group (faults: SIGKILL, SIGSTOP, SIGCONT).
    #[must_use]
    pub fn signal(&self, signal: Signal) -> bool {
        self.alive() && killpg(Pid::from_raw(self.pid), signal).is_ok()
    }

    fn wait_gone(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if !self.alive() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        !self.alive()
    }

    /// Resident memory of every process in the group, in bytes.
    #[must_use]
    pub fn group_rss_bytes(&self) -> u64 {
        group_rss_bytes(self.pid)
    }
}

/// Resident memory of every process in process group `group`, in bytes.
#[must_use]
pub fn group_rss_bytes(group: i32) -> u64 {
    let page = 4096;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| pgid(*pid) == Some(group))
        .filter_map(|pid| {
            let statm = std::fs::read_to_string(format!("/proc/{pid}/statm")).ok()?;
            statm.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .sum::<u64>()
        * page
}

/// Whether `pid` is a running process (not gone, not a zombie).
#[must_use]
pub fn running(pid: i32) -> bool {
    stat(pid).is_some_and(|(state, _)| state != 'Z' && state != 'X')
}

/// (state, start ticks) from `/proc/PID/stat`.
fn stat(pid: i32) -> Option<(char, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces and parentheses: fields start
    // after the last ')'.
    let rest = &text[text.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state); start time is field 22.
    Some((
        fields.first()?.chars().next()?,
        fields.get(19)?.parse().ok()?,
    ))
}

fn start_ticks(pid: i32) -> Option<u64> {
    stat(pid).map(|(_, ticks)| ticks)
}

/// Running processes other than this one with a command-line argument that
/// mentions the path `needle` (followed by the argument's end or `/`, so
/// `…/broker` does not match `…/broker-postgres`): what an `up` killed
/// between starting a component and recording it leaves behind.
#[must_use]
pub fn with_cmdline_containing(needle: &str) -> Vec<i32> {
    let me = i32::try_from(std::process::id()).unwrap_or(0);
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| *pid != me && running(*pid))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|raw| {
                String::from_utf8_lossy(&raw).split('\0').any(|arg| {
                    arg.match_indices(needle).any(|(at, _)| {
                        matches!(arg[at + needle.len()..].chars().next(), None | Some('/'))
                    })
                })
            })
        })
        .collect()
}

/// The running binary as the kernel names it: exec'ing this runs the very
/// build this process runs, even after a rebuild replaced (or removed) the
/// file at its path. A run re-executes itself (consumers, the compactor,
/// the nightly) through it, so every child of a run is the run's own build.
pub const THIS_EXE: &str = "/proc/self/exe";

/// What to exec to run this binary again: [`THIS_EXE`] where there is a
/// `/proc`, else the path it was started from.
#[must_use]
pub fn this_exe() -> PathBuf {
    if Path::new(THIS_EXE).exists() {
        PathBuf::from(THIS_EXE)
    } else {
        std::env::current_exe().unwrap_or_else(|_| PathBuf::from("lossproof"))
    }
}

/// The `argv[0]` a child started through [`this_exe`] gets: the path this
/// binary was started from, so `ps` shows `…/lossproof consumer …`, not
/// `/proc/self/exe consumer …`.
#[must_use]
pub fn this_exe_name() -> std::ffi::OsString {
    std::env::current_exe().map_or_else(|_| "lossproof".into(), PathBuf::into_os_string)
}

/// The process group of `pid`.
#[must_use]
pub fn pgid(pid: i32) -> Option<i32> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 2..];
    rest.split_whitespace().nth(2)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child started through `this_exe` runs this very binary (here the
    /// test binary: `--list` names this test) under its own name.
    #[test]
    fn this_exe_runs_this_binary_under_its_own_name() {
        let exe = this_exe();
        assert_eq!(exe, Path::new(THIS_EXE));
        assert_eq!(
            std::fs::canonicalize(&exe).unwrap(),
            std::fs::canonicalize(std::env::current_exe().unwrap()).unwrap()
        );
        let out = Command::new(&exe)
            .arg0(this_exe_name())
            .args(["--list", "this_exe_runs"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("this_exe_runs_this_binary"),
            "{out:?}"
        );
    }

    #[test]
    fn strays_are_found_by_a_path_argument_and_not_by_a_longer_one() {
        let dir = format!("/tmp/lp-strays-{}", std::process::id());
        let mut child = Command::new("sh")
            .args(["-c", "sleep 30; true"])
            .arg(format!("{dir}/broker-postgres"))
            .spawn()
            .unwrap();
        let pid = i32::try_from(child.id()).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert!(with_cmdline_containing(&format!("{dir}/broker-postgres")).contains(&pid));
        assert!(!with_cmdline_containing(&format!("{dir}/broker")).contains(&pid));
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn spawns_in_its_own_group_and_stops_the_whole_group() {
        let dir = std::env::temp_dir().join(format!("lp-process-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // A parent that starts a child and ignores SIGTERM: stop must still
        // get rid of both, by escalating to SIGKILL on the group.
        let record = ProcessRecord::spawn(
            Command::new("bash").args(["-c", "trap '' TERM; sleep 300 & wait"]),
            &dir.join("log"),
        )
        .unwrap();
        assert!(record.alive());
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(pgid(record.pid), Some(record.pid));
        let members: Vec<i32> = std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter(|p| pgid(*p) == Some(record.pid))
            .collect();
        assert!(
            members.len() >= 2,
            "parent and child in the group: {members:?}"
        );
        record.stop(Signal::SIGTERM, Duration::from_millis(300));
        assert!(!record.alive());
        std::thread::sleep(Duration::from_millis(100));
        for pid in members {
            assert!(
                matches!(stat(pid), None | Some(('Z', _))),
                "{pid} survived the group stop"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_recycled_pid_is_not_ours() {
        let me = i32::try_from(std::process::id()).unwrap();
        let real = ProcessRecord {
            pid: me,
            start_ticks: start_ticks(me).unwrap(),
        };
        assert!(real.alive());
        assert!(
            !ProcessRecord {
                start_ticks: real.start_ticks + 1,
                ..real
            }
            .alive()
        );
    }
}
