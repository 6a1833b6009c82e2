//! The consumers under test, whichever kind each is — a reference consumer
//! (`lossproof_consumers::Consumer`) or a scenario's own ([`crate::own`])
//! — as set-up starts them, the drain gate waits for them and the
//! reconciler scores them: one contract for both.

use std::collections::HashMap;
use std::ffi::OsString;

use lossproof_consumers::{group, namespace, topics};
use lossproof_lang::plan::{DeclaredConsumer, LakeShape, OffsetsAt, Reads};
use lossproof_lang::vocabulary::WorkloadSig;
use lossproof_runtime::debezium::CaptureNames;
use lossproof_runtime::reconcile::ConsumerLake;
use lossproof_runtime::reconcile::gate::ConsumerPosition;
use lossproof_runtime::supervisor::Supervised;

use crate::error::{Error, Result};
use crate::seed::Seed;

/// What the reconciler scores for each of `consumers` in run `names`: its
/// namespace, read as stored; for a `declared` consumer whose lake is a
/// change log, each of `workload`'s tables `T` is the change log named as
/// Debezium names T's topic, dots as underscores (`RUN_public_T`: how
/// Debezium-based sinks name their tables).
#[must_use]
pub fn lakes(
    consumers: &[String],
    declared: &[DeclaredConsumer],
    names: &CaptureNames,
    workload: &WorkloadSig,
) -> Vec<ConsumerLake> {
    consumers
        .iter()
        .map(|c| {
            let namespace = namespace(c, names);
            let own = declared.iter().find(|d| &d.name == c);
            let changelog = own.is_some_and(|d| d.writes == LakeShape::Changelog);
            let views = if changelog {
                workload
                    .tables
                    .iter()
                    .map(|t| {
                        let table = changelog_table(names, &t.name);
                        (
                            t.name.clone(),
                            format!(
                                "SELECT {} FROM \"{namespace}\".\"{table}\"",
                                lossproof_runtime::reconcile::changelog::COLUMNS
                            ),
                        )
                    })
                    .collect()
            } else {
                HashMap::new()
            };
            // A declared consumer (same name as a reference one or not)
            // is not known to keep each key's transaction.
            let applied = match own {
                Some(_) => None,
                None => lossproof_consumers::find(c).and_then(|r| r.applied(&namespace)),
            };
            ConsumerLake {
                consumer: c.clone(),
                namespace,
                views,
                changelog,
                applied,
            }
        })
        .collect()
}

/// The change log a `lake changelog` consumer keeps for source table
/// `table`: named as Debezium names its topic, dots as underscores.
pub(crate) fn changelog_table(names: &CaptureNames, table: &str) -> String {
    names.topic("public", table).replace('.', "_")
}

/// Where each of `consumers` keeps the freshness probe's rows in run
/// `names` (what the freshness follower reads).
#[must_use]
pub fn probe_tables(
    consumers: &[String],
    declared: &[DeclaredConsumer],
    names: &CaptureNames,
) -> Vec<crate::freshness::ProbeTable> {
    let probe = lossproof_vocabulary::workloads::PROBE_TABLE;
    consumers
        .iter()
        .map(|c| {
            let own = declared.iter().find(|d| &d.name == c);
            let changelog = own.is_some_and(|d| d.writes == LakeShape::Changelog);
            // A reference consumer that keeps its offsets in the lake keeps
            // them in every snapshot it writes, the probe table's included.
            let offsets = own.is_none()
                && lossproof_consumers::find(c)
                    .is_some_and(|r| matches!(r.offsets(), OffsetsAt::Lake { .. }));
            crate::freshness::ProbeTable {
                consumer: c.clone(),
                namespace: namespace(c, names),
                table: if changelog {
                    changelog_table(names, probe)
                } else {
                    probe.to_owned()
                },
                changelog,
                offsets,
            }
        })
        .collect()
}

/// What the drain gate checks for each of `consumers` in run `names`: its
/// group's committed offsets on every topic of `workload`, and for a
/// consumer that keeps its offsets in the lake (the correct consumer, a
/// `declared` one with `offsets in lake TABLE`) also the offsets stored
/// there; for a declared consumer that reads the source, its slot.
#[must_use]
pub fn positions(
    consumers: &[String],
    declared: &[DeclaredConsumer],
    names: &CaptureNames,
    workload: &WorkloadSig,
) -> Vec<ConsumerPosition> {
    consumers
        .iter()
        .map(|c| {
            let own = declared.iter().find(|d| &d.name == c);
            let offsets = match own {
                Some(d) => Some(d.offsets.clone()),
                None => lossproof_consumers::find(c).map(lossproof_consumers::Consumer::offsets),
            };
            let table = match offsets {
                Some(OffsetsAt::Lake { table }) => Some(table),
                Some(OffsetsAt::Group) | None => None,
            };
            let own_slot = own
                .filter(|d| d.reads == Reads::Source)
                .map(|d| crate::own::slot(d, names));
            ConsumerPosition {
                consumer: c.clone(),
                group: group(c, names),
                // A consumer reading the source has no topics: its slot is
                // what the gate checks.
                topics: if own_slot.is_some() {
                    Vec::new()
                } else {
                    topics(names, workload)
                },
                lake_offsets: table.map(|table| (namespace(c, names), table)),
                slot: own_slot,
            }
        })
        .collect()
}

/// Consumer `name` of `seed`, ready to start: the scenario's own when it
/// declares one by that name, else the reference consumer's program
/// (`lossproof` + its command + the seed's own options).
pub fn supervised(seed: &Seed<'_>, name: &str) -> Result<Supervised> {
    if let Some(declared) = seed.plan.declared.iter().find(|d| d.name == name) {
        return crate::own::supervised(seed, declared);
    }
    let consumer = lossproof_consumers::find(name)
        .ok_or_else(|| Error::Unsupported(format!("consumer {name} does not exist")))?;
    let options = seed.options;
    let mut args = consumer.command(seed.plan);
    args.extend([
        "--run".into(),
        seed.run.clone().into(),
        "--state".into(),
        options.state.clone().into(),
        "--messages".into(),
        seed.messages_of(name).into(),
    ]);
    args.extend(["--tables".into(), seed.tables_file().into()]);
    args.extend(profile_args(options.profile.as_deref()));
    Ok(Supervised::new(
        name,
        options.program.clone(),
        args,
        seed.log_of(name),
    ))
}

/// `--profile P` when the run is on an external profile: the child loads
/// it (and reads its secrets from the environment or files) itself, so no
/// secret is ever on a command line.
pub(crate) fn profile_args(profile: Option<&std::path::Path>) -> Vec<OsString> {
    profile
        .iter()
        .flat_map(|p| ["--profile".into(), p.as_os_str().to_owned()])
        .collect()
}
