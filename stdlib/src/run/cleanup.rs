//! The last step of a seed, on every path out of it: the connector, slot
//! and publication removed, the topics, their schemas in the registry and
//! the consumer groups deleted, the
//! seed's source database and its namespaces dropped (both kept with
//! `--keep` when the seed did not pass, for `lossproof reconcile --run`).

use lossproof_runtime::debezium::{self, CaptureNames};
use lossproof_runtime::{ConnectClient, Endpoints, Stack};

use super::{Options, Verdict};
use crate::error::Error;

/// Remove what the seed created (the lake only when it is not kept); what
/// could not be removed, for the log (each step is tried regardless).
pub(super) async fn cleanup(
    stack: &Stack,
    connect: &ConnectClient,
    names: &CaptureNames,
    source: &tokio_postgres::Client,
    options: &Options,
    verdict: Verdict,
    endpoints: &Endpoints,
) -> Vec<Error> {
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
    if let Err(e) = crate::workload::capture::delete_topics(kafka, &names.topic_prefix).await {
        failed.push(e);
    }
    if let Err(e) =
        lossproof_runtime::endpoints::delete_subjects(&endpoints.registry, &names.topic_prefix)
            .await
    {
        failed.push(e.into());
    }
    let groups: Vec<String> = options
        .consumers
        .iter()
        .map(|c| crate::consumer::group(c, names))
        .collect();
    if let Err(e) = crate::workload::capture::delete_groups(kafka, &groups).await {
        failed.push(e);
    }
    if options.keep && verdict != Verdict::Pass {
        return failed;
    }
    if names.database != lossproof_runtime::stack::SOURCE_DATABASE
        && let Err(e) =
            lossproof_runtime::postgres::drop_database(&endpoints.source, &names.database).await
    {
        failed.push(e.into());
    }
    match endpoints.open_lake().await {
        Ok(lake) => {
            for consumer in &options.consumers {
                let namespace = crate::consumer::namespace(consumer, names);
                if let Err(e) = lake.drop_namespace(&namespace).await {
                    failed.push(Error::iceberg(format!("drop namespace {namespace}"))(e));
                }
            }
        }
        Err(e) => failed.push(e.into()),
    }
    failed
}
