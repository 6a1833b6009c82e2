//! The nightly workflow on emulated AWS: compact -> reconcile -> dbt marts
//! as a Step Functions state machine (`terraform/nightly.asl.json`, the same
//! file Terraform deploys), executed by moto server.
//!
//! What runs where:
//! - [`Moto`]: moto server (from the nightly virtualenv) on a free loopback
//!   port, supervised like every other child (process group, dies with us);
//! - [`drive`]: `runtime/nightly.py` (boto3), which creates the queues and
//!   the state machine, starts one execution and serves its SQS
//!   `waitForTaskToken` tasks by running the commands of a [`Job`] (the
//!   lossproof `compact` and `reconcile` commands, `dbt build`), then
//!   reports; what it found comes back as a [`Report`].
//!
//! Why Python for the AWS side: boto3 is the well-kept client for Step
//! Functions and SQS and already comes with moto; the Rust AWS SDK would
//! add several minutes to a cold build for a handful of calls.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::{Error, IoContext as _, Result};
use crate::supervisor::{PARENT_PID_VAR, Supervised};
use crate::tools::Tools;

/// The Amazon States Language definition, with `${tasks_queue_url}` and
/// `${alerts_queue_url}` placeholders (Terraform's `templatefile` fills them
/// for real AWS; the driver fills them on moto).
pub const DEFINITION: &str = include_str!("../../terraform/nightly.asl.json");
/// The driver (see the module docs).
const DRIVER: &str = include_str!("../nightly.py");
/// moto server with lossproof's two additions (dies with us; a moto bug
/// fixed): see the file.
const MOTO_SERVER: &str = include_str!("../moto_server.py");
/// The names' prefix: Terraform's `name_prefix` default.
pub const DEFAULT_PREFIX: &str = "lossproof";
/// moto accepts any role; real AWS uses the one Terraform creates.
const EMULATOR_ROLE: &str = "arn:aws:iam::123456789012:role/lossproof-nightly";
const EMULATOR_REGION: &str = "us-east-1";

/// The AWS resources of the workflow, by name (the names Terraform gives
/// them, checked by the names test).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Names {
    pub state_machine: String,
    pub tasks_queue: String,
    pub alerts_queue: String,
    /// The S3 buckets: the lake's (the aws stack's warehouse), the marts'
    /// and the access logs'.
    pub lake_bucket: String,
    pub marts_bucket: String,
    pub access_logs_bucket: String,
    /// The lake's Glue database (Glue names take no hyphens).
    pub glue_database: String,
}

impl Names {
    #[must_use]
    pub fn with_prefix(prefix: &str) -> Self {
        Self {
            state_machine: format!("{prefix}-nightly"),
            tasks_queue: format!("{prefix}-nightly-tasks"),
            alerts_queue: format!("{prefix}-nightly-alerts"),
            lake_bucket: format!("{prefix}-lake"),
            marts_bucket: format!("{prefix}-marts"),
            access_logs_bucket: format!("{prefix}-access-logs"),
            glue_database: format!("{prefix}_lake"),
        }
    }
}

/// One task of the workflow: the state it serves, the command it runs, and
/// the error name each non-zero exit status becomes (others: `TaskFailed`).
#[derive(Debug, Clone, Serialize)]
pub struct Task {
    pub state: &'static str,
    pub argv: Vec<String>,
    pub errors: BTreeMap<String, String>,
}

impl Task {
    #[must_use]
    pub fn new(state: &'static str, argv: Vec<String>, errors: &[(i32, &str)]) -> Self {
        Self {
            state,
            argv,
            errors: errors
                .iter()
                .map(|(code, name)| (code.to_string(), (*name).to_owned()))
                .collect(),
        }
    }
}

