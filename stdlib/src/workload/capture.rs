//! The set-up every run, test and benchmark shares: the workload's tables
//! created afresh in the source, and a Debezium connector capturing them
//! under a run's names.

use std::time::Duration;

use lossproof_lang::vocabulary::WorkloadSig;
use lossproof_runtime::debezium::{self, CaptureNames, Encoding};
use lossproof_runtime::{ConnectClient, Ports};

/// Re-create `workload`'s tables (and the reconciler's history table) in
/// the source, then start a connector capturing them as `names` and wait
/// (bounded by `limit`) until it runs. Returns the connector's
/// configuration (what `recreate connector` puts back).
pub async fn capture(
    source: &tokio_postgres::Client,
    connect: &ConnectClient,
    ports: &Ports,
    names: &CaptureNames,
    workload: &WorkloadSig,
    replica_identity_full: bool,
    limit: Duration,
) -> Result<serde_json::Value, String> {
    source
        .batch_execute(&super::ddl(workload, replica_identity_full))
        .await
        .map_err(|e| format!("create the source tables: {e}"))?;
    let tables: Vec<String> = workload
        .tables
        .iter()
        .map(|t| format!("public.{}", t.name))
        .collect();
    let tables: Vec<&str> = tables.iter().map(String::as_str).collect();
    let config = debezium::config(
        names,
        ports,
        lossproof_runtime::stack::SOURCE_DATABASE,
        &tables,
        Encoding::Avro,
    );
    debezium::start(connect, names, &config, source, limit)
        .await
        .map_err(|e| format!("start the connector: {e}"))?;
    Ok(config)
}
