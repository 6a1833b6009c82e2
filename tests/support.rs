//! Helpers shared by the tests.

use std::path::{Path, PathBuf};

use lossproof_lang::{Analysis, FsLoader};
use lossproof_vocabulary::Place;

/// The repository root (tests run from the root package).
pub(crate) fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// What `lossproof check` reports for `text` as the file at `path`.
pub(crate) fn check_text(path: &Path, text: &str) -> Analysis {
    let dir = lossproof_vocabulary::check::scenario_dir(path);
    lossproof_executor::check(
        &path.display().to_string(),
        text,
        &FsLoader,
        Place {
            dir: &dir,
            profile: None,
        },
    )
}

/// The plan of a scenario written inline (no includes), through the same
/// check; a test's scenario that does not check is a bug of the test.
pub(crate) fn plan(text: &str) -> lossproof_lang::Plan {
    let analysis = lossproof_executor::check(
        "inline.lp",
        text,
        &lossproof_lang::NoIncludes,
        Place {
            dir: &root(),
            profile: None,
        },
    );
    analysis.plan.unwrap_or_else(|| {
        panic!(
            "{}",
            lossproof_lang::render::render(
                &analysis.sources,
                &analysis.diagnostics,
                lossproof_lang::render::Style::PLAIN
            )
        )
    })
}

/// Run the `lossproof` binary from the repository root, without colour.
pub(crate) fn lossproof(args: &[&std::ffi::OsStr]) -> std::process::Output {
    lossproof_in_env(args, &[])
}

/// [`lossproof`] with `env` added to its environment.
pub(crate) fn lossproof_in_env(
    args: &[&std::ffi::OsStr],
    env: &[(&str, &std::ffi::OsStr)],
) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_lossproof"))
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .envs(env.iter().copied())
        .output()
        .expect("run lossproof")
}

/// A finished command's stdout then stderr, as text.
pub(crate) fn output_text(output: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Command lines of live processes that name `path`.
pub(crate) fn processes_mentioning(path: &Path) -> Vec<String> {
    let needle = path.display().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            cmdline.contains(&needle).then_some(cmdline)
        })
        .collect()
}

/// Held by every test that starts a real stack, so two stacks (two JVMs,
/// four PostgreSQL servers) never compete for the machine's cores at once.
pub(crate) fn heavy_test() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Open `html` in headless Chromium (Debian's `chromium`; `.ci/test`
/// installs it), screenshot it to `png`, and return its DOM as rendered;
/// panics when Chromium is missing, fails, or logs any console message
/// (an invalid SVG attribute, a script error: the page has no script, so
/// any message is a bug).
pub(crate) fn chromium_render(html: &Path, png: &Path) -> String {
    let profile = tempfile::tempdir().expect("a profile dir");
    let chromium = |extra: &[&std::ffi::OsStr]| {
        std::process::Command::new("chromium")
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--enable-logging=stderr",
                "--v=0",
                "--window-size=1280,2400",
                "--virtual-time-budget=3000",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .args(extra)
            .arg(format!("file://{}", html.display()))
            .output()
            .unwrap_or_else(|e| {
                panic!("headless Chromium is needed for the report check ({e}): apt-get install chromium")
            })
    };
    let shot = chromium(&[std::ffi::OsStr::new(&format!(
        "--screenshot={}",
        png.display()
    ))]);
    let dom = chromium(&[std::ffi::OsStr::new("--dump-dom")]);
    for run in [&shot, &dom] {
        let log = String::from_utf8_lossy(&run.stderr);
        assert!(
            run.status.success(),
            "chromium failed on {}:\n{log}",
            html.display()
        );
        let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
        assert!(
            console.is_empty(),
            "{} logs to the console:\n{}",
            html.display(),
            console.join("\n")
        );
    }
    let size = std::fs::metadata(png).map_or(0, |m| m.len());
    assert!(size > 10_000, "{}: a {size}-byte screenshot", png.display());
    String::from_utf8_lossy(&dom.stdout).into_owned()
}

/// A child's stderr, read line by line on a thread of its own as it is
/// written, and everything read so far (`text`, a line each).
pub(crate) struct Lines {
    rx: std::sync::mpsc::Receiver<String>,
    pub(crate) text: String,
}

impl Lines {
    /// Start reading `child`'s stderr (spawned with `Stdio::piped()`).
    pub(crate) fn of(child: &mut std::process::Child) -> Self {
        use std::io::BufRead as _;
        let stderr = child.stderr.take().expect("the child's stderr is piped");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            rx,
            text: String::new(),
        }
    }

    fn push(&mut self, line: &str) {
        self.text.push_str(line);
        self.text.push('\n');
    }

    /// Read until a line satisfies `done`. After `limit`, `child` is killed
    /// and the test fails with `what` and every line read.
    pub(crate) fn until(
        &mut self,
        child: &mut std::process::Child,
        limit: std::time::Duration,
        what: &str,
        done: impl Fn(&str) -> bool,
    ) {
        let deadline = std::time::Instant::now() + limit;
        while std::time::Instant::now() < deadline {
            if let Ok(line) = self.rx.recv_timeout(std::time::Duration::from_millis(200)) {
                self.push(&line);
                if done(&line) {
                    return;
                }
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("{what} within {limit:?}:\n{}", self.text);
    }

    /// Wait for `child` to exit, reading its lines, then the lines it left.
    /// After `limit`, it is killed and the test fails with `what`.
    pub(crate) fn exit(
        &mut self,
        child: &mut std::process::Child,
        limit: std::time::Duration,
        what: &str,
    ) -> std::process::ExitStatus {
        let deadline = std::time::Instant::now() + limit;
        let status = loop {
            while let Ok(line) = self.rx.try_recv() {
                self.push(&line);
            }
            if let Some(status) = child.try_wait().expect("wait for the child") {
                break status;
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{what} within {limit:?}:\n{}", self.text);
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        };
        while let Ok(line) = self.rx.recv_timeout(std::time::Duration::from_millis(500)) {
            self.push(&line);
        }
        status
    }
}
