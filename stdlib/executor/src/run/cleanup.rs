//! The last step of a seed, on every path out of it: the connector, slot
//! and publication removed, the consumer groups deleted, the topics and
//! their schemas in the registry deleted, the seed's source database and
//! its namespaces dropped (the last four kept with `--keep` when the seed
//! did not pass: `lossproof reconcile --run` scores it again, and the
//! topics hold what capture delivered, each change event with its
//! transaction; `lossproof clean --run` removes them).

use std::collections::BTreeSet;

use lossproof_runtime::debezium::{self, CaptureNames};
use lossproof_runtime::{ConnectClient, Endpoints, Stack};

use crate::error::Error;
use crate::seed::Seed;

/// What a seed leaves on the stack, and the connections to remove it
/// with: a seed's own ([`Traces::of`]), or what is found of a run that was
/// killed ([`clean_run`]).
pub(super) struct Traces<'a> {
    stack: &'a Stack,
    endpoints: &'a Endpoints,
    connect: &'a ConnectClient,
    source: &'a tokio_postgres::Client,
    names: &'a CaptureNames,
    /// Whose groups and namespaces to remove.
    consumers: &'a [String],
    /// The slots of the scenario's own consumers that read the source, and
    /// lossproof's own commit-order slot.
    own_slots: Vec<String>,
}

impl<'a> Traces<'a> {
    /// What `seed` may have left.
    pub(super) fn of(seed: &'a Seed<'a>) -> Self {
        Self {
            stack: seed.stack,
            endpoints: &seed.endpoints,
            connect: &seed.connect,
            source: &seed.source,
            names: &seed.names,
            consumers: &seed.options.consumers,
            own_slots: crate::own::slots(&seed.plan.declared, &seed.options.consumers, &seed.names)
                .into_iter()
                .chain([crate::snapshots::slot(&seed.names)])
                .collect(),
        }
    }
}

/// Remove what a seed created (its topics, their schemas, its database and
/// lake namespaces only with `drop_data`); what could not be removed, for
/// the log (each step is tried regardless).
pub(super) async fn cleanup(traces: &Traces<'_>, drop_data: bool) -> Vec<Error> {
    let Traces {
        stack,
        endpoints,
        connect,
        source,
        names,
        consumers,
        own_slots,
    } = traces;
    let kafka = &endpoints.kafka;
    let mut failed = Vec::new();
    // Only on the local stack: network faults and `fill broker` act on it
    // alone (an external profile refuses them before the run).
    if let Ok(ports) = endpoints.local_ports("clean-up") {
        // Network faults first: a cut or a blackhole still acting would
        // stall every step after it.
        if let Err(e) = lossproof_runtime::NetProxy::new(ports.netproxy)
            .clear_owner(&crate::fault::network::owner(names))
            .await
        {
            failed.push(e.into());
        }
        // A `fill broker` still acting would fail every topic and group step.
        if let Err(e) = lossproof_runtime::stack::set_broker_storage_writable(&ports, true).await {
            failed.push(e.into());
        }
    }
    // The connector is removed through Connect's REST API: a worker a fault
    // ended (`fill broker` can) is started again first, or it would bring
    // the seed's connector (kept in its config topic) back later.
    if let Err(e) = stack.heal(&|_| {}).await {
        failed.push(e.into());
    }
    if let Err(e) = debezium::remove(connect, names, source).await {
        failed.push(e.into());
    }
    // The slots of the scenario's own consumers that read the source (their
    // processes are gone by now; a slot left behind would keep WAL forever).
    for slot in own_slots {
        if let Err(e) = debezium::drop_slot(source, slot, std::time::Duration::from_secs(30)).await
        {
            failed.push(e.into());
        }
    }
    let groups: Vec<String> = consumers
        .iter()
        .map(|c| lossproof_consumers::group(c, names))
        .collect();
    if let Err(e) = crate::workload::capture::delete_groups(kafka, &groups).await {
        failed.push(e);
    }
    if !drop_data {
        return failed;
    }
    if let Err(e) = crate::workload::capture::delete_topics(kafka, &names.topic_prefix).await {
        failed.push(e);
    }
    if let Err(e) =
        lossproof_runtime::endpoints::delete_subjects(&endpoints.registry, &names.topic_prefix)
            .await
    {
        failed.push(e.into());
    }
    if names.database != lossproof_runtime::stack::SOURCE_DATABASE
        && let Err(e) =
            lossproof_runtime::postgres::drop_database(&endpoints.source, &names.database).await
    {
        failed.push(e.into());
    }
    match endpoints.open_lake().await {
        Ok(lake) => {
            for consumer in *consumers {
                let namespace = lossproof_consumers::namespace(consumer, names);
                if let Err(e) = lake.drop_namespace(&namespace).await {
                    failed.push(Error::iceberg(format!("drop namespace {namespace}"))(e));
                }
                // The correct consumer's key index of that namespace (a
                // cache of what was just dropped).
                let index =
                    lossproof_consumers::correct::index::dir(stack.state().root()).join(&namespace);
                if index.exists()
                    && let Err(e) = std::fs::remove_dir_all(&index)
                {
                    failed.push(Error::io(index.display().to_string())(e));
                }
            }
        }
        Err(e) => failed.push(e.into()),
    }
    let marts = crate::fault::nightly::marts_dir(stack.state().root(), names);
    if marts.exists()
        && let Err(e) = std::fs::remove_dir_all(&marts)
    {
        failed.push(Error::io(format!(
            "remove the seed's marts {}",
            marts.display()
        ))(e));
    }
    failed
}

