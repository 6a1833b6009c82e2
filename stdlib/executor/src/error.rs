//! Every way the executor, its faults and its workload set-up can fail,
//! in one enum. The run record keeps an error as its message
//! (`SeedRecord::reason`, a fault's `outcome`); the type is for the code in
//! between, which decides on it (a drain gate's INVALID, a fault that did
//! not fire, an interrupt) instead of on text.

use lossproof_runtime::error::Context;
use lossproof_runtime::lake::{CommitError, MaintenanceError, ReadError};
use lossproof_runtime::reconcile;
use lossproof_vocabulary::workloads::UnknownWorkload;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The stack: a component, Kafka Connect, a supervised process.
    #[error(transparent)]
    Stack(#[from] lossproof_runtime::Error),
    #[error(transparent)]
    Postgres(Context<tokio_postgres::Error>),
    #[error(transparent)]
    Kafka(Context<rdkafka::error::KafkaError>),
    #[error(transparent)]
    Iceberg(Context<iceberg::Error>),
    #[error(transparent)]
    Commit(#[from] CommitError),
    #[error(transparent)]
    LakeRead(#[from] ReadError),
    #[error(transparent)]
    Maintenance(#[from] MaintenanceError),
    #[error(transparent)]
    Reconcile(#[from] reconcile::Error),
    #[error(transparent)]
    Io(Context<std::io::Error>),
    /// The drain gate: the stream is not provably drained (INVALID).
    #[error(transparent)]
    NotDrained(#[from] reconcile::gate::Invalid),
    /// A fault that could not act: recorded as not fired, with the reason
    /// ("consumer careless was already down").
    #[error("{0}")]
    NotFired(String),
    /// The freshness follower could not start (its Kafka client).
    #[error("freshness: {0}")]
    Follower(String),
    /// A run that cannot go on (a team's own consumer that exited at
    /// once).
    #[error("{0}")]
    Refused(String),
    /// What a reference consumer's code returned (a lake table it could
    /// not create, its dead letters unreadable).
    #[error(transparent)]
    Consumer(#[from] lossproof_consumers::Error),
    /// A plan that names a workload this lossproof does not have.
    #[error(transparent)]
    Workload(#[from] UnknownWorkload),
    /// A value, type or declaration lossproof has no mapping for.
    #[error("{0}")]
    Unsupported(String),
    /// `SIGINT` or `SIGTERM` reached `lossproof run`.
    #[error("interrupted by {0}")]
    Interrupted(&'static str),
    #[error("the executor panicked: {0}")]
    Panicked(String),
    /// Run records that cannot be merged into one distribution.
    #[error("{0}")]
    Merge(String),
    /// A run record that does not read back.
    #[error("{path} is not a run record: {source}")]
    Record {
        path: std::path::PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// A blocking task (a process stop) panicked or was cancelled.
    #[error("a blocking task failed: {0}")]
    Join(#[from] tokio::task::JoinError),
    /// The drain between two phases did not gate (INVALID).
    #[error("the drain between phases (phase {phase}): {source}")]
    BetweenPhases {
        phase: usize,
        #[source]
        source: Box<Error>,
    },
    /// An invariant of lossproof's own broke: a bug to report.
    #[error("lossproof bug: {0}")]
    Internal(&'static str),
    /// A step that did not finish in its time.
    #[error("{what} did not finish within {limit_s} s")]
    Timeout { what: String, limit_s: u64 },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `.map_err(Error::pg("create the source tables"))` and the like.
impl Error {
    lossproof_runtime::context_builders! {
        pg => Postgres(tokio_postgres::Error),
        kafka => Kafka(rdkafka::error::KafkaError),
        iceberg => Iceberg(iceberg::Error),
        io => Io(std::io::Error),
    }
}
