//! lossproof's reference consumers: real long-running programs that read a
//! run's change topics and write one Iceberg table per source table into
//! their own namespace, each behind the one contract the executor drives
//! every consumer by ([`Consumer`]).
//!
//! - [`careless`]: the way many pipelines are written (FINDINGS.md).
//! - [`correct`]: exactly-once, idempotent, in the source's commit order
//!   (docs/consumers.md).
//!
//! What both share: the lake tables a workload maps to and rows as Arrow
//! batches ([`arrow`]), the names of a consumer's namespace, group and
//! topics, the tables file a run hands them ([`tables_file`]), and the
//! typed messages they write for the executor ([`Message`]).

mod arrow;
pub mod careless;
mod consumer;
pub mod correct;
mod error;
mod message;
pub mod tables_file;

use lossproof_lang::vocabulary::WorkloadSig;
use lossproof_runtime::debezium::CaptureNames;

pub use arrow::{LakeTable, debezium_type_name, ensure_tables, iceberg_schema, to_arrow};
pub use consumer::{ALL, Consumer, find};
pub use error::{Error, Result};
pub use message::{Message, Messages};

/// The Iceberg namespace consumer `name` writes run `names`'s tables to.
#[must_use]
pub fn namespace(name: &str, names: &CaptureNames) -> String {
    format!("{name}_{}", names.topic_prefix)
}

/// The Kafka consumer group of consumer `name` in run `names`.
#[must_use]
pub fn group(name: &str, names: &CaptureNames) -> String {
    format!("lossproof-{name}-{}", names.topic_prefix)
}

/// The change topics of `workload`'s tables in run `names`, in table order.
#[must_use]
pub fn topics(names: &CaptureNames, workload: &WorkloadSig) -> Vec<String> {
    workload
        .tables
        .iter()
        .map(|t| names.topic("public", &t.name))
        .collect()
}
