//! Step 1 of a seed: isolation and start-up. The source tables are
//! re-created, the change topics created, the connector started under the
//! seed's names, and each consumer under test started as a supervised
//! process (its log in `<state>/runs/<run>/<name>.log`).

use std::ffi::OsString;
use std::time::Duration;

use lossproof_lang::plan::SettingValue;
use lossproof_runtime::supervisor::Supervised;

use crate::error::{Error, Result};
use crate::seed::Seed;
use crate::workload;

/// The compactor's record in a seed's log folder (JSON lines,
/// `fault::maintenance::CompactionEvent`).
pub(super) const COMPACTOR_RECORD: &str = "compactor.jsonl";

/// Set `seed` up: a healthy stack, the source tables, topics and
/// connector, the consumers under test and, when the scenario strikes it,
/// the compactor.
pub(super) async fn setup(seed: &Seed<'_>, progress: &(dyn Fn(&str) + Sync)) -> Result<()> {
    let plan = seed.plan;
    let full = matches!(plan.settings.get("replica_identity"), Some(SettingValue::Choice(c)) if c == "full");
    let partitions = match plan.settings.get("partitions") {
        Some(SettingValue::Count(n)) => i32::try_from(*n).unwrap_or(1),
        _ => 1,
    };
    // Each seed starts on a healthy stack: a fault of an earlier seed may
    // have left a component down (`fill broker` can end the Connect worker:
    // docs/run.md).
    seed.stack.heal(&|line| progress(line)).await?;
    // A run killed during `fill broker` may have left the broker read-only.
    if let Ok(ports) = seed.endpoints.local_ports("the broker's storage") {
        lossproof_runtime::stack::set_broker_storage_writable(&ports, true).await?;
    }
    progress("preparing: source tables, connector, consumers");
    let preload = plan.workload.preload;
    let how = workload::Capture {
        replica_identity_full: full,
        partitions,
        preload: (preload > 0).then_some((preload, seed.number)),
        limit: Duration::from_mins(2),
    };
    let captured = workload::capture(
        &seed.source,
        &seed.connect,
        &seed.endpoints,
        &seed.names,
        &seed.workload,
        &how,
        progress,
    )
    .await?;
    let _ = seed.connector.set(captured.config);
    // The order of the source's commits from here on, for the snapshot
    // check (`crate::snapshots`): after the preload (at position 0).
    lossproof_runtime::reconcile::source::start_commit_order(
        &seed.source,
        &crate::snapshots::slot(&seed.names),
    )
    .await?;
    if let Some(preloaded) = captured.preloaded {
        progress(&format!(
            "preloaded {} orders, {} customers, {} items in {:.1}s",
            preloaded.orders,
            preloaded.customers,
            preloaded.items,
            preloaded.elapsed.as_secs_f64()
        ));
        let _ = seed.preloaded.set(preloaded);
    }

    crate::own::create_publications(
        &plan.declared,
        &seed.options.consumers,
        &seed.names,
        &seed.workload,
        &seed.source,
    )
    .await?;
    // The seed's tables (the probe's included) reach the reference
    // consumers as a file.
    lossproof_consumers::tables_file::write(&seed.tables_file(), &seed.workload.tables)?;
    {
        let mut consumers = seed.consumers.lock().await;
        for name in &seed.options.consumers {
            let mut consumer = crate::under_test::supervised(seed, name)?;
            consumer
                .start()
                .map_err(Error::io(format!("start consumer {name}")))?;
            consumers.insert(name.clone(), consumer);
        }
    }
    own_consumers_stay_up(seed).await?;
    if targets_compactor(seed) {
        let mut compactor = Supervised::new(
            "compactor",
            seed.options.program.clone(),
            compactor_args(seed),
            seed.logs.join("compactor.log"),
        );
        compactor
            .start()
            .map_err(Error::io("start the compactor"))?;
        *seed.compactor.lock().await = Some(compactor);
    }
    Ok(())
}

/// A declared consumer that exits within [`crate::own::STARTUP_GRACE`] of
/// its start cannot be scored (a wrong argument, a missing module): the
/// seed stops there, with the end of its log, instead of waiting for a
/// drain that cannot come.
async fn own_consumers_stay_up(seed: &Seed<'_>) -> Result<()> {
    let plan = seed.plan;
    let mut consumers = seed.consumers.lock().await;
    let own: Vec<usize> = (0..plan.declared.len())
        .filter(|i| consumers.contains_key(&plan.declared[*i].name))
        .collect();
    if own.is_empty() {
        return Ok(());
    }
    tokio::time::sleep(crate::own::STARTUP_GRACE).await;
    for index in own {
        let declared = &plan.declared[index];
        let consumer = consumers
            .get_mut(&declared.name)
            .expect("started by set-up");
        if !consumer.running() {
            let at = seed
                .options
                .locations
                .declared
                .get(index)
                .map_or_else(String::new, |l| format!("{l}: "));
            return Err(Error::Refused(format!(
                "consumer {} ({at}`{}`) exited within {} s of its start; the end of its log ({}):\n{}",
                declared.name,
                declared.command.join(" "),
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
fn targets_compactor(seed: &Seed<'_>) -> bool {
    seed.plan.actions.iter().any(|a| {
        a.target
            .as_ref()
            .is_some_and(|t| t.component == "compactor")
    })
}

/// `compact --run RUN --state STATE --consumer C… --every-ms N --record F`:
/// every table of each consumer's lake, every `compaction_every`.
fn compactor_args(seed: &Seed<'_>) -> Vec<OsString> {
    let options = seed.options;
    let every_ms = match seed.plan.settings.get("compaction_every") {
        Some(SettingValue::DurationMs(ms)) => *ms,
        _ => 5_000,
    };
    let mut args: Vec<OsString> = vec![
        "compact".into(),
        "--run".into(),
        seed.run.clone().into(),
        "--state".into(),
        options.state.clone().into(),
        "--every-ms".into(),
        every_ms.to_string().into(),
        "--record".into(),
        seed.logs.join(COMPACTOR_RECORD).into(),
    ];
    for consumer in &options.consumers {
        args.push("--consumer".into());
        args.push(consumer.into());
    }
    args.extend(crate::under_test::profile_args(options.profile.as_deref()));
    args
}
