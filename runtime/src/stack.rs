//! The local stack: start, health-check and stop every component as a child
//! process in its own process group, in a state directory.
//!
//! `up` is idempotent: healthy components are left alone, dead ones are
//! started again, and one left half-started by a killed `up` is stopped and
//! started afresh. Interrupted (Ctrl-C, SIGTERM), failed or panicking, `up`
//! stops everything it recorded: nothing is left behind.
//!
//! After the components, `up` opens the lake every client will use
//! ([`crate::lake::Lake`]): locally a sqlite catalog and a warehouse folder
//! under `<state>/lake`, files only, so `status` does not list it and `down
//! --purge` removes it with the state dir; on the `aws` profile the lake in
//! moto's S3 with a Glue catalog, which lives as long as moto.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::component::{Component, StackProfile};
use crate::connect::{ConnectClient, ConnectorStatus};
use crate::endpoints::Endpoints;
use crate::error::{Error, Result};
use crate::health::{Health, probe};
use crate::ports::Ports;
use crate::process::ProcessRecord;
use crate::profile::{Profile, Source};
use crate::state_dir::{StackRecord, StateDir};
use crate::tools::Tools;
use crate::{connect, postgres};

/// The database workloads write to in the source cluster.
pub const SOURCE_DATABASE: &str = "lossproof";
/// The broker's storage database.
const BROKER_DATABASE: &str = "nisshi";
/// What `up --profile aws` created on moto (`<state>/moto/resources.json`):
/// buckets, Glue databases, queues, state machines.
pub const RESOURCES_FILE: &str = "resources.json";
/// How long a command waits for another to release the state dir.
const LOCK_WAIT: Duration = Duration::from_mins(2);

pub struct Stack {
    state: StateDir,
    tools: Tools,
    /// The `lossproof` executable: the registry runs as `lossproof registry`.
    exe: PathBuf,
    http: reqwest::Client,
    /// The team's own components, when a profile names them: the state
    /// directory then holds only lossproof's records and logs.
    profile: Option<Profile>,
}

