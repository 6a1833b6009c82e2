//! Every way a reference consumer can fail, in one enum. The executor sees
//! a consumer's failure as its exit and its typed messages
//! ([`crate::Message`]), never as this type: a consumer is a program of its
//! own.

use lossproof_runtime::error::Context;
use lossproof_runtime::lake::{CommitError, ReadError, SchemaError};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The stack: a component, the lake's catalog.
    #[error(transparent)]
    Stack(#[from] lossproof_runtime::Error),
    #[error(transparent)]
    Kafka(Context<rdkafka::error::KafkaError>),
    #[error(transparent)]
    Iceberg(Context<iceberg::Error>),
    #[error(transparent)]
    Commit(#[from] CommitError),
    #[error(transparent)]
    LakeRead(#[from] ReadError),
    /// A schema change the lake refused.
    #[error(transparent)]
    Schema(#[from] SchemaError),
    #[error(transparent)]
    Arrow(Context<arrow_schema::ArrowError>),
    #[error(transparent)]
    Io(Context<std::io::Error>),
    /// The events' columns are not the lake table's (the careless
    /// consumer's fixed schema).
    #[error("schema changed: {0}")]
    SchemaChanged(String),
    /// The lake's bookkeeping is not what lossproof wrote (a column
    /// missing from `_lp_state`, an unreadable stored offset).
    #[error("the lake's state is not what lossproof wrote: {0}")]
    Corrupt(String),
    /// The lake holds rows but no Kafka offsets: where to resume is
    /// unknown (`--rebuild` is what fixes it).
    #[error("{0}")]
    LostOffsets(String),
    /// A consumer refusing to guess (a table with delete files it cannot
    /// index).
    #[error("{0}")]
    Refused(String),
    /// The correct consumer's key index on local disk (its cache of the
    /// lake) cannot be opened, read or written.
    #[error("key index: {0}")]
    Index(String),
    /// A value that does not fit its column.
    #[error("{0}")]
    Value(String),
    /// A value, type or declaration lossproof has no mapping for.
    #[error("{0}")]
    Unsupported(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `.map_err(Error::iceberg("load the table"))` and the like.
impl Error {
    lossproof_runtime::context_builders! {
        kafka => Kafka(rdkafka::error::KafkaError),
        iceberg => Iceberg(iceberg::Error),
        arrow => Arrow(arrow_schema::ArrowError),
        io => Io(std::io::Error),
    }
}
