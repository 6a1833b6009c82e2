//! Step 1 of a seed: isolation and start-up. The source tables are
//! re-created, the change topics created, the connector started under the
//! seed's names, and each consumer under test started as a supervised
//! process (its log in `<state>/runs/<run>/<kind>.log`).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use lossproof_lang::Plan;
use lossproof_lang::plan::SettingValue;
use lossproof_lang::vocabulary::WorkloadSig;
use lossproof_runtime::debezium::CaptureNames;
use lossproof_runtime::supervisor::Supervised;
use lossproof_runtime::{ConnectClient, Endpoints, Stack};

use super::Options;
use crate::error::{Error, Result};
use crate::workload;

/// What set-up made, for the steps after it.
pub(super) struct Prepared {
    pub endpoints: Endpoints,
    pub workload: WorkloadSig,
    /// The connector's configuration (what `recreate connector` puts back).
    pub config: serde_json::Value,
    /// `<state>/runs/<run>`: the consumers' logs.
    pub logs: PathBuf,
    pub consumers: tokio::sync::Mutex<BTreeMap<String, Supervised>>,
    /// The compaction job, when the scenario targets the `compactor`.
    pub compactor: tokio::sync::Mutex<Option<Supervised>>,
}

/// The compactor's record in a seed's log folder (JSON lines,
/// `fault::maintenance::CompactionEvent`).
pub(super) const COMPACTOR_RECORD: &str = "compactor.jsonl";