/// Remove whatever the seeds of run `run_id` (the id `lossproof run`
/// prints) left on the stack: what a run killed without a chance to clean
/// up (SIGKILL) leaves. Seeds are found by their names' prefix
/// (`lp_<run id>s<seed>`) among the source's databases and replication
/// slots, Connect's connectors and Kafka's topics; each is cleaned up as a
/// seed's own clean-up does, for every reference consumer. Returns the
/// seeds found and what could not be removed. Nothing without the prefix
/// is touched.
pub async fn clean_run(stack: &Stack, run_id: &str) -> Result<(Vec<String>, Vec<Error>), Error> {
    let endpoints = stack.endpoints()?;
    // A seed's names are the run's names with `s<seed>` after the id
    // (`CaptureNames::for_run("<run id>s<seed>")`): what follows the run's
    // own prefix plus `s` is the seed.
    let run = CaptureNames::for_run(run_id);
    let (slots, connectors, topics) = (
        format!("{}s", run.slot),
        format!("{}s", run.connector),
        format!("{}s", run.topic_prefix),
    );
    let mut seeds = BTreeSet::new();
    let admin = endpoints.source.connect_admin().await?;
    // Seeds' databases are named like their slots (`in_own_database`).
    let rows = admin
        .query(
            "SELECT datname::text FROM pg_database WHERE starts_with(datname::text, $1) \
             UNION SELECT slot_name::text FROM pg_replication_slots WHERE starts_with(slot_name::text, $1)",
            &[&slots],
        )
        .await
        .map_err(Error::pg("list the run's databases and slots"))?;
    let mut own_slots: Vec<String> = Vec::new();
    for row in rows {
        let name: String = row.get(0);
        // `<slot>s<seed>` or, a declared consumer's, `<slot>s<seed>_<consumer>`.
        if let Some(rest) = name.strip_prefix(&slots) {
            if rest.contains('_') {
                own_slots.push(name.clone());
            }
            seeds.extend(rest.split('_').next().map(str::to_owned));
        }
    }
    let connect = ConnectClient::new(&endpoints.connect);
    for name in connect.names().await? {
        seeds.extend(name.strip_prefix(&connectors).map(str::to_owned));
    }
    // `<prefix>s<seed>.…`, and Debezium's `__debezium-heartbeat.<prefix>s<seed>`.
    let heartbeats = debezium::heartbeat_topic(&topics);
    for topic in crate::workload::capture::topic_names(&endpoints.kafka).await? {
        let seed = topic
            .strip_prefix(&heartbeats)
            .or_else(|| Some(topic.strip_prefix(&topics)?.split_once('.')?.0));
        seeds.extend(seed.map(str::to_owned));
    }
    let consumers: Vec<String> = lossproof_consumers::ALL
        .iter()
        .map(|c| c.name().to_owned())
        .collect();
    let mut failed = Vec::new();
    let seeds: Vec<String> = seeds
        .into_iter()
        .map(|seed| format!("{run_id}s{seed}"))
        .collect();
    for seed in &seeds {
        let names = CaptureNames::for_run(seed).in_own_database();
        let exists =
            lossproof_runtime::postgres::database_exists(&endpoints.source, &names.database)
                .await?;
        let source = if exists {
            endpoints.source.connect(&names.database).await?
        } else {
            endpoints.source.connect_admin().await?
        };
        let own: Vec<String> = own_slots
            .iter()
            .filter(|slot| slot.starts_with(&format!("{}_", names.slot)))
            .cloned()
            .collect();
        let traces = Traces {
            stack,
            endpoints: &endpoints,
            connect: &connect,
            source: &source,
            names: &names,
            consumers: &consumers,
            own_slots: own,
        };
        failed.extend(cleanup(&traces, true).await);
    }
    Ok((seeds, failed))
}
