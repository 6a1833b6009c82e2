//! The last step of a seed, on every path out of it: the connector, slot
//! and publication removed, the topics and consumer groups deleted, the
//! namespaces dropped (kept with `--keep` when the seed did not pass).

use lossproof_runtime::debezium::{self, CaptureNames};
use lossproof_runtime::{ConnectClient, Lake, Stack};

use super::{Options, Verdict};

/// Remove what the seed created (the lake only when it is not kept).
pub(super) async fn cleanup(
    stack: &Stack,
    connect: &ConnectClient,
    names: &CaptureNames,
    source: &tokio_postgres::Client,
    options: &Options,
    verdict: Verdict,
    broker: u16,
) {
    let _ = debezium::remove(connect, names, source).await;
    let _ = crate::workload::capture::delete_topics(broker, &names.topic_prefix).await;
    let groups: Vec<String> = options
        .consumers
        .iter()
        .map(|c| crate::consumer::group(c, names))
        .collect();
    let _ = crate::workload::capture::delete_groups(broker, &groups).await;
    if options.keep && verdict != Verdict::Pass {
        return;
    }
    if let Ok(lake) = Lake::open(stack.state().root()).await {
        for consumer in &options.consumers {
            let _ = lake
                .drop_namespace(&crate::consumer::namespace(consumer, names))
                .await;
        }
    }
}