#[allow(clippy::too_many_arguments)] // the seed's identity and its connections
pub(super) async fn setup(
    stack: &Stack,
    plan: &Plan,
    options: &Options,
    run: &str,
    names: &CaptureNames,
    source: &tokio_postgres::Client,
    connect: &ConnectClient,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<Prepared> {
    let endpoints = stack.endpoints()?;
    let workload = crate::workloads::of_plan(plan)?;
    let full = matches!(plan.settings.get("replica_identity"), Some(SettingValue::Choice(c)) if c == "full");
    let partitions = match plan.settings.get("partitions") {
        Some(SettingValue::Count(n)) => i32::try_from(*n).unwrap_or(1),
        _ => 1,
    };
    // Each seed starts on a healthy stack: a fault of an earlier seed may
    // have left a component down (`fill broker` can end the Connect worker:
    // docs/run.md).
    stack.heal(&|line| progress(line)).await?;
    // A run killed during `fill broker` may have left the broker read-only.
    if let Ok(ports) = endpoints.local_ports("the broker's storage") {
        lossproof_runtime::stack::set_broker_storage_writable(&ports, true).await?;
    }
    progress("preparing: source tables, connector, consumers");
    let config = workload::capture(
        source,
        connect,
        &endpoints,
        names,
        &workload,
        full,
        partitions,
        Duration::from_mins(2),
    )
    .await?;

    crate::own::create_publications(&plan.declared, &options.consumers, names, &workload, source)
        .await?;
    let logs = stack.state().root().join("runs").join(run);
    std::fs::create_dir_all(&logs).map_err(Error::io(logs.display().to_string()))?;
    // A scenario's own tables reach the reference consumers as a file.
    let tables =
        (!plan.workload.tables.is_empty()).then(|| logs.join(crate::workloads::TABLES_FILE));
    if let Some(file) = &tables {
        let json = serde_json::to_string_pretty(&plan.workload.tables)
            .expect("tables are plain data and always serialise");
        std::fs::write(file, json).map_err(Error::io(file.display().to_string()))?;
    }
    let mut consumers = BTreeMap::new();
    for kind in &options.consumers {
        let mut consumer = match plan.declared.iter().find(|d| &d.name == kind) {
            Some(declared) => crate::own::supervised(
                declared,
                &options.program,
                &options.scenario_dir,
                names,
                &endpoints,
                &workload,
                &logs,
            )?,
            None => Supervised::new(
                kind,
                options.program.clone(),
                consumer_args(kind, run, options, plan, tables.as_deref()),
                logs.join(format!("{kind}.log")),
            ),
        };
        consumer
            .start()
            .map_err(Error::io(format!("start consumer {kind}")))?;
        consumers.insert(kind.clone(), consumer);
    }
    own_consumers_stay_up(plan, &options.locations, &mut consumers).await?;
    let consumers = tokio::sync::Mutex::new(consumers);
    let compactor = if targets_compactor(plan) {
        let mut compactor = Supervised::new(
            "compactor",
            options.program.clone(),
            compactor_args(run, options, plan, &logs),
            logs.join("compactor.log"),
        );
        compactor
            .start()
            .map_err(Error::io("start the compactor"))?;
        Some(compactor)
    } else {
        None
    };
    Ok(Prepared {
        endpoints,
        workload,
        config,
        logs,
        consumers,
        compactor: tokio::sync::Mutex::new(compactor),
    })
}

/// A declared consumer that exits within [`crate::own::STARTUP_GRACE`] of
/// its start cannot be scored (a wrong argument, a missing module): the
/// seed stops there, with the end of its log, instead of waiting for a
/// drain that cannot come.
async fn own_consumers_stay_up(
    plan: &Plan,
    locations: &super::Locations,
    consumers: &mut BTreeMap<String, Supervised>,
) -> Result<()> {
    let own: Vec<&str> = plan
        .declared
        .iter()
        .map(|d| d.name.as_str())
        .filter(|name| consumers.contains_key(*name))
        .collect();
    if own.is_empty() {
        return Ok(());
    }
    tokio::time::sleep(crate::own::STARTUP_GRACE).await;
    for name in own {
        let consumer = consumers.get_mut(name).expect("started above");
        if !consumer.running() {
            let index = plan.declared.iter().position(|d| d.name == name);
            let declared = index.map(|i| &plan.declared[i]);
            let at = index
                .and_then(|i| locations.declared.get(i))
                .map_or_else(String::new, |l| format!("{l}: "));
            return Err(Error::Refused(format!(
                "consumer {name} ({at}`{}`) exited within {} s of its start; the end of its log ({}):\n{}",
                declared.map(|d| d.command.join(" ")).unwrap_or_default(),
                crate::own::STARTUP_GRACE.as_secs(),
                consumer.log().display(),
                crate::own::log_tail(consumer.log(), 15)
            )));
        }
    }
    Ok(())
}

/// Whether an action of the scenario strikes the compactor: only then does
/// a seed run one.
fn targets_compactor(plan: &Plan) -> bool {
    plan.actions.iter().any(|a| {
        a.target
            .as_ref()
            .is_some_and(|t| t.component == "compactor")
    })
}

/// `compact --run RUN --state STATE --consumer C… --every-ms N --record F`:
/// every table of each consumer's lake, every `compaction_every`.
fn compactor_args(
    run: &str,
    options: &Options,
    plan: &Plan,
    logs: &std::path::Path,
) -> Vec<OsString> {
    let every_ms = match plan.settings.get("compaction_every") {
        Some(SettingValue::DurationMs(ms)) => *ms,
        _ => 5_000,
    };
    let mut args: Vec<OsString> = vec![
        "compact".into(),
        "--run".into(),
        run.into(),
        "--state".into(),
        options.state.clone().into(),
        "--every-ms".into(),
        every_ms.to_string().into(),
        "--record".into(),
        logs.join(COMPACTOR_RECORD).into(),
    ];
    for consumer in &options.consumers {
        args.push("--consumer".into());
        args.push(consumer.into());
    }
    args.extend(profile_args(options));
    args
}

/// `--profile P` when the run is on an external profile: the child loads
/// it (and reads its secrets from the environment or files) itself, so no
/// secret is ever on a command line.
fn profile_args(options: &Options) -> Vec<OsString> {
    options
        .profile
        .iter()
        .flat_map(|p| ["--profile".into(), p.clone().into_os_string()])
        .collect()
}

/// `consumer KIND --run RUN --state STATE` plus the scenario's settings.
fn consumer_args(
    kind: &str,
    run: &str,
    options: &Options,
    plan: &Plan,
    tables: Option<&std::path::Path>,
) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![
        "consumer".into(),
        kind.into(),
        "--run".into(),
        run.into(),
        "--state".into(),
        options.state.clone().into(),
    ];
    if let Some(tables) = tables {
        args.extend(["--tables".into(), tables.into()]);
    }
    if let Some(program) = crate::consumers::program(kind) {
        args.extend((program.options)(plan));
    }
    args.extend(profile_args(options));
    args
}
