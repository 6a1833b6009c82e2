//! Work lossproof does beside the pipeline under test, on a thread of its
//! own at a lower CPU priority, so that it never takes the CPU the
//! pipeline needs: on one machine, lossproof's own work competes with the
//! consumers, the connector and the source, and a lag or a slow workload
//! it caused would be charged to them.

/// Run `work` to completion on a new thread named `name`, with a runtime of
/// its own, at `nice` `niceness` (Linux applies a thread id's priority to
/// that thread alone, and threads it starts inherit it). Its output, or why
/// there is none (the thread or its runtime could not start, or it
/// panicked).
pub(crate) fn spawn<F>(
    name: &str,
    niceness: u8,
    work: F,
) -> std::io::Result<tokio::sync::oneshot::Receiver<std::io::Result<F::Output>>>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (done, outcome) = tokio::sync::oneshot::channel();
    let what = name.to_owned();
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || {
            set_priority(&what, niceness);
            let ran = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map(|runtime| runtime.block_on(work));
            let _ = done.send(ran);
        })?;
    Ok(outcome)
}

/// A thread's tasks that must keep up (the snapshot followers: a snapshot
/// a consumer expires before it was read is a state nobody can check):
/// while any of them says it is behind, the thread runs at `nice` 0, and
/// at its low priority again once none is. At `nice` 19 beside a busy
/// pipeline, a debug build's follower fell a minute behind.
#[derive(Clone)]
pub(crate) struct CatchUp {
    what: &'static str,
    low: u8,
    behind: std::sync::Arc<std::sync::Mutex<std::collections::BTreeSet<usize>>>,
}

impl CatchUp {
    pub(crate) fn new(what: &'static str, low: u8) -> Self {
        Self {
            what,
            low,
            behind: std::sync::Arc::default(),
        }
    }

    /// Task `task` is behind, or not; called on the thread itself.
    pub(crate) fn behind(&self, task: usize, behind: bool) {
        let mut tasks = self
            .behind
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let was = !tasks.is_empty();
        if behind {
            tasks.insert(task);
        } else {
            tasks.remove(&task);
        }
        match (was, !tasks.is_empty()) {
            (false, true) => set_priority(self.what, 0),
            (true, false) => set_priority(self.what, self.low),
            _ => {}
        }
    }
}

/// Set the calling thread's CPU priority to `nice` `niceness`. Through
/// `renice`, as the workspace forbids `unsafe` and nix has no
/// `setpriority`; where it fails (raising it needs root) the thread keeps
/// its priority, and says so once.
fn set_priority(what: &str, niceness: u8) {
    static WARNED: std::sync::Once = std::sync::Once::new();
    let tid = nix::unistd::gettid().to_string();
    let lowered = std::process::Command::new("renice")
        .args(["-n", &niceness.to_string(), "-p", &tid])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !lowered {
        WARNED.call_once(|| {
            eprintln!(
                "lossproof: could not set the priority of {what} (renice): it competes with the pipeline for CPU, or falls behind it"
            );
        });
    }
}