/// What the driver is asked to do (written to its stdin as JSON).
#[derive(Debug, Clone, Serialize)]
pub struct Job {
    /// `execute` (one execution of the workflow, its tasks served) or
    /// `provision` (create every resource terraform/ declares, then report
    /// them: how `lossproof up --profile aws` prepares its moto).
    pub mode: &'static str,
    /// moto's URL; `None` for real AWS (boto3's own endpoints).
    pub endpoint: Option<String>,
    /// Tell moto to execute state machines (it only records them otherwise).
    pub emulator: bool,
    pub region: String,
    pub names: Names,
    pub definition: String,
    pub role_arn: String,
    /// The execution's name (moto names unnamed executions "None").
    pub execution: String,
    pub input: serde_json::Value,
    /// The whole execution's bound; the driver stops the execution after it.
    pub timeout_s: u64,
    /// Runs of a task while it fails with `Transient`.
    pub attempts: u32,
    /// By the task name the state machine sends (`compact`, `reconcile`,
    /// `build_marts`).
    pub tasks: BTreeMap<String, Task>,
}

impl Job {
    /// A job for moto at `endpoint`, with the default names.
    #[must_use]
    pub fn on_emulator(endpoint: String, execution: String, run: &str, timeout: Duration) -> Self {
        Self {
            mode: "execute",
            endpoint: Some(endpoint),
            emulator: true,
            region: EMULATOR_REGION.to_owned(),
            names: Names::with_prefix(DEFAULT_PREFIX),
            definition: DEFINITION.to_owned(),
            role_arn: EMULATOR_ROLE.to_owned(),
            execution,
            input: serde_json::json!({ "run": run }),
            timeout_s: timeout.as_secs(),
            attempts: 3,
            tasks: BTreeMap::new(),
        }
    }
}

/// What the driver reports when the execution ended.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub execution: String,
    /// `SUCCEEDED`, `FAILED`, `TIMED_OUT` or `ABORTED`.
    pub status: String,
    pub attempts: Vec<Attempt>,
    /// The state whose task failed, when the execution failed.
    pub failed_state: Option<String>,
    pub error: Option<String>,
    pub cause: Option<String>,
    /// The Alert state's messages (run and error).
    pub alerts: Vec<serde_json::Value>,
    pub resources: Resources,
}

/// One run of a task's command.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Attempt {
    pub state: String,
    pub task: String,
    /// `None`: it did not exit (timed out or could not start).
    pub exit: Option<i32>,
    pub error: Option<String>,
    pub seconds: f64,
    /// The end of its output (stdout, then stderr).
    pub output: String,
}

/// What exists on the AWS side (after the execution, or the provisioning),
/// each list sorted.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Resources {
    pub queues: Vec<String>,
    pub state_machines: Vec<StateMachine>,
    pub buckets: Vec<String>,
    pub glue_databases: Vec<String>,
}

/// What a `provision` job reports.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Provisioned {
    resources: Resources,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StateMachine {
    pub name: String,
    pub definition: String,
}

/// moto server on a loopback port, for as long as this value lives.
#[derive(Debug)]
pub struct Moto {
    process: Supervised,
    pub port: u16,
    /// From start to accepting connections.
    pub ready_in: Duration,
}

