//! Consumers of the team's own (`consumer NAME command "…"`,
//! docs/bring-your-own.md): how `run` starts one and what it tells it.
//!
//! The program is started like lossproof's own consumers: a supervised
//! process group (so `kill`, `stop`, `pause`, `restart` and the drain gate
//! apply unchanged), through `lossproof exec`, which makes it die with the
//! run even when the run is SIGKILLed, then becomes the program. It learns
//! everything from its environment ([`environment`]); its lake is scored in
//! the namespace lossproof gives it, like the reference consumers'.

use std::ffi::OsString;
use std::path::Path;

use lossproof_lang::plan::{DeclaredConsumer, Reads};
use lossproof_lang::vocabulary::WorkloadSig;
use lossproof_runtime::Endpoints;
use lossproof_runtime::debezium::CaptureNames;
use lossproof_runtime::supervisor::Supervised;

use crate::error::{Error, Result};
use crate::seed::Seed;

/// How long a program must stay up after its start for the seed to go on:
/// one that exits sooner (a typo in its arguments, a missing module) would
/// make every seed INVALID, so the run stops with its log instead.
pub const STARTUP_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Everything a declared consumer is told, as `(variable, value)`.
#[must_use]
pub fn environment(
    declared: &DeclaredConsumer,
    names: &CaptureNames,
    endpoints: &Endpoints,
    workload: &WorkloadSig,
    state_dir: &Path,
) -> Vec<(String, String)> {
    let kafka = &endpoints.consumer_kafka;
    let kafka_properties: serde_json::Map<String, serde_json::Value> = kafka
        .properties
        .iter()
        .map(|(k, v)| (k.clone(), v.clone().into()))
        .chain(
            kafka
                .secrets
                .iter()
                .map(|(k, v)| (k.clone(), v.expose().to_owned().into())),
        )
        .collect();
    let lake = endpoints.lake_location();
    let catalog: serde_json::Map<String, serde_json::Value> = lake
        .catalog_properties()
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.into()))
        .collect();
    let mut env = vec![
        ("LOSSPROOF_CONSUMER", declared.name.clone()),
        ("LOSSPROOF_RUN", names.topic_prefix.clone()),
        ("LOSSPROOF_BOOTSTRAP_SERVERS", kafka.bootstrap.clone()),
        (
            "LOSSPROOF_KAFKA_PROPERTIES",
            serde_json::Value::Object(kafka_properties).to_string(),
        ),
        (
            "LOSSPROOF_SCHEMA_REGISTRY_URL",
            endpoints.registry.url.clone(),
        ),
        (
            "LOSSPROOF_TOPICS",
            lossproof_consumers::topics(names, workload).join(","),
        ),
        (
            "LOSSPROOF_TABLES",
            if declared.reads == Reads::Source {
                source_tables(workload).join(",")
            } else {
                lossproof_consumers::topics(names, workload)
                    .iter()
                    .filter_map(|t| t.split_once('.').map(|(_, table)| table.to_owned()))
                    .collect::<Vec<_>>()
                    .join(",")
            },
        ),
        (
            "LOSSPROOF_GROUP",
            lossproof_consumers::group(&declared.name, names),
        ),
        (
            "LOSSPROOF_CATALOG_NAME",
            lossproof_runtime::lake::CATALOG_NAME.to_owned(),
        ),
        (
            "LOSSPROOF_CATALOG_PROPERTIES",
            serde_json::Value::Object(catalog).to_string(),
        ),
        (
            "LOSSPROOF_NAMESPACE",
            lossproof_consumers::namespace(&declared.name, names),
        ),
        ("LOSSPROOF_STATE_DIR", state_dir.display().to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect::<Vec<_>>();
    if declared.reads == Reads::Source {
        let source = &endpoints.source;
        env.extend(
            [
                ("LOSSPROOF_SOURCE_HOST", source.connect_host.clone()),
                ("LOSSPROOF_SOURCE_PORT", source.connect_port.to_string()),
                ("LOSSPROOF_SOURCE_USER", source.user.clone()),
                (
                    "LOSSPROOF_SOURCE_PASSWORD",
                    source
                        .password
                        .as_ref()
                        .map_or_else(String::new, |p| p.expose().to_owned()),
                ),
                ("LOSSPROOF_SOURCE_DATABASE", names.database.clone()),
                ("LOSSPROOF_SLOT", slot(declared, names)),
                ("LOSSPROOF_PUBLICATION", publication(declared, names)),
            ]
            .map(|(k, v)| (k.to_owned(), v)),
        );
    }
    if matches!(&lake, lossproof_runtime::profile::LakeLocation::Glue(g) if g.emulator) {
        env.extend(lossproof_runtime::nightly::emulator_credentials());
    }
    env
}

/// The replication slot of a declared consumer that reads the source (its
/// program creates it, as Debezium does; clean-up drops it).
#[must_use]
pub fn slot(declared: &DeclaredConsumer, names: &CaptureNames) -> String {
    identifier(&format!("{}_{}", names.slot, declared.name))
}

/// The publication lossproof creates for a declared consumer that reads
/// the source: the workload's tables.
#[must_use]
pub fn publication(declared: &DeclaredConsumer, names: &CaptureNames) -> String {
    identifier(&format!("{}_{}", names.publication, declared.name))
}

/// The slots of the declared consumers among `consumers` that read the
/// source (what a seed's clean-up drops).
#[must_use]
pub fn slots(
    declared: &[DeclaredConsumer],
    consumers: &[String],
    names: &CaptureNames,
) -> Vec<String> {
    declared
        .iter()
        .filter(|d| d.reads == Reads::Source && consumers.contains(&d.name))
        .map(|d| slot(d, names))
        .collect()
}

/// Create the publication of every declared consumer among `consumers`
/// that reads the source: the workload's tables, in the seed's database.
pub async fn create_publications(
    declared: &[DeclaredConsumer],
    consumers: &[String],
    names: &CaptureNames,
    workload: &WorkloadSig,
    source: &tokio_postgres::Client,
) -> Result<()> {
    let readers = declared
        .iter()
        .any(|d| d.reads == Reads::Source && consumers.contains(&d.name));
    if readers {
        source
            .batch_execute(&format!(
                "CREATE TABLE IF NOT EXISTS {DRAIN_TABLE} (id bigserial PRIMARY KEY, at timestamptz NOT NULL)"
            ))
            .await
            .map_err(Error::pg(format!("create {DRAIN_TABLE}")))?;
    }
    let tables = source_tables(workload);
    for d in declared
        .iter()
        .filter(|d| d.reads == Reads::Source && consumers.contains(&d.name))
    {
        let publication = publication(d, names);
        source
            .batch_execute(&format!(
                "DROP PUBLICATION IF EXISTS {publication}; CREATE PUBLICATION {publication} FOR TABLE {}",
                tables.join(", ")
            ))
            .await
            .map_err(Error::pg(format!("create publication {publication}")))?;
    }
    Ok(())
}

/// The table a consumer that reads the source captures besides the
/// workload's: after the workload, lossproof writes one row there, and the
/// consumer has caught up when its slot confirmed that transaction
/// ([`drain_marker`]).
pub const DRAIN_TABLE: &str = "public.lossproof_drain";

/// The tables a consumer that reads the source captures (its
/// `LOSSPROOF_TABLES`, its publication): the workload's and [`DRAIN_TABLE`].
fn source_tables(workload: &WorkloadSig) -> Vec<String> {
    workload
        .tables
        .iter()
        .map(|t| format!("public.{}", t.name))
        .chain([DRAIN_TABLE.to_owned()])
        .collect()
}

/// Write the drain markers: a row in [`DRAIN_TABLE`] in a transaction of
/// its own, then another. Returns a WAL position inside the first: every
/// transaction of the workload committed below it. A Debezium engine
/// confirms, with each event, the commit of the transaction BEFORE it (the
/// last it knows complete), so its slot passes that position only once it
/// processed the second marker: everything the workload wrote was
/// delivered before. (The source's current LSN is no target for such a
/// slot: it confirms only transactions it captures, and the stack's own
/// heartbeat writes move the WAL past the workload's end. Measured: with
/// one marker the slot stops at the last workload commit.)
pub async fn drain_marker(source: &tokio_postgres::Client) -> Result<u64> {
    let insert = format!(
        "WITH marker AS (INSERT INTO {DRAIN_TABLE} (at) VALUES (now()) RETURNING id) \
         SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint FROM marker"
    );
    let first = source
        .query_one(&insert, &[])
        .await
        .map_err(Error::pg("write the drain marker"))?;
    source
        .query_one(&insert, &[])
        .await
        .map_err(Error::pg("write the second drain marker"))?;
    Ok(u64::try_from(first.get::<_, i64>(0)).unwrap_or(0))
}

/// A PostgreSQL identifier: at most 63 bytes (the names are ASCII).
fn identifier(name: &str) -> String {
    name.chars().take(63).collect()
}

/// The command with its placeholders filled for consumer `name` of run
/// `names` (`lossproof_lang::plan::PLACEHOLDERS`).
#[must_use]
pub fn command(declared: &DeclaredConsumer, names: &CaptureNames) -> Vec<String> {
    let namespace = lossproof_consumers::namespace(&declared.name, names);
    let group = lossproof_consumers::group(&declared.name, names);
    let values = [
        ("run", names.topic_prefix.as_str()),
        ("consumer", declared.name.as_str()),
        ("namespace", namespace.as_str()),
        ("group", group.as_str()),
    ];
    declared
        .command
        .iter()
        .map(|arg| DeclaredConsumer::fill(arg, &values))
        .collect()
}

/// The supervised process of a declared consumer of `seed`: `lossproof
/// exec -- PROGRAM ARGS…` in the scenario's folder, its log in the seed's
/// log folder, its own folder (kept across restarts within the seed)
/// beside it.
pub fn supervised(seed: &Seed<'_>, declared: &DeclaredConsumer) -> Result<Supervised> {
    let state_dir = seed.logs.join(format!("{}.state", declared.name));
    std::fs::create_dir_all(&state_dir).map_err(Error::io(state_dir.display().to_string()))?;
    let mut args: Vec<OsString> = vec!["exec".into(), "--".into()];
    args.extend(
        command(declared, &seed.names)
            .into_iter()
            .map(OsString::from),
    );
    let env = environment(
        declared,
        &seed.names,
        &seed.endpoints,
        &seed.workload,
        &state_dir,
    );
    Ok(env.into_iter().fold(
        Supervised::new(
            &declared.name,
            seed.options.program.clone(),
            args,
            seed.log_of(&declared.name),
        )
        .current_dir(seed.options.scenario_dir.clone()),
        |process, (k, v)| process.env(k, v),
    ))
}

/// The last `lines` lines of a log, for an error about a program that
/// stopped.
#[must_use]
pub fn log_tail(log: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
