//! Every way a reference consumer can fail, in one enum. The executor sees
//! a consumer's failure as its exit and its typed messages
//! ([`crate::Message`]), never as this type: a consumer is a program of its
//! own.

use lossproof_runtime::lake::{CommitError, ReadError, SchemaError};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The stack: a component, the lake's catalog.
    #[error(transparent)]
    Stack(#[from] lossproof_runtime::Error),
    #[error("{what}: {source}")]
    Kafka {
        what: String,
        #[source]
        source: rdkafka::error::KafkaError,
    },
    #[error("{what}: {source}")]
    Iceberg {
        what: String,
        #[source]
        source: iceberg::Error,
    },
    #[error(transparent)]
    Commit(#[from] CommitError),
    #[error(transparent)]
    LakeRead(#[from] ReadError),
    /// A schema change the lake refused.
    #[error(transparent)]
    Schema(#[from] SchemaError),
    #[error("{what}: {source}")]
    Arrow {
        what: String,
        #[source]
        source: arrow_schema::ArrowError,
    },
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
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
    /// A value that does not fit its column.
    #[error("{0}")]
    Value(String),
    /// A value, type or declaration lossproof has no mapping for.
    #[error("{0}")]
    Unsupported(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Builders of context-carrying errors, for `map_err`:
/// `.map_err(Error::iceberg("load the table"))`.
impl Error {
    pub(crate) fn kafka(
        what: impl Into<String>,
    ) -> impl FnOnce(rdkafka::error::KafkaError) -> Self {
        let what = what.into();
        move |source| Self::Kafka { what, source }
    }

    pub(crate) fn iceberg(what: impl Into<String>) -> impl FnOnce(iceberg::Error) -> Self {
        let what = what.into();
        move |source| Self::Iceberg { what, source }
    }

    pub(crate) fn arrow(what: impl Into<String>) -> impl FnOnce(arrow_schema::ArrowError) -> Self {
        let what = what.into();
        move |source| Self::Arrow { what, source }
    }

    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Self {
        let what = what.into();
        move |source| Self::Io { what, source }
    }
}