impl Moto {
    /// Start moto server from the nightly virtualenv; wait (up to `limit`)
    /// until it accepts connections. Its output goes to `log`.
    pub fn start(tools: &Tools, log: &Path, limit: Duration) -> Result<Self> {
        let python = nightly_python(tools)?;
        let port = free_port()?;
        let mut process = Supervised::new("moto", python, moto_args(port), log.to_owned())
            .env("MOTO_PORT", port.to_string());
        let started = Instant::now();
        process.start().context(|| "start moto server".to_owned())?;
        let address = SocketAddr::from(([127, 0, 0, 1], port));
        let unhealthy = |reason: String| Error::NotHealthy {
            component: "moto server".to_owned(),
            timeout_s: limit.as_secs(),
            reason,
            log: log.to_owned(),
        };
        while TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_err() {
            if !process.running() {
                return Err(unhealthy("it exited".to_owned()));
            }
            if started.elapsed() > limit {
                return Err(unhealthy(format!("nothing listens on {address}")));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(Self {
            process,
            port,
            ready_in: started.elapsed(),
        })
    }

    #[must_use]
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// moto's resident memory now.
    #[must_use]
    pub fn rss_bytes(&self) -> u64 {
        self.process.rss_bytes()
    }
}

/// The aws stack's lake: Glue on its moto at `endpoint`, the warehouse in
/// the lake bucket terraform/ declares.
#[must_use]
pub fn emulated_lake(endpoint: String) -> crate::profile::LakeLocation {
    crate::profile::LakeLocation::Glue(crate::profile::GlueLocation {
        endpoint: Some(endpoint),
        region: EMULATOR_REGION.to_owned(),
        warehouse: format!(
            "s3://{}/warehouse",
            Names::with_prefix(DEFAULT_PREFIX).lake_bucket
        ),
        emulator: true,
    })
}

/// The access key id and secret every client of moto gets (moto takes any;
/// never a user's real ones).
pub const EMULATOR_KEY: &str = "lossproof";

/// [`EMULATOR_KEY`] as the environment variables boto3 and dbt read.
#[must_use]
pub fn emulator_credentials() -> Vec<(String, String)> {
    ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"]
        .map(|k| (k.to_owned(), EMULATOR_KEY.to_owned()))
        .into()
}

/// moto server's arguments after the Python interpreter (the nightly
/// virtualenv's) on loopback port `port`.
fn moto_args(port: u16) -> Vec<std::ffi::OsString> {
    vec![
        "-c".into(),
        MOTO_SERVER.into(),
        "-H".into(),
        "127.0.0.1".into(),
        "-p".into(),
        port.to_string().into(),
    ]
}

/// moto server as a component of an `aws` stack (`lossproof up --profile
/// aws`) on `port`: it outlives the command that starts it, like the other
/// components, so no `LOSSPROOF_PARENT_PID`. moto's own calls between
/// services (Step Functions -> SQS) go to `MOTO_PORT`, 5000 unless set
/// (AWS_DBT.md).
pub fn moto_command(tools: &Tools, port: u16) -> Result<Command> {
    let mut command = Command::new(nightly_python(tools)?);
    command
        .args(moto_args(port))
        .env("MOTO_PORT", port.to_string())
        .env_remove(PARENT_PID_VAR);
    Ok(command)
}

/// Create on the moto server at `endpoint` every resource terraform/
/// declares (buckets, Glue database, queues, the state machine), each only
/// if missing, and return what exists; the driver's stderr goes to `log`.
pub fn provision(tools: &Tools, endpoint: &str, log: &Path) -> Result<Resources> {
    let job = Job {
        mode: "provision",
        execution: String::new(),
        ..Job::on_emulator(
            endpoint.to_owned(),
            String::new(),
            "",
            Duration::from_mins(1),
        )
    };
    let provisioned: Provisioned = run_driver(tools, &job, &emulator_credentials(), log)?;
    Ok(provisioned.resources)
}

/// Run the driver on `job` with `env` added to its environment (and its
/// tasks'); its stderr goes to `log`. Bounded by the job's timeout plus a
/// minute; the driver's process group is killed on every way out.
pub fn drive(tools: &Tools, job: &Job, env: &[(String, String)], log: &Path) -> Result<Report> {
    run_driver(tools, job, env, log)
}

fn run_driver<T: serde::de::DeserializeOwned>(
    tools: &Tools,
    job: &Job,
    env: &[(String, String)],
    log: &Path,
) -> Result<T> {
    let python = nightly_python(tools)?;
    let stderr = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .context(|| format!("open {}", log.display()))?;
    let mut child = Command::new(python)
        .args(["-c", DRIVER])
        .process_group(0)
        .env(PARENT_PID_VAR, std::process::id().to_string())
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .context(|| "start the nightly driver".to_owned())?;
    let group = Group(child.id());
    let request = serde_json::to_vec(job).map_err(|e| Error::Setup(e.to_string()))?;
    let (Some(mut stdin), Some(mut stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(Error::Setup("the nightly driver has no pipes".to_owned()));
    };
    stdin
        .write_all(&request)
        .context(|| "send the job to the nightly driver".to_owned())?;
    // Closed: the driver reads its job to the end.
    drop(stdin);
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        stdout.read_to_string(&mut text).map(|_| text)
    });
    let limit = Duration::from_secs(job.timeout_s + 60);
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child
            .try_wait()
            .context(|| "wait for the nightly driver".to_owned())?
        {
            break status;
        }
        if started.elapsed() > limit {
            drop(group);
            let _ = child.wait();
            return Err(Error::Timeout(
                limit.as_secs(),
                format!("the nightly driver (log: {})", log.display()),
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    drop(group);
    let text = reader
        .join()
        .map_err(|_| Error::Setup("the driver's output reader panicked".to_owned()))?
        .context(|| "read the nightly driver's report".to_owned())?;
    if !status.success() {
        let tail = std::fs::read_to_string(log).unwrap_or_default();
        let tail: Vec<&str> = tail.lines().rev().take(5).collect();
        return Err(Error::Setup(format!(
            "the nightly driver failed ({status}): {}",
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        )));
    }
    serde_json::from_str(&text).map_err(|e| {
        Error::Setup(format!(
            "the nightly driver's report is not what lossproof reads ({e}): {text}"
        ))
    })
}

/// SIGKILLs a process group when dropped (the driver and the tasks it runs).
struct Group(u32);

impl Drop for Group {
    fn drop(&mut self) {
        if let Ok(pid) = i32::try_from(self.0) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

fn nightly_python(tools: &Tools) -> Result<PathBuf> {
    let python = tools.nightly_venv().join("bin/python");
    if python.is_file() {
        Ok(python)
    } else {
        Err(Error::Missing(python))
    }
}

/// A free loopback port (free when asked; moto binds it right after).
fn free_port() -> Result<u16> {
    let listener =
        TcpListener::bind("127.0.0.1:0").context(|| "bind a free loopback port".to_owned())?;
    Ok(listener
        .local_addr()
        .context(|| "read a bound port".to_owned())?
        .port())
}

/// Where the marts of run `run` live unless told otherwise:
/// `<state>/marts/<run>` (a seed's `run nightly` puts them there, and the
/// seed's clean-up removes them from there).
#[must_use]
pub fn marts_dir(state_root: &Path, run: &str) -> PathBuf {
    state_root.join("marts").join(name_part(run))
}

/// `run` as one name of `[A-Za-z0-9_-]` (a folder, a Step Functions name).
fn name_part(run: &str) -> String {
    run.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// An execution name Step Functions accepts (1-80 of `[A-Za-z0-9_-]`),
/// unique per call: `nightly-<run>-<unix ms>`.
#[must_use]
pub fn execution_name(run: &str) -> String {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let run: String = name_part(run).chars().take(50).collect();
    format!("nightly-{run}-{millis}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_definition_names_every_task_the_driver_serves() {
        let asl: serde_json::Value = serde_json::from_str(DEFINITION).expect("the ASL is JSON");
        let states = asl["States"].as_object().expect("States");
        let mut tasks: Vec<&str> = states
            .values()
            .filter_map(|s| s["Parameters"]["MessageBody"]["task"].as_str())
            .collect();
        tasks.sort_unstable();
        assert_eq!(tasks, ["build_marts", "compact", "reconcile"]);
        assert_eq!(asl["StartAt"], "Compact");
        for placeholder in ["${tasks_queue_url}", "${alerts_queue_url}"] {
            assert!(DEFINITION.contains(placeholder), "{placeholder}");
        }
    }

    #[test]
    fn execution_names_are_what_step_functions_accepts() {
        let name = execution_name("2026-12-02T10:00 seed 7/äx");
        assert!(name.len() <= 80, "{name}");
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
            "{name}"
        );
        assert!(
            name.starts_with("nightly-2026-12-02T10_00_seed_7__x-"),
            "{name}"
        );
    }
}