/// What `status` reports for one component.
#[derive(Debug, Clone, Serialize)]
pub struct ComponentStatus {
    pub component: Component,
    pub pid: Option<i32>,
    pub port: Option<u16>,
    /// `healthy`, `unhealthy` or `down`.
    pub state: &'static str,
    pub detail: String,
    pub rss_bytes: u64,
    pub startup_ms: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SlotStatus {
    pub slot: String,
    pub active: bool,
    /// Bytes of WAL between the source's current position and what the slot confirmed.
    pub lag_bytes: Option<i64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ConnectorReport {
    pub name: String,
    pub state: String,
    pub tasks: Vec<String>,
    pub failure: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct StatusReport {
    pub state_dir: PathBuf,
    pub profile: StackProfile,
    pub components: Vec<ComponentStatus>,
    pub connectors: Vec<ConnectorReport>,
    pub slots: Vec<SlotStatus>,
}

impl StatusReport {
    #[must_use]
    pub fn all_healthy(&self) -> bool {
        self.components.iter().all(|c| c.state == "healthy")
    }
}

impl Stack {
    /// # Panics
    /// If the HTTP client cannot be built (no TLS is configured, so it can).
    pub fn open(state_root: &Path) -> Result<Self> {
        let exe = std::env::current_exe()
            .map_err(|e| Error::Setup(format!("cannot find the lossproof executable: {e}")))?;
        Ok(Self {
            state: StateDir::open(state_root)?,
            tools: Tools::from_env(),
            exe,
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(3))
                .build()
                .expect("http client"),
            profile: None,
        })
    }

    /// The external components `profile` names, with `state_root` for
    /// lossproof's own records and logs (no stack is started there).
    pub fn external(state_root: &Path, profile: Profile) -> Result<Self> {
        let mut stack = Self::open(state_root)?;
        stack.profile = Some(profile);
        Ok(stack)
    }

    /// The external profile, if this stack is one.
    #[must_use]
    pub fn profile(&self) -> Option<&Profile> {
        self.profile.as_ref()
    }

    /// Where each component is, for every client lossproof opens.
    pub fn endpoints(&self) -> Result<Endpoints> {
        if let Some(profile) = &self.profile {
            return Ok(Endpoints::external(profile));
        }
        let ports = self.ports()?;
        let local = Endpoints::local(ports, self.state.root());
        Ok(match self.stack_profile()? {
            StackProfile::Local => local,
            StackProfile::Aws => {
                local.with_lake(crate::nightly::emulated_lake(moto_endpoint(&ports)))
            }
        })
    }

    #[must_use]
    pub fn state(&self) -> &StateDir {
        &self.state
    }

    /// The profile `up` recorded (`local` before any `up`).
    pub fn stack_profile(&self) -> Result<StackProfile> {
        Ok(self.state.load()?.profile)
    }

    /// The stack's moto server (`http://127.0.0.1:PORT`) and its process,
    /// when this is an `aws` stack whose moto runs.
    pub fn moto(&self) -> Result<Option<(String, ProcessRecord)>> {
        let record = self.state.load()?;
        Ok(
            match (
                record.profile,
                record.ports,
                record.processes.get(&Component::Moto),
            ) {
                (StackProfile::Aws, Some(ports), Some(process)) if process.alive() => {
                    Some((moto_endpoint(&ports), *process))
                }
                _ => None,
            },
        )
    }

    /// The recorded ports, once `up` has chosen them.
    pub fn ports(&self) -> Result<Ports> {
        let ports = self.state.load()?.ports.ok_or_else(|| {
            Error::Setup("the stack was never started: run `lossproof up`".into())
        })?;
        if ports.complete() {
            Ok(ports)
        } else {
            Err(Error::Setup(
                "the stack was started by a lossproof without the fault proxy: run `lossproof up` again".into(),
            ))
        }
    }

    /// Bring every component to healthy. `progress` receives one line per step.
    /// `profile` chooses the components (recorded for later commands); `None`
    /// keeps the recorded one (`local` for a new state directory).
    pub async fn up(
        &self,
        profile: Option<StackProfile>,
        progress: &(dyn Fn(&str) + Sync),
    ) -> Result<()> {
        if let Some(profile) = &self.profile {
            return Err(Error::Setup(format!(
                "profile `{}` names external components: lossproof does not start them",
                profile.name
            )));
        }
        let _lock = self.state.lock(LOCK_WAIT)?;
        let chosen = profile.unwrap_or(self.state.load()?.profile);
        if chosen == StackProfile::Aws && !cfg!(feature = "aws") {
            // Refused before anything starts: its lake could not be opened.
            return Err(Error::Setup(
                "the aws profile keeps the lake in S3 with a Glue catalog: this lossproof was \
                 built without it (cargo build --features aws)"
                    .into(),
            ));
        }
        if !self.tools.complete() {
            self.tools.bootstrap()?;
        }
        let mut guard = CleanupOnPanic {
            state: self.state.clone(),
            armed: true,
        };
        let result = tokio::select! {
            result = Box::pin(self.up_locked(profile, progress)) => result,
            () = interrupted() => Err(Error::Interrupted),
        };
        if result.is_err() {
            progress("stopping what was started");
            self.stop_all(progress)?;
        }
        guard.armed = false;
        result
    }

    async fn up_locked(
        &self,
        profile: Option<StackProfile>,
        progress: &(dyn Fn(&str) + Sync),
    ) -> Result<()> {
        let mut record = self.state.load()?;
        if let Some(profile) = profile.filter(|p| *p != record.profile) {
            // Components the new profile does not run are stopped.
            for component in record.profile.components() {
                if !profile.components().contains(component)
                    && let Some(process) = record.processes.remove(component)
                {
                    process
                        .stop_async(component.stop_signal(), component.stop_grace())
                        .await;
                    progress(&format!(
                        "{component:<16} stopped (not in profile {profile})"
                    ));
                }
            }
            record.profile = profile;
            self.state.save(&record)?;
        }
        let ports = match record.ports.filter(Ports::complete) {
            // A record from before moto existed has no port for it.
            Some(ports) if ports.moto == 0 => {
                let ports = Ports {
                    moto: Ports::allocate()?.moto,
                    ..ports
                };
                record.ports = Some(ports);
                self.state.save(&record)?;
                ports
            }
            Some(ports) => ports,
            None => {
                let ports = Ports::allocate()?;
                record.ports = Some(ports);
                self.state.save(&record)?;
                ports
            }
        };
        progress(&format!("{:<16} {}", "profile", record.profile));
        for &component in record.profile.components() {
            if let Some(process) = record.processes.get(&component).copied() {
                if process.alive()
                    && self
                        .healthy_within(component, &ports, Duration::from_secs(5))
                        .await
                {
                    progress(&format!(
                        "{component:<16} already running (pid {})",
                        process.pid
                    ));
                    continue;
                }
                // Dead, or alive but not answering (left by an interrupted
                // `up`, or frozen): stop its whole group and start afresh.
                process
                    .stop_async(component.stop_signal(), component.stop_grace())
                    .await;
                record.processes.remove(&component);
                self.state.save(&record)?;
            }
            // One started by an `up` that was killed before recording it
            // would hold the port: stop its whole group first.
            let dir = self.state.component_dir(component)?;
            let strays = crate::process::with_cmdline_containing(&dir.display().to_string());
            for pid in &strays {
                if let Some(group) = crate::process::pgid(*pid).filter(|g| *g > 1) {
                    progress(&format!(
                        "{component:<16} stopping an unrecorded one (pid {pid})"
                    ));
                    let _ = nix::sys::signal::killpg(
                        nix::unistd::Pid::from_raw(group),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
            }
            let deadline = Instant::now() + Duration::from_secs(5);
            while strays.iter().any(|p| crate::process::running(*p)) && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            let started = Instant::now();
            progress(&format!(
                "{component:<16} starting on 127.0.0.1:{}",
                component.port(&ports)
            ));
            let process = self.start(component, &ports, &mut record)?;
            record.processes.insert(component, process);
            self.state.save(&record)?;
            self.wait_healthy(component, &ports, process).await?;
            self.after_start(component, &ports).await?;
            let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            record.startup_ms.insert(component, ms);
            self.state.save(&record)?;
            progress(&format!(
                "{component:<16} healthy in {:.1}s (pid {})",
                ms as f64 / 1000.0,
                process.pid
            ));
        }
        // The lake every client opens (Stack::endpoints): locally files only
        // (no process), created once, idempotently; the aws stack's is in
        // moto's S3 and Glue.
        let lake = self.endpoints()?.open_lake().await?;
        progress(&format!("{:<16} ready ({})", "lake", lake.describe()));
        Ok(())
    }

    fn start(
        &self,
        component: Component,
        ports: &Ports,
        record: &mut StackRecord,
    ) -> Result<ProcessRecord> {
        let dir = self.state.component_dir(component)?;
        let log = self.state.log_path(component);
        let mut command: Command = match component {
            Component::SourcePostgres | Component::BrokerPostgres => {
                let home = postgres::prepare(component, &dir, self.state.root())?;
                record.postgres_dirs.insert(component, home.clone());
                let command = postgres::command(component, &home, component.port(ports));
                // The log file must be writable by the `postgres` user too:
                // create it now, as its folder's owner.
                let _ = std::fs::File::options()
                    .create(true)
                    .append(true)
                    .open(&log);
                if let Ok(meta) = std::fs::metadata(&dir) {
                    use std::os::unix::fs::MetadataExt as _;
                    let _ =
                        nix::unistd::chown(&log, Some(meta.uid().into()), Some(meta.gid().into()));
                }
                command
            }
            Component::Broker => {
                let nisshi = self.tools.nisshi();
                if !nisshi.is_file() {
                    return Err(Error::Missing(nisshi));
                }
                // It listens on its own port and advertises the proxy's:
                // after bootstrapping, every Kafka client reaches the broker
                // through the proxy's broker link.
                let listener = format!("tcp://127.0.0.1:{}", ports.broker);
                let advertised = format!("tcp://127.0.0.1:{}", ports.broker_link);
                let mut command = Command::new(nisshi);
                command
                    .arg("broker")
                    .args([
                        "--listener-url",
                        &listener,
                        "--advertised-listener-url",
                        &advertised,
                    ])
                    .arg("--storage-engine")
                    .arg(format!(
                        "postgres://postgres@127.0.0.1:{}/{BROKER_DATABASE}",
                        ports.broker_postgres
                    ))
                    .args(["--group-initial-rebalance-delay", "0s"]);
                command
            }
            Component::Netproxy => {
                let link = |name: &str, listen: u16, upstream: u16| {
                    format!("{name},127.0.0.1:{listen},127.0.0.1:{upstream}")
                };
                let mut command = Command::new(&self.exe);
                command
                    .arg("netproxy")
                    .arg("--control")
                    .arg(format!("127.0.0.1:{}", ports.netproxy))
                    .args(["--link", &link("broker", ports.broker_link, ports.broker)])
                    .args([
                        "--link",
                        &link("postgres", ports.source_link, ports.source_postgres),
                    ])
                    .args([
                        "--link",
                        &link("registry", ports.registry_link, ports.registry),
                    ]);
                command
            }
            Component::Registry => {
                let mut command = Command::new(&self.exe);
                command
                    .arg("registry")
                    .arg("--listen")
                    .arg(format!("127.0.0.1:{}", ports.registry))
                    .arg("--state")
                    .arg(&dir);
                command
            }
            Component::Connect => connect::command(&dir, ports, &self.tools)?,
            Component::Moto => crate::nightly::moto_command(&self.tools, ports.moto)?,
        };
        ProcessRecord::spawn(&mut command, &log)
    }

    async fn wait_healthy(
        &self,
        component: Component,
        ports: &Ports,
        process: ProcessRecord,
    ) -> Result<()> {
        let deadline = Instant::now() + component.start_timeout();
        let mut last = Health::Unhealthy {
            reason: "not probed yet".into(),
        };
        while Instant::now() < deadline {
            if !process.alive() {
                return Err(Error::NotHealthy {
                    component: component.name().into(),
                    timeout_s: component.start_timeout().as_secs(),
                    reason: format!(
                        "the process exited; last log lines:\n{}",
                        self.tail(component, 15)
                    ),
                    log: self.state.log_path(component),
                });
            }
            last = probe(component, ports, &self.http).await;
            if last.is_healthy() {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err(Error::NotHealthy {
            component: component.name().into(),
            timeout_s: component.start_timeout().as_secs(),
            reason: format!("{last:?}"),
            log: self.state.log_path(component),
        })
    }

    async fn healthy_within(&self, component: Component, ports: &Ports, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            if probe(component, ports, &self.http).await.is_healthy() {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn after_start(&self, component: Component, ports: &Ports) -> Result<()> {
        match component {
            Component::SourcePostgres => {
                postgres::ensure_database(&Source::local(ports.source_postgres), SOURCE_DATABASE)
                    .await
            }
            Component::BrokerPostgres => {
                postgres::ensure_database(&Source::local(ports.broker_postgres), BROKER_DATABASE)
                    .await?;
                // A run killed during `fill broker` left it read-only.
                set_broker_storage_writable(ports, true).await.map(drop)
            }
            Component::Moto => {
                // What terraform/ declares, created on the emulator.
                let log = self.state.log_path(component);
                let (tools, endpoint) = (self.tools.clone(), moto_endpoint(ports));
                let resources = tokio::task::spawn_blocking(move || {
                    crate::nightly::provision(&tools, &endpoint, &log)
                })
                .await
                .map_err(|e| Error::Setup(format!("provisioning moto panicked: {e}")))??;
                let written = self.state.component_dir(component)?.join(RESOURCES_FILE);
                std::fs::write(
                    &written,
                    serde_json::to_string_pretty(&resources).expect("resources serialise"),
                )
                .map_err(|e| Error::Io {
                    what: format!("write {}", written.display()),
                    source: e,
                })
            }
            _ => Ok(()),
        }
    }

    /// Stop every component, in reverse start order. Data stays, so the next
    /// `up` is quick; `purge` also deletes the state dir.
    pub fn down(&self, purge: bool, progress: &(dyn Fn(&str) + Sync)) -> Result<()> {
        let _lock = self.state.lock(LOCK_WAIT)?;
        self.stop_all(progress)?;
        if purge {
            let record = self.state.load()?;
            for dir in record.postgres_dirs.values() {
                if !dir.starts_with(self.state.root()) {
                    let _ = std::fs::remove_dir_all(dir);
                }
            }
            std::fs::remove_dir_all(self.state.root()).map_err(|e| Error::Io {
                what: format!("remove {}", self.state.root().display()),
                source: e,
            })?;
            progress("state dir removed");
        }
        Ok(())
    }

    fn stop_all(&self, progress: &(dyn Fn(&str) + Sync)) -> Result<()> {
        let mut record = self.state.load()?;
        for component in Component::ALL.into_iter().rev() {
            // Every recorded process, whatever the profile.
            if let Some(process) = record.processes.remove(&component) {
                let was_alive = process.alive();
                process.stop(component.stop_signal(), component.stop_grace());
                progress(&format!(
                    "{component:<16} {}",
                    if was_alive {
                        "stopped"
                    } else {
                        "was not running"
                    }
                ));
                self.state.save(&record)?;
            }
        }
        Ok(())
    }

    /// The recorded process of one component, if `up` started it: what
    /// faults (and tests of detection and recovery) signal.
    /// Start again whatever component's process is gone (a fault ended it),
    /// through [`Stack::up`]; `Ok(false)`, without touching anything, when
    /// every recorded process is alive. Cheap enough for every seed.
    pub async fn heal(&self, progress: &(dyn Fn(&str) + Sync)) -> Result<bool> {
        if self.profile.is_some() {
            // Not ours to restart: a component that is down fails the seed.
            return Ok(false);
        }
        let record = self.state.load()?;
        let all_alive = record
            .profile
            .components()
            .iter()
            .all(|c| record.processes.get(c).is_some_and(ProcessRecord::alive));
        if all_alive {
            return Ok(false);
        }
        self.up(None, progress).await?;
        Ok(true)
    }

    pub fn process(&self, component: Component) -> Result<Option<ProcessRecord>> {
        Ok(self.state.load()?.processes.get(&component).copied())
    }

    /// Every component's pid, port, health and version; connectors and their
    /// tasks; replication slots and their lag. Probes run concurrently and
    /// are each bounded, so this answers within seconds.
    pub async fn status(&self) -> Result<StatusReport> {
        let record = self.state.load()?;
        let ports = record.ports;
        let probes = record.profile.components().iter().map(|&component| {
            let process = record.processes.get(&component).copied();
            let http = self.http.clone();
            async move {
                let alive = process.is_some_and(|p| p.alive());
                let health = match (alive, ports) {
                    (true, Some(ports)) => Some(probe(component, &ports, &http).await),
                    _ => None,
                };
                (component, process, alive, health)
            }
        });
        let mut components = Vec::new();
        for (component, process, alive, health) in futures_util::future::join_all(probes).await {
            let (state, detail) = match health {
                _ if !alive => (
                    "down",
                    process.map_or("never started".to_owned(), |p| {
                        format!("pid {} is gone", p.pid)
                    }),
                ),
                Some(Health::Healthy { version }) => ("healthy", version),
                Some(Health::Unhealthy { reason }) => ("unhealthy", reason),
                None => ("down", "no ports recorded".to_owned()),
            };
            components.push(ComponentStatus {
                component,
                pid: process.filter(|_| alive).map(|p| p.pid),
                port: ports.map(|p| component.port(&p)),
                state,
                detail,
                rss_bytes: process.filter(|_| alive).map_or(0, |p| p.group_rss_bytes()),
                startup_ms: record.startup_ms.get(&component).copied(),
            });
        }
        let healthy = |c: Component| {
            components
                .iter()
                .any(|s| s.component == c && s.state == "healthy")
        };
        let mut connectors = Vec::new();
        let mut slots = Vec::new();
        if let Some(ports) = ports {
            if healthy(Component::Connect) {
                for (name, status) in ConnectClient::local(ports.connect)
                    .all()
                    .await
                    .unwrap_or_default()
                {
                    let status = status.unwrap_or(ConnectorStatus {
                        connector: "UNKNOWN".into(),
                        tasks: vec![],
                        failure: None,
                    });
                    connectors.push(ConnectorReport {
                        name,
                        state: status.connector,
                        tasks: status.tasks,
                        failure: status.failure,
                    });
                }
            }
            if healthy(Component::SourcePostgres)
                && let Ok(client) = postgres::connect(ports.source_postgres, "postgres").await
            {
                let rows = client
                    .query(
                        "SELECT slot_name::text, active, pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::bigint \
                         FROM pg_replication_slots ORDER BY slot_name",
                        &[],
                    )
                    .await
                    .unwrap_or_default();
                slots = rows
                    .iter()
                    .map(|r| SlotStatus {
                        slot: r.get(0),
                        active: r.get(1),
                        lag_bytes: r.get(2),
                    })
                    .collect();
            }
        }
        Ok(StatusReport {
            state_dir: self.state.root().to_owned(),
            profile: record.profile,
            components,
            connectors,
            slots,
        })
    }

    /// The last `lines` lines of a component's log.
    #[must_use]
    pub fn tail(&self, component: Component, lines: usize) -> String {
        let text = std::fs::read_to_string(self.state.log_path(component)).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

fn moto_endpoint(ports: &Ports) -> String {
    format!("http://127.0.0.1:{}", ports.moto)
}

/// Resolves on Ctrl-C or SIGTERM.
async fn interrupted() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

/// If `up` panics, stop every recorded process before the panic unwinds
/// past it.
struct CleanupOnPanic {
    state: StateDir,
    armed: bool,
}

impl Drop for CleanupOnPanic {
    fn drop(&mut self) {
        if self.armed
            && std::thread::panicking()
            && let Ok(record) = self.state.load()
        {
            for (component, process) in record.processes.iter().rev() {
                process.stop(component.stop_signal(), component.stop_grace());
            }
            let _ = self.state.save(&StackRecord {
                processes: BTreeMap::new(),
                ..record
            });
        }
    }
}

/// Make the broker's storage (its `PostgreSQL` database) refuse writes, or
/// accept them again ([`postgres::set_writable`]): how `fill broker`
/// strikes. Returns how many storage sessions of the broker were ended.
pub async fn set_broker_storage_writable(ports: &Ports, writable: bool) -> Result<u64> {
    postgres::set_writable(ports.broker_postgres, BROKER_DATABASE, writable).await
}
